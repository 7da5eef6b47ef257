"""The learned tile generator end to end: context, candidate choice, exact stitching, spawns, fallback."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

import tests.straight_world  # noqa: F401  (registers the "test-straight" fallback generator)
from vectorworld import geometry
from vectorworld.generation.base import IdAllocator, Port, TileFrame, TileRequest
from vectorworld.generation.learned.bezier import fit_bezier
from vectorworld.generation.learned.egr_dit import DiTConfig
from vectorworld.generation.learned.generator import FIRST_TILE_ROUNDS, LearnedTileGenerator
from vectorworld.generation.learned.outpaint import OutpaintModel
from vectorworld.generation.learned.tile_context import build_context
from vectorworld.generation.learned.tile_tensors import EDGE_SUCC, HALF_TILE_M, LANE_POINTS
from vectorworld.generation.learned.vae import VAEConfig
from vectorworld.scene import Lane, LaneGraph

pytestmark = pytest.mark.usefixtures("one_torch_thread")

YAW = 0.4
CENTER = np.array([100.0, -50.0])


def two_lane_request(seed: int = 0, frame: TileFrame | None = None, lane_ids: IdAllocator | None = None,
                     apart_m: float = 3.5) -> TileRequest:
    """Two known parallel lanes ``apart_m`` apart ending at the tile centre (the partition), heading along the
    tile's yaw (``frame``: at CENTER, YAW by default; ``lane_ids``: of the world being grown, a new one by
    default)."""
    frame = TileFrame(CENTER, YAW) if frame is None else frame
    graph = LaneGraph()
    ports = []
    for k, y in enumerate((0.0, apart_m)):
        local = np.stack([np.linspace(-40.0, 0.0, 11), np.full(11, y)], -1)
        lane = Lane(k, frame.to_global(local), right_neighbors=(0,) if k == 1 else (),
                    left_neighbors=(1,) if k == 0 else ())
        graph.add([lane])
        xy, yaw = lane.end_pose
        ports.append(Port(k, xy, yaw, 3.5, 12.0, True))
    return TileRequest(frame=frame, ports=tuple(ports), graph=graph,
                       lane_ids=IdAllocator(100) if lane_ids is None else lane_ids,
                       rng=np.random.default_rng(seed), existing_agents_xy=frame.to_global(np.array([[30.0, 20.0]])))


def test_context_holds_known_lanes_and_ports() -> None:
    ctx = build_context(two_lane_request(), max_lanes=12, max_agents=8)
    assert ctx.known_ids == (0, 1)
    assert ctx.tiles.lane_cond.sum() == 2 and ctx.tiles.lane_valid.sum() == 2
    np.testing.assert_allclose(ctx.tiles.lane_points[0, -1], [0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(ctx.tiles.lane_points[0, 0], [-HALF_TILE_M, 0.0], atol=1e-6)
    assert [p.is_out for p in ctx.ports] == [True, True]
    np.testing.assert_allclose(ctx.ports[1].xy, [0.0, 3.5], atol=1e-9)
    assert not ctx.hints[:2].any() and not ctx.hints[4:].any()   # ports hint the first frontier slots
    np.testing.assert_allclose(ctx.hints[3], [1, 0, 0, 3.5 / 32, 1, 0], atol=1e-6)


def test_the_filter_sees_every_known_lane_in_the_square_not_only_the_condition_slots() -> None:
    """With 4 condition slots (max_lanes 8) the model sees the two port lanes and the nearest two of four
    roads crossing the front half; the filter checks new lanes against all six."""
    request = two_lane_request()
    frame = request.frame
    for k, x in enumerate((6.0, 12.0, 18.0, 24.0)):
        request.graph.add([Lane(10 + k, frame.to_global(np.stack([np.full(9, x), np.linspace(-32, 32, 9)], -1)))])
    ctx = build_context(request, max_lanes=8, max_agents=8)
    assert len(ctx.known_ids) == 4 and ctx.filter_lanes().shape == (6, LANE_POINTS, 2)
    assert sorted(np.round(ctx.filter_lanes()[:, 0, 0], 3).tolist()) == [-32.0, -32.0, 6.0, 12.0, 18.0, 24.0]


class _ScriptedVAE(torch.nn.Module):
    def __init__(self, config: VAEConfig, edges: torch.Tensor) -> None:
        super().__init__()
        self.config = config
        self.edges = edges

    def decode_edges(self, z: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(self.edges[slots][:, slots], 5).float() * 10.0


class _ScriptedModel:
    """Stands in for OutpaintModel: candidate 0 leaves a port open, candidate 1 continues both lanes
    (with small gaps that stitching must close) and places one moving car and one overlapping car."""

    def __init__(self) -> None:
        self.cfg = VAEConfig(max_lanes=12, max_agents=8)
        edges = torch.zeros(12, 12, dtype=torch.long)
        edges[2, 4] = EDGE_SUCC
        self.vae = _ScriptedVAE(self.cfg, edges)
        self.dit = SimpleNamespace(config=DiTConfig(max_lanes=12, max_agents=8))

    def outpaint(self, context, sampler, generator):
        c, n_l, n_a = sampler.candidates, self.cfg.max_lanes, self.cfg.max_agents
        lanes = np.zeros((c, n_l, LANE_POINTS, 2))
        logits = np.full((c, n_l), -10.0)
        x = np.linspace(0.4, 31.0, LANE_POINTS)
        lanes[:, 2] = np.stack([np.linspace(0.6, 15.0, LANE_POINTS), np.full(LANE_POINTS, 0.3)], -1)
        lanes[:, 4] = np.stack([np.linspace(15.4, 31.5, LANE_POINTS), np.full(LANE_POINTS, 0.1)], -1)
        lanes[:, 3] = np.stack([x, np.full(LANE_POINTS, 3.9)], -1)
        logits[:, [2, 4]] = 10.0
        logits[1:, 3] = 10.0                       # candidate 0 lacks the second lane
        agent = np.zeros((c, n_a, 23))
        agent_logit = np.full((c, n_a), -10.0)
        for slot, (ax, ay) in enumerate(((10.0, 0.3), (11.0, 0.4))):
            agent[:, slot, :7] = [ax / 32, ay / 32, 0.8, 1.0, 0.0, 0.1, 0.0]
            agent[:, slot, 7] = 5.0                # vehicle
            agent[:, slot, 11:] = np.linspace(-0.5, 0.0, 12)
            agent_logit[:, slot] = 10.0
        t = torch.as_tensor
        control = fit_bezier(lanes) / HALF_TILE_M                  # the model decodes Bézier control points
        decoded = {"lane_feat": t(control.reshape(c, n_l, -1), dtype=torch.float32),
                   "lane_logit": t(logits, dtype=torch.float32),
                   "agent_feat": t(agent, dtype=torch.float32), "agent_logit": t(agent_logit, dtype=torch.float32)}
        return decoded, torch.zeros(c, n_l + n_a, 16)


def test_generate_picks_valid_candidate_and_stitches_exactly() -> None:
    gen = LearnedTileGenerator(model=_ScriptedModel(), candidates=3, fallback="test-straight", frozen_graph=False)
    request = two_lane_request()
    content = gen.generate(request)
    assert not content.used_fallback
    # best first: candidate 0 (one hinted port slot left empty) ranks last; the first checked is valid
    assert gen.last_diagnostics.checked == 1 and gen.last_diagnostics.candidates == 3
    assert len(content.lanes) == 3
    by_id = {lane.id: lane for lane in content.lanes}
    links = dict(content.links)
    assert set(links) == {0, 1}
    for port in request.ports:
        new = by_id[links[port.lane_id]]
        assert np.linalg.norm(new.points[0] - port.xy) <= 1e-9
    first = by_id[links[0]]
    assert len(first.successors) == 1
    second = by_id[first.successors[0]]
    assert second.predecessors == (first.id,)
    assert np.linalg.norm(first.points[-1] - second.points[0]) <= 0.01
    for lane in (second, by_id[links[1]]):               # free ends reach the tile border
        end = request.frame.to_local(lane.points[-1])
        assert abs(np.max(np.abs(end)) - HALF_TILE_M) < 1e-6
    diagnostics = gen.last_diagnostics
    assert diagnostics.raw_gaps_m.max() > 0.3 and diagnostics.stitched_gaps_m.max() <= 0.01
    # the one model edge (first -> second) misses by 0.45 m; the two port links are pinned
    np.testing.assert_allclose(diagnostics.raw_edge_gaps_m, [np.hypot(0.2, 0.4)], atol=1e-6)
    np.testing.assert_allclose(diagnostics.raw_gaps_m[1:], 0.0, atol=1e-9)
    assert diagnostics.kept_agents == 1 and diagnostics.decoded_agents == 2
    agents = content.agents
    assert len(agents) == 1                               # the second car overlaps the first
    assert agents.lane_id[0] == first.id
    lane_heading = geometry.project_to_polyline(agents.xy[:1], first.points)[2][0]
    np.testing.assert_allclose(agents.yaw[0], lane_heading, atol=1e-9)   # its lane's heading (decoded: YAW)
    assert abs(agents.yaw[0] - YAW) < np.radians(25.0)
    assert np.abs(agents.motion_code[0]).sum() > 0          # warm start from the decoded motion code
    assert agents.speed[0] == pytest.approx(8.0, abs=1e-4)


class _OneRoadModel(_ScriptedModel):
    """A road-plan model (junction completion on) whose every candidate draws one lane, from the out port of
    :func:`_out_and_in_request` to the border, and none into its in port."""

    def __init__(self) -> None:
        super().__init__()
        self.dit = SimpleNamespace(config=DiTConfig(max_lanes=12, max_agents=8, border_hints=True))

    def outpaint(self, context, sampler, generator):
        decoded, z = super().outpaint(context, sampler, generator)
        c, n_l = sampler.candidates, self.cfg.max_lanes
        lanes = np.zeros((c, n_l, LANE_POINTS, 2))
        lanes[:, 2] = np.stack([np.linspace(0.6, 31.5, LANE_POINTS), np.full(LANE_POINTS, 0.3)], -1)
        logits = np.full((c, n_l), -10.0)
        logits[:, 2] = 10.0
        decoded["lane_feat"] = torch.as_tensor(fit_bezier(lanes).reshape(c, n_l, -1) / HALF_TILE_M,
                                               dtype=torch.float32)
        decoded["lane_logit"] = torch.as_tensor(logits, dtype=torch.float32)
        return decoded, z


def _out_and_in_request() -> TileRequest:
    """A known lane ending at the tile centre (an out port) and, 3.5 m to its left, one starting there and
    heading back (an in port: a new lane must end on it)."""
    frame = TileFrame(CENTER, YAW)
    graph = LaneGraph()
    graph.add([Lane(0, frame.to_global(np.stack([np.linspace(-40.0, 0.0, 11), np.zeros(11)], -1))),
               Lane(1, frame.to_global(np.stack([np.linspace(0.0, -40.0, 11), np.full(11, 3.5)], -1)))])
    ports = (Port(0, *graph[0].end_pose, 3.5, 12.0, True), Port(1, *graph[1].start_pose, 3.5, 12.0, False))
    return TileRequest(frame=frame, ports=ports, graph=graph, lane_ids=IdAllocator(100),
                       rng=np.random.default_rng(0), existing_agents_xy=np.zeros((0, 2)))


def test_a_port_no_candidate_continues_is_continued_straight_before_the_fallback() -> None:
    from vectorworld.generation.learned.road_plan import RoadPlans

    def generator(continue_ports: bool) -> LearnedTileGenerator:
        return LearnedTileGenerator(model=_OneRoadModel(), candidates=1, rounds=1, fallback="test-straight",
                                    frozen_graph=False, road_plans=RoadPlans.from_entries([]),
                                    continue_ports=continue_ports)

    gen = generator(True)
    request = _out_and_in_request()
    content = gen.generate(request)
    assert not content.used_fallback and gen.last_diagnostics.continued_ports
    into = [lane for lane in content.lanes if (lane.id, 1) in content.links]
    assert len(into) == 1 and np.linalg.norm(into[0].points[-1] - request.ports[1].xy) <= 1e-9
    local = request.frame.to_local(into[0].points)
    np.testing.assert_allclose(local[:, 1], 3.5, atol=1e-6)                # straight from the border
    np.testing.assert_allclose(local[0, 0], HALF_TILE_M, atol=1e-6)
    assert len(gen.last_diagnostics.raw_gaps_m) == 1     # the drawn lane's port link, not the continuation's
    off = generator(False)
    assert off.generate(_out_and_in_request()).used_fallback and not off.last_diagnostics.continued_ports


def test_cross_street_odds_must_be_positive() -> None:
    from vectorworld.errors import ConfigError

    with pytest.raises(ConfigError, match="cross_street_odds"):
        LearnedTileGenerator(model=_ScriptedModel(), cross_street_odds=0.0)


class _NoLaneModel(OutpaintModel):
    """An untrained model whose samples keep no lane (every existence logit -10)."""

    def outpaint(self, context, sampler, generator):
        decoded, z = super().outpaint(context, sampler, generator)
        decoded["lane_logit"] = torch.full_like(decoded["lane_logit"], -10.0)
        return decoded, z


def test_a_model_whose_samples_keep_no_lane_falls_back() -> None:
    vae = VAEConfig(max_lanes=12, max_agents=8, hidden=16, latent=4)
    model = _NoLaneModel(vae, DiTConfig(latent=4, max_lanes=12, max_agents=8, dim=16, depth=1, heads=2,
                                        edge_dim=4)).eval()
    gen = LearnedTileGenerator(model=model, fallback="test-straight", frozen_graph=False)
    content = gen.generate(two_lane_request())
    assert content.used_fallback and gen.last_diagnostics.used_fallback
    assert {a for a, _ in content.links} == {0, 1}
    again = LearnedTileGenerator(model=model, fallback="test-straight", frozen_graph=False).generate(
        two_lane_request())
    assert [lane.id for lane in again.lanes] == [lane.id for lane in content.lanes]


def test_import_is_light() -> None:
    code = "import sys, vectorworld.generation.learned.generator; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


class _FirstTileModel(_ScriptedModel):
    """Decodes a two-way road across the whole tile (a valid first tile) in every candidate."""

    def outpaint(self, context, sampler, generator):
        decoded, z = super().outpaint(context, sampler, generator)
        c, n_l = sampler.candidates, self.cfg.max_lanes
        lanes = np.zeros((c, n_l, LANE_POINTS, 2))
        x = np.linspace(-31.8, 31.8, LANE_POINTS)
        lanes[:, 0] = np.stack([x, np.full(LANE_POINTS, -1.75)], -1)
        lanes[:, 1] = np.stack([x[::-1], np.full(LANE_POINTS, 1.75)], -1)
        logits = np.full((c, n_l), -10.0)
        logits[:, :2] = 10.0
        decoded["lane_feat"] = torch.as_tensor(fit_bezier(lanes).reshape(c, n_l, -1) / HALF_TILE_M,
                                               dtype=torch.float32)
        decoded["lane_logit"] = torch.as_tensor(logits, dtype=torch.float32)
        return decoded, z


def test_a_sampled_first_tile_is_generated_from_nothing() -> None:
    frame = TileFrame(np.array([5.0, 7.0]), 0.3)
    gen = LearnedTileGenerator(model=_FirstTileModel(), fallback="test-straight", frozen_graph=False, start="sample")
    content = gen.first_tile(frame, IdAllocator(), np.random.default_rng(0))
    assert not content.used_fallback and len(content.lanes) == 2 and content.links == ()
    along = [lane for lane in content.lanes if abs(np.cos(lane.start_pose[1] - 0.3) - 1.0) < 1e-3]
    assert len(along) == 1
    local = frame.to_local(along[0].points)
    assert abs(local[0, 0] + HALF_TILE_M) < 1e-6 and abs(local[-1, 0] - HALF_TILE_M) < 1e-6   # border to border
    start = local[:8]
    if len(content.agents):                                   # the ego's start stays clear
        xy = frame.to_local(content.agents.xy)
        assert np.linalg.norm(xy[:, None] - start[None], axis=-1).min() >= 12.0
    # no +x road: falls back
    fallback = LearnedTileGenerator(model=_ScriptedModel(), fallback="test-straight", frozen_graph=False,
                                    start="sample")
    assert fallback.first_tile(frame, IdAllocator(), np.random.default_rng(0)).used_fallback
    off = LearnedTileGenerator(model=_FirstTileModel(), fallback="test-straight", start="procedural",
                               frozen_graph=False)
    assert not off.first_tile(frame, IdAllocator(), np.random.default_rng(0)).used_fallback   # fallback's own


class _SecondRoundModel(_ScriptedModel):
    """Every candidate of the first call leaves port 1 open; the second call continues both ports."""

    calls = 0

    def outpaint(self, context, sampler, generator):
        decoded, z = super().outpaint(context, sampler, generator)
        self.calls += 1
        if self.calls == 1:
            decoded["lane_logit"][:, 3] = -10.0
        return decoded, z


def test_a_second_round_is_sampled_only_when_the_first_fails() -> None:
    one = LearnedTileGenerator(model=_SecondRoundModel(), candidates=2, rounds=1, fallback="test-straight",
                               frozen_graph=False)
    assert one.generate(two_lane_request()).used_fallback
    model = _SecondRoundModel()
    two = LearnedTileGenerator(model=model, candidates=2, rounds=2, fallback="test-straight", frozen_graph=False)
    content = two.generate(two_lane_request())
    assert not content.used_fallback and model.calls == 2 and two.last_diagnostics.checked == 3
    content = two.generate(two_lane_request())                  # a valid first round: no second call
    assert not content.used_fallback and model.calls == 3


def test_generate_times_its_stages_round_by_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """``last_diagnostics.stage_ms`` holds the call's wall time per stage: context, then the network and the
    filter of every round, then the edges and the assembly -- or, when no round passed, the fallback."""
    import time

    from vectorworld.stage_clock import StageClock

    laps: list[str] = []
    lap = StageClock.lap
    monkeypatch.setattr(StageClock, "lap", lambda self, stage: laps.append(stage) or lap(self, stage))
    two = LearnedTileGenerator(model=_SecondRoundModel(), candidates=2, rounds=2, fallback="test-straight",
                               frozen_graph=False)
    start = time.perf_counter()
    assert not two.generate(two_lane_request()).used_fallback
    wall_ms = (time.perf_counter() - start) * 1e3
    assert laps == ["context", "sample", "filter", "sample", "filter", "edges", "assemble"]
    stages = two.last_diagnostics.stage_ms
    assert list(stages) == ["context", "sample", "filter", "edges", "assemble"]
    assert min(stages.values()) >= 0.0 and sum(stages.values()) <= wall_ms
    laps.clear()
    one = LearnedTileGenerator(model=_SecondRoundModel(), candidates=2, rounds=1, fallback="test-straight",
                               frozen_graph=False)
    assert one.generate(two_lane_request()).used_fallback
    assert laps == ["context", "sample", "filter", "fallback"]
    assert list(one.last_diagnostics.stage_ms) == ["context", "sample", "filter", "fallback"]


class _LateFirstTileModel(_FirstTileModel):
    """Decodes the valid first tile only from its ``late``-th call on (the earlier calls keep no lane)."""

    def __init__(self, late: int) -> None:
        super().__init__()
        self.late, self.calls = late, 0

    def outpaint(self, context, sampler, generator):
        decoded, z = super().outpaint(context, sampler, generator)
        self.calls += 1
        if self.calls < self.late:
            decoded["lane_logit"][:] = -10.0
        return decoded, z


def test_the_start_tile_samples_further_batches_until_one_holds_a_start_road() -> None:
    frame = TileFrame(np.zeros(2), 0.0)
    model = _LateFirstTileModel(late=FIRST_TILE_ROUNDS)
    gen = LearnedTileGenerator(model=model, fallback="test-straight", frozen_graph=False, start="sample")
    assert not gen.first_tile(frame, IdAllocator(), np.random.default_rng(0)).used_fallback
    assert model.calls == FIRST_TILE_ROUNDS
    model = _LateFirstTileModel(late=FIRST_TILE_ROUNDS + 1)
    gen = LearnedTileGenerator(model=model, fallback="test-straight", frozen_graph=False, start="sample")
    assert gen.first_tile(frame, IdAllocator(), np.random.default_rng(0)).used_fallback
    assert model.calls == FIRST_TILE_ROUNDS and gen.last_diagnostics.checked == 2 * FIRST_TILE_ROUNDS


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


class _ThreadRecorder(_ScriptedModel):
    """Records the torch and numpy BLAS thread counts the network runs with."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []
        self.blas: list[list[int]] = []

    def outpaint(self, context, sampler, generator):
        self.threads.append(torch.get_num_threads())
        self.blas.append(_blas_threads())
        return super().outpaint(context, sampler, generator)


