"""The learned generator's nearest-lane rule (spawn filter and the evaluation's off-lane metric)."""

from __future__ import annotations

import numpy as np
import pytest

from vectorworld.generation.learned.spawn_filter import nearest_lane


def test_nearest_lane_weighs_offset_against_heading_and_takes_the_nearest_segments_heading() -> None:
    east = np.array([[-20.0, 0.0], [0.0, 0.0], [20.0, 0.0]])
    west = np.array([[20.0, 3.0], [-20.0, 3.0]])
    bend = np.array([[0.0, -10.0], [10.0, -10.0], [10.0, -30.0]])          # east, then south
    lanes = [east, west, bend]
    xy = np.array([[5.0, 1.0], [5.0, 2.0], [5.0, 2.0], [11.0, -20.0], [50.0, 0.0]])
    yaw = np.array([0.0, 0.0, np.pi, -np.pi / 2, 0.0])
    best, off, err = nearest_lane(xy, yaw, lanes)
    assert best.tolist() == [0, 0, 1, 2, 0]                   # 1 m closer to west loses to 4 m per rad
    np.testing.assert_allclose(off, [1.0, 2.0, 1.0, 1.0, 30.0], atol=1e-12)
    np.testing.assert_allclose(err, [0.0, 0.0, 0.0, 0.0, 0.0], atol=1e-12)
    assert nearest_lane(xy, yaw, [])[0].tolist() == [-1] * 5


def test_nearest_lane_of_lanes_of_any_point_count_is_the_per_lane_projection() -> None:
    rng = np.random.default_rng(1)
    lanes = [np.cumsum(rng.normal(0.0, 5.0, (int(n), 2)), 0) for n in rng.integers(2, 30, 8)]
    xy, yaw = rng.uniform(-30.0, 30.0, (40, 2)), rng.uniform(-np.pi, np.pi, 40)
    best, off, err = nearest_lane(xy, yaw, lanes)
    for m in range(len(xy)):
        costs = []
        for pts in lanes:
            a, ab = pts[:-1], np.diff(pts, axis=0)
            t = np.clip(((xy[m] - a) * ab).sum(1) / np.maximum((ab * ab).sum(1), 1e-12), 0.0, 1.0)
            d = np.linalg.norm(xy[m] - (a + t[:, None] * ab), axis=1)
            k = int(d.argmin())
            e = abs((yaw[m] - np.arctan2(ab[k, 1], ab[k, 0]) + np.pi) % (2 * np.pi) - np.pi)
            costs.append((d[k] + 4.0 * e, d[k], e))
        k = int(np.argmin([c[0] for c in costs]))
        assert best[m] == k and np.isclose(off[m], costs[k][1]) and np.isclose(err[m], costs[k][2])


def test_kept_vehicles_follow_their_lane_moving_ones_on_its_centre_and_others_keep_their_pose() -> None:
    """Moving vehicles and vehicles standing in traffic go onto the centreline and get the lane; a car parked
    at the curb (standing, ``curb_offset_m`` or more beside) gets no lane and stands on the curb line
    (``curb_place_m``, moved out to it from 2.3 m: a bus passing on the lane hit one left at 2.25 m)."""
    from vectorworld.generation.learned.spawn_filter import SpawnFilterConfig, filter_spawns

    lane = np.stack([np.linspace(0.0, 30.0, 7), np.linspace(0.0, 30.0, 7) * 0.1], -1)   # heading 0.0997 rad
    off = np.radians(20.0)
    state = np.array([[10.0, 1.5, 5.0, np.cos(off), np.sin(off), 4.5, 2.0],          # moving, 20 deg off
                      [20.0, 4.3, 0.0, np.cos(off), np.sin(off), 4.5, 2.0],          # parked 2.3 m beside
                      [5.0, 6.0, 1.0, np.cos(1.0), np.sin(1.0), 0.6, 0.6],           # pedestrian, 5.5 m off
                      [25.0, 2.5, 5.0, np.cos(0.8), np.sin(0.8), 4.5, 2.0],          # vehicle, 40 deg off
                      [2.0, 1.4, 0.0, 1.0, 0.0, 4.5, 2.0]])                          # standing 1.2 m beside
    keep, lane_of, pose = filter_spawns(state, np.array([0, 0, 1, 0, 0]), [lane], np.zeros((0, 2)),
                                        SpawnFilterConfig())
    assert keep.tolist() == [True, True, True, False, True] and lane_of[[0, 1, 4]].tolist() == [0, -1, 0]
    heading = np.arctan2(3.0, 30.0)
    assert pose[0, 2] == heading and pose[1, 2] == heading and pose[4, 2] == heading
    np.testing.assert_allclose(pose[[0, 4], 1], pose[[0, 4], 0] * 0.1, atol=1e-9)  # on the centreline
    np.testing.assert_allclose(np.hypot(*(pose[0, :2] - [10.0, 1.5])), abs(0.5 * np.cos(heading)), atol=1e-9)
    along, across = np.array([1.0, 0.1]) / np.hypot(1.0, 0.1), np.array([-0.1, 1.0]) / np.hypot(1.0, 0.1)
    assert pose[1, :2] @ across == pytest.approx(2.45)             # parked 2.3 m out: moved to the curb line
    assert pose[1, :2] @ along == pytest.approx(np.array([20.0, 4.3]) @ along)
    assert pose[2].tolist() == [5.0, 6.0, np.arctan2(np.sin(1.0), np.cos(1.0))]


