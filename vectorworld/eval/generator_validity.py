"""The learned generator's validity filter applied to ground truth: tiles a reference generator made, and
real (WOMD / nuPlan) tiles. Ground truth that fails the filter is a filter bug (or a data artefact), so
these pass rates are the filter's own test.

* :func:`streaming_pass_rate`: grow worlds with a generator (``procedural``) and check every tile it
  answers exactly as the learned generator's candidates are checked (same context, ports and known lanes);
* :func:`tiles_pass_rate`: partitioned tiles (a corpus or a dataset build), their frontier lanes checked
  against the ports of :func:`~vectorworld.generation.learned.tile_context.tile_ports`.

Both use the strict filter by default (``prune_spurs`` off: a dangling end fails the tile rather than
being pruned), so a dangling ground-truth lane counts against the filter.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import IdAllocator, TileContent, TileFrame, TileGenerator, TileRequest
from vectorworld.generation.learned.filter_config import CandidateCheck, StitchConfig
from vectorworld.generation.learned.lane_rules import lanes_reference
from vectorworld.generation.learned.stitching import check_candidate
from vectorworld.generation.learned.tile_context import build_context, clip_to_square, tile_ports
from vectorworld.generation.learned.tile_tensors import LANE_POINTS, TileTensors


@dataclass
class PassRate:
    """Checked tiles, how many passed, why the others failed, and the filter's time per tile (ms)."""

    tiles: int = 0
    passed: int = 0
    unmatched: int = 0
    dangling: int = 0
    check_ms: list[float] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.passed / self.tiles if self.tiles else float("nan")

    def add(self, check: CandidateCheck, ms: float) -> None:
        self.tiles += 1
        self.passed += int(check.valid)
        self.unmatched += int(check.unmatched_ports > 0)
        self.dangling += int(check.dangling > 0)
        self.check_ms.append(ms)

    def as_dict(self) -> dict[str, float]:
        return {"tiles": float(self.tiles), "pass_share": self.share, "with_unmatched_port": float(self.unmatched),
                "with_dangling_end": float(self.dangling),
                "check_ms_mean": float(np.mean(self.check_ms)) if self.check_ms else float("nan")}


def _timed_check(lanes: np.ndarray, ports: list, known_points: np.ndarray, config: StitchConfig
                 ) -> tuple[CandidateCheck, float]:
    start = time.perf_counter()
    check = check_candidate(lanes, ports, lanes_reference(known_points), config)
    return check, (time.perf_counter() - start) * 1e3


class _Checked(TileGenerator):
    """Delegates to a generator and checks each answered tile with the learned generator's filter."""

    def __init__(self, inner: TileGenerator, rate: PassRate, config: StitchConfig) -> None:
        self.inner, self.rate, self.config = inner, rate, config
        self.name = inner.name

    def first_tile(self, frame: TileFrame, lane_ids: IdAllocator, rng: np.random.Generator) -> TileContent:
        return self.inner.first_tile(frame, lane_ids, rng)

    def generate(self, request: TileRequest) -> TileContent:
        content = self.inner.generate(request)
        ctx = build_context(request, 40, 24)
        runs = [clip_to_square(request.frame.to_local(lane.points)) for lane in content.lanes]
        lanes = np.array([geometry.resample_polyline(r, LANE_POINTS) for r in runs if r is not None])
        known = ctx.filter_lanes()
        check, ms = _timed_check(lanes.reshape(-1, LANE_POINTS, 2), list(ctx.ports), known, self.config)
        self.rate.add(check, ms)
        return content


def streaming_pass_rate(generator: str = "procedural", worlds: int = 4, tiles_per_world: int = 12,
                        seed: int = 0, config: StitchConfig | None = None) -> PassRate:
    """Grow ``worlds`` worlds with ``generator`` (as the corpus and the evaluation do) and check every
    outpainted tile with the learned generator's validity filter."""
    from vectorworld.generation.base import make_generator
    from vectorworld.world.streaming import StreamingWorld, WorldConfig

    rate = PassRate()
    spy = _Checked(make_generator(generator), rate, config or StitchConfig(prune_spurs=False))
    rng = np.random.default_rng(seed)
    for _ in range(worlds):
        world = StreamingWorld(spy, rng, WorldConfig(max_tiles_per_update=1, retention_m=1e9))
        world.start(np.zeros(2), float(rng.uniform(-np.pi, np.pi)))
        for _ in range(tiles_per_world - 1):
            if world.grow_at_random_end(rng) is None:
                break
    return rate


def tiles_pass_rate(tiles: dict[str, np.ndarray], config: StitchConfig | None = None) -> PassRate:
    """Check the frontier lanes of every partitioned tile (stacked TileTensors fields) against its ports.
    Build the tiles at a capacity that holds every lane (a tile cut at capacity loses lanes and dangles)."""
    config = config or StitchConfig(prune_spurs=False)
    rate = PassRate()
    for i in range(len(tiles["lane_valid"])):
        tile = TileTensors(**{k: v[i] for k, v in tiles.items()})
        known = tile.lane_points[tile.lane_valid & tile.lane_cond].astype(np.float64)
        frontier = tile.lane_points[tile.lane_valid & ~tile.lane_cond].astype(np.float64)
        check, ms = _timed_check(frontier, tile_ports(tile), known, config)
        rate.add(check, ms)
    return rate
