"""Scenario source strings, one parser for every command: ``KIND:PATH#SELECTOR`` or a plain path.

| kind | path | selector (default 0) |
|---|---|---|
| ``womd`` | TFRecord of WOMD ``Scenario`` protobufs (plain or gzip) | record number or scenario id |
| ``womd-example`` | TFRecord of WOMD ``tf.Example``s (plain or gzip) | record number or ``scenario/id`` |
| ``nuplan`` | nuPlan log database (SQLite) | scene number, name or token |
| ``gpudrive`` | GPUDrive / Waymax-style scene ``.json`` (one scene) | 0 |
| ``scenarionet`` | ScenarioNet ``.pkl`` or dataset folder (``dataset_summary.pkl``) | number, file name or id |

A plain path is recognised by content (:func:`detect_kind`): a folder -> scenarionet; SQLite -> nuplan; a
pickle -> scenarionet; a JSON object -> gpudrive; TFRecord framing -> womd-example if its first record is a
tf.Example, else womd. Anything else is refused with one line naming the formats tried. For dataset
building PATH may be a glob (``womd:data/*.tfrecord*``, ``gpudrive:'scenes/*.json'``): every record / scene /
file is a scenario; a glob's kind is sniffed from its first match.
"""

from __future__ import annotations

import glob
import gzip
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from vectorworld.data import gpudrive, nuplan, scenarionet, womd, womd_example
from vectorworld.data.crc32c import masked_crc32c
from vectorworld.data.scenario import Scenario
from vectorworld.data.tfrecord import GZIP_MAGIC, count_records, iter_records, read_record
from vectorworld.errors import DataFormatError

KINDS = ("womd-example", "womd", "nuplan", "gpudrive", "scenarionet")
"""Source kinds (prefixes); longer prefixes first so ``womd-example:`` is not read as ``womd:``."""
FORMAT_NAMES = {
    "womd": "WOMD Scenario TFRecord",
    "womd-example": "WOMD tf.Example TFRecord",
    "nuplan": "nuPlan SQLite log",
    "gpudrive": "GPUDrive JSON scene",
    "scenarionet": "ScenarioNet pickle / dataset folder",
}
_EXTENSIONS = {".db": "nuplan", ".json": "gpudrive", ".pkl": "scenarionet"}


@dataclass(frozen=True)
class SourceSpec:
    """A parsed source string: dataset kind, path (or glob) and an optional record / scene selector."""

    kind: str
    path: str
    selector: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}:{self.path}" + (f"#{self.selector}" if self.selector is not None else "")

    @property
    def format_name(self) -> str:
        return FORMAT_NAMES[self.kind]


def unknown_format(path: str | Path) -> DataFormatError:
    tried = "; ".join(f"{k} ({v})" for k, v in FORMAT_NAMES.items())
    return DataFormatError(f"{path}: not a scenario file of a known format (tried {tried})")


def _tfrecord_head(path: Path) -> bytes:
    """The first 12 (decompressed) bytes of a file."""
    with open(path, "rb") as f:
        head = f.read(12)
        if head[:2] == GZIP_MAGIC:
            f.seek(0)
            try:
                with gzip.GzipFile(fileobj=f) as z:
                    return z.read(12)
            except (OSError, EOFError) as exc:
                raise DataFormatError(f"{path}: broken gzip stream ({exc})") from exc
    return head


def detect_kind(path: str | Path) -> str:
    """The kind of an existing file or folder by content (see module docstring); DataFormatError for a
    missing path or an unknown format."""
    p = Path(path)
    if p.is_dir():
        if (p / scenarionet.SUMMARY_FILE).is_file() or any(scenarionet.is_scenario_file(c.name) for c in p.iterdir()):
            return "scenarionet"
        raise unknown_format(path)
    if not p.is_file():
        raise DataFormatError(f"{path}: no such file")
    with open(p, "rb") as f:
        head = f.read(16)
    if head == b"SQLite format 3\x00":
        return "nuplan"
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "scenarionet"
    if head.lstrip()[:1] == b"{":
        return "gpudrive"
    frame = _tfrecord_head(p)
    if len(frame) == 12 and masked_crc32c(frame[:8]) == struct.unpack("<I", frame[8:])[0]:
        payload = read_record(p, 0, verify=False).payload
        return "womd-example" if womd_example.looks_like_womd_example(payload) else "womd"
    raise unknown_format(path)


