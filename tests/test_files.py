"""vectorworld.files: whole-or-nothing writes and the one NumPy -> JSON conversion."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vectorworld.files import AtomicFile, atomic_write, json_default, write_json_atomic


def test_a_write_appears_whole_when_the_block_ends(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with atomic_write(target) as f:
        f.write("new")
        assert target.read_text() == "old"  # not yet
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(target, "wb") as f:
        f.write(b"half")
        raise RuntimeError("disk full")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]
    out = AtomicFile(tmp_path / "other", "wb")
    out.file.write(b"x")
    out.abort()
    assert out.closed and not (tmp_path / "other").exists() and len(list(tmp_path.iterdir())) == 1


def test_numpy_values_become_json_and_nan_becomes_null(tmp_path: Path) -> None:
    payload = {"i": np.int64(3), "f": np.float32(0.5), "nan": np.float32("nan"), "b": np.bool_(True),
               "a": np.arange(3), "t": (1, 2)}
    write_json_atomic(tmp_path / "r.json", payload)
    assert json.loads((tmp_path / "r.json").read_text()) == {"i": 3, "f": 0.5, "nan": None, "b": True,
                                                              "a": [0, 1, 2], "t": [1, 2]}
    with pytest.raises(TypeError, match="object"):
        json_default(object())
