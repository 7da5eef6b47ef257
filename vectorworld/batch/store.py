"""The streaming episode store: ``DIR/episodes.jsonl``, one JSON record per finished episode.

Each record is appended and flushed (and fsync'ed) the moment its episode finishes, so a batch killed at
any point loses only the episodes still running. A line cut short by the kill is dropped when the store
is reopened. With resume, episodes that already have a successful record are skipped; failed episodes are
run again and their newer record wins. :meth:`EpisodeStore.compact` rewrites the file atomically, sorted
by index with one record per episode.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import IO, Any

from vectorworld.errors import ConfigError, DataFormatError
from vectorworld.files import atomic_write, json_default

EPISODES_FILE = "episodes.jsonl"


def dump_record(record: dict[str, Any]) -> str:
    """One JSON line (no newline); numpy scalars converted, non-finite floats written as null."""
    return json.dumps(_finite(record), default=json_default, allow_nan=False, separators=(",", ":"))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def read_records(path: Path) -> tuple[dict[int, dict[str, Any]], int]:
    """Latest record per episode index from a jsonl file, and the byte length of its intact prefix.

    A final line without its newline (the writer was killed mid-line) is ignored; any other unparsable
    line raises DataFormatError naming the file and line.
    """
    data = path.read_bytes()
    records: dict[int, dict[str, Any]] = {}
    good = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        last = number == len(lines)
        if last:  # text after the final newline: a partial line, or empty
            break
        if raw.strip():
            try:
                record = json.loads(raw)
                index = int(record["index"])
            except (ValueError, KeyError, TypeError) as err:
                raise DataFormatError(f"{path}:{number}: not an episode record ({err})") from None
            records[index] = record
        good += len(raw) + 1
    return records, good


class EpisodeStore:
    """Append-only episode records in ``directory/episodes.jsonl``.

    resume=False refuses a directory that already holds records (so two batches never mix);
    resume=True loads them and truncates a partial last line before appending.
    """

    def __init__(self, directory: Path, resume: bool = False) -> None:
        self.directory = Path(directory)
        self.path = self.directory / EPISODES_FILE
        self.records: dict[int, dict[str, Any]] = {}
        self._file: IO[str] | None = None
        if self.path.exists() and self.path.stat().st_size > 0:
            if not resume:
                raise ConfigError(f"out_dir {self.directory} already holds {EPISODES_FILE}; set resume to "
                                  "continue that batch or choose another directory", field="out_dir")
            self.records, good = read_records(self.path)
            if good < self.path.stat().st_size:
                with open(self.path, "r+b") as f:
                    f.truncate(good)

    def done_indices(self) -> set[int]:
        """Episodes with a successful record (skipped on resume)."""
        return {i for i, r in self.records.items() if "error" not in r}

    def open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")

    def append(self, record: dict[str, Any]) -> None:
        """Write one record durably (flush + fsync) and remember it."""
        if self._file is None:
            self.open()
        assert self._file is not None
        self._file.write(dump_record(record) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self.records[int(record["index"])] = record

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def compact(self) -> None:
        """Rewrite the file atomically: one record per episode, sorted by index."""
        self.close()
        with atomic_write(self.path) as f:
            for index in sorted(self.records):
                f.write(dump_record(self.records[index]) + "\n")
