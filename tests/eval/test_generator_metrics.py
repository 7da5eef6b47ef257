"""Generator fidelity metrics: divergences, Frechet distance, overlap areas, world metrics."""

from __future__ import annotations

import numpy as np
import pytest

import tests.straight_world  # noqa: F401  (registers "test-straight")
from vectorworld import geometry
from vectorworld.eval.generator_metrics import (
    GrownWorlds,
    TileRecord,
    _CpuTimed,
    convex_intersection_area,
    frechet_distance,
    frechet_spread,
    grow_worlds,
    js_divergence,
    lane_stat_means,
    naive_baseline_metrics,
    straight_lane_share,
    straight_lanes,
    world_metrics,
)
from vectorworld.generation import make_generator
from vectorworld.generation.base import AgentSpawns, TileContent, TileFrame, TileGenerator, TileRequest
from vectorworld.generation.learned.tile_tensors import TileTensors
from vectorworld.scene import LaneGraph


def test_js_divergence_bounds() -> None:
    bins = np.linspace(0.0, 10.0, 11)
    a = np.random.default_rng(0).uniform(0, 10, 500)
    assert js_divergence(a, a, bins) == pytest.approx(0.0, abs=1e-9)
    assert js_divergence(np.full(50, 1.5), np.full(50, 8.5), bins) == pytest.approx(1.0, abs=1e-6)


def test_frechet_distance_zero_for_same_and_grows_with_shift() -> None:
    x = np.random.default_rng(0).normal(size=(400, 3))
    assert frechet_distance(x, x) == pytest.approx(0.0, abs=1e-6)
    assert frechet_distance(x + 2.0, x) > frechet_distance(x + 1.0, x) > 0.5


def test_lane_stat_means_name_the_statistic_that_moves_the_frechet_distance() -> None:
    ref = np.random.default_rng(1).normal([12.0, 21.0, 0.008, 0.85, 4.8], [9.0, 7.0, 0.01, 0.6, 2.9], (300, 5))
    gen = ref.copy()
    gen[:, 0] -= 2.0 * ref[:, 0].std()  # two reference standard deviations fewer lanes, nothing else changed
    means = lane_stat_means(gen, ref)
    assert means["frechet_lanes"] == pytest.approx(4.0)
    assert means["frechet_lanes"] == pytest.approx(frechet_distance(gen, ref), rel=1e-6)  # same covariance
    for name in ("lane_length_m", "curvature", "degree", "components"):
        assert means[f"frechet_{name}"] == pytest.approx(0.0, abs=1e-12)
        assert means[f"{name}_mean"] == pytest.approx(means[f"reference_{name}_mean"])
    assert means["lanes_mean"] == pytest.approx(means["reference_lanes_mean"] - 2.0 * ref[:, 0].std())


def test_the_frechet_spread_shrinks_with_more_worlds_and_vanishes_for_identical_ones() -> None:
    rng = np.random.default_rng(2)
    ref = rng.normal(size=(400, 5))
    few = [rng.normal(0.3, 1.0, (10, 5)) for _ in range(10)]
    many = [rng.normal(0.3, 1.0, (10, 5)) for _ in range(100)]
    assert frechet_spread(many, ref) < 0.5 * frechet_spread(few, ref)
    assert frechet_spread([few[0]] * 8, ref) == pytest.approx(0.0, abs=1e-9)  # every draw is the same world set
    assert np.isnan(frechet_spread(few[:1], ref))


class _CountingGenerator(TileGenerator):
    """Answers every request with a new empty tile, its diagnostics the call's number."""

    name = "counting"

    def __init__(self) -> None:
        self.last_diagnostics = 0

    def generate(self, request: TileRequest) -> TileContent:
        self.last_diagnostics += 1
        return TileContent(lanes=(), links=(), agents=AgentSpawns.none())


def test_each_generated_tile_gets_the_diagnostics_of_its_own_call() -> None:
    timed = _CpuTimed(_CountingGenerator())
    first, second = timed.generate(None), timed.generate(None)  # type: ignore[arg-type]
    assert timed.diagnostics_of(first) == 1 and timed.diagnostics_of(second) == 2  # not the last call's
    assert timed.diagnostics_of(TileContent(lanes=(), links=(), agents=AgentSpawns.none())) is None
    timed.forget_calls()
    assert timed.diagnostics_of(second) is None and len(timed.cpu_ms) == 2


