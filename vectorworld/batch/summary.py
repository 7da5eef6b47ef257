"""Aggregates of a batch's episode records: per-metric means with 95% CIs, pooled per-km rates, failures.

Records are the dicts of :mod:`vectorworld.batch.tasks`: an episode report plus ``index``, or an error
record (has ``error``). Metrics are every scalar field the successful records share, so new report
fields show up without changes here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vectorworld.batch.statistics import mean_ci

# Shown first, in this order; any other shared scalar field follows alphabetically.
METRIC_ORDER = ("cls", "driving_score", "route_completion", "infractions_per_km", "at_fault_collisions",
                "completed", "km", "ego_collisions", "ego_collisions_per_km", "ego_offroad_rate",
                "npc_collisions_per_km", "npc_offroad_per_km", "kinematic_infeasibility_rate", "ego_comfort_rate",
                "steps", "sim_s", "wall_s", "rtf", "tiles", "fallback_tiles", "tile_ms_p50", "tile_ms_p95",
                "npc_policy_ms")
NOT_METRICS = frozenset({"index", "seed"})
# Per-km infraction rates (plots, pooled totals).
PER_KM_METRICS = ("ego_collisions_per_km", "infractions_per_km", "npc_collisions_per_km", "npc_offroad_per_km")


def ok_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Successful episodes, with the derived ``ego_collisions_per_km``."""
    out = []
    for r in records:
        if "error" in r:
            continue
        r = dict(r)
        if "ego_collisions" in r and "km" in r:
            r["ego_collisions_per_km"] = r["ego_collisions"] / r["km"] if r["km"] > 1e-6 else 0.0
        out.append(r)
    return out


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.integer, np.floating))


def metric_names(records: list[dict[str, Any]]) -> list[str]:
    """Scalar fields present in every successful record, in display order."""
    ok = ok_records(records)
    if not ok:
        return []
    shared = set.intersection(*({k for k, v in r.items() if _is_scalar(v)} for r in ok)) - NOT_METRICS
    return [m for m in METRIC_ORDER if m in shared] + sorted(shared - set(METRIC_ORDER))


def metric_values(records: list[dict[str, Any]], name: str) -> np.ndarray:
    """(n_ok,) float64 values of one metric over the successful episodes."""
    return np.array([float(r[name]) for r in ok_records(records)], dtype=float)


def is_proportion(records: list[dict[str, Any]], name: str) -> bool:
    """True for boolean metrics (``completed``): their CI is a Wilson interval."""
    ok = ok_records(records)
    return bool(ok) and all(isinstance(r[name], bool) for r in ok)


def summarize_batch(records: list[dict[str, Any]], episodes: int | None = None,
                    interrupted: bool = False) -> dict[str, Any]:
    """summary.json: counts, ``metrics`` (name -> n, mean, std, ci95, median, min, max), pooled totals,
    and the failed episodes (index, seed, error)."""
    ok = ok_records(records)
    failed = [r for r in records if "error" in r]
    summary: dict[str, Any] = {
        "episodes": episodes if episodes is not None else len(records), "finished": len(records),
        "succeeded": len(ok), "failed": len(failed), "interrupted": interrupted, "confidence": 0.95,
        "metrics": {name: mean_ci(metric_values(records, name), is_proportion(records, name)).as_dict()
                    for name in metric_names(records)}}
    if ok:
        km = np.array([r["km"] for r in ok])
        total_km = float(km.sum())
        totals: dict[str, Any] = {"km": total_km, "sim_s": float(sum(r.get("sim_s", 0.0) for r in ok)),
                                  "wall_s": float(sum(r.get("wall_s", 0.0) for r in ok))}
        for name in PER_KM_METRICS:
            if all(name in r for r in ok) and total_km > 0:
                totals[name] = float(sum(r[name] * r["km"] for r in ok) / total_km)
        if "ego_collisions" in ok[0]:
            totals["ego_collisions"] = int(sum(r["ego_collisions"] for r in ok))
        samples = [ms for r in ok for ms in r.get("tile_ms_samples", ())]
        if samples:
            totals["tiles"] = len(samples)
            totals["tile_ms_p50"] = float(np.percentile(samples, 50))
            totals["tile_ms_p95"] = float(np.percentile(samples, 95))
        summary["totals"] = totals
    summary["failures"] = [{"index": r["index"], "seed": r.get("seed"), "error": r["error"]} for r in failed]
    return summary
