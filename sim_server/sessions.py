"""The session manager: live sessions by id, a cap, per-session locking, idle reaping, draining.

Plain Python, no grpc: the servicer maps the exceptions raised here to status codes. Each session is the
same :class:`~vectorworld.sim.session.Session` that ``vectorworld rollout`` runs, so a served episode and
a local one with the same config and commands are identical.

Concurrency: the manager's own lock guards the table only; work on a session (reset, step, close) runs
under that session's lock, so different sessions step in parallel and one session's calls are
serialised. A second call on a busy session waits up to ``lock_timeout_s`` then fails with SessionBusy.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vectorworld.errors import VectorWorldError
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.observation import Observation
from vectorworld.sim.session import Session
from vectorworld.vehicle.commands import EgoCommand
from vectorworld.wire.session_encoder import ObservationEncoder

log = logging.getLogger(__name__)


class SessionNotFoundError(VectorWorldError, KeyError):
    """No live session has this id (never created, closed, or reaped)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SessionCapError(VectorWorldError):
    """The server already runs its maximum number of sessions."""


class SessionBusyError(VectorWorldError):
    """Another call held the session's lock for longer than the lock timeout."""


class SessionFailedError(VectorWorldError):
    """An earlier call raised an unexpected error inside this session; its state is not trustworthy."""


class ShuttingDownError(VectorWorldError):
    """The server is draining and accepts no new sessions."""


@dataclass
class ManagedSession:
    """A live session and its bookkeeping. ``lock`` serialises every call on the session."""

    id: str
    session: Session
    created_s: float
    last_used_s: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    tiles_seen: int = 0
    failure: str | None = None
    closed: bool = False
    encoder: ObservationEncoder = field(default_factory=ObservationEncoder, repr=False)
    """How this session's observations are encoded, with the state its deltas keep (used under ``lock``)."""


SessionFactory = Callable[[SessionConfig], Session]
StepListener = Callable[[ManagedSession, float, list[float]], None]
"""Called after every successful step: (session, engine step seconds, new tile latencies in ms)."""