def parse_source(text: str) -> SourceSpec:
    """Parse a source string (see module docstring). A plain path's kind is sniffed from its content; a
    glob's from its first match (or, with none, its extension)."""
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
            matches = sorted(glob.glob(path, recursive=True))
            kind = detect_kind(matches[0]) if matches else _EXTENSIONS.get(Path(path).suffix, "womd")
        else:
            kind = detect_kind(path)
    return SourceSpec(kind=kind, path=path, selector=selector or None)


def _files(spec: SourceSpec) -> list[str]:
    if glob.has_magic(spec.path):
        files = sorted(glob.glob(spec.path, recursive=True))
        if not files:
            raise DataFormatError(f"{spec.path}: no file matches")
        return files
    path = Path(spec.path)
    if not (path.is_file() or (spec.kind == "scenarionet" and path.is_dir())):
        raise DataFormatError(f"{spec.path}: no such file" + (" or folder" if spec.kind == "scenarionet" else ""))
    return [spec.path]


def load_scenario(source: str | SourceSpec, nuplan_maps_dir: str | Path | None = None) -> Scenario:
    """The one scenario a source string names (record / scene 0 without a selector)."""
    spec = parse_source(source) if isinstance(source, str) else source
    if glob.has_magic(spec.path):
        raise DataFormatError(f"{spec}: a single scenario needs one file, not a glob")
    path = _files(spec)[0]
    selector = spec.selector if spec.selector is not None else 0
    if spec.kind == "womd":
        return womd.read_womd(path, selector)
    if spec.kind == "womd-example":
        return womd_example.read_womd_example(path, selector)
    if spec.kind == "gpudrive":
        if str(selector) != "0":
            raise DataFormatError(f"{spec}: a GPUDrive file holds one scene; selector must be 0")
        return gpudrive.read_gpudrive(path)
    if spec.kind == "scenarionet":
        return scenarionet.read_scenarionet(path, selector)
    return nuplan.read_nuplan(path, selector, maps_root=nuplan_maps_dir)


def iter_scenario_loaders(source: str | SourceSpec,
                          nuplan_maps_dir: str | Path | None = None) -> Iterator[Callable[[], Scenario]]:
    """Zero-argument loaders, one per scenario of the source (every record / scene of every file).

    Framing / listings are read eagerly (cheap), parsing and conversion only when a loader is called, so a
    resumed dataset build skips finished shards quickly. A selector restricts the source to that one scenario.
    """
    spec = parse_source(source) if isinstance(source, str) else source
    if spec.selector is not None:
        yield lambda: load_scenario(spec, nuplan_maps_dir)
        return
    for path in _files(spec):
        if spec.kind in ("womd", "womd-example"):
            module = womd if spec.kind == "womd" else womd_example
            for record in iter_records(path):
                yield lambda path=path, record=record, module=module: module.scenario_from_record(path, record)
        elif spec.kind == "gpudrive":
            yield lambda path=path: gpudrive.read_gpudrive(path)
        elif spec.kind == "scenarionet":
            for entry in scenarionet.list_scenarios(path):
                yield lambda path=path, entry=entry: scenarionet.read_scenarionet(path, entry.index)
        else:
            for scene in nuplan.list_scenes(path):
                yield lambda path=path, scene=scene: nuplan.read_nuplan(path, scene.index, nuplan_maps_dir)


def iter_scenarios(source: str | SourceSpec, nuplan_maps_dir: str | Path | None = None) -> Iterator[Scenario]:
    """Every scenario of a source, loaded lazily one at a time."""
    for loader in iter_scenario_loaders(source, nuplan_maps_dir):
        yield loader()


def count_in_file(kind: str, path: str | Path) -> int:
    """Number of scenarios one file (or ScenarioNet folder) of ``kind`` holds, without parsing them."""
    if kind in ("womd", "womd-example"):
        return count_records(path)
    if kind == "gpudrive":
        return 1
    if kind == "scenarionet":
        return len(scenarionet.list_scenarios(path))
    return len(nuplan.list_scenes(path))


def count_scenarios(source: str | SourceSpec) -> int:
    """Number of scenarios a source yields (record / scene count; payloads are not parsed)."""
    spec = parse_source(source) if isinstance(source, str) else source
    if spec.selector is not None:
        return 1
    return sum(count_in_file(spec.kind, p) for p in _files(spec))
