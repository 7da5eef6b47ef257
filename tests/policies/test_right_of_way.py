"""The right-of-way service: signal state first, then priority, then first come with anti-starvation; one
decision per Session step, read by every policy and planner."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import policies.right_of_way as row_module
from policies.base import PolicyInput
from policies.junctions import PATIENCE_S, YIELD_PATIENCE_S
from policies.right_of_way import RightOfWay
from vectorworld import geometry
from vectorworld.scene import Agents, Lane, LaneGraph, LaneType
from vectorworld.signals import LaneSignal, Phase, PhasePlan, SignalBoard, SignalState

G, Y, R, ARROW = SignalState.GO, SignalState.CAUTION, SignalState.STOP, SignalState.ARROW_GO


def _graph(lights: tuple[SignalState, SignalState, SignalState, SignalState] | None = None,
           north_limit_mps: float = 13.9) -> LaneGraph:
    """Lane 1 (east, ends at x 0) -> straight connector 2 or left connector 5 (to the north); lane 4 (north,
    ends at y -15, speed limit ``north_limit_mps``) -> connector 3 (crosses 2 at (15, 0)); lane 6 (west, ends
    at x 30) -> connector 7 (west, y 3.5, crossed by the left turn 5). ``lights``: states of connectors 2, 3,
    5, 7 (None: no lights)."""
    plan = None if lights is None else PhasePlan((Phase(1000.0, tuple(lights)),))

    def light(group: int) -> LaneSignal | None:
        return None if plan is None else LaneSignal(1, group, plan)

    left = geometry.hermite_curve(np.array([0.0, 0.0]), 0.0, np.array([12.0, 15.0]), np.pi / 2, 40)
    graph = LaneGraph()
    graph.add([Lane(1, np.array([[-60.0, 0.0], [0.0, 0.0]])),
               Lane(2, np.array([[0.0, 0.0], [30.0, 0.0]]), lane_type=LaneType.CONNECTOR, signal=light(0)),
               Lane(4, np.array([[15.0, -60.0], [15.0, -15.0]]), speed_limit_mps=north_limit_mps),
               Lane(3, np.array([[15.0, -15.0], [15.0, 15.0]]), lane_type=LaneType.CONNECTOR, signal=light(1)),
               Lane(5, left, lane_type=LaneType.CONNECTOR, signal=light(2)),
               Lane(6, np.array([[90.0, 3.5], [30.0, 3.5]])),
               Lane(7, np.array([[30.0, 3.5], [0.0, 3.5]]), lane_type=LaneType.CONNECTOR, signal=light(3))])
    for a, b in ((1, 2), (1, 5), (4, 3), (6, 7)):
        graph.connect(a, b)
    return graph


def _agents(rows: list[tuple[int, float, float, float, float]]) -> Agents:
    """Vehicles (id, x, y, yaw, speed), 4.6 m x 2 m."""
    a = Agents.empty(len(rows) + 1)
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    for k, (agent_id, x, y, yaw, v) in enumerate(rows):
        arrays["id"][k], arrays["valid"][k], arrays["agent_type"][k] = agent_id, True, 1
        arrays["xy"][k], arrays["yaw"][k], arrays["speed"][k] = [x, y], yaw, v
        arrays["length"][k], arrays["width"][k] = 4.6, 2.0
    return Agents(**arrays)


def _input(graph: LaneGraph, rows: list, routes: dict[int, list[int]], step: int = 0) -> PolicyInput:
    agents = _agents(rows)
    return PolicyInput(agents, agents.valid.copy(), graph, routes, ego_slot=len(rows), step=step,
                       signals=SignalBoard().view(graph, step * 0.1))


EAST, NORTH, WEST = 0.0, np.pi / 2, np.pi


def test_a_red_light_holds_an_agent_before_the_junction_approach_and_green_releases_it() -> None:
    far = [(10, -55.0, 0.0, EAST, 10.0)]                 # 55 m (5.5 s) before the stop line: no junction request yet
    red = RightOfWay().decide(_input(_graph((R, G, R, R)), far, {10: [1, 2]}))
    assert red.held == {10: 2} and red.by_light == {10} and not red.requested
    green = RightOfWay().decide(_input(_graph((G, R, R, R)), far, {10: [1, 2]}))
    assert green.held == {} and not green.by_light


def test_on_yellow_only_agents_that_can_stop_comfortably_stop() -> None:
    rows = [(10, -8.0, 0.0, EAST, 12.0), (11, -30.0, 0.0, EAST, 8.0)]
    d = RightOfWay().decide(_input(_graph((Y, R, R, R)), rows, {10: [1, 2], 11: [1, 2]}))
    assert 10 in d.granted and 10 not in d.held              # 5.7 m to go at 12 m/s: it clears
    assert d.held.get(11) == 2 and 11 in d.by_light          # 27.7 m at 8 m/s: 1.2 m/s^2 to stop


def test_without_lights_the_closest_goes_first_but_a_committed_agent_before_anyone() -> None:
    routes = {10: [1, 2], 11: [4, 3]}
    first_come = [(10, -12.0, 0.0, EAST, 5.0), (11, 15.0, -21.0, NORTH, 5.0)]  # entries 12 m and 6 m ahead
    d = RightOfWay().decide(_input(_graph(), first_come, routes))
    assert d.granted == {11} and d.held == {10: 2}
    committed = [(10, -3.0, 0.0, EAST, 10.0), (11, 15.0, -21.0, NORTH, 5.0)]  # 10 m/s, 3 m: cannot stop
    d = RightOfWay().decide(_input(_graph(), committed, routes))
    assert d.granted == {10} and d.held == {11: 3}


def test_without_lights_a_minor_road_yields_to_a_major_road_until_it_has_waited_yield_patience() -> None:
    """Lane 4 is the major road (17.9 m/s against 13.9): its car 40 m (3 s) out goes first although the
    minor-road car stands 5 m from its entry; on equal roads the closer one goes. After YIELD_PATIENCE_S the
    minor-road car claims its connector."""
    routes = {10: [1, 2], 11: [4, 3]}
    rows = [(10, -5.3, 0.0, EAST, 0.0), (11, 15.0, -55.0, NORTH, 13.0)]
    d = RightOfWay().decide(_input(_graph(north_limit_mps=17.9), rows, routes))
    assert d.granted == {11} and d.held == {10: 2}
    d = RightOfWay().decide(_input(_graph(), rows, routes))
    assert d.granted == {10} and d.held == {11: 3}
    service, graph = RightOfWay(), _graph(north_limit_mps=17.9)
    for step in range(int(round(YIELD_PATIENCE_S / 0.1)) + 3):
        d = service.decide(_input(graph, rows, routes, step))
        if d.granted == {10}:
            assert step >= int(round(YIELD_PATIENCE_S / 0.1)) - 1
            return
    pytest.fail("the minor-road car never claimed its connector")


def test_a_permissive_green_left_yields_to_oncoming_traffic_a_protected_arrow_does_not() -> None:
    rows = [(10, -5.0, 0.0, EAST, 4.0), (12, 42.0, 3.5, WEST, 4.0)]   # left 5 m from its entry; oncoming 12 m
    routes = {10: [1, 5], 12: [6, 7]}
    permissive = RightOfWay().decide(_input(_graph((R, R, G, G)), rows, routes))
    assert permissive.granted == {12} and permissive.held == {10: 5}
    protected = RightOfWay().decide(_input(_graph((R, R, ARROW, G)), rows, routes))
    assert protected.granted == {10} and protected.held == {12: 7}


def test_an_agent_kept_waiting_reserves_its_connector_against_closer_newcomers() -> None:
    service, graph = RightOfWay(), _graph()
    routes = {10: [1, 2], 11: [4, 3]}
    steps_before_patient = int(round(PATIENCE_S / 0.1))
    for step in range(steps_before_patient + 5):
        # agent 10 stands 3 m before its entry; a newcomer on the crossing road is always closer (2 m)
        rows = [(10, -5.3, 0.0, EAST, 0.0), (11, 15.0, -19.3, NORTH, 3.0)]
        d = service.decide(_input(graph, rows, routes, step))
        if d.granted == {10}:
            assert steps_before_patient <= step <= steps_before_patient + 2  # after PATIENCE_S, not before
            assert d.held == {11: 3}
            return
        assert d.granted == {11}, step
    pytest.fail("agent 10 never got its turn")


def test_the_session_decides_once_per_step_and_every_policy_reads_that_decision(monkeypatch) -> None:
    from policies.ego import IdmRoutePlanner
    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    calls: list[int] = []
    grant = row_module.grant_connectors

    def counting(graph, conflicts, occupied, requests, waited_s=None, patience_s=PATIENCE_S,  # noqa: ANN001, ANN202
                 sole_occupant=None):  # noqa: ANN001
        calls.append(len(requests))
        return grant(graph, conflicts, occupied, requests, waited_s, patience_s, sole_occupant)

    monkeypatch.setattr(row_module, "grant_connectors", counting)
    for npc in ("idm", "deltasim"):
        calls.clear()
        session = Session(SessionConfig(seed=1, npc_policy=npc, target_km=1.0, max_steps=30))
        session.reset()
        seen: list[PolicyInput] = []
        planned = session.planner.plan
        monkeypatch.setattr(session.planner, "plan",
                            lambda inp, planned=planned, seen=seen: seen.append(inp) or planned(inp))
        fresh = IdmRoutePlanner()
        while not session.done:
            session.advance()
            inp = seen[-1]
            assert inp.right_of_way is not None and inp.right_of_way.step == inp.step
            # a planner of its own, given the same input, plans the same trajectory: nothing is shared but
            # the decision (city world, every step)
            assert np.allclose(fresh.plan(inp).poses, session.ego_plan)
        assert len(calls) == 30, npc  # one decision per step: no policy or planner took its own


def test_a_pedestrian_on_a_crosswalk_holds_agents_that_can_stop_but_not_committed_ones() -> None:
    routes = {10: [1, 2]}
    approaching = [(10, -15.0, 0.0, EAST, 5.0)]                        # 15 m before connector 2 at 5 m/s
    closed = dataclasses.replace(_input(_graph(), approaching, routes), crossing_blocked=frozenset({2}))
    d = RightOfWay().decide(closed)
    assert d.held == {10: 2} and d.by_crossing == {10} and not d.granted
    assert RightOfWay().decide(_input(_graph(), approaching, routes)).granted == {10}  # crosswalk free
    committed = [(10, -3.0, 0.0, EAST, 10.0)]                          # 10 m/s, 3 m: it cannot stop
    d = RightOfWay().decide(dataclasses.replace(_input(_graph(), committed, routes), crossing_blocked=frozenset({2})))
    assert d.granted == {10} and not d.by_crossing


def test_a_long_vehicle_holds_its_connector_until_its_tail_has_left_it() -> None:
    """A truck whose centre left connector 3 onto lane 8 three metres ago still has 2 m of tail on 3, which
    crosses connector 2: the car before 2 waits. A car there has left 3 whole, and the other car goes."""
    graph = _graph()
    graph.add([Lane(8, np.array([[15.0, 15.0], [15.0, 60.0]]))])
    graph.connect(3, 8)
    rows = [(10, -5.0, 0.0, EAST, 4.0), (11, 15.0, 18.0, NORTH, 5.0)]
    routes = {10: [1, 2], 11: [8]}
    inp = _input(graph, rows, routes)
    assert RightOfWay().decide(inp).granted == {10}                    # a 4.6 m car: its tail is off connector 3
    truck = dataclasses.replace(inp.agents, length=np.where(inp.agents.id == 11, 10.0, inp.agents.length))
    d = RightOfWay().decide(dataclasses.replace(inp, agents=truck))
    assert d.held == {10: 2} and not d.granted
