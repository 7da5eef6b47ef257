"""Traffic signals of the procedural city: which junctions have lights, and their fixed-time phase plans.

A junction is signalised with a chance that grows with its roads' class (:class:`SignalConfig`: nearly every
arterial x arterial crossing, about a third of the arterial x residential ones, few residential ones); the
others stay unsignalised (the residential road yields to the arterial; between equal roads first come,
first served with anti-starvation, see :mod:`policies.junctions`). Everything is
drawn from the plan's per-junction generator, so the lights are a pure function of (seed, junction).

Movement groups of a junction: ``3 * arm + kind`` for the traffic arriving along ``arm`` (0-3, E N W S) going
straight (kind 0), right (1) or left (2). A plan serves the two axes in turn (arms 0 / 2, then 1 / 3). An
axis of four lanes per direction first gets a *protected* left phase (lefts ARROW_GO, then
ARROW_CAUTION, then a short all-red), then every movement of the axis gets GO -- the lefts *permissive*
(they yield to oncoming traffic) -- then CAUTION (yellow) and an all-red clearance, as long as clearing the
road crossed takes, before the other axis.

Arterials are *coordinated*, as real city arterials are: every light of a city runs one common cycle
(drawn per seed), an arterial axis gets the larger share of it, and the offsets along each arterial line
make a green wave in one direction (drawn per line) at the progression speed, so a car that drives the
arterial at about its speed limit meets green after green.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld.generation.procedural.city_plan import CityPlan, Key
from vectorworld.signals import LaneSignal, Phase, PhasePlan, SignalState

KINDS = 3
"""Movement kinds per arm: straight, right, left."""
GROUPS = 4 * KINDS


@dataclass(frozen=True)
class SignalConfig:
    """Signal chances per junction class and phase timings (s)."""

    chance_arterial_arterial: float = 0.95
    chance_arterial_residential: float = 0.3
    chance_residential: float = 0.1
    min_green_s: float = 10.0
    protected_left_s: tuple[float, float] = (6.0, 10.0)
    protected_left_lanes: int = 4
    """Oncoming lanes from which a left turn gets a protected phase."""
    yellow_s: float = 4.0
    """Yellow of a 40 mph approach (ITE: 1 s reaction + v / (2 x 3 m/s^2) ~ 4 s)."""
    arrow_yellow_s: float = 3.0
    all_red_s: float = 2.0
    """The shortest all-red clearance; a wide crossing gets longer (:meth:`CitySignals.clearance_s`)."""
    clearing_speed_mps: float = 8.0
    """Speed of the last car into the junction on yellow, for the all-red clearance (ITE: (W + L) / v)."""
    max_all_red_s: float = 5.0
    left_clear_s: float = 1.0
    cycle_s: tuple[float, float] = (56.0, 72.0)
    """The common cycle of a city's lights (drawn once per seed)."""
    arterial_weight: float = 2.5
    """Green time of an arterial axis against a residential one at the same junction."""
    progression: float = 0.85
    """Progression speed of a green wave, as a share of the arterial's speed limit."""
    band_lead_s: float = 4.0
    """The coordinated green opens this long before the wave passes, so cars a little faster than the
    progression speed meet green too."""


def movement_group(key: Key) -> int | None:
    """The movement group of a connector key ``("conn", i, j, arm_in, k_in, arm_out, k_out)``."""
    if key[0] != "conn":
        return None
    a, b = key[3], key[5]
    kind = {(a + 2) % 4: 0, (a + 1) % 4: 1, (a + 3) % 4: 2}[b]
    return KINDS * a + kind


def controller_id(i: int, j: int) -> int:
    """A stable id of junction (i, j)'s controller (distinct for |i|, |j| < 2^20)."""
    return ((i + (1 << 20)) << 21) | (j + (1 << 20))


