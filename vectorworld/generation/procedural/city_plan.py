"""A seeded, unbounded city plan: a grid of blocks whose every lane can be computed from the seed alone.

The plan lives in its own frame (u along the first road, v to its left), anchored at the first tile. Road
lines run along u (index j, at v = V_j) and along v (index i, at u = U_i); consecutive lines are
``spacing_m`` apart plus a per-line jitter (blocks of ~85-245 m). Each line is an arterial (2-3 lanes per
direction around a one-lane median, faster) or a residential street (one lane each way). Lines along u
are continuous; a residential line along v may miss a block (a T-junction on both ends). Where a line
along v meets a line along u there is a right-angle junction: straight connectors lane to lane, a right
turn from the curb lane, a left turn from the inner lane or, on arterials, from a left-turn pocket that
opens into the median 45 m before the junction. Connectors exist only inside junctions. Every arm of a
junction has a crosswalk between its stop line and the junction box, kerb to kerb.

Everything is a pure function of (seed, indices), drawn from per-key generators, so any two tiles agree on
every lane they share, whatever order they are generated in. Lanes are cut into pieces at per-segment
cut points (15-55 m apart), the same for every lane of a segment, so side-by-side pieces are neighbours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from vectorworld import geometry
from vectorworld.scene import LaneType

Key = tuple
ARMS = ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0))
CROSSWALK_KERB_M = 1.5
"""A crosswalk's walk starts and ends this far (m) beyond the outer lane edges of the road it crosses."""
"""Arm directions E, N, W, S (plan frame); arm a's left is (a + 1) % 4."""


@dataclass(frozen=True)
class CityConfig:
    """Block sizes (m), road classes and junction geometry."""

    spacing_m: float = 165.0
    jitter_m: float = 40.0
    arterial_prob: float = 0.45
    arterial_lanes: tuple[float, float, float] = (0.35, 0.45, 0.2)
    """Chances of 2, 3 and 4 lanes per direction on an arterial."""
    missing_block_prob: float = 0.3
    arterial_width_m: tuple[float, float] = (3.1, 3.55)
    residential_width_m: tuple[float, float] = (3.2, 3.7)
    arterial_speed_mps: tuple[float, float, float] = (15.6, 17.9, 17.9)
    """35, 40, 40 mph for 2, 3, 4 lanes per direction (ΔSim, trained on the organic world, overshoots turns
    from 45 mph)."""
    residential_speed_mps: tuple[float, ...] = (11.2, 13.4)
    turn_speed_mps: float = 6.7
    """Speed limit of turning connectors (15 mph)."""
    setback_m: float = 3.0
    stop_back_m: float = 4.0
    """Arriving lanes end this far (m) before the junction box (the stop line): a car waiting there keeps
    clear of the lanes leaving the junction beside it."""
    pocket_m: float = 30.0
    pocket_taper_m: float = 25.0
    piece_m: tuple[float, float] = (15.0, 55.0)
    min_piece_m: float = 8.0
    curve_prob: float = 0.3
    bend_m: tuple[float, float] = (6.0, 14.0)


@dataclass(frozen=True)
class RoadClass:
    lanes: int
    width_m: float
    median_m: float
    speed_mps: float


@dataclass(frozen=True)
class PlanCrosswalk:
    """A crosswalk over one arm: walk (2, 2) m plan frame kerb to kerb, half its width (m) along the road, the
    connectors crossing it (entering from this arm or leaving into it) and the straight connectors along the
    crossed road, or at the stem of a T the connectors entering from it (their lights, if any, tell
    pedestrians when to walk)."""

    walk: np.ndarray
    half_width_m: float
    conflicts: tuple[Key, ...]
    through: tuple[Key, ...]


@dataclass
class PlanLane:
    """One lane piece of the plan: points (N, 2) m in the plan frame, edges as keys of other pieces."""

    key: Key
    points: np.ndarray
    width_m: float
    speed_limit_mps: float
    lane_type: LaneType
    successors: list[Key] = field(default_factory=list)
    left: Key | None = None


def _zz(i: int) -> int:
    return 2 * i if i >= 0 else -2 * i - 1


