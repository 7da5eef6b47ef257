"""T junctions: a side road that stops at a road drawn through in one lane gets that road cut and joined.

A one-step sample often draws the road of a T junction as one lane straight across the tile and the side
road's lanes stopping short of it (or just touching it). A road's lane has no joint in its middle, so
junction completion (junction_completion.py) finds no lane start to turn into and the filter prunes the
side road as spurs (held-out `mid_req` contexts: 0.45 such lane ends per valid candidate, the ray ahead of
each meeting a road lane's middle 2.6 m away at the median).

:func:`tee_junctions` takes every open lane end whose way ahead meets the middle of another lane of the
candidate at an angle (and every open lane start whose way back does), moves that end to ``stop_m`` before
the nearest such lane (the side road's stop line), cuts each road lane it turns into at the node where a
turn of about that radius meets it, and adds the turn: a cubic Bézier from the side road's end to the cut
(or from the cut to the side road's start), as junction completion draws its connectors. Lane pieces are
exact sub-curves of the road's Bézier, so the road runs on through its cuts without a kink.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.bezier import bezier_pieces, bezier_points
from vectorworld.generation.learned.filter_config import FrontierPort, StitchConfig
from vectorworld.generation.learned.junction_completion import CompletionConfig, connector, drivable
from vectorworld.generation.learned.lane_rules import end_yaws
from vectorworld.generation.learned.stitching import open_ends
from vectorworld.generation.learned.tile_tensors import LANE_POINTS


@dataclass(frozen=True)
class TeeConfig:
    """Which open lane ends become T junctions, and their shape."""

    reach_m: float = 25.0
    """How far ahead of an open end (behind an open start) the road it meets may lie."""
    min_angle_rad: float = 0.7
    """Lanes meeting at a shallower angle are a merge, not a T."""
    stop_m: float = 5.0
    """The side road's lane ends (starts) this far before the nearest lane of the road: the turns into the
    road's lanes are about this radius (the near lane) and a lane width more (the far one)."""
    min_piece_m: float = 4.0
    """A road lane is cut only where every piece keeps this length."""


@dataclass(frozen=True)
class _Turn:
    """One turn a T junction needs: between ``joint`` (a side-road lane's end, or its start when not
    ``into_road``) and the road lane ``road`` at arc length ``arc_m``."""

    joint: int
    into_road: bool
    road: int
    arc_m: float


def _param_at(lane: np.ndarray, arc_m: float) -> float:
    """The Bézier parameter of arc length ``arc_m`` along a polyline sampled at uniform parameters."""
    return float(np.interp(arc_m, geometry.polyline_lengths(lane), np.linspace(0.0, 1.0, len(lane))))


def _ray_hits(origin: np.ndarray, direction: np.ndarray, lanes: np.ndarray, skip: int, config: TeeConfig
              ) -> list[tuple[float, int, float]]:
    """(distance along the ray, lane, arc length on it) of the first crossing of each lane (not ``skip``) by
    the ray ``origin + t direction``, 0 < t <= reach, at ``min_angle_rad`` or more, away from its ends by
    ``min_piece_m``; nearest first."""
    start, step = lanes[:, :-1], np.diff(lanes, axis=1)                     # (K, P-1, 2)
    t, u, denom = geometry.segment_crossing(origin, direction * config.reach_m, start, step)
    sine = np.abs(denom) / np.maximum(config.reach_m * geometry.norms(step), 1e-12)
    hit = (t > 0.0) & (t <= 1.0) & (u >= 0.0) & (u <= 1.0) & (sine >= np.sin(config.min_angle_rad))
    hit[skip] = False
    out = []
    for k in np.flatnonzero(hit.any(1)):
        seg = int(np.flatnonzero(hit[k])[np.argmin(t[k][hit[k]])])
        arcs = geometry.polyline_lengths(lanes[k])
        arc = float(arcs[seg] + u[k, seg] * (arcs[seg + 1] - arcs[seg]))
        if config.min_piece_m <= arc <= arcs[-1] - config.min_piece_m:
            out.append((float(t[k, seg]) * config.reach_m, int(k), arc))
    return sorted(out)


def _plan_turns(lanes: np.ndarray, live: np.ndarray, ports: list[FrontierPort], stitch: StitchConfig,
                config: TeeConfig) -> tuple[list[_Turn], dict[tuple[int, bool], float]]:
    """The turns of every open joint of the live lanes, and how far each such joint moves along its own
    heading (> 0: out of the lane, ahead of an end or behind a start) to its stop line."""
    rows = np.flatnonzero(live)
    _, starts_open, ends_open = open_ends(lanes[rows], ports, stitch)
    turns: list[_Turn] = []
    shift: dict[tuple[int, bool], float] = {}
    for into_road, is_open in ((True, ends_open), (False, starts_open)):
        yaw = end_yaws(lanes[rows], into_road)
        for k in np.flatnonzero(is_open):
            out_dir = np.array([np.cos(yaw[k]), np.sin(yaw[k])]) * (1.0 if into_road else -1.0)
            xy = lanes[rows[k], -1 if into_road else 0]
            hits = _ray_hits(xy, out_dir, lanes[rows], int(k), config)
            if not hits:
                continue
            move = hits[0][0] - config.stop_m
            if move < 0.0 and geometry.polyline_lengths(lanes[rows[k]])[-1] + move < config.min_piece_m:
                continue                                     # too short to pull back to the stop line
            shift[(int(rows[k]), into_road)] = move
            seen: set[int] = set()
            for dist, hit, arc in hits:
                road = lanes[rows[hit]]
                heading = _heading_at(road, arc)
                side = int(np.sign(out_dir[0] * heading[1] - out_dir[1] * heading[0]))
                if side in seen:
                    continue                                 # per joint and turn side: the nearest road lane
                seen.add(side)
                # a turn of about the distance as radius; shorter where the road lane ends sooner
                radius = min(dist - move, geometry.polyline_lengths(road)[-1] - config.min_piece_m - arc
                             if into_road else arc - config.min_piece_m)
                if radius > 0.0:
                    turns.append(_Turn(int(rows[k]), into_road, int(rows[hit]),
                                       arc + radius if into_road else arc - radius))
    return turns, shift


