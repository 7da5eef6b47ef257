"""Time to collision: the circle pre-test never changes the answer of the exact box test over all pairs."""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.scoring.ttc import projection_times, time_to_collision


def _ttc_all_pairs(ego_xy, ego_yaw, ego_speed, ego_length, ego_width, xy, yaw, speed, length, width) -> float:  # noqa: ANN001
    """The definition: every agent's box against the ego's at every projection time."""
    t = projection_times()
    ego_at = ego_xy + t[:, None] * ego_speed * np.array([np.cos(ego_yaw), np.sin(ego_yaw)])
    agents_at = xy[:, None] + t[None, :, None] * (speed[:, None] * np.stack([np.cos(yaw), np.sin(yaw)], -1))[:, None]
    k, n = len(t), len(xy)
    ego = geometry.box_corners(ego_at, np.full(k, ego_yaw), np.full(k, ego_length), np.full(k, ego_width))
    boxes = geometry.box_corners(agents_at, np.repeat(yaw[:, None], k, 1), np.repeat(length[:, None], k, 1),
                                 np.repeat(width[:, None], k, 1))
    hit = geometry.boxes_overlap(np.broadcast_to(ego, (n, k, 4, 2)), boxes).any(0)
    return float(t[np.argmax(hit)]) if hit.any() else float("inf")


def test_ttc_matches_the_exhaustive_box_test() -> None:
    rng = np.random.default_rng(1)
    finite = 0
    for _ in range(3000):
        n = int(rng.integers(1, 6))
        args = (rng.normal(size=2) * 3, float(rng.uniform(-3, 3)), float(rng.uniform(0.5, 15)),
                float(rng.uniform(3, 6)), float(rng.uniform(1.5, 2.5)), rng.normal(size=(n, 2)) * 15,
                rng.uniform(-3, 3, n), rng.uniform(-2, 15, n), rng.uniform(0.5, 12, n), rng.uniform(0.5, 2.6, n))
        expected = _ttc_all_pairs(*args)
        assert time_to_collision(*args) == expected
        finite += np.isfinite(expected)
    assert finite > 100  # the sample holds many collisions, not only misses
