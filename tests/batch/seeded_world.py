"""Test fixtures for batch runs: a straight-road generator whose traffic depends on the seed, and an
episode function that fails for one seed (injected through ``run_batch(episode_fn=...)``, test-only).

Importing this module registers the generator "test-seeded-straight"; batch workers re-import it
because ``plugin_modules`` names it in every task.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tests.straight_world import StraightGenerator
from vectorworld.batch.episode import StepCallback
from vectorworld.batch.tasks import run_batch_episode
from vectorworld.generation.base import TileContent, TileRequest, register_generator
from vectorworld.sim.config import SessionConfig

FAILING_SEED = 3


@register_generator("test-seeded-straight")
class SeededStraightGenerator(StraightGenerator):
    """The straight two-lane road; speed limits and NPC start speeds come from the tile rng, so seeds differ."""

    name = "test-seeded-straight"

    def generate(self, request: TileRequest) -> TileContent:
        content = super().generate(request)
        limit = float(request.rng.uniform(7.0, 14.0))
        lanes = tuple(dataclasses.replace(lane, speed_limit_mps=limit) for lane in content.lanes)
        speeds = request.rng.uniform(3.0, 11.0, len(content.agents))
        return dataclasses.replace(content, lanes=lanes,
                                   agents=dataclasses.replace(content.agents, speed=speeds))


def batch_config(**kw: Any) -> SessionConfig:
    """A short episode (50 m) on the seeded road."""
    return SessionConfig(generator="test-seeded-straight", target_km=kw.pop("target_km", 0.05), **kw)


def fail_on_seed(config: SessionConfig, record_path: Path | None = None,
                 on_progress: StepCallback | None = None) -> dict[str, Any]:
    """The default episode function, except that seed FAILING_SEED raises."""
    if config.seed == FAILING_SEED:
        raise RuntimeError(f"injected failure for seed {config.seed}")
    return run_batch_episode(config, record_path, on_progress)
