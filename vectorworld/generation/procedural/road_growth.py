"""Growing roads piece by piece until they leave the tile, without overlapping anything already there.

Each road is grown in a transaction by a bounded depth-first search: at every step a random primary piece
(junction, lane-count taper, arc, straight) is tried, then fallbacks (straight to the border, crossing or
joining a road in the way, short straight, arcs either way; a bridge first when another port road of the
tile faces this one); when nothing fits, the previous piece is undone and its next alternative tried. The
ground just in front of ports still waiting is kept free on a first pass. A two-way road that cannot reach
the tile border ends in a turnaround loop (:mod:`turnarounds`) if one fits; otherwise it is dropped
(counted in the report) and its ports stay open -- no lane of this tile then ends inside it. Junction arms
are grown right after their parent; their straight corridor to the border was reserved when the junction
was accepted, so an arm can always fall back to it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from vectorworld.generation.base import TileFrame
from vectorworld.generation.procedural import road_meetings
from vectorworld.generation.procedural.junction_placement import JunctionPlan, place_junction, sample_junction
from vectorworld.generation.procedural.occupancy import Occupancy
from vectorworld.generation.procedural.road_state import GrowthConfig, GrowthReport, Road, Slot, flush
from vectorworld.generation.procedural.roads import (
    LaneSpec,
    direction,
    exit_distance,
    hermite_path,
    lane_points_at,
    normal,
    reference_path,
    sweep,
)
from vectorworld.generation.procedural.tile_draft import TileDraft
from vectorworld.generation.procedural.turnarounds import place_turnaround
from vectorworld.scene import LaneGraph, LaneType


@dataclass(frozen=True)
class _Snapshot:
    """Everything needed to undo the pieces placed after it (list lengths and the road as it was)."""

    road: Road
    lanes: int
    edges: int
    neighbours: int
    occupancy: int
    arms: int
    reserved: int
    report: GrowthReport


@dataclass(frozen=True)
class PieceSpec:
    """A candidate piece: kind "straight" / "arc" (length m, curvature 1/m), "taper" (length, change +1
    adds / -1 removes the outermost lane of direction ``forward``) or "junction" (``plan``)."""

    kind: str
    length_m: float = 0.0
    curvature: float = 0.0
    change: int = 0
    forward: bool = True
    plan: JunctionPlan | None = None


class RoadGrower:
    """Grows roads for one tile into a :class:`TileDraft`, keeping the occupancy up to date."""

    def __init__(self, config: GrowthConfig, frame: TileFrame, occupancy: Occupancy, rng: np.random.Generator,
                 draft: TileDraft, report: GrowthReport, graph: LaneGraph) -> None:
        self.config = config
        self.graph = graph
        self.frame = frame
        self.occ = occupancy
        self.rng = rng
        self.draft = draft
        self.report = report
        self.half_m = frame.size_m / 2.0
        self._keys = itertools.count(-(1 << 40), -1)
        self.blocker_memo: tuple[tuple[int, float, float, float], road_meetings.Blocker | None] | None = None
        self.pending: dict[int, Road] = {}
        self.consumed: set[int] = set()
        self.ignore_keys: tuple[int, ...] = ()
        self.tries_left = config.tile_max_tries

    def new_key(self) -> int:
        """A fresh occupancy owner key for a new road."""
        return next(self._keys)

    # ----------------------------------------------------------------- transactions
    def grow_all(self, roads: list[Road]) -> None:
        """Grow roads in order; the arms of a junction are grown right after the road that made it."""
        self.pending = {r.key: r for r in roads if r.kind == "port"}
        for road in self.pending.values():
            if not self.exited(road):  # keep the first metres in front of waiting ports free, if possible
                stub = sweep(road.xy, road.yaw, min(self.exit_distance(road), self.config.port_stub_m) + 0.5, 0.0,
                             road.offsets)
                for lane_pts, slot in zip(stub.lanes, road.slots, strict=True):
                    self.occ.add(lane_pts, slot.spec.width_m / 2.0, road.key)
        queue = deque(roads)
        while queue:
            queue.extendleft(reversed(self._grow(queue.popleft())))

    def _grow(self, road: Road) -> list[Road]:
        self.pending.pop(road.key, None)
        if road.key in self.consumed:
            return []
        if self.exited(road):
            self.report.skipped_groups += 1
            return []
        self.report.roads += 1
        self.occ.remove_owner(road.key)  # its reserved ground: from now on it is the road's own
        # First respect the ground reserved in front of ports still waiting; then, if that fails, not.
        for respect in (True, False) if self.pending else (True,):
            self.ignore_keys = () if respect else tuple(self.pending)
            trial, child, arms, reserved = road.copy(), self.draft.child(), [], []
            saved = dataclasses.replace(self.report)
            budget = self.config.max_tries if respect else self.config.retry_tries
            ok = self._grow_once(trial, child, arms, reserved,
                                 budget=max(min(budget, self.tries_left), self.config.min_tries))
            self.ignore_keys = ()
            if ok:
                self.draft.commit(child)
                return arms
            self._set_report(saved)
            self.occ.remove_owner(road.key)
            for key in reserved:
                self.occ.remove_owner(key)
        if road.kind == "arm":
            trial, child = road.copy(), self.draft.child()
            self._place_sweep(trial, child, trial.stub_m, 0.0, check=False)
            self.flush(trial, child)
            self.draft.commit(child)
            self.report.forced_arms += 1
            return []
        if self._turn_back(road):
            return []
        self.report.stopped += 1
        return []

    def _turn_back(self, road: Road) -> bool:
        """Last resort: a turnaround loop right at the road's start, or a little further on."""
        for ahead in (0.0, 6.0, 12.0):
            trial, child = road.copy(), self.draft.child()
            if road.adapter and not self._place_adapter(trial):
                return False
            if ahead > 0.0 and not self._place_sweep(trial, child, ahead, 0.0):
                return False
            if self.exited(trial):
                return False
            if place_turnaround(self, trial, child):
                self.draft.commit(child)
                return True
            self.occ.remove_owner(road.key)
        return False

    def _grow_once(self, road: Road, draft: TileDraft, arms: list[Road], reserved: list[int], budget: int) -> bool:
        """Depth-first search over piece candidates: when no candidate fits, the previous piece is undone
        and its next candidate tried, within a budget of ``budget`` placement attempts (which also count
        against the tile's ``tile_max_tries``)."""
        if road.adapter and not self._place_adapter(road):
            return False
        frames: list[tuple[_Snapshot, Iterator[PieceSpec]]] = []
        while not (road.ended or self.exited(road)):
            if road.pieces < self.config.max_pieces and road.length_m < self.config.max_road_length_m:
                frames.append((self._snapshot(road, draft, arms, reserved), iter(self._candidates(road))))
            elif frames:  # too long: undo the last piece and try its alternatives
                road = self._restore(frames[-1][0], draft, arms, reserved)
            while True:
                if not frames:
                    return False
                placed = False
                for spec in frames[-1][1]:
                    budget -= 1
                    self.tries_left -= 1
                    if budget < 0:
                        return False
                    if self._place(spec, road, draft, arms, reserved):
                        placed = True
                        break
                if placed:
                    break
                frames.pop()
                if not frames:
                    return False
                road = self._restore(frames[-1][0], draft, arms, reserved)
        if not road.ended:
            self.flush(road, draft)
        return True

    def _snapshot(self, road: Road, draft: TileDraft, arms: list[Road], reserved: list[int]) -> _Snapshot:
        return _Snapshot(road.copy(), len(draft.lanes), len(draft.edges), len(draft.neighbours), self.occ.mark(),
                         len(arms), len(reserved), dataclasses.replace(self.report))

    def _restore(self, snap: _Snapshot, draft: TileDraft, arms: list[Road], reserved: list[int]) -> Road:
        """Undo everything placed since ``snap``; returns the road as it was then (a fresh copy)."""
        del draft.lanes[snap.lanes:], draft.edges[snap.edges:], draft.neighbours[snap.neighbours:]
        self.occ.rollback(snap.occupancy)
        del arms[snap.arms:], reserved[snap.reserved:]
        self._set_report(snap.report)
        return snap.road.copy()

    def _set_report(self, saved: GrowthReport) -> None:
        for f in dataclasses.fields(GrowthReport):
            setattr(self.report, f.name, getattr(saved, f.name))

    def flush(self, road: Road, draft: TileDraft, lane_type: LaneType = LaneType.SURFACE_STREET
              ) -> list[int | None]:
        """Flush the road's slots into lanes (see :func:`road_state.flush`) and occupy their ground."""
        ids = flush(road, draft, lane_type)
        for pid in ids:
            if pid is not None:
                lane = next(x for x in reversed(draft.lanes) if x.pid == pid)
                self.occ.add(lane.points, lane.width_m / 2.0, road.key)
        return ids

    # ----------------------------------------------------------------- queries
    def local_pose(self, xy: np.ndarray, yaw: float) -> tuple[np.ndarray, float]:
        return self.frame.to_local(xy), float(yaw - self.frame.yaw)

    def exit_distance(self, road: Road) -> float:
        local, yaw = self.local_pose(road.xy, road.yaw)
        return exit_distance(local, yaw, self.half_m)

    def exited(self, road: Road) -> bool:
        """All lane ends at (or within the tolerance of) the tile border or beyond. A road that has not
        grown yet and starts on the border heading into the tile (first tile, a port on the border facing
        inwards) has not exited."""
        if road.ended or not road.slots:
            return True
        local = self.frame.to_local(road.end_points())
        if not np.all(np.abs(local).max(-1) >= self.half_m - self.config.exit_tolerance_m):
            return False
        if road.pieces > 0:
            return True
        ref, yaw = self.local_pose(road.xy, road.yaw)
        if np.abs(ref).max() > self.half_m + 0.01:
            return True
        side = int(np.argmax(np.abs(ref)))
        return bool(direction(yaw)[side] * np.sign(ref[side]) > 0.0)

    def blocked(self, road: Road, points: np.ndarray, also_ignore: tuple[int, ...] = ()) -> bool:
        """Whether ``points`` (M, 2) of ``road``'s new lanes would overlap occupied ground (the road's own
        lanes and ``also_ignore`` owners excepted)."""
        half = max(s.spec.width_m for s in road.slots) / 2.0 if road.slots else road.width_m / 2.0
        return self.occ.blocked(points, half, self.config.clearance_gap_m,
                                ignore=(road.key,) + self.ignore_keys + also_ignore, home=road.home)

    # ----------------------------------------------------------------- candidates
    def _candidates(self, road: Road) -> list[PieceSpec]:
        """The next piece to try: a random primary (junction, taper, arc or straight), preceded by a bridge
        when a port road of this tile faces this one, followed by fallbacks from the cheapest on."""
        cfg, rng = self.config, self.rng
        if road.kind == "first" and road.pieces == 0:
            return [PieceSpec("straight", self.half_m + float(rng.uniform(0.0, 8.0)))]
        d_exit = self.exit_distance(road)
        r_lo = self._min_radius(road)
        bridge = [PieceSpec("bridge")] if road_meetings.facing_road(self, road) is not None else []
        can_junction = (road.kind != "arm" and road.junctions_left > 0
                        and road.since_junction_m >= cfg.min_junction_gap_m)
        p_junction = cfg.junction_prob if can_junction else 0.0
        p_taper = cfg.taper_prob if road.tapers_left > 0 else 0.0
        r = rng.random()
        primary: PieceSpec | None = None
        if r < p_junction:
            plan = sample_junction(road, rng, cfg)
            primary = PieceSpec("junction", plan=plan) if plan is not None else None
        elif r < p_junction + p_taper:
            primary = self._sample_taper(road)
        elif rng.random() < cfg.arc_prob:
            primary = self._sample_arc(r_lo)
        if primary is None:
            primary = PieceSpec("straight", float(rng.uniform(*cfg.straight_length_m)))
        gentle = max(r_lo, 80.0)
        return bridge + [primary,
                PieceSpec("straight", d_exit + 20.0),
                PieceSpec("cross"),
                PieceSpec("join"),
                PieceSpec("straight", 6.0),
                PieceSpec("arc", 15.0, 1.0 / gentle), PieceSpec("arc", 15.0, -1.0 / gentle),
                PieceSpec("arc", 12.0, 1.0 / r_lo), PieceSpec("arc", 12.0, -1.0 / r_lo),
                PieceSpec("arc", 0.8 * r_lo, 1.0 / r_lo), PieceSpec("arc", 0.8 * r_lo, -1.0 / r_lo)]

    def _min_radius(self, road: Road) -> float:
        """Smallest reference radius (m) that keeps every lane's radius >= ``min_radius_m`` either way."""
        reach = float(np.max(np.abs(road.offsets))) if road.slots else 0.0
        return self.config.min_radius_m + 1.0 + reach

    def _sample_arc(self, r_lo: float) -> PieceSpec:
        cfg, rng = self.config, self.rng
        radius = float(np.exp(rng.uniform(np.log(r_lo), np.log(max(cfg.max_radius_m, r_lo + 1.0)))))
        length = min(float(rng.uniform(*cfg.arc_length_m)), cfg.max_arc_angle_rad * radius)
        return PieceSpec("arc", length, (1.0 if rng.random() < 0.5 else -1.0) / radius)

    def _sample_taper(self, road: Road) -> PieceSpec | None:
        fwd, bwd = road.counts()
        options = [(+1, True)] * (fwd < 3) + [(-1, True)] * (fwd > 1)
        options += [(+1, False)] * (0 < bwd < 3) + [(-1, False)] * (bwd > 1)
        if not options:
            return None
        change, forward = options[int(self.rng.integers(len(options)))]
        return PieceSpec("taper", float(self.rng.uniform(*self.config.taper_length_m)), change=change,
                         forward=forward)

    # ----------------------------------------------------------------- placing pieces
    def _place(self, spec: PieceSpec, road: Road, draft: TileDraft, arms: list[Road], reserved: list[int]) -> bool:
        if spec.kind == "junction":
            assert spec.plan is not None
            ok = place_junction(self, road, draft, spec.plan, arms, reserved)
        elif spec.kind == "taper":
            ok = self._place_taper(road, draft, spec)
        elif spec.kind == "join":
            ok = road_meetings.place_join(self, road, draft)
        elif spec.kind == "cross":
            ok = road_meetings.place_cross(self, road, draft)
        elif spec.kind == "bridge":
            ok = road_meetings.place_bridge(self, road, draft)
        else:
            ok = self._place_sweep(road, draft, spec.length_m, spec.curvature)
        if ok:
            self.report.pieces += 1
        return ok

    def advance(self, road: Road, xy: np.ndarray, yaw: float, length_m: float) -> None:
        road.xy, road.yaw = xy, yaw
        road.length_m += length_m
        road.since_junction_m += length_m
        road.pieces += 1

    def _cut_length(self, road: Road, length_m: float, curvature: float) -> float:
        """The shortest length <= ``length_m`` at which every lane is past the border by the overshoot."""
        limit = self.half_m + self.config.exit_overshoot_m
        end_xy, _ = reference_path(road.xy, road.yaw, np.array([length_m]), curvature)
        end_yaw = road.yaw + curvature * length_m
        ends = lane_points_at(end_xy[0], end_yaw, road.offsets)
        if not np.all(np.abs(self.frame.to_local(ends)).max(-1) >= limit):
            return length_m
        s = np.append(np.arange(0.5, length_m, 0.5), length_m)
        ref, yaws = reference_path(road.xy, road.yaw, s, curvature)
        pts = ref[None] + road.offsets[:, None, None] * normal(yaws)[None]
        out = np.all(np.abs(self.frame.to_local(pts)).max(-1) >= limit, 0)
        return float(s[int(np.argmax(out))]) if out.any() else length_m

    def _place_sweep(self, road: Road, draft: TileDraft, length_m: float, curvature: float,
                     check: bool = True) -> bool:
        length_m = self._cut_length(road, length_m, curvature)
        geom = sweep(road.xy, road.yaw, length_m, curvature, road.offsets)
        if check and self.blocked(road, geom.lanes[:, 1:].reshape(-1, 2)):
            return False
        for k, slot in enumerate(road.slots):
            slot.append(geom.lanes[k])
        self.advance(road, geom.end_xy, geom.end_yaw, geom.length_m)
        return True

    def _place_adapter(self, road: Road) -> bool:
        """Hermite lanes from each (staggered / skewed) port to a regular cross-section ahead."""
        u = direction(road.yaw)
        behind = max(0.0, -min(float((xy - road.xy) @ u) for xy, _ in road.port_poses))
        length = self.config.adapter_length_m + behind
        end_xy = road.xy + length * u
        targets = lane_points_at(end_xy, road.yaw, road.offsets)
        paths = [hermite_path(xy, yaw, targets[k], road.yaw, 2.0) for k, (xy, yaw) in enumerate(road.port_poses)]
        if self.blocked(road, np.concatenate([p[1:] for p in paths])):
            return False
        for slot, path in zip(road.slots, paths, strict=True):
            slot.append(path)
        self.advance(road, end_xy, road.yaw, length)
        return True

    def _place_taper(self, road: Road, draft: TileDraft, spec: PieceSpec) -> bool:
        """Add or remove the outermost lane of one direction over a straight piece (a split / merge)."""
        if self.exit_distance(road) < self.config.taper_min_exit_m:
            return False
        specs = list(road.specs)
        offsets = [s.offset_m for s in specs]
        edge = 0 if spec.forward else len(specs) - 1
        inner = 1 if spec.forward else len(specs) - 2
        if specs[edge].forward != spec.forward:
            return False
        width = specs[edge].width_m
        sign = -1.0 if spec.forward else 1.0
        start, end = list(offsets), list(offsets)
        if spec.change > 0:
            new_spec = LaneSpec(offsets[edge] + sign * width, spec.forward, width)
            pos = 0 if spec.forward else len(specs)
            start.insert(pos, offsets[edge])
            end.insert(pos, new_spec.offset_m)
        else:
            if not 0 <= inner < len(specs) or specs[inner].forward != spec.forward:
                return False
            end[edge] = offsets[inner]
        geom = sweep(road.xy, road.yaw, spec.length_m, 0.0, np.array(start), np.array(end))
        if self.blocked(road, geom.lanes[:, 1:].reshape(-1, 2)):
            return False
        self.flush(road, draft)
        if spec.change > 0:
            source = road.slots[edge]
            road.slots.insert(pos, Slot(new_spec, source.speed_mps, source.links, snap_xy=source.snap_xy))
        for k, slot in enumerate(road.slots):
            slot.append(geom.lanes[k])
        self.advance(road, geom.end_xy, geom.end_yaw, geom.length_m)
        self.flush(road, draft)
        if spec.change < 0:
            merged = road.slots.pop(edge)
            target = road.slots[inner - 1 if spec.forward else inner]
            target.links = target.links + merged.links
        road.tapers_left -= 1
        self.report.tapers += 1
        return True
