"""The session manager: live sessions by id, a cap, per-session locking, idle reaping, draining.

Plain Python, no grpc: the servicer maps the exceptions raised here to status codes. Each session is the
same :class:`~vectorworld.sim.session.Session` that ``vectorworld rollout`` runs, so a served episode and
a local one with the same config and commands are identical.

Concurrency: the manager's own lock guards the table only; work on a session (reset, step, close) runs
under that session's lock, so different sessions step in parallel and one session's calls are
serialised. A second call on a busy session waits up to ``lock_timeout_s`` then fails with SessionBusy.

Exactly-once steps: a session keeps the serialized reply of its last step (with the command that made it)
until the client acknowledges it by asking for the next step. A request that names the step just applied
(``expected_step`` = current step - 1) with the same command gets that very reply again, so a client that
lost a reply can resend its request without the step being applied twice (a different command for an
applied step is a conflict: StepMismatchError).

Durability: with a :class:`~sim_server.journal.JournalStore`, every created session gets a journal and every
applied step is appended to it before its reply leaves (and every ``snapshot_every`` steps its state is
snapshotted, ``sim_server/snapshots.py``); :meth:`SessionManager.recover` rebuilds the
sessions an earlier run left (``sim_server/recovery.py``). A session that cannot be rebuilt is *lost*:
calls on it raise SessionLostError (never a silent NOT_FOUND).

The session record (:class:`~sim_server.managed.ManagedSession`) and the errors raised here live in
``sim_server/managed.py``; they are re-exported from this module.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from sim_server import snapshots
from sim_server.journal import JournalStore, state_digest
from sim_server.managed import (
    CachedReply,
    ManagedSession,
    SessionBusyError,
    SessionCapError,
    SessionFailedError,
    SessionLostError,
    SessionNotFoundError,
    SessionRecoveringError,
    ShuttingDownError,
)
from vectorworld.errors import StepMismatchError, VectorWorldError
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.observation import Observation
from vectorworld.sim.session import Session
from vectorworld.vehicle.commands import EgoCommand
from vectorworld.wire import codec
from vectorworld.wire.session_encoder import ObservationEncoder

__all__ = ["CachedReply", "ManagedSession", "SessionBusyError", "SessionCapError", "SessionFailedError",
           "SessionLostError", "SessionManager", "SessionNotFoundError", "SessionRecoveringError",
           "ShuttingDownError"]

log = logging.getLogger(__name__)

SessionFactory = Callable[[SessionConfig], Session]
GONE_REMEMBERED = 10_000
"""How many closed / reaped session ids the manager remembers, to say why one is gone."""
StepListener = Callable[[ManagedSession, float, list[float]], None]
"""Called after every successful step: (session, engine step seconds, new tile latencies in ms)."""


class SessionManager:
    """Creates, steps, reaps and closes sessions. Thread-safe."""

    def __init__(self, max_sessions: int, idle_timeout_s: float, lock_timeout_s: float = 30.0,
                 factory: SessionFactory = Session, clock: Callable[[], float] = time.monotonic,
                 on_step: StepListener | None = None,
                 on_reaped: Callable[[list[str]], None] | None = None,
                 journals: JournalStore | None = None) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.lock_timeout_s = lock_timeout_s
        self.factory = factory
        self.clock = clock
        self.on_step = on_step
        self.on_reaped = on_reaped
        self.journals = journals
        self.started_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        self._sessions: dict[str, ManagedSession] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()  # id -> why it is gone (closed, reaped)
        self._lost: dict[str, str] = {}  # id -> why it could not be recovered after a restart
        self._recovering: set[str] = set()
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
            if managed is not None:
                return managed
            gone, lost = self._gone.get(session_id), self._lost.get(session_id)
            recovering = session_id in self._recovering
        if recovering:
            raise SessionRecoveringError(f"session {session_id!r} is being rebuilt from its journal after a "
                                         f"server restart; retry shortly")
        if lost is not None:
            raise SessionLostError(f"session {session_id!r} was lost when the server restarted: {lost}")
        if gone is not None:
            raise SessionNotFoundError(f"no session {session_id!r}: {gone}")
        durability = ("sessions survive restarts (journal), so it was never created here, or was closed or "
                      "reaped before that" if self.journals is not None else
                      "it runs without a journal, so the session may also have been lost at that restart")
        raise SessionNotFoundError(f"no session {session_id!r}: unknown to this server (started "
                                   f"{self.started_at}; {durability})")

    def _forget(self, session_id: str, why: str) -> None:
        """Under ``_lock``: remember why a session is gone."""
        self._gone[session_id] = why
        while len(self._gone) > GONE_REMEMBERED:
            self._gone.popitem(last=False)

    def list(self) -> list[ManagedSession]:
        """Live sessions, oldest first."""
        with self._lock:
            return sorted(self._sessions.values(), key=lambda m: (m.created_s, m.id))

    # ----------------------------------------------------------------- lifecycle
    def create(self, config: SessionConfig, encoder: ObservationEncoder | None = None
               ) -> tuple[ManagedSession, Observation]:
        """Build and reset a session (observations encoded by ``encoder``, default: complete) and open its
        journal. Raises SessionCapError, ShuttingDownError, or the engine's errors."""
        with self._lock:
            if self._draining:
                raise ShuttingDownError("the server is shutting down and accepts no new sessions")
            if len(self._sessions) + len(self._recovering) + self._reserved >= self.max_sessions:
                raise SessionCapError(f"the server already runs {self.max_sessions} sessions (its cap); "
                                      f"close one or retry later")
            self._reserved += 1
        try:
            session = self.factory(config)
            obs = session.reset()
            now = self.clock()
            managed = ManagedSession(id=uuid.uuid4().hex, session=session, created_s=now, last_used_s=now,
                                     tiles_seen=len(session.metrics.tile_ms))
            if encoder is not None:
                managed.encoder = encoder
            if self.journals is not None:
                managed.journal = self.journals.create(managed.id, codec.config_to_json(session.config),
                                                       managed.encoding)
                self._snapshot(managed)
            with self._lock:
                self._sessions[managed.id] = managed
            return managed, obs
        finally:
            with self._lock:
                self._reserved -= 1

    def step(self, session_id: str, command: EgoCommand | None, expected_step: int,
             deliver: Callable[[ManagedSession, Observation], None] | None = None,
             command_key: bytes | None = None) -> Observation:
        """One step under the session's lock. Engine errors (CommandError, StepMismatchError,
        EpisodeFinishedError) pass through; any other error marks the session failed and re-raises.
        The step is journaled (``command_key``: the serialized EgoCommand; default: ``command`` encoded)
        before ``deliver`` runs, still under the lock (encoding an observation whose lanes are a delta on the
        previous one must follow the session's step order)."""
        with self.locked(session_id) as managed:
            return self._step_locked(managed, command, expected_step, deliver, command_key)

    def step_reply(self, session_id: str, command: EgoCommand | None, expected_step: int,
                   command_key: bytes) -> tuple[bytes, bool]:
        """Exactly-once step: (serialized reply, whether it is the kept reply of a step already applied).
        A request for the step just applied with the same command answers that step's reply again."""
        with self.locked(session_id, allow_failed=True) as managed:
            cached = managed.last_reply
            if cached is not None and cached.expected_step == expected_step \
                    and managed.session.step_index == expected_step + 1:
                if cached.command != command_key:
                    raise StepMismatchError(f"step {expected_step} was already applied with another command; "
                                            f"the session is at step {managed.session.step_index}")
                return cached.reply, True
            if managed.failure is not None:
                raise SessionFailedError(f"session {session_id!r} failed earlier ({managed.failure}); "
                                         f"close it and create a new one")
            out: list[bytes] = []
            self._step_locked(managed, command, expected_step, lambda m, obs: out.append(m.encode_reply(obs)),
                              command_key)
            managed.last_reply = CachedReply(expected_step, command_key, out[0])
            self._snapshot(managed)
            return out[0], False

    def _snapshot(self, managed: ManagedSession) -> None:
        """Under the session's lock: queue a snapshot of its state (with the kept reply) if one is due."""
        journal = managed.journal
        if journal is None or not journal.snapshot_due(managed.session.step_index):
            return
        reply = managed.last_reply
        kept = None if reply is None else (reply.expected_step, reply.command, reply.reply)
        try:
            journal.snapshot(snapshots.capture(managed.session, state_digest(managed.session), kept))
        except Exception:  # noqa: BLE001 - a snapshot is a shortcut: the session goes on without it
            log.exception("session %s: snapshot at step %d failed", managed.id, managed.session.step_index)

    def _step_locked(self, managed: ManagedSession, command: EgoCommand | None, expected_step: int,
                     deliver: Callable[[ManagedSession, Observation], None] | None,
                     command_key: bytes | None) -> Observation:
        t0 = time.perf_counter()
        try:
            obs = managed.session.step(command, expected_step=expected_step)
        except VectorWorldError:
            raise
        except Exception as err:
            managed.failure = f"{type(err).__name__}: {err}"
            raise
        engine_s = time.perf_counter() - t0
        managed.last_reply = None  # the client asked for a later step: it holds the previous reply
        if managed.journal is not None:
            key = codec.command_to_proto(command).SerializeToString() if command_key is None else command_key
            try:
                managed.journal.append_step(expected_step, key, state_digest(managed.session))
            except OSError as err:  # the step is applied but not durable: the session cannot be trusted
                managed.failure = f"journal write failed: {err}"
                raise
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
                self._forget(session_id, "closed by CloseSession")
            managed.closed = True
            report = managed.session.report()
            managed.session.close()
            if managed.journal is not None:
                managed.journal.remove()
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
                        self._forget(managed.id, f"reaped after {self.idle_timeout_s:g} s idle")
                    managed.closed = True
                    managed.session.close()
                    if managed.journal is not None:
                        managed.journal.remove()
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

    def shutdown(self) -> int:
        """Stop the reaper and end every session (waiting for calls in flight on them). Journaled sessions
        keep their journals (fsync'd), so the next start rebuilds them. Returns the number ended."""
        self.drain()
        self._stop_reaper.set()
        if self._reaper is not None:
            self._reaper.join(timeout=5.0)
        ended = 0
        for managed in self.list():
            if not managed.lock.acquire(timeout=self.lock_timeout_s):
                continue
            try:
                with self._lock:
                    if self._sessions.pop(managed.id, None) is None:
                        continue
                    self._forget(managed.id, "ended by a server shutdown")
                managed.closed = True
                managed.session.close()
                if managed.journal is not None:
                    managed.journal.close()
                ended += 1
            finally:
                managed.lock.release()
        if self.journals is not None:
            self.journals.stop()
        return ended

    # ----------------------------------------------------------------- recovery bookkeeping
    def begin_recovery(self, session_id: str) -> None:
        with self._lock:
            self._recovering.add(session_id)

    def end_recovery(self, session_id: str, managed: ManagedSession | None, lost: str | None = None) -> None:
        """Publish a rebuilt session, or record it as lost with the reason."""
        with self._lock:
            self._recovering.discard(session_id)
            if managed is not None:
                self._sessions[session_id] = managed
            else:
                self._lost[session_id] = lost or "its journal could not be replayed"

    @property
    def lost(self) -> dict[str, str]:
        """Sessions that could not be rebuilt after a restart: id -> reason."""
        with self._lock:
            return dict(self._lost)


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
