"""The world plan of road-plan models: hints read off one city plan, so neighbouring tiles agree."""

from __future__ import annotations

import numpy as np
import pytest

from tests.generation.test_learned import two_lane_request
from tests.generation.test_road_plan import ROW, spy_on_hints, tiny_plan_model
from vectorworld import geometry
from vectorworld.generation.base import IdAllocator, TileFrame
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M
from vectorworld.generation.learned.world_plan import WorldPlan


def _plan() -> WorldPlan:
    return WorldPlan.drawn(TileFrame(np.zeros(2), 0.0), np.random.default_rng(3))


def _before_first_junction(plan: WorldPlan, ahead_m: float = 16.0) -> TileFrame:
    """A frame along the first road whose front half holds its first junction, ``ahead_m`` past the centre."""
    city = plan.plan
    node = city.node_xy(city.next_junction(-1, 0, 1), 0)
    return TileFrame(node - np.array([ahead_m, 0.0]), 0.0)


def test_a_frame_before_a_junction_is_told_the_cross_street_at_its_sides() -> None:
    plan = _plan()
    rows = plan.hints(_before_first_junction(plan))
    assert len(rows) >= 2                                         # a two-way cross street at one side at least
    xy = rows[:, 2:4] * HALF_TILE_M
    np.testing.assert_allclose(np.abs(xy[:, 1]), HALF_TILE_M, atol=1.0)    # on a side border
    assert np.all(np.abs(xy[:, 0] - 16.0) < 15.0)                 # where the cross street is
    entering = rows[:, 0] == 1.0
    assert np.all(rows[:, 0] + rows[:, 1] == 1.0)
    inward = np.sign(rows[:, 5]) == -np.sign(xy[:, 1])           # heading (cos, sin): into the tile
    np.testing.assert_array_equal(inward, entering)
    assert np.all(np.abs(rows[:, 5]) > 0.9)                       # across the tile


def test_neighbouring_tiles_agree_on_where_the_cross_street_crosses_their_sides() -> None:
    plan = _plan()
    near, far = _before_first_junction(plan, 12.0), _before_first_junction(plan, 24.0)   # 12 m apart along x

    def crossings(frame: TileFrame) -> set[tuple[float, float]]:
        rows = plan.hints(frame)
        assert len(rows) > 0
        return {tuple(np.round(xy, 4)) for xy in frame.to_global(rows[:, 2:4] * HALF_TILE_M)}

    assert crossings(near) == crossings(far)     # the same side-border poses, in the world frame
    again = WorldPlan.drawn(TileFrame(np.zeros(2), 0.0), np.random.default_rng(3))
    np.testing.assert_array_equal(again.hints(near), plan.hints(near))           # deterministic per seed
    other = WorldPlan.drawn(TileFrame(np.zeros(2), 0.0), np.random.default_rng(4))
    assert other.plan.seed != plan.plan.seed


def test_a_road_already_drawn_at_a_planned_pose_is_not_planned_again() -> None:
    plan = _plan()
    frame = _before_first_junction(plan)
    rows = plan.hints(frame)
    first = rows[0, 2:4] * HALF_TILE_M
    drawn = np.stack([first + [2.0, 0.0], first + [2.0, -np.sign(first[1]) * 20.0]])   # 2 m beside the pose
    kept = plan.hints(frame, (drawn,))
    poses = rows[:, 2:4] * HALF_TILE_M
    clear = geometry.point_segment_distance(poses, drawn[:1], drawn[1:])[:, 0] >= 5.0
    assert 0 < clear.sum() < len(rows)
    np.testing.assert_array_equal(kept, rows[clear])
    far = np.stack([[-30.0, -5.0], [-10.0, -5.0]])               # a known lane nowhere near: nothing dropped
    np.testing.assert_array_equal(plan.hints(frame, (far,)), rows)


