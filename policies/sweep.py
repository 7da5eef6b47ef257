"""The swept box: how far an agent can drive along its path before its own box touches a standing one.

IDM's leader test looks along the corridor in front of the agent's centre. Turning, the agent's box also
swings: its flanks and rear sweep sideways over ground that band never covers. (In a 1 km rollout the ego,
turning right past a car standing at a merge, swung its flank into the car's front; the car's box lay
wholly behind the ego's centre.) This test carries the agent's box, grown by a margin, to poses along its
path a few metres ahead, and finds the first that overlaps a standing agent's box.
"""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.scene import Agents
from vectorworld.world.uniform_paths import UniformPathBatch

SWEEP_M = 8.0
SWEEP_STEP_M = 0.5
"""Poses every SWEEP_STEP_M along the next SWEEP_M of the path (m)."""
SWEEP_MARGIN_M = 0.1
"""The box is grown by this on every side (m): the poses sit on the centre line at the path's heading, while
the agent lags a little behind both. (A turn past a standing car's front at 0.6 m is blocked by a 0.2 m
margin and driven with 0.1 m; with none, a pass at 0.5 m stops half way.)"""


def swept_clearance(agents: Agents, slots: np.ndarray, paths: UniformPathBatch, s_now: np.ndarray,
                    standing_mps: float, margin_m: float = SWEEP_MARGIN_M) -> np.ndarray:
    """Metres (N,) each of ``slots`` can travel along its path (row of ``paths``, now at arc length ``s_now``)
    with its box, grown by ``margin_m`` on every side, clear of every agent slower than ``standing_mps``
    (inf: clear for SWEEP_M). A box it already touches is left out: braking cannot help there."""
    clear = np.full(len(slots), np.inf)
    standing = np.flatnonzero(agents.valid & (agents.speed < standing_mps))
    if len(slots) == 0 or len(standing) == 0:
        return clear
    size = agents.length + agents.width
    reach = SWEEP_M + 0.5 * (size[slots][:, None] + size[standing][None])
    near = (((agents.xy[slots][:, None] - agents.xy[standing][None]) ** 2).sum(-1) < reach**2) \
        & (standing[None] != slots[:, None])
    rows, cols = np.nonzero(near)
    if len(rows) == 0:
        return clear
    travel = np.arange(1, round(SWEEP_M / SWEEP_STEP_M) + 1) * SWEEP_STEP_M
    s = s_now[:, None] + travel[None]
    xy, _ = paths.at(s)
    following, _ = paths.at(s + SWEEP_STEP_M / 2.0)
    yaw = np.arctan2(following[..., 1] - xy[..., 1], following[..., 0] - xy[..., 0])
    mine, other = slots[rows], standing[cols]
    grown = np.broadcast_to((agents.length[mine] + 2.0 * margin_m)[:, None], (len(rows), len(travel)))
    grown_width = np.broadcast_to((agents.width[mine] + 2.0 * margin_m)[:, None], grown.shape)
    theirs = geometry.box_corners(agents.xy[other], agents.yaw[other], agents.length[other], agents.width[other])
    hit = geometry.boxes_overlap(geometry.box_corners(xy[rows], yaw[rows], grown, grown_width), theirs[:, None])
    hit &= (s <= paths.length_m[:, None])[rows]  # the road is not known past the path's end
    touching = geometry.boxes_overlap(geometry.box_corners(agents.xy[mine], agents.yaw[mine], agents.length[mine],
                                                           agents.width[mine]), theirs)
    hit &= ~touching[:, None]
    first = np.where(hit.any(1), travel[hit.argmax(1)] - SWEEP_STEP_M, np.inf)
    np.minimum.at(clear, rows, first)
    return clear