def test_cyclists_ride_a_lane_pedestrians_stand_off_it_and_only_agents_on_a_lane_get_one() -> None:
    """A cyclist is routed by the session like a car: off every lane it is dropped, on one it takes the
    lane's heading and keeps its offset (near the curb). A pedestrian on the carriageway would stand in
    traffic: dropped; one away from the lanes is kept without a lane (a lane id would hand the session a
    route it stands 10 m beside)."""
    from vectorworld.generation.learned.spawn_filter import SpawnFilterConfig, filter_spawns

    lane = np.array([[0.0, 0.0], [30.0, 0.0]])
    state = np.array([[10.0, 1.2, 4.0, np.cos(0.2), np.sin(0.2), 1.8, 0.7],     # cyclist 1.2 m right of centre
                      [15.0, 12.0, 4.0, 1.0, 0.0, 1.8, 0.7],                      # cyclist 12 m off the lane
                      [20.0, 10.0, 1.0, 0.0, 1.0, 0.6, 0.6],                      # pedestrian 10 m off
                      [25.0, 2.0, 1.0, 1.0, 0.0, 0.6, 0.6]])                      # pedestrian 2 m off
    keep, lane_of, pose = filter_spawns(state, np.array([2, 2, 1, 1]), [lane], np.zeros((0, 2)),
                                        SpawnFilterConfig())
    assert keep.tolist() == [True, False, True, False]
    assert lane_of.tolist() == [0, -1, -1, -1]
    assert pose[0].tolist() == [10.0, 1.2, 0.0]


def test_a_spawned_follower_is_no_faster_than_it_can_brake_behind_the_one_ahead() -> None:
    """On one lane, from the front back: 4.4 m behind a car at 6.5 m/s a car decoded at 14.4 m/s drives off at
    sqrt(6.5^2 + 2 * 2.5 * (4.4 - 2.5)); one 36 m further back keeps its 14 m/s; other lanes and unrouted
    agents keep theirs."""
    from vectorworld.generation.learned.spawn_filter import follow_speeds

    lanes = [np.stack([np.linspace(-40.0, 30.0, 15), np.zeros(15)], -1),
             np.stack([np.linspace(-40.0, 30.0, 15), np.full(15, 3.5)], -1)]
    pose = np.array([[20.0, 0.0, 0.0], [10.7, 0.0, 0.0], [-30.0, 0.0, 0.0], [12.0, 3.5, 0.0], [12.0, 6.0, 0.0]])
    speed = np.array([6.5, 14.4, 14.0, 14.4, 14.4])
    out = follow_speeds(pose, speed, np.full(5, 4.9), np.array([0, 0, 0, 1, -1]), lanes)
    capped = np.sqrt(6.5**2 + 2 * 2.5 * (4.4 - 2.5))
    np.testing.assert_allclose(out, [6.5, capped, 14.0, 14.4, 14.4], atol=1e-9)


def test_a_spawned_follower_brakes_for_the_one_ahead_on_the_lane_it_leads_to_or_merges_into() -> None:
    """Lanes 0 and 2 both lead to lane 1 (a merge). Ahead on a car's way: on its successor (10 m on from a car
    5 m before the joint: capped to sqrt(6^2 + 2 * 2.5 * (5.1 - 2.5)) = 7 m/s) or nearer the merge on the
    other lane (11 m before the merge, 6 m behind the car 5 m before it); a car closer than the 2.5 m gap
    starts slower in proportion (1.1 m: 7 * 1.1 / 2.5)."""
    from vectorworld.generation.learned.spawn_filter import follow_speeds

    lanes = [np.stack([np.linspace(-40.0, 0.0, 9), np.zeros(9)], -1),
             np.stack([np.linspace(0.0, 30.0, 7), np.zeros(7)], -1),
             np.stack([np.linspace(-40.0, 0.0, 9), np.linspace(-40.0, 0.0, 9)], -1)]
    pose = np.array([[5.0, 0.0, 0.0], [-5.0, 0.0, 0.0], [-11.0 / np.sqrt(2.0), -11.0 / np.sqrt(2.0), 0.785]])
    speed = np.array([6.0, 14.0, 14.0])
    out = follow_speeds(pose, speed, np.full(3, 4.9), np.array([1, 0, 2]), lanes, [(0, 1), (2, 1)])
    np.testing.assert_allclose(out, [6.0, 7.0, 7.0 * 1.1 / 2.5], atol=1e-9)
    alone = follow_speeds(pose, speed, np.full(3, 4.9), np.array([1, 0, 2]), lanes)
    np.testing.assert_allclose(alone, speed)                  # without the links no one is ahead of another


def test_spawns_that_would_meet_head_on_or_across_within_two_seconds_are_dropped() -> None:
    """Kept in order, each driven straight on: a car 20 m ahead coming the other way (meets in 1 s), and one
    crossing 10 m ahead at right angles (meets in 1 s), go; oncoming traffic a lane width to the side, a car
    ahead the same way and a crossing car that would meet the first only after the 2 s horizon stay."""
    from vectorworld.generation.learned.spawn_filter import clear_paths

    pose = np.array([[0.0, 0.0, 0.0],            # kept: the first
                     [20.0, 0.0, np.pi],         # head-on
                     [20.0, 3.5, np.pi],         # oncoming, the next lane
                     [10.0, -10.0, np.pi / 2],   # across, at the same point after 1 s
                     [8.0, 0.0, 0.0],            # ahead, the same way (follow_speeds' business)
                     [40.0, -20.0, np.pi / 2]])  # across, at the same point only after 4 s
    speed = np.array([10.0, 10.0, 10.0, 10.0, 10.0, 5.0])
    keep = clear_paths(pose, speed, np.full(6, 4.5), np.full(6, 2.0))
    assert keep.tolist() == [True, False, True, False, True, True]
