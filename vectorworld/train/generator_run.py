"""A resumable training run of the learned tile generator: the gated VAE, then the EGR-DiT (MeanFlow).

``run_training`` drives both stages in one process and writes ``<out>/run_state.pt`` (model weights,
optimiser, schedule, both RNG states, step counters, loss history, validity curve, accumulated wall time)
every ``checkpoint_every_s`` seconds, when it stops, and at the end. Called again with ``resume=True`` it
continues from that file: the run is a pure function of its config and data, so k steps + resume + n - k
steps give the same weights as n steps straight (same device and thread count). With ``init_from`` a run
starts from a generator checkpoint instead (a fine-tune): its VAE stands for the VAE stage, its DiT and
latent scale start the DiT stage with a fresh optimiser and schedule.

During the DiT stage, every ``eval_every`` steps the model samples held-out tiles at one step and the
validity filter judges them (:func:`validity_on_tiles`): the curve of the recipe. The latest model is
exported as a generator checkpoint folder (``<out>/latest``) at every curve point, so it can be evaluated
while the run goes on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from vectorworld.errors import ConfigError
from vectorworld.generation.learned.egr_dit import DiTConfig
from vectorworld.generation.learned.meanflow import MeanFlowConfig
from vectorworld.generation.learned.outpaint import OutpaintModel
from vectorworld.generation.learned.road_plan import RoadPlans
from vectorworld.generation.learned.tile_tensors import TileTensors
from vectorworld.generation.learned.vae import TileVAE, VAEConfig
from vectorworld.train.generator_training import (
    Tiles,
    TrainConfig,
    Trainer,
    dit_loss_fn,
    latent_scale,
    vae_loss_fn,
)

if TYPE_CHECKING:
    from vectorworld.generation.learned.candidates import Choice

STATE_FILE = "run_state.pt"
LATEST = "latest"
FM_CURVE_STEPS = 8
"""Euler steps of the curve of a flow-matching-only run (one step of plain flow matching is a blur)."""
Log = Callable[[str, int, dict[str, float]], None]
"""Called with (stage, step, figures) at every log and curve point."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run (its hash is not checked: resume with the config you started with)."""

    vae: VAEConfig = field(default_factory=VAEConfig)
    dit: DiTConfig = field(default_factory=DiTConfig)
    flow: MeanFlowConfig = field(default_factory=MeanFlowConfig)
    vae_steps: int = 3000
    dit_steps: int = 40000
    batch_size: int = 32
    vae_lr: float = 2e-3
    dit_lr: float = 1e-3
    dit_ema: float = 0.0
    """Decay of the DiT's weight average (``TrainConfig.ema_decay``; 0 = none): curve points and the
    exported checkpoint use the average."""
    warmup_steps: int = 200
    seed: int = 0
    uncond_ratio: float = 0.1
    """Share of DiT training tiles with no condition at all (the first tile is generated from nothing)."""
    decode_weight: float = 0.0
    """Weight of the one-step decode loss (``generator_training.one_step_decode_loss``); 0 = MeanFlow only.
    At 1.0 on the city corpus it swamped the adaptively weighted MeanFlow term (held-out one-step validity
    6% at DiT step 1000, 3% at 1500), so the recipe leaves it off."""
    junction_weight: float = 0.0
    """Weight of the one-step junction loss (``vectorworld.train.junction_loss``, m): the MeanFlow loss
    alone leaves 44% of the one-step sample's lane ends more than 3 m from any joint (issue 15)."""
    straight_weight: float = 0.0
    """Weight of the one-step straightness loss (``vectorworld.train.straight_loss``): the one-step map's
    small latent errors decode to roads that bend one way and back (32% of decoded lanes straight against
    the data's 83%)."""
    log_every: int = 100
    eval_every: int = 500
    eval_tiles: int = 32
    eval_candidates: int = 2
    checkpoint_every_s: float = 180.0
    device: str = "cpu"
    init_from: str = ""
    """A generator checkpoint folder to fine-tune ('' = train from scratch); ``vae`` and ``dit`` must be its
    configs (:meth:`OutpaintModel.configs`)."""
    vae_from: str = ""
    """A generator checkpoint folder whose VAE this run uses instead of training one ('' = train it);
    ``vae`` must be its VAE config. The DiT starts from scratch."""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def stage_config(self, stage: str) -> TrainConfig:
        steps, lr, seed = ((self.vae_steps, self.vae_lr, self.seed) if stage == "vae"
                           else (self.dit_steps, self.dit_lr, self.seed + 7))
        return TrainConfig(steps=steps, batch_size=self.batch_size, lr=lr, warmup_steps=self.warmup_steps,
                           seed=seed, device=self.device, log_every=self.log_every,
                           ema_decay=0.0 if stage == "vae" else self.dit_ema)


