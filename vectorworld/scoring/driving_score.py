"""A CARLA-leaderboard-style driving score: route completion times the product of infraction penalties.

    driving_score = route_completion * prod(penalty_i ** count_i)

Penalties are the CARLA leaderboard's (leaderboard.carla.org/#driving-score): collision with a pedestrian
0.5, with a vehicle 0.6, with a static object 0.65; red light 0.7 (the ego's front crosses the stop line of
a lane showing red, :mod:`vectorworld.sim.red_lights`); stop sign 0.8 (never counted: there are no stop signs
to obey yet); agent blocked (the ego stands still for 180 s)
0.7; route timeout (the step limit ends the episode before the goal) 0.7. Off-road driving is not a
multiplier, as in CARLA: the distance driven off the drivable area does not count towards route completion.
Cyclists count as vehicles (CARLA models bicycles as vehicles).
"""

from __future__ import annotations

from collections.abc import Mapping

PENALTIES: dict[str, float] = {
    "collision_pedestrian": 0.5,
    "collision_vehicle": 0.6,
    "collision_static": 0.65,
    "red_light": 0.7,
    "stop_sign": 0.8,
    "agent_blocked": 0.7,
    "route_timeout": 0.7,
}
BLOCKED_S = 180.0
BLOCKED_SPEED_MPS = 0.1


def route_completion(on_road_km: float, target_km: float) -> float:
    """Share of the target distance driven on the drivable area, in [0, 1]."""
    return min(1.0, max(0.0, on_road_km / target_km)) if target_km > 0 else 0.0


def infraction_penalty(counts: Mapping[str, int]) -> float:
    """prod(penalty ** count) over the infractions in :data:`PENALTIES` (unknown names raise KeyError)."""
    out = 1.0
    for name, n in counts.items():
        out *= PENALTIES[name] ** int(n)
    return out


def driving_score(completion: float, counts: Mapping[str, int]) -> float:
    return completion * infraction_penalty(counts)
