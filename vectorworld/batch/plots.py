"""PNG plots of a batch (matplotlib, imported lazily, Agg backend; the ``report`` extra).

    metrics.png           histogram of every per-episode metric
    infractions_per_km.png  mean per-km infraction rates with 95% CIs
    rtf.png               real-time factor per episode
    tile_latency.png      histogram of tile generation latency (every tile, or per-episode p50/p95)
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from vectorworld.batch.statistics import mean_ci
from vectorworld.batch.summary import PER_KM_METRICS, metric_names, metric_values, ok_records

PLOT_FILES = ("metrics.png", "infractions_per_km.png", "rtf.png", "tile_latency.png")


def write_plots(directory: Path, records: list[dict[str, Any]]) -> list[str]:
    """Write the PNGs into ``directory``; return warnings (matplotlib missing, nothing to plot)."""
    try:
        import matplotlib
    except ImportError:
        return ['plots skipped: matplotlib is not installed (pip install "vectorworld[report]")']
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    ok = ok_records(records)
    if not ok:
        return ["plots skipped: no successful episode"]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, draw in (("metrics.png", _metrics), ("infractions_per_km.png", _infractions),
                       ("rtf.png", _rtf), ("tile_latency.png", _tile_latency)):
        fig = draw(plt, records)
        fig.tight_layout()
        fig.savefig(directory / name, dpi=90)
        plt.close(fig)
    return []


def _metrics(plt: Any, records: list[dict[str, Any]]) -> Any:
    names = metric_names(records)
    cols = 4
    rows = max(1, math.ceil(len(names) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        values = metric_values(records, name)
        ax.hist(values, bins=min(20, max(3, len(values))), color="tab:blue", alpha=0.8)
        ax.set_title(name, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.locator_params(axis="x", nbins=4)
        ax.ticklabel_format(axis="x", useOffset=False, style="plain")
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.suptitle(f"per-episode metrics ({len(ok_records(records))} episodes)", fontsize=10)
    return fig


def _infractions(plt: Any, records: list[dict[str, Any]]) -> Any:
    names = [n for n in PER_KM_METRICS if n in metric_names(records)]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    means, errors = [], [[], []]
    for name in names:
        est = mean_ci(metric_values(records, name))
        means.append(est.mean)
        low = est.ci_low if est.ci_low is not None else est.mean
        high = est.ci_high if est.ci_high is not None else est.mean
        errors[0].append(max(0.0, est.mean - low))
        errors[1].append(max(0.0, high - est.mean))
    ax.bar(range(len(names)), means, yerr=errors, capsize=4, color="tab:red", alpha=0.8)
    ax.set_xticks(range(len(names)), [n.replace("_per_km", "") for n in names], fontsize=8)
    ax.set_ylabel("events per km (mean, 95% CI)")
    ax.set_title("infractions per km")
    return fig


def _rtf(plt: Any, records: list[dict[str, Any]]) -> Any:
    ok = ok_records(records)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar([r["index"] for r in ok], [r.get("rtf", 0.0) for r in ok], color="tab:green", alpha=0.8)
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.set_xlabel("episode")
    ax.set_ylabel("real-time factor (sim s / wall s)")
    ax.set_title("real-time factor")
    return fig


def _tile_latency(plt: Any, records: list[dict[str, Any]]) -> Any:
    ok = ok_records(records)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    samples = [ms for r in ok for ms in r.get("tile_ms_samples", ())]
    if samples:
        ax.hist(samples, bins=40, color="tab:purple", alpha=0.8)
        ax.set_title(f"tile generation latency ({len(samples)} tiles)")
    else:  # reports without samples: per-episode percentiles
        for key, color in (("tile_ms_p50", "tab:purple"), ("tile_ms_p95", "tab:orange")):
            ax.hist([r[key] for r in ok if key in r], bins=20, alpha=0.6, color=color, label=key)
        ax.legend(fontsize=8)
        ax.set_title("tile generation latency (per-episode percentiles)")
    ax.set_xlabel("ms")
    ax.set_ylabel("count")
    return fig
