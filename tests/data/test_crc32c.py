"""CRC-32C implementations agree with each other and with published check values."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorworld.data import crc32c as crc


def test_check_values() -> None:
    assert crc.crc32c_bytewise(b"123456789") == 0xE3069283
    assert crc.crc32c_bytewise(b"") == 0
    assert crc.crc32c_bytewise(bytes(32)) == 0x8A9136AA  # RFC 3720 B.4: 32 bytes of zeros
    assert crc.crc32c_bytewise(b"\xff" * 32) == 0x62A8AB43  # RFC 3720 B.4: 32 bytes of 0xff
    assert crc.crc32c(b"123456789") == 0xE3069283


def test_numpy_matches_bytewise_on_long_inputs() -> None:
    rng = np.random.default_rng(0)
    for size in (4096, 4097, 10_001, 65_536, 250_007):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        assert crc.crc32c_numpy(data) == crc.crc32c_bytewise(data), size


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=0, max_size=9000))
def test_numpy_matches_bytewise_property(data: bytes) -> None:
    assert crc.crc32c_numpy(data) == crc.crc32c_bytewise(data)


def test_incremental_continuation() -> None:
    data = b"vectorworld data readers"
    assert crc.crc32c_bytewise(data[10:], crc.crc32c_bytewise(data[:10])) == crc.crc32c_bytewise(data)


def test_masked() -> None:
    value = crc.crc32c(b"abc")
    expected = ((((value >> 15) | (value << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF
    assert crc.masked_crc32c(b"abc") == expected
