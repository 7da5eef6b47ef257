"""Junction completion: connector lanes between the lane ends a sample leaves open at a junction.

A one-step sample places the roads of a junction (the lanes that arrive at it and the lanes that leave it)
much better than the connectors between them, which are short, strongly curved and must meet both ends
within a metre; the filter then prunes the arriving lanes as spurs, and with them the port continuations
that lead there (issue 15: 11 of 17 tiles rejected for an unmatched port kept it without spur pruning).
Completion joins every lane end that touches nothing (and every required out port no lane continues) to the
nearest lane start of each turn (straight, left, right) that a vehicle can drive to, and every lane start
that touches nothing (or required in port no lane reaches) from the nearest lane end of each turn: a cubic
Bézier with its handles along both joints. A port's lane whose far end still touches nothing is then
extended straight to the border (:func:`extend_port_lanes`). The candidate, completed, then goes through the
filter as before. When every candidate of a tile fails with a required port that no lane continues, the best
one gets straight lanes from those ports to the border (:func:`port_continuations`) before the procedural
generator is asked (candidates.continue_open_ports).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.bezier import bezier_points
from vectorworld.generation.learned.filter_config import FrontierPort, StitchConfig
from vectorworld.generation.learned.lane_rules import end_yaws, total_turn
from vectorworld.generation.learned.stitching import exit_distance, open_ends
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M, LANE_POINTS


@dataclass(frozen=True)
class CompletionConfig:
    """Which open end / open start pairs get a connector."""

    min_gap_m: float = 2.0
    max_gap_m: float = 40.0
    straight_rad: float = 0.5
    """A heading change below this is straight on; above it a turn, whose start must lie on the turn's side."""
    max_turn_rad: float = 2.2
    """No U-turns."""
    straight_lateral: float = 0.35
    """A straight connector's sideways offset, as a share of its length (plus 1 m): a lane change at most."""
    min_radius_m: float = 3.0
    """City corners turn on a 3.7 m radius (median of the held-out turning lanes; 5th percentile 3.3 m)."""
    extra_turn_rad: float = 0.6
    """A connector may turn this much more in all (summed along it) than its net heading change: no S-bends or
    loops between two badly placed ends."""
    handle_share: float = 0.4
    """Handle length / chord (0.4 keeps a right-angle turn close to a circular arc)."""
    tees: bool = True
    """Then make T junctions where a side road stops at a road drawn through (junction_tees.py)."""


def _headings(lanes: np.ndarray, at_end: bool) -> np.ndarray:
    """Unit direction of travel (K, 2) at the starts or ends of polylines (K, P, 2), as the filter reads it."""
    yaw = end_yaws(lanes, at_end)
    return np.stack([np.cos(yaw), np.sin(yaw)], -1)


def connector(start: np.ndarray, start_heading: np.ndarray, end: np.ndarray, end_heading: np.ndarray,
              handle_share: float) -> np.ndarray:
    """Control points (..., 4, 2) of a connector from ``start`` to ``end`` (..., 2) leaving and arriving along
    the unit headings, its handles ``handle_share`` of the chord."""
    h = handle_share * geometry.norms(end - start)[..., None]
    return np.stack([start, start + h * start_heading, end - h * end_heading, end], -2)


def drivable(controls: np.ndarray, turn: np.ndarray, config: CompletionConfig) -> np.ndarray:
    """(E,) bool: connectors (E, 4, 2) with net heading changes ``turn`` (E,) that lie in the front half of
    the tile, bend nowhere tighter than the radius and turn in all no more than ``turn`` plus the slack."""
    pts = bezier_points(controls, LANE_POINTS)
    inside = (np.abs(pts) <= HALF_TILE_M + 1e-6).all((1, 2)) & (pts[..., 0] >= -1e-6).all(1)
    return (inside & (geometry.curvature(pts).max(1) <= 1.0 / config.min_radius_m)
            & (total_turn(pts) <= np.abs(turn) + config.extra_turn_rad))


def _joints(lanes: np.ndarray, ports: list[FrontierPort], stitch: StitchConfig
            ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]:
    """The ends a connector may leave from and the starts it may arrive at: (xy (n, 2), unit heading (n, 2),
    open (n,) bool, owner (n,) int) for every lane end plus the required out ports no lane continues, and for
    every lane start plus the required in ports no lane reaches. Owners: the lane, or -1 for a port."""
    check, starts_open, ends_open = open_ends(lanes, ports, stitch)
    linked = {k for k, _ in check.port_links}
    free = [(k, p) for k, p in enumerate(ports) if p.required and k not in linked]
    joints = []
    for is_out, xy, heading, is_open in ((True, lanes[:, -1], _headings(lanes, True), ends_open),
                                          (False, lanes[:, 0], _headings(lanes, False), starts_open)):
        side = [p for _, p in free if p.is_out == is_out]
        joints.append((np.concatenate([xy, np.array([p.xy for p in side]).reshape(-1, 2)]),
                       np.concatenate([heading, np.array([[np.cos(p.yaw), np.sin(p.yaw)] for p in side])
                                       .reshape(-1, 2)]),
                       np.concatenate([is_open, np.ones(len(side), bool)]),
                       np.concatenate([np.arange(len(lanes)), np.full(len(side), -1)])))
    return tuple(joints)


