"""CRC-32C (Castagnoli) checksums and TFRecord's masked variant, without compiled dependencies.

CRC-32C uses the reflected polynomial 0x82F63B78, initial value 0xFFFFFFFF and a final complement. Three
implementations share one 256-entry table:

* :func:`crc32c_bytewise` -- the classic table-driven loop, for short inputs.
* :func:`crc32c_numpy` -- for long inputs: the message is cut into K equal chunks whose registers are
  advanced in lock-step by one vectorised table step per byte, then combined with a precomputed
  "advance by m zero bytes" operator (CRC registers are linear over GF(2)). About 30-50x faster than the
  byte loop on a 1 MB payload.
* the ``google_crc32c`` or ``crc32c`` PyPI packages, used automatically by :func:`crc32c` when installed
  (optional; never required).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

POLY_REFLECTED = 0x82F63B78
MASK_DELTA = 0xA282EAD8
_SMALL = 4096  # bytes: below this the byte loop beats the numpy set-up cost


def _make_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(POLY_REFLECTED), table >> 1).astype(np.uint32)
    return table


TABLE = _make_table()
"""(256,) uint32: register update for one input byte, table-driven CRC-32C."""
_TABLE_LIST = [int(v) for v in TABLE]


def crc32c_bytewise(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C of ``data``, continuing from a previous result ``crc`` (0 to start)."""
    reg = crc ^ 0xFFFFFFFF
    table = _TABLE_LIST
    for byte in bytes(data):
        reg = (reg >> 8) ^ table[(reg ^ byte) & 0xFF]
    return reg ^ 0xFFFFFFFF


@functools.lru_cache(maxsize=16)
def _zeros_operator(num_bytes: int) -> np.ndarray:
    """(4, 256) uint32 tables of the linear map "advance the register over ``num_bytes`` zero bytes".

    The register r maps to T[0][r & 0xFF] ^ T[1][(r >> 8) & 0xFF] ^ T[2][...] ^ T[3][r >> 24].
    """
    basis = (np.uint32(1) << np.arange(32, dtype=np.uint32)).astype(np.uint32)
    reg = basis.copy()
    for _ in range(num_bytes):
        reg = (reg >> np.uint32(8)) ^ TABLE[reg & np.uint32(0xFF)]
    # image of every byte value in each byte position, by XOR of the images of its set bits
    values = np.arange(256, dtype=np.uint32)
    bits = ((values[:, None] >> np.arange(8, dtype=np.uint32)[None]) & 1).astype(bool)  # (256, 8)
    tables = np.zeros((4, 256), dtype=np.uint32)
    for pos in range(4):
        images = reg[8 * pos: 8 * pos + 8]  # (8,)
        tables[pos] = np.bitwise_xor.reduce(np.where(bits, images[None], np.uint32(0)), axis=1)
    return tables


def _apply_operator(tables: np.ndarray, reg: int) -> int:
    return int(tables[0, reg & 0xFF] ^ tables[1, (reg >> 8) & 0xFF] ^ tables[2, (reg >> 16) & 0xFF]
               ^ tables[3, reg >> 24])


def crc32c_numpy(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C of ``data`` (any length), vectorised over chunks with numpy."""
    n = len(data)
    if n < _SMALL:
        return crc32c_bytewise(data)
    buf = np.frombuffer(data, dtype=np.uint8)
    # Start from register 0 and fold the initial 0xFFFFFFFF into the first four message bytes instead
    # (equivalent for a reflected 32-bit CRC); then leading zero padding leaves the register unchanged.
    chunk = 1 << max(8, int(np.ceil(np.log2(np.sqrt(n)))))
    num_chunks = -(-n // chunk)
    padded = np.zeros(num_chunks * chunk, dtype=np.uint8)
    pad = len(padded) - n
    padded[pad:] = buf
    padded[pad: pad + 4] ^= 0xFF
    lanes = padded.reshape(num_chunks, chunk).T.copy()  # (chunk, K): row j = j-th byte of every chunk
    reg = np.zeros(num_chunks, dtype=np.uint32)
    mask = np.uint32(0xFF)
    eight = np.uint32(8)
    for row in lanes:
        reg = (reg >> eight) ^ TABLE[(reg ^ row) & mask]
    shift = _zeros_operator(chunk)
    total = 0
    for value in reg.tolist():
        total = _apply_operator(shift, total) ^ value
    return total ^ 0xFFFFFFFF


def _accelerated() -> Callable[[bytes], int] | None:
    try:
        import google_crc32c  # type: ignore[import-not-found]

        if google_crc32c.implementation == "c":
            return lambda data: int(google_crc32c.value(bytes(data)))
    except ImportError:
        pass
    try:
        import crc32c as crc32c_pkg  # type: ignore[import-not-found]

        return lambda data: int(crc32c_pkg.crc32c(bytes(data)))
    except ImportError:
        return None


_FAST = _accelerated()


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C of ``data``: a compiled package if installed, else :func:`crc32c_numpy`."""
    if _FAST is not None:
        return _FAST(data)
    return crc32c_numpy(data)


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """TFRecord's masked CRC: ``((crc >> 15) | (crc << 17)) + 0xa282ead8`` modulo 2**32."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + MASK_DELTA) & 0xFFFFFFFF
