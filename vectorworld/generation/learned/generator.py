"""The learned VectorWorld tile generator: gated VAE + EGR-DiT + one-step MeanFlow outpainting.

``generate(request)``: encode the known lanes inside the tile frame (condition tokens), sample a batch of
candidate completions in one network call per step, decode them, keep the best candidate that passes the
validity filter (ports continued, no dangling ends, no duplicate of a known lane), stitch it exactly onto
the ports and its own junctions, and spawn the decoded agents that pass the spawn filter (warm start: each
spawn carries its decoded motion code). When no candidate is valid, the best one is tried again with straight
lanes continuing the ports it left open (``continued_ports``); when that fails too, the procedural generator
answers (``used_fallback=True``). The first tile is outpainted in two halves from a seed road (start_tile.py; or
sampled from nothing, ``start="sample"``) and must hold a road through its centre along +x; a frontier tile
without any known lane in reach falls back.

This module imports quickly: torch and the weights load lazily on the first ``generate``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import (
    AgentSpawns,
    IdAllocator,
    TileContent,
    TileFrame,
    TileGenerator,
    TileRequest,
    make_generator,
    register_generator,
    tile_ports,
)
from vectorworld.generation.learned.candidates import Choice, choose_candidate, completion_of, continue_open_ports
from vectorworld.generation.learned.filter_config import CandidateCheck, KnownLanes, StitchConfig
from vectorworld.generation.learned.junction_split import SplitConfig, SplitLanes, split_at_crossings, unsplit
from vectorworld.generation.learned.lane_rules import lanes_reference
from vectorworld.generation.learned.port_merge import merge_ports
from vectorworld.generation.learned.road_plan import RoadPlans, context_key
from vectorworld.generation.learned.spawn_filter import (
    VEHICLE,
    SpawnFilterConfig,
    clear_paths,
    filter_spawns,
    follow_speeds,
)
from vectorworld.generation.learned.start_tile import (
    SEED_LANE_IDS,
    START_PORT_MARGIN_M,
    along_x,
    draw_cross_section,
    half_graph,
    has_start_road,
    join_halves,
    seed_road,
    start_road,
    turned,
)
from vectorworld.generation.learned.tile_context import TileContext, build_context, with_plan
from vectorworld.generation.learned.tile_diagnostics import TileDiagnostics
from vectorworld.generation.learned.tile_tensors import (
    EDGE_LEFT,
    EDGE_NONE,
    EDGE_RIGHT,
    EDGE_SUCC,
    HINT_FEATURES,
    MOTION_POINTS,
    MOTION_SCALE_M,
    NUM_AGENT_TYPES,
    decode_agent_state,
    empty_tile,
    stack_tiles,
)
from vectorworld.generation.learned.world_plan import WorldPlan
from vectorworld.math_threads import math_threads
from vectorworld.scene import AgentType, Lane, LaneGraph
from vectorworld.stage_clock import StageClock

if TYPE_CHECKING:
    import torch

    from vectorworld.generation.learned.one_step import EdgeGraph, OneStepGraph
    from vectorworld.generation.learned.outpaint import OutpaintModel

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
"""The shipped checkpoint folder (model.safetensors + config.json; an ``ablations/`` folder with ``fm/`` and
``nogate/`` checkpoints, when present, holds the baselines of ``eval generator``)."""
DEFAULT_STEPS = 1
"""MeanFlow steps by default: one network call (the one-step map u(z_1, 0, 1))."""
DEFAULT_CANDIDATES = 2
"""Candidates sampled per tile (one batched call); the filter checks them lazily, best first."""
DEFAULT_ROUNDS = 3
"""Further batches of ``DEFAULT_CANDIDATES`` only for a tile whose batches so far all failed the filter; the
common path still samples 2 candidates. Two rounds: 9.3% -> 4.8% procedural fallback (6 seeds x 200
held-out tiles, 2026-12-05). Three (2026-12-07, ``mid_req``, 10 seeds x 200): 8.0% -> 5.6%, lane Fréchet
over the tiles the model answered 0.885 -> 0.891 (four rounds: 5.3%)."""
CROSS_STREET_ODDS = 8.0
"""How much likelier the road-plan prior draws a plan with a side road than one without (``RoadPlans.draw``).
The prior's neighbours plan side roads for their own contexts, but a learned world's contexts drift to the
ones that plan fewer: with uniform draws 19% of the calls got a side road (28% of the corpus tiles have one)
and the worlds had 8.2-8.5 front-half lanes per tile against the data's 11.7. Odds 8 with port continuations
(``mid_req``, 2 x 10 seeds x 200 held-out tiles, 2026-12-07): lane Fréchet 1.03 / 0.85 -> 0.54 / 0.55,
10.2-10.3 lanes per tile, raw gap 0.38 -> 0.42-0.49 m (odds 4: 0.64 / 0.57; a sweep without continuations:
odds 2 0.74, 16 and always 0.46-0.47 with more fallback; docs/learned_generator_log.md)."""


def _merged_edges(edge_types: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Decoded edge types (n, n) of the kept lanes -> (M, M) among the lanes after the port merge (``source``
    (M,): the kept lane each is a piece of, -1 for a merge connector): a piece keeps its lane's neighbours;
    connectors and two pieces of one lane have none."""
    of = np.maximum(source, 0)
    both = (source[:, None] >= 0) & (source[None] >= 0) & (source[:, None] != source[None])
    return np.where(both, edge_types[np.ix_(of, of)], EDGE_NONE)


