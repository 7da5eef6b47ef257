"""Scenario source strings: ``womd:PATH#INDEX``, ``nuplan:DB#SCENE`` or a plain path, single or glob.

* ``womd:FILE`` / ``womd:FILE#3`` / ``womd:FILE#<scenario id>`` -- record 0, record 3, or by id.
* ``nuplan:LOG.db`` / ``nuplan:LOG.db#2`` / ``nuplan:LOG.db#<scene name or token>``.
* A plain path is recognised by content: SQLite -> nuPlan; anything else -> WOMD TFRecord (plain or gzip).
* For dataset building, PATH may be a glob (``womd:data/*.tfrecord*``); every record / scene is a scenario.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from vectorworld.data import nuplan, womd
from vectorworld.data.scenario import Scenario
from vectorworld.data.tfrecord import count_records, iter_records
from vectorworld.errors import DataFormatError

KINDS = ("womd", "nuplan")


@dataclass(frozen=True)
class SourceSpec:
    """A parsed source string: dataset kind, path (or glob) and an optional record / scene selector."""

    kind: str
    path: str
    selector: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}:{self.path}" + (f"#{self.selector}" if self.selector is not None else "")


def _sniff(path: str) -> str:
    """'nuplan' for SQLite files, else 'womd'. Raises DataFormatError for a missing file."""
    p = Path(path)
    if not p.is_file():
        raise DataFormatError(f"{path}: no such file")
    with open(p, "rb") as f:
        return "nuplan" if f.read(16) == b"SQLite format 3\x00" else "womd"


def parse_source(text: str) -> SourceSpec:
    """Parse a source string (see module docstring). A plain path's kind is sniffed from its content,
    or from its name (``.db`` -> nuplan) when it is a glob."""
    kind = None
    for candidate in KINDS:
        if text.startswith(candidate + ":"):
            kind, text = candidate, text[len(candidate) + 1:]
            break
    path, selector = (text.rsplit("#", 1) + [None])[:2] if "#" in text else (text, None)
    if not path:
        raise DataFormatError(f"source {text!r}: no path")
    if kind is None:
        if glob.has_magic(path):
            kind = "nuplan" if path.endswith(".db") else "womd"
        else:
            kind = _sniff(path)
    return SourceSpec(kind=kind, path=path, selector=selector or None)


def _files(spec: SourceSpec) -> list[str]:
    if glob.has_magic(spec.path):
        files = sorted(glob.glob(spec.path, recursive=True))
        if not files:
            raise DataFormatError(f"{spec.path}: no file matches")
        return files
    if not Path(spec.path).is_file():
        raise DataFormatError(f"{spec.path}: no such file")
    return [spec.path]


def load_scenario(source: str | SourceSpec, nuplan_maps_dir: str | Path | None = None) -> Scenario:
    """The one scenario a source string names (record / scene 0 without a selector)."""
    spec = parse_source(source) if isinstance(source, str) else source
    if glob.has_magic(spec.path):
        raise DataFormatError(f"{spec}: a single scenario needs one file, not a glob")
    if spec.kind == "womd":
        return womd.read_womd(spec.path, spec.selector if spec.selector is not None else 0)
    return nuplan.read_nuplan(spec.path, spec.selector if spec.selector is not None else 0,
                              maps_root=nuplan_maps_dir)


def iter_scenario_loaders(source: str | SourceSpec,
                          nuplan_maps_dir: str | Path | None = None) -> Iterator[Callable[[], Scenario]]:
    """Zero-argument loaders, one per scenario of the source (every record / scene of every file).

    Framing is read eagerly (cheap), parsing and conversion only when a loader is called, so a resumed
    dataset build skips finished shards quickly. A selector restricts the source to that one scenario.
    """
    spec = parse_source(source) if isinstance(source, str) else source
    if spec.selector is not None:
        yield lambda: load_scenario(spec, nuplan_maps_dir)
        return
    for path in _files(spec):
        if spec.kind == "womd":
            for record in iter_records(path):
                yield lambda path=path, record=record: womd.scenario_from_record(path, record)
        else:
            for scene in nuplan.list_scenes(path):
                yield lambda path=path, scene=scene: nuplan.read_nuplan(path, scene.index, nuplan_maps_dir)


def iter_scenarios(source: str | SourceSpec, nuplan_maps_dir: str | Path | None = None) -> Iterator[Scenario]:
    """Every scenario of a source, loaded lazily one at a time."""
    for loader in iter_scenario_loaders(source, nuplan_maps_dir):
        yield loader()


def count_scenarios(source: str | SourceSpec) -> int:
    """Number of scenarios a source yields (record / scene count; payloads are not parsed)."""
    spec = parse_source(source) if isinstance(source, str) else source
    if spec.selector is not None:
        return 1
    if spec.kind == "womd":
        return sum(count_records(p) for p in _files(spec))
    return sum(len(nuplan.list_scenes(p)) for p in _files(spec))
