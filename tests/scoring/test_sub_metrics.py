"""Each CLS sub-metric on a constructed episode, and the aggregation formula checked by hand."""

import math

import numpy as np
import pytest

from tests.scoring.scenes import drive, road
from vectorworld.scoring import SUB_METRICS, closed_loop_score
from vectorworld.scoring import metrics as m
from vectorworld.scoring.driving_score import driving_score, infraction_penalty


def test_registry_has_nuplan_weights():
    weights = {name: sm.weight for name, sm in SUB_METRICS.items() if not sm.multiplier}
    assert weights == {"ego_progress_along_route": 5.0, "time_to_collision_within_bound": 5.0,
                       "speed_limit_compliance": 4.0, "ego_is_comfortable": 2.0}
    assert {n for n, sm in SUB_METRICS.items() if sm.multiplier} == {
        "no_at_fault_collisions", "drivable_area_compliance", "driving_direction_compliance", "ego_is_making_progress"}


def test_clean_drive_scores_one_but_for_progress():
    scorer, _ = drive(road(speed_limit=12.0), [(0.0, 0.0, 0.0, 10.0)], 50)
    report = scorer.report("goal_reached", 0.05, 0.05)
    for name in SUB_METRICS:
        if name != "ego_progress_along_route":
            assert report[f"cls_{name}"] == 1.0, name
    # 50 steps at 10 m/s in a 12 m/s lane: 50 m of 60 m free-flow reference progress.
    assert report["route_progress_m"] == pytest.approx(50.0)
    assert report["reference_progress_m"] == pytest.approx(60.0)
    assert report["cls_ego_progress_along_route"] == pytest.approx(50.0 / 60.0)
    assert report["cls"] == pytest.approx((5 * 50.0 / 60.0 + 5 + 4 + 2) / 16)
    assert report["driving_score"] == pytest.approx(1.0) and report["infractions"] == 0


@pytest.mark.parametrize(("speed", "expected"), [(1.5, 1.0), (4.0, 0.5), (6.0, 0.0)])
def test_wrong_way_driving(speed, expected):
    """The only lane points along -x and the ego drives +x: nuPlan sums the progress along the lane over 1 s
    (11 samples here: 1.1 x speed against it) and allows < 2 m (1.0), < 6 m (0.5), else 0."""
    scorer, _ = drive(road(reverse=True), [(0.0, 0.0, 0.0, speed)], 30)
    assert scorer.sub_scores()["driving_direction_compliance"] == expected
    assert any(e["kind"] == "wrong_way" for e in scorer.events) == (expected < 1.0)
    right_way, _ = drive(road(), [(0.0, 0.0, 0.0, speed)], 30)
    assert right_way.sub_scores()["driving_direction_compliance"] == 1.0


def test_speeding_is_scored_by_the_overspeed_integral():
    scorer, _ = drive(road(speed_limit=10.0), [(0.0, 0.0, 0.0, 11.0)], 40)
    # 1 m/s over the limit on all 41 samples (the start state too) of a 4 s episode.
    expected = max(0.0, 1.0 - (41 * 1.0 * 0.1) / (2.23 * 4.0))
    assert scorer.sub_scores()["speed_limit_compliance"] == pytest.approx(expected)
    assert any(e["kind"] == "overspeed" for e in scorer.events)
    fast, _ = drive(road(speed_limit=10.0), [(0.0, 0.0, 0.0, 13.0)], 40)
    assert fast.sub_scores()["speed_limit_compliance"] == 0.0


def test_ttc_breach_zeroes_the_ttc_term_without_a_collision():
    # 10 m/s towards a standing car 10.3 m ahead (5.5 m bumper gap), braking hard enough not to hit it.
    scorer, frames = drive(road(), [(0.0, 0.0, 0.0, 10.0), (10.3, 0.0, 0.0, 0.0)], 30, accel=[-9.5, 0.0])
    assert not scorer._collided
    assert scorer.min_ttc_s <= 0.6
    scores = scorer.sub_scores()
    assert scores["time_to_collision_within_bound"] == 0.0 and scores["no_at_fault_collisions"] == 1.0
    far, _ = drive(road(), [(0.0, 0.0, 0.0, 10.0), (60.0, 0.0, 0.0, 10.0)], 30)
    assert far.sub_scores()["time_to_collision_within_bound"] == 1.0


def test_no_progress_zeroes_the_score():
    scorer, _ = drive(road(), [(0.0, 0.0, 0.0, 0.0)], 100)
    report = scorer.report("max_steps", 1.0, 0.0)
    assert report["cls_ego_progress_along_route"] == 0.0 and report["cls_ego_is_making_progress"] == 0.0
    assert report["cls"] == 0.0
    assert report["infraction_counts"] == {"route_timeout": 1}
    assert report["driving_score"] == 0.0  # no route completion