def _neighbours(piece: int, split: SplitLanes, of_source: np.ndarray) -> list[int]:
    """The neighbour lanes of a new lane (``split``'s index ``piece``) whose original lane had the original
    neighbours ``of_source`` (n,) bool: of each, the piece outside a junction nearest to this one (none for
    a junction piece: no lane changes inside a junction)."""
    if split.junction[piece]:
        return []
    mid = split.lanes[piece].mean(0)
    out = []
    for j in np.flatnonzero(of_source):
        road = [k for k in split.pieces[j] if not split.junction[k]]
        out.append(min(road, key=lambda k: float(np.linalg.norm(split.lanes[k].mean(0) - mid))))
    return out


LINK_TOL_M = 0.01
"""A port link is made only where stitching put the lane end on the port (a lane end that reached two
ports metres apart is snapped onto one of them)."""
FIRST_TILE_CLEAR_M = 12.0
"""No decoded agent within this of the first 8 points of a +x road of the first tile (the ego starts there)."""
FIRST_TILE_ROUNDS = 24
"""Batches of candidates the start tile may sample (once per episode, so it may take longer than a frontier
tile): a road through the centre along +x on 29 of 200 seeds with one batch of 2, 123 with 8, 190 with 24
(p50 33 ms, p90 106 ms including the procedural start tile of the rest)."""


START_MODES = ("halves", "sample", "procedural")
"""How the learned generator makes a world's start tile (see :class:`LearnedTileGenerator`)."""
PLAN_SOURCES = ("city", "prior")
"""Where a border-hint model's road plans come from (see :class:`LearnedTileGenerator`)."""

_AGENT_TYPES = np.array([AgentType.VEHICLE, AgentType.PEDESTRIAN, AgentType.CYCLIST, AgentType.OTHER], np.int8)


