"""Red-light infractions: which stop line a vehicle crossed, on which light; a planner that ignores lights."""

from __future__ import annotations

import numpy as np
import pytest

from vectorworld.scene import Lane, LaneGraph, LaneType
from vectorworld.signals import LaneSignal, Phase, PhasePlan, SignalBoard, SignalState
from vectorworld.sim.red_lights import red_light_entry

LINE_X = 60.0


def _junction() -> LaneGraph:
    """Lane 1 (x 0 -> 60) splits at the stop line into straight connector 2 (red) and left connector 4 (green)."""
    plan = PhasePlan((Phase(100.0, (SignalState.STOP, SignalState.ARROW_GO)),))
    left = np.array([[LINE_X, 0.0], [LINE_X + 8.0, 2.0], [LINE_X + 12.0, 10.0]])
    graph = LaneGraph()
    graph.add([Lane(1, np.array([[0.0, 0.0], [LINE_X, 0.0]]), successors=(2, 4)),
               Lane(2, np.array([[LINE_X, 0.0], [LINE_X + 20.0, 0.0]]), lane_type=LaneType.CONNECTOR,
                    signal=LaneSignal(1, 0, plan)),
               Lane(4, left, lane_type=LaneType.CONNECTOR, signal=LaneSignal(1, 1, plan))])
    return graph


def _entry(x0: float, x1: float, route: tuple[int, ...], yaw: float = 0.0, y: float = 0.0) -> int | None:
    graph = _junction()
    view = SignalBoard().view(graph, 0.0)
    return red_light_entry(np.array([x0, y]), yaw, np.array([x1, y]), yaw, 4.0, view, graph, route)


def test_crossing_the_line_into_a_red_lane_is_an_infraction_only_at_the_crossing_step() -> None:
    assert _entry(57.0, 58.5, (1, 2)) == 2           # front 59 -> 60.5: crossed, straight is red
    assert _entry(55.0, 57.5, (1, 2)) is None        # front still before the line
    assert _entry(58.5, 60.0, (1, 2)) is None        # front was already past it
    assert _entry(57.0, 58.5, (1, 4)) is None        # same line, but into the green left arrow
    assert _entry(57.0, 58.5, ()) == 2               # no route: the lane turning least (straight, red)


def test_a_vehicle_crossing_the_line_sideways_or_beside_the_lane_does_not_count() -> None:
    assert _entry(57.0, 58.5, (1, 2), y=4.0) is None  # an adjacent lane's car
    graph = _junction()
    view = SignalBoard().view(graph, 0.0)
    crossing = red_light_entry(np.array([LINE_X + 0.5, -3.0]), np.pi / 2, np.array([LINE_X + 0.5, 1.0]), np.pi / 2,
                               4.0, view, graph, ())
    assert crossing is None


@pytest.mark.slow
def test_a_planner_that_ignores_lights_gets_red_light_infractions_and_idm_does_not() -> None:
    """City seed 3, IDM NPCs: the constant-velocity planner drives through a red light within 30 s; the IDM
    ego planner, over the same 30 s and world, stops for it."""
    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    reports = {}
    for planner in ("constant-velocity", "idm"):
        session = Session(SessionConfig(seed=3, npc_policy="idm", planner=planner, target_km=1.0,
                                        terminate_on_collision=False, max_steps=300))
        session.reset()
        while not session.done:
            session.advance()
        reports[planner] = session.report()
    ignoring, idm = reports["constant-velocity"], reports["idm"]
    assert ignoring["red_light_infractions"] >= 1
    assert ignoring["infraction_counts"]["red_light"] == ignoring["red_light_infractions"]
    assert any(ev["kind"] == "red_light" for ev in ignoring["score_events"])
    assert ignoring["driving_score"] == pytest.approx(ignoring["route_completion"] * ignoring["infraction_penalty"])
    assert ignoring["infraction_penalty"] <= 0.7 + 1e-9
    assert idm["red_light_infractions"] == 0 and "red_light" not in idm["infraction_counts"]


@pytest.mark.slow
def test_waiting_at_a_red_light_is_not_a_jam() -> None:
    """City seed 7, IDM NPCs, 60 s: NPCs stand at red lights for more than the 20 s stuck timeout, and none
    of them is removed as stuck while a light holds it (the stuck clock pauses at red and yellow)."""
    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import STUCK_TIMEOUT_S, Session

    session = Session(SessionConfig(seed=7, npc_policy="idm", target_km=1.0, max_steps=600))
    session.reset()
    held_s: dict[int, float] = {}
    longest = 0.0
    while not session.done:
        inp = session.policy_input(np.zeros(session.agents.capacity, bool))
        a = inp.agents
        standing = {int(i) for i in a.id[a.valid & (np.abs(a.speed) < 0.5)]}
        held_s = {i: held_s.get(i, 0.0) + 0.1 for i in inp.right_of_way.by_light if i in standing}
        longest = max([longest, *held_s.values()])
        session.advance()
    assert longest > STUCK_TIMEOUT_S + 2.0  # the test means something: a light held a car longer than the timeout
    assert "held_by_light" not in session.report()["npc_removed_stuck_causes"]
