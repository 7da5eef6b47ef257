"""Planner-score infractions reach the debugger: recorded per step, indexed as events you can jump to,
named in the HUD banner and ticked on the timeline."""

from __future__ import annotations

from pathlib import Path

import tests.straight_world  # noqa: F401 - registers the "test-straight" generator
from vectorworld.sim.session import Session, SessionConfig
from vectorworld.vehicle.commands import ControlCommand
from vectorworld.viewer.events import EventKind
from vectorworld.viewer.frame_store import FrameStore
from vectorworld.viewer.headless import render_to_surface
from vectorworld.wire.recording import RecordingWriter, read_recording


def test_speeding_ego_infractions_are_events_to_jump_to(tmp_path: Path) -> None:
    config = SessionConfig(generator="test-straight", target_km=0.08, seed=3, terminate_on_collision=False)
    session = Session(config)
    path = tmp_path / "run.vwrec"
    with RecordingWriter(path, config) as writer:
        obs = session.reset()
        writer.write_frame(session.frame())
        while not obs.done and obs.step < 60:
            obs = session.step(ControlCommand(3.0, 0.0))  # 6 m/s + 3 m/s^2: over the 12 m/s limit after 2 s
            writer.write_frame(session.frame())
        report = session.report()
        writer.close(report)
    store = FrameStore(read_recording(path).frames)
    overspeed = [e["step"] for e in report["score_events"] if e["kind"] == "overspeed"]
    assert overspeed, report["score_events"]
    first = store.index_of_step(overspeed[0])
    assert "overspeed" in store.events.score_events[first]
    first_event = report["score_events"][0]["step"]
    assert store.events.next_event(0, (EventKind.INFRACTION,)) == store.index_of_step(first_event)
    assert EventKind.INFRACTION in store.events.at(first)
    assert store.events.metrics_so_far(store.last_index).infractions == len(report["score_events"])
    surface = render_to_surface(store, first, (640, 400))
    assert surface.get_size() == (640, 400)
