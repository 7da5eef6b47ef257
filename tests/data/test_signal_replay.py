"""A log's traffic lights in a Session: the WOMD sample's dynamic_map_states replayed exactly, then a plan."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vectorworld.data import womd_pb2
from vectorworld.data.signal_replay import continuation, replay_signals
from vectorworld.data.tfrecord import read_record
from vectorworld.scene import Lane
from vectorworld.signals import SignalState, is_red


def _recorded(path: Path) -> tuple[list[dict[int, int]], int]:
    """Per step of the file, lane -> state straight from the protobuf (not through the reader), and the
    current step."""
    msg = womd_pb2.Scenario()
    msg.ParseFromString(read_record(path, 0).payload)
    return ([{int(s.lane): int(s.state) for s in dyn.lane_states} for dyn in msg.dynamic_map_states],
            int(msg.current_time_index))


def test_the_womd_sample_replays_its_recorded_signal_states_exactly(womd_path: Path, womd_scenario) -> None:
    recorded, current = _recorded(womd_path)
    assert len(recorded) == 91 and current == 10
    lights = replay_signals(womd_scenario.signals, womd_scenario.map.lanes, current)
    assert len(lights) == 8  # the 12 listed lanes, less the 4 the log never shows a state for
    lanes = sorted(lights)
    # every one of the 91 steps (9.1 s; the 10 before "now" at negative times), every controlled lane
    for k, want in enumerate(recorded):
        t = (k - current) * 0.1
        for lane in lanes:
            program, group = lights[lane].program, lights[lane].group
            got = int(program.states(np.array([group]), t)[0])
            assert got == want.get(lane, SignalState.UNKNOWN), (k, lane)


def test_a_session_started_from_the_log_shows_the_log_then_a_plan_that_continues(womd_path: Path) -> None:
    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    recorded, current = _recorded(womd_path)
    session = Session(SessionConfig(scenario=str(womd_path), npc_policy="idm", max_steps=140))
    session.reset()
    seen_after: list[dict[int, SignalState]] = []
    while not session.done:
        view = session.signals()
        k = current + session.step_index
        if k < len(recorded):
            assert {lane: int(s) for lane, s in view.as_dict().items()} == {
                lane: recorded[k].get(lane, 0) for lane in view.lane_ids.tolist()}, session.step_index
        else:
            seen_after.append(view.as_dict())
        session.advance()
    assert len(seen_after) >= 50
    # the log ends with every known light red: the plan clears, then opens one axis, never all lights at once
    states = np.array([[int(s) for s in step.values()] for step in seen_after])
    assert is_red(states[0]).all()
    assert (~is_red(states)).any()
    assert not (~is_red(states)).all(1).any()


def test_the_continuation_starts_where_the_log_leaves_off() -> None:
    lanes = [Lane(1, np.array([[0.0, 0.0], [10.0, 0.0]])), Lane(2, np.array([[20.0, -10.0], [20.0, 0.0]]))]
    green_end = np.array([[SignalState.STOP, SignalState.GO]] * 3, np.int8)
    plan = continuation(lanes, green_end)
    # lane 2 (the other axis) was green: it goes on, lane 1 stays red
    assert plan.states(np.array([0, 1]), 0.0).tolist() == [SignalState.STOP, SignalState.GO]
    yellow_end = np.array([[SignalState.CAUTION, SignalState.STOP]], np.int8)
    assert continuation(lanes, yellow_end).states(np.array([0, 1]), 0.0).tolist() == [
        SignalState.CAUTION, SignalState.STOP]