class SessionManager:
    """Creates, steps, reaps and closes sessions. Thread-safe."""

    def __init__(self, max_sessions: int, idle_timeout_s: float, lock_timeout_s: float = 30.0,
                 factory: SessionFactory = Session, clock: Callable[[], float] = time.monotonic,
                 on_step: StepListener | None = None,
                 on_reaped: Callable[[list[str]], None] | None = None) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.lock_timeout_s = lock_timeout_s
        self.factory = factory
        self.clock = clock
        self.on_step = on_step
        self.on_reaped = on_reaped
        self._sessions: dict[str, ManagedSession] = {}
        self._reserved = 0
        self._lock = threading.Lock()
        self._draining = False
        self._reaper: threading.Thread | None = None
        self._stop_reaper = threading.Event()

    # ----------------------------------------------------------------- table
    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    @property
    def draining(self) -> bool:
        return self._draining

    def get(self, session_id: str) -> ManagedSession:
        with self._lock:
            managed = self._sessions.get(session_id)
        if managed is None:
            raise SessionNotFoundError(f"no session {session_id!r} (unknown, closed or reaped after "
                                       f"{self.idle_timeout_s:g} s idle)")
        return managed

    def list(self) -> list[ManagedSession]:
        """Live sessions, oldest first."""
        with self._lock:
            return sorted(self._sessions.values(), key=lambda m: (m.created_s, m.id))

    # ----------------------------------------------------------------- lifecycle
    def create(self, config: SessionConfig) -> tuple[ManagedSession, Observation]:
        """Build and reset a session. Raises SessionCapError, ShuttingDownError, or the engine's errors."""
        with self._lock:
            if self._draining:
                raise ShuttingDownError("the server is shutting down and accepts no new sessions")
            if len(self._sessions) + self._reserved >= self.max_sessions:
                raise SessionCapError(f"the server already runs {self.max_sessions} sessions (its cap); "
                                      f"close one or retry later")
            self._reserved += 1
        try:
            session = self.factory(config)
            obs = session.reset()
            now = self.clock()
            managed = ManagedSession(id=uuid.uuid4().hex, session=session, created_s=now, last_used_s=now,
                                     tiles_seen=len(session.metrics.tile_ms))
            with self._lock:
                self._sessions[managed.id] = managed
            return managed, obs
        finally:
            with self._lock:
                self._reserved -= 1

    def step(self, session_id: str, command: EgoCommand | None, expected_step: int,
             deliver: Callable[[ManagedSession, Observation], None] | None = None) -> Observation:
        """One step under the session's lock. Engine errors (CommandError, StepMismatchError,
        EpisodeFinishedError) pass through; any other error marks the session failed and re-raises.
        ``deliver`` runs after a successful step, still under the lock (encoding an observation whose
        lanes are a delta on the previous one must follow the session's step order)."""
        with self.locked(session_id) as managed:
            t0 = time.perf_counter()
            try:
                obs = managed.session.step(command, expected_step=expected_step)
            except VectorWorldError:
                raise
            except Exception as err:
                managed.failure = f"{type(err).__name__}: {err}"
                raise
            engine_s = time.perf_counter() - t0
            tiles = managed.session.metrics.tile_ms
            new_tiles, managed.tiles_seen = list(tiles[managed.tiles_seen:]), len(tiles)
            if self.on_step is not None:
                self.on_step(managed, engine_s, new_tiles)
            if deliver is not None:
                deliver(managed, obs)
            return obs

    def report(self, session_id: str, observe: bool = False
               ) -> tuple[ManagedSession, dict[str, Any], Observation | None]:
        """The session's report so far (and its current observation); works on failed sessions too."""
        with self.locked(session_id, allow_failed=True) as managed:
            obs = managed.session.observe() if observe else None
            return managed, managed.session.report(), obs

    def close(self, session_id: str) -> tuple[ManagedSession, dict[str, Any]]:
        """Remove the session (waiting for a call in flight on it) and return its final report."""
        managed = self.get(session_id)
        if not managed.lock.acquire(timeout=self.lock_timeout_s):
            raise SessionBusyError(f"session {session_id!r} is busy; close it again later")
        try:
            with self._lock:
                if self._sessions.pop(session_id, None) is None:
                    raise SessionNotFoundError(f"no session {session_id!r} (closed concurrently)")
            managed.closed = True
            report = managed.session.report()
            managed.session.close()
            return managed, report
        finally:
            managed.lock.release()

    def locked(self, session_id: str, allow_failed: bool = False) -> _Locked:
        """Context manager: the live session with its lock held (last use updated on entry and exit).
        Raises SessionFailedError for a failed session unless ``allow_failed``."""
        return _Locked(self, session_id, allow_failed)

    # ----------------------------------------------------------------- reaping and draining
    def reap(self, now: float | None = None) -> list[str]:
        """Close sessions idle for longer than ``idle_timeout_s``; a busy session is never reaped.
        Returns the ids closed."""
        now = self.clock() if now is None else now
        reaped = []
        for managed in self.list():
            if now - managed.last_used_s <= self.idle_timeout_s or not managed.lock.acquire(blocking=False):
                continue
            try:
                if now - managed.last_used_s > self.idle_timeout_s:
                    with self._lock:
                        self._sessions.pop(managed.id, None)
                    managed.closed = True
                    managed.session.close()
                    reaped.append(managed.id)
            finally:
                managed.lock.release()
        if reaped and self.on_reaped is not None:
            self.on_reaped(reaped)
        return reaped

    def start_reaper(self, interval_s: float, on_tick: Callable[[], None] | None = None) -> None:
        """Reap every ``interval_s`` seconds in a daemon thread until :meth:`shutdown`; ``on_tick`` runs
        after each round (housekeeping; its exceptions are logged, never stop the reaper)."""
        def loop() -> None:
            while not self._stop_reaper.wait(interval_s):
                self.reap()
                if on_tick is not None:
                    try:
                        on_tick()
                    except Exception:  # noqa: BLE001 - housekeeping must not end reaping
                        log.exception("reaper housekeeping failed")

        self._reaper = threading.Thread(target=loop, name="vectorworld-reaper", daemon=True)
        self._reaper.start()

    def drain(self) -> None:
        """Refuse new sessions from now on (calls on existing sessions continue)."""
        with self._lock:
            self._draining = True

    def shutdown(self) -> None:
        """Stop the reaper and close every session (waiting for calls in flight on them)."""
        self.drain()
        self._stop_reaper.set()
        if self._reaper is not None:
            self._reaper.join(timeout=5.0)
        for managed in self.list():
            try:
                self.close(managed.id)
            except (SessionNotFoundError, SessionBusyError):
                pass


class _Locked:
    def __init__(self, manager: SessionManager, session_id: str, allow_failed: bool) -> None:
        self.manager, self.session_id, self.allow_failed = manager, session_id, allow_failed
        self.managed: ManagedSession | None = None

    def __enter__(self) -> ManagedSession:
        managed = self.manager.get(self.session_id)
        if not managed.lock.acquire(timeout=self.manager.lock_timeout_s):
            raise SessionBusyError(f"session {self.session_id!r} is busy with another call "
                                   f"(waited {self.manager.lock_timeout_s:g} s)")
        if managed.closed:
            managed.lock.release()
            raise SessionNotFoundError(f"session {self.session_id!r} was closed")
        if managed.failure is not None and not self.allow_failed:
            managed.lock.release()
            raise SessionFailedError(f"session {self.session_id!r} failed earlier ({managed.failure}); "
                                     f"close it and create a new one")
        managed.last_used_s = self.manager.clock()
        self.managed = managed
        return managed

    def __exit__(self, *exc: object) -> None:
        if self.managed is None:
            return
        self.managed.last_used_s = self.manager.clock()
        self.managed.lock.release()
