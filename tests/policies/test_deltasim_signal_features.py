"""ΔSim sees its light ahead and its right-of-way grant: the signal features of ``static`` against a slow,
obvious walk along each agent's route in a city Session with lights."""

from __future__ import annotations

import numpy as np

from policies.deltasim.observation import BASE_STATIC_FEATURES, ObservationBuilder
from policies.junctions import SIGNAL_LOOKAHEAD_M
from vectorworld import geometry
from vectorworld.signals import GREEN_STATES, RED_STATES, YELLOW_STATES
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session


def _light_ahead(session: Session, slot: int) -> tuple[int, float]:
    """(colour 0 red / 1 yellow / 2 green / -1 none, distance m to its stop point) walking the route."""
    graph, signals = session.world.graph, session.signals()
    route = session.routes.get(int(session.agents.id[slot]))
    first = graph[route[0]]
    along, _, _ = geometry.project_to_polyline(session.agents.xy[slot][None], first.points)
    ahead = first.length_m - float(along[0])
    for lane_id in route[1:]:
        if ahead > SIGNAL_LOOKAHEAD_M:
            break
        state = signals.state(lane_id)
        if state is not None:
            colour = 0 if state in RED_STATES else 1 if state in YELLOW_STATES else 2 if state in GREEN_STATES else -1
            return colour, ahead
        ahead += graph[lane_id].length_m
    return -1, np.inf


def test_signal_features_match_the_route_walk_and_the_grant() -> None:
    session = Session(SessionConfig(seed=1, target_km=1.0, npc_policy="idm"))
    session.reset()
    builder = ObservationBuilder()
    seen = {0: 0, 1: 0, 2: 0}
    granted_seen = 0
    for _ in range(600):  # 60 s: every colour shows up (a light's cycle is at most 72 s)
        if session.done:
            break
        session.advance()
        inp = session.policy_input(np.zeros(session.agents.capacity, bool))
        graph = session.world.graph
        routed = [s for s in np.flatnonzero(session.agents.valid)
                  if (route := session.routes.get(int(session.agents.id[s]))) and all(i in graph for i in route)]
        obs = builder(inp, np.array(routed, np.int64))
        for row, slot in enumerate(obs.slots.tolist()):
            feats = obs.static[row, BASE_STATIC_FEATURES:]
            colour, distance = _light_ahead(session, slot)
            if colour < 0:
                assert feats[:3].sum() == 0
            else:
                assert feats[colour] == 1 and feats[:3].sum() == 1
                seen[colour] += 1
                np.testing.assert_allclose(feats[3] * SIGNAL_LOOKAHEAD_M, distance, atol=1.5)
            granted = int(session.agents.id[slot]) in inp.right_of_way.granted
            assert feats[4] == float(granted)
            granted_seen += granted
    assert min(seen.values()) > 0 and granted_seen > 0
