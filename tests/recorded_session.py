"""Run a Session to its end while recording it: the one loop the recording tests share."""

from __future__ import annotations

from pathlib import Path

from vectorworld.sim.observation import Frame, Observation
from vectorworld.sim.session import Session
from vectorworld.wire.recording import RecordingWriter


def record_session(session: Session, path: Path, **options: bool) -> tuple[list[Frame], list[Observation], dict]:
    """Reset ``session``, step it (its built-in planner) until done, writing every frame to ``path``
    (``options`` go to :class:`RecordingWriter`); returns the frames, the observations and the report."""
    frames: list[Frame] = []
    observations = [session.reset()]
    with RecordingWriter(path, session.config, **options) as writer:
        frames.append(session.frame())
        writer.write_frame(frames[-1])
        while not observations[-1].done:
            observations.append(session.step())
            frames.append(session.frame())
            writer.write_frame(frames[-1])
        report = session.report()
        writer.close(report)
    return frames, observations, report