@register_generator("learned")
class LearnedTileGenerator(TileGenerator):
    """Outpaints frontier tiles with the learned model (see module docstring).

    ``candidates`` are sampled in one batched call per round; ``rounds`` > 1 samples a further batch only
    when every candidate of the rounds before failed the filter (the fallback then comes later); with
    ``continue_ports`` (a road-plan model) the last round's best candidate is then tried with straight lanes
    continuing the ports it left open, before the fallback. With
    ``frozen_graph`` one-step MeanFlow runs as a frozen graph of the model's weights at first use
    (:class:`~vectorworld.generation.learned.one_step.OneStepGraph`, the same samples for less dispatch);
    off, the model's eager ``outpaint`` runs (a model whose weights still change, a stand-in in tests). A
    tile runs on ``num_threads`` torch threads and at most as many BLAS threads for numpy
    (:mod:`vectorworld.math_threads`; None: the caller's settings).

    ``start`` makes a world's start tile: ``"halves"`` (default) outpaints it in two halves from a road
    cross-section drawn from the corpus (start_tile.py); ``"sample"`` samples it from nothing (every token
    free; mid_req: ends-growth lane Fréchet 1.93 against 1.35 for halves, 5 seeds, README "Start tiles");
    ``"procedural"`` asks the fallback generator.

    A model trained with border hints is told a road plan per tile: with ``plan_source="prior"`` (default),
    or in a world that did not start from a first tile (a log), drawn per tile from the nearest-neighbour
    prior (:class:`RoadPlans`; a plan with a side road ``cross_street_odds`` times as likely as one without,
    :data:`CROSS_STREET_ODDS`); with ``"city"`` read off one city plan per world, anchored at the start tile
    (:class:`WorldPlan`: neighbouring tiles agree on their cross streets). "city" draws richer tiles (lane
    Fréchet 1.11-1.56 against 1.92-2.01 for ``mid_req``, 3 seeds) but its junctions jam rollouts more (5 x 1
    km: 648 against 409 simulated s per km, one ego collision), so it is opt-in (README, "World plans").
    """

    name = "learned"

    def __init__(self, checkpoint: str | Path | None = None, sampler: str = "meanflow", steps: int = DEFAULT_STEPS,
                 candidates: int = DEFAULT_CANDIDATES, exist_threshold: float = 0.5, fallback: str = "procedural",
                 num_threads: int | None = 1, model: OutpaintModel | None = None,
                 stitch_config: StitchConfig | None = None, spawn_config: SpawnFilterConfig | None = None,
                 start: str = "halves", rounds: int = DEFAULT_ROUNDS, frozen_graph: bool = True,
                 road_plans: RoadPlans | None = None, plan_source: str = "prior",
                 junction_split: SplitConfig | None = SplitConfig(), cross_street_odds: float = CROSS_STREET_ODDS,
                 continue_ports: bool = True) -> None:
        from vectorworld.errors import ConfigError

        if sampler not in ("meanflow", "flow_matching") or steps < 1 or candidates < 1 or rounds < 1:
            raise ConfigError(f"invalid learned sampler settings: {sampler!r}, steps={steps}, "
                              f"candidates={candidates}, rounds={rounds}")
        if not cross_street_odds > 0:
            raise ConfigError(f"invalid learned cross_street_odds {cross_street_odds!r}: must be > 0")
        if start not in START_MODES:
            raise ConfigError(f"invalid learned start {start!r}: one of {', '.join(START_MODES)}")
        if plan_source not in PLAN_SOURCES:
            raise ConfigError(f"invalid learned plan_source {plan_source!r}: one of {', '.join(PLAN_SOURCES)}")
        self.plan_source = plan_source
        self.cross_street_odds, self.continue_ports = cross_street_odds, continue_ports
        self._layout: tuple[IdAllocator, WorldPlan] | None = None  # of the world whose ids come from [0]
        self.checkpoint = Path(checkpoint) if checkpoint is not None else WEIGHTS_DIR
        self.sampler_name, self.steps, self.candidates = sampler, steps, candidates
        self.rounds = rounds
        self.exist_threshold = exist_threshold
        self.fallback_name = fallback
        self.start = start
        self.frozen_graph = frozen_graph
        self.num_threads = num_threads
        self.stitch_config = stitch_config or StitchConfig()
        self.spawn_config = spawn_config or SpawnFilterConfig()
        self.split_config = junction_split
        self._model = model
        self._plans = road_plans
        self._fallback: TileGenerator | None = None
        self._one_step: OneStepGraph | None = None
        self._edge_graph: EdgeGraph | None = None
        self.last_diagnostics = TileDiagnostics()

    # ------------------------------------------------------------------ lazily built parts
    @property
    def model(self) -> OutpaintModel:
        """The network, loaded from ``checkpoint`` on first use (CheckpointError if unusable)."""
        if self._model is None:
            from vectorworld.generation.learned.outpaint import OutpaintModel

            self._model = OutpaintModel.load(self.checkpoint)
        return self._model

    @property
    def world_plan(self) -> WorldPlan | None:
        """The road plan of the world whose start tile this generator made last (None: none, or a model
        without border hints, or ``plan_source="prior"``)."""
        return None if self._layout is None else self._layout[1]

    @property
    def road_plans(self) -> RoadPlans:
        """The plan prior of a model trained with border hints, loaded from ``checkpoint`` on first use."""
        if self._plans is None:
            self._plans = RoadPlans.load(self.checkpoint)
        return self._plans

    def _one_step_graph(self) -> OneStepGraph:
        """The frozen one-step sampler of the model (built on first use; not pickled)."""
        if self._one_step is None:
            from vectorworld.generation.learned.one_step import OneStepGraph

            self._one_step = OneStepGraph(self.model, self.candidates)
        return self._one_step

    def _decode_edges(self, z: torch.Tensor, slots: np.ndarray) -> np.ndarray:
        """Edge types (n, n) among the kept lane slots ``slots`` (n,) of one candidate's latents (1, N, Z)
        (the frozen edge graph with ``frozen_graph``, else the eager decoder); a connector of junction
        completion (slot -1) has none."""
        import torch

        decoded = np.flatnonzero(slots >= 0)
        out = np.full((len(slots), len(slots)), EDGE_NONE, np.int64)
        if len(decoded) == 0:
            return out
        slots = slots[decoded]
        if self.frozen_graph:
            if self._edge_graph is None:
                from vectorworld.generation.learned.one_step import EdgeGraph

                self._edge_graph = EdgeGraph(self.model)
            logits = self._edge_graph(z, torch.as_tensor(slots))
        else:
            with torch.inference_mode():
                logits = self.model.vae.decode_edges(z, torch.as_tensor(slots))
        out[np.ix_(decoded, decoded)] = logits.argmax(-1).numpy()
        return out

    @property
    def fallback(self) -> TileGenerator:
        if self._fallback is None:
            self._fallback = make_generator(self.fallback_name)
        return self._fallback

    def first_tile(self, frame: TileFrame, lane_ids: IdAllocator, rng: np.random.Generator) -> TileContent:
        """The start tile (see ``start``); it must hold a road through the tile centre along +x. When the
        model's start has none, or a half fell back, the fallback generator's first tile (``used_fallback``)."""
        self._layout = None
        if self.start == "procedural":
            return self._fallback_first_tile(frame, lane_ids, rng)
        if self.model.dit.config.border_hints and self.plan_source == "city":
            self._layout = (lane_ids, WorldPlan.drawn(frame, rng))
        content = self._start_in_halves(frame, lane_ids, rng) if self.start == "halves" \
            else self._sampled_start(frame, lane_ids, rng)
        start = None if content is None else start_road([frame.to_local(lane.points) for lane in content.lanes])
        if content is None or start is None:
            diagnostics = self.last_diagnostics
            content = self._fallback_first_tile(frame, lane_ids, rng)
            self.last_diagnostics = dataclasses.replace(diagnostics, used_fallback=True)
            return TileContent(content.lanes, content.links, content.agents, used_fallback=True)
        clear = np.ones(len(content.agents), bool)   # keep the start of the +x roads clear for the ego
        local = frame.to_local(content.agents.xy)
        for lane in content.lanes:
            points = frame.to_local(lane.points)
            if along_x(points):
                clear &= np.linalg.norm(local[:, None] - points[None, :8], axis=-1).min(1) >= FIRST_TILE_CLEAR_M
        content = TileContent(content.lanes, content.links, content.agents.select(clear))
        if self._layout is not None:   # lay the world plan's first road on the start road
            self._layout = (lane_ids, self._layout[1].anchored_on(start, frame))
        self.last_diagnostics = dataclasses.replace(self.last_diagnostics, kept_agents=len(content.agents))
        return content

    def _start_in_halves(self, frame: TileFrame, lane_ids: IdAllocator, rng: np.random.Generator
                         ) -> TileContent | None:
        """The start tile outpainted in two halves from a seed road (see start_tile); None if a half fell
        back."""
        keys = self.road_plans.keys if self.model.dit.config.border_hints else None
        seed = seed_road(frame, *draw_cross_section(keys, rng), IdAllocator(SEED_LANE_IDS))
        front = self.generate(TileRequest(frame, tuple(tile_ports(seed, frame, START_PORT_MARGIN_M)), seed,
                                          lane_ids, rng))
        first = self.last_diagnostics
        if front.used_fallback:
            return None
        half = half_graph(front)
        back_frame = turned(frame)
        back = self.generate(TileRequest(back_frame, tuple(tile_ports(half, back_frame, START_PORT_MARGIN_M)),
                                         half, lane_ids, rng, existing_agents_xy=front.agents.xy))
        second = self.last_diagnostics
        self.last_diagnostics = TileDiagnostics(
            raw_gaps_m=np.concatenate([first.raw_gaps_m, second.raw_gaps_m]),
            stitched_gaps_m=np.concatenate([first.stitched_gaps_m, second.stitched_gaps_m]),
            raw_edge_gaps_m=np.concatenate([first.raw_edge_gaps_m, second.raw_edge_gaps_m]),
            checked=first.checked + second.checked, candidates=first.candidates + second.candidates,
            used_fallback=second.used_fallback, decoded_agents=first.decoded_agents + second.decoded_agents)
        return None if back.used_fallback else join_halves(front, back)

    def _sampled_start(self, frame: TileFrame, lane_ids: IdAllocator, rng: np.random.Generator
                       ) -> TileContent | None:
        """The start tile sampled from nothing (every token free, no ports), up to ``FIRST_TILE_ROUNDS``
        batches until a candidate holds a start road; None if none does."""
        cfg = self.model.vae.config
        ctx = TileContext(tiles=empty_tile(cfg.max_lanes, cfg.max_agents), known_ids=(), known_points=(),
                          ports=(), hints=np.zeros((cfg.max_lanes, HINT_FEATURES), np.float32))
        request = TileRequest(frame=frame, ports=(), graph=LaneGraph(), lane_ids=lane_ids, rng=rng)
        seed = int(rng.integers(0, 2**62))
        with math_threads(self.num_threads):
            choice, checked, decoded, z = self._sample_until_valid(
                ctx, seed, FIRST_TILE_ROUNDS, np.ones(cfg.max_lanes, bool), lanes_reference(np.zeros((0, 20, 2))),
                accept=has_start_road)
            if not choice.valid:
                self.last_diagnostics = TileDiagnostics(candidates=self.candidates * FIRST_TILE_ROUNDS,
                                                        checked=checked, used_fallback=True)
                return None
            edge_types = self._decode_edges(z[choice.index:choice.index + 1], choice.slots[choice.check.keep])
        keep = choice.check.keep
        content, diag = self._assemble(request, ctx, choice.lanes[keep], choice.stitched, choice.check,
                                       choice.slots[keep] >= 0, edge_types,
                                       decoded["agent_feat"][choice.index], decoded["agent_prob"][choice.index])
        self.last_diagnostics = dataclasses.replace(diag, checked=checked, candidates=self.candidates)
        return content

    def _fallback_first_tile(self, frame: TileFrame, lane_ids: IdAllocator, rng: np.random.Generator
                             ) -> TileContent:
        """The fallback generator's start tile; a road-plan model then reads its plans off the fallback's
        city plan (the procedural city's), so that the tiles it outpaints agree with the start tile."""
        content = self.fallback.first_tile(frame, lane_ids, rng)
        city = getattr(self.fallback, "city", None)
        if city is not None and self.model.dit.config.border_hints and self.plan_source == "city":
            self._layout = (lane_ids, WorldPlan(*city))
        return content

    def _fall_back(self, request: TileRequest, diagnostics: TileDiagnostics, clock: StageClock | None = None
                   ) -> TileContent:
        content = self.fallback.generate(request)
        if clock is not None:
            clock.lap("fallback")
            diagnostics = dataclasses.replace(diagnostics, stage_ms=dict(clock.total_ms))
        self.last_diagnostics = diagnostics
        return TileContent(content.lanes, content.links, content.agents, used_fallback=True)

    # ------------------------------------------------------------------ generation
    def generate(self, request: TileRequest) -> TileContent:
        with math_threads(self.num_threads):
            return self._outpaint(request)

    def _outpaint(self, request: TileRequest) -> TileContent:
        model = self.model
        vae_cfg = model.vae.config
        clock = StageClock()
        clock.start()
        ctx = build_context(request, vae_cfg.max_lanes, vae_cfg.max_agents)
        seed = int(request.rng.integers(0, 2**62))
        if not ctx.known_ids:
            if len(request.graph) == 0 and not request.ports:
                self.last_diagnostics = TileDiagnostics()
                return self.first_tile(request.frame, request.lane_ids, request.rng)
            return self._fall_back(request, TileDiagnostics(used_fallback=True), clock)
        if model.dit.config.border_hints:
            ctx = with_plan(ctx, self._plan(request, ctx))
        known = lanes_reference(ctx.filter_lanes())
        clock.lap("context")
        frontier = ~ctx.tiles.lane_cond
        choice, checked, decoded, z = self._sample_until_valid(ctx, seed, self.rounds, frontier, known, clock=clock)
        completion = completion_of(model)
        continued = not choice.valid and self.continue_ports and completion is not None
        if continued:   # a port left open by every candidate: the best one, with that port continued straight
            choice = continue_open_ports(choice, decoded["lane_feat"], decoded["lane_prob"], ctx.hints, frontier,
                                         list(ctx.ports), known, self.stitch_config, self.exist_threshold, completion)
            clock.lap("filter")
        if not choice.valid:
            return self._fall_back(request, TileDiagnostics(candidates=self.candidates * self.rounds,
                                                            checked=checked, used_fallback=True), clock)
        edge_types = self._decode_edges(z[choice.index:choice.index + 1], choice.slots[choice.check.keep])
        clock.lap("edges")
        check = choice.check
        raw = choice.lanes[check.keep]
        stitched = choice.stitched
        c = choice.index
        content, diag = self._assemble(request, ctx, raw, stitched, check, choice.slots[check.keep] >= 0,
                                       edge_types, decoded["agent_feat"][c], decoded["agent_prob"][c])
        clock.lap("assemble")
        self.last_diagnostics = dataclasses.replace(diag, checked=checked, candidates=self.candidates,
                                                    continued_ports=continued, stage_ms=dict(clock.total_ms))
        return content

    def _plan(self, request: TileRequest, ctx: TileContext) -> np.ndarray:
        """The road-plan rows (k, 6) of a frontier tile: its world's city layout, else the prior's draw."""
        if self._layout is not None and self._layout[0] is request.lane_ids:
            return self._layout[1].hints(request.frame, ctx.known_points)
        return self.road_plans.draw(context_key(ctx), request.rng, self.cross_street_odds)

    def _sample_until_valid(self, ctx: TileContext, seed: int, rounds: int, frontier: np.ndarray,
                            known: KnownLanes, accept: Callable[[np.ndarray], bool] | None = None,
                            clock: StageClock | None = None
                            ) -> tuple[Choice, int, dict[str, np.ndarray], torch.Tensor]:
        """Batches of candidates (seeds ``seed``, ``seed + 1``, ...) until one passes the filter, at most
        ``rounds``: the choice (the best invalid one if none passed), how many candidates were checked, and
        the decoded batch and latents it came from (``clock``: laps ``sample`` and ``filter``)."""
        checked = 0
        for attempt in range(rounds):
            decoded, z = self._sample(ctx, seed + attempt)
            if clock is not None:
                clock.lap("sample")
            choice = choose_candidate(decoded["lane_feat"], decoded["lane_prob"], ctx.hints, frontier,
                                      list(ctx.ports), known, self.stitch_config, self.exist_threshold, accept,
                                      completion_of(self.model))
            if clock is not None:
                clock.lap("filter")
            checked += choice.checked
            if choice.valid:
                break
        return choice, checked, decoded, z

    def _sample(self, ctx: TileContext, seed: int) -> tuple[dict[str, np.ndarray], torch.Tensor]:
        """Sample the candidates of one context in one batched network call per step; numpy outputs."""
        import torch

        from vectorworld.generation.learned.outpaint import SamplerConfig
        from vectorworld.generation.learned.vae import batch_to_torch

        with torch.inference_mode():
            batch = batch_to_torch({**stack_tiles([ctx.tiles]).as_dict(), "lane_hint": ctx.hints[None]})
            generator = torch.Generator().manual_seed(seed)
            if self.frozen_graph and self.sampler_name == "meanflow" and self.steps == 1:
                decoded, z = self._one_step_graph()(batch, generator)
            else:
                sampler = SamplerConfig(self.sampler_name, self.steps, self.candidates)
                decoded, z = self.model.outpaint(batch, sampler, generator)
            out = {"lane_feat": decoded["lane_feat"].numpy(),
                   "lane_prob": torch.sigmoid(decoded["lane_logit"]).numpy(),
                   "agent_feat": decoded["agent_feat"].numpy(),
                   "agent_prob": torch.sigmoid(decoded["agent_logit"]).numpy()}
        return out, z

    def _assemble(self, request: TileRequest, ctx: TileContext, raw: np.ndarray, stitched: list[np.ndarray],
                  check: CandidateCheck, drawn: np.ndarray, edge_types: np.ndarray, agent_feat: np.ndarray,
                  agent_prob: np.ndarray) -> tuple[TileContent, TileDiagnostics]:
        """Turn the stitched winner (tile frame) into global lanes, links and agent spawns; ``drawn`` (n,) says
        which kept lanes the model drew (not connectors or port continuations: only theirs count in the raw
        gaps), ``edge_types`` (n, n) are the decoded edge types among the kept lanes. The diagnostics hold the
        gaps and agents."""
        frame = request.frame
        n = len(stitched)
        port_gaps_raw, port_gaps = [], []
        for port_pos, lane in check.port_links:
            local = ctx.ports[port_pos]
            end = 0 if local.is_out else -1
            gap = float(np.linalg.norm(stitched[lane][end] - local.xy))
            if gap <= LINK_TOL_M:  # else its joint was snapped onto another port: merged into it below
                if drawn[lane]:
                    port_gaps_raw.append(float(np.linalg.norm(raw[lane, end] - local.xy)))
                port_gaps.append(gap)
        model_succ = [(i, j) for i in range(n) for j in range(n) if edge_types[i, j] == EDGE_SUCC]
        raw_edge_gaps = [float(np.linalg.norm(raw[i, -1] - raw[j, 0])) for i, j in model_succ]
        stitched_gaps = [float(np.linalg.norm(stitched[i][-1] - stitched[j][0])) for i, j in model_succ]
        stitched_gaps += port_gaps
        merged = merge_ports(stitched, list(check.successors), list(check.port_links), list(ctx.ports), LINK_TOL_M)
        width, speed = np.full(n + 1, 3.5), np.full(n + 1, 13.9)   # per input lane (and [-1]: connectors)
        for port_pos, lane in check.port_links:
            known_lane = request.graph[ctx.ports[port_pos].lane_id]
            width[lane], speed[lane] = known_lane.width_m, known_lane.speed_limit_mps
        width, speed = width[merged.source], speed[merged.source]
        for port_pos, lane in merged.port_links:   # a merge connector: as the known lane it continues
            if merged.source[lane] < 0:
                known_lane = request.graph[ctx.ports[port_pos].lane_id]
                width[lane], speed[lane] = known_lane.width_m, known_lane.speed_limit_mps
        split = (split_at_crossings(merged.lanes, merged.successors, self.split_config)
                 if self.split_config is not None else unsplit(merged.lanes, merged.successors))
        lanes_local = split.lanes
        source = np.repeat(np.arange(len(merged.lanes)), [len(p) for p in split.pieces])
        edges = _merged_edges(edge_types, merged.source)
        ids = [request.lane_ids() for _ in lanes_local]
        links: list[tuple[int, int]] = []
        for port_pos, lane in merged.port_links:
            local = ctx.ports[port_pos]
            link = ((local.lane_id, ids[split.pieces[lane][0]]) if local.is_out
                    else (ids[split.pieces[lane][-1]], local.lane_id))
            if link not in links:
                links.append(link)
        succ = {k: [j for i, j in split.successors if i == k] for k in range(len(lanes_local))}
        pred = {k: [i for i, j in split.successors if j == k] for k in range(len(lanes_local))}
        lanes = []
        for k, points in enumerate(lanes_local):
            i = source[k]
            left = _neighbours(k, split, edges[i] == EDGE_LEFT)
            right = _neighbours(k, split, edges[i] == EDGE_RIGHT)
            lanes.append(Lane(id=ids[k], points=frame.to_global(points), width_m=float(width[i]),
                              speed_limit_mps=float(speed[i]), successors=tuple(ids[j] for j in succ[k]),
                              predecessors=tuple(ids[j] for j in pred[k]),
                              left_neighbors=tuple(ids[j] for j in left),
                              right_neighbors=tuple(ids[j] for j in right)))
        agents, decoded = self._spawn(request, merged.lanes, merged.successors, split, ids, agent_feat,
                                      agent_prob)
        content = TileContent(lanes=tuple(lanes), links=tuple(links), agents=agents)
        return content, TileDiagnostics(raw_gaps_m=np.array(raw_edge_gaps + port_gaps_raw),
                                        stitched_gaps_m=np.array(stitched_gaps),
                                        raw_edge_gaps_m=np.array(raw_edge_gaps), decoded_agents=decoded,
                                        kept_agents=len(agents))

    def _spawn(self, request: TileRequest, lanes_local: list[np.ndarray], successors: list[tuple[int, int]],
               split: SplitLanes, ids: list[int], agent_feat: np.ndarray, agent_prob: np.ndarray
               ) -> tuple[AgentSpawns, int]:
        """Decoded frontier agents that pass the spawn filter, in the global frame. The filter and the spawn
        speeds read the lanes before the junction split (a lane's followers brake for the one ahead across
        its pieces); each agent then gets the piece it stands on (``ids`` are the split lanes')."""
        exist = agent_prob > self.exist_threshold
        if not request.spawn_agents or not exist.any() or not lanes_local:
            return AgentSpawns.none(), int(exist.sum())
        feat = agent_feat[exist]
        state = decode_agent_state(feat[:, :7])
        types = feat[:, 7:7 + NUM_AGENT_TYPES].argmax(-1)
        motion = feat[:, 7 + NUM_AGENT_TYPES:].reshape(-1, MOTION_POINTS, 2) * MOTION_SCALE_M
        existing = request.frame.to_local(np.asarray(request.existing_agents_xy, np.float64).reshape(-1, 2))
        keep, lane, pose = filter_spawns(state, types, lanes_local, existing, self.spawn_config)
        state, types, motion, lane, pose = state[keep], types[keep], motion[keep], lane[keep], pose[keep]
        # A car parked at the curb gets no lane, so no route: it stands. (An NPC policy drives an unrouted car
        # that rolls, off the road: one rolling at 0.18 m/s stopped head-on before the ego for good.)
        parked = (types == VEHICLE) & (lane < 0)
        speed = np.where(parked, 0.0, follow_speeds(pose, state[:, 2], state[:, 5], lane, lanes_local, successors))
        clear = clear_paths(pose, speed, state[:, 5], state[:, 6])
        state, types, motion, lane, pose, speed, parked = (a[clear] for a in (state, types, motion, lane, pose,
                                                                              speed, parked))
        yaw = geometry.wrap_angle(pose[:, 2] + request.frame.yaw)
        piece = [split.piece_at(k, geometry.project_to_polyline(xy[None], lanes_local[k])[0][0]) if k >= 0 else -1
                 for k, xy in zip(lane.tolist(), pose[:, :2], strict=True)]
        spawns = AgentSpawns(
            xy=request.frame.to_global(pose[:, :2]), yaw=yaw, speed=speed,
            length=state[:, 5].astype(np.float64), width=state[:, 6].astype(np.float64),
            agent_type=_AGENT_TYPES[types], lane_id=np.array([ids[k] if k >= 0 else -1 for k in piece], np.int64),
            motion_code=np.where(((state[:, 2] < 0.2) | parked)[:, None, None], 0.0, motion).astype(np.float64))
        return spawns, int(exist.sum())
