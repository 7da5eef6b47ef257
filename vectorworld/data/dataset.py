"""Tile dataset builder: scenarios -> tiles -> ``.npz`` shards + ``manifest.json``.

Layout of ``out_dir``::

    manifest.json          schema version, config (and its hash), source, counts, one entry per shard
    shard_00000.npz        tiles cut from scenarios [0, S), S = scenarios_per_shard
    shard_00001.npz        tiles cut from scenarios [S, 2S) ...

Shards hold plain arrays only (``np.load(path, allow_pickle=False)`` works); their keys, shapes and dtypes
are :data:`SHARD_SCHEMA` (N tiles; L and A are the largest lane / agent counts *within the shard*, other
slots are padding with ``*_valid`` False). Building is resumable: shards already on disk (with the same
config hash) are skipped without loading their scenarios when the source yields loaders
(zero-argument callables) instead of Scenario objects. Every file is written to a temporary name and
renamed, so a crash never leaves a half-written shard or manifest.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vectorworld.data.scenario import Scenario
from vectorworld.data.tiles import TileConfig, TileSample, iter_tiles
from vectorworld.errors import ConfigError, DataFormatError
from vectorworld.files import atomic_write

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"

SHARD_SCHEMA: dict[str, str] = {
    "schema_version": "() int32: SCHEMA_VERSION",
    "config_hash": "() str: hash of the build config",
    "scenario_ids": "(K,) str: scenario ids of this shard's scenarios",
    "scenario_sources": "(K,) str: 'dataset:path#index' of each scenario",
    "tile_scenario": "(N,) int32: index into scenario_ids",
    "tile_step": "(N,) int32: scenario step the tile was cut at",
    "tile_kind": "(N,) int8: 0 ego-centric, 1 agent-centric",
    "tile_anchor_id": "(N,) int64: track id of the anchor agent",
    "tile_center": "(N, 2) float64: m, global frame: tile origin (the anchor's position)",
    "tile_yaw": "(N,) float64: rad, global frame: tile x axis (the anchor's heading)",
    "lane_points": "(N, L, 20, 2) float32: m, tile frame, centreline resampled to 20 points",
    "lane_valid": "(N, L) bool",
    "lane_ids": "(N, L) int64: source lane id (-1 padding)",
    "lane_width": "(N, L) float32: m",
    "lane_speed_limit": "(N, L) float32: m/s",
    "lane_type": "(N, L) int8: vectorworld.scene.LaneType",
    "lane_cut": "(N, L, 2) bool: start / end cut by the tile border",
    "edges": "(N, L, L) int8: 0 none, 1 j pred of i, 2 j succ of i, 3 j left of i, 4 j right of i",
    "agent_state": "(N, A, 7) float32: x m, y m, speed m/s, cos yaw, sin yaw, length m, width m; tile frame",
    "agent_type": "(N, A) int8: vectorworld.scene.AgentType (1 vehicle, 2 pedestrian, 3 cyclist)",
    "agent_motion": "(N, A, 6, 2) float32: m, body frame, recent path oldest first; zeros = static",
    "agent_valid": "(N, A) bool",
    "agent_ids": "(N, A) int64: track id (-1 padding)",
    "agent_is_anchor": "(N, A) bool",
    "agent_traj": "(N, A, T, 4) float64: x m, y m, yaw rad, speed m/s; GLOBAL frame; T = past + 1 + future",
    "agent_traj_valid": "(N, A, T) bool: current step at index past_steps",
}


@dataclass(frozen=True)
class DatasetConfig:
    """What a build produces; its hash guards resumption into an existing folder."""

    tiles: TileConfig = field(default_factory=TileConfig)
    scenarios_per_shard: int = 64
    compress: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def hash(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(f"{SCHEMA_VERSION}:{text}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BuildProgress:
    """Reported after every scenario processed and after every shard skipped."""

    scenarios_done: int
    tiles_done: int
    shards_written: int
    shards_skipped: int


@dataclass(frozen=True)
class BuildResult:
    out_dir: Path
    num_scenarios: int
    num_tiles: int
    num_shards: int
    shards_skipped: int
    seconds: float
    manifest_path: Path


ScenarioLike = Scenario | Callable[[], Scenario]


def shard_name(index: int) -> str:
    return f"shard_{index:05d}.npz"


def stack_samples(samples: list[TileSample], scenarios: list[Scenario], config_hash: str) -> dict[str, np.ndarray]:
    """Pad and stack samples into the shard arrays of :data:`SHARD_SCHEMA`."""
    n = len(samples)
    lanes = max((s.num_lanes for s in samples), default=0)
    agents = max((s.num_agents for s in samples), default=0)
    points = samples[0].lane_points.shape[1] if samples else 20
    steps = samples[0].agent_traj.shape[1] if samples else 0
    ids = [s.scenario_id for s in scenarios]
    out: dict[str, np.ndarray] = {
        "schema_version": np.array(SCHEMA_VERSION, np.int32),
        "config_hash": np.array(config_hash),
        "scenario_ids": np.array(ids, dtype=str).reshape(len(ids)),
        "scenario_sources": np.array([f"{s.source.dataset}:{s.source.path}#{s.source.index}" for s in scenarios],
                                     dtype=str).reshape(len(ids)),
        "tile_scenario": np.zeros(n, np.int32),
        "tile_step": np.array([s.step for s in samples], np.int32).reshape(n),
        "tile_kind": np.array([s.kind for s in samples], np.int8).reshape(n),
        "tile_anchor_id": np.array([s.anchor_id for s in samples], np.int64).reshape(n),
        "tile_center": np.array([s.center_xy for s in samples], np.float64).reshape(n, 2),
        "tile_yaw": np.array([s.yaw for s in samples], np.float64).reshape(n),
        "lane_points": np.zeros((n, lanes, points, 2), np.float32),
        "lane_valid": np.zeros((n, lanes), bool),
        "lane_ids": np.full((n, lanes), -1, np.int64),
        "lane_width": np.zeros((n, lanes), np.float32),
        "lane_speed_limit": np.zeros((n, lanes), np.float32),
        "lane_type": np.zeros((n, lanes), np.int8),
        "lane_cut": np.zeros((n, lanes, 2), bool),
        "edges": np.zeros((n, lanes, lanes), np.int8),
        "agent_state": np.zeros((n, agents, 7), np.float32),
        "agent_type": np.zeros((n, agents), np.int8),
        "agent_motion": np.zeros((n, agents, 6, 2), np.float32),
        "agent_valid": np.zeros((n, agents), bool),
        "agent_ids": np.full((n, agents), -1, np.int64),
        "agent_is_anchor": np.zeros((n, agents), bool),
        "agent_traj": np.zeros((n, agents, steps, 4), np.float64),
        "agent_traj_valid": np.zeros((n, agents, steps), bool),
    }
    position = {sid: i for i, sid in reversed(list(enumerate(ids)))}
    for t, s in enumerate(samples):
        out["tile_scenario"][t] = position.get(s.scenario_id, -1)
        nl, na = s.num_lanes, s.num_agents
        out["lane_valid"][t, :nl] = True
        for key in ("lane_points", "lane_ids", "lane_width", "lane_speed_limit", "lane_type", "lane_cut"):
            out[key][t, :nl] = getattr(s, key)
        out["edges"][t, :nl, :nl] = s.edges
        out["agent_valid"][t, :na] = True
        for key in ("agent_state", "agent_type", "agent_motion", "agent_ids", "agent_is_anchor", "agent_traj",
                    "agent_traj_valid"):
            out[key][t, :na] = getattr(s, key)
    return out


def write_shard(path: Path, arrays: dict[str, np.ndarray], compress: bool = True) -> None:
    """Write a shard atomically (temporary file + rename)."""
    saver = np.savez_compressed if compress else np.savez
    with atomic_write(path, "wb") as f:
        saver(f, **arrays)


def load_shard(path: str | Path) -> dict[str, np.ndarray]:
    """Load a shard (no pickle). Raises DataFormatError on an unreadable file or another schema version."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        raise DataFormatError(f"{path}: not a readable dataset shard: {exc}") from exc
    version = int(arrays.get("schema_version", -1))
    if version != SCHEMA_VERSION:
        raise DataFormatError(f"{path}: shard schema version {version}, this code reads {SCHEMA_VERSION}")
    return arrays