def _heading_at(lane: np.ndarray, arc_m: float) -> np.ndarray:
    """Unit direction of travel of a polyline at arc length ``arc_m``."""
    seg = int(np.clip(np.searchsorted(geometry.polyline_lengths(lane), arc_m) - 1, 0, len(lane) - 2))
    return _unit(lane[seg + 1] - lane[seg])


def _cuts(length_m: float, arcs: list[float], config: TeeConfig) -> list[float]:
    """Cut positions (sorted) for the wanted arcs of one road lane: arcs closer than ``min_piece_m`` share
    their mean; cuts leaving a piece shorter than that are dropped."""
    groups: list[list[float]] = []
    for a in sorted(arcs):
        if groups and a - np.mean(groups[-1]) < config.min_piece_m:
            groups[-1].append(a)
        else:
            groups.append([a])
    cuts: list[float] = []
    for g in groups:
        c = float(np.mean(g))
        if c - (cuts[-1] if cuts else 0.0) >= config.min_piece_m and length_m - c >= config.min_piece_m:
            cuts.append(c)
    return cuts


def _moved(control: np.ndarray, at_end: bool, move: float) -> np.ndarray:
    """A lane's control points with its end (start) moved ``move`` m along its heading out of the lane
    (straight on, > 0) or back into it (trimmed to the exact sub-curve, < 0)."""
    if move < 0.0:
        lane = bezier_points(control, LANE_POINTS)
        u = _param_at(lane, geometry.polyline_lengths(lane)[-1] + move if at_end else -move)
        return bezier_pieces(control, [u])[0 if at_end else 1]
    out = np.array(control, np.float64, copy=True)
    end, inner = (3, 2) if at_end else (0, 1)
    heading = out[end] - out[inner]
    heading /= max(float(np.linalg.norm(heading)), 1e-9)
    out[end] = out[end] + move * heading
    out[inner] = out[end] - heading * float(np.linalg.norm(out[end] - out[3 - end])) / 3.0
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-9)


def tee_junctions(controls: np.ndarray, lanes: np.ndarray, slots: np.ndarray, live: np.ndarray,
                  ports: list[FrontierPort], stitch: StitchConfig, completion: CompletionConfig,
                  config: TeeConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A candidate's control points (K, 4, 2), polylines (K, P, 2) and slots (K,) with its T junctions made
    (see the module); only ``live`` (K,) bool lanes take part. A cut road lane keeps its first piece in place
    and its slot; its other pieces and the turns are appended with slot -1. Joints no drivable turn leaves
    stay as they were."""
    turns, shift = _plan_turns(lanes, live, ports, stitch, config)
    roads = {t.road for t in turns}
    turns = [t for t in turns if t.joint not in roads]     # a lane that is cut stays where it was drawn
    if not turns:
        return controls, lanes, slots
    cuts = {road: _cuts(geometry.polyline_lengths(lanes[road])[-1], [t.arc_m for t in turns if t.road == road],
                        config) for road in roads}
    made: list[tuple[_Turn, int, np.ndarray]] = []
    for turn in turns:
        arcs = np.array(cuts[turn.road])
        c = int(np.argmin(np.abs(arcs - turn.arc_m))) if len(arcs) else -1
        if c < 0 or abs(arcs[c] - turn.arc_m) >= config.min_piece_m:
            continue
        node_piece = bezier_pieces(controls[turn.road], [_param_at(lanes[turn.road], arcs[c])])[1]
        node, node_heading = node_piece[0], _unit(node_piece[1] - node_piece[0])
        lane = bezier_points(_moved(controls[turn.joint], turn.into_road, shift[(turn.joint, turn.into_road)]),
                             LANE_POINTS)
        yaw = end_yaws(lane[None], turn.into_road)[0]
        joint = (lane[-1] if turn.into_road else lane[0], np.array([np.cos(yaw), np.sin(yaw)]))
        a, b = (joint, (node, node_heading)) if turn.into_road else ((node, node_heading), joint)
        control = connector(a[0], a[1], b[0], b[1], completion.handle_share)
        net = geometry.wrap_angle(np.arctan2(b[1][1], b[1][0]) - np.arctan2(a[1][1], a[1][0]))
        if abs(net) <= completion.max_turn_rad and drivable(control[None], np.array([net]), completion)[0]:
            made.append((turn, c, control))
    if not made:
        return controls, lanes, slots
    out = np.array(controls, np.float64, copy=True)
    for joint, into_road in sorted({(t.joint, t.into_road) for t, _, _ in made}):
        out[joint] = _moved(out[joint], into_road, shift[(joint, into_road)])
    extra = []
    for road in sorted({t.road for t, _, _ in made}):
        used = sorted({c for t, c, _ in made if t.road == road})
        pieces = bezier_pieces(controls[road], [_param_at(lanes[road], cuts[road][c]) for c in used])
        out[road] = pieces[0]
        extra.extend(pieces[1:])
    extra.extend(control for _, _, control in made)
    out = np.concatenate([out, np.array(extra)])
    return out, bezier_points(out, LANE_POINTS), np.concatenate([slots, np.full(len(extra), -1)])
