"""LaneGraph lookups: nearest lane within a radius, version bumps on every change."""

from __future__ import annotations

import numpy as np

from vectorworld.scene import Lane, LaneGraph


def _graph() -> LaneGraph:
    graph = LaneGraph(cell_m=16.0)
    graph.add([Lane(1, np.linspace((0.0, 0.0), (40.0, 0.0), 20)), Lane(2, np.linspace((0.0, 3.5), (40.0, 3.5), 20))])
    return graph


def test_nearest_prefers_the_closest_aligned_lane() -> None:
    graph = _graph()
    assert graph.nearest(np.array([10.0, 0.4]), 0.0, radius_m=5.0)[0] == 1
    assert graph.nearest(np.array([10.0, 3.0]), 0.0, radius_m=5.0)[0] == 2


def test_nearest_never_answers_beyond_the_radius() -> None:
    # 12 m from lane 2 but in a neighbouring grid cell of it: the cell lookup alone would return it.
    graph = _graph()
    lane_id, dist = graph.nearest(np.array([20.0, 15.5]), 0.0, radius_m=8.0)
    assert (lane_id, dist) == (-1, np.inf)
    lane_id, dist = graph.nearest(np.array([20.0, 15.5]), 0.0, radius_m=13.0)
    assert lane_id == 2 and abs(dist - 12.0) < 1e-9


def test_version_changes_with_the_graph() -> None:
    graph = _graph()
    before = graph.version
    graph.connect(1, 2)
    assert graph.version > before


def test_within_matches_a_per_lane_distance_test_and_follows_changes() -> None:
    rng = np.random.default_rng(0)
    graph = LaneGraph()
    graph.add([Lane(i, np.cumsum(rng.normal(0.0, 3.0, (12, 2)), 0) + rng.uniform(-80, 80, 2)) for i in range(40)])
    for step in range(6):
        xy, radius = rng.uniform(-60, 60, 2), float(rng.uniform(5.0, 60.0))
        expected = sorted(i for i, lane in graph.lanes.items()
                          if (np.linalg.norm(lane.points - xy, axis=-1) <= radius).any())
        assert graph.within(xy, radius) == expected
        graph.remove([step])  # the cached vertex array must follow the graph
        graph.add([Lane(100 + step, rng.uniform(-60, 60, (5, 2)))])