def read_manifest(out_dir: str | Path) -> dict[str, Any]:
    """The manifest of a dataset folder. Raises DataFormatError if absent or unreadable."""
    path = Path(out_dir) / MANIFEST
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DataFormatError(f"{path}: cannot read the dataset manifest: {exc}") from exc


def _write_manifest(out_dir: Path, manifest: dict[str, Any]) -> Path:
    path = out_dir / MANIFEST
    with atomic_write(path) as f:
        f.write(json.dumps(manifest, indent=2, sort_keys=True))
    return path


def _chunks(scenarios: Iterable[ScenarioLike], size: int) -> Iterator[list[ScenarioLike]]:
    chunk: list[ScenarioLike] = []
    for item in scenarios:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _existing_tiles(path: Path, entries: dict[str, dict[str, Any]], config_hash: str) -> tuple[int, int]:
    """(tiles, scenarios) of a shard already on disk, from the manifest or the shard itself."""
    if path.name in entries:
        return int(entries[path.name]["num_tiles"]), int(entries[path.name]["num_scenarios"])
    arrays = load_shard(path)
    if str(arrays["config_hash"]) != config_hash:
        raise ConfigError(f"{path} was built with another config; use a new folder")
    return len(arrays["tile_step"]), len(arrays["scenario_ids"])


