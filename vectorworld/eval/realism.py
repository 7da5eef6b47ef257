"""``vectorworld eval realism``: how far generated worlds are from real ones, feature by feature.

Both sides are pooled samples (:mod:`vectorworld.eval.realism_features`, sources in
:mod:`vectorworld.eval.realism_sources`). Every feature gets both distributions' summary (n, mean, p10,
p50, p90) and two distances: the Jensen-Shannon divergence (base 2, in [0, 1]) on the feature's fixed
bins, and the 1-Wasserstein distance in the feature's unit (for a share, the difference of shares).
JSD is the headline distance: it is unit-free, so one threshold reads the same for every row.

A JSD between finite samples is never 0, even for a perfect generator: each row also gets its floor
(:func:`jsd_floor`), the JSD a reference of that size would show against a generator that matched it
exactly. A distance near its floor says the reference cannot tell the two apart; halving it is not
measurable. The floor treats samples as independent; samples of one tile (or of overlapping tiles of one
map) are not, so the true floor is higher.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld.eval.generator_metrics import js_divergence
from vectorworld.eval.realism_sources import SampleSet


@dataclass(frozen=True)
class Feature:
    """One row: name in the samples, what it is, its unit, histogram bins for the JSD, and whether it is a
    share (a 0/1 sample whose mean is the figure to read)."""

    name: str
    label: str
    unit: str
    bins: tuple[float, ...]
    share: bool = False


def _grid(lo: float, hi: float, step: float) -> tuple[float, ...]:
    return tuple(np.arange(lo, hi + step / 2, step).tolist())


SHARE_BINS = (-0.5, 0.5, 1.5)
FEATURES: tuple[Feature, ...] = (
    Feature("lanes_per_tile", "lanes per tile", "", _grid(0, 80, 4)),
    Feature("agents_per_tile", "agents per tile", "", _grid(0, 64, 4)),
    Feature("pedestrians_per_tile", "pedestrians per tile", "", _grid(0, 20, 1)),
    Feature("cyclists_per_tile", "cyclists per tile", "", _grid(0, 6, 1)),
    Feature("lane_length_m", "lane segment length", "m", _grid(0, 150, 5)),
    Feature("turn_radius_below_50m", "lanes with turn radius < 50 m", "share", SHARE_BINS, True),
    Feature("successor_out_degree", "successor out-degree", "", _grid(-0.5, 5.5, 1)),
    Feature("junction_spacing_m", "junction spacing along a road", "m", _grid(0, 300, 10)),
    Feature("crossing_angle_deg", "crossing angle", "deg", _grid(0, 90, 5)),
    Feature("lanes_per_direction", "lanes per direction", "", _grid(0.5, 6.5, 1)),
    Feature("lane_width_m", "lane width (spacing)", "m", _grid(2, 5.5, 0.25)),
    Feature("speed_limit_mps", "speed limit", "m/s", _grid(0, 35, 2.5)),
    Feature("nn_distance_m", "nearest-neighbour distance", "m", _grid(0, 40, 1)),
    Feature("nn_below_2m", "agents with a neighbour < 2 m", "share", SHARE_BINS, True),
    Feature("vehicle_standing", "vehicles standing still", "share", SHARE_BINS, True),
    Feature("vehicle_speed_mps", "vehicle speed", "m/s", _grid(0, 30, 1)),
    Feature("heading_rel_deg", "heading vs tile anchor", "deg", _grid(0, 180, 10)),
    Feature("vehicle_length_m", "vehicle length", "m", _grid(2, 14, 0.5)),
    Feature("vehicle_width_m", "vehicle width", "m", _grid(1, 3.5, 0.1)),
)


def wasserstein_1(a: np.ndarray, b: np.ndarray, points: int = 512) -> float:
    """1-Wasserstein distance between two 1-D samples (the mean gap between their quantile functions)."""
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    q = (np.arange(points) + 0.5) / points
    return float(np.mean(np.abs(np.quantile(a, q) - np.quantile(b, q))))


FLOOR_DRAWS = 200
"""Bootstrap draws behind each row's :func:`jsd_floor`."""


def jsd_floor(generated: np.ndarray, reference_size: int, bins: np.ndarray, draws: int = FLOOR_DRAWS,
              seed: int = 0) -> float:
    """Median JSD between ``generated`` and ``draws`` samples of ``reference_size`` values drawn from it
    (with replacement, seeded): how far a reference of that size from the same distribution would look."""
    if len(generated) == 0 or reference_size == 0:
        return float("nan")
    rng = np.random.default_rng(seed)
    return float(np.median([js_divergence(generated, rng.choice(generated, reference_size), bins)
                            for _ in range(draws)]))


def summarize(values: np.ndarray) -> dict[str, float | int | None]:
    """n, mean, p10, p50, p90 (None when empty)."""
    if len(values) == 0:
        return {"n": 0, "mean": None, "p10": None, "p50": None, "p90": None}
    p10, p50, p90 = np.percentile(values, [10, 50, 90])
    return {"n": int(len(values)), "mean": float(values.mean()), "p10": float(p10), "p50": float(p50),
            "p90": float(p90)}


def compare(generated: SampleSet, reference: SampleSet) -> dict[str, object]:
    """The realism report: per feature both summaries and the distances (None where a side has no sample)."""
    rows: dict[str, object] = {}
    for f in FEATURES:
        a, b = generated.samples.array(f.name), reference.samples.array(f.name)
        jsd = js_divergence(a, b, np.asarray(f.bins)) if len(a) and len(b) else None
        w1 = wasserstein_1(a, b) if len(a) and len(b) else None
        floor = jsd_floor(a, len(b), np.asarray(f.bins)) if len(a) and len(b) else None
        rows[f.name] = {"label": f.label, "unit": f.unit, "share": f.share, "generated": summarize(a),
                        "reference": summarize(b), "jsd": jsd, "jsd_floor": floor, "w1": w1}
    return {"generated": generated.label, "reference": reference.label, "generated_tiles": generated.tiles,
            "reference_tiles": reference.tiles, "features": rows}


def _fmt(x: float | None, share: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.0f}%" if share else f"{x:.3g}"


def table_rows(report: dict[str, object]) -> list[tuple[str, str, str, str, str, str]]:
    """(feature, generated, reference, JSD, JSD floor, W1) strings: mean (p10-p90), or the share for share
    rows."""
    out = []
    for row in report["features"].values():  # type: ignore[union-attr]
        cells = []
        for side in ("generated", "reference"):
            s = row[side]
            if row["share"]:
                cells.append(_fmt(s["mean"], True))
            else:
                cells.append(f"{_fmt(s['mean'])} ({_fmt(s['p10'])}-{_fmt(s['p90'])})" if s["n"] else "-")
        label = row["label"] + (f" [{row['unit']}]" if row["unit"] and row["unit"] != "share" else "")
        out.append((label, cells[0], cells[1], _fmt(row["jsd"]), _fmt(row["jsd_floor"]), _fmt(row["w1"])))
    return out
