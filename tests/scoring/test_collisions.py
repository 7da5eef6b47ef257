"""At-fault classification as nuPlan does it, on constructed contacts and constructed episodes."""

import numpy as np

from tests.scoring.scenes import drive, road
from vectorworld.scene import AgentType
from vectorworld.scoring.collisions import CollisionType, at_fault, classify_collisions


def classify(ego: tuple[float, float, float, float], other: tuple[float, float, float, float],
             agent_type: int = AgentType.VEHICLE) -> int:
    x, y, yaw, v = other
    return int(classify_collisions(np.array(ego[:2]), ego[2], ego[3], 4.8, 2.0, np.array([[x, y]]), np.array([yaw]),
                                   np.array([v]), np.array([4.8]), np.array([2.0]), np.array([agent_type]))[0])


def test_collision_types_and_fault():
    ego = (0.0, 0.0, 0.0, 5.0)
    assert classify(ego, (-4.5, 0.0, 0.0, 8.0)) == CollisionType.ACTIVE_REAR      # rear-ended by a faster car
    assert classify((0.0, 0.0, 0.0, 0.0), (-4.5, 0.0, 0.0, 3.0)) == CollisionType.STOPPED_EGO
    assert classify(ego, (4.5, 0.0, 0.0, 0.0)) == CollisionType.STOPPED_TRACK     # into a standing car
    assert classify(ego, (3.0, 0.5, np.pi / 2, 4.0)) == CollisionType.ACTIVE_FRONT  # crossing in front
    assert classify(ego, (-1.0, 1.9, 0.0, 4.0)) == CollisionType.ACTIVE_LATERAL    # side by side
    assert classify(ego, (4.5, 0.0, 0.0, 3.0), AgentType.OTHER) == CollisionType.STOPPED_TRACK  # static object
    kinds = np.array([CollisionType.STOPPED_EGO, CollisionType.ACTIVE_REAR, CollisionType.STOPPED_TRACK,
                      CollisionType.ACTIVE_FRONT, CollisionType.ACTIVE_LATERAL])
    assert at_fault(kinds, False).tolist() == [False, False, True, True, False]
    assert at_fault(kinds, True).tolist() == [False, False, True, True, True]


def test_npc_rear_ending_the_moving_ego_is_not_at_fault():
    scorer, _ = drive(road(), [(0.0, 0.0, 0.0, 5.0), (-8.0, 0.0, 0.0, 12.0)], 20)
    report = scorer.report("collision", 1.0, 0.01)
    assert [e["kind"] for e in report["score_events"]].count("collision") == 1
    assert "active_rear" in next(e["detail"] for e in report["score_events"] if e["kind"] == "collision")
    assert report["at_fault_collisions"] == 0 and report["cls_no_at_fault_collisions"] == 1.0
    assert report["infraction_counts"] == {"collision_vehicle": 1}  # CARLA counts every collision


def test_stopped_ego_hit_from_behind_is_not_at_fault():
    scorer, _ = drive(road(), [(0.0, 0.0, 0.0, 0.0), (-8.0, 0.0, 0.0, 6.0)], 20)
    report = scorer.report("collision", 1.0, 0.01)
    assert "stopped_ego" in next(e["detail"] for e in report["score_events"] if e["kind"] == "collision")
    assert report["at_fault_collisions"] == 0 and report["cls_no_at_fault_collisions"] == 1.0


def test_ego_rear_ending_a_car_is_at_fault_and_zeroes_the_score():
    scorer, _ = drive(road(), [(0.0, 0.0, 0.0, 10.0), (12.0, 0.0, 0.0, 0.0)], 20)
    report = scorer.report("collision", 1.0, 0.01)
    assert report["at_fault_collisions"] == 1 and report["cls_no_at_fault_collisions"] == 0.0
    assert report["cls"] == 0.0 and report["cls_time_to_collision_within_bound"] == 0.0
    assert any(e["kind"] == "at_fault_collision" for e in report["score_events"])


def test_at_fault_collision_with_a_static_object_halves_the_multiplier():
    scorer, _ = drive(road(), [(0.0, 0.0, 0.0, 10.0), (12.0, 0.0, 0.0, 0.0)], 20,
                      types=[AgentType.VEHICLE, AgentType.OTHER])
    report = scorer.report("collision", 1.0, 0.01)
    assert report["cls_no_at_fault_collisions"] == 0.5
    assert report["infraction_counts"] == {"collision_static": 1}
