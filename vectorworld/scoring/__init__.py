"""Planner scores: nuPlan's closed-loop score (CLS) and a CARLA-style driving score.

Layered below the engine (and below the planners, which score proposals with it): it reads the per-step
ego and agent state the engine hands it (:class:`EpisodeScorer`), and its sub-metrics are pure functions
of per-step arrays (:mod:`vectorworld.scoring.metrics`, registry :data:`SUB_METRICS`).
"""

from vectorworld.scoring.episode import EpisodeScorer
from vectorworld.scoring.metrics import SUB_METRICS, SubMetric, closed_loop_score

__all__ = ["SUB_METRICS", "EpisodeScorer", "SubMetric", "closed_loop_score"]