class CitySignals:
    """The lights of one city plan (cached per junction)."""

    def __init__(self, plan: CityPlan, config: SignalConfig = SignalConfig()) -> None:
        self.plan = plan
        self.config = config
        self._plans: dict[tuple[int, int], PhasePlan | None] = {}

    def signalised(self, i: int, j: int) -> bool:
        return self.phase_plan(i, j) is not None

    def phase_plan(self, i: int, j: int) -> PhasePlan | None:
        """The phase plan of junction (i, j), None if it has no lights."""
        if (i, j) not in self._plans:
            self._plans[(i, j)] = self._draw(i, j)
        return self._plans[(i, j)]

    def lane_signal(self, key: Key) -> LaneSignal | None:
        """The light over a plan lane (connectors of signalised junctions only)."""
        group = movement_group(key)
        if group is None:
            return None
        i, j = key[1], key[2]
        plan = self.phase_plan(i, j)
        return None if plan is None else LaneSignal(controller_id(i, j), group, plan)

    def _draw(self, i: int, j: int) -> PhasePlan | None:
        cfg, plan = self.config, self.plan
        if not plan.is_junction(i, j):
            return None
        r = plan.rng(7, i, j)
        road_u, road_v = plan.line(0, j)[1], plan.line(1, i)[1]
        arterial_u, arterial_v = road_u.median_m > 0, road_v.median_m > 0
        chance = (cfg.chance_arterial_arterial if arterial_u and arterial_v else
                  cfg.chance_arterial_residential if arterial_u or arterial_v else cfg.chance_residential)
        if r.random() >= chance:
            return None
        arms = plan.arms(i, j)
        axes = [(axis, present, arterial) for axis, present, arterial in
                ((0, [a for a in (0, 2) if arms[a]], arterial_u), (1, [a for a in (1, 3) if arms[a]], arterial_v))
                if present]
        clear_s = {0: self.clearance_s(road_v), 1: self.clearance_s(road_u)}  # axis 0 crosses road v
        # A left turn gets its own protected phase where it crosses at least ``protected_left_lanes``
        # oncoming lanes; across fewer it turns permissively in gaps (yielding, see policies.junctions).
        lanes = {0: road_u.lanes, 1: road_v.lanes}
        lefts_s = [float(r.uniform(*cfg.protected_left_s)) if lanes[axis] >= cfg.protected_left_lanes else 0.0
                   for axis, _, _ in axes]
        def fixed_s(lefts: list[float]) -> float:  # everything but the through greens
            return (sum(left + (cfg.arrow_yellow_s + cfg.left_clear_s if left else 0.0) for left in lefts)
                    + sum(cfg.yellow_s + clear_s[axis] for axis, _, _ in axes))

        if self.cycle_s() - fixed_s(lefts_s) < cfg.min_green_s * len(axes):
            lefts_s = [0.0] * len(axes)  # no room for protected lefts in the city's cycle: lefts go permissive
        weights = [cfg.arterial_weight if arterial else 1.0 for _, _, arterial in axes]
        green_total = max(self.cycle_s() - fixed_s(lefts_s), cfg.min_green_s * len(axes))
        phases: list[Phase] = []
        green_starts: dict[int, float] = {}
        for (axis, present, _), left_s, weight in zip(axes, lefts_s, weights, strict=True):
            lefts = [KINDS * a + 2 for a in present]
            if left_s:
                phases += [_phase(left_s, {g: SignalState.ARROW_GO for g in lefts}),
                           _phase(cfg.arrow_yellow_s, {g: SignalState.ARROW_CAUTION for g in lefts}),
                           _phase(cfg.left_clear_s, {})]
            green_starts[axis] = sum(p.duration_s for p in phases)
            movements = [KINDS * a + k for a in present for k in range(KINDS)]
            phases += [_phase(green_total * weight / sum(weights), {g: SignalState.GO for g in movements}),
                       _phase(cfg.yellow_s, {g: SignalState.CAUTION for g in movements}),
                       _phase(clear_s[axis], {})]
        cycle = sum(p.duration_s for p in phases)
        wave = self._green_wave_start(i, j, arterial_u, arterial_v, road_u, road_v)
        if wave is None:
            return PhasePlan(tuple(phases), offset_s=float(r.uniform(0.0, cycle)))
        axis, t_green = wave  # the plan is at its green start of ``axis`` when the wave passes
        opens_s = green_starts.get(axis, 0.0) + cfg.band_lead_s
        return PhasePlan(tuple(phases), offset_s=float((opens_s - t_green) % cycle))

    def clearance_s(self, crossed) -> float:  # noqa: ANN001 - RoadClass
        """All-red after a green across road ``crossed``: the time the last car in on yellow needs to clear
        both its directions and its median plus one car length at the clearing speed."""
        cfg = self.config
        width = 2 * crossed.lanes * crossed.width_m + crossed.median_m + 5.0
        return float(np.clip(width / cfg.clearing_speed_mps, cfg.all_red_s, cfg.max_all_red_s))

    def cycle_s(self) -> float:
        """The city's common cycle (s)."""
        return float(self.plan.rng(8).uniform(*self.config.cycle_s))

    def _green_wave_start(self, i: int, j: int, arterial_u: bool, arterial_v: bool, road_u, road_v  # noqa: ANN001
                          ) -> tuple[int, float] | None:
        """(coordinated axis, when its through green starts in the cycle) for a junction on an arterial
        (the one with more lanes; along u on a tie), None off arterials."""
        if not (arterial_u or arterial_v):
            return None
        axis = 0 if arterial_u and (not arterial_v or road_u.lanes >= road_v.lanes) else 1
        line, road = (j, road_u) if axis == 0 else (i, road_v)
        r = self.plan.rng(9, axis, line)
        direction = 1.0 if r.random() < 0.5 else -1.0
        along = float(self.plan.node_xy(i, j)[axis])
        return axis, float(r.uniform(0.0, self.cycle_s())) + direction * along / (self.config.progression
                                                                                   * road.speed_mps)


def _phase(duration_s: float, states: dict[int, SignalState]) -> Phase:
    """A phase with ``states`` for the groups named and red for every other."""
    return Phase(duration_s, tuple(states.get(g, SignalState.STOP) for g in range(GROUPS)))


def signalised_share(plan: CityPlan, signals: CitySignals, radius: int = 6) -> float:
    """Share of the junctions with nodes in [-radius, radius]^2 that have lights."""
    nodes = [(i, j) for i in range(-radius, radius + 1) for j in range(-radius, radius + 1) if plan.is_junction(i, j)]
    return float(np.mean([signals.signalised(i, j) for i, j in nodes])) if nodes else 0.0
