"""TFRecord framing: round trips, laziness and every kind of bad input."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from vectorworld.data.tfrecord import count_records, encode_record, iter_records, read_record, write_records
from vectorworld.errors import DataFormatError

PAYLOADS = [b"first", b"", b"x" * 70_000, bytes(range(256))]


@pytest.mark.parametrize("compress", [False, True])
def test_round_trip(tmp_path: Path, compress: bool) -> None:
    path = tmp_path / ("a.tfrecord.gz" if compress else "a.tfrecord")
    assert write_records(path, PAYLOADS, compress=compress) == len(PAYLOADS)
    records = list(iter_records(path))
    assert [r.payload for r in records] == PAYLOADS
    assert [r.index for r in records] == [0, 1, 2, 3]
    assert records[1].offset == 12 + 5 + 4
    assert count_records(path) == 4
    assert read_record(path, 2).payload == PAYLOADS[2]


def test_gzip_detected_by_magic_not_name(tmp_path: Path) -> None:
    path = tmp_path / "no_suffix.tfrecord"
    with gzip.open(path, "wb") as f:
        f.write(b"".join(encode_record(p) for p in PAYLOADS))
    assert [r.payload for r in iter_records(path)] == PAYLOADS


def test_streams_lazily(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    data = bytearray(b"".join(encode_record(p) for p in PAYLOADS))
    data[-3] ^= 0xFF  # corrupt the last record only
    path.write_bytes(bytes(data))
    it = iter_records(path)
    assert next(it).payload == PAYLOADS[0]  # the bad record has not been read yet
    with pytest.raises(DataFormatError):
        list(it)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="no such file"):
        list(iter_records(tmp_path / "absent.tfrecord"))


def test_wrong_magic(tmp_path: Path) -> None:
    path = tmp_path / "text.tfrecord"
    path.write_text("this is not a tfrecord file at all, just some text")
    with pytest.raises(DataFormatError, match=r"text\.tfrecord: not a TFRecord file .* byte offset 0"):
        list(iter_records(path))


def test_flipped_payload_byte_reports_offset(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    data = bytearray(b"".join(encode_record(p) for p in PAYLOADS))
    second_payload = len(encode_record(PAYLOADS[0])) + len(encode_record(PAYLOADS[1])) + 12
    data[second_payload + 100] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(DataFormatError, match=rf"a\.tfrecord: payload checksum mismatch .*record 2.* "
                                              rf"byte offset {second_payload}"):
        list(iter_records(path))
    with pytest.raises(DataFormatError, match="checksum mismatch"):
        read_record(path, 2)
    assert read_record(path, 3).payload == PAYLOADS[3]  # others stay readable
    assert len(list(iter_records(path, verify=False))) == 4


def test_flipped_length_byte(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    data = bytearray(b"".join(encode_record(p) for p in PAYLOADS))
    offset = len(encode_record(PAYLOADS[0]))
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(DataFormatError, match=f"corrupt record header .*record 1 at byte offset {offset}"):
        list(iter_records(path))


@pytest.mark.parametrize("cut", [3, 12 + 2, 12 + 5 + 2])
def test_truncated(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "a.tfrecord"
    first = encode_record(PAYLOADS[0])
    path.write_bytes(first + encode_record(b"second")[:cut])
    with pytest.raises(DataFormatError, match=f"truncated record 1 at byte offset {len(first)}"):
        list(iter_records(path))
    with pytest.raises(DataFormatError, match="truncated"):
        count_records(path)


def test_truncated_gzip(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord.gz"
    write_records(path, PAYLOADS, compress=True)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(DataFormatError, match=r"a\.tfrecord\.gz"):
        list(iter_records(path))


def test_read_record_out_of_range(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    write_records(path, PAYLOADS)
    with pytest.raises(DataFormatError, match="no record 9; the file holds 4"):
        read_record(path, 9)


def test_real_sample_framing(womd_path: Path) -> None:
    records = list(iter_records(womd_path))
    assert len(records) == 1
    assert len(records[0].payload) == womd_path.stat().st_size - 16


def test_impossible_length_is_not_allocated(tmp_path: Path) -> None:
    import struct

    from vectorworld.data.crc32c import masked_crc32c

    length = struct.pack("<Q", 1 << 40)
    path = tmp_path / "huge.tfrecord"
    path.write_bytes(length + struct.pack("<I", masked_crc32c(length)) + b"abc")
    with pytest.raises(DataFormatError, match="truncated record 0 at byte offset 0"):
        list(iter_records(path))


def test_gzip_corruption_names_decompressed_offsets(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord.gz"
    data = bytearray(b"".join(encode_record(p) for p in PAYLOADS))
    data[12 + 2] ^= 0x01  # inside the first payload
    path.write_bytes(gzip.compress(bytes(data)))
    with pytest.raises(DataFormatError, match=r"record 0, payload at byte offset 12 .*decompressed"):
        list(iter_records(path))