@dataclass
class RunState:
    """Where a run stands (what ``run_state.pt`` holds, besides the tensors)."""

    stage: str = "vae"
    wall_s: float = 0.0
    curve: list[dict[str, float]] = field(default_factory=list)
    vae_history: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    dit_history: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    vae_steps: int = 0
    dit_steps: int = 0
    latent_scale: float = 1.0


def _atomic_save(obj: object, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


@torch.no_grad()
def validity_on_tiles(model: OutpaintModel, tiles: list[TileTensors], candidates: int = 2, steps: int = 1,
                      seed: int = 0, on_tile: Callable[[int, TileTensors, dict[str, torch.Tensor], Choice], None]
                      | None = None, sampler: str = "meanflow") -> dict[str, float]:
    """Outpainting of held-out ground-truth tiles (one MeanFlow step unless ``sampler`` / ``steps`` say
    otherwise), judged by the validity filter: the share of tiles
    with a valid candidate, the mean raw port gap (m) of the winners, and where the frontier lanes of a tile
    go (its lane funnel, per tile): ``data_lanes_per_tile`` in the tile, ``vae_lanes_per_tile`` in the VAE's
    decode of the tile's own latents, ``decoded_lanes_per_tile`` in a sample (mean over the candidates) and
    ``lanes_per_tile`` kept by the filter in the chosen one, and the chosen one's lanes the filter dropped, by
    reason (``pruned_<reason>_per_tile``, :attr:`CandidateCheck.pruned`), and the share of tiles with a new
    road across the tile in the chosen candidate (``crossing_share``) and in the data
    (``data_crossing_share``; road_plan.crosses). ``on_tile(i, tile, decoded, choice)``
    sees every tile's candidates and choice (drawings)."""
    from vectorworld.generation.learned.candidates import choose_candidate, completion_of
    from vectorworld.generation.learned.filter_config import StitchConfig
    from vectorworld.generation.learned.lane_rules import lanes_reference
    from vectorworld.generation.learned.outpaint import SamplerConfig
    from vectorworld.generation.learned.road_plan import crosses
    from vectorworld.generation.learned.tile_context import context_from_tile
    from vectorworld.generation.learned.tile_tensors import stack_tiles
    from vectorworld.generation.learned.vae import batch_to_torch

    was_training = model.dit.training
    model.eval()
    valid, lanes, gaps, data, vae, decoded_lanes, crossing, data_crossing = [], [], [], [], [], [], [], []
    pruned: dict[str, list[int]] = {}
    sampling = SamplerConfig(sampler, steps, candidates)
    config = StitchConfig()
    device = next(model.parameters()).device
    for i, tile in enumerate(tiles):
        ctx = context_from_tile(tile, plan=model.dit.config.border_hints)
        frontier = ~ctx.tiles.lane_cond
        batch = batch_to_torch({**stack_tiles([ctx.tiles]).as_dict(), "lane_hint": ctx.hints[None]}, device)
        decoded, _ = model.outpaint(batch, sampling, torch.Generator().manual_seed(seed + i))
        lane_prob = torch.sigmoid(decoded["lane_logit"]).cpu().numpy()
        known = lanes_reference(ctx.filter_lanes())
        choice = choose_candidate(decoded["lane_feat"].cpu().numpy(), lane_prob, ctx.hints, frontier,
                                  list(ctx.ports), known, config, completion=completion_of(model))
        new = tile.lane_valid & ~tile.lane_cond
        own = model.vae.decode(model.vae.encode(batch_to_torch(stack_tiles([tile]).as_dict(), device))[0],
                               with_edges=False)["lane_logit"][0].cpu().numpy() > 0.0
        data.append(int(new.sum()))
        vae.append(int((own & new).sum()))
        decoded_lanes.append(float((lane_prob[:, frontier] > 0.5).sum(1).mean()))
        valid.append(choice.valid)
        lanes.append(len(choice.check.keep))
        crossing.append(any(crosses(choice.lanes[k]) for k in choice.check.keep))
        data_crossing.append(any(crosses(tile.lane_points[k]) for k in np.flatnonzero(new)))
        for reason, count in choice.check.pruned.items():
            pruned.setdefault(reason, []).append(count)
        for pos, lane in choice.check.port_links:
            port = ctx.ports[pos]
            end = choice.lanes[choice.check.keep[lane]][0 if port.is_out else -1]
            gaps.append(float(np.linalg.norm(end - port.xy)))
        if on_tile is not None:
            on_tile(i, tile, decoded, choice)
    if was_training:
        model.dit.train()

    def mean(values: list[float]) -> float:
        return float(np.mean(values)) if values else float("nan")

    return {"valid_share": mean(valid), "lanes_per_tile": mean(lanes), "raw_port_gap_m": mean(gaps),
            "data_lanes_per_tile": mean(data), "vae_lanes_per_tile": mean(vae),
            "decoded_lanes_per_tile": mean(decoded_lanes), "crossing_share": mean(crossing),
            "data_crossing_share": mean(data_crossing),
            **{f"pruned_{reason}_per_tile": mean(counts) for reason, counts in pruned.items()}}


class GeneratorRun:
    """The state of one run (models, trainers, bookkeeping); see the module docstring."""

    def __init__(self, tiles: Tiles, heldout: list[TileTensors], config: RunConfig, out: Path) -> None:
        self.tiles, self.heldout, self.config, self.out = tiles, heldout, config, Path(out)
        self.state = RunState()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            self.vae = TileVAE(config.vae).to(config.device).train()
        self.vae_cfg = config.stage_config("vae")
        self.vae_trainer = Trainer(list(self.vae.parameters()), vae_loss_fn(self.vae, tiles, self.vae_cfg),
                                   self.vae_cfg)
        self.model: OutpaintModel | None = None
        self._plans: RoadPlans | None = None
        self.dit_trainer: Trainer | None = None

    # ---------------------------------------------------------------- stage switch
    def _start_dit(self, scale: float | None = None) -> None:
        cfg = self.config
        if scale is None:
            scale = latent_scale(self.vae, self.tiles, cfg.device)
        self.state.latent_scale = scale
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed + 1)
            model = OutpaintModel(cfg.vae, cfg.dit, scale)
        model.vae.load_state_dict(self.vae.state_dict())
        self.model = model.to(cfg.device)
        self.model.vae.eval().requires_grad_(False)
        self.model.dit.train()
        dit_cfg = cfg.stage_config("dit")
        self.dit_trainer = Trainer(list(self.model.dit.parameters()),
                                   dit_loss_fn(self.model, self.tiles, dit_cfg, cfg.flow, cfg.uncond_ratio,
                                               cfg.decode_weight, cfg.junction_weight,
                                               cfg.straight_weight), dit_cfg)
        self.state.stage = "dit"

    def init_from(self, folder: str | Path) -> None:
        """Start from the checkpoint in ``folder``: its VAE is the VAE stage (marked done, never trained here),
        its DiT and latent scale start the DiT stage. ConfigError when its configs are not this run's."""
        source = self._take_vae(folder, "init_from")
        if source.dit.config != self.config.dit:
            raise ConfigError(f"init_from {folder}: its dit config {source.dit.config} is not the run's "
                              f"{self.config.dit}")
        self._start_dit(float(source.latent_scale))
        assert self.model is not None and self.dit_trainer is not None
        self.model.dit.load_state_dict(source.dit.state_dict())
        self.dit_trainer.restart_average()

    def vae_from(self, folder: str | Path) -> None:
        """Use the VAE of the checkpoint in ``folder`` (VAE stage marked done) and train a new DiT of this run's
        config on its latents (scale measured on this corpus): DiT recipes compared on one sharp VAE."""
        self._take_vae(folder, "vae_from")
        self._start_dit()

    def _take_vae(self, folder: str | Path, option: str) -> OutpaintModel:
        source = OutpaintModel.load(folder)
        if source.vae.config != self.config.vae:
            raise ConfigError(f"{option} {folder}: its vae config {source.vae.config} is not the run's "
                              f"{self.config.vae}")
        self.vae.load_state_dict(source.vae.state_dict())
        self.vae_trainer.step = self.vae_trainer.config.steps
        return source

    # ---------------------------------------------------------------- persistence
    def save(self) -> Path:
        self.out.mkdir(parents=True, exist_ok=True)
        self.state.vae_history, self.state.vae_steps = self.vae_trainer.history, self.vae_trainer.step
        blob: dict[str, object] = {"state": asdict(self.state), "vae": self.vae.state_dict(),
                                   "vae_trainer": self.vae_trainer.state_dict(), "config": self.config.to_dict()}
        if self.model is not None and self.dit_trainer is not None:
            self.state.dit_history, self.state.dit_steps = self.dit_trainer.history, self.dit_trainer.step
            blob["state"] = asdict(self.state)
            blob["dit"] = self.model.dit.state_dict()
            blob["dit_trainer"] = self.dit_trainer.state_dict()
        path = self.out / STATE_FILE
        _atomic_save(blob, path)
        return path

    def load(self) -> None:
        blob = torch.load(self.out / STATE_FILE, map_location=self.config.device, weights_only=False)
        self.state = RunState(**blob["state"])
        self.vae.load_state_dict(blob["vae"])
        self.vae_trainer.load_state_dict(blob["vae_trainer"])
        if "dit" in blob:
            self._start_dit(self.state.latent_scale)
            assert self.model is not None and self.dit_trainer is not None
            self.model.dit.load_state_dict(blob["dit"])
            self.dit_trainer.load_state_dict(blob["dit_trainer"])
        self.state.stage = str(blob["state"]["stage"])
        if self.state.stage == "done" and self.dit_trainer is not None and not self.dit_trainer.done:
            self.state.stage = "dit"  # a finished run resumed with more DiT steps continues

    def export(self, folder: Path, metadata: dict[str, object]) -> Path:
        """Save the current model as a generator checkpoint folder (OutpaintModel.load reads it), with the
        corpus' road plans when the DiT takes them (road_plan.RoadPlans)."""
        assert self.model is not None
        saved = self.model.cpu().save(folder, metadata=metadata) if self.config.device == "cpu" else \
            _export_copy(self.model, folder, metadata)
        if self.model.dit.config.border_hints:
            self.road_plans().save(folder)
        return saved

    def road_plans(self) -> RoadPlans:
        if self._plans is None:
            self._plans = RoadPlans.from_tiles(
                [TileTensors(**{k: v[i] for k, v in self.tiles.items()}) for i in range(len(self.tiles["lane_valid"]))])
        return self._plans

    def metadata(self) -> dict[str, object]:
        return {"run": self.config.to_dict(), "corpus_tiles": int(len(self.tiles["lane_valid"])),
                "vae_steps_done": self.vae_trainer.step,
                "dit_steps_done": 0 if self.dit_trainer is None else self.dit_trainer.step,
                "wall_s": self.state.wall_s, "curve": self.state.curve}

    # ---------------------------------------------------------------- the loop
    def run(self, max_seconds: float = float("inf"), stop_after_steps: int | None = None,
            log: Log | None = None) -> RunState:
        """Train until both stages are done, ``max_seconds`` have passed or ``stop_after_steps`` (VAE + DiT
        steps, counted from the start of the run) are done; checkpoint on the way and on return."""
        cfg = self.config
        start = last_save = time.perf_counter()
        wall0 = self.state.wall_s

        def total_steps() -> int:
            return self.vae_trainer.step + (0 if self.dit_trainer is None else self.dit_trainer.step)

        def should_stop() -> bool:
            now = time.perf_counter()
            return (now - start > max_seconds) or (stop_after_steps is not None and total_steps() >= stop_after_steps)

        while not should_stop():
            if self.state.stage == "vae":
                if self.vae_trainer.done:
                    self._start_dit()
                    continue
                logged = len(self.vae_trainer.history)
                self.vae_trainer.train_step()
                if log is not None and len(self.vae_trainer.history) > logged:
                    log("vae", *self.vae_trainer.history[-1])
            elif self.state.stage == "dit":
                assert self.dit_trainer is not None and self.model is not None
                if self.dit_trainer.done:
                    self.state.stage = "done"
                    continue
                logged = len(self.dit_trainer.history)
                self.dit_trainer.train_step()
                if log is not None and len(self.dit_trainer.history) > logged:
                    log("dit", *self.dit_trainer.history[-1])
                step = self.dit_trainer.step
                if self.heldout and (step % cfg.eval_every == 0 or self.dit_trainer.done):
                    self.state.wall_s = wall0 + time.perf_counter() - start
                    self._curve_point(step, log)
            else:
                break
            if time.perf_counter() - last_save > cfg.checkpoint_every_s:
                self.state.wall_s = wall0 + time.perf_counter() - start
                self.save()
                last_save = time.perf_counter()
        self.state.wall_s = wall0 + time.perf_counter() - start
        self.save()
        if self.model is not None:
            self.model.to(cfg.device)
        return self.state

    def _curve_point(self, step: int, log: Log | None) -> None:
        assert self.model is not None and self.dit_trainer is not None
        with self.dit_trainer.averaged():   # the weights a run ships: the moving average, when it keeps one
            fm = self.config.flow.flow_matching_only   # its sampler: one MeanFlow step, or K Euler steps
            figures = validity_on_tiles(self.model, self.heldout[:self.config.eval_tiles],
                                        self.config.eval_candidates, FM_CURVE_STEPS if fm else 1, seed=10_000,
                                        sampler="flow_matching" if fm else "meanflow")
            point = {"dit_step": float(step), "wall_s": self.state.wall_s,
                     "loss": float(self.dit_trainer.last.get("loss", np.nan)), **figures}
            self.state.curve.append(point)
            self.export(self.out / LATEST, self.metadata())
            self.model.to(self.config.device)
        if log is not None:
            log("curve", step, point)


