"""Frames from a recording file (``vectorworld rollout --record``), with clear errors for bad files.

A missing file, a wrong magic, an unsupported format version or a corrupt record raise
:class:`~vectorworld.errors.RecordingError` (the CLI turns it into exit code 2). A truncated file opens up
to its last complete step, with a warning for the HUD and the terminal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from vectorworld.errors import RecordingError
from vectorworld.viewer.frame_store import FrameStore


@dataclass
class LoadedRecording:
    """A recording ready to view: its frames in a store, a title for the HUD, warnings to show."""

    store: FrameStore
    title: str
    warnings: list[str] = field(default_factory=list)


def open_recording(path: str | os.PathLike[str]) -> LoadedRecording:
    """Read ``path`` into a :class:`FrameStore`. Raises RecordingError for unusable files."""
    from vectorworld.wire.recording import read_recording

    path = Path(path)
    if path.is_dir():
        raise RecordingError(f"{path} is a directory, not a recording")
    recording = read_recording(path)
    if not recording.frames:
        what = "is truncated before its first complete step" if recording.truncated else "holds no steps"
        raise RecordingError(f"recording {path} {what}")
    warnings = []
    if recording.truncated:
        warnings.append(f"recording truncated: showing {len(recording.frames)} complete steps "
                        f"(up to step {recording.frames[-1].step})")
    config = recording.header.config
    title = f"{path.name}  seed {config.seed}  {config.generator} / {config.npc_policy}"
    store = FrameStore(recording.frames)
    store.has_timings = bool(recording.header.has_timings)
    return LoadedRecording(store, title, warnings)
