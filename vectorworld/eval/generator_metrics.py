"""Generator fidelity metrics (DESIGN §8), measured on worlds grown tile by tile with a generator.

``evaluate_generator`` grows worlds with a :class:`~vectorworld.generation.base.TileGenerator` (every tile
after the first is an outpainting call), then computes on the committed world:

* ``epd_m`` mean / p95 over every successor edge touching a generated lane (stitched), and the raw model
  output's gaps when the generator reports them (``last_diagnostics.raw_gaps_m``), and those of the
  model-predicted edges alone (``raw_edge_epd_m``, over ``raw_edge_links`` edges: port links are pinned);
* ``dangling_rate``: fraction of generated lane ends without successor / predecessor lying > 1 m inside
  the tile border;
* ``init_overlap_rate``: fraction of generated agents whose box overlaps another agent's by > 0.01 m^2;
* ``offlane_rate``: fraction of generated vehicles > 2.5 m from the nearest lane or > 30 deg off it;
* Jensen-Shannon divergences (base 2, in [0, 1]) of agent nearest-neighbour distance, lateral offset,
  heading offset, length, width and speed against reference tiles, and the Frechet distance of per-tile
  lane-graph statistics (lanes per tile, lane length, curvature, node degree, connected components), its
  spread over bootstrap resamples of the grown worlds (``lane_frechet_sd``), the mean unsigned curvature
  (1/m) of generated lanes and the share of them that are straight (``straight_lane_share``,
  :data:`STRAIGHT_TOLERANCE_M`), each next to the reference's;
* the same world figures over the tiles the model itself answered (``learned_only_*``, no fallbacks), lane
  Fréchet too (``learned_only_lane_frechet``: the procedural fallback tiles pull the all-tile figure towards
  the procedural generator's, so a generator that falls back more reads better there);
* ``tile_ms`` p50 / p95 (wall, torch on one thread by default) of the generate calls, ``tile_cpu_ms``
  (process CPU time, which a busy machine does not inflate), the fallback share and the share of tiles whose
  winner got straight continuations of ports every candidate left open (``continued_ports_rate``); where the generator
  times its stages (``last_diagnostics.stage_ms``), the mean ms per call of each (``tile_ms_<stage>_mean``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import (
    AgentSpawns,
    IdAllocator,
    TileContent,
    TileFrame,
    TileGenerator,
    TileRequest,
)
from vectorworld.generation.learned.spawn_filter import nearest_lane
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M, TileTensors
from vectorworld.scene import LaneGraph

AGENT_BINS: dict[str, np.ndarray] = {
    "nn_dist_m": np.linspace(0.0, 40.0, 41),
    "lateral_m": np.linspace(0.0, 3.0, 31),
    "heading_rad": np.linspace(0.0, 0.6, 31),
    "length_m": np.linspace(0.0, 8.0, 33),
    "width_m": np.linspace(0.0, 3.0, 31),
    "speed_mps": np.linspace(0.0, 25.0, 26),
}
LANE_STATS = ("lanes", "lane_length_m", "curvature", "degree", "components")
STRAIGHT_TOLERANCE_M = 0.1
"""A cropped lane whose points all lie this close to its chord is straight. Most lanes of the city corpus are
(a road's lanes between junctions); a generator whose roads bend a little one way and back has few, which
its mean curvature alone does not tell apart from a few sharp corners."""


@dataclass
class TileRecord:
    """One generated tile: frame, its new lanes and agents, latency and the generator's diagnostics."""

    frame: TileFrame
    lane_ids: tuple[int, ...]
    agents: AgentSpawns
    latency_ms: float
    used_fallback: bool
    raw_gaps_m: np.ndarray | None = None
    stage_ms: dict[str, float] | None = None
    raw_edge_gaps_m: np.ndarray | None = None
    continued_ports: bool = False


class _CpuTimed(TileGenerator):
    """Delegates to a generator and records the process CPU time (ms) of each ``generate`` call: with a
    busy machine the wall time of a 2-thread call says more about the neighbours than about the model. It
    also keeps each call's content with the generator's diagnostics of that call, so that a tile gets its own
    call's figures when one grow step makes several (:meth:`diagnostics_of`)."""

    def __init__(self, inner: TileGenerator) -> None:
        self.inner = inner
        self.name = inner.name
        self.cpu_ms: list[float] = []
        self.calls: list[tuple[TileContent, object]] = []
        """(content, diagnostics) of the calls since :meth:`forget_calls`."""

    def diagnostics_of(self, content: TileContent) -> object:
        """The diagnostics of the call that returned ``content`` (this very object), None if none did."""
        return next((diag for made, diag in reversed(self.calls) if made is content), None)

    def forget_calls(self) -> None:
        self.calls.clear()

    def first_tile(self, frame: TileFrame, lane_ids: IdAllocator, rng: np.random.Generator) -> TileContent:
        return self.inner.first_tile(frame, lane_ids, rng)

    def generate(self, request: TileRequest) -> TileContent:
        start = time.process_time()
        content = self.inner.generate(request)
        self.cpu_ms.append((time.process_time() - start) * 1e3)
        self.calls.append((content, getattr(self.inner, "last_diagnostics", None)))
        return content


@dataclass
class GrownWorlds:
    """Worlds grown by one generator: their graphs and the tile records of each."""

    graphs: list[LaneGraph] = field(default_factory=list)
    records: list[list[TileRecord]] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)


