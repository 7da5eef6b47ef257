"""The one varint helper: protobuf's own encoding of ints and keys, read back, truncation detected."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vectorworld.v1 import world_pb2
from vectorworld.wire.varint import LEN, VARINT, encode_varint, field_tag, read_varint


@given(st.integers(-2**63, 2**63 - 1))
def test_a_varint_is_protobufs_and_reads_back(value: int) -> None:
    msg = world_pb2.Agent(id=value)  # field 1, int64
    assert msg.SerializeToString() == (field_tag(1, VARINT) + encode_varint(value) if value else b"")
    data = encode_varint(value) + b"\x01"
    assert read_varint(data, 0) == (value & (2**64 - 1), len(data) - 1)


def test_a_key_holds_field_number_and_wire_type() -> None:
    assert field_tag(1, LEN) == b"\x0a" and field_tag(16, VARINT) == b"\x80\x01"


def test_data_ending_inside_a_varint_is_an_index_error() -> None:
    with pytest.raises(IndexError):
        read_varint(encode_varint(300)[:1], 0)
