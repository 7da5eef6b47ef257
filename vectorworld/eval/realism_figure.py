"""The bird's-eye figure of ``eval realism``: real and generated worlds side by side, at one scale.

Each panel is a ``view_m`` square around a snapshot's anchor nearest the middle of its anchors: lane
centrelines (junction connectors orange), agents as oriented boxes (vehicle blue, pedestrian green, cyclist
purple) and one 64 m tile outlined. Needs matplotlib (the ``report`` extra).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vectorworld import geometry
from vectorworld.eval.realism_features import Snapshot
from vectorworld.scene import AgentType, LaneType

COLOURS = {int(AgentType.VEHICLE): "#1f5fbf", int(AgentType.PEDESTRIAN): "#2ca02c",
           int(AgentType.CYCLIST): "#8e44ad"}


def _focus(snap: Snapshot) -> np.ndarray:
    if len(snap.anchor_xy) == 0:
        return np.zeros(2)
    mid = snap.anchor_xy.mean(0)
    return snap.anchor_xy[int(np.argmin(np.linalg.norm(snap.anchor_xy - mid, axis=-1)))]


def _panel(ax, snap: Snapshot, title: str, view_m: float) -> None:  # noqa: ANN001 - matplotlib Axes
    centre = _focus(snap)
    half = view_m / 2.0
    for lane_id in snap.graph.near(centre, half * 1.5):
        lane = snap.graph[lane_id]
        pts = lane.points - centre
        if np.all(np.abs(pts).max(-1) > half * 1.2):
            continue
        junction = lane.lane_type == LaneType.CONNECTOR
        ax.plot(pts[:, 0], pts[:, 1], color="#e67e22" if junction else "#555555", lw=0.8 if junction else 1.0)
    for k in range(len(snap.xy)):
        rel = snap.xy[k] - centre
        if np.abs(rel).max() > half:
            continue
        corners = geometry.box_corners(rel, np.float64(snap.yaw[k]), np.float64(snap.length[k]),
                                       np.float64(snap.width[k]))
        ax.fill(corners[:, 0], corners[:, 1], color=COLOURS.get(int(snap.agent_type[k]), "#999999"), lw=0)
    t = 32.0
    ax.plot([-t, t, t, -t, -t], [-t, -t, t, t, -t], color="#00a0c0", lw=0.8, ls="--")
    ax.set_xlim(-half, half)
    ax.set_ylim(-half, half)
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)


def save_birdseye(path: str | Path, columns: list[tuple[str, list[Snapshot]]], view_m: float = 200.0) -> Path:
    """Write a PNG with one column per (title, snapshots) pair, one row per snapshot (the longest column)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = max((len(snaps) for _, snaps in columns), default=0)
    if rows == 0:
        raise ValueError("no snapshot to draw")
    fig, axes = plt.subplots(rows, len(columns), figsize=(4.2 * len(columns), 4.2 * rows), squeeze=False)
    for c, (title, snaps) in enumerate(columns):
        for r in range(rows):
            if r < len(snaps):
                _panel(axes[r][c], snaps[r], title, view_m)
            else:
                axes[r][c].axis("off")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
