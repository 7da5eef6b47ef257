"""Stuck removals are events of their step: each NPC the Session removes as stuck is in that step's
StepMetrics (observation and frame) with its id, cause and position, and the per-step removals add up to the
report's ``npc_removed_stuck`` and ``npc_removed_stuck_causes``."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.standing_npcs import standing_session, stay_at_open_ends  # noqa: F401  (the fixture)
from vectorworld.sim.metrics import StuckRemoval
from vectorworld.sim.session import STUCK_TIMEOUT_S, Session
from vectorworld.sim.stuck_causes import CAUSES
from vectorworld.vehicle.commands import StateCommand

PARK_GAP_M = 7.0
"""The ego parks this far (centre to centre) ahead of the first NPC of its lane: within QUEUE_GAP_M."""


def park_ego_ahead_of_first_npc(session: Session) -> int:
    """Move the ego (StateCommands, jumps that stay clear of every box) to stand PARK_GAP_M ahead of the first
    standing NPC of its lane; return that NPC's id. The NPC is then queued behind the standing ego."""
    a, e = session.agents, session.ego_slot
    ego_xy = a.xy[e].copy()
    ahead = a.valid & (np.abs(a.xy[:, 1] - ego_xy[1]) < 0.5) & (a.xy[:, 0] > ego_xy[0])
    ahead[e] = False
    slot = int(np.flatnonzero(ahead)[np.argmin(a.xy[ahead, 0])])
    npc_id, target_x = int(a.id[slot]), float(a.xy[slot, 0]) + PARK_GAP_M
    stops = [*np.arange(ego_xy[0] + 15.0, target_x - 20.0, 15.0), target_x - 20.0, target_x]
    for x in stops:
        session.step(StateCommand(float(x), float(ego_xy[1]), 0.0, 0.0))
    return npc_id


@pytest.mark.usefixtures("stay_at_open_ends")
def test_each_stuck_removal_is_in_its_steps_metrics_and_adds_up_to_the_report() -> None:
    session = standing_session(seed=0, max_steps=400)
    session.reset()
    for _ in range(30):  # the NPCs brake to a stop; the ego waits where it started
        xy = session.agents.xy[session.ego_slot]
        session.step(StateCommand(float(xy[0]), float(xy[1]), 0.0, 0.0))
    queued_id = park_ego_ahead_of_first_npc(session)
    parked = session.agents.xy[session.ego_slot].copy()
    per_step: list[StuckRemoval] = []
    removal_steps: list[int] = []
    while not session.done:
        before = session.agents
        obs = session.step(StateCommand(float(parked[0]), float(parked[1]), 0.0, 0.0))
        removals = obs.step_metrics.stuck_removals
        assert session.frame().step_metrics.stuck_removals == removals
        for r in removals:
            slot = before.slot_of(r.agent_id)  # it stood there before the step, and is gone after it
            assert not (session.agents.valid & (session.agents.id == r.agent_id)).any()
            np.testing.assert_allclose((r.x_m, r.y_m), before.xy[slot], atol=1e-6)  # a standing car
            assert r.cause in CAUSES
        if removals:
            removal_steps.append(obs.step)
        per_step.extend(removals)
    report = session.report()
    assert report["ego_collisions"] == 0
    assert len(per_step) == report["npc_removed_stuck"] >= 4
    assert dict(Counter(r.cause for r in per_step)) == report["npc_removed_stuck_causes"]
    assert len({r.agent_id for r in per_step}) == len(per_step)
    by_id = {r.agent_id: r.cause for r in per_step}
    assert by_id[queued_id] == "queued"  # the NPC standing right behind the parked ego
    assert "not_moving_when_free" in by_id.values()  # the others: nothing ahead of them, nothing holds them
    assert removal_steps[0] * 0.1 > STUCK_TIMEOUT_S


def test_no_removal_means_empty_step_metrics() -> None:
    session = standing_session(seed=0, max_steps=150)  # shorter than the stuck timeout
    obs = session.reset()
    assert obs.step_metrics.stuck_removals == ()
    while not session.done:
        assert session.step().step_metrics.stuck_removals == ()
    assert session.report()["npc_removed_stuck"] == 0


def test_standing_npcs_near_the_open_end_of_the_world_leave_and_are_not_counted_stuck() -> None:
    session = standing_session(seed=0, max_steps=400)
    session.reset()
    near_end: set[int] = set()
    for _ in range(30):  # the NPCs brake to a stop; the ego waits where it started
        a = session.agents
        for slot in np.flatnonzero(a.valid):
            route = session.routes.get(int(a.id[slot]))
            if slot != session.ego_slot and route and not session.world.graph[route[-1]].successors:
                end = session.world.graph[route[-1]].points[-1]
                if np.linalg.norm(end - a.xy[slot]) < 25.0:  # within WORLD_EDGE_STANDING_M
                    near_end.add(int(a.id[slot]))
        xy = a.xy[session.ego_slot]
        session.step(StateCommand(float(xy[0]), float(xy[1]), 0.0, 0.0))
    assert near_end, "no NPC stood near the world's open end"
    assert not np.isin(session.agents.id[session.agents.valid], list(near_end)).any()
    assert session.report()["npc_removed_stuck"] == 0
