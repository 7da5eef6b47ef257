"""A growing sequence of Frames with fast random access to the world map at any frame.

Frames come from a recording (all at once), a local Session (drive mode) or a live server (appended as
they arrive). The map at frame i is the result of applying frames 0..i's deltas; the store keeps a
snapshot every ``keyframe_every`` frames and a cursor, so stepping forward costs one delta and a seek
costs at most ``keyframe_every`` deltas. Indices are positions in the sequence (0 = first frame).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from vectorworld.sim.observation import Frame
from vectorworld.viewer.events import EventIndex
from vectorworld.viewer.map_state import LaneGeometryCache, MapState

KEYFRAME_EVERY = 32


class FrameStore:
    """Frames, their map keyframes, event index and per-frame compact agent positions (for trails)."""

    def __init__(self, frames: Iterable[Frame] = (), keyframe_every: int = KEYFRAME_EVERY) -> None:
        self.keyframe_every = keyframe_every
        self.frames: list[Frame] = []
        self.events = EventIndex()
        self.geometry = LaneGeometryCache()
        self._keyframes: list[MapState] = []
        self._tail = MapState()
        self._cursor: tuple[int, MapState] | None = None
        self._ids: list[np.ndarray] = []
        self._xy: list[np.ndarray] = []
        self._ego_xy: list[np.ndarray] = []
        self.has_timings = True
        """False for recordings written without wall-clock timings (the HUD then says so)."""
        self.routes: dict[int, np.ndarray] = {}
        """Optional route centreline (P, 2) per frame index, when the source knows it (drive, live)."""
        for frame in frames:
            self.append(frame)

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def last_index(self) -> int:
        return len(self.frames) - 1

    def append(self, frame: Frame) -> None:
        """Add the next frame (its step should follow the previous frame's)."""
        index = len(self.frames)
        self.frames.append(frame)
        self._tail.apply(frame)
        if index % self.keyframe_every == 0:
            self._keyframes.append(self._tail.copy())
        self.events.append(frame)
        a = frame.agents
        self._ids.append(a.id[a.valid].copy())
        self._xy.append(a.xy[a.valid].copy())
        self._ego_xy.append(a.xy[frame.ego_slot].copy())

    def clamp(self, index: int) -> int:
        """``index`` clamped to the frames present (seeking past the end lands on the last frame)."""
        return max(0, min(int(index), self.last_index))

    def index_of_step(self, step: int) -> int:
        """The index of the frame with ``step`` (or of the nearest step, clamped)."""
        if not self.frames:
            raise IndexError("the frame store is empty")
        first = self.frames[0].step
        guess = self.clamp(step - first)
        if self.frames[guess].step == step:
            return guess
        steps = np.array([f.step for f in self.frames])
        return int(np.argmin(np.abs(steps - step)))

    def map_at(self, index: int) -> MapState:
        """The map after frame ``index`` (a shared object: do not mutate it)."""
        index = self.clamp(index)
        if index == self.last_index:
            return self._tail
        if self._cursor is not None:
            at, state = self._cursor
            if at == index:
                return state
            if at < index and index - at <= self.keyframe_every:
                for i in range(at + 1, index + 1):
                    state.apply(self.frames[i])
                self._cursor = (index, state)
                return state
        k = index // self.keyframe_every
        state = self._keyframes[k].copy()
        for i in range(k * self.keyframe_every + 1, index + 1):
            state.apply(self.frames[i])
        self._cursor = (index, state)
        return state

    def trails(self, index: int, length: int) -> dict[int, np.ndarray]:
        """Agent id -> (K, 2) past positions over the last ``length`` frames up to ``index``, oldest first.

        Built from the frames themselves, so trails work for recordings stored without agent history.
        """
        index = self.clamp(index)
        start = max(0, index - length + 1)
        ids = np.concatenate(self._ids[start:index + 1])
        xy = np.concatenate(self._xy[start:index + 1])
        if len(ids) == 0:
            return {}
        order = np.argsort(ids, kind="stable")
        ids, xy = ids[order], xy[order]
        bounds = np.concatenate([[0], np.nonzero(np.diff(ids))[0] + 1, [len(ids)]]).tolist()
        return {int(ids[a]): xy[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b - a > 1}

    def ego_xy(self, index: int) -> np.ndarray:
        """(2,) the ego's position at frame ``index`` (m, global)."""
        return self._ego_xy[self.clamp(index)]

    def route_at(self, index: int, horizon: int = 300) -> np.ndarray:
        """(P, 2) the ego's route at frame ``index``.

        The source's route when it gave one; otherwise (recordings) the path the ego actually drives over
        the next ``horizon`` frames, which is the route as executed.
        """
        index = self.clamp(index)
        if index in self.routes:
            return self.routes[index]
        return np.array(self._ego_xy[index:index + horizon]).reshape(-1, 2)
