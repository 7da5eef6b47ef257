"""Junction layout: arms around a box and the turn connectors between them (right-hand traffic).

A junction is placed at the end of a growing road. Every arm, the incoming road included, is an
:class:`Approach`: a reference point on the box border, a heading pointing away from the box centre and a
cross-section in that frame (``forward`` lanes leave the junction, the others enter it). Connectors are
tangent-continuous Hermite curves from the end of each entering lane to the start of the exiting lanes it
may turn into: straight ahead lane by lane, the rightmost lane turns right, the leftmost turns left;
afterwards every entering lane has at least one exit and every exiting lane at least one feeder, so the
junction creates no dead ends. U-turns are not generated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.procedural.roads import (
    CONNECTOR_SPACING_M,
    LaneSpec,
    direction,
    half_width,
    hermite_path,
    normal,
)

STRAIGHT_MAX_RAD = np.pi / 4.0
"""Turns smaller than this (rad) count as going straight."""
U_TURN_MIN_RAD = 2.6
"""Turns larger than this (rad) are U-turns and get no connector."""


@dataclass(frozen=True)
class ArmSpec:
    """An arm to build: angle (rad) relative to the incoming road's heading (0 straight on, + left) and its
    cross-section in its own growth frame (forward lanes leave the junction)."""

    angle_rad: float
    lanes: tuple[LaneSpec, ...]


@dataclass(frozen=True)
class Approach:
    """One arm seen from the junction: xy (2,) m global on the box border, yaw (rad) pointing away from the
    centre, lanes in that frame."""

    xy: np.ndarray
    yaw: float
    lanes: tuple[LaneSpec, ...]

    def lane_pose(self, index: int) -> tuple[np.ndarray, float]:
        """Point (2,) of lane ``index`` on the box border and its heading in its direction of travel."""
        spec = self.lanes[index]
        xy = self.xy + spec.offset_m * normal(self.yaw)
        return xy, float(self.yaw if spec.forward else geometry.wrap_angle(self.yaw + np.pi))

    def entering(self) -> list[int]:
        """Indices of lanes entering the junction, rightmost first (in their direction of travel)."""
        return sorted((i for i, s in enumerate(self.lanes) if not s.forward), key=lambda i: -self.lanes[i].offset_m)

    def exiting(self) -> list[int]:
        """Indices of lanes leaving the junction, rightmost first."""
        return sorted((i for i, s in enumerate(self.lanes) if s.forward), key=lambda i: self.lanes[i].offset_m)


@dataclass(frozen=True)
class Connector:
    """A turn lane from lane ``from_lane`` of approach ``from_approach`` to lane ``to_lane`` of approach
    ``to_approach``; points (M, 2) m global."""

    from_approach: int
    from_lane: int
    to_approach: int
    to_lane: int
    points: np.ndarray


@dataclass(frozen=True)
class JunctionLayout:
    """center_xy (2,) m; approaches[0] is the incoming road, approaches[k + 1] is arm k; pairs: the
    connections (from approach, from lane, to approach, to lane)."""

    center_xy: np.ndarray
    approaches: tuple[Approach, ...]
    pairs: tuple[tuple[int, int, int, int], ...]

    def connectors(self) -> tuple[Connector, ...]:
        """The connector curves of all pairs."""
        out = []
        for a, i, b, j in self.pairs:
            p0, yaw0 = self.approaches[a].lane_pose(i)
            p1, yaw1 = self.approaches[b].lane_pose(j)
            out.append(Connector(a, i, b, j, hermite_path(p0, yaw0, p1, yaw1, CONNECTOR_SPACING_M)))
        return tuple(out)


def incoming_approach(entry_xy: np.ndarray, entry_yaw: float, lanes: tuple[LaneSpec, ...]) -> Approach:
    """The incoming road as an approach: its frame is turned around, so offsets and directions flip."""
    flipped = tuple(LaneSpec(-s.offset_m, not s.forward, s.width_m) for s in lanes)
    return Approach(np.asarray(entry_xy, np.float64), float(geometry.wrap_angle(entry_yaw + np.pi)), flipped)


def layout_junction(entry_xy: np.ndarray, entry_yaw: float, incoming: tuple[LaneSpec, ...],
                    arms: tuple[ArmSpec, ...], corner_m: float) -> JunctionLayout | None:
    """Place a junction whose box starts at the incoming road's end pose (entry_xy (2,), entry_yaw).

    The box extends along the incoming axis by the side arms' half width plus ``corner_m`` on each side of
    the centre, and across it by the main road's half width plus ``corner_m``. Returns None when some lane
    could get no connector (e.g. every arm one-way in the wrong direction).
    """
    side = [a for a in arms if abs(a.angle_rad) > STRAIGHT_MAX_RAD]
    main = [a for a in arms if abs(a.angle_rad) <= STRAIGHT_MAX_RAD]
    w_side = max((half_width(a.lanes) for a in side), default=0.0)
    w_main = max([half_width(incoming)] + [half_width(a.lanes) for a in main])
    skew = max((abs(abs(a.angle_rad) - np.pi / 2.0) for a in side), default=0.0)
    d_side = (w_main + corner_m) / np.cos(skew) + w_side * np.tan(skew)
    d_main = w_side / np.cos(skew) + corner_m + d_side * np.sin(skew)
    u = direction(entry_yaw)
    center = np.asarray(entry_xy, np.float64) + d_main * u
    approaches = [incoming_approach(entry_xy, entry_yaw, incoming)]
    for arm in arms:
        yaw = float(geometry.wrap_angle(entry_yaw + arm.angle_rad))
        dist = d_main if abs(arm.angle_rad) <= STRAIGHT_MAX_RAD else d_side
        approaches.append(Approach(center + dist * direction(yaw), yaw, arm.lanes))
    pairs = plan_connections(approaches)
    if pairs is None:
        return None
    return JunctionLayout(center, tuple(approaches), tuple(pairs))


def turn_angle(src: Approach, dst: Approach) -> float:
    """Heading change (rad, + left) from entering at ``src`` to leaving at ``dst``."""
    return float(geometry.wrap_angle(dst.yaw - (src.yaw + np.pi)))


def plan_connections(approaches: list[Approach]) -> list[tuple[int, int, int, int]] | None:
    """Connector pairs (from approach, from lane, to approach, to lane), or None if some entering lane
    has no exit or some exiting lane no feeder."""
    pairs: list[tuple[int, int, int, int]] = []
    for a, src in enumerate(approaches):
        ins = src.entering()
        if not ins:
            continue
        dests = [(b, turn_angle(src, dst)) for b, dst in enumerate(approaches)
                 if b != a and approaches[b].exiting() and abs(turn_angle(src, dst)) < U_TURN_MIN_RAD]
        straight = [b for b, t in dests if abs(t) < STRAIGHT_MAX_RAD]
        rights = [b for b, t in dests if t <= -STRAIGHT_MAX_RAD]
        lefts = [b for b, t in dests if t >= STRAIGHT_MAX_RAD]
        for b in straight:
            outs = approaches[b].exiting()
            for k in range(max(len(ins), len(outs))):
                pairs.append((a, ins[min(k, len(ins) - 1)], b, outs[min(k, len(outs) - 1)]))
        if straight or not (rights and lefts):
            right_set, left_set = ins[:1], ins[-1:]
        else:
            split = max(1, len(ins) // 2)
            right_set, left_set = ins[:split], ins[min(split, len(ins) - 1):]
        if not straight and not lefts:
            right_set = ins
        if not straight and not rights:
            left_set = ins
        for b in rights:
            outs = approaches[b].exiting()
            pairs.extend((a, i, b, outs[min(k, len(outs) - 1)]) for k, i in enumerate(right_set))
        for b in lefts:
            outs = approaches[b].exiting()
            pairs.extend((a, i, b, outs[max(len(outs) - 1 - k, 0)]) for k, i in enumerate(reversed(left_set)))
    return _cover(approaches, list(dict.fromkeys(pairs)))


def _scaled(index: int, count_from: int, count_to: int) -> int:
    return 0 if count_from <= 1 else int(round(index * (count_to - 1) / (count_from - 1)))


def _cover(approaches: list[Approach], pairs: list[tuple[int, int, int, int]]
           ) -> list[tuple[int, int, int, int]] | None:
    """Add connectors so that every entering lane has an exit and every exiting lane a feeder."""
    has_exit = {(a, i) for a, i, _, _ in pairs}
    has_feed = {(b, j) for _, _, b, j in pairs}
    for a, src in enumerate(approaches):
        ins = src.entering()
        for k, i in enumerate(ins):
            if (a, i) in has_exit:
                continue
            options = sorted((abs(turn_angle(src, dst)), b) for b, dst in enumerate(approaches)
                             if b != a and dst.exiting() and abs(turn_angle(src, dst)) < U_TURN_MIN_RAD)
            if not options:
                return None
            b = options[0][1]
            outs = approaches[b].exiting()
            pairs.append((a, i, b, outs[_scaled(k, len(ins), len(outs))]))
            has_exit.add((a, i))
    for b, dst in enumerate(approaches):
        outs = dst.exiting()
        for k, j in enumerate(outs):
            if (b, j) in has_feed:
                continue
            options = sorted((abs(turn_angle(src, dst)), a) for a, src in enumerate(approaches)
                             if a != b and src.entering() and abs(turn_angle(src, dst)) < U_TURN_MIN_RAD)
            if not options:
                return None
            a = options[0][1]
            ins = approaches[a].entering()
            pairs.append((a, ins[_scaled(k, len(outs), len(ins))], b, j))
            has_feed.add((b, j))
    return pairs
