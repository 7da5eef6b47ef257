"""Traffic lights of the procedural city: share of signalised junctions, safe phase plans, lights on tiles."""

from __future__ import annotations

import numpy as np
import pytest

from tests.generation.grown_world import grow
from vectorworld.generation.procedural.city_plan import CityPlan
from vectorworld.generation.procedural.city_signals import KINDS, CitySignals, movement_group, signalised_share
from vectorworld.generation.procedural.generator import ProceduralConfig
from vectorworld.scene import LaneType
from vectorworld.signals import GREEN_STATES, SignalState, is_red

SEEDS = (0, 1, 2, 3, 4)


def _plans(seed: int) -> list[tuple[tuple[int, int], object]]:
    plan = CityPlan(seed)
    signals = CitySignals(plan)
    return [((i, j), signals.phase_plan(i, j)) for i in range(-5, 6) for j in range(-5, 6)
            if plan.is_junction(i, j) and signals.signalised(i, j)]


@pytest.mark.parametrize("seed", SEEDS)
def test_at_least_30_percent_of_junctions_have_lights_and_some_do_not(seed: int) -> None:
    plan = CityPlan(seed)
    share = signalised_share(plan, CitySignals(plan))
    assert 0.3 <= share < 1.0


def test_lights_are_a_pure_function_of_the_seed() -> None:
    a, b = _plans(3), _plans(3)
    assert [k for k, _ in a] == [k for k, _ in b]
    assert all(pa == pb for (_, pa), (_, pb) in zip(a, b, strict=True))
    assert [k for k, _ in _plans(4)] != [k for k, _ in a] or any(
        pa != pb for (_, pa), (_, pb) in zip(_plans(4), a, strict=False))


@pytest.mark.parametrize("seed", SEEDS)
def test_crossing_axes_are_never_both_open_and_an_all_red_clears_between_them(seed: int) -> None:
    for _, plan in _plans(seed):
        table = np.array([[int(s) for s in phase.states] for phase in plan.phases])
        open_ = ~is_red(table)                                              # green or yellow, (P, 12)
        u_open = open_[:, [KINDS * a + k for a in (0, 2) for k in range(KINDS)]].any(1)
        v_open = open_[:, [KINDS * a + k for a in (1, 3) for k in range(KINDS)]].any(1)
        assert not (u_open & v_open).any()
        for p in range(len(table)):  # after an axis closes, every light is red before the other opens
            nxt = (p + 1) % len(table)
            if u_open[p] and v_open[nxt] or v_open[p] and u_open[nxt]:
                pytest.fail(f"no all-red clearance between phases {p} and {nxt}")
        assert (~open_).all(1).any()


def test_arterials_get_a_protected_left_before_permissive_greens() -> None:
    protected = permissive = 0
    for seed in SEEDS:
        for _, plan in _plans(seed):
            for phase in plan.phases:
                states = phase.states
                lefts = [states[KINDS * a + 2] for a in range(4)]
                through = [states[KINDS * a] for a in range(4)]
                if SignalState.ARROW_GO in lefts:
                    protected += 1
                    # a protected left runs while the through traffic of every arm is red
                    assert all(s == SignalState.STOP for s in through)
                if SignalState.GO in lefts:
                    permissive += 1
    assert protected > 0 and permissive > 0


def test_a_left_turn_is_protected_only_where_it_crosses_protected_left_lanes_oncoming_lanes() -> None:
    """Protected only across ``protected_left_lanes`` oncoming lanes (and only where the city's cycle has
    room for it next to the minimum greens); across fewer lanes lefts always turn permissively."""
    need = CitySignals(CityPlan(0)).config.protected_left_lanes
    protected_wide = 0
    for seed in SEEDS:
        plan = CityPlan(seed)
        for (i, j), phases in _plans(seed):
            lanes = {0: plan.line(0, j)[1].lanes, 1: plan.line(1, i)[1].lanes}
            arms = plan.arms(i, j)
            for axis, axis_arms in ((0, (0, 2)), (1, (1, 3))):
                lefts = [KINDS * a + 2 for a in axis_arms if arms[a]]
                protected = any(phase.states[g] == SignalState.ARROW_GO for phase in phases.phases for g in lefts)
                assert not protected or lanes[axis] >= need, (seed, i, j, axis)
                protected_wide += protected
    assert protected_wide > 0