def grow_worlds(generator: TileGenerator, worlds: int, tiles_per_world: int, seed: int,
                max_tiles: int | None = None, growth: str = "ends") -> GrownWorlds:
    """Grow worlds tile by tile at random open out ports, or ahead of a virtual ego with ``growth="drive"``
    (the two procedures of the training corpus, :mod:`vectorworld.world.growth`).

    Each world has its first tile plus up to ``tiles_per_world - 1`` outpainted tiles (the ones recorded;
    straight fallback lanes are none); ``max_tiles`` caps the outpainted tiles over all worlds (the last
    world is cut short, later ones are not grown)."""
    from vectorworld.world.growth import CALLS_PER_TILE, check_growth, grower
    from vectorworld.world.streaming import StreamingWorld, WorldConfig

    check_growth(growth)

    rng = np.random.default_rng(seed)
    out = GrownWorlds()
    generator = _CpuTimed(generator)
    left = np.inf if max_tiles is None else max_tiles
    for _ in range(worlds):
        if left <= 0:
            break
        world = StreamingWorld(generator, rng, WorldConfig(max_tiles_per_update=1, retention_m=1e9))
        first = world.start(np.zeros(2), float(rng.uniform(-np.pi, np.pi)))
        grow = grower(world, first, rng, growth)
        records: list[TileRecord] = []
        for _ in range(CALLS_PER_TILE[growth] * tiles_per_world):
            if len(records) >= min(tiles_per_world - 1, left):
                break
            placed = [r.agents.xy for r in records if len(r.agents)]  # new tiles spawn clear of them
            generator.forget_calls()
            grown = grow(np.concatenate(placed) if placed else None)
            if grown is None:
                break
            for made in grown:
                diag = generator.diagnostics_of(made.content)
                learned = diag is not None and not made.content.used_fallback
                raw = diag.raw_gaps_m if learned else None
                raw_edges = getattr(diag, "raw_edge_gaps_m", None) if learned else None
                stages = getattr(diag, "stage_ms", None) or None
                records.append(TileRecord(TileFrame(made.tile.center_xy, made.tile.yaw), made.tile.lane_ids,
                                          made.content.agents, made.tile.latency_ms,
                                          made.content.used_fallback, raw, stages, raw_edges,
                                          bool(getattr(diag, "continued_ports", False))))
        out.graphs.append(world.graph)
        out.records.append(records)
        left -= len(records)
    out.cpu_ms = generator.cpu_ms
    return out


def js_divergence(a: np.ndarray, b: np.ndarray, bins: np.ndarray) -> float:
    """Jensen-Shannon divergence (base 2) between samples a and b histogrammed on ``bins`` (clipped)."""
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    pa = np.histogram(np.clip(a, bins[0], bins[-1]), bins)[0].astype(np.float64) + 1e-9
    pb = np.histogram(np.clip(b, bins[0], bins[-1]), bins)[0].astype(np.float64) + 1e-9
    pa, pb = pa / pa.sum(), pb / pb.sum()
    m = 0.5 * (pa + pb)
    return float(0.5 * np.sum(pa * np.log2(pa / m)) + 0.5 * np.sum(pb * np.log2(pb / m)))


