"""What one debugger window (or screenshot) shows: the frames, a title, warnings, and the live feed.

Kept free of pygame so the CLI can build it before deciding between a window and a headless render.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vectorworld.viewer.drive_source import DriveSource
from vectorworld.viewer.frame_store import FrameStore
from vectorworld.viewer.live_source import LiveSource


@dataclass
class ViewerSession:
    """store: frames shown; drive / live: at most one source that keeps appending frames;
    start_index: the frame shown first."""

    store: FrameStore
    title: str
    warnings: list[str] = field(default_factory=list)
    drive: DriveSource | None = None
    live: LiveSource | None = None
    start_index: int = 0
