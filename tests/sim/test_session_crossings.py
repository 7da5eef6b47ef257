"""Pedestrians crossing in a whole Session: they cross, vehicles wait for them, nobody is hit."""

from __future__ import annotations

import numpy as np

from vectorworld.scene import AgentType
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session


def test_pedestrians_cross_and_vehicles_held_for_them_do_not_enter_the_crosswalk_connectors() -> None:
    session = Session(SessionConfig(seed=2, npc_policy="idm", target_km=1.0))
    session.reset()
    crossed, holds = set(), 0
    for _ in range(700):
        decision_held = dict(session.right_of_way.last.held) if session.right_of_way.last else {}
        by_crossing = session.right_of_way.last.by_crossing if session.right_of_way.last else frozenset()
        blocked = session.crossings.blocked(session.world.crosswalks, session.world.graph, session.agents)
        session.advance()
        decision = session.right_of_way.last
        for agent_id in decision.by_crossing:  # the step's decision saw the crosswalks as they were before it
            assert decision.held[agent_id] in blocked
        for agent_id in by_crossing:  # held for a pedestrian at the previous step: still before the connector
            route = session.routes.get(agent_id)
            assert not route or route[0] != decision_held[agent_id], agent_id
        holds += len(decision.by_crossing)
        crossed |= {w.agent_id for w in session.crossings.walkers.values() if w.on_strip}
        a = session.agents
        walkers = np.isin(a.id, list(session.crossings.walkers)) & a.valid
        contacts = session.tracker._npc_contact[walkers]
        assert not (contacts & (a.agent_type != AgentType.PEDESTRIAN)[None]).any(), session.step_index
    assert len(crossed) >= 3 and holds > 0
