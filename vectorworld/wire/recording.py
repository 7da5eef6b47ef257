"""Recording files: one episode, step by step, for replay in the debugger and for regression diffs.

File layout (format version 1; all integers little-endian):

====================  =============================================================================
bytes 0-7             magic ``b"\\x89VWR\\r\\n\\x1a\\n"`` (PNG-style: catches text-mode and 7-bit damage)
bytes 8-11            uint32 format version (:data:`FORMAT_VERSION`)
then, repeated        uvarint length L, L bytes of a ``vectorworld.v1.Record`` message, uint32 CRC-32
                      (zlib) of those L bytes
====================  =============================================================================

The records are: one ``RecordingHeader`` (format version, package version, the config both as the wire
message and as the complete resolved JSON, seed, flags), then one ``Frame`` per step (the session's
:meth:`~vectorworld.sim.session.Session.frame` after reset and after every step: valid agents with slot and
controller, new tiles and their lanes, removed lanes, ego plan, step metrics, end reason), then optionally
one ``EpisodeReport``. See ``proto/vectorworld/v1/recording.proto`` and ``world.proto`` for the fields.

Determinism: a recording holds no wall-clock values by default, so the same seed and commands give a
byte-identical file. Wall-clock measurements (per-step tile and NPC-policy milliseconds, per-tile latency,
the report's ``wall_s``/``rtf``/``tile_ms_*``/``npc_policy_ms``) are written only with
``include_timings=True`` (into ``Frame.timings`` and the report); such files are identical except in
those fields. Agent history is redundant with the previous frames and is omitted unless
``include_history=True`` (the reader then gives each agent its current state as its only history entry).

Writing is atomic: frames go to a temporary file next to the target, renamed onto it by :meth:`close`.
A file cut short (a copy interrupted, a disk full) reads back up to its last complete record with
``truncated=True``; a wrong magic, an unsupported version or a corrupt record raise
:class:`~vectorworld.errors.RecordingError`.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from google.protobuf.message import DecodeError

from vectorworld import __version__
from vectorworld.errors import RecordingError
from vectorworld.files import AtomicFile
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.observation import Frame
from vectorworld.v1 import recording_pb2
from vectorworld.wire import codec
from vectorworld.wire.varint import encode_varint, read_varint

MAGIC = b"\x89VWR\r\n\x1a\n"
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)
_VERSION = struct.Struct("<I")
_CRC = struct.Struct("<I")


@dataclass(frozen=True)
class RecordingHeader:
    """What the first record says: the episode config and how the file was written."""

    format_version: int
    vectorworld_version: str
    config: SessionConfig
    seed: int
    has_timings: bool
    has_history: bool


@dataclass
class Recording:
    """A recording read back: header, frames in step order, the report if one was written.

    truncated: the file ended inside a record (frames hold everything up to the last complete one).
    """

    path: Path
    header: RecordingHeader
    frames: list[Frame] = field(default_factory=list)
    report: dict[str, Any] | None = None
    truncated: bool = False


class RecordingWriter:
    """Writes a recording; use as a context manager or call :meth:`close` (or :meth:`abort`).

    >>> with RecordingWriter(path, session.config) as rec:   # doctest: +SKIP
    ...     rec.write_frame(session.frame())
    """

    def __init__(self, path: str | os.PathLike[str], config: SessionConfig, include_timings: bool = False,
                 include_history: bool = False) -> None:
        self.path = Path(path)
        self.include_timings = include_timings
        self.include_history = include_history
        self.frames_written = 0
        directory = self.path.parent if str(self.path.parent) else Path(".")
        if not directory.is_dir():
            raise RecordingError(f"cannot write recording {self.path}: directory {directory} does not exist")
        self._out = AtomicFile(self.path, "wb", suffix=".partial")
        self._file = self._out.file
        self._file.write(MAGIC + _VERSION.pack(FORMAT_VERSION))
        record = recording_pb2.Record()
        header = record.header
        header.format_version = FORMAT_VERSION
        header.vectorworld_version = __version__
        header.config.CopyFrom(codec.config_to_proto(config))
        header.config_json = codec.config_to_json(config)
        header.seed = int(config.seed)
        header.has_timings, header.has_history = include_timings, include_history
        self._write(record)

    def write_frame(self, frame: Frame) -> None:
        """Append one step's frame."""
        record = recording_pb2.Record()
        codec.frame_to_proto(frame, self.include_timings, self.include_history, record.frame)
        self._write(record)
        self.frames_written += 1

    def close(self, report: dict[str, Any] | None = None) -> Path:
        """Write the report (if given), flush, and move the file into place. Returns the path."""
        if report is not None:
            record = recording_pb2.Record()
            record.report.CopyFrom(codec.report_to_proto(report, self.include_timings))
            self._write(record)
        return self._out.commit()

    def abort(self) -> None:
        """Discard the partial file; the target path is left untouched."""
        self._out.abort()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def _write(self, record: recording_pb2.Record) -> None:
        if self._file.closed:
            raise RecordingError(f"recording {self.path} is already closed")
        payload = record.SerializeToString(deterministic=True)
        self._file.write(encode_varint(len(payload)) + payload + _CRC.pack(zlib.crc32(payload)))

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._file.closed:
            return
        if exc_type is None:
            self.close()
        else:
            self.abort()


