"""An external planner driving 1 km through the gRPC service: pure pursuit on the route plus IDM.

Usage::

    python tools/example_planner_client.py                     # starts an in-process server on loopback
    python tools/example_planner_client.py --target localhost:50051 --token "$VECTORWORLD_TOKEN"
    python tools/example_planner_client.py --stream            # one StreamSession instead of Step calls
    python tools/example_planner_client.py --plain-encoding    # every lane, one Agent message per agent
    python tools/example_planner_client.py --planner pdm       # the PDM-Closed-style planner, run client-side

Everything the planner knows comes from the observation on the wire (the ego, the agents around it, the
route centreline); it answers with ControlCommand (acceleration, steering) each 0.1 s step. It is a
template for planner teams, not a strong planner. The client asks for the compact observation encoding (lane
deltas, an agent table); ``--plain-encoding`` gets the plain one, with the same observations.

``--planner pdm`` shows how an in-process planner plugs in from outside: :class:`ObservationPlanner` turns
each observation into the :class:`policies.base.PolicyInput` the built-in planners read (a lane graph kept
in step with the lanes in view, the agents, the ego's route) and sends back the planner's
TrajectoryCommand, which the server tracks.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim_server.client import RemoteSession, SimClient  # noqa: E402
from vectorworld import geometry  # noqa: E402
from vectorworld.scene import Lane, LaneGraph  # noqa: E402
from vectorworld.sim.observation import Observation  # noqa: E402
from vectorworld.vehicle.commands import ControlCommand, EgoCommand  # noqa: E402

WHEELBASE_M = 2.9
CRUISE_MPS = 10.0
MAX_LAT_ACCEL_MPS2 = 2.0


def plan(obs: Observation) -> ControlCommand:
    """Pure pursuit on the route polyline; IDM speed control behind the nearest agent on the route."""
    a, e = obs.agents, obs.ego_slot
    xy, yaw, speed = a.xy[e], float(a.yaw[e]), float(a.speed[e])
    route = obs.route_polyline
    if len(route) < 2:
        return ControlCommand(accel_mps2=-2.0, steering_rad=0.0)
    s_route = geometry.polyline_lengths(route)
    s_ego, _, _ = geometry.project_to_polyline(xy[None], route)
    lookahead = max(6.0, 0.8 * speed + 4.0)
    target = geometry.interpolate_polyline(route, s_route, s_ego + lookahead)[0]
    local = geometry.to_local(target[None], xy, yaw)[0]
    curvature = 2.0 * local[1] / max(float(local @ local), 1e-6)
    steering = float(np.clip(math.atan(WHEELBASE_M * curvature), -0.6, 0.6))
    # Slow down for the sharpest curvature in the next 30 m.
    ahead = geometry.interpolate_polyline(route, s_route, s_ego + np.linspace(0.0, 30.0, 16))
    kappa = float(np.abs(geometry.curvature(ahead)).max()) if len(ahead) >= 3 else 0.0
    v_desired = min(CRUISE_MPS, math.sqrt(MAX_LAT_ACCEL_MPS2 / max(kappa, 1e-4)))
    gap, lead_speed = _lead_gap(obs, route, float(s_ego[0]))
    return ControlCommand(accel_mps2=_idm(speed, v_desired, gap, lead_speed), steering_rad=steering)


def _lead_gap(obs: Observation, route: np.ndarray, s_ego: float) -> tuple[float, float]:
    """Bumper gap (m) to the closest agent ahead within 2 m of the route, and its speed (inf if none)."""
    a, e = obs.agents, obs.ego_slot
    others = np.array([i for i in range(a.capacity) if a.valid[i] and i != e], dtype=int)
    if len(others) == 0:
        return math.inf, 0.0
    s, lateral, _ = geometry.project_to_polyline(a.xy[others], route)
    ahead = (s > s_ego) & (np.abs(lateral) < 2.0)
    if not ahead.any():
        return math.inf, 0.0
    k = int(np.argmin(np.where(ahead, s, np.inf)))
    gap = float(s[k] - s_ego) - 0.5 * (a.length[e] + a.length[others[k]])
    return max(gap, 0.1), float(a.speed[others[k]])


def _idm(speed: float, v_desired: float, gap: float, lead_speed: float) -> float:
    a_max, b, s0, headway = 1.5, 2.0, 2.5, 1.5
    free = 1.0 - (speed / max(v_desired, 0.1)) ** 4
    if math.isinf(gap):
        return float(np.clip(a_max * free, -6.0, 2.0))
    s_star = s0 + speed * headway + speed * (speed - lead_speed) / (2.0 * math.sqrt(a_max * b))
    return float(np.clip(a_max * (free - (max(s_star, 0.0) / gap) ** 2), -6.0, 2.0))


def _same_lane(a: Lane, b: Lane) -> bool:
    return (a is b or (a.points.shape == b.points.shape and np.array_equal(a.points, b.points)
                       and a.successors == b.successors and a.predecessors == b.predecessors
                       and a.lane_type == b.lane_type and a.speed_limit_mps == b.speed_limit_mps))


class ObservationPlanner:
    """Runs a built-in planner (``policies.ego.load_planner`` name, e.g. ``pdm``) on wire observations."""

    def __init__(self, name: str) -> None:
        from policies.ego import load_planner

        self.planner = load_planner(name)
        self.planner.reset()
        self.graph = LaneGraph()

    def _sync(self, lanes: tuple[Lane, ...]) -> None:
        """Keep ``graph`` equal to the lanes in view (only changed lanes are replaced: caches survive)."""
        seen = {lane.id: lane for lane in lanes}
        gone = [i for i, lane in self.graph.lanes.items() if i not in seen or not _same_lane(lane, seen[i])]
        if gone:
            self.graph.remove(gone)
        new = [lane for i, lane in seen.items() if i not in self.graph]
        if new:
            self.graph.add(new)

    def __call__(self, obs: Observation) -> EgoCommand:
        from policies.base import PolicyInput

        self._sync(obs.lanes)
        a = obs.agents
        ego_id = int(a.id[obs.ego_slot])
        # The lights in view and the connectors closed by someone on a crosswalk, as the session's own
        # right-of-way service sees them (the planner decides its right of way from them).
        blocked = frozenset(lane for walk in obs.crosswalks if walk.id in obs.occupied_crosswalks
                            for lane in walk.conflicts)
        inp = PolicyInput(agents=a, controlled=np.zeros(a.capacity, bool), graph=self.graph,
                          routes={ego_id: list(obs.route_lane_ids)}, ego_slot=obs.ego_slot, step=obs.step,
                          signals=obs.signals, crossing_blocked=blocked)
        return self.planner.plan(inp)


def drive(session: RemoteSession, use_stream: bool, progress_every: int = 200,
          planner=plan) -> Observation:  # noqa: ANN001 - any callable Observation -> EgoCommand
    """Drive until the episode ends; returns the last observation."""
    obs = session.observation
    if use_stream:
        def commands() -> Iterator[ControlCommand]:
            while not session.observation.done:
                yield planner(session.observation)

        for obs in session.stream(commands()):
            if obs.step % progress_every == 0:
                print(f"step {obs.step:5d}  km {obs.km:.3f}", flush=True)
        return obs
    while not obs.done:
        obs = session.step(planner(obs))
        if obs.step % progress_every == 0:
            print(f"step {obs.step:5d}  km {obs.km:.3f}", flush=True)
    return obs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", help="host:port of a running server (default: start one in-process)")
    parser.add_argument("--token", default=None, help="bearer token of the server")
    parser.add_argument("--km", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generator", default="", help="tile generator (default: the server's)")
    parser.add_argument("--stream", action="store_true", help="use StreamSession instead of Step")
    parser.add_argument("--planner", default="pure-pursuit",
                        help="pure-pursuit (this file's) or a built-in planner run client-side: pdm | idm")
    parser.add_argument("--plain-encoding", action="store_true",
                        help="full lanes and one Agent message per agent, with its whole history, in every "
                             "observation")
    args = parser.parse_args(argv)
    server = None
    target = args.target
    if target is None:
        from sim_server.config import ServerConfig
        from sim_server.server import create_server

        server = create_server(ServerConfig(port=0, http_port=None))
        target = f"127.0.0.1:{server.port}"
    if args.generator == "test-straight":
        import tests.straight_world  # noqa: F401 - registers the test generator (in-process server)
    try:
        with SimClient(target, token=args.token) as client:
            encoding = {"lane_delivery": "full", "agent_layout": "messages", "history_delivery": "full"} \
                if args.plain_encoding else {}
            session = client.create_session(seed=args.seed, target_km=args.km, generator=args.generator,
                                            max_steps=int(args.km * 1000 / 1.0 / 0.1), **encoding)
            planner = plan if args.planner == "pure-pursuit" else ObservationPlanner(args.planner)
            obs = drive(session, args.stream, planner=planner)
            report = session.close()
    finally:
        if server is not None:
            server.stop(grace_s=1.0)
    print(f"end: {obs.end_reason.value} after {obs.step} steps, {obs.km:.3f} km; collisions "
          f"{report['ego_collisions']}, off-road rate {report['ego_offroad_rate']:.3f}, comfort "
          f"{report['ego_comfort_rate']:.3f}; CLS {report['cls']:.3f}, driving score {report['driving_score']:.3f}")
    return 0 if report["completed"] else 1


if __name__ == "__main__":
    sys.exit(main())
