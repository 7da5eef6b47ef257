"""TFRecord framing: stream records out of (optionally gzip-compressed) files, verifying checksums.

A record is ``uint64 length | uint32 masked_crc32c(length bytes) | payload | uint32 masked_crc32c(payload)``,
all little-endian (see FORMATS.md). Files are read lazily, one record at a time, so multi-GB files never
sit in memory. Gzip files are recognised by their magic bytes ``1f 8b`` whatever their name; byte offsets
in error messages are then offsets in the *decompressed* stream.

Every problem (missing file, bad checksum, truncated record, broken gzip stream) raises
:class:`~vectorworld.errors.DataFormatError` naming the file and the byte offset.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from vectorworld.data.crc32c import masked_crc32c
from vectorworld.errors import DataFormatError

GZIP_MAGIC = b"\x1f\x8b"
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")


@dataclass(frozen=True)
class Record:
    """One TFRecord: its position in the file and its payload bytes."""

    index: int
    offset: int
    """Byte offset of the record's length field in the (decompressed) stream."""
    payload: bytes


@contextmanager
def open_stream(path: str | Path) -> Iterator[BinaryIO]:
    """Open ``path`` for reading, transparently decompressing gzip. Raises DataFormatError if missing."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    raw = open(path, "rb")
    try:
        if raw.read(2) == GZIP_MAGIC:
            raw.seek(0)
            with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
                yield stream  # type: ignore[misc]
        else:
            raw.seek(0)
            yield raw
    finally:
        raw.close()


def iter_records(path: str | Path, verify: bool = True) -> Iterator[Record]:
    """Yield the records of a TFRecord file lazily, in order.

    With ``verify`` (default) both checksums of every record are checked. The length checksum is always
    checked: a wrong one means this is not a TFRecord file or the framing is corrupt.
    """
    yield from _scan(Path(path), lambda _: True, verify)


def read_record(path: str | Path, index: int, verify: bool = True) -> Record:
    """The record number ``index`` (0-based). Earlier payloads are skipped (seeked over), not read."""
    if index < 0:
        raise DataFormatError(f"{path}: record index must be >= 0, got {index}")
    for record in _scan(Path(path), lambda i: i == index, verify):
        return record
    raise DataFormatError(f"{path}: no record {index}; the file holds {count_records(path)} record(s)")


def count_records(path: str | Path) -> int:
    """Number of records in the file (payloads are skipped, not read or checksummed)."""
    return sum(1 for _ in _scan(Path(path), lambda _: False, False, count_only=True))


def _scan(path: Path, wanted: Callable[[int], bool], verify: bool,
          count_only: bool = False) -> Iterator[Record]:
    """Walk the framing; read, check and yield the records whose index is ``wanted``, seek past the rest.

    With ``count_only`` an empty Record is yielded for every record (used to count without reading).
    """
    with open_stream(path) as stream:
        try:
            size = None if isinstance(stream, gzip.GzipFile) else os.fstat(stream.fileno()).st_size
            yield from _walk(stream, path, wanted, verify, count_only, size)
        except DataFormatError as exc:
            if isinstance(stream, gzip.GzipFile):
                raise DataFormatError(f"{exc} (gzip file: offsets count decompressed bytes)") from exc
            raise


def _walk(stream: BinaryIO, path: Path, wanted: Callable[[int], bool], verify: bool,
          count_only: bool, size: int | None) -> Iterator[Record]:
    """The framing loop of :func:`_scan`; ``size`` (plain files) rejects impossible lengths before reading."""
    offset = 0
    index = 0
    while True:
        header = _read(stream, _HEADER.size, path, offset)
        if not header:
            return
        if len(header) < _HEADER.size:
            raise DataFormatError(
                f"{path}: truncated record {index} at byte offset {offset}: "
                f"{len(header)} of {_HEADER.size} header bytes")
        length, length_crc = _HEADER.unpack(header)
        if masked_crc32c(header[:8]) != length_crc:
            what = "not a TFRecord file" if index == 0 else "corrupt record header"
            raise DataFormatError(
                f"{path}: {what} (length checksum mismatch) in record {index} at byte offset {offset}")
        payload_offset = offset + _HEADER.size
        end = payload_offset + length + _FOOTER.size
        if size is not None and end > size:
            _truncated(path, index, offset, length, size - payload_offset)
        if wanted(index):
            payload = _read(stream, length, path, payload_offset)
            footer = _read(stream, _FOOTER.size, path, payload_offset + len(payload))
            if len(payload) < length or len(footer) < _FOOTER.size:
                _truncated(path, index, offset, length, len(payload) + len(footer))
            if verify and masked_crc32c(payload) != _FOOTER.unpack(footer)[0]:
                raise DataFormatError(
                    f"{path}: payload checksum mismatch (corrupt data) in record {index}, payload at "
                    f"byte offset {payload_offset} ({length} bytes)")
            yield Record(index=index, offset=offset, payload=payload)
        else:
            _skip(stream, path, index, offset, length)
            if count_only:
                yield Record(index=index, offset=offset, payload=b"")
        offset = end
        index += 1


def _read(stream: BinaryIO, size: int, path: Path, offset: int) -> bytes:
    try:
        return stream.read(size)
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise DataFormatError(f"{path}: broken gzip stream near byte offset {offset}: {exc}") from exc


def _skip(stream: BinaryIO, path: Path, index: int, offset: int, length: int) -> None:
    """Seek over a payload and its checksum, checking that the file really holds them."""
    target = offset + _HEADER.size + length + _FOOTER.size
    try:
        if isinstance(stream, gzip.GzipFile):
            stream.seek(target - 1)
            got = len(stream.read(1))
            reached = stream.tell() if got else target - 1
        else:
            size = stream.seek(0, 2)
            reached = min(size, target)
            stream.seek(reached)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataFormatError(f"{path}: broken gzip stream near byte offset {offset}: {exc}") from exc
    if reached < target:
        _truncated(path, index, offset, length, reached - offset - _HEADER.size)


def _truncated(path: Path, index: int, offset: int, length: int, got: int) -> None:
    raise DataFormatError(
        f"{path}: truncated record {index} at byte offset {offset}: expected {length + _FOOTER.size} "
        f"payload+checksum bytes after byte offset {offset + _HEADER.size}, got {got}")


def encode_record(payload: bytes) -> bytes:
    """Frame one payload as a TFRecord."""
    length = struct.pack("<Q", len(payload))
    return b"".join([length, struct.pack("<I", masked_crc32c(length)), payload,
                     struct.pack("<I", masked_crc32c(payload))])


def write_records(path: str | Path, payloads: Iterable[bytes], compress: bool = False) -> int:
    """Write payloads as a TFRecord file (gzip if ``compress``); returns the number of records."""
    opener = gzip.open if compress else open
    count = 0
    with opener(path, "wb") as f:
        for payload in payloads:
            f.write(encode_record(payload))
            count += 1
    return count