def junction_connectors(lanes: np.ndarray, ports: list[FrontierPort], stitch: StitchConfig,
                        config: CompletionConfig) -> np.ndarray:
    """Connector control points (E, 4, 2) (tile frame, m) for a candidate's lanes (K, P, 2): from every open
    lane end (or required out port no lane continues) to the nearest lane start of each turn it can drive,
    and into every open lane start (or unreached required in port) from the nearest lane end of each turn
    (see the module)."""
    if len(lanes) == 0:
        return np.zeros((0, 4, 2))
    (e_xy, a, e_open, e_owner), (s_xy, b, s_open, s_owner) = _joints(lanes, ports, stitch)
    if not (e_open.any() or s_open.any()):
        return np.zeros((0, 4, 2))
    d = s_xy[None] - e_xy[:, None]                                                   # (E, S, 2)
    dist = geometry.norms(d)
    along = d[..., 0] * a[:, None, 0] + d[..., 1] * a[:, None, 1]
    across = a[:, None, 0] * d[..., 1] - a[:, None, 1] * d[..., 0]                 # > 0: to the left
    arrive = d[..., 0] * b[None, :, 0] + d[..., 1] * b[None, :, 1]
    turn = geometry.wrap_angle(np.arctan2(b[:, 1], b[:, 0])[None] - np.arctan2(a[:, 1], a[:, 0])[:, None])
    straight = np.abs(turn) < config.straight_rad
    ok = ((dist >= config.min_gap_m) & (dist <= config.max_gap_m) & (along > 0.0) & (arrive > 0.0)
          & (np.abs(turn) <= config.max_turn_rad) & ((e_owner[:, None] != s_owner[None]) | (e_owner[:, None] < 0)))
    ok &= np.where(straight, np.abs(across) <= config.straight_lateral * along + 1.0, across * turn > 0.0)
    ok &= e_open[:, None] | s_open[None]
    kind = np.where(straight, 0, np.sign(turn)).astype(int)
    e, s = np.nonzero(ok)
    controls = connector(e_xy[e], a[e], s_xy[s], b[s], config.handle_share)                 # (M, 4, 2)
    good = drivable(controls, turn[e, s], config)
    e, s, controls, k, gap = e[good], s[good], controls[good], kind[e[good], s[good]], dist[e[good], s[good]]
    chosen: set[int] = set()
    for joint, is_open in ((e, e_open), (s, s_open)):   # per open joint and turn: the nearest partner
        for group in np.unique(np.stack([joint, k], 1), axis=0):
            if is_open[group[0]]:
                members = np.flatnonzero((joint == group[0]) & (k == group[1]))
                chosen.add(int(members[np.argmin(gap[members])]))
    return controls[sorted(chosen)].reshape(-1, 4, 2)


def extend_port_lanes(controls: np.ndarray, lanes: np.ndarray, ports: list[FrontierPort], stitch: StitchConfig,
                      config: CompletionConfig) -> tuple[np.ndarray, np.ndarray]:
    """Lanes that close a required port but whose far end touches nothing (a road drawn too short: an
    incoming lane starting 7 m before its port) and head there as their port does (within
    ``straight_rad``) are extended straight along their heading to the tile border, up to ``max_gap_m``:
    their far control point moves to the border, its handle along the heading.
    Returns the new control points (K, 4, 2) and polylines (K, P, 2)."""
    if len(lanes) == 0:
        return controls, lanes
    check, starts_open, ends_open = open_ends(lanes, ports, stitch)
    out = np.array(controls, np.float64, copy=True)
    changed = False
    for port, lane in check.port_links:
        if not ports[port].required:
            continue
        at_end = ports[port].is_out                      # an out port's lane must reach on from its end
        if not (ends_open if at_end else starts_open)[lane]:
            continue
        heading = _headings(lanes[lane:lane + 1], at_end)[0] * (1.0 if at_end else -1.0)
        travel = np.arctan2(heading[1], heading[0]) + (0.0 if at_end else np.pi)
        if abs(geometry.wrap_angle(travel - ports[port].yaw)) > config.straight_rad:
            continue                                     # only a road that runs on as its port does
        xy = lanes[lane, -1 if at_end else 0]
        reach = float(exit_distance(xy[None], np.array([np.arctan2(heading[1], heading[0])]))[0])
        if not np.isfinite(reach) or reach > config.max_gap_m:
            continue
        end, inner = (3, 2) if at_end else (0, 1)
        target = xy + reach * heading
        if target[0] < 0.0:
            continue
        handle = float(np.linalg.norm(target - out[lane, 3 - end])) / 3.0
        out[lane, end] = target
        out[lane, inner] = target - handle * heading
        changed = True
    if not changed:
        return controls, lanes
    return out, bezier_points(out, LANE_POINTS)


def port_continuations(ports: list[FrontierPort], config: CompletionConfig) -> np.ndarray:
    """Control points (k, 4, 2) of straight lanes continuing ``ports`` to the tile border: from an out port
    along its heading, into an in port from the border behind it. A port whose continuation would leave the
    front half (x < 0) or be shorter than ``min_gap_m`` gets none."""
    out = []
    for port in ports:
        yaw = port.yaw if port.is_out else port.yaw + np.pi
        xy, heading = np.asarray(port.xy, np.float64), np.array([np.cos(port.yaw), np.sin(port.yaw)])
        reach = float(exit_distance(xy[None], np.array([yaw]))[0])
        far = xy + reach * np.array([np.cos(yaw), np.sin(yaw)])
        if not np.isfinite(reach) or reach < config.min_gap_m or far[0] < -1e-6:
            continue
        start, end = (xy, far) if port.is_out else (far, xy)
        out.append(connector(start, heading, end, heading, 1.0 / 3.0))   # handles a third of it: straight
    return np.array(out, np.float64).reshape(-1, 4, 2)
