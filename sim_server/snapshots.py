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
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vectorworld import __version__
from vectorworld.sim.session import Session

SNAPSHOT_VERSION = 1


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


SPLIT_DEPTH = 3
"""How deep a snapshot is cut into pieces (the session, its parts, their parts); see :func:`dumps`."""
_SPLIT, _WHOLE = "split", "whole"


def _splittable(obj: Any) -> bool:
    """One of this project's plain objects: state in ``__dict__``, pickled by ``object``'s default (no
    ``__reduce__``, ``__getstate__``, ``__setstate__`` or ``__slots__`` of its own)."""
    cls = type(obj)
    if isinstance(obj, type) or not hasattr(obj, "__dict__") or \
            not cls.__module__.startswith(("vectorworld.", "policies.")):
        return False
    if cls.__reduce_ex__ is not object.__reduce_ex__ or cls.__reduce__ is not object.__reduce__:
        return False
    return not any(name in vars(k) for k in cls.__mro__[:-1]
                   for name in ("__getstate__", "__setstate__", "__slots__", "__getnewargs__"))


def _new_shell(cls: type) -> Any:
    return cls.__new__(cls)


class _SplitPickler(_SessionPickler):
    """Writes a session as a sequence of pickles sharing one memo: a plain object near the root travels as
    an empty shell (memoized, so every other reference to it resolves to the same object) and then its
    attributes one by one. Between pieces the writer sleeps(0): pickling runs in C holding the GIL, and a
    10 MB session in one piece would hold it for tens of ms (the event loop's health checks wait for it)."""

    def __init__(self, file: Any) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._shell: Any = None
        self._shelled = False

    def reducer_override(self, obj: Any) -> Any:
        if obj is self._shell and self._shell is not None:
            self._shelled = True
            return _new_shell, (type(obj),)
        return super().reducer_override(obj)

    def dump_split(self, obj: Any, depth: int) -> None:
        if depth <= 0 or not _splittable(obj):
            self.dump(obj)
            self.dump(_WHOLE)
            return
        self._shell, self._shelled = obj, False
        self.dump(obj)  # an empty shell, or (met before, in an earlier piece) a reference to the whole object
        self._shell = None
        if not self._shelled:
            self.dump(_WHOLE)
            return
        self.dump(_SPLIT)
        items = list(vars(obj).items())
        self.dump(len(items))
        for name, value in items:
            self.dump(name)
            self.dump_split(value, depth - 1)
            time.sleep(0)  # let the event loop have the GIL between pieces


def _load_split(unpickler: pickle.Unpickler) -> Any:
    obj, tag = unpickler.load(), unpickler.load()
    if tag == _SPLIT:
        state = vars(obj)
        for _ in range(unpickler.load()):
            name = unpickler.load()
            state[name] = _load_split(unpickler)
    elif tag != _WHOLE:
        raise pickle.UnpicklingError(f"unexpected piece {tag!r}")
    return obj


def dumps(session: Session, reply: tuple[int, bytes, bytes] | None) -> bytes:
    """The pickled (session, reply), uncompressed: the reply, then the session cut into pieces up to
    :data:`SPLIT_DEPTH` deep (:class:`_SplitPickler`)."""
    buf = io.BytesIO()
    pickler = _SplitPickler(buf)
    pickler.dump(reply)
    pickler.dump_split(session, SPLIT_DEPTH)
    return buf.getvalue()


def loads(payload: bytes) -> tuple[Session, tuple[int, bytes, bytes] | None]:
    """The inverse of :func:`dumps`."""
    unpickler = pickle.Unpickler(io.BytesIO(payload))
    reply = unpickler.load()
    return _load_split(unpickler), reply


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
        session, reply = loads(zlib.decompress(payload))  # our own state dir (module docstring)
    except Exception as err:  # noqa: BLE001 - any failure: the snapshot is unusable
        raise SnapshotUnusable(f"{path}: does not unpickle: {type(err).__name__}: {err}") from err
    if not isinstance(session, Session) or session.step_index != header.get("step"):
        raise SnapshotUnusable(f"{path}: does not hold a session at step {header.get('step')}")
    return header, Snapshot(int(header["step"]), session, reply)
