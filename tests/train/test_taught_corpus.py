"""The taught corpus: the student grows the worlds, the teacher's answers to its requests are the targets."""

from __future__ import annotations

import numpy as np
import pytest

from tests.straight_world import StraightGenerator  # also registers "test-straight"
from vectorworld.errors import ConfigError
from vectorworld.generation.base import AgentSpawns, TileContent, TileGenerator, TileRequest
from vectorworld.generation.learned.tile_tensors import EDGE_SUCC
from vectorworld.scene import Lane
from vectorworld.train.taught_corpus import Taught
from vectorworld.train.tile_corpus import CorpusConfig, build_corpus
from vectorworld.world import StreamingWorld, WorldConfig


class _Bending(TileGenerator):
    """A teacher whose every answer turns left: continues each out port by a quarter circle of 20 m radius."""

    name = "bending"

    def generate(self, request: TileRequest) -> TileContent:
        lanes, links = [], []
        for port in (p for p in request.ports if p.is_out):
            a = np.linspace(0.0, np.pi / 2, 12)
            local = np.stack([20.0 * np.sin(a), 20.0 * (1.0 - np.cos(a))], -1)
            c, s = np.cos(port.yaw), np.sin(port.yaw)
            lane = Lane(request.lane_ids(), port.xy + local @ np.array([[c, s], [-s, c]]))
            lanes.append(lane)
            links.append((port.lane_id, lane.id))
        return TileContent(tuple(lanes), tuple(links), AgentSpawns.none())


def test_the_student_grows_the_world_and_the_teachers_answer_is_the_target() -> None:
    taught = Taught(StraightGenerator(), _Bending(), max_lanes=12, max_agents=8)
    world = StreamingWorld(taught, np.random.default_rng(0), WorldConfig(max_tiles_per_update=1))
    world.start()
    for x in np.arange(0.0, 60.0, 5.0):
        world.ensure_coverage(np.array([x, -1.75]), 0.0, None, np.zeros((0, 2)))
    assert len(taught.crops) >= 2
    for lane in world.graph.lanes.values():                     # the world holds the student's straight road
        assert np.allclose(lane.points[:, 1], lane.points[0, 1])
    for tile in taught.crops:
        cond, new = tile.lane_valid & tile.lane_cond, tile.lane_valid & ~tile.lane_cond
        assert cond.sum() == 2 and new.sum() == 2               # two known lanes in, the teacher's two out
        for i in np.flatnonzero(new):                           # the teacher's bend, joined to its port
            pts = tile.lane_points[i]
            assert pts[-1, 1] - pts[0, 1] > 10.0
            j = int(np.flatnonzero(tile.edges[:, i] == EDGE_SUCC)[0])
            assert cond[j] and np.allclose(tile.lane_points[j, -1], pts[0], atol=1e-4)


def test_a_taught_corpus_is_a_training_corpus_cropped_as_requested() -> None:
    tiles = build_corpus(CorpusConfig(generator="test-straight", teacher="test-straight", worlds=1,
                                      tiles_per_world=4, max_lanes=12, max_agents=8))
    assert tiles["lane_points"].shape[1:] == (12, 20, 2) and len(tiles["lane_valid"]) == 3
    with pytest.raises(ConfigError, match="context"):
        build_corpus(CorpusConfig(generator="test-straight", teacher="test-straight", context="halves"))
