"""Where a call's time goes: wall time per stage, summed over calls -- a Session's step
(:meth:`Session.advance`, printed per step by ``tools/bench_rollout.py``) and a learned generator's
``generate`` (its ``TileDiagnostics.stage_ms``, summarised by ``vectorworld eval generator``).

Timing only (like ``wall_s``): never part of a report's deterministic figures, so an A/B comparison of two
commits names the stage that got slower.
"""

from __future__ import annotations

import time


class StageClock:
    """Lap timer: ``start`` at the top of a step, ``lap(stage)`` after each stage; ``total_ms`` sums them."""

    def __init__(self) -> None:
        self.total_ms: dict[str, float] = {}
        self._t = 0.0

    def start(self) -> None:
        self._t = time.perf_counter()

    def lap(self, stage: str) -> float:
        """Add the ms since the last start or lap to ``stage``; returns them."""
        now = time.perf_counter()
        ms = (now - self._t) * 1e3
        self.total_ms[stage] = self.total_ms.get(stage, 0.0) + ms
        self._t = now
        return ms

    def per_step_ms(self, steps: int) -> dict[str, float]:
        """Mean ms per step of every stage, in the order the stages first ran."""
        return {stage: ms / max(steps, 1) for stage, ms in self.total_ms.items()}
