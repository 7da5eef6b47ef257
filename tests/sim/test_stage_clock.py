"""The Session's stage clock: every stage of a step timed, once per step, and together the whole step."""

import time

import pytest

import tests.straight_world  # noqa: F401 - registers the "test-straight" generator
from vectorworld import stage_clock
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.stage_clock import StageClock

STAGES = ["right_of_way", "npc_policy", "pedestrians", "ego_planner", "integrate", "metrics", "scoring", "routes",
          "world", "retire"]


def test_laps_add_the_time_since_the_last_lap_to_their_stage(monkeypatch):
    now = iter([10.0, 10.002, 10.005, 20.0, 20.001, 20.004])
    monkeypatch.setattr(stage_clock.time, "perf_counter", lambda: next(now))
    clock = StageClock()
    for _ in range(2):
        clock.start()
        clock.lap("a")
        clock.lap("b")
    assert clock.total_ms == pytest.approx({"a": 3.0, "b": 6.0})
    assert clock.per_step_ms(2) == pytest.approx({"a": 1.5, "b": 3.0})
    assert list(clock.per_step_ms(2)) == ["a", "b"]


def test_a_session_times_every_stage_of_its_steps_and_nothing_else(monkeypatch):
    session = Session(SessionConfig(generator="test-straight", target_km=0.05, npc_policy="idm"))
    session.reset()
    laps: list[str] = []
    lap = StageClock.lap
    monkeypatch.setattr(StageClock, "lap", lambda self, stage: laps.append(stage) or lap(self, stage))
    steps, advance_s = 0, 0.0
    while not session.done:
        t0 = time.perf_counter()
        session.advance()
        advance_s += time.perf_counter() - t0
        steps += 1
    assert laps == STAGES * steps  # each stage once per step, in the order of the step
    total_s = sum(session.stages.total_ms.values()) / 1e3
    assert 0.95 * advance_s <= total_s <= advance_s  # together the stages are the whole step
