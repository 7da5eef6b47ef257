"""Why an NPC was removed as stuck: the situation it stood in when its stuck clock ran out.

Causes, checked in this order:

* ``held_at_junction``: the step's right of way held it before a connector it was not granted (crossing
  traffic, a blocked exit, a conflicting reservation);
* ``held_by_light``: a light held it (its clock only runs on green, so it stood through greens too);
* ``inside_junction``: it stands on a connector;
* ``queued``: a standing agent is within ``QUEUE_GAP_M`` ahead of it in its lane (a queue behind a jam);
* ``not_moving_when_free``: it has a route (its connector granted, or no junction ahead) and nothing of the
  above holds: the policy itself did not move it;
* ``other``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vectorworld.scene import Agents, LaneGraph, LaneType

QUEUE_GAP_M = 9.0
"""A standing agent this close ahead (centre to centre, m, within 2 m of the heading line) is a queue."""
CAUSES = ("held_at_junction", "held_by_light", "inside_junction", "queued", "not_moving_when_free", "other")


def _queued(agents: Agents, slot: int) -> bool:
    a = agents
    heading = np.array([np.cos(a.yaw[slot]), np.sin(a.yaw[slot])])
    rel = a.xy - a.xy[slot]
    ahead = rel @ heading
    side = np.abs(rel[:, 0] * heading[1] - rel[:, 1] * heading[0])
    near = a.valid & (ahead > 0.5) & (ahead < QUEUE_GAP_M) & (side < 2.0) & (np.abs(a.speed) < 0.5)
    near[slot] = False
    return bool(near.any())


def stuck_cause(agents: Agents, slot: int, route: Sequence[int], graph: LaneGraph, held: dict[int, int],
                by_light: frozenset[int]) -> str:
    """The cause (one of :data:`CAUSES`) of the stuck agent in ``slot``; ``held`` / ``by_light``: the last
    right-of-way decision's held agents and those of them a light holds."""
    agent_id = int(agents.id[slot])
    if agent_id in held and agent_id not in by_light:
        return "held_at_junction"
    if agent_id in by_light:
        return "held_by_light"
    if route and route[0] in graph and graph[route[0]].lane_type == LaneType.CONNECTOR:
        return "inside_junction"
    if _queued(agents, slot):
        return "queued"
    if route:
        return "not_moving_when_free"
    return "other"
