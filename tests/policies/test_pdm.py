"""The PDM-Closed-style planner: proposals forecast with the simulator's dynamics, scored with the CLS
sub-metrics; the batched forecast is the engine's tracker + bicycle, step for step. Its proposals are
jerk-limited from the current acceleration, it keeps its choice on near-ties, returns to the centreline once
it is clean, and rejects offsets into a lane going the other way."""

from __future__ import annotations

import numpy as np

from policies.base import PolicyInput
from policies.ego import load_planner
from policies.pdm import (
    COMFORT_ACCEL_MPS2,
    JERK_MPS3,
    N_COMFORTABLE,
    N_PROFILES,
    RETURN_STEPS,
    PdmPlanner,
    preview_cap,
)
from tests.scoring.scenes import agents, road
from vectorworld.scene import Lane, LaneGraph
from vectorworld.scoring.metrics import ego_is_comfortable
from vectorworld.scoring.signals import EgoKinematics
from vectorworld.vehicle.commands import TrajectoryCommand
from vectorworld.vehicle.dynamics import bicycle_step, rollout_tracked, track_trajectory
from vectorworld.world.uniform_paths import UniformPath, UniformPathBatch


def policy_input(rows: list[tuple[float, float, float, float]], graph: LaneGraph | None = None) -> PolicyInput:
    a = agents(rows)
    return PolicyInput(agents=a, controlled=np.zeros(a.capacity, bool), graph=graph or road(speed_limit=12.0),
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


def test_free_road_takes_the_fastest_comfortable_centreline_proposal_without_trying_offsets():
    planner = load_planner("pdm")
    assert isinstance(planner, PdmPlanner)
    command = planner.plan(policy_input([(0.0, 0.0, 0.0, 8.0)]))
    assert isinstance(command, TrajectoryCommand) and command.poses.shape == (30, 3)
    assert len(planner.last_scores) == N_PROFILES  # the centreline was clean: no offsets tried
    assert planner.last_best == 0  # 100 % of the cap, comfortable, no offset
    assert np.abs(command.poses[:, 1]).max() < 0.05


def test_crossing_traffic_the_idm_corridor_does_not_see_yet_is_avoided():
    """A car crossing 20 m ahead from 12 m to the right at 6 m/s: outside IDM's corridor now, it is where the
    ego would be in 2 s at the cap. The forecast scores that proposal 0 (at-fault collision), so the offsets
    are tried too; a slower one that lets the car pass wins."""
    planner = PdmPlanner()
    inp = policy_input([(0.0, 0.0, 0.0, 10.0), (20.0, -12.0, np.pi / 2, 6.0)])
    command = planner.plan(inp)
    best = planner.last_best
    assert planner.last_scores[0] == 0.0 and planner.last_scores[best] > 0.0
    assert len(planner.last_scores) > N_PROFILES
    assert planner.last_profiles[best] != 0  # not the fastest profile
    ego_at_2s = command.poses[19, 0]
    assert ego_at_2s < 20.0 - 4.8  # still short of the crossing point when the car is on it


def test_comfortable_profiles_limit_jerk_from_the_current_acceleration():
    """Accelerating at 2 m/s^2 towards a car stopped 40 m ahead: every comfortable profile changes its
    acceleration by at most JERK x dt per step from 2 m/s^2 and stays inside the comfort range; the emergency
    IDM brakes at once."""
    planner = PdmPlanner()
    xs = np.linspace(0.0, 300.0, 301)
    uniform = UniformPath(np.stack([xs, np.zeros_like(xs)], -1), np.full(301, 15.0), 1.0)
    path = UniformPathBatch.of([uniform])
    prof = planner._longitudinal(path, preview_cap(uniform.values, 1.0), 0.0, 12.0, 2.0, 40.0, 0.0, 0.1)
    accel = np.diff(np.concatenate([np.full((N_PROFILES, 1), 12.0), prof.v], 1), axis=1) / 0.1
    comfortable = accel[:N_COMFORTABLE]
    jerk = np.diff(np.concatenate([np.full((N_COMFORTABLE, 1), 2.0), comfortable], 1), axis=1) / 0.1
    assert np.abs(jerk).max() <= JERK_MPS3 + 1e-9
    assert comfortable.min() >= COMFORT_ACCEL_MPS2[0] - 1e-9 and comfortable.max() <= COMFORT_ACCEL_MPS2[1] + 1e-9
    assert accel[N_COMFORTABLE, 0] < 2.0 - 10 * JERK_MPS3 * 0.1  # the emergency IDM: no jerk limit


def test_from_standstill_the_forecast_ego_moves():
    """A jerk-limited ramp from 0 m/s^2 would plan the first step slower than the tracker's 0.05 m/s hold
    threshold, and the ego would never start: the profiles may start at up to 1 m/s^2."""
    planner = PdmPlanner()
    planner.plan(policy_input([(0.0, 0.0, 0.0, 0.0)]))
    assert planner.last_best == 0
    assert planner.scorer.last_sub_scores["ego_progress_along_route"][0] > 0.9  # as far as the unlimited IDM
    assert planner.scorer.last_sub_scores["ego_is_making_progress"][0] == 1.0


def test_the_offset_is_kept_on_near_ties_and_left_once_the_centreline_is_clean():
    planner = PdmPlanner()
    inp = policy_input([(0.0, 1.0, 0.0, 10.0)])
    planner._last = (1.0, 0)  # last step: the +1 m offset at full speed
    planner.plan(inp)
    assert planner.last_offsets[planner.last_best] == 1.0  # kept (the centreline scores the same)
    for _ in range(RETURN_STEPS):
        planner.plan(inp)
    assert planner.last_offsets[planner.last_best] == 0.0
    assert len(planner.last_scores) == N_PROFILES


def test_an_offset_into_a_lane_going_the_other_way_is_wrong_way_driving():
    """Our lane along y = 0 (+x), 3 m wide, and an oncoming lane along y = 3 (-x): forecast samples whose
    centre is at y = 2 are in the oncoming lane; the same samples at y = -2 (a lane going our way) are not."""
    xs = np.linspace(-100.0, 300.0, 81)
    graph = LaneGraph()
    graph.add([Lane(1, np.stack([xs, np.zeros_like(xs)], -1), width_m=3.0),
               Lane(2, np.stack([xs[::-1], np.full_like(xs, 3.0)], -1), width_m=3.0),
               Lane(3, np.stack([xs, np.full_like(xs, -3.0)], -1), width_m=3.0)])
    planner = PdmPlanner()
    t = np.arange(1, 41) * 0.1
    states = np.zeros((3, 40, 4))
    states[:, :, 0], states[:, :, 3] = 10.0 * t, 10.0
    states[1, :, 1], states[2, :, 1] = 2.0, -2.0
    offsets = np.array([0.0, 1.0, -1.0])
    inp = policy_input([(0.0, 0.0, 0.0, 10.0)], graph)
    planner.scorer.prepare(inp)
    against = planner.scorer.against_lanes(graph, states, offsets)
    assert not against[0].any() and against[1].all() and not against[2].any()
    planner.scorer.score(inp, states, offsets, np.full((3, 40), 12.0), against)
    np.testing.assert_array_equal(planner.scorer.last_sub_scores["driving_direction_compliance"], [1.0, 0.0, 1.0])


def test_closed_loop_behind_a_braking_car_is_comfortable():
    """The ego (12 m/s) 35 m behind a car at 10 m/s that brakes to a stop at 2 m/s^2 after 2 s: driven with the
    engine's tracker and bicycle, re-planning every step, the ego stops behind it without contact and its
    trace passes every nuPlan comfort bound."""
    planner = PdmPlanner()
    inp = policy_input([(0.0, 0.0, 0.0, 12.0), (35.0, 0.0, 0.0, 10.0)])
    a = inp.agents
    ego_trace = []
    for k in range(150):
        command = planner.plan(inp)
        accel, steer = track_trajectory(a.xy[0], float(a.yaw[0]), float(a.speed[0]), command.poses, 0.1)
        xy, yaw, v = bicycle_step(a.xy[0], float(a.yaw[0]), float(a.speed[0]), accel, steer, 0.1)
        lead_v = max(float(a.speed[1]) - (2.0 * 0.1 if k >= 20 else 0.0), 0.0)
        a = a.with_state(np.stack([xy, a.xy[1] + [lead_v * 0.1, 0.0]]), np.array([yaw, 0.0]), np.array([v, lead_v]))
        inp = PolicyInput(agents=a, controlled=inp.controlled, graph=inp.graph, routes=inp.routes, ego_slot=0, step=k)
        ego_trace.append((yaw, v))
        assert a.xy[1, 0] - a.xy[0, 0] > 4.8  # no contact
    assert a.speed[0] < 0.1
    trace = np.array(ego_trace)
    kin = EgoKinematics.of(trace[:, 0], trace[:, 1], 0.1)
    assert ego_is_comfortable(kin) == 1.0


def test_the_tracker_executes_the_planned_first_step_acceleration():
    """Cruising at 5 m/s (no acceleration) on a free road, cap 12 m/s: the plan ramps up at the jerk limit and
    the engine's tracker, reading the planned poses, accelerates by JERK x dt at once, not 0 (a constant-jerk
    ramp through poses 1-3 would make the tracker replay the current acceleration)."""
    planner = PdmPlanner()
    inp = policy_input([(0.0, 0.0, 0.0, 5.0)])
    command = planner.plan(inp)
    accel, _ = track_trajectory(inp.agents.xy[0], 0.0, 5.0, command.poses, 0.1)
    assert planner.last_best == 0
    np.testing.assert_allclose(accel, JERK_MPS3 * 0.1, atol=1e-6)
