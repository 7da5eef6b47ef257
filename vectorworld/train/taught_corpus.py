"""A corpus of the student's own worlds with a teacher's tiles (DAgger for the learned generator).

A generator trained only on procedural worlds meets, in an episode, worlds it drew itself: roads a little
off the procedural grid, junctions where the procedural city has none. Its requests there fail more often
than on procedural worlds (the fallback share grows as its world grows). Here the *student* (the learned
generator) grows the worlds, and every request it is asked is also put to a *teacher* (the procedural
generator, the student's own fallback): the crop pairs the lanes known at the request with the teacher's
answer. Trained on these as well, the student learns to continue its own roads as the teacher would.
``build_corpus(CorpusConfig(generator="learned:DIR", teacher="procedural", growth="drive"))`` builds one.
"""

from __future__ import annotations

import numpy as np

from vectorworld.generation.base import IdAllocator, TileContent, TileFrame, TileGenerator, TileRequest
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M, TileTensors
from vectorworld.scene import LaneGraph
from vectorworld.train.tile_corpus import CorpusConfig, GrownTile, crop_tile, grow_world

NEAR_M = HALF_TILE_M * np.sqrt(2.0) + 16.0
"""Known lanes within this of a request's centre go into its crop (the crop keeps those in the square)."""


def taught_crop(request: TileRequest, answer: TileContent, max_lanes: int, max_agents: int) -> TileTensors:
    """The crop of one request: the lanes known when it was asked are the condition, the teacher's answer
    (its lanes, their links to known lanes, its agents) the target."""
    centre = np.asarray(request.frame.center_xy, np.float64)
    known = request.graph.near(centre, NEAR_M)
    graph = LaneGraph()
    graph.add([request.graph[i] for i in known] + list(answer.lanes))
    for a, b in answer.links:
        if a in graph and b in graph:
            graph.connect(a, b)
    made = GrownTile(TileFrame(request.frame.center_xy, request.frame.yaw), frozenset(known),
                     frozenset(lane.id for lane in answer.lanes))
    return crop_tile(graph, made.frame, answer.agents, max_lanes, max_agents, made=made)


class Taught(TileGenerator):
    """Grows the world with the student; puts every request to the teacher first and keeps its crop."""

    def __init__(self, student: TileGenerator, teacher: TileGenerator, max_lanes: int, max_agents: int) -> None:
        self.student, self.teacher = student, teacher
        self.name = student.name
        self.max_lanes, self.max_agents = max_lanes, max_agents
        self.crops: list[TileTensors] = []

    def first_tile(self, frame: TileFrame, lane_ids: IdAllocator, rng: np.random.Generator) -> TileContent:
        return self.student.first_tile(frame, lane_ids, rng)

    def generate(self, request: TileRequest) -> TileContent:
        answer = self.teacher.generate(request)
        self.crops.append(taught_crop(request, answer, self.max_lanes, self.max_agents))
        return self.student.generate(request)


def taught_crops(config: CorpusConfig) -> list[TileTensors]:
    """Grow ``config.worlds`` worlds with ``config.generator`` (the student) and crop every request it was
    asked with ``config.teacher``'s answer; crops without known or without new lanes are left out."""
    from vectorworld.generation import make_generator

    taught = Taught(make_generator(config.generator), make_generator(config.teacher), config.max_lanes,
                    config.max_agents)
    rng = np.random.default_rng(config.seed)
    for _ in range(config.worlds):
        grow_world(taught, config.tiles_per_world, rng, config.growth)
    return [t for t in taught.crops if t.lane_cond.any() and (t.lane_valid & ~t.lane_cond).any()]
