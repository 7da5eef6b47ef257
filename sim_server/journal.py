"""Session journals: one append-only file per live session, so a restarted server can rebuild it.

The engine is deterministic per seed, so a session *is* its config plus the commands applied to it. A
journal (``<state dir>/<session id>.journal``) is JSON lines:

* line 1, the header: ``{"journal": 1, "id", "config" (the resolved SessionConfig as JSON), "encoding"
  {"lane_delta", "agent_table", "history_delta"}, "created_unix", "vectorworld"}``;
* then one line per applied step: ``{"n": step index before the step, "c": the EgoCommand message,
  base64 (empty: the built-in planner), "h": CRC-32 of the engine state after the step}``.

Each line goes to the file with one ``write`` before the step's reply is sent, so everything a client has
seen survives ``kill -9`` of the server (the data is in the OS page cache). ``fsync`` runs in batches,
every ``fsync_interval_s`` on a background thread and at close: a power loss or OS crash can lose the last
interval's steps; a line cut short by one is dropped on replay. A closed or reaped session's journal is
deleted; a journal that cannot be replayed to the state it recorded is renamed ``<id>.lost`` (kept for
inspection, reported as lost, never retried).

Snapshots (``sim_server/snapshots.py``): beside each journal the store keeps ``<id>.snap``, the session's
state at its latest snapshot step (every ``snapshot_every`` steps and at step 0), so recovery replays only
the journal's steps after it. The engine thread captures the state under the session's lock; compressing
and writing it runs on the store's snapshot thread (a bounded queue: when it is full a snapshot is
skipped, never waited for). Removing a journal (its session closed or reaped) waits for a snapshot of it
being written and then deletes both, so no snapshot outlives its session. The journal itself always keeps
every step, so a missing or unusable snapshot only makes recovery slower.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import queue
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vectorworld import __version__
from vectorworld.errors import VectorWorldError
from vectorworld.sim.session import Session

if TYPE_CHECKING:
    from sim_server.snapshots import Capture

log = logging.getLogger(__name__)
JOURNAL_VERSION = 1
SUFFIX, LOST_SUFFIX, SNAP_SUFFIX = ".journal", ".lost", ".snap"
SNAPSHOT_QUEUE = 8
"""Captured snapshots waiting to be written (each holds a session's uncompressed state, ~10 MB)."""


class JournalError(VectorWorldError):
    """A journal file cannot be read or written (the message names the file and what is wrong)."""


def state_digest(session: Session) -> int:
    """CRC-32 of the step index and every valid agent's id, pose and speed: what replay must reproduce."""
    agents = session.agents
    valid = np.asarray(agents.valid, bool)
    crc = zlib.crc32(np.int64(session.step_index).tobytes())
    for column in (agents.id, agents.xy, agents.yaw, agents.speed):
        crc = zlib.crc32(np.ascontiguousarray(np.asarray(column)[valid]).tobytes(), crc)
    return crc


@dataclass(frozen=True)
class JournalStep:
    expected_step: int
    command: bytes
    """The serialized EgoCommand (empty: the built-in planner drove)."""
    digest: int


@dataclass(frozen=True)
class JournalContents:
    path: Path
    header: dict[str, Any]
    steps: tuple[JournalStep, ...]
    torn_tail: bool
    """The last line was cut short (a crash during a write); it was dropped."""


class SessionJournal:
    """The open journal of one session. Not thread-safe by itself: used under the session's lock."""

    def __init__(self, path: Path, fd: int, store: JournalStore) -> None:
        self.path, self._fd, self._store = path, fd, store
        self._dirty = False
        self.removed = False
        self.snapshot_lock = threading.Lock()
        """Held while the snapshot thread writes this journal's snapshot, and by :meth:`remove`."""

    @property
    def snapshot_path(self) -> Path:
        return self.path.with_suffix(SNAP_SUFFIX)

    def snapshot_due(self, step: int) -> bool:
        """Whether the session's state at ``step`` should be snapshotted."""
        every = self._store.snapshot_every
        return every > 0 and step % every == 0

    def snapshot(self, capture: Capture) -> bool:
        """Queue ``capture`` to be written as this session's snapshot; False when the queue is full."""
        return self._store.queue_snapshot(self, capture)

    def append_step(self, expected_step: int, command: bytes, digest: int) -> None:
        self._write({"n": expected_step, "c": base64.b64encode(command).decode("ascii"), "h": digest})

    def _write(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        if os.write(self._fd, data) != len(data):
            raise JournalError(f"{self.path}: short write (disk full?)")
        self._dirty = True

    def sync(self) -> None:
        if self._dirty and self._fd >= 0:
            self._dirty = False
            os.fsync(self._fd)

    def close(self) -> None:
        """fsync and close the file (it stays on disk: the next start recovers the session)."""
        if self._fd >= 0:
            self.sync()
            os.close(self._fd)
            self._fd = -1
        self._store.forget(self)

    def remove(self) -> None:
        """Close and delete, with its snapshot (the session was closed or reaped)."""
        self.removed = True
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._store.forget(self)
        with self.snapshot_lock:  # a snapshot being written finishes first: none outlives the removal
            self.path.unlink(missing_ok=True)
            self.snapshot_path.unlink(missing_ok=True)


class JournalStore:
    """The state directory: creates journals, lists the ones left by an earlier run, fsyncs in batches."""

    def __init__(self, root: Path, fsync_interval_s: float = 0.2, snapshot_every: int = 0) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as err:
            raise JournalError(f"state directory {self.root}: {err.strerror or err}") from err
        if not os.access(self.root, os.W_OK):
            raise JournalError(f"state directory {self.root} is not writable")
        self.fsync_interval_s = fsync_interval_s
        self.snapshot_every = snapshot_every
        self.snapshots_written = 0
        self.snapshots_skipped = 0
        self._snapshots: queue.Queue[tuple[SessionJournal, Capture] | None] = queue.Queue(SNAPSHOT_QUEUE)
        self._writer: threading.Thread | None = None
        self._open: set[SessionJournal] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None

    def create(self, session_id: str, config_json: str, encoding: dict[str, bool]) -> SessionJournal:
        path = self.root / f"{session_id}{SUFFIX}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        journal = SessionJournal(path, fd, self)
        journal._write({"journal": JOURNAL_VERSION, "id": session_id, "config": json.loads(config_json),
                        "encoding": encoding, "created_unix": round(time.time(), 3), "vectorworld": __version__})
        with self._lock:
            self._open.add(journal)
        return journal

    def reopen(self, contents: JournalContents) -> SessionJournal:
        """Append to a journal read back by :func:`read_journal` (a recovered session)."""
        if contents.torn_tail:  # cut the torn line so the next append starts on a line of its own
            data = contents.path.read_bytes()
            with contents.path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)
        fd = os.open(contents.path, os.O_WRONLY | os.O_APPEND)
        journal = SessionJournal(contents.path, fd, self)
        with self._lock:
            self._open.add(journal)
        return journal

    def pending(self) -> list[Path]:
        """Journals an earlier run left behind (sessions to recover), oldest first."""
        return sorted(self.root.glob(f"*{SUFFIX}"), key=lambda p: (p.stat().st_mtime, p.name))

    def lost(self) -> list[Path]:
        return sorted(self.root.glob(f"*{LOST_SUFFIX}"))

    def mark_lost(self, path: Path) -> Path:
        target = path.with_suffix(LOST_SUFFIX)
        path.replace(target)
        path.with_suffix(SNAP_SUFFIX).unlink(missing_ok=True)
        return target

    def remove_orphan_snapshots(self) -> int:
        """Delete snapshots whose journal is gone (a crash between the two deletions); returns how many."""
        orphans = [p for p in self.root.glob(f"*{SNAP_SUFFIX}") if not p.with_suffix(SUFFIX).exists()]
        orphans += list(self.root.glob(f"*{SNAP_SUFFIX}.tmp"))
        for path in orphans:
            path.unlink(missing_ok=True)
        return len(orphans)

    def queue_snapshot(self, journal: SessionJournal, capture: Capture) -> bool:
        try:
            self._snapshots.put_nowait((journal, capture))
            return True
        except queue.Full:
            self.snapshots_skipped += 1
            return False

    def _write_snapshots(self) -> None:
        while (item := self._snapshots.get()) is not None:
            journal, capture = item
            with journal.snapshot_lock:
                if journal.removed:  # closed since it was queued
                    continue
                try:
                    capture.write(journal.snapshot_path)
                    self.snapshots_written += 1
                except OSError as err:  # only a shortcut: recovery replays the journal instead
                    log.warning("snapshot %s: %s", journal.snapshot_path, err)

    def forget(self, journal: SessionJournal) -> None:
        with self._lock:
            self._open.discard(journal)

    def sync_all(self) -> None:
        with self._lock:
            journals = list(self._open)
        for journal in journals:
            try:
                journal.sync()
            except OSError as err:  # closed concurrently, or the disk went away: keep flushing the rest
                log.warning("journal %s: fsync failed: %s", journal.path, err)

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.fsync_interval_s):
                self.sync_all()

        self._flusher = threading.Thread(target=loop, name="vectorworld-journal", daemon=True)
        self._flusher.start()
        self._writer = threading.Thread(target=self._write_snapshots, name="vectorworld-snapshots", daemon=True)
        self._writer.start()

    def stop(self) -> None:
        """Stop the flusher and close (fsync) every open journal; the files stay for the next start."""
        self._stop.set()
        if self._flusher is not None:
            self._flusher.join(timeout=5.0)
        if self._writer is not None:  # the snapshots already queued are written first
            self._snapshots.put(None)
            self._writer.join(timeout=30.0)
        with self._lock:
            journals = list(self._open)
        for journal in journals:
            journal.close()


