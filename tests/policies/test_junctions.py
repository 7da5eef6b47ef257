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


def tight_turn_graph(gap_m: float) -> LaneGraph:
    """Connector 1 turns right on a 6 m radius, (0, 0) east to (6, -6) south; connector 2 runs north, ``gap_m``
    east of connector 1's exit (the GPUDrive junction where a 10 m truck's box met the ego: 3.56 m apart)."""
    arc = np.linspace(np.pi / 2, 0.0, 12)
    turn = np.stack([6.0 * np.cos(arc), 6.0 * np.sin(arc) - 6.0], -1)
    ys = np.linspace(-14.0, 6.0, 11)
    graph = LaneGraph()
    graph.add([Lane(1, turn, lane_type=LaneType.CONNECTOR),
               Lane(2, np.stack([np.full_like(ys, 6.0 + gap_m), ys], -1), lane_type=LaneType.CONNECTOR)])
    return graph


def test_a_long_vehicle_conflicts_by_the_boxes_it_sweeps_not_by_its_centreline() -> None:
    """Cars on the two connectors 3.6 m apart pass each other; a truck turning on the tight connector swings
    its front over the other one, so neither a car nor a truck may be granted it beside the truck."""
    graph, conflicts = tight_turn_graph(3.6), ConflictMap()
    assert not conflicts.conflict(graph, 1, 2)
    assert conflicts.conflict(graph, 1, 2, long_a=True)
    assert conflicts.conflict(graph, 2, 1, long_b=True)                 # the same pair, asked the other way
    truck, car = JunctionRequest(10, 1, 2.0, length_m=10.0), JunctionRequest(20, 2, 6.0, length_m=4.6)
    assert grant_connectors(graph, conflicts, {}, [truck, car]) == {10}
    assert grant_connectors(graph, conflicts, {1: 10.0}, [car]) == set()  # the truck is on its connector
    assert grant_connectors(graph, conflicts, {1: 4.6}, [car]) == {20}    # a car on it is no obstacle


def test_long_vehicles_on_parallel_connectors_a_lane_apart_do_not_conflict() -> None:
    xs = np.linspace(0.0, 30.0, 7)
    graph = LaneGraph()
    graph.add([Lane(1, np.stack([xs, np.zeros_like(xs)], -1), lane_type=LaneType.CONNECTOR),
               Lane(2, np.stack([xs, np.full_like(xs, 4.0)], -1), lane_type=LaneType.CONNECTOR)])
    assert not ConflictMap().conflict(graph, 1, 2, long_a=True, long_b=True)
    assert ConflictMap().conflict(tight_turn_graph(6.0), 1, 2, long_a=True) is False  # far enough for the swing


def test_an_agent_on_a_connector_is_not_held_back_from_the_next_one_by_itself():
    """Connector 2 continues connector 1 (they touch at the joint, so they conflict). The agent driving on 1
    may enter 2; another agent on 1 holds back a third agent asking for 2 from elsewhere."""
    xs = np.linspace(0.0, 10.0, 6)
    graph = LaneGraph()
    graph.add([Lane(1, np.stack([xs, np.zeros_like(xs)], -1), successors=(2,), lane_type=LaneType.CONNECTOR),
               Lane(2, np.stack([xs + 10.0, np.zeros_like(xs)], -1), predecessors=(1,), lane_type=LaneType.CONNECTOR)])
    conflicts = ConflictMap()
    assert conflicts.conflict(graph, 1, 2)
    mine = JunctionRequest(10, 2, 1.0)
    assert grant_connectors(graph, conflicts, {1: 4.6}, [mine], sole_occupant={1: 10}) == {10}
    assert grant_connectors(graph, conflicts, {1: 4.6}, [mine], sole_occupant={1: 30}) == set()
    assert grant_connectors(graph, conflicts, {1: 4.6}, [mine]) == set()  # two agents on 1: no sole occupant


def test_a_chain_of_connectors_is_granted_as_one_junction():
    """A junction drawn as two connectors in a row (1 then 2, heading east) and a connector 3 heading north
    across 2 but not across 1. Asked for 1 alone, both agents were granted (2 was requested only once the
    agent drove on 1, too late to stop: the two met in a learned world); asked for the chain, the nearer one
    goes and the other waits. The route profile names the chain."""
    from policies.idm import IdmParams
    from policies.route_paths import PathProfile

    xs = np.linspace(0.0, 10.0, 6)
    graph = LaneGraph()
    graph.add([Lane(0, np.stack([xs - 10.0, np.zeros_like(xs)], -1), successors=(1,)),
               Lane(1, np.stack([xs, np.zeros_like(xs)], -1), predecessors=(0,), successors=(2,),
                    lane_type=LaneType.CONNECTOR),
               Lane(2, np.stack([xs + 10.0, np.zeros_like(xs)], -1), predecessors=(1,), successors=(4,),
                    lane_type=LaneType.CONNECTOR),
               Lane(4, np.stack([xs + 20.0, np.zeros_like(xs)], -1), predecessors=(2,)),
               Lane(3, np.stack([np.full(6, 15.0), xs - 5.0], -1), lane_type=LaneType.CONNECTOR)])
    profile = PathProfile.build(graph, (0, 1, 2, 4), IdmParams())
    assert (profile.connector, profile.chain) == (1, (2,))
    conflicts = ConflictMap()
    alone, across = JunctionRequest(10, 1, 5.0), JunctionRequest(20, 3, 8.0)
    assert grant_connectors(graph, conflicts, {}, [alone, across]) == {10, 20}
    chain = JunctionRequest(10, 1, 5.0, then=profile.chain)
    assert grant_connectors(graph, conflicts, {}, [chain, across]) == {10}
