"""The port book of the streaming world: what it remembers about open lane ends between coverage calls.

Beside the route book (who drives where) and the spawn book (who enters), the port book says, per open
port: how many tiles were tried there, whether it is written off as a dead end, and whether it is deferred
because its tile would have cut across a road next to moving traffic. It also keeps the clock of deferrals
(coverage calls) and the last *quiet look* -- a call that found no open port -- so an unchanged world is
not searched again every step.

Which lane ends are open ports, and which of them a tile at a frame is given, is the generator contract's
(:func:`~vectorworld.generation.base.open_ports`, :func:`~vectorworld.generation.base.tile_ports`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Deferral:
    """A port waits until coverage call ``until_call``, and while traffic moves near ``surprise_at`` (P, 2) m,
    the points where its last tile met other roads."""

    until_call: int
    surprise_at: np.ndarray


@dataclass(frozen=True)
class QuietLook:
    """A coverage call that found no open port: the graph version, the ego's route end and position then,
    and the call at which the first deferral still running is over (inf: none)."""

    graph_version: int
    route_end_lane: int | None
    ego_xy: np.ndarray
    wake_call: float


@dataclass
class PortBook:
    """Per-port attempts, dead ends and deferrals, the call clock and the last quiet look."""

    attempts: dict[int, int] = field(default_factory=dict)
    """Port lane id -> tiles tried there that did not continue it."""
    dead_ends: set[int] = field(default_factory=set)
    """Ports written off: the generator (and the straight fallback) could not continue them."""
    deferred: dict[int, Deferral] = field(default_factory=dict)
    calls: int = 0
    """Coverage calls so far (the clock of deferrals)."""
    quiet: QuietLook | None = None

    def tick(self) -> None:
        self.calls += 1

    def still_quiet(self, graph_version: int, route_end_lane: int | None, ego_xy: np.ndarray,
                    requery_m: float) -> bool:
        """Whether nothing new can be within reach since the last quiet look (same graph, same route end,
        the ego moved less than ``requery_m``) and no deferral is over."""
        q = self.quiet
        return (q is not None and q.graph_version == graph_version and q.route_end_lane == route_end_lane
                and bool(np.linalg.norm(q.ego_xy - ego_xy) < requery_m) and self.calls < q.wake_call)

    def remember_quiet(self, graph_version: int, route_end_lane: int | None, ego_xy: np.ndarray) -> None:
        """Record a quiet look. Deferrals over by now belong to ports out of reach (those in reach were just
        renewed or cleared): forget them, and wake up for the first one still running."""
        self.deferred = {k: v for k, v in self.deferred.items() if v.until_call > self.calls}
        wake = min((d.until_call for d in self.deferred.values()), default=np.inf)
        self.quiet = QuietLook(graph_version, route_end_lane, np.array(ego_xy, float), wake)

    def defer(self, lane_id: int, surprise_at: np.ndarray, calls: int) -> None:
        """Defer the port for ``calls`` coverage calls (and while traffic moves near ``surprise_at``)."""
        self.deferred[lane_id] = Deferral(self.calls + calls, surprise_at)

    def waits(self, lane_id: int, moving_xy: np.ndarray | None, radius_m: float, calls: int) -> bool:
        """Whether a deferred port must wait on: its time is not up, or traffic is still moving within
        ``radius_m`` of where its last tile met another road (then it waits ``calls`` more calls)."""
        entry = self.deferred.get(lane_id)
        if entry is None:
            return False
        if entry.until_call > self.calls:
            return True
        if moving_xy is not None and any_within(entry.surprise_at, moving_xy, radius_m):
            self.deferred[lane_id] = Deferral(self.calls + calls, entry.surprise_at)
            return True
        del self.deferred[lane_id]
        return False

    def count_attempt(self, lane_id: int) -> int:
        """One more tile tried at the port; returns its attempts so far."""
        self.attempts[lane_id] = self.attempts.get(lane_id, 0) + 1
        return self.attempts[lane_id]

    def undo_attempt(self, lane_id: int) -> None:
        self.attempts[lane_id] -= 1

    def reopen(self, lane_ids: Iterable[int]) -> None:
        """Lanes that lost their continuation (or are gone): open ports again with fresh attempts."""
        for lane_id in lane_ids:
            self.attempts.pop(lane_id, None)
            self.dead_ends.discard(lane_id)


def any_within(points: np.ndarray, others: np.ndarray, radius_m: float) -> bool:
    """Whether any of ``others`` (M, 2) lies within ``radius_m`` of any of ``points`` (P, 2)."""
    if len(points) == 0 or len(others) == 0:
        return False
    delta = points[:, None] - others[None]
    return bool((np.einsum("pmk,pmk->pm", delta, delta) < radius_m * radius_m).any())