@pytest.mark.usefixtures("one_torch_thread")
def test_a_procedural_start_tile_gives_the_world_its_city_plan() -> None:
    from vectorworld.generation.learned.generator import LearnedTileGenerator

    gen = LearnedTileGenerator(model=tiny_plan_model(), frozen_graph=False, start="procedural",
                               plan_source="city")
    gen.first_tile(TileFrame(np.array([5.0, 7.0]), 0.3), IdAllocator(), np.random.default_rng(0))
    plan, anchor = gen.fallback.city
    assert gen.world_plan.plan is plan and gen.world_plan.anchor is anchor
    old = LearnedTileGenerator(model=tiny_plan_model(border_hints=False), frozen_graph=False, start="procedural",
                               plan_source="city")
    old.first_tile(TileFrame(np.array([5.0, 7.0]), 0.3), IdAllocator(), np.random.default_rng(0))
    assert old.fallback.city is not None and old.world_plan is None     # a model without plans reads none


@pytest.mark.usefixtures("one_torch_thread")
def test_a_city_plan_model_reads_its_worlds_plan_and_a_log_world_or_the_default_draws_from_the_prior() -> None:
    import tests.straight_world  # noqa: F401  (registers the "test-straight" fallback generator)
    from vectorworld.generation.learned.generator import LearnedTileGenerator
    from vectorworld.generation.learned.road_plan import RoadPlans
    from vectorworld.generation.learned.tile_context import build_context

    model = tiny_plan_model()
    seen = spy_on_hints(model)
    plans = RoadPlans.from_entries([(np.array([2, 0, 1.75 / 32, 0], np.float32), ROW[None])])
    gen = LearnedTileGenerator(model=model, fallback="test-straight", frozen_graph=False, road_plans=plans,
                               plan_source="city")
    ids = IdAllocator()
    gen.first_tile(TileFrame(np.zeros(2), 0.0), ids, np.random.default_rng(0))
    assert gen.world_plan is not None
    request = two_lane_request(frame=_before_first_junction(gen.world_plan), lane_ids=ids)
    expected = gen.world_plan.hints(request.frame, build_context(request, 12, 8).known_points)
    assert len(expected) > 0
    seen.clear()
    gen.generate(request)
    np.testing.assert_array_equal(seen[0][4:4 + len(expected)], expected[:8])   # after the two out ports
    seen.clear()
    gen.generate(two_lane_request(frame=request.frame))         # another world (a log's): the prior
    np.testing.assert_array_equal(seen[0][4], ROW)
    prior = LearnedTileGenerator(model=model, fallback="test-straight", frozen_graph=False, road_plans=plans)
    prior.first_tile(TileFrame(np.zeros(2), 0.0), ids, np.random.default_rng(0))
    assert prior.world_plan is None
    seen.clear()
    prior.generate(request)
    np.testing.assert_array_equal(seen[0][4], ROW)


def test_a_plan_laid_on_the_start_road_is_the_same_plan_moved_there() -> None:
    plan = _plan()
    frame = TileFrame(np.array([50.0, -20.0]), 0.7)
    s = np.linspace(-30.0, 30.0, 13)
    lane = np.stack([s * np.cos(0.2), 2.0 + s * np.sin(0.2)], -1)      # the start road, tile frame
    laid = plan.anchored_on(lane, frame)
    np.testing.assert_allclose(laid.anchor.origin, frame.to_global(np.array([[0.0, 2.0]]))[0], atol=1e-9)
    assert laid.anchor.yaw == pytest.approx(0.9)
    before = _before_first_junction(plan)        # the anchors of both plans are where the start road is
    centre = geometry.to_global(geometry.to_local(before.center_xy[None], plan.anchor.origin, plan.anchor.yaw),
                                laid.anchor.origin, laid.anchor.yaw)[0]
    moved = TileFrame(centre, before.yaw - plan.anchor.yaw + laid.anchor.yaw)
    rows = plan.hints(before)
    assert len(rows) > 0
    np.testing.assert_allclose(laid.hints(moved), rows, atol=1e-4)


def test_an_unknown_plan_source_is_refused_by_name() -> None:
    from vectorworld.errors import ConfigError
    from vectorworld.generation.learned.generator import LearnedTileGenerator

    with pytest.raises(ConfigError, match="plan_source 'grid'"):
        LearnedTileGenerator(plan_source="grid")