# --------------------------------------------------------------------------- reading
def iter_records(path: str | os.PathLike[str]) -> Iterator[recording_pb2.Record | None]:
    """Yield the file's records in order; yields a final ``None`` if the file ends inside a record.

    Raises RecordingError for a missing file, a wrong magic, an unsupported version or a corrupt record.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError as err:
        raise RecordingError(f"recording {path} does not exist") from err
    except OSError as err:
        raise RecordingError(f"cannot read recording {path}: {err}") from err
    head = len(MAGIC) + _VERSION.size
    if data[:len(MAGIC)] != MAGIC[:len(data)] or not data:
        raise RecordingError(f"{path} is not a VectorWorld recording (wrong magic bytes)")
    if len(data) < head:
        raise RecordingError(f"recording {path} is truncated inside its file header")
    (version,) = _VERSION.unpack_from(data, len(MAGIC))
    if version not in SUPPORTED_VERSIONS:
        raise RecordingError(f"recording {path} has format version {version}; this vectorworld "
                             f"({__version__}) reads versions {list(SUPPORTED_VERSIONS)}")
    pos, index = head, 0
    while pos < len(data):
        try:
            length, start = read_varint(data, pos)
        except IndexError:  # the file ends inside the length
            yield None
            return
        end = start + length
        if end + _CRC.size > len(data):
            yield None
            return
        payload = data[start:end]
        (crc,) = _CRC.unpack_from(data, end)
        if crc != zlib.crc32(payload):
            raise RecordingError(f"recording {path}: record {index} at byte {pos} is corrupt (CRC mismatch)")
        record = recording_pb2.Record()
        try:
            record.ParseFromString(payload)
        except DecodeError as err:
            raise RecordingError(f"recording {path}: record {index} cannot be decoded ({err})") from err
        yield record
        pos, index = end + _CRC.size, index + 1


def read_recording(path: str | os.PathLike[str]) -> Recording:
    """Read a whole recording. See the module docstring for the errors and the ``truncated`` flag."""
    path = Path(path)
    records = iter_records(path)
    first = next(records, None)
    if first is None or first.WhichOneof("record") != "header":
        raise RecordingError(f"recording {path} has no header record")
    recording = Recording(path=path, header=_header_from_proto(first.header, path))
    for record in records:
        if record is None:
            recording.truncated = True
            break
        kind = record.WhichOneof("record")
        if kind == "frame":
            recording.frames.append(codec.frame_from_proto(record.frame))
        elif kind == "report":
            recording.report = codec.report_from_proto(record.report)
        elif kind == "header":
            raise RecordingError(f"recording {path} has a second header record")
    return recording


def _header_from_proto(msg: recording_pb2.RecordingHeader, path: Path) -> RecordingHeader:
    try:
        config = codec.config_from_json(msg.config_json) if msg.config_json else \
            codec.config_from_proto(msg.config)
    except (ValueError, TypeError) as err:
        raise RecordingError(f"recording {path}: the header's config cannot be read ({err})") from err
    return RecordingHeader(format_version=msg.format_version, vectorworld_version=msg.vectorworld_version,
                           config=config, seed=msg.seed, has_timings=msg.has_timings,
                           has_history=msg.has_history)
