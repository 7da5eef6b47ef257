"""Rebuild the sessions an earlier server run left in its state directory, by replaying their journals.

A journal is a session's resolved config and its applied commands (``sim_server/journal.py``); the engine
is deterministic per seed, so replaying them gives the same state, which each step's recorded digest
confirms. The last step is replayed with its observation encoded exactly as it was sent (the delta
encoders are first fed the observation before it), so the session again holds that step's reply: a client
whose reply was lost in the crash resends its request and gets the identical bytes.

With a usable snapshot (``sim_server/snapshots.py``) replay starts from it: at most ``snapshot_every``
steps per session, so recovery time is bounded however long the sessions ran. A snapshot that cannot be
trusted is ignored (the whole journal is replayed); it never makes a session lost.

A journal that cannot be read, whose config no longer loads, or whose replay diverges from a recorded
digest is renamed ``<id>.lost`` and the session reported lost (SessionLostError, DATA_LOSS on the wire).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from sim_server.journal import (
    SNAP_SUFFIX,
    JournalContents,
    JournalError,
    JournalStore,
    read_journal,
    state_digest,
)
from sim_server.managed import CachedReply, ManagedSession
from sim_server.sessions import SessionFactory
from sim_server.snapshots import Snapshot, SnapshotUnusable, read_snapshot
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.v1 import session_pb2, world_pb2
from vectorworld.wire import codec
from vectorworld.wire.session_encoder import ObservationEncoder

log = logging.getLogger(__name__)


class ReplayDivergedError(JournalError):
    """Replaying a journal did not reproduce the state it recorded."""


def replay(contents: JournalContents, factory: SessionFactory, clock: Callable[[], float],
           snapshot: Path | None = None) -> ManagedSession:
    """The session of a journal, at its last recorded step, holding that step's reply. Starts from
    ``snapshot`` (a ``.snap`` file) when it is usable (:func:`restore_snapshot`), else from the journal's
    first step. Raises JournalError (or the engine's errors) when it cannot be rebuilt."""
    header = contents.header
    session_id = str(header.get("id") or contents.path.stem)
    try:
        config = codec.config_from_json(json.dumps(header["config"]))
        encoding = {k: bool(v) for k, v in dict(header.get("encoding", {})).items()}
    except (KeyError, TypeError, ValueError) as err:
        raise JournalError(f"{contents.path}: the header's config does not load: {err}") from err
    steps = contents.steps
    restored = None if snapshot is None else restore_snapshot(snapshot, contents, config)
    if restored is None:
        session, start, kept = factory(config), 0, None
        session.reset()
    else:
        session, start, kept = restored.session, restored.step, restored.reply
    now = clock()
    managed = ManagedSession(id=session_id, session=session, created_s=now, last_used_s=now,
                             encoder=ObservationEncoder(**encoding))
    if start == len(steps):  # nothing after the snapshot (or no step at all): its observation is the base
        managed.encoder.encode(session.observe(), world_pb2.Observation())
        if kept is not None:
            managed.last_reply = CachedReply(*kept)
    for k in range(start, len(steps)):
        step = steps[k]
        command = codec.command_from_proto(session_pb2.EgoCommand.FromString(step.command)) if step.command \
            else None
        if k == len(steps) - 1:
            managed.encoder.encode(session.observe(), world_pb2.Observation())  # the reply's delta base
            reply = managed.encode_reply(session.step(command, expected_step=step.expected_step))
            managed.last_reply = CachedReply(step.expected_step, step.command, reply)
        else:
            session.advance(command, expected_step=step.expected_step)
        digest = state_digest(session)
        if digest != step.digest:
            raise ReplayDivergedError(f"{contents.path}: replay diverged at step {step.expected_step + 1} (state "
                                      f"digest {digest:08x}, journal {step.digest:08x}); the engine, its models "
                                      f"or the scenario file changed since the session was journaled")
    managed.tiles_seen = len(session.metrics.tile_ms)
    managed.recovery_replayed, managed.recovery_snapshot = len(steps) - start, restored is not None
    return managed


def restore_snapshot(path: Path, contents: JournalContents, config: SessionConfig) -> Snapshot | None:
    """The snapshot at ``path`` if it can be trusted: it reads back (CRC, version), holds a session of the
    journal's config at a step the journal reached, its restored state digest equals the one it recorded
    and the journal's digest of that step, and its kept reply is the journal's last command. None (with a
    log line) otherwise: recovery then replays from the start."""
    if not path.exists():
        return None
    try:
        header, snap = read_snapshot(path)
        steps = contents.steps
        digest = state_digest(snap.session)
        if snap.step > len(steps):
            raise SnapshotUnusable(f"at step {snap.step}, beyond the journal's {len(steps)} steps")
        if snap.session.config != config:
            raise SnapshotUnusable("its session's config differs from the journal's")
        if digest != header["digest"] or (snap.step > 0 and digest != steps[snap.step - 1].digest):
            raise SnapshotUnusable(f"its state (digest {digest:08x}) is not the journal's at step {snap.step}")
        if snap.step > 0 and (snap.reply is None or snap.reply[:2] != (snap.step - 1, steps[snap.step - 1].command)):
            raise SnapshotUnusable("its kept reply is not the one of the journal's step")
        return snap
    except (SnapshotUnusable, KeyError, TypeError) as err:
        log.warning("snapshot %s not used (replaying the whole journal): %s", path, err)
        return None


def recover_one(path: Path, store: JournalStore, factory: SessionFactory, clock: Callable[[], float]
                ) -> tuple[str, ManagedSession | None, str | None]:
    """(session id, the rebuilt session or None, why it is lost). Never raises for a bad journal."""
    session_id = path.stem
    try:
        contents = read_journal(path)
        session_id = str(contents.header.get("id") or session_id)
        managed = replay(contents, factory, clock, path.with_suffix(SNAP_SUFFIX))
        managed.journal = store.reopen(contents)
        return session_id, managed, None
    except Exception as err:  # noqa: BLE001 - any failure makes this one session lost, not the server
        lost = store.mark_lost(path)
        reason = f"{type(err).__name__}: {err} (journal kept as {lost})"
        log.error("session %s lost: %s", session_id, reason)
        return session_id, None, reason


def lost_from_earlier_runs(store: JournalStore) -> dict[str, str]:
    """Sessions an earlier run already found unrecoverable (their ``.lost`` files)."""
    return {path.stem: f"its journal could not be replayed at an earlier restart (kept as {path})"
            for path in store.lost()}


def journal_to_recording(path: Path, out: Path, factory: SessionFactory = Session) -> Path:
    """Replay a journal into a recording file (``vectorworld/wire/recording.py``, no timings): the episode
    the session ran so far, frame by frame, with its report. Raises JournalError when it diverges."""
    from vectorworld.wire.recording import RecordingWriter

    contents = read_journal(path)
    session = factory(codec.config_from_json(json.dumps(contents.header["config"])))
    session.reset()
    with RecordingWriter(out, session.config) as writer:
        writer.write_frame(session.frame())
        for step in contents.steps:
            command = codec.command_from_proto(session_pb2.EgoCommand.FromString(step.command))
            session.advance(command, expected_step=step.expected_step)
            if state_digest(session) != step.digest:
                raise ReplayDivergedError(f"{path}: replay diverged at step {step.expected_step + 1}")
            writer.write_frame(session.frame())
        return writer.close(session.report())
