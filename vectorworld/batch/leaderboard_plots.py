"""``DIR/plots/leaderboard.png``: CLS, driving score and infractions per km per planner with 95% CIs
(matplotlib, imported lazily, Agg backend; the ``report`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PANELS = (("cls", "nuPlan CLS"), ("driving_score", "driving score"), ("infractions_per_km", "infractions / km"))


def write_leaderboard_plot(directory: Path, board: dict[str, Any]) -> list[str]:
    """Write the PNG; return warnings (matplotlib missing)."""
    try:
        import matplotlib
    except ImportError:
        return ['plots skipped: matplotlib is not installed (pip install "vectorworld[report]")']
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    rows = board["planners"]
    names = list(rows)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.0 * len(PANELS), 3.4))
    for ax, (metric, title) in zip(axes, PANELS, strict=True):
        means, low, high = [], [], []
        for name in names:
            mean = float(rows[name].get(metric, 0.0))
            lo, hi = rows[name].get(f"{metric}_ci95", [None, None])
            means.append(mean)
            low.append(mean - lo if lo is not None else 0.0)
            high.append(hi - mean if hi is not None else 0.0)
        ax.bar(range(len(names)), means, yerr=[low, high], capsize=4, color="tab:blue", alpha=0.8)
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.set_title(f"{title} (mean, 95% CI)", fontsize=9)
    fig.suptitle(f"{board.get('episodes', '?')} paired episodes x {board.get('km', '?')} km", fontsize=10)
    fig.tight_layout()
    Path(directory).mkdir(parents=True, exist_ok=True)
    fig.savefig(Path(directory) / "leaderboard.png", dpi=90)
    plt.close(fig)
    return []
