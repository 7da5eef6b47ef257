"""The protobuf base-128 varint and field tags: the one copy every hand-built message and file uses.

The hot-path encoders (:mod:`vectorworld.wire.raw`, ``lanes``, ``table``) build message bytes directly, and
recording files frame their records with a varint length (:mod:`vectorworld.wire.recording`).
"""

from __future__ import annotations

import functools

VARINT, I64, LEN, I32 = 0, 1, 2, 5
"""Protobuf wire types."""


@functools.lru_cache(maxsize=4096)
def encode_varint(value: int) -> bytes:
    """Base-128 varint of an int64 (negative values as their 10-byte two's complement)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field_tag(field_number: int, wire_type: int) -> bytes:
    """The key of field ``field_number`` with ``wire_type`` (:data:`VARINT`, :data:`LEN`, ...)."""
    return encode_varint(field_number << 3 | wire_type)


def read_varint(data: bytes | bytearray, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at ``pos``; IndexError if ``data`` ends inside it."""
    byte = data[pos]
    if byte < 0x80:
        return byte, pos + 1
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
