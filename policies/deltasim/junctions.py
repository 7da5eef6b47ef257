"""Junction stop tokens of DeltaSim: which agents the step's right of way holds, and where.

The decision is the Session's (:mod:`policies.right_of_way`, handed to every policy in
``PolicyInput.right_of_way``), the one IDM traffic and the IDM ego planner obey: an agent held before a
connector it was not granted, or before a signalised lane whose light is red or yellow, must stop at that
lane's entry. Without a Session the stops take their own decision from a private service.

DeltaSim sees such an entry as a *stop token* in the neighbour-token format (:mod:`policies.deltasim.observation`):
a standing wall ``STOP_DEPTH_M`` deep across the first metre of the lane. The network learns from IDM
traffic that stops there, and the collision penalty treats the wall as a standing obstacle, so a held agent
is both asked and forced to wait.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.base import PolicyInput
from policies.deltasim.routes import RouteFix
from policies.right_of_way import RightOfWay
from policies.route_paths import RoutePaths

STOP_DEPTH_M = 1.0
"""Depth (m, along the connector) of the stop wall; its back edge lies on the connector's entry."""


@dataclass(frozen=True)
class HeldAgents:
    """Agents held before a junction this step (H of them).

    ids: (H,) int64 agent ids, sorted. xy: (H, 2) m, global frame, centre of each one's stop wall;
    yaw: (H,) rad, the connector's heading at its entry; width_m: (H,) the connector's width.
    """

    ids: np.ndarray
    xy: np.ndarray
    yaw: np.ndarray
    width_m: np.ndarray

    @staticmethod
    def none() -> HeldAgents:
        return HeldAgents(np.zeros(0, np.int64), np.zeros((0, 2)), np.zeros(0), np.zeros(0))

    def lookup(self, agent_ids: np.ndarray) -> np.ndarray:
        """Row (S,) in this table of each id in ``agent_ids`` (S,), -1 where the agent is not held."""
        ids = np.asarray(agent_ids, dtype=np.int64)
        if len(self.ids) == 0:
            return np.full(ids.shape, -1, np.int64)
        pos = np.clip(np.searchsorted(self.ids, ids), 0, len(self.ids) - 1)
        return np.where(self.ids[pos] == ids, pos, -1)


class JunctionStops:
    """The step's right-of-way decision as stop walls: :meth:`update` once per step gives the held agents."""

    def __init__(self, paths: RoutePaths | None = None) -> None:
        self.service = RightOfWay(paths=paths)
        """Decides when the input carries no decision (DeltaSim driven without a Session)."""

    def reset(self) -> None:
        """Forget waiting times (a new episode)."""
        self.service.reset()

    def update(self, inp: PolicyInput, slots: np.ndarray, fix: RouteFix) -> HeldAgents:
        """The stop walls of the agents among ``slots`` (S,) that the decision holds (``fix``, their route
        positions, is not needed by the decision but kept for callers that computed it)."""
        decision = inp.right_of_way if inp.right_of_way is not None else self.service.decide(inp)
        if not decision.held:
            return HeldAgents.none()
        ids = inp.agents.id[np.asarray(slots, dtype=np.int64)].tolist()
        held = sorted((i, decision.held[i]) for i in ids if i in decision.held and decision.held[i] in inp.graph)
        if not held:
            return HeldAgents.none()
        starts = np.array([inp.graph[c].points[:2] for _, c in held])            # (H, 2, 2)
        direction = starts[:, 1] - starts[:, 0]
        direction /= np.maximum(np.linalg.norm(direction, axis=-1, keepdims=True), 1e-9)
        return HeldAgents(ids=np.array([i for i, _ in held], np.int64),
                          xy=starts[:, 0] + 0.5 * STOP_DEPTH_M * direction,
                          yaw=np.arctan2(direction[:, 1], direction[:, 0]),
                          width_m=np.array([inp.graph[c].width_m for _, c in held]))
