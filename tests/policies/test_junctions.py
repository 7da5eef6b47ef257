"""Junction right of way: committed agents first, patient agents reserve their connector."""

import numpy as np

from policies.junctions import PATIENCE_S, ConflictMap, JunctionRequest, grant_connectors
from vectorworld.scene import Lane, LaneGraph, LaneType


def crossing_graph() -> LaneGraph:
    """Connector 1 runs west->east, connector 2 south->north; they cross at the origin."""
    xs = np.linspace(-15.0, 15.0, 16)
    graph = LaneGraph()
    graph.add([Lane(1, np.stack([xs, np.zeros_like(xs)], -1), lane_type=LaneType.CONNECTOR),
               Lane(2, np.stack([np.zeros_like(xs), xs], -1), lane_type=LaneType.CONNECTOR)])
    return graph


def test_closest_first_but_committed_before_closer_agents():
    graph, conflicts = crossing_graph(), ConflictMap()
    near, far = JunctionRequest(10, 1, 2.0), JunctionRequest(20, 2, 6.0)
    assert grant_connectors(graph, conflicts, {}, [near, far]) == {10}
    committed = JunctionRequest(20, 2, 6.0, committed=True)
    assert grant_connectors(graph, conflicts, {}, [near, committed]) == {20}


def test_patient_agent_reserves_its_connector_against_newcomers():
    graph, conflicts = crossing_graph(), ConflictMap()
    waiting, newcomer = JunctionRequest(10, 1, 1.0), JunctionRequest(20, 2, 0.5)
    # Connector 2 is occupied (a stream on it): the waiting agent cannot go.
    assert grant_connectors(graph, conflicts, {2: 1}, [waiting, newcomer]) == {20}
    # After PATIENCE_S it still cannot go while 2 is occupied, but the newcomer on 2 must wait for it.
    patient = {10: PATIENCE_S + 0.1}
    assert grant_connectors(graph, conflicts, {2: 1}, [waiting, newcomer], patient) == set()
    assert grant_connectors(graph, conflicts, {}, [waiting, newcomer], patient) == {10}