def _export_copy(model: OutpaintModel, folder: Path, metadata: dict[str, object]) -> Path:
    """Export from a non-CPU device without moving the training copy."""
    import copy

    return copy.deepcopy(model).cpu().save(folder, metadata=metadata)


def run_training(tiles: Tiles, heldout: list[TileTensors], config: RunConfig, out: str | Path,
                 resume: bool = False, max_seconds: float = float("inf"), stop_after_steps: int | None = None,
                 log: Log | None = None) -> GeneratorRun:
    """Start (or, with ``resume`` and a state file in ``out``, continue) a run; returns it when it stops.
    A new run with ``config.init_from`` starts from that checkpoint (:meth:`GeneratorRun.init_from`), one with
    ``config.vae_from`` from that checkpoint's VAE (:meth:`GeneratorRun.vae_from`)."""
    run = GeneratorRun(tiles, heldout, config, Path(out))
    if resume and (Path(out) / STATE_FILE).is_file():
        run.load()
    elif config.init_from:
        run.init_from(config.init_from)
    elif config.vae_from:
        run.vae_from(config.vae_from)
    run.run(max_seconds, stop_after_steps, log)
    return run


def run_record(run: GeneratorRun, recipe: str = "", threads: int | None = None) -> dict[str, object]:
    """What a run did, for ``train_log.json``: corpus size, steps, batch, wall time, the curve, the config."""
    return {"recipe": recipe, "device": run.config.device,
            "threads": torch.get_num_threads() if threads is None else threads,
            "corpus_tiles": int(len(run.tiles["lane_valid"])), "heldout_tiles": len(run.heldout),
            "batch_size": run.config.batch_size, "vae_steps_done": run.vae_trainer.step,
            "dit_steps_done": 0 if run.dit_trainer is None else run.dit_trainer.step,
            "wall_s": run.state.wall_s, "stage": run.state.stage, "curve": run.state.curve,
            "vae_history": run.vae_trainer.history,
            "dit_history": [] if run.dit_trainer is None else run.dit_trainer.history,
            "config": run.config.to_dict()}


def write_record(run: GeneratorRun, recipe: str = "") -> Path:
    """Write :func:`run_record` to ``<out>/train_log.json``."""
    import json

    path = run.out / "train_log.json"
    path.write_text(json.dumps(run_record(run, recipe), indent=1, default=float))
    return path
