"""Session snapshots: the whole engine state of a session at one step, so recovery replays only the steps
after it.

A journal (``sim_server/journal.py``) holds every applied command since the session began; replaying all of
them after a restart takes as long as the session has run. Every ``snapshot_every`` steps (and right after
CreateSession) the server therefore writes ``<state dir>/<id>.snap`` beside the journal: the pickled
:class:`~vectorworld.sim.session.Session` (world, agents, routes, RNG states, metrics, scorer, planner and NPC
policy state) with the step's kept reply. The engine is deterministic, so stepping the restored session with
the journal's later commands reproduces the uninterrupted run byte for byte (``tests/sim_server/
test_snapshots.py`` checks recordings and reports against an uninterrupted run).

File: one JSON header line ``{"snapshot": 1, "step", "digest" (state digest at that step), "crc" (CRC-32 of the
payload), "bytes", "vectorworld"}``, then the pickle payload. Written to ``<id>.snap.tmp`` and renamed over
the previous snapshot (no fsync: a snapshot is only a shortcut). Recovery trusts a snapshot only if its CRC
matches, it unpickles, its restored state digest equals the header's and the journal's record of that step;
otherwise it replays the journal from the start (never a lost session because of a snapshot).

The payload is a pickle, read only from the server's own state directory (mode 0700, the same trust as the
journals); it is tied to the code version that wrote it (a different ``vectorworld`` version: not used).
"""

from __future__ import annotations

import functools
import io
import json
import os
import pickle
import sys
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vectorworld import __version__
from vectorworld.sim.session import Session

SNAPSHOT_VERSION = 1
SNAP_SUFFIX = ".snap"


@dataclass(frozen=True)
class Snapshot:
    """A restored snapshot: the session at ``step`` and the reply of the step that led there (if any)."""

    step: int
    session: Session
    reply: tuple[int, bytes, bytes] | None
    """(expected_step, command bytes, reply bytes) of the kept reply at that step; None at step 0."""


def _rebuild_cache(method: Any, maxsize: int | None, typed: bool) -> Any:
    return functools.lru_cache(maxsize=maxsize, typed=typed)(method)


def _rebuild_script(data: bytes) -> Any:
    import torch

    with warnings.catch_warnings():  # torch.jit is deprecated in favour of torch.export; the trace is jit
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.jit.load(io.BytesIO(data))


class _SessionPickler(pickle.Pickler):
    """Pickles a session. Two kinds of objects need help: an ``lru_cache`` around a bound method (a
    per-object memo, e.g. the city plan's) is not importable by name, so it is rebuilt empty around the same
    method (the caches are pure); a TorchScript module (e.g. the traced ΔSim scorer) has no pickle support,
    so it travels as ``torch.jit.save`` bytes. Plain ``torch.nn.Module``s pickle with their weights."""

    def reducer_override(self, obj: Any) -> Any:
        wrapped = getattr(obj, "__wrapped__", None)
        if isinstance(obj, functools._lru_cache_wrapper) and hasattr(wrapped, "__self__"):
            params = obj.cache_parameters()
            return _rebuild_cache, (wrapped, params["maxsize"], params["typed"])
        torch = sys.modules.get("torch")  # no torch imported: no model in the session
        if torch is not None and isinstance(obj, torch.jit.ScriptModule):
            buf = io.BytesIO()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                torch.jit.save(obj, buf)
            return _rebuild_script, (buf.getvalue(),)
        return NotImplemented


def dumps(session: Session, reply: tuple[int, bytes, bytes] | None) -> bytes:
    """The pickled (session, reply) (uncompressed)."""
    buf = io.BytesIO()
    _SessionPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump((session, reply))
    return buf.getvalue()


@dataclass(frozen=True)
class Capture:
    """A session's state captured under its lock (the cheap part); :meth:`write` compresses and stores it
    (the slow part, off the engine thread: zlib releases the GIL)."""

    step: int
    digest: int
    payload: bytes

    def write(self, path: Path) -> int:
        """Write to ``path`` atomically (``.tmp`` then rename, no fsync); returns the file size."""
        data = zlib.compress(self.payload, 1)
        header = {"snapshot": SNAPSHOT_VERSION, "step": self.step, "digest": self.digest, "crc": zlib.crc32(data),
                  "bytes": len(data), "vectorworld": __version__}
        blob = json.dumps(header, separators=(",", ":")).encode() + b"\n" + data
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(blob)
        os.replace(tmp, path)
        return len(blob)


def capture(session: Session, digest: int, reply: tuple[int, bytes, bytes] | None) -> Capture:
    """The state of ``session`` now (state digest ``digest``) and the kept reply of its last step."""
    return Capture(session.step_index, digest, dumps(session, reply))


class SnapshotUnusable(Exception):  # noqa: N818 - internal: recovery falls back to a full replay
    """The snapshot cannot be trusted (the message says why)."""


def read_snapshot(path: Path) -> tuple[dict[str, Any], Snapshot]:
    """(header, restored snapshot); SnapshotUnusable when the file is missing, damaged or from another
    version. The caller checks the restored state against the journal."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise SnapshotUnusable(f"{path}: {err.strerror or err}") from err
    line, sep, payload = data.partition(b"\n")
    try:
        header = json.loads(line)
        ok = bool(sep) and isinstance(header, dict) and header.get("snapshot") == SNAPSHOT_VERSION
    except ValueError as err:
        raise SnapshotUnusable(f"{path}: the header is not JSON") from err
    if not ok or header.get("vectorworld") != __version__:
        raise SnapshotUnusable(f"{path}: not a version-{SNAPSHOT_VERSION} snapshot of vectorworld {__version__}")
    if len(payload) != header.get("bytes") or zlib.crc32(payload) != header.get("crc"):
        raise SnapshotUnusable(f"{path}: the payload is damaged (size or CRC-32 differs)")
    try:
        session, reply = pickle.loads(zlib.decompress(payload))  # our own state dir (module docstring)
    except Exception as err:  # noqa: BLE001 - any failure: the snapshot is unusable
        raise SnapshotUnusable(f"{path}: does not unpickle: {type(err).__name__}: {err}") from err
    if not isinstance(session, Session) or session.step_index != header.get("step"):
        raise SnapshotUnusable(f"{path}: does not hold a session at step {header.get('step')}")
    return header, Snapshot(int(header["step"]), session, reply)