def test_connectors_of_signalised_junctions_carry_their_light_in_the_world() -> None:
    graph = grow(1, 30).graph
    lit = [lane for lane in graph.lanes.values() if lane.signal is not None]
    assert lit, "no lights in 30 city tiles"
    assert all(lane.lane_type == LaneType.CONNECTOR for lane in lit)
    # connectors of one junction share one program; a light's state is that of its movement group
    for lane in lit:
        state = SignalState(int(lane.signal.program.states(np.array([lane.signal.group]), 0.0)[0]))
        assert isinstance(state, SignalState)
    unlit = [lane for lane in graph.lanes.values() if lane.lane_type == LaneType.CONNECTOR and lane.signal is None]
    assert unlit, "every junction has lights"
    # off: no lights anywhere
    dark = grow(1, 30, config=ProceduralConfig(signals=None)).graph
    assert all(lane.signal is None for lane in dark.lanes.values())


def test_movement_groups_name_arm_and_turn() -> None:
    assert movement_group(("conn", 0, 0, 0, 0, 2, 0)) == 0      # from E straight (to W)
    assert movement_group(("conn", 0, 0, 1, 0, 2, 0)) == KINDS + 1  # from N, right
    assert movement_group(("conn", 0, 0, 3, -1, 2, 0)) == 3 * KINDS + 2  # from S, left
    assert movement_group(("lane", 0, 0)) is None
    assert SignalState.GO in GREEN_STATES


def _green_start(plan, through_group: int) -> float:  # noqa: ANN001 - PhasePlan
    """Seconds into the cycle (at t = 0 of the plan's clock) when ``through_group`` turns GO."""
    t, was_go = 0.0, False
    for phase in plan.phases:
        go = phase.states[through_group] == SignalState.GO
        if go and not was_go:
            return (t - plan.offset_s) % plan.cycle_s
        was_go, t = go, t + phase.duration_s
    raise AssertionError("no green for the group")


@pytest.mark.parametrize("seed", SEEDS)
def test_every_light_of_a_city_runs_one_cycle(seed: int) -> None:
    cycles = {round(plan.cycle_s, 6) for _, plan in _plans(seed)}
    assert len(cycles) == 1


def _mod_distance(a: float, b: float, cycle: float) -> float:
    d = (a - b) % cycle
    return min(d, cycle - d)


def test_arterials_carry_a_green_wave_at_the_progression_speed() -> None:
    """Along an arterial line (along u), consecutive coordinated junctions open their through green one
    travel time (distance / progression speed) apart, all in the line's one wave direction."""
    checked = 0
    for seed in SEEDS:
        plan = CityPlan(seed)
        signals = CitySignals(plan)
        for j in range(-3, 4):
            road = plan.line(0, j)[1]
            if road.median_m <= 0:
                continue
            nodes = [i for i in range(-6, 7) if plan.is_junction(i, j) and signals.signalised(i, j)
                     and (plan.line(1, i)[1].median_m <= 0 or road.lanes >= plan.line(1, i)[1].lanes)]
            directions = set()
            for a, b in zip(nodes, nodes[1:], strict=False):
                pa, pb = signals.phase_plan(a, j), signals.phase_plan(b, j)
                travel = (plan.node_xy(b, j)[0] - plan.node_xy(a, j)[0]) / (signals.config.progression * road.speed_mps)
                shift = _green_start(pb, 0) - _green_start(pa, 0)  # group 0: arriving from the east, straight
                forward = _mod_distance(shift, travel, pa.cycle_s) < 1e-6
                backward = _mod_distance(shift, -travel, pa.cycle_s) < 1e-6
                assert forward or backward, (seed, j, a, b)
                directions.add(forward)
                checked += 1
            assert len(directions) <= 1
    assert checked >= 5


def test_the_all_red_after_a_green_lasts_as_long_as_clearing_the_road_it_crosses() -> None:
    """A residential road crossing a 3-4 lane arterial gets a longer all-red than one crossing a residential
    road (ITE: (width + car) / speed), and no all-red is shorter than the minimum."""
    plan, signals = CityPlan(0), CitySignals(CityPlan(0))
    cfg = signals.config
    seen_long = False
    for (i, j), phases in _plans(0):
        road_u, road_v = plan.line(0, j)[1], plan.line(1, i)[1]
        table = np.array([[int(s) for s in phase.states] for phase in phases.phases])
        open_ = ~is_red(table)
        u_groups = [KINDS * a + k for a in (0, 2) for k in range(KINDS)]
        for p, phase in enumerate(phases.phases):
            if open_[p].any() or not open_[p - 1].any():
                continue  # not the all-red right after a green
            crossed = road_v if open_[p - 1, u_groups].any() else road_u
            if open_[p - 1][[KINDS * a + 2 for a in range(4)]].any() and not open_[p - 1][
                    [KINDS * a for a in range(4)]].any():
                continue  # the short clearance after a protected left
            assert phase.duration_s == pytest.approx(signals.clearance_s(crossed))
            assert cfg.all_red_s <= phase.duration_s <= cfg.max_all_red_s
            seen_long |= crossed.lanes >= 3 and phase.duration_s > cfg.all_red_s + 1.0
    assert seen_long
