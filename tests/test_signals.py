"""The scene's signal model: phase plans, a log replayed then continued, the board's view of a graph."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vectorworld.scene import Lane, LaneGraph
from vectorworld.signals import (
    LaneSignal,
    LoggedProgram,
    Phase,
    PhasePlan,
    SignalBoard,
    SignalState,
    is_red,
    is_yellow,
)

G, Y, R = SignalState.GO, SignalState.CAUTION, SignalState.STOP


def two_phase(offset_s: float = 0.0) -> PhasePlan:
    return PhasePlan((Phase(10.0, (G, R)), Phase(4.0, (Y, R)), Phase(2.0, (R, R)),
                      Phase(10.0, (R, G)), Phase(4.0, (R, Y)), Phase(2.0, (R, R))), offset_s)


def test_phase_plan_cycles_through_its_phases_with_its_offset() -> None:
    plan = two_phase()
    assert plan.cycle_s == pytest.approx(32.0)
    assert plan.states(np.array([0, 1]), 0.0).tolist() == [G, R]
    assert plan.states(np.array([0, 1]), 11.0).tolist() == [Y, R]
    assert plan.states(np.array([0, 1]), 15.0).tolist() == [R, R]
    assert plan.states(np.array([0, 1]), 20.0).tolist() == [R, G]
    assert plan.states(np.array([0, 1]), 32.0 + 11.0).tolist() == [Y, R]  # periodic
    assert two_phase(offset_s=16.0).states(np.array([0, 1]), 0.0).tolist() == [R, G]


def test_phase_plan_refuses_ragged_phases_naming_the_field() -> None:
    with pytest.raises(ValueError, match="phases"):
        PhasePlan((Phase(1.0, (G, R)), Phase(1.0, (G,))))
    with pytest.raises(ValueError, match="duration_s"):
        Phase(0.0, (G,))


def test_red_and_yellow_classes() -> None:
    states = np.array([int(s) for s in SignalState])
    assert set(states[is_red(states)].tolist()) == {SignalState.STOP, SignalState.ARROW_STOP}
    assert set(states[is_yellow(states)].tolist()) == {SignalState.CAUTION, SignalState.ARROW_CAUTION}


def test_logged_program_replays_exactly_then_continues_and_fills_dropouts_for_traffic() -> None:
    log = np.array([[R, G], [0, G], [R, Y], [G, R]], np.int8)  # step 1: lane 0 drops out
    after = PhasePlan((Phase(5.0, (Y, Y)),))
    program = LoggedProgram(log, start_step=1, dt_s=0.1, after=after)
    groups = np.array([0, 1])
    for k in range(4):  # t = 0 is log step 1; earlier steps at negative times
        assert program.states(groups, (k - 1) * 0.1).tolist() == log[k].tolist()
    assert program.rule_states(groups, 0.0).tolist() == [R, G]  # the dropout keeps the last known red
    assert program.states(groups, 0.3).tolist() == [Y, Y]  # log step 4: past the log, the plan runs


def _lane(lane_id: int, start: tuple[float, float], signal: LaneSignal | None) -> Lane:
    x, y = start
    return Lane(lane_id, np.array([[x, y], [x + 10.0, y]]), width_m=3.0, signal=signal)


def test_board_views_every_lit_lane_of_the_graph_and_follows_changes() -> None:
    plan = two_phase()
    graph = LaneGraph()
    graph.add([_lane(1, (0, 0), LaneSignal(7, 0, plan)), _lane(2, (0, 5), None), _lane(3, (0, 10),
                                                                                        LaneSignal(7, 1, plan))])
    board = SignalBoard()
    view = board.view(graph, 0.0)
    assert view.lane_ids.tolist() == [1, 3]
    assert view.as_dict() == {1: G, 3: R}
    assert view.stop_xy.tolist() == [[0.0, 0.0], [0.0, 10.0]]
    assert view.state(2) is None
    assert board.view(graph, 20.0).as_dict() == {1: R, 3: G}
    graph.remove([1])
    assert board.view(graph, 0.0).lane_ids.tolist() == [3]


def test_a_lanes_signal_survives_replace_and_is_not_part_of_equality() -> None:
    lane = _lane(1, (0, 0), LaneSignal(1, 0, two_phase()))
    moved = dataclasses.replace(lane, successors=(2,))
    assert moved.signal is lane.signal