def test_per_tile_inference_runs_on_one_math_thread_and_restores_the_callers() -> None:
    """torch and numpy's BLAS each run one thread inside ``generate`` (OpenBLAS's idle workers spin on a shared
    2-core machine) and get the caller's settings back after it."""
    model = _ThreadRecorder()
    gen = LearnedTileGenerator(model=model, candidates=2, fallback="test-straight", frozen_graph=False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with threadpool_limits(limits=2, user_api="blas"):
            caller_blas = _blas_threads()
            assert not gen.generate(two_lane_request()).used_fallback
            assert model.threads == [1] and torch.get_num_threads() == 2
            assert model.blas == [[1] * len(caller_blas)] and _blas_threads() == caller_blas
    finally:
        torch.set_num_threads(before)


def test_a_connector_of_junction_completion_gets_no_decoded_edges() -> None:
    gen = LearnedTileGenerator(model=_ScriptedModel(), fallback="test-straight", frozen_graph=False)
    edges = gen._decode_edges(torch.zeros(1, 20, 16), np.array([2, -1, 4]))
    assert edges.shape == (3, 3)
    assert edges[0, 2] == EDGE_SUCC and not edges[1].any() and not edges[:, 1].any()


class _CrossStreetModel(_ScriptedModel):
    """:class:`_ScriptedModel` whose candidates also draw a cross street at x = 20 m, straight through the
    second port's lane: no lane of the sample ends at the junction."""

    def outpaint(self, context, sampler, generator):
        decoded, z = super().outpaint(context, sampler, generator)
        c = sampler.candidates
        cross = np.stack([np.full(LANE_POINTS, 20.0), np.linspace(-31.5, 31.5, LANE_POINTS)], -1)
        decoded["lane_feat"][:, 5] = torch.as_tensor(fit_bezier(cross).reshape(-1) / HALF_TILE_M)
        decoded["lane_logit"][:, 5] = 10.0
        return decoded, z[:c]


def test_a_sampled_lane_through_a_junction_is_cut_there_and_its_pieces_are_linked() -> None:
    gen = LearnedTileGenerator(model=_CrossStreetModel(), candidates=2, fallback="test-straight",
                               frozen_graph=False)
    request = two_lane_request()
    content = gen.generate(request)
    assert not content.used_fallback
    by_id = {lane.id: lane for lane in content.lanes}
    chain = [by_id[dict(content.links)[1]]]                 # the second port's lane, from the port on
    while chain[-1].successors:
        chain.append(by_id[chain[-1].successors[0]])
    local = [request.frame.to_local(lane.points) for lane in chain]
    np.testing.assert_allclose([p[0, 0] for p in local], [0.0, 16.0, 24.0], atol=0.05)
    assert abs(local[-1][-1, 0] - HALF_TILE_M) < 1e-6
    assert [lane.predecessors for lane in chain[1:]] == [(chain[0].id,), (chain[1].id,)]
    assert len(content.lanes) == 2 + 3 + 3                   # the cross street is cut at its junction too


class _CrossingCarsModel(_CrossStreetModel):
    """:class:`_CrossStreetModel` with a third car on the cross street, 10 m short of the junction and as
    fast as the car on the first lane, 10 m short of it too: they would meet there 1.25 s later."""

    def outpaint(self, context, sampler, generator):
        decoded, z = super().outpaint(context, sampler, generator)
        decoded["agent_feat"][:, 2, :7] = torch.tensor([20.0 / 32, -10.0 / 32, 0.8, 0.0, 1.0, 0.1, 0.0])
        decoded["agent_feat"][:, 2, 7] = 5.0
        decoded["agent_logit"][:, 2] = 10.0
        return decoded, z


def test_spawns_that_would_meet_at_a_junction_are_not_both_placed() -> None:
    gen = LearnedTileGenerator(model=_CrossingCarsModel(), candidates=2, fallback="test-straight",
                               frozen_graph=False)
    request = two_lane_request()
    agents = gen.generate(request).agents
    assert len(agents) == len(agents.yaw) == 1 and gen.last_diagnostics.kept_agents == 1
    np.testing.assert_allclose(request.frame.to_local(agents.xy)[0], [10.0, 0.0], atol=0.5)


class _CurbCarModel(_ScriptedModel):
    """:class:`_ScriptedModel` with a third car parked at the curb, 2.4 m right of the first lane behind the
    moving car, decoded rolling at 0.3 m/s (under the spawn filter's 0.5 m/s for standing)."""

    def outpaint(self, context, sampler, generator):
        decoded, z = super().outpaint(context, sampler, generator)
        decoded["agent_feat"][:, 2, :7] = torch.tensor([4.0 / 32, -2.4 / 32, 0.03, 1.0, 0.0, 0.1, 0.0])
        decoded["agent_feat"][:, 2, 7] = 5.0
        decoded["agent_feat"][:, 2, 11:] = torch.linspace(-0.5, 0.0, 12)
        decoded["agent_logit"][:, 2] = 10.0
        return decoded, z


def test_a_car_parked_at_the_curb_stands_and_a_car_on_its_lane_drives() -> None:
    """A parked car gets no lane, so no route, and an NPC policy would drive it if it rolled: it spawns at rest
    with no motion, while the car in traffic keeps its decoded speed and motion."""
    gen = LearnedTileGenerator(model=_CurbCarModel(), candidates=2, fallback="test-straight", frozen_graph=False)
    request = two_lane_request()
    agents = gen.generate(request).agents
    assert len(agents) == 2
    curb = int(np.argmin(agents.lane_id))
    assert agents.lane_id[curb] == -1 and agents.lane_id[1 - curb] >= 0
    np.testing.assert_allclose(request.frame.to_local(agents.xy)[curb], [4.0, -2.4], atol=0.15)
    assert agents.speed[curb] == 0.0 and not agents.motion_code[curb].any()
    assert agents.speed[1 - curb] == pytest.approx(8.0, abs=1e-4) and agents.motion_code[1 - curb].any()


class _OneLaneModel(_ScriptedModel):
    """:class:`_ScriptedModel` that draws only the first port's lane, straight to the border."""

    def outpaint(self, context, sampler, generator):
        decoded, z = super().outpaint(context, sampler, generator)
        lane = np.stack([np.linspace(0.4, 31.5, LANE_POINTS), np.full(LANE_POINTS, 0.5)], -1)
        decoded["lane_feat"][:, 2] = torch.as_tensor(fit_bezier(lane).reshape(-1) / HALF_TILE_M)
        decoded["lane_logit"][:, 3:] = -10.0
        return decoded, z


def test_a_second_port_the_new_lane_reached_merges_into_it() -> None:
    """The known lanes end 2 m apart; the one sampled lane reaches both ports, and stitching starts it on one
    of them. The other port's lane merges into it through a connector instead of being left a dead end."""
    gen = LearnedTileGenerator(model=_OneLaneModel(), candidates=2, fallback="test-straight", frozen_graph=False)
    request = two_lane_request(apart_m=2.0)
    content = gen.generate(request)
    assert not content.used_fallback
    by_id = {lane.id: lane for lane in content.lanes}
    links = dict(content.links)
    assert sorted(links) == [0, 1] and len(content.lanes) == 3     # the lane and a connector, then the rest
    first, second = by_id[links[0]], by_id[links[1]]
    assert first.successors == second.successors and len(first.successors) == 1
    tail = by_id[first.successors[0]]
    for known, lane in ((0, first), (1, second)):     # each port's known lane goes on exactly, into the tail
        np.testing.assert_allclose(lane.points[0], request.graph[known].points[-1], atol=1e-6)
        np.testing.assert_allclose(lane.points[-1], tail.points[0], atol=1e-9)
    cut, end = request.frame.to_local(tail.points)[[0, -1]]
    assert abs(cut[0] - 8.0) < 0.05 and abs(end[0] - HALF_TILE_M) < 1e-6
