"""Throughput of the data readers and the tile dataset builder. Prints figures; asserts nothing.

Usage: ``python tools/bench_readers.py [--womd FILE] [--repeat N] [--json] [--wall]``

Times are CPU seconds of this (single-threaded) process unless ``--wall`` is given.

* WOMD: TFRecord framing + CRC (MB/s), protobuf parsing, full conversion to Scenario (scenarios/s, MB/s),
  plain and gzip, on the shared one-scenario sample (or --womd FILE).
* CRC-32C: the numpy implementation vs the byte loop (and a compiled package if installed).
* nuPlan: a synthetic log (tests/data/nuplan_fixture.py: 4 scenes x 20 s at 20 Hz) with its map.
* Tiles: tiles/s of cropping, and of build_dataset (cropping + compressed shards) end to end.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vectorworld.data import crc32c, womd_pb2  # noqa: E402
from vectorworld.data.dataset import DatasetConfig, build_dataset  # noqa: E402
from vectorworld.data.nuplan import iter_nuplan  # noqa: E402
from vectorworld.data.tfrecord import iter_records, write_records  # noqa: E402
from vectorworld.data.tiles import TileConfig, iter_tiles  # noqa: E402
from vectorworld.data.womd import iter_womd  # noqa: E402

DEFAULT_WOMD = ROOT / "../shared/data/womd/motion_data_one_scenario.tfrecord"


CLOCK = time.process_time
"""CPU time of this process: figures stay meaningful on a machine shared with other jobs (``--wall``
switches to wall-clock time)."""


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Best-of-3 seconds per call of ``fn`` averaged over ``repeat`` calls."""
    best = float("inf")
    for _ in range(3):
        start = CLOCK()
        for _ in range(repeat):
            fn()
        best = min(best, (CLOCK() - start) / repeat)
    return best


def bench_womd(path: Path, repeat: int) -> dict[str, float]:
    size_mb = path.stat().st_size / 1e6
    payload = next(iter_records(path)).payload
    out: dict[str, float] = {"file_mb": size_mb}
    t = timed(lambda: list(iter_records(path)), repeat)
    out["framing_crc_mb_s"] = size_mb / t
    t = timed(lambda: womd_pb2.Scenario.FromString(payload), repeat)
    out["proto_parse_ms"] = 1e3 * t
    t = timed(lambda: list(iter_womd(path)), repeat)
    out["read_scenarios_s"] = 1.0 / t
    out["read_mb_s"] = size_mb / t
    with tempfile.TemporaryDirectory() as tmp:
        gz = Path(tmp) / "sample.tfrecord.gz"
        write_records(gz, [payload], compress=True)
        t = timed(lambda: list(iter_womd(gz)), repeat)
        out["read_gzip_scenarios_s"] = 1.0 / t
    return out


def bench_crc(path: Path) -> dict[str, float]:
    payload = next(iter_records(path)).payload
    mb = len(payload) / 1e6
    out = {"numpy_mb_s": mb / timed(lambda: crc32c.crc32c_numpy(payload), 3),
           "bytewise_mb_s": mb / timed(lambda: crc32c.crc32c_bytewise(payload), 1)}
    out["dispatch_mb_s"] = mb / timed(lambda: crc32c.crc32c(payload), 3)
    return out


def _fixture_module() -> object:
    spec = importlib.util.spec_from_file_location("nuplan_fixture", ROOT / "tests/data/nuplan_fixture.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["nuplan_fixture"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def bench_nuplan(repeat: int) -> dict[str, float]:
    fixture = _fixture_module()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "log.db"
        fixture.build_log_db(db, frames_per_scene=400, scenes=4)
        fixture.build_maps_root(Path(tmp) / "maps")
        t_log = timed(lambda: list(iter_nuplan(db)), repeat)
        t_map = timed(lambda: list(iter_nuplan(db, maps_root=Path(tmp) / "maps")), repeat)
    return {"scenes": 4, "steps_per_scene": 200, "read_scenarios_s": 4 / t_log, "read_with_map_scenarios_s": 4 / t_map}


def bench_tiles(path: Path, repeat: int) -> dict[str, float]:
    scenario = next(iter_womd(path))
    config = TileConfig()
    tiles = list(iter_tiles(scenario, config))
    t = timed(lambda: list(iter_tiles(scenario, config)), max(1, repeat // 4))
    out = {"tiles_per_scenario": len(tiles), "crop_tiles_s": len(tiles) / t}
    with tempfile.TemporaryDirectory() as tmp:
        count = max(2, repeat // 2)
        start = CLOCK()
        result = build_dataset(iter_womd_many(path, count), Path(tmp) / "ds", DatasetConfig(scenarios_per_shard=4))
        seconds = CLOCK() - start
        out["build_tiles_s"] = result.num_tiles / seconds
        out["build_scenarios_s"] = result.num_scenarios / seconds
        out["shard_kb_per_tile"] = sum(p.stat().st_size for p in (Path(tmp) / "ds").glob("*.npz")) / 1e3 / max(
            result.num_tiles, 1)
    return out


def iter_womd_many(path: Path, count: int):
    """The sample file read ``count`` times (parsing included, as in a real build)."""
    for _ in range(count):
        yield from iter_womd(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--womd", type=Path, default=DEFAULT_WOMD)
    parser.add_argument("--repeat", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--wall", action="store_true", help="time with the wall clock instead of CPU time")
    args = parser.parse_args(argv)
    global CLOCK
    if args.wall:
        CLOCK = time.perf_counter
    results: dict[str, dict[str, float]] = {}
    if args.womd.is_file():
        results["womd"] = bench_womd(args.womd, args.repeat)
        results["crc32c"] = bench_crc(args.womd)
        results["tiles"] = bench_tiles(args.womd, args.repeat)
    else:
        print(f"skipping WOMD and tile benchmarks: {args.womd} not found", file=sys.stderr)
    results["nuplan"] = bench_nuplan(max(1, args.repeat // 4))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for group, figures in results.items():
            print(f"[{group}]")
            for key, value in figures.items():
                print(f"  {key:28s} {value:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
