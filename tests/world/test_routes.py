"""Route choice at forks: straight on is the common choice, as at real city junctions."""

from __future__ import annotations

import numpy as np

from vectorworld.scene import Lane, LaneGraph
from vectorworld.world.routes import STRAIGHT_WEIGHT, RouteBook


def _fork() -> LaneGraph:
    graph = LaneGraph()
    graph.add([Lane(1, np.array([[0.0, 0.0], [20.0, 0.0]]), successors=(2, 3, 4)),
               Lane(2, np.array([[20.0, 0.0], [120.0, 0.0]]), predecessors=(1,)),                   # straight
               Lane(3, np.array([[20.0, 0.0], [28.0, 2.0], [30.0, 10.0], [30.0, 110.0]]), predecessors=(1,)),
               Lane(4, np.array([[20.0, 0.0], [28.0, -2.0], [30.0, -10.0], [30.0, -110.0]]), predecessors=(1,))])
    return graph


def test_straight_on_is_drawn_straight_weight_times_as_often_as_each_turn() -> None:
    graph, rng = _fork(), np.random.default_rng(0)
    picks = []
    for agent in range(3000):
        book = RouteBook(min_ahead_m=50.0)
        book.assign(agent, 1)
        book.extend(graph, rng, agent)
        picks.append(book.get(agent)[1])
    share = np.bincount(picks, minlength=5)[2:] / len(picks)
    expected = np.array([STRAIGHT_WEIGHT, 1.0, 1.0]) / (STRAIGHT_WEIGHT + 2.0)
    assert np.allclose(share, expected, atol=0.03)


def test_straight_choice_takes_the_least_turn() -> None:
    book = RouteBook(min_ahead_m=50.0)
    book.assign(7, 1)
    book.extend(_fork(), np.random.default_rng(0), 7, choose="straight")
    assert book.get(7)[:2] == [1, 2]
