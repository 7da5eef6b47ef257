"""The start tile, outpainted in two halves from a road cross-section.

Unconditional samples make poor start tiles (mid_req: 7% of candidates hold a two-way road through the
centre, most hold one or two lanes), and a world keeps the style of its start: its later tiles kept 5.8
lanes each against 9.4 after a procedural start (ends growth, seed 1000, even 5-11 tiles from the start).
So the start tile is outpainted like any other tile:

1. a cross-section is drawn from the corpus (the out / in port counts of a training context without a
   cross road, :class:`~vectorworld.generation.learned.road_plan.RoadPlans`) and laid as a straight *seed
   road* over the back half, ending at the tile's centre line (right-hand traffic: the +x lanes at y <= 0);
2. the model outpaints the front half from the seed road;
3. the seed is thrown away and the model outpaints the back half (the tile turned by pi) from the front
   half's lanes.

Both halves are the model's; the seed only fixes how many lanes cross the centre line.
"""

from __future__ import annotations

import numpy as np

from vectorworld.generation.base import AgentSpawns, IdAllocator, TileContent, TileFrame
from vectorworld.scene import Lane, LaneGraph

SEED_LENGTH_M = 40.0
"""The seed road starts beyond the back border (its far ends are no ports of the tile)."""
SEED_LANE_WIDTH_M = 3.5
START_PORT_MARGIN_M = 3.0
"""The ports a half is given: open lane ends inside its square grown by this (the streaming world's margin)."""
SEED_LANE_IDS = 1 << 40
"""Ids of the seed road's lanes, apart from the world's (the seed never enters the world)."""
MAX_SEED_LANES = 4
"""Per direction; wider cross-sections of the corpus are junction approaches with turn lanes. mid_req, ends
growth, seeds 1000 / 1 / 2 / 3 / 4: mean lane Fréchet 1.49 with at most 3, 1.35 with 4 (within the seeds'
noise), 1.93 for the sampled start."""


def draw_cross_section(keys: np.ndarray | None, rng: np.random.Generator) -> tuple[int, int]:
    """(lanes along +x, lanes along -x) of a random training context without a cross road; ``keys`` (N, 4)
    are :func:`~vectorworld.generation.learned.road_plan.plan_key` rows (None, a model without road plans:
    one lane each way)."""
    if keys is None:
        return 1, 1
    ok = (keys[:, 3] == 0) & (keys[:, 0] >= 1) & (keys[:, 0] <= MAX_SEED_LANES) & (keys[:, 1] <= MAX_SEED_LANES)
    rows = keys[ok] if ok.any() else np.array([[1.0, 1.0, 0.0, 0.0]])
    n_out, n_in = rows[rng.integers(len(rows))][:2]
    return int(n_out), int(n_in)


def seed_road(frame: TileFrame, n_out: int, n_in: int, ids: IdAllocator) -> LaneGraph:
    """Straight lanes over the back half of ``frame`` ending (+x lanes) or starting (-x lanes) on its centre
    line: the +x lanes at y = 0, -w, ..., the -x lanes at y = w, 2w, ..."""
    x = np.linspace(-SEED_LENGTH_M, 0.0, 21)
    graph = LaneGraph()
    lanes = []
    for k in range(n_out):
        local = np.stack([x, np.full_like(x, -k * SEED_LANE_WIDTH_M)], -1)
        lanes.append(Lane(ids(), frame.to_global(local), width_m=SEED_LANE_WIDTH_M))
    for k in range(n_in):
        local = np.stack([x[::-1], np.full_like(x, (k + 1) * SEED_LANE_WIDTH_M)], -1)
        lanes.append(Lane(ids(), frame.to_global(local), width_m=SEED_LANE_WIDTH_M))
    graph.add(lanes)
    return graph


def half_graph(front: TileContent) -> LaneGraph:
    """The front half's lanes alone (their links to the seed road dropped)."""
    graph = LaneGraph()
    graph.add(list(front.lanes))
    return graph


def turned(frame: TileFrame) -> TileFrame:
    """The same square facing the other way (its front half is ``frame``'s back half)."""
    return TileFrame(frame.center_xy.copy(), float(np.arctan2(-np.sin(frame.yaw), -np.cos(frame.yaw))))


def join_halves(front: TileContent, back: TileContent) -> TileContent:
    """One tile of two halves: the back half's links to the front half become the lanes' own edges."""
    graph = half_graph(front)
    graph.add(back.lanes)
    for a, b in back.links:
        graph.connect(a, b)
    return TileContent(lanes=tuple(graph.lanes.values()), links=(),
                       agents=AgentSpawns.concat([front.agents, back.agents]))


def along_x(lane: np.ndarray, max_rad: float = 0.5) -> bool:
    """The lane (N, 2) starts heading along +x (within ``max_rad``)."""
    d = lane[2] - lane[0]
    return abs(float(np.arctan2(d[1], d[0]))) < max_rad


def start_road(lanes: np.ndarray | list[np.ndarray]) -> np.ndarray | None:
    """The lane of a first tile that the ego starts on: starting along +x (within 0.5 rad), nearest the centre,
    within 6 m of it; None if there is none."""
    along = [lane for lane in lanes if along_x(lane)]
    if not along:
        return None
    start = min(along, key=lambda lane: float(np.linalg.norm(lane, axis=-1).min()))
    return start if float(np.linalg.norm(start, axis=-1).min()) < 6.0 else None


def has_start_road(lanes: np.ndarray) -> bool:
    """A first tile needs a :func:`start_road`."""
    return start_road(lanes) is not None