class CityPlan:
    """The plan of one world (see module docstring). Methods are cached: the plan never changes."""

    def __init__(self, seed: int, config: CityConfig = CityConfig()) -> None:
        self.seed = int(seed)
        self.config = config
        self.line = lru_cache(maxsize=4096)(self._line)
        self.has_block = lru_cache(maxsize=16384)(self._has_block)
        self.junction = lru_cache(maxsize=16384)(self._junction)
        self.cuts = lru_cache(maxsize=16384)(self._cuts)
        self.segment = lru_cache(maxsize=4096)(self._segment)

    def rng(self, *key: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, *(_zz(int(k)) for k in key)])

    # ----------------------------------------------------------------- lines and blocks
    def _line(self, axis: int, i: int) -> tuple[float, RoadClass]:
        """Position (v for axis 0 = along u, u for axis 1) and class of line i."""
        cfg = self.config
        r = self.rng(1, axis, i)
        jitter, arterial, draw = r.uniform(-cfg.jitter_m, cfg.jitter_m), r.random() < cfg.arterial_prob, r.random()
        if arterial:
            n = 2 + int(np.searchsorted(np.cumsum(cfg.arterial_lanes), draw, side="right"))
            n = min(n, 4)
            width = round(float(r.uniform(*cfg.arterial_width_m)), 2)
            road = RoadClass(n, width, width, cfg.arterial_speed_mps[n - 2])
        else:
            width = round(float(r.uniform(*cfg.residential_width_m)), 2)
            road = RoadClass(1, width, 0.0, cfg.residential_speed_mps[int(draw * len(cfg.residential_speed_mps))])
        if axis == 0:
            # line 0 carries the first road: its inner +u lane runs through the plan origin
            pos = 0.0 if i == 0 else i * cfg.spacing_m + jitter
            if i == 0:
                pos = road.median_m / 2.0 + road.width_m / 2.0
        else:
            pos = (i + 0.5) * cfg.spacing_m + jitter
        return float(pos), road

    def _has_block(self, i: int, j: int) -> bool:
        """Whether line i along v runs from line j to line j + 1 along u."""
        if self.line(1, i)[1].median_m > 0:
            return True
        return bool(self.rng(2, i, j).random() >= self.config.missing_block_prob)

    def arms(self, i: int, j: int) -> tuple[bool, bool, bool, bool]:
        """Which arms (E, N, W, S) node (i, j) has; a node with no N and no S arm is no junction."""
        return True, self.has_block(i, j), True, self.has_block(i, j - 1)

    def is_junction(self, i: int, j: int) -> bool:
        arms = self.arms(i, j)
        return arms[1] or arms[3]

    def next_junction(self, i: int, j: int, step: int) -> int:
        """The index of the next junction along line j (along u) from node i in direction ``step`` (+-1)."""
        k = i + step
        while not self.is_junction(k, j):
            k += step
        return k

    # ----------------------------------------------------------------- geometry helpers
    def node_xy(self, i: int, j: int) -> np.ndarray:
        return np.array([self.line(1, i)[0], self.line(0, j)[0]])

    def arm_road(self, i: int, j: int, arm: int) -> RoadClass:
        return self.line(0, j)[1] if arm in (0, 2) else self.line(1, i)[1]

    def box_half(self, i: int, j: int) -> tuple[float, float]:
        """Half extents (along u, along v) of junction (i, j)'s box."""
        h, v = self.line(0, j)[1], self.line(1, i)[1]
        s = self.config.setback_m
        return v.lanes * v.width_m + v.median_m / 2.0 + s, h.lanes * h.width_m + h.median_m / 2.0 + s

    def arm_edge(self, i: int, j: int, arm: int) -> float:
        hu, hv = self.box_half(i, j)
        return hu if arm in (0, 2) else hv

    @staticmethod
    def lane_offset(road: RoadClass, k: int) -> float:
        """Lateral offset (m, negative = right of the travel direction) of lane k (0 inner) from the line."""
        return -(road.median_m / 2.0 + (k + 0.5) * road.width_m)

    def neighbour_node(self, i: int, j: int, arm: int) -> tuple[int, int]:
        """The junction at the far end of arm ``arm`` of junction (i, j)."""
        if arm == 0:
            return self.next_junction(i, j, 1), j
        if arm == 2:
            return self.next_junction(i, j, -1), j
        return (i, j + 1) if arm == 1 else (i, j - 1)

    def segment_length(self, i: int, j: int, arm: int) -> float:
        """Length (m) of the road between the boxes of junction (i, j) and its neighbour along ``arm``."""
        ni, nj = self.neighbour_node(i, j, arm)
        d = float(np.abs(self.node_xy(ni, nj) - self.node_xy(i, j)).sum())
        return d - self.arm_edge(i, j, arm) - self.arm_edge(ni, nj, (arm + 2) % 4)

    def has_pocket(self, i: int, j: int, arm: int) -> bool:
        """Whether traffic arriving at junction (i, j) along ``arm`` has a left-turn pocket."""
        cfg = self.config
        road = self.arm_road(i, j, arm)
        left_out = (arm + 3) % 4  # arriving along arm a (heading -a), the left turn leaves along arm a - 1
        return (road.median_m > 0 and self.arms(i, j)[left_out]
                and self.segment_length(i, j, arm) >= 2 * (cfg.pocket_m + cfg.pocket_taper_m) + 10.0)

    # ----------------------------------------------------------------- plan pieces
    def _junction(self, i: int, j: int) -> tuple[PlanLane, ...]:
        """The connectors of junction (i, j)."""
        c = self.node_xy(i, j)
        arms = self.arms(i, j)
        out: list[PlanLane] = []
        for a in range(4):
            if not arms[a]:
                continue
            road_in = self.arm_road(i, j, a)
            heading_in = -np.array(ARMS[a])
            left_in = np.array([-heading_in[1], heading_in[0]])
            pocket = self.has_pocket(i, j, a)
            for b, kind in (((a + 2) % 4, "straight"), ((a + 1) % 4, "right"), ((a + 3) % 4, "left")):
                if not arms[b]:
                    continue
                road_out = self.arm_road(i, j, b)
                heading_out = np.array(ARMS[b])
                left_out = np.array([-heading_out[1], heading_out[0]])
                if kind == "straight":
                    pairs = [(k, k) for k in range(road_in.lanes)]
                elif kind == "right":
                    pairs = [(road_in.lanes - 1, road_out.lanes - 1)]
                else:
                    pairs = [(-1 if pocket else 0, 0)]
                for k_in, k_out in pairs:
                    off_in = 0.0 if k_in < 0 else self.lane_offset(road_in, k_in)
                    back = self.config.stop_back_m
                    p0 = c + np.array(ARMS[a]) * (self.arm_edge(i, j, a) + back) + off_in * left_in
                    edge0 = p0 + heading_in * back  # the stop line lies a little before the box
                    p1 = c + heading_out * self.arm_edge(i, j, b) + self.lane_offset(road_out, k_out) * left_out
                    yaw0 = math.atan2(heading_in[1], heading_in[0])
                    yaw1 = math.atan2(heading_out[1], heading_out[0])
                    if kind == "straight":
                        pts = np.stack([p0, p1])
                    else:
                        n = max(60, int(np.linalg.norm(p1 - p0) * 4.0))
                        n = max(60, int(np.linalg.norm(p1 - edge0) * 4.0))
                        pts = np.concatenate([p0[None], geometry.hermite_curve(edge0, yaw0, p1, yaw1, n)])
                    speed = min(road_in.speed_mps, road_out.speed_mps)
                    lane = PlanLane(("conn", i, j, a, k_in, b, k_out), pts, road_in.width_m,
                                    speed if kind == "straight" else min(speed, self.config.turn_speed_mps),
                                    LaneType.CONNECTOR)
                    lane.successors.append(self.first_piece_key(i, j, b, k_out))
                    out.append(lane)
        return tuple(out)

    def crosswalks(self, i: int, j: int) -> tuple[PlanCrosswalk, ...]:
        """The crosswalks of junction (i, j), one per arm, in the strip between its stop line and its box."""
        c, arms, connectors = self.node_xy(i, j), self.arms(i, j), self.junction(i, j)
        out = []
        for a in range(4):
            if not arms[a]:
                continue
            road = self.arm_road(i, j, a)
            out_dir = np.array(ARMS[a])
            left = np.array([-out_dir[1], out_dir[0]])
            half = road.lanes * road.width_m + road.median_m / 2.0 + CROSSWALK_KERB_M
            mid = c + out_dir * (self.arm_edge(i, j, a) + self.config.stop_back_m / 2.0)
            conflicts = tuple(lane.key for lane in connectors if a in (lane.key[3], lane.key[5]))
            through = tuple(lane.key for lane in connectors
                            if lane.key[3] in (a, (a + 2) % 4) and lane.key[5] == (lane.key[3] + 2) % 4)
            if not through:  # the stem of a T: its own entries are the movements along the crossed road
                through = tuple(lane.key for lane in connectors if lane.key[3] == a)
            out.append(PlanCrosswalk(np.stack([mid - half * left, mid + half * left]),
                                     self.config.stop_back_m / 2.0 - 0.5, conflicts, through))
        return tuple(out)

    def _cuts(self, i: int, j: int, arm: int) -> np.ndarray:
        """Cut points (m along the segment from junction (i, j)'s box, arm 0 or 1), ends included."""
        cfg = self.config
        length = self.segment_length(i, j, arm)
        r = self.rng(3, i, j, arm)
        cuts = [0.0]
        while cuts[-1] < length:
            cuts.append(cuts[-1] + r.uniform(*cfg.piece_m))
        split = cfg.pocket_m + cfg.pocket_taper_m
        cuts = [c for c in cuts if c < length - cfg.min_piece_m]
        taper = cfg.pocket_taper_m + 2.0  # the lane beside a pocket's taper is one piece: they stay related
        for s, lo, hi in ((split, split - taper, split), (length - split, length - split, length - split + taper)):
            if cfg.min_piece_m < s < length - cfg.min_piece_m:  # pocket split points of both directions
                cuts = [c for c in cuts if abs(c - s) >= cfg.min_piece_m and not lo < c < hi] + [s]
        return np.array(sorted(set(cuts)) + [length])

    def segment_origin(self, i: int, j: int, arm: int) -> tuple[int, int, int]:
        """The canonical (node i, node j, arm 0 or 1) of the segment leaving junction (i, j) along ``arm``."""
        if arm in (0, 1):
            return i, j, arm
        ni, nj = self.neighbour_node(i, j, arm)
        return ni, nj, arm - 2

    def first_piece_key(self, i: int, j: int, arm: int, k: int) -> Key:
        """Key of the first piece of lane k leaving junction (i, j) along ``arm``."""
        si, sj, sa = self.segment_origin(i, j, arm)
        forward = (si, sj) == (i, j)
        count = len(self.cuts(si, sj, sa)) - 1
        return ("seg", si, sj, sa, forward, k, 0 if forward else count - 1)

    def _segment(self, i: int, j: int, arm: int) -> tuple[PlanLane, ...]:
        """Every lane piece (and pocket) of the segment leaving junction (i, j) along arm 0 (E) or 1 (N)."""
        cfg = self.config
        road = self.arm_road(i, j, arm)
        ni, nj = self.neighbour_node(i, j, arm)
        direction = np.array(ARMS[arm])
        start = self.node_xy(i, j) + direction * self.arm_edge(i, j, arm)
        cuts = self.cuts(i, j, arm)
        count = len(cuts) - 1
        bend = self.bend(i, j, arm)
        out: list[PlanLane] = []
        for forward in (True, False):
            heading = direction if forward else -direction
            left = np.array([-heading[1], heading[0]])
            end_node, end_arm = ((ni, nj), (arm + 2) % 4) if forward else ((i, j), arm)
            pocket = self.has_pocket(*end_node, end_arm)
            length = cuts[-1]
            split = length - (cfg.pocket_m + cfg.pocket_taper_m)
            for k in range(road.lanes):
                off = self.lane_offset(road, k)
                for p in range(count):
                    s0, s1 = (cuts[p], cuts[p + 1]) if forward else (cuts[count - p], cuts[count - p - 1])
                    if p == count - 1:  # arriving lanes stop short of the box, at the stop line
                        s1 = s1 - cfg.stop_back_m if forward else s1 + cfg.stop_back_m
                    piece = p if forward else count - 1 - p  # index along the segment's own direction
                    key = ("seg", i, j, arm, forward, k, piece)
                    pts = self._lane_line(start, direction, length, bend, s0, s1, off, cfg.stop_back_m)
                    lane = PlanLane(key, pts, road.width_m, road.speed_mps, LaneType.SURFACE_STREET)
                    if k > 0:
                        lane.left = ("seg", i, j, arm, forward, k - 1, piece)
                    last = p == count - 1
                    if not last:
                        lane.successors.append(("seg", i, j, arm, forward, k, piece + (1 if forward else -1)))
                    else:
                        lane.successors.extend(self._entry_keys(*end_node, end_arm, k, pocket))
                    travelled = s1 if forward else length - s1
                    if pocket and k == 0 and abs(travelled - split) < 1e-6:
                        lane.successors.append(("pocket", *end_node, end_arm))
                    out.append(lane)
            if pocket:
                a = start + direction * (split if forward else length - split) + self.lane_offset(road, 0) * left
                mid = a + heading * cfg.pocket_taper_m - self.lane_offset(road, 0) * left
                yaw = math.atan2(heading[1], heading[0])
                taper = geometry.hermite_curve(a, yaw, mid, yaw, 26)
                end = mid + heading * (cfg.pocket_m - cfg.stop_back_m)
                lane = PlanLane(("pocket", *end_node, end_arm), np.concatenate([taper, end[None]]), road.width_m,
                                road.speed_mps, LaneType.SURFACE_STREET)
                lane.successors.extend(self._entry_keys(*end_node, end_arm, -1, True))
                out.append(lane)
        return tuple(out)

    def bend(self, i: int, j: int, arm: int) -> float:
        """Sideways bulge (m, + left of the segment direction) of a residential block along v (0: straight)."""
        cfg = self.config
        if arm != 1 or self.arm_road(i, j, arm).median_m > 0:
            return 0.0
        r = self.rng(4, i, j)
        if r.random() >= cfg.curve_prob:
            return 0.0
        return float(r.uniform(*cfg.bend_m) * (1 if r.random() < 0.5 else -1))

    @staticmethod
    def _lane_line(start: np.ndarray, direction: np.ndarray, length: float, bend: float, s0: float, s1: float,
                   offset: float, margin: float) -> np.ndarray:
        """Points from s0 to s1 (m along the segment) of the lane ``offset`` m left of a centreline that
        bulges by ``bend`` m: c(s) = start + s d + bend (1 - cos(2 pi (s - m) / (L - 2 m))) / 2 n (n the left
        normal, m the stop-line margin; straight within m of either end)."""
        normal = np.array([-direction[1], direction[0]])
        if bend == 0.0:
            s = np.array([s0, s1])
        else:
            s = np.linspace(s0, s1, max(2, int(abs(s1 - s0)) + 1))
        # the bulge spans [margin, length - margin]: straight at both stop lines
        w = 2.0 * np.pi / (length - 2.0 * margin)
        inside = (s > margin) & (s < length - margin)
        f = np.where(inside, bend * (1.0 - np.cos(w * (s - margin))) / 2.0, 0.0)
        df = np.where(inside, bend * w * np.sin(w * (s - margin)) / 2.0, 0.0)
        tangent = direction[None] + df[:, None] * normal[None]
        tangent /= np.linalg.norm(tangent, axis=-1, keepdims=True)
        left = np.stack([-tangent[:, 1], tangent[:, 0]], -1)
        sign = 1.0 if s1 >= s0 else -1.0  # travelling backwards: offsets are to the left of -d
        return start[None] + s[:, None] * direction[None] + f[:, None] * normal[None] + sign * offset * left

    def _entry_keys(self, i: int, j: int, arm: int, k: int, pocket: bool) -> list[Key]:
        """Keys of the connectors that lane k (-1: the pocket) arriving along ``arm`` at (i, j) leads into."""
        return [lane.key for lane in self.junction(i, j) if lane.key[3] == arm and lane.key[4] == k]
