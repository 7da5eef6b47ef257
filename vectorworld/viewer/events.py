"""Per-frame events (ego collision, off-road, planner-score infraction, NPC contact, NPC removed as stuck, tile
generated) and metrics so far.

Built incrementally as frames arrive, so the HUD and "jump to next event" cost O(1) / O(log n) per query.
Indices are positions in the frame sequence (0 = first frame), not step numbers.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from enum import Enum

import numpy as np

from vectorworld import DT_S
from vectorworld.sim.metrics import StuckRemoval
from vectorworld.sim.observation import Frame


class EventKind(str, Enum):
    """What happened in a frame's step."""

    COLLISION = "collision"
    OFFROAD = "off-road"
    NPC_COLLISION = "npc collision"
    NPC_OFFROAD = "npc off-road"
    TILE = "tile"
    INFRACTION = "infraction"
    """A planner-score infraction started (at-fault collision, TTC breach, overspeed, wrong way, ...)."""
    NPC_REMOVED = "npc removed"
    """The session removed NPCs as stuck at the end of the step (StepMetrics.stuck_removals, with causes)."""


JUMP_KINDS = (EventKind.COLLISION, EventKind.OFFROAD, EventKind.INFRACTION, EventKind.TILE)
"""Kinds that "jump to next event" stops at (NPC events are highlighted but too frequent to stop at)."""
REMOVAL_MARKER_S = 2.0
"""How long after a stuck removal its marker stays where the car stood (simulated seconds)."""


@dataclass(frozen=True)
class MetricsSoFar:
    """Cumulative metrics up to and including one frame."""

    ego_collisions: int
    ego_offroad_steps: int
    npc_collisions: int
    npc_offroad: int
    tiles: int
    tile_ms_p50: float
    tile_ms_max: float
    npc_policy_ms_mean: float
    infractions: int = 0
    last_infraction: str = ""
    npc_removed: int = 0
    """NPCs removed as stuck so far."""


class EventIndex:
    """Events and cumulative counters of a growing frame sequence."""

    def __init__(self) -> None:
        self.kinds: list[frozenset[EventKind]] = []
        self._by_kind: dict[EventKind, list[int]] = {k: [] for k in EventKind}
        self._collided: set[int] = set()
        self._cum: list[tuple[int, int, int, int, int]] = []
        self._tile_ms: list[float] = []
        self._tiles_upto: list[int] = []
        self._npc_ms_sum: list[float] = []
        self._infractions: list[int] = []
        self._last_infraction: list[str] = []
        self.score_events: list[tuple[str, ...]] = []
        """Per frame: the planner-score infractions that started in its step."""
        self.stuck_removals: list[tuple[StuckRemoval, ...]] = []
        """Per frame: the NPCs removed as stuck at the end of its step."""
        self._removed: list[int] = []

    def __len__(self) -> int:
        return len(self.kinds)

    def append(self, frame: Frame) -> None:
        i = len(self.kinds)
        m = frame.step_metrics
        kinds = set()
        if m.ego_collided_ids:
            kinds.add(EventKind.COLLISION)
        if m.ego_offroad:
            kinds.add(EventKind.OFFROAD)
        if m.npc_collision_events:
            kinds.add(EventKind.NPC_COLLISION)
        if m.npc_offroad_events:
            kinds.add(EventKind.NPC_OFFROAD)
        if frame.new_tiles:
            kinds.add(EventKind.TILE)
        if m.score_events:
            kinds.add(EventKind.INFRACTION)
        if m.stuck_removals:
            kinds.add(EventKind.NPC_REMOVED)
        self.stuck_removals.append(tuple(m.stuck_removals))
        self._removed.append((self._removed[-1] if self._removed else 0) + len(m.stuck_removals))
        self._infractions.append((self._infractions[-1] if self._infractions else 0) + len(m.score_events))
        self._last_infraction.append(m.score_events[-1] if m.score_events else
                                     (self._last_infraction[-1] if self._last_infraction else ""))
        self.score_events.append(tuple(m.score_events))
        self.kinds.append(frozenset(kinds))
        for k in kinds:
            self._by_kind[k].append(i)
        self._collided.update(m.ego_collided_ids)
        prev = self._cum[-1] if self._cum else (0, 0, 0, 0, 0)
        self._cum.append((len(self._collided), prev[1] + int(m.ego_offroad), prev[2] + m.npc_collision_events,
                          prev[3] + m.npc_offroad_events, prev[4] + len(frame.new_tiles)))
        self._tile_ms.extend(float(t.latency_ms) for t in frame.new_tiles)
        self._tiles_upto.append(len(self._tile_ms))
        prev_ms = self._npc_ms_sum[-1] if self._npc_ms_sum else 0.0
        self._npc_ms_sum.append(prev_ms + float(frame.npc_policy_ms))

    def at(self, index: int) -> frozenset[EventKind]:
        return self.kinds[index]

    def indices(self, kind: EventKind) -> list[int]:
        """Sorted frame indices where ``kind`` happened."""
        return self._by_kind[kind]

    def next_event(self, index: int, kinds: tuple[EventKind, ...] = JUMP_KINDS) -> int | None:
        """The first frame index > ``index`` with an event of one of ``kinds`` (None if none)."""
        found = [lst[pos] for lst in (self._by_kind[k] for k in kinds)
                 if (pos := bisect.bisect_right(lst, index)) < len(lst)]
        return min(found) if found else None

    def previous_event(self, index: int, kinds: tuple[EventKind, ...] = JUMP_KINDS) -> int | None:
        """The last frame index < ``index`` with an event of one of ``kinds`` (None if none)."""
        found = [lst[pos - 1] for lst in (self._by_kind[k] for k in kinds)
                 if (pos := bisect.bisect_left(lst, index)) > 0]
        return max(found) if found else None

    def recent_removals(self, index: int, window_s: float = REMOVAL_MARKER_S) -> list[tuple[int, StuckRemoval]]:
        """(frames since, removal) of the stuck removals in frames ``index - window_s / DT_S`` .. ``index``."""
        frames = self._by_kind[EventKind.NPC_REMOVED]
        lo = bisect.bisect_left(frames, index - int(round(window_s / DT_S)) + 1)
        hi = bisect.bisect_right(frames, index)
        return [(index - i, r) for i in frames[lo:hi] for r in self.stuck_removals[i]]

    def metrics_so_far(self, index: int) -> MetricsSoFar:
        c = self._cum[index]
        tiles = np.array(self._tile_ms[:self._tiles_upto[index]])
        ms = self._npc_ms_sum[index] / (index + 1)
        return MetricsSoFar(c[0], c[1], c[2], c[3], c[4],
                            float(np.median(tiles)) if len(tiles) else 0.0,
                            float(tiles.max()) if len(tiles) else 0.0, ms, self._infractions[index],
                            self._last_infraction[index], self._removed[index])
