"""Shared fixtures of the policy tests (IDM and DeltaSim junction behaviour use the same crossing)."""

from __future__ import annotations

import numpy as np
import pytest

from vectorworld.scene import Lane, LaneGraph, LaneType


@pytest.fixture
def crossing_connectors() -> LaneGraph:
    """Lane 1 (x from -30 to 0 m, y = 0) leads into connector 2 (x from 0 to 30 m); connector 3 runs along +y
    at x = 15 m (y from -15 to 15 m) and crosses connector 2 at (15, 0)."""
    graph = LaneGraph()
    xs = np.linspace(0, 30, 16)
    graph.add([
        Lane(1, np.stack([xs - 30, np.zeros(16)], -1)),
        Lane(2, np.stack([xs, np.zeros(16)], -1), lane_type=LaneType.CONNECTOR),
        Lane(3, np.stack([np.full(16, 15.0), xs - 15], -1), lane_type=LaneType.CONNECTOR),
    ])
    graph.connect(1, 2)
    return graph