def build_dataset(scenarios: Iterable[ScenarioLike], out_dir: str | Path, config: DatasetConfig = DatasetConfig(),
                  source: str = "", progress: Callable[[BuildProgress], None] | None = None,
                  limit: int | None = None) -> BuildResult:
    """Cut tiles from every scenario and write shards + manifest into ``out_dir`` (created if needed).

    ``scenarios`` yields Scenario objects or zero-argument loaders of them (loaders let a resumed build
    skip already written shards without parsing). ``limit`` caps the number of scenarios. Raises
    ConfigError if ``out_dir`` holds a dataset built with another config.
    """
    if config.scenarios_per_shard < 1:
        raise ConfigError(f"scenarios_per_shard must be >= 1, got {config.scenarios_per_shard}")
    start = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config_hash = config.hash()
    previous: dict[str, Any] = {}
    if (out / MANIFEST).exists():
        previous = read_manifest(out)
        if previous.get("config_hash") != config_hash or previous.get("schema_version") != SCHEMA_VERSION:
            raise ConfigError(f"{out} holds a dataset built with another config or schema; use a new folder")
    entries = {e["file"]: e for e in previous.get("shards", [])}
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "config_hash": config_hash, "config": config.to_dict(),
        "source": source, "schema": SHARD_SCHEMA, "complete": False, "shards": [],
    }
    totals = {"scenarios": 0, "tiles": 0, "written": 0, "skipped": 0}
    items: Iterable[ScenarioLike] = scenarios
    if limit is not None:
        items = itertools.islice(scenarios, limit)
    for index, chunk in enumerate(_chunks(items, config.scenarios_per_shard)):
        path = out / shard_name(index)
        skipped = path.exists()
        if skipped:
            num_tiles, num_scenarios = _existing_tiles(path, entries, config_hash)
            entry = entries.get(path.name) or {"file": path.name, "num_tiles": num_tiles,
                                               "num_scenarios": num_scenarios}
            totals["skipped"] += 1
        else:
            loaded: list[Scenario] = []
            samples: list[TileSample] = []
            for item in chunk:
                loaded.append(item() if callable(item) else item)
                samples.extend(iter_tiles(loaded[-1], config.tiles))
                if progress is not None:
                    progress(BuildProgress(totals["scenarios"] + len(loaded), totals["tiles"] + len(samples),
                                           totals["written"], totals["skipped"]))
            write_shard(path, stack_samples(samples, loaded, config_hash), config.compress)
            num_tiles, num_scenarios = len(samples), len(loaded)
            entry = {"file": path.name, "num_tiles": num_tiles, "num_scenarios": num_scenarios,
                     "scenario_ids": [s.scenario_id for s in loaded]}
            totals["written"] += 1
        totals["scenarios"] += num_scenarios
        totals["tiles"] += num_tiles
        manifest["shards"].append(entry)
        manifest.update(num_scenarios=totals["scenarios"], num_tiles=totals["tiles"],
                        num_shards=len(manifest["shards"]))
        _write_manifest(out, manifest)
        if progress is not None and skipped:
            progress(BuildProgress(totals["scenarios"], totals["tiles"], totals["written"], totals["skipped"]))
    manifest.update(complete=True, num_scenarios=totals["scenarios"], num_tiles=totals["tiles"],
                    num_shards=len(manifest["shards"]))
    path = _write_manifest(out, manifest)
    return BuildResult(out, totals["scenarios"], totals["tiles"], len(manifest["shards"]), totals["skipped"],
                       time.perf_counter() - start, path)


def iter_shard_tiles(out_dir: str | Path) -> Iterator[dict[str, np.ndarray]]:
    """Load every shard listed in the manifest, in order."""
    manifest = read_manifest(out_dir)
    for entry in manifest["shards"]:
        yield load_shard(Path(out_dir) / entry["file"])