def _sqrtm_psd(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(0.5 * (a + a.T))
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def frechet_distance(x: np.ndarray, y: np.ndarray) -> float:
    """Frechet distance between Gaussians fitted to feature rows x (N, D) and y (M, D), after scaling every
    feature by the reference (y) standard deviation so that units do not dominate."""
    if len(x) < 2 or len(y) < 2:
        return float("nan")
    scale = np.maximum(y.std(0), 1e-6)
    x, y = x / scale, y / scale
    mx, my = x.mean(0), y.mean(0)
    cx, cy = np.cov(x, rowvar=False), np.cov(y, rowvar=False)
    root = _sqrtm_psd(cy)
    cross = _sqrtm_psd(root @ cx @ root)
    return float(np.sum((mx - my) ** 2) + np.trace(cx) + np.trace(cy) - 2.0 * np.trace(cross))


def tile_agent_features(tile: TileTensors) -> dict[str, np.ndarray]:
    """Per-agent features of one cropped tile (tile frame): NN distance, |lateral| and |heading| offset to
    the nearest lane (vehicles), length, width, speed."""
    state = tile.agent_state[tile.agent_valid].astype(np.float64)
    lanes = [p.astype(np.float64) for p in tile.lane_points[tile.lane_valid]]
    out = {k: np.zeros(0) for k in AGENT_BINS}
    if len(state) == 0:
        return out
    xy = state[:, :2]
    if len(state) > 1:
        d = np.linalg.norm(xy[:, None] - xy[None], axis=-1)
        np.fill_diagonal(d, np.inf)
        out["nn_dist_m"] = d.min(1)
    vehicle = tile.agent_type[tile.agent_valid] == 0
    if lanes and vehicle.any():
        _, off, err = nearest_lane(xy[vehicle], np.arctan2(state[vehicle, 4], state[vehicle, 3]), lanes)
        out["lateral_m"], out["heading_rad"] = off, err
    out["length_m"], out["width_m"], out["speed_mps"] = state[:, 5], state[:, 6], state[:, 2]
    return out


def tile_lane_stats(tile: TileTensors) -> np.ndarray:
    """Lane-graph statistics (5,) of the front half of a cropped tile: lane count, mean length (m), mean
    curvature (1/m), mean successor+predecessor degree, connected components of the successor graph."""
    sel = np.flatnonzero(tile.lane_valid & ~tile.lane_cond)
    if len(sel) == 0:
        return np.zeros(len(LANE_STATS))
    pts = tile.lane_points[sel].astype(np.float64)
    length = geometry.polyline_lengths(pts)[:, -1]
    curv = np.array([geometry.curvature(p)[1:-1].mean() for p in pts])
    edges = tile.edges[np.ix_(sel, sel)]
    succ = edges == 2
    degree = succ.sum(1) + succ.sum(0)
    parent = list(range(len(sel)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i, j in zip(*np.nonzero(succ), strict=True):
        parent[find(int(i))] = find(int(j))
    components = len({find(i) for i in range(len(sel))})
    return np.array([len(sel), length.mean(), curv.mean(), degree.mean(), components], np.float64)


def straight_lanes(tile: TileTensors) -> np.ndarray:
    """(n,) bool over the front-half lanes of a cropped tile (the lanes :func:`tile_lane_stats` counts): the
    lane lies within :data:`STRAIGHT_TOLERANCE_M` of its chord."""
    pts = tile.lane_points[tile.lane_valid & ~tile.lane_cond].astype(np.float64)
    return geometry.chord_offsets(pts) <= STRAIGHT_TOLERANCE_M


def straight_lane_share(tiles: list[TileTensors]) -> float:
    """Share of the front-half lanes of cropped tiles that are straight (:func:`straight_lanes`), nan for none."""
    flags = np.concatenate([straight_lanes(t) for t in tiles]) if tiles else np.zeros(0, bool)
    return float(flags.mean()) if len(flags) else float("nan")


def convex_intersection_area(a: np.ndarray, b: np.ndarray) -> float:
    """Area (m^2) of the intersection of two convex counter-clockwise polygons (K, 2) and (M, 2)
    (Sutherland-Hodgman clipping of a by every edge of b, then the shoelace formula)."""
    poly = [p for p in a]
    for k in range(len(b)):
        if not poly:
            return 0.0
        p0, p1 = b[k], b[(k + 1) % len(b)]
        edge = p1 - p0

        def side(q: np.ndarray, p0: np.ndarray = p0, edge: np.ndarray = edge) -> float:
            return float(edge[0] * (q[1] - p0[1]) - edge[1] * (q[0] - p0[0]))

        clipped = []
        for i, cur in enumerate(poly):
            prev = poly[i - 1]
            s_cur, s_prev = side(cur), side(prev)
            if s_cur >= 0.0:
                if s_prev < 0.0:
                    clipped.append(prev + (cur - prev) * (s_prev / (s_prev - s_cur)))
                clipped.append(cur)
            elif s_prev >= 0.0:
                clipped.append(prev + (cur - prev) * (s_prev / (s_prev - s_cur)))
        poly = clipped
    if len(poly) < 3:
        return 0.0
    pts = np.array(poly)
    x, y = pts[:, 0], pts[:, 1]
    return float(0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def _box_overlap_areas(xy: np.ndarray, yaw: np.ndarray, length: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Per box (N,), the largest overlap area (m^2) with any other box."""
    n = len(xy)
    best = np.zeros(n)
    hit = geometry.pairwise_box_overlap(xy, yaw, length, width, np.ones(n, bool))
    if not hit.any():
        return best
    corners = geometry.box_corners(xy, yaw, length, width)
    for i, j in zip(*np.nonzero(np.triu(hit)), strict=True):
        area = convex_intersection_area(corners[i], corners[j])
        best[i], best[j] = max(best[i], area), max(best[j], area)
    return best


def world_metrics(grown: GrownWorlds) -> dict[str, float]:
    """epd, dangling, overlap, offlane, latency and fallback figures of grown worlds."""
    gaps, raw_gaps, raw_edge_gaps, latency, fallback, continued = [], [], [], [], [], []
    stage_ms: dict[str, float] = {}
    staged = 0
    ends = dangling = 0
    agents_total = overlapping = vehicles = offlane = 0
    for graph, records in zip(grown.graphs, grown.records, strict=True):
        all_agents = [r.agents for r in records if len(r.agents)]
        for rec in records:
            latency.append(rec.latency_ms)
            fallback.append(rec.used_fallback)
            continued.append(rec.continued_ports)
            if rec.raw_gaps_m is not None:
                raw_gaps.extend(rec.raw_gaps_m.tolist())
            if rec.raw_edge_gaps_m is not None:
                raw_edge_gaps.extend(rec.raw_edge_gaps_m.tolist())
            if rec.stage_ms:
                staged += 1
                for stage, ms in rec.stage_ms.items():
                    stage_ms[stage] = stage_ms.get(stage, 0.0) + ms
            edges = set()
            for lane_id in rec.lane_ids:
                lane = graph[lane_id]
                edges.update((lane_id, s) for s in lane.successors)
                edges.update((p, lane_id) for p in lane.predecessors)
                for xy, linked in ((lane.points[0], lane.predecessors), (lane.points[-1], lane.successors)):
                    local = rec.frame.to_local(xy)
                    ends += 1
                    if not linked and np.max(np.abs(local)) < HALF_TILE_M - 1.0:
                        dangling += 1
            gaps.extend(float(np.linalg.norm(graph[a].points[-1] - graph[b].points[0]))
                        for a, b in edges if a in graph and b in graph)
        if all_agents:
            agents = AgentSpawns.concat(all_agents)
            areas = _box_overlap_areas(agents.xy, agents.yaw, agents.length, agents.width)
            agents_total += len(agents)
            overlapping += int((areas > 0.01).sum())
            veh = agents.agent_type == 1
            for xy, yaw in zip(agents.xy[veh], agents.yaw[veh], strict=True):
                vehicles += 1
                ids = graph.near(xy, 8.0)
                if not ids:
                    offlane += 1
                    continue
                _, off, err = nearest_lane(xy[None], np.array([yaw]), [graph[i].points for i in ids])
                offlane += int(off[0] > 2.5 or err[0] > np.deg2rad(30.0))

    def stat(values: list[float], q: float | None = None) -> float:
        if not values:
            return float("nan")
        return float(np.mean(values) if q is None else np.percentile(values, q))

    return {
        "tiles": float(len(latency)),
        "epd_m_mean": stat(gaps), "epd_m_p95": stat(gaps, 95),
        "raw_epd_m_mean": stat(raw_gaps), "raw_epd_m_p95": stat(raw_gaps, 95),
        "raw_edge_epd_m_mean": stat(raw_edge_gaps), "raw_edge_epd_m_p95": stat(raw_edge_gaps, 95),
        "raw_edge_links": float(len(raw_edge_gaps)),
        "dangling_rate": dangling / max(ends, 1),
        "init_overlap_rate": overlapping / max(agents_total, 1),
        "offlane_rate": offlane / max(vehicles, 1),
        "agents_per_tile": agents_total / max(len(latency), 1),
        "fallback_rate": float(np.mean(fallback)) if fallback else float("nan"),
        "continued_ports_rate": float(np.mean(continued)) if continued else float("nan"),
        "tile_ms_p50": stat(latency, 50), "tile_ms_p95": stat(latency, 95),
        "tile_cpu_ms_p50": stat(grown.cpu_ms, 50), "tile_cpu_ms_p95": stat(grown.cpu_ms, 95),
        **{f"tile_ms_{stage}_mean": ms / staged for stage, ms in stage_ms.items()},
    }


def distribution_metrics(tiles: list[TileTensors], reference: list[TileTensors]) -> dict[str, float]:
    """JSDs of agent features and the Frechet distance of lane statistics, generated vs reference crops."""
    def pooled(crops: list[TileTensors]) -> dict[str, np.ndarray]:
        feats = [tile_agent_features(t) for t in crops]
        return {k: np.concatenate([f[k] for f in feats]) if feats else np.zeros(0) for k in AGENT_BINS}

    gen, ref = pooled(tiles), pooled(reference)
    out = {f"jsd_{k}": js_divergence(gen[k], ref[k], bins) for k, bins in AGENT_BINS.items()}
    gen_stats, ref_stats = lane_stats(tiles), lane_stats(reference)
    out["lane_frechet"] = frechet_distance(gen_stats, ref_stats)
    out.update(lane_stat_means(gen_stats, ref_stats))
    out["straight_lane_share"], out["reference_straight_lane_share"] = (straight_lane_share(tiles),
                                                                         straight_lane_share(reference))
    return out


def lane_stats(tiles: list[TileTensors]) -> np.ndarray:
    """(N, 5) rows of :func:`tile_lane_stats`, one per cropped tile."""
    return np.array([tile_lane_stats(t) for t in tiles]).reshape(-1, len(LANE_STATS))


def frechet_spread(world_stats: list[np.ndarray], ref_stats: np.ndarray, draws: int = 200,
                   seed: int = 0) -> float:
    """Standard deviation of the lane Frechet distance over bootstrap resamples of the generated worlds
    (``world_stats``: one (n_i, 5) array of :func:`tile_lane_stats` rows per world; each draw takes as many
    worlds as there are, with replacement): how far the figure may move on other worlds of the same size.
    Worlds, not tiles, are resampled, because a world's tiles continue each other. nan for under 2 worlds."""
    if len(world_stats) < 2:
        return float("nan")
    rng = np.random.default_rng(seed)
    values = [frechet_distance(np.concatenate([world_stats[i] for i in rng.integers(0, len(world_stats),
                                                                                     len(world_stats))]),
                               ref_stats) for _ in range(draws)]
    return float(np.nanstd(values))


def lane_stat_means(gen_stats: np.ndarray, ref_stats: np.ndarray) -> dict[str, float]:
    """Per-tile lane statistics (N, 5) and (M, 5) of :func:`tile_lane_stats` -> the mean of each, generated
    (``<stat>_mean``) and reference (``reference_<stat>_mean``), and each mean's share of the Frechet
    distance (``frechet_<stat>``: squared difference of the means in reference standard deviations, the
    term :func:`frechet_distance` adds for that statistic before the covariance terms): which statistic
    keeps a generator far from the reference."""
    out: dict[str, float] = {}
    scale = np.maximum(ref_stats.std(0), 1e-6) if len(ref_stats) > 1 else None
    for col, name in enumerate(LANE_STATS):
        gen = float(gen_stats[:, col].mean()) if len(gen_stats) else float("nan")
        ref = float(ref_stats[:, col].mean()) if len(ref_stats) else float("nan")
        out[f"{name}_mean"], out[f"reference_{name}_mean"] = gen, ref
        out[f"frechet_{name}"] = float(((gen - ref) / scale[col]) ** 2) if scale is not None else float("nan")
    return out


def crop_grown(grown: GrownWorlds, max_lanes: int = 40, max_agents: int = 24,
               agents_fn: Callable[[TileRecord, LaneGraph], AgentSpawns] | None = None) -> list[TileTensors]:
    """Crop every generated tile of grown worlds at its frame; ``agents_fn`` may replace its agents."""
    from vectorworld.train.tile_corpus import crop_tile

    crops = []
    for graph, records in zip(grown.graphs, grown.records, strict=True):
        for rec in records:
            agents = agents_fn(rec, graph) if agents_fn is not None else rec.agents
            crops.append(crop_tile(graph, rec.frame, agents, max_lanes, max_agents))
    return crops


def evaluate_generator(generator: TileGenerator, reference: list[TileTensors], worlds: int = 10,
                       tiles_per_world: int = 12, seed: int = 1000, threads: int = 1,
                       max_tiles: int | None = None, growth: str = "ends") -> dict[str, float]:
    """All §8 metrics of one generator (torch limited to ``threads`` threads while it runs); ``max_tiles``
    caps the outpainted tiles and ``growth`` says how worlds grow (see :func:`grow_worlds`)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        start = time.perf_counter()
        grown = grow_worlds(generator, worlds, tiles_per_world, seed, max_tiles, growth)
        metrics = world_metrics(grown)
        metrics["wall_s"] = time.perf_counter() - start
        learned = GrownWorlds(graphs=grown.graphs, records=[[r for r in rs if not r.used_fallback]
                                                            for rs in grown.records])
        if any(learned.records):
            only = world_metrics(learned)
            metrics.update({f"learned_only_{k}": only[k] for k in (
                "tiles", "epd_m_mean", "epd_m_p95", "dangling_rate", "init_overlap_rate", "offlane_rate",
                "agents_per_tile", "tile_ms_p50", "tile_ms_p95")})
    finally:
        torch.set_num_threads(previous)
    worlds_crops = [crop_grown(GrownWorlds(graphs=[graph], records=[records]))
                    for graph, records in zip(grown.graphs, grown.records, strict=True)]
    metrics.update(distribution_metrics([tile for crops in worlds_crops for tile in crops], reference))
    ref_stats = lane_stats(reference)
    metrics["lane_frechet_sd"] = frechet_spread([lane_stats(crops) for crops in worlds_crops], ref_stats)
    if any(learned.records):   # fallback tiles are procedural: they pull the all-tile figure towards its own
        metrics["learned_only_lane_frechet"] = frechet_distance(lane_stats(crop_grown(learned)), ref_stats)
    return metrics


def naive_agents(record: TileRecord, graph: LaneGraph, rng: np.random.Generator) -> AgentSpawns:
    """The naive baseline: as many agents as the generator placed, dropped uniformly at random on the same
    new lanes (random lane, random arc length, lane heading), with uniform sizes and speeds."""
    lanes = [graph[i] for i in record.lane_ids if i in graph]
    n = len(record.agents)
    if n == 0 or not lanes:
        return AgentSpawns.none()
    pick = rng.integers(0, len(lanes), n)
    xy, yaw = np.zeros((n, 2)), np.zeros(n)
    for k, li in enumerate(pick):
        lane = lanes[li]
        s = rng.uniform(0.0, lane.length_m)
        xy[k] = geometry.interpolate_polyline(lane.points, lane.arc_length, np.array([s]))[0]
        heading = geometry.polyline_headings(lane.points)
        yaw[k] = np.interp(s, lane.arc_length, np.unwrap(heading))
    return AgentSpawns(xy=xy, yaw=geometry.wrap_angle(yaw), speed=rng.uniform(0.0, 15.0, n),
                       length=rng.uniform(3.5, 6.0, n), width=rng.uniform(1.6, 2.4, n),
                       agent_type=np.ones(n, np.int8), lane_id=np.array([lanes[i].id for i in pick], np.int64),
                       motion_code=np.zeros((n, 6, 2)))


def naive_baseline_metrics(grown: GrownWorlds, reference: list[TileTensors], seed: int = 0) -> dict[str, float]:
    """Agent metrics of the naive baseline on the lanes of already grown worlds."""
    rng = np.random.default_rng(seed)
    replaced = GrownWorlds(graphs=grown.graphs, cpu_ms=grown.cpu_ms, records=[
        [TileRecord(r.frame, r.lane_ids, naive_agents(r, g, rng), r.latency_ms, r.used_fallback, r.raw_gaps_m)
         for r in records] for g, records in zip(grown.graphs, grown.records, strict=True)])
    metrics = world_metrics(replaced)
    metrics.update(distribution_metrics(crop_grown(replaced), reference))
    return {k: v for k, v in metrics.items() if k in ("init_overlap_rate", "offlane_rate", "agents_per_tile")
            or k.startswith("jsd_")}