def test_hard_braking_is_uncomfortable_and_offroad_is_not_compliant():
    scorer, _ = drive(road(), [(0.0, 0.0, 0.0, 12.0)], 30, accel=[-6.0])
    assert scorer.sub_scores()["ego_is_comfortable"] == 0.0
    gentle, _ = drive(road(), [(0.0, 0.0, 0.0, 12.0)], 30, accel=[-2.0])
    assert gentle.sub_scores()["ego_is_comfortable"] == 1.0
    off, _ = drive(road(), [(0.0, 0.0, 0.0, 5.0)], 10, offroad=True)
    report = off.report("goal_reached", 1.0, 0.005)
    assert report["cls_drivable_area_compliance"] == 0.0 and report["cls"] == 0.0
    assert report["route_completion"] == 0.0  # off-road distance does not count


def test_aggregation_formula_by_hand_on_one_episode():
    """Speeding at 11 m/s in a 10 m/s lane, rear-ended at the end by a faster NPC (not at fault)."""
    scorer, _ = drive(road(speed_limit=10.0), [(0.0, 0.0, 0.0, 11.0), (-40.0, 0.0, 0.0, 19.0)], 60)
    report = scorer.report("collision", 1.0, 0.066)
    s = {name: report[f"cls_{name}"] for name in SUB_METRICS}
    assert s["no_at_fault_collisions"] == 1.0 and s["ego_is_making_progress"] == 1.0
    assert s["drivable_area_compliance"] == 1.0 and s["driving_direction_compliance"] == 1.0
    progress = 11.0 * 6.0 / (10.0 * 6.0)  # capped at 1
    speed = 1.0 - (61 * 1.0 * 0.1) / (2.23 * 6.0)
    assert s["ego_progress_along_route"] == pytest.approx(min(progress, 1.0))
    assert s["speed_limit_compliance"] == pytest.approx(speed)
    by_hand = 1.0 * 1.0 * 1.0 * 1.0 * (5 * 1.0 + 5 * s["time_to_collision_within_bound"] + 4 * speed
                                       + 2 * s["ego_is_comfortable"]) / 16.0
    assert report["cls"] == pytest.approx(by_hand)
    assert closed_loop_score(s) == pytest.approx(by_hand)
    # CARLA: the ego was hit by a vehicle: 0.6 once; route completion 66 m of 1 km.
    assert report["driving_score"] == pytest.approx(report["route_completion"] * 0.6)
    assert report["route_completion"] == pytest.approx(66.0 / 1000.0, rel=1e-6)


def test_metric_functions_broadcast_over_proposals():
    offroad = np.array([[False, False], [False, True]])
    assert m.drivable_area_compliance(offroad).tolist() == [1.0, 0.0]
    assert m.no_at_fault_collisions(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([1, 0, 0])).tolist() == [
        0.5, 0.0, 0.0]
    assert infraction_penalty({"collision_pedestrian": 1, "route_timeout": 1}) == pytest.approx(0.35)
    assert driving_score(0.5, {"agent_blocked": 2}) == pytest.approx(0.5 * 0.49)
    assert math.isclose(m.speed_limit_compliance(np.zeros((3, 5)), 0.1)[0], 1.0)


def test_reference_progress_moves_with_the_traffic_going_our_way():
    # Following a car at 5 m/s in a 12 m/s lane: the reference driver drives with that traffic (ratio 1);
    # an oncoming car does not count, so alone on the road the reference is the limit.
    scorer, _ = drive(road(speed_limit=12.0), [(0.0, 0.0, 0.0, 5.0), (15.0, 0.0, 0.0, 5.0)], 50)
    assert scorer.reference_progress_m == pytest.approx(25.0)
    assert scorer.sub_scores()["ego_progress_along_route"] == pytest.approx(1.0)
    oncoming, _ = drive(road(speed_limit=12.0), [(0.0, 0.0, 0.0, 5.0), (30.0, 3.5, np.pi, 5.0)], 20)
    assert oncoming.reference_progress_m == pytest.approx(12.0 * 2.0)


def test_a_jump_of_the_lane_projection_is_not_wrong_way_driving(monkeypatch):
    """Seed 3 of the pdm measurement scored "39.4 m against lane 736 in 1 s": more than the ego can move.
    Progress along a lane never exceeds the distance moved, so a jump of the lane projection (a lane bending
    back near itself, a re-drawn lane) is not counted as driving against the lane."""
    import dataclasses

    from vectorworld.scoring import episode

    real = episode.locate
    calls = {"n": 0}

    def jumping(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls["n"] += 1
        pos = real(*args, **kwargs)
        return dataclasses.replace(pos, s_m=pos.s_m - 39.0) if calls["n"] > 6 else pos

    monkeypatch.setattr(episode, "locate", jumping)
    scorer, _ = drive(road(), [(0.0, 0.0, 0.0, 8.0)], 30)
    assert calls["n"] > 6
    assert scorer.sub_scores()["driving_direction_compliance"] == 1.0
    assert not any(e["kind"] == "wrong_way" for e in scorer.events)