def _tile_of(lanes: list[np.ndarray], known: list[bool]) -> TileTensors:
    """A cropped tile holding lanes (20, 2) (``known``: a condition lane) in 6 slots, and no agents."""
    points = np.zeros((6, 20, 2), np.float32)
    points[:len(lanes)] = lanes
    valid, cond = np.arange(6) < len(lanes), np.zeros(6, bool)
    cond[:len(known)] = known
    return TileTensors(points, valid, cond, np.zeros((6, 6), np.int8), np.zeros((2, 7), np.float32),
                       np.zeros(2, np.int8), np.zeros((2, 6, 2), np.float32), np.zeros(2, bool), np.zeros(2, bool))


def test_a_lane_is_straight_when_it_keeps_within_a_decimetre_of_its_chord() -> None:
    s = np.linspace(0.0, 1.0, 20)
    along_x = np.stack([30.0 * s, np.full(20, -1.75)], -1)
    diagonal = np.stack([5.0 + 20.0 * s, 20.0 * s], -1)
    bow = np.stack([30.0 * s, 0.3 * np.sin(np.pi * s)], -1)           # 0.3 m off its chord at the middle
    shallow = np.stack([30.0 * s, 0.08 * np.sin(2.0 * np.pi * s)], -1)  # 8 cm either way
    tile = _tile_of([along_x, bow, diagonal, shallow, bow], [False, False, False, False, True])
    assert straight_lanes(tile).tolist() == [True, False, True, True]  # the known (condition) bow not counted
    assert straight_lane_share([tile, _tile_of([bow], [False])]) == pytest.approx(3 / 5)
    assert np.isnan(straight_lane_share([_tile_of([bow], [True])]))


def test_convex_intersection_area_of_boxes() -> None:
    c = geometry.box_corners(np.array([[0.0, 0.0], [1.0, 0.0]]), np.zeros(2), np.full(2, 2.0), np.full(2, 2.0))
    assert convex_intersection_area(c[0], c[1]) == pytest.approx(2.0)
    far = geometry.box_corners(np.array([5.0, 0.0]), np.float64(0.3), np.float64(2.0), np.float64(1.0))
    assert convex_intersection_area(c[0], far) == 0.0


def test_world_metrics_of_a_straight_world() -> None:
    grown = grow_worlds(make_generator("test-straight"), worlds=1, tiles_per_world=4, seed=0)
    metrics = world_metrics(grown)
    assert metrics["tiles"] == 3
    assert metrics["epd_m_mean"] == pytest.approx(0.0, abs=1e-9)
    assert metrics["dangling_rate"] == 0.0 and metrics["offlane_rate"] == 0.0
    assert metrics["init_overlap_rate"] == 0.0 and metrics["fallback_rate"] == 0.0
    naive = naive_baseline_metrics(grown, [], seed=0)
    assert 0.0 <= naive["offlane_rate"] <= 1.0


def test_the_raw_gaps_of_the_model_edges_are_reported_apart_from_the_pinned_port_links() -> None:
    """A learned tile whose one model edge missed by 3 m and whose three port links are pinned, and a
    fallback tile (no raw gaps): the raw gap reads 0.75 m over four links, 3 m over the one model edge."""
    frame = TileFrame(np.zeros(2), 0.0)
    learned = TileRecord(frame, (), AgentSpawns.none(), 5.0, False, np.array([3.0, 0.0, 0.0, 0.0]), None,
                         np.array([3.0]))
    fallback = TileRecord(frame, (), AgentSpawns.none(), 5.0, True)
    metrics = world_metrics(GrownWorlds(graphs=[LaneGraph()], records=[[learned, fallback]]))
    assert metrics["raw_epd_m_mean"] == pytest.approx(0.75)
    assert metrics["raw_edge_epd_m_mean"] == pytest.approx(3.0) and metrics["raw_edge_links"] == 1


def test_the_share_of_tiles_whose_ports_were_continued_is_reported() -> None:
    frame = TileFrame(np.zeros(2), 0.0)
    records = [TileRecord(frame, (), AgentSpawns.none(), 5.0, False, continued_ports=k == 0) for k in range(4)]
    metrics = world_metrics(GrownWorlds(graphs=[LaneGraph()], records=[records]))
    assert metrics["continued_ports_rate"] == pytest.approx(0.25) and metrics["fallback_rate"] == 0.0


