"""NPCs that stand still, to provoke the Session's stuck removals on the "test-straight" road.

:class:`StandingPolicy` brakes every NPC to a stop and keeps it there: nothing holds it and nothing stands
ahead of it, so after ``STUCK_TIMEOUT_S`` the Session removes it with the cause ``not_moving_when_free``
(and a car standing within ``QUEUE_GAP_M`` behind another with ``queued``).
"""

from __future__ import annotations

import numpy as np
import pytest

import tests.straight_world  # noqa: F401 - registers the "test-straight" generator
import vectorworld.sim.session as session_module
from policies.base import Policy, PolicyInput
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session


class StandingPolicy(Policy):
    """Zero body-frame deltas for every agent: the dynamics' braking limit stops them within ~1.5 s."""

    name = "test-standing"

    def act(self, inp: PolicyInput, rng: np.random.Generator) -> np.ndarray:
        return np.zeros((inp.agents.capacity, 3))


def standing_session(seed: int = 0, max_steps: int = 700) -> Session:
    """A Session on the straight road whose NPCs never drive; the built-in ego planner queues behind them."""
    config = SessionConfig(generator="test-straight", seed=seed, target_km=1.0, max_steps=max_steps,
                           terminate_on_collision=False)
    return Session(config, npc_policy=StandingPolicy())


@pytest.fixture
def stay_at_open_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """The straight road ends 40 m past its last tile's centre: keep standing NPCs there from leaving the world
    (``WORLD_EDGE_STANDING_M``), so they stand until the stuck clock removes them."""
    monkeypatch.setattr(session_module, "WORLD_EDGE_STANDING_M", 0.0)
