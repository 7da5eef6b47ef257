"""The PDM-Closed-style planner: proposals forecast with the simulator's dynamics, scored with the CLS
sub-metrics; the batched forecast is the engine's tracker + bicycle, step for step."""

from __future__ import annotations

import numpy as np

from policies.base import PolicyInput
from policies.ego import load_planner
from policies.pdm import OFFSETS_M, SPEED_FRACTIONS, PdmPlanner
from tests.scoring.scenes import agents, road
from vectorworld.vehicle.commands import TrajectoryCommand
from vectorworld.vehicle.dynamics import bicycle_step, rollout_tracked, track_trajectory


def policy_input(rows: list[tuple[float, float, float, float]]) -> PolicyInput:
    a = agents(rows)
    return PolicyInput(agents=a, controlled=np.zeros(a.capacity, bool), graph=road(speed_limit=12.0),
                       routes={0: [1]}, ego_slot=0, step=0)


def test_batched_forecast_is_the_engine_dynamics():
    t = np.arange(1, 44) * 0.1
    poses = np.zeros((3, 43, 3))
    for p in range(3):
        poses[p, :, 0] = (4.0 + 2.0 * p) * t
        poses[p, :, 1] = 0.5 * p * np.sin(t)
    out = rollout_tracked(np.zeros((3, 2)), np.zeros(3), np.array([1.0, 5.0, 9.0]), poses, 40, 0.1)
    for p, v0 in enumerate((1.0, 5.0, 9.0)):
        xy, yaw, v = np.zeros(2), 0.0, v0
        for k in range(40):
            accel, steer = track_trajectory(xy, yaw, v, poses[p, k:], 0.1)
            xy, yaw, v = bicycle_step(xy, yaw, v, accel, steer, 0.1)
            np.testing.assert_allclose(out[p, k], [*xy, yaw, v], atol=1e-9)


def test_free_road_takes_the_fastest_centreline_proposal():
    planner = load_planner("pdm")
    assert isinstance(planner, PdmPlanner)
    command = planner.plan(policy_input([(0.0, 0.0, 0.0, 8.0)]))
    assert isinstance(command, TrajectoryCommand) and command.poses.shape == (30, 3)
    assert len(planner.last_scores) == len(OFFSETS_M) * (len(SPEED_FRACTIONS) + 1)
    assert int(np.argmax(planner.last_scores)) == 0  # 100 % of the cap, no offset
    assert np.abs(command.poses[:, 1]).max() < 0.05


def test_crossing_traffic_the_idm_corridor_does_not_see_yet_is_avoided():
    """A car crossing 20 m ahead from 12 m to the right at 6 m/s: outside IDM's corridor now, it is where the
    ego would be in 2 s at the cap. The forecast scores that proposal 0 (at-fault collision); a slower one
    that lets the car pass wins."""
    planner = PdmPlanner()
    inp = policy_input([(0.0, 0.0, 0.0, 10.0), (20.0, -12.0, np.pi / 2, 6.0)])
    command = planner.plan(inp)
    best = int(np.argmax(planner.last_scores))
    assert planner.last_scores[0] == 0.0 and planner.last_scores[best] > 0.0
    assert best % (len(SPEED_FRACTIONS) + 1) != 0  # not the fastest profile
    ego_at_2s = command.poses[19, 0]
    assert ego_at_2s < 20.0 - 4.8  # still short of the crossing point when the car is on it