def test_grown_worlds_give_each_new_tile_the_agents_of_the_earlier_ones() -> None:
    """As in a session, where a tile's spawns must stay clear of the world's agents (the overlap metric
    pools a world's agents: without them a generator could not avoid what it is judged on)."""
    from tests.straight_world import StraightGenerator

    seen: list[int] = []

    class Recording(StraightGenerator):
        def generate(self, request):  # noqa: ANN001, ANN202
            seen.append(len(request.existing_agents_xy))
            return super().generate(request)

    grown = grow_worlds(Recording(), worlds=1, tiles_per_world=4, seed=0)
    spawned = np.cumsum([len(r.agents) for r in grown.records[0]])
    assert spawned[-1] > 0 and seen[0] == 0 and max(seen[1:]) > 0
    assert all(n <= total for n, total in zip(seen[1:], spawned, strict=False))


def test_the_learned_only_lane_frechet_leaves_the_fallback_tiles_out() -> None:
    """Every other tile of this generator is a fallback that draws its lanes wavy: the all-tile Fréchet mixes
    those in, the learned-only one is the Fréchet of the other tiles' crops alone."""
    import dataclasses

    from tests.straight_world import StraightGenerator
    from vectorworld.eval.generator_metrics import crop_grown, evaluate_generator, tile_lane_stats
    from vectorworld.generation.base import TileContent

    class HalfFallback(StraightGenerator):
        calls = 0

        def generate(self, request):  # noqa: ANN001, ANN202
            content = super().generate(request)
            HalfFallback.calls += 1
            if HalfFallback.calls % 2:
                return content
            wavy = tuple(dataclasses.replace(lane, points=lane.points + np.stack(
                [np.zeros(len(lane.points)), np.sin(np.arange(len(lane.points)))], -1)) for lane in content.lanes)
            return TileContent(wavy, content.links, content.agents, used_fallback=True)

    reference = crop_grown(grow_worlds(make_generator("test-straight"), worlds=1, tiles_per_world=6, seed=1))
    metrics = evaluate_generator(HalfFallback(), reference, worlds=1, tiles_per_world=7, seed=0)
    HalfFallback.calls = 0
    grown = grow_worlds(HalfFallback(), worlds=1, tiles_per_world=7, seed=0)
    learned = [crop for crop, rec in zip(crop_grown(grown), grown.records[0], strict=True) if not rec.used_fallback]
    stats = np.array([tile_lane_stats(t) for t in learned])
    expected = frechet_distance(stats, np.array([tile_lane_stats(t) for t in reference]))
    assert 0 < metrics["learned_only_tiles"] < metrics["tiles"]
    assert metrics["learned_only_lane_frechet"] == pytest.approx(expected)
    assert metrics["learned_only_lane_frechet"] != pytest.approx(metrics["lane_frechet"])


def test_the_stage_times_a_generator_reports_are_averaged_over_the_calls_that_report_them() -> None:
    """A generator whose diagnostics time its stages: every grown tile's ``stage_ms`` is recorded, and the
    world figures hold each stage's mean over the calls that reported stages (a stage absent from a call counts
    0 there); a generator without stage times adds no such figure."""
    from types import SimpleNamespace

    from tests.straight_world import StraightGenerator

    class Staged(StraightGenerator):
        calls = 0

        def generate(self, request):  # noqa: ANN001, ANN202
            Staged.calls += 1
            stages = {"sample": 2.0 * Staged.calls, **({"fallback": 6.0} if Staged.calls % 2 == 0 else {})}
            self.last_diagnostics = SimpleNamespace(raw_gaps_m=None, stage_ms=stages)
            return super().generate(request)

    grown = grow_worlds(Staged(), worlds=1, tiles_per_world=5, seed=0)
    recorded = [rec.stage_ms for rec in grown.records[0]]    # call 1 made the first tile, not recorded
    assert recorded == [{"sample": 4.0, "fallback": 6.0}, {"sample": 6.0}, {"sample": 8.0, "fallback": 6.0},
                        {"sample": 10.0}]
    metrics = world_metrics(grown)
    assert metrics["tile_ms_sample_mean"] == pytest.approx(7.0)
    assert metrics["tile_ms_fallback_mean"] == pytest.approx(3.0)
    plain = world_metrics(grow_worlds(make_generator("test-straight"), worlds=1, tiles_per_world=5, seed=0))
    assert not [key for key in plain if key.startswith("tile_ms_") and key.endswith("_mean")]
