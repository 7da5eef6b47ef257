"""Playback and view-option state of the debugger: pure values, updated by small functions (no pygame).

``Playback.index`` is a position in the frame sequence. Playing advances it at ``speed`` x real time
(10 frames per sim second); seeking clamps to the frames present.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vectorworld import DT_S

SPEEDS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
"""Playback speeds (x real time) that the speed keys cycle through."""


@dataclass(frozen=True)
class ViewOptions:
    """Which layers and overlays are drawn."""

    drivable: bool = True
    lanes: bool = True
    lane_edges: bool = False
    tiles: bool = True
    route: bool = True
    labels: bool = True
    velocities: bool = True
    trails: bool = True
    plan: bool = True
    signals: bool = True
    hud: bool = True
    help: bool = False
    trail_steps: int = 30

    def toggled(self, name: str) -> ViewOptions:
        return dataclasses.replace(self, **{name: not getattr(self, name)})


@dataclass(frozen=True)
class Playback:
    """index: current frame position; playing; speed: x real time; follow_ego: camera tracks the ego;
    carry_s: wall time not yet turned into frames while playing."""

    index: int = 0
    playing: bool = False
    speed: float = 1.0
    follow_ego: bool = True
    carry_s: float = 0.0

    def seek(self, index: int, num_frames: int) -> Playback:
        """Go to ``index``, clamped to [0, num_frames - 1]."""
        return dataclasses.replace(self, index=max(0, min(int(index), num_frames - 1)), carry_s=0.0)

    def stepped(self, delta: int, num_frames: int) -> Playback:
        """Single-step ``delta`` frames (pauses playback)."""
        return dataclasses.replace(self.seek(self.index + delta, num_frames), playing=False)

    def toggled_play(self, num_frames: int) -> Playback:
        """Play/pause; playing from the last frame restarts at the first."""
        if not self.playing and self.index >= num_frames - 1 and num_frames > 1:
            return dataclasses.replace(self, index=0, playing=True, carry_s=0.0)
        return dataclasses.replace(self, playing=not self.playing, carry_s=0.0)

    def faster(self, direction: int) -> Playback:
        """Next speed up (+1) or down (-1) in SPEEDS."""
        pos = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - self.speed))
        pos = max(0, min(len(SPEEDS) - 1, pos + direction))
        return dataclasses.replace(self, speed=SPEEDS[pos])

    def advanced(self, wall_dt_s: float, num_frames: int, live: bool = False) -> Playback:
        """Advance by ``wall_dt_s`` of wall time while playing.

        Stops at the last frame unless ``live`` (more frames will arrive: it then waits there).
        """
        if not self.playing:
            return self
        carry = self.carry_s + wall_dt_s * self.speed
        frames = int(carry / DT_S)
        carry -= frames * DT_S
        target = self.index + frames
        if target >= num_frames - 1:
            return dataclasses.replace(self, index=max(num_frames - 1, 0), carry_s=0.0, playing=live)
        return dataclasses.replace(self, index=target, carry_s=carry)

    def frames_due(self, wall_dt_s: float) -> tuple[int, Playback]:
        """For drive mode: how many new sim steps ``wall_dt_s`` of wall time asks for, and the new state."""
        if not self.playing:
            return 0, self
        carry = self.carry_s + wall_dt_s * self.speed
        frames = min(int(carry / DT_S), 4)
        return frames, dataclasses.replace(self, carry_s=min(carry - frames * DT_S, DT_S))