def read_journal(path: Path) -> JournalContents:
    """Parse a journal. A last line cut short is dropped (``torn_tail``); any other damage raises
    JournalError naming the file and line."""
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as err:
        raise JournalError(f"{path}: {err.strerror or err}") from err
    torn = lines[-1] != b""  # a complete file ends with a newline
    if torn:
        lines = lines[:-1]
    else:
        lines = lines[:-1]
    if not lines:
        raise JournalError(f"{path}: empty journal (no header)")
    try:
        header = json.loads(lines[0])
    except ValueError as err:
        raise JournalError(f"{path}: line 1 (header) is not JSON: {err}") from err
    if not isinstance(header, dict) or header.get("journal") != JOURNAL_VERSION:
        raise JournalError(f"{path}: not a version-{JOURNAL_VERSION} session journal")
    steps = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            record = json.loads(line)
            step = JournalStep(int(record["n"]), base64.b64decode(record["c"], validate=True), int(record["h"]))
        except (ValueError, KeyError, TypeError) as err:
            raise JournalError(f"{path}: line {number} is not a step record: {err}") from err
        if step.expected_step != len(steps):
            raise JournalError(f"{path}: line {number} records step {step.expected_step}, expected "
                               f"{len(steps)} (a step missing or applied twice)")
        steps.append(step)
    return JournalContents(path, header, tuple(steps), torn)
