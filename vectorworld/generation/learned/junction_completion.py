"""Junction completion: connector lanes between the lane ends a sample leaves open at a junction.

A one-step sample places the roads of a junction (the lanes that arrive at it and the lanes that leave it)
much better than the connectors between them, which are short, strongly curved and must meet both ends
within a metre; the filter then prunes the arriving lanes as spurs, and with them the port continuations
that lead there (issue 15: 11 of 17 tiles rejected for an unmatched port kept it without spur pruning).
Completion joins every lane end that touches nothing to the nearest open lane start of each turn (straight,
left, right) that a vehicle can drive to: a cubic Bézier with its handles along both lanes. The candidate,
completed, then goes through the filter as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.bezier import bezier_points
from vectorworld.generation.learned.stitching import FrontierPort, StitchConfig, open_ends
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M, LANE_POINTS


@dataclass(frozen=True)
class CompletionConfig:
    """Which open end / open start pairs get a connector."""

    enabled: bool = True
    min_gap_m: float = 2.0
    max_gap_m: float = 40.0
    straight_rad: float = 0.5
    """A heading change below this is straight on; above it a turn, whose start must lie on the turn's side."""
    max_turn_rad: float = 2.2
    """No U-turns."""
    straight_lateral: float = 0.35
    """A straight connector's sideways offset, as a share of its length (plus 1 m): a lane change at most."""
    min_radius_m: float = 4.0
    extra_turn_rad: float = 0.6
    """A connector may turn this much more in all (summed along it) than its net heading change: no S-bends or
    loops between two badly placed ends."""
    handle_share: float = 0.4
    """Handle length / chord (0.4 keeps a right-angle turn close to a circular arc)."""


def _headings(lanes: np.ndarray, at_end: bool) -> np.ndarray:
    """Unit direction of travel (K, 2) at the starts or ends of polylines (K, P, 2)."""
    d = lanes[:, -1] - lanes[:, -2] if at_end else lanes[:, 1] - lanes[:, 0]
    return d / np.maximum(np.linalg.norm(d, axis=-1, keepdims=True), 1e-9)


def _drivable(control: np.ndarray, turn: float, config: CompletionConfig) -> bool:
    """Whether a connector (4, 2) with net heading change ``turn`` lies in the front half of the tile, bends
    nowhere tighter than the radius and turns in all no more than ``turn`` plus the slack."""
    pts = bezier_points(control[None], LANE_POINTS)[0]
    if np.any(np.abs(pts) > HALF_TILE_M + 1e-6) or np.any(pts[:, 0] < -1e-6):
        return False
    seg = np.diff(pts, axis=0)
    total = np.abs(geometry.wrap_angle(np.diff(np.arctan2(seg[:, 1], seg[:, 0])))).sum()
    return bool(geometry.curvature(pts).max() <= 1.0 / config.min_radius_m
                and total <= abs(turn) + config.extra_turn_rad)


def junction_connectors(lanes: np.ndarray, ports: list[FrontierPort], stitch: StitchConfig,
                        config: CompletionConfig) -> np.ndarray:
    """Connector control points (E, 4, 2) (tile frame, m) for a candidate's lanes (K, P, 2): from every open
    lane end to the nearest open start of each turn it can drive (see the module)."""
    if not config.enabled or len(lanes) < 2:
        return np.zeros((0, 4, 2))
    _, starts_open, ends_open = open_ends(lanes, ports, stitch)
    ei, sj = np.flatnonzero(ends_open), np.flatnonzero(starts_open)
    if len(ei) == 0 or len(sj) == 0:
        return np.zeros((0, 4, 2))
    e_xy, s_xy = lanes[ei, -1], lanes[sj, 0]
    a, b = _headings(lanes[ei], True), _headings(lanes[sj], False)
    d = s_xy[None] - e_xy[:, None]                                                   # (E, S, 2)
    dist = np.linalg.norm(d, axis=-1)
    along = (d * a[:, None]).sum(-1)
    across = a[:, None, 0] * d[..., 1] - a[:, None, 1] * d[..., 0]                 # > 0: to the left
    arrive = (d * b[None]).sum(-1)
    turn = geometry.wrap_angle(np.arctan2(b[:, 1], b[:, 0])[None] - np.arctan2(a[:, 1], a[:, 0])[:, None])
    straight = np.abs(turn) < config.straight_rad
    ok = ((dist >= config.min_gap_m) & (dist <= config.max_gap_m) & (along > 0.0) & (arrive > 0.0)
          & (np.abs(turn) <= config.max_turn_rad) & (ei[:, None] != sj[None]))
    ok &= np.where(straight, np.abs(across) <= config.straight_lateral * along + 1.0, across * turn > 0.0)
    kind = np.where(straight, 0, np.sign(turn)).astype(int)
    found = []
    for e in range(len(ei)):
        for k in (-1, 0, 1):
            choices = np.flatnonzero(ok[e] & (kind[e] == k))
            for s in choices[np.argsort(dist[e, choices])]:
                h = config.handle_share * dist[e, s]
                control = np.stack([e_xy[e], e_xy[e] + h * a[e], s_xy[s] - h * b[s], s_xy[s]])
                if _drivable(control, turn[e, s], config):
                    found.append(control)
                    break
    return np.array(found, np.float64).reshape(-1, 4, 2)
