"""Junction stop tokens of DeltaSim: which agents the right-of-way rule holds before a junction this step.

The rule is the one IDM traffic and the IDM ego planner follow (:mod:`policies.junctions`, driven through
:class:`policies.idm.IdmCore`): every agent within the approach distance of the first connector on its route
requests it; committed agents, patient ones, then the closest are granted connectors that conflict with no
occupied or granted one. An agent whose request is not granted must stop before the connector's entry.

DeltaSim sees such an entry as a *stop token* in the neighbour-token format (:mod:`policies.deltasim.observation`):
a standing wall ``STOP_DEPTH_M`` deep across the first metre of the connector. The network learns from IDM
traffic that stops there, and the collision penalty treats the wall as a standing obstacle, so a held agent
is both asked and forced to wait. Using the same rule as IDM keeps ΔSim NPCs and the IDM ego planner in
agreement about who goes first.

Computed once per step for every agent at once; the waiting times the rule needs are kept between steps
(:meth:`JunctionStops.reset` forgets them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.base import PolicyInput
from policies.deltasim.routes import RouteFix
from policies.idm import IdmCore, IdmParams

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
    """The IDM right-of-way rule as an observation: :meth:`update` once per step gives the held agents.

    Requests are built as :class:`policies.idm.IdmCore` builds them (first connector on the route within
    the approach distance, committed when the agent can no longer stop before it), from the route positions
    DeltaSim computes anyway; the exit check, the occupied connectors and the waiting clocks are IdmCore's,
    and the grants come from :meth:`policies.idm.IdmCore.grant` -- so they are exactly
    those an IDM policy would compute for the same state.
    """

    def __init__(self, core: IdmCore | None = None) -> None:
        self.core = core if core is not None else IdmCore(IdmParams())

    def reset(self) -> None:
        """Forget waiting times and cached paths (a new episode)."""
        self.core.reset()

    def update(self, inp: PolicyInput, slots: np.ndarray, fix: RouteFix) -> HeldAgents:
        """Requests of the agents ``slots`` (S,) -- every valid agent on a route, the ego included, as IDM
        counts them -- at their route positions ``fix`` (:class:`policies.deltasim.routes.RouteFix`), the
        grants, and the stop walls of the agents not granted."""
        core, a = self.core, inp.agents
        requests = []
        ahead = fix.connector_m
        for k in np.nonzero((ahead >= 0.0) & (ahead <= core.params.junction_approach_m))[0].tolist():
            profile, slot = fix.profiles[k], int(slots[k])
            if profile is not None and profile.connector >= 0:
                requests.append(core.junction_request(int(a.id[slot]), profile.connector, float(ahead[k]),
                                                      float(a.speed[slot])))
        _, granted = core.grant(inp, requests)
        # Every request not granted is held -- those the exit check dropped (their exit is blocked) or a red
        # light holds too, as IDM holds them: an agent whose exit is blocked waits before the junction.
        held_at = {r.agent_id: r.connector for r in requests if r.agent_id not in granted}
        # A red light holds an agent from farther away than the junction approach (as IDM sees lights).
        s_m = np.where(np.isfinite(fix.s_m), fix.s_m, 0.0)
        _, light_lane = core.signal_stops(inp, slots, fix.profiles, s_m)
        for k in np.nonzero(light_lane >= 0)[0].tolist():
            held_at.setdefault(int(a.id[int(slots[k])]), int(light_lane[k]))
        held = sorted(held_at.items())
        if not held:
            return HeldAgents.none()
        starts = np.array([inp.graph[c].points[:2] for _, c in held])            # (H, 2, 2)
        direction = starts[:, 1] - starts[:, 0]
        direction /= np.maximum(np.linalg.norm(direction, axis=-1, keepdims=True), 1e-9)
        return HeldAgents(ids=np.array([i for i, _ in held], np.int64),
                          xy=starts[:, 0] + 0.5 * STOP_DEPTH_M * direction,
                          yaw=np.arctan2(direction[:, 1], direction[:, 0]),
                          width_m=np.array([inp.graph[c].width_m for _, c in held]))
