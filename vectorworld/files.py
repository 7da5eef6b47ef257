"""Files written whole or not at all, and JSON of NumPy values: the one helper for each chore.

Reports, recordings, dataset shards, batch stores and CSVs are all written through :class:`AtomicFile`
(a temporary file in the target's directory, fsync'ed and renamed onto the target, so a reader never sees
half a file and a crash leaves the old one); every JSON writer converts NumPy values with
:func:`json_default`.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np


class AtomicFile:
    """A file that appears at ``path`` only when :meth:`commit` is called; :meth:`abort` leaves ``path`` as
    it was. ``mode`` is ``"w"`` (UTF-8 text) or ``"wb"``; ``suffix`` names the temporary file
    (``.NAME.XXXX<suffix>`` next to the target)."""

    def __init__(self, path: str | os.PathLike[str], mode: str = "w", suffix: str = ".tmp") -> None:
        if mode not in ("w", "wb"):
            raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
        self.path = Path(path)
        directory = self.path.parent if str(self.path.parent) else Path(".")
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=suffix, dir=directory)
        self.tmp = Path(tmp)
        self.file: IO[Any] = os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"}))

    @property
    def closed(self) -> bool:
        return self.file.closed

    def commit(self) -> Path:
        """Flush, fsync and rename the temporary file onto the target; returns the target path."""
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            os.replace(self.tmp, self.path)
        except BaseException:
            self.abort()
            raise
        return self.path

    def abort(self) -> None:
        """Close and remove the temporary file; the target is untouched."""
        if not self.file.closed:
            self.file.close()
        self.tmp.unlink(missing_ok=True)


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """``with atomic_write(path) as f: ...`` writes ``path`` whole when the block ends, not at all if it raises."""
    out = AtomicFile(path, mode)
    try:
        yield out.file
    except BaseException:
        out.abort()
        raise
    out.commit()


def json_default(value: Any) -> Any:
    """``json.dump(..., default=json_default)``: NumPy scalars and arrays, sets and tuples as JSON values;
    non-finite NumPy floats as null."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def write_json_atomic(path: str | os.PathLike[str], payload: dict[str, Any]) -> None:
    """Write ``payload`` as indented JSON to ``path`` atomically (NumPy values converted; NaN is an error)."""
    with atomic_write(path) as f:
        json.dump(payload, f, indent=2, default=json_default, allow_nan=False)
        f.write("\n")
