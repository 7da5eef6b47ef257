"""Training loops of the learned tile generator: the gated VAE, then the EGR-DiT on frozen VAE latents.

Inputs are batched :class:`~vectorworld.generation.learned.tile_tensors.TileTensors` fields as a dict of numpy
arrays with a leading tile dimension (what ``vectorworld.train.tile_corpus`` loads). Mini-batches are
drawn with an explicit ``numpy.random.Generator``; half of them are mirrored (y -> -y, left <-> right).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch.nn import functional as F

from vectorworld.generation.learned.egr_dit import DiTConfig
from vectorworld.generation.learned.meanflow import MeanFlowConfig, VelocityFn, meanflow_loss
from vectorworld.generation.learned.outpaint import OutpaintModel
from vectorworld.generation.learned.tile_tensors import EDGE_LEFT, EDGE_RIGHT
from vectorworld.generation.learned.vae import TileVAE, VAEConfig, batch_to_torch
from vectorworld.train.junction_loss import junction_loss
from vectorworld.train.straight_loss import straight_loss

Tiles = dict[str, np.ndarray]
Logger = Callable[[int, dict[str, float]], None]


@dataclass(frozen=True)
class TrainConfig:
    """Optimiser settings of one stage (VAE or DiT)."""

    steps: int = 2000
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.0
    warmup_steps: int = 100
    seed: int = 0
    device: str = "cpu"
    log_every: int = 100
    max_seconds: float = float("inf")
    """Stop early after this many wall seconds (the step count stays the upper bound)."""
    ema_decay: float = 0.0
    """Decay of an exponential moving average of the parameters (0 = none), ramped as min(decay, (1 + step) /
    (10 + step)) so early averages do not hold the initial weights: the weights a run exports and samples
    with (:meth:`Trainer.averaged`), while the optimiser (and MeanFlow's JVP) keep the raw ones."""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class TrainResult:
    """Loss history (step, parts) and wall time of a stage."""

    history: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    seconds: float = 0.0
    steps_done: int = 0


def mirror_tiles(tiles: Tiles) -> Tiles:
    """Mirror tiles across the tile x axis: y, sin(yaw) and motion y flip; left and right swap."""
    out = dict(tiles)
    pts = tiles["lane_points"].copy()
    pts[..., 1] *= -1.0
    out["lane_points"] = pts
    edges = tiles["edges"].copy()
    left, right = edges == EDGE_LEFT, edges == EDGE_RIGHT
    edges[left], edges[right] = EDGE_RIGHT, EDGE_LEFT
    out["edges"] = edges
    state = tiles["agent_state"].copy()
    state[..., 1] *= -1.0
    state[..., 4] *= -1.0
    out["agent_state"] = state
    motion = tiles["agent_motion"].copy()
    motion[..., 1] *= -1.0
    out["agent_motion"] = motion
    return out


def sample_batch(tiles: Tiles, batch_size: int, rng: np.random.Generator, device: str,
                 uncond_ratio: float = 0.0, plan: bool = False) -> dict[str, torch.Tensor]:
    """A random mini-batch (with mirror augmentation on a random half) as model inputs. A share
    ``uncond_ratio`` of the tiles lose their condition (every token is generated: the first tile); ``plan``
    adds the road-plan hints (``batch_to_torch``)."""
    n = len(tiles["lane_valid"])
    idx = rng.integers(0, n, size=batch_size)
    batch = {k: v[idx] for k, v in tiles.items()}
    flip = rng.random(batch_size) < 0.5
    if flip.any():
        mirrored = mirror_tiles({k: v[flip] for k, v in batch.items()})
        for k in batch:
            batch[k] = batch[k].copy()
            batch[k][flip] = mirrored[k]
    if uncond_ratio > 0.0:
        free = rng.random(batch_size) < uncond_ratio
        for k in ("lane_cond", "agent_cond"):
            batch[k] = batch[k] & ~free[:, None]
    return batch_to_torch(batch, device, plan)


def _schedule(step: int, config: TrainConfig) -> float:
    """Linear warm-up then cosine decay to 10% of the peak learning rate."""
    if step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    return 0.1 + 0.9 * 0.5 * (1.0 + np.cos(np.pi * min(progress, 1.0)))


JUNCTION_T_MIN = 0.5
"""The junction loss judges jumps (0, t) from t in [0.5, 1], half of them from t = 1: applied at (0, 1)
alone (weight 0.02-0.05) the MeanFlow mse rose from 30 to 180-1800 within 500 steps (du/dt at t = 1
blew up) and the one-step lane count drifted (issue 15)."""

LossFn = Callable[[np.random.Generator, torch.Generator], tuple[torch.Tensor, dict[str, float]]]


class Trainer:
    """One optimisation stage whose whole state (step, optimiser, schedule, both RNGs, running log) can be
    saved and restored: ``k`` steps, ``state_dict`` / ``load_state_dict``, then ``n - k`` steps give the same
    parameters as ``n`` steps straight (on the same device and thread count)."""

    def __init__(self, params: list[torch.nn.Parameter], loss_fn: LossFn, config: TrainConfig) -> None:
        self.params, self.loss_fn, self.config = params, loss_fn, config
        self.optimiser = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimiser, lambda s: _schedule(s, config))
        self.rng = np.random.default_rng(config.seed)
        self.gen = torch.Generator().manual_seed(config.seed)
        self.step = 0
        self.history: list[tuple[int, dict[str, float]]] = []
        self._running: dict[str, float] = {}
        self._count = 0
        self.last: dict[str, float] = {}
        self.ema = [p.detach().clone() for p in params] if config.ema_decay > 0.0 else None

    @property
    def done(self) -> bool:
        return self.step >= self.config.steps

    @contextmanager
    def averaged(self) -> Iterator[None]:
        """Within the block the parameters hold their moving average (no-op without ``ema_decay``)."""
        if self.ema is None:
            yield
            return
        raw = [p.detach().clone() for p in self.params]
        with torch.no_grad():
            for p, a in zip(self.params, self.ema, strict=True):
                p.copy_(a)
        try:
            yield
        finally:
            with torch.no_grad():
                for p, r in zip(self.params, raw, strict=True):
                    p.copy_(r)

    def restart_average(self) -> None:
        """Start the moving average from the current parameters (after loading weights into them)."""
        if self.ema is not None:
            self.ema = [p.detach().clone() for p in self.params]

    def _update_average(self) -> None:
        if self.ema is None:
            return
        decay = min(self.config.ema_decay, (1.0 + self.step) / (10.0 + self.step))
        with torch.no_grad():
            for a, p in zip(self.ema, self.params, strict=True):
                a.mul_(decay).add_(p.detach(), alpha=1.0 - decay)

    def train_step(self) -> dict[str, float]:
        """One optimiser step; returns the loss parts (and logs their running mean every log_every)."""
        loss, parts = self.loss_fn(self.rng, self.gen)
        self.optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, 1.0)
        self.optimiser.step()
        self.scheduler.step()
        self._update_average()
        parts = {"loss": float(loss.detach()), **parts}
        self.last = parts
        for k, v in parts.items():
            self._running[k] = self._running.get(k, 0.0) + v
        self._count += 1
        self.step += 1
        if self.step % self.config.log_every == 0 or self.step == self.config.steps:
            self.history.append((self.step, {k: v / self._count for k, v in self._running.items()}))
            self._running, self._count = {}, 0
        return parts

    def state_dict(self) -> dict[str, object]:
        return {"step": self.step, "optimiser": self.optimiser.state_dict(),
                "scheduler": self.scheduler.state_dict(), "rng": self.rng.bit_generator.state,
                "gen": self.gen.get_state(), "history": list(self.history),
                "running": dict(self._running), "count": self._count, "last": dict(self.last),
                "ema": None if self.ema is None else [a.clone() for a in self.ema]}

    def load_state_dict(self, state: dict[str, object]) -> None:
        self.step = int(state["step"])
        self.optimiser.load_state_dict(state["optimiser"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.rng.bit_generator.state = state["rng"]
        self.gen.set_state(state["gen"].cpu())  # a state loaded with map_location="cuda" lands there
        self.history = [tuple(h) for h in state["history"]]
        self._running, self._count = dict(state["running"]), int(state["count"])
        self.last = dict(state.get("last", {}))
        if self.ema is not None:  # a state saved without an average (an older run) starts it from its weights
            saved = state.get("ema")
            source = saved if saved is not None else [p.detach() for p in self.params]
            self.ema = [a.detach().clone().to(p.device) for a, p in zip(source, self.params, strict=True)]


def _run(params: list[torch.nn.Parameter], loss_fn: LossFn, config: TrainConfig, log: Logger | None
         ) -> TrainResult:
    trainer = Trainer(params, loss_fn, config)
    start = time.perf_counter()
    logged = 0
    while not trainer.done:
        trainer.train_step()
        if log is not None and len(trainer.history) > logged:
            log(*trainer.history[-1])
            logged = len(trainer.history)
        if time.perf_counter() - start > config.max_seconds:
            break
    return TrainResult(history=trainer.history, seconds=time.perf_counter() - start, steps_done=trainer.step)


def vae_loss_fn(vae: TileVAE, tiles: Tiles, config: TrainConfig) -> LossFn:
    """The VAE stage's loss on random mini-batches of ``tiles``."""
    def loss_fn(rng: np.random.Generator, gen: torch.Generator) -> tuple[torch.Tensor, dict[str, float]]:
        return vae.loss(sample_batch(tiles, config.batch_size, rng, config.device), gen)
    return loss_fn


def one_step_sample(model: OutpaintModel, fn: VelocityFn, x: torch.Tensor, cond: torch.Tensor,
                    generator: torch.Generator, t_min: float = 1.0) -> dict[str, torch.Tensor]:
    """A one-jump sample x = z_t - t u(z_t, 0, t) (condition tokens clean) decoded by the frozen VAE, with
    gradients into the DiT (see TileVAE.decode, without edge logits). With ``t_min`` = 1 every tile jumps
    from noise, t = 1 (the one-step sampler); below 1, every second tile jumps from t ~ U(t_min, 1) instead,
    so a data-space loss shapes the whole family of long intervals (0, t) and not the single interval (0, 1),
    whose average velocity the MeanFlow target then ties to its neighbours through du/dt."""
    eps = torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)
    keep = cond[..., None]
    b = x.shape[0]
    t = torch.ones(b, dtype=x.dtype)
    if t_min < 1.0:
        spread = 1.0 - (1.0 - t_min) * torch.rand(b, generator=generator, dtype=x.dtype)
        t = torch.where(torch.arange(b) % 2 == 1, spread, t)
    t = t.to(x.device)
    zt = torch.where(keep, x, (1.0 - t[:, None, None]) * x + t[:, None, None] * eps)
    x0 = torch.where(keep, x, zt - t[:, None, None] * fn(zt, torch.zeros_like(t), t))
    return model.vae.decode(x0 * model.latent_scale, with_edges=False)


def one_step_decode_loss(model: OutpaintModel, fn: VelocityFn, x: torch.Tensor, cond: torch.Tensor,
                         batch: dict[str, torch.Tensor], generator: torch.Generator
                         ) -> tuple[torch.Tensor, dict[str, float]]:
    """What the one-step sampler makes of the frontier, judged in data space: the existence cross-entropy
    of every frontier lane / agent slot of :func:`one_step_sample`. Geometry is not regressed: which
    frontier lane a slot holds is one of many plausible ones, and regressing it would pull the one-step map
    to the blurred mean of them (:mod:`vectorworld.train.junction_loss` judges geometry without slots).

    The MeanFlow loss weighs every latent dimension alike, so a one-step map that drifts the existence
    direction of free slots toward "no lane" costs it little; here that drift is the loss."""
    out = one_step_sample(model, fn, x, cond, generator)
    return _existence_loss(out, batch)


def _existence_loss(out: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]
                    ) -> tuple[torch.Tensor, dict[str, float]]:
    free_l, free_a = ~batch["lane_cond"], ~batch["agent_cond"]
    lane_valid, agent_valid = batch["lane_valid"].float(), batch["agent_valid"].float()
    lane_exist = F.binary_cross_entropy_with_logits(out["lane_logit"][free_l], lane_valid[free_l])
    agent_exist = F.binary_cross_entropy_with_logits(out["agent_logit"][free_a], agent_valid[free_a])
    total = lane_exist + agent_exist
    return total, {"dec_lane_exist": float(lane_exist.detach()), "dec_agent_exist": float(agent_exist.detach())}


def dit_loss_fn(model: OutpaintModel, tiles: Tiles, config: TrainConfig, flow: MeanFlowConfig,
                uncond_ratio: float = 0.0, decode_weight: float = 0.0, junction_weight: float = 0.0,
                straight_weight: float = 0.0) -> LossFn:
    """The DiT stage's MeanFlow loss on the frozen VAE's latents of random mini-batches of ``tiles``, plus
    ``decode_weight`` times the one-step existence loss (:func:`one_step_decode_loss`), and
    ``junction_weight`` times the junction loss (``junction_loss``) and ``straight_weight`` times the
    straightness loss (``straight_loss``) of one-jump samples from t in [``JUNCTION_T_MIN``, 1] (0 = off)."""
    def loss_fn(rng: np.random.Generator, gen: torch.Generator) -> tuple[torch.Tensor, dict[str, float]]:
        batch = sample_batch(tiles, config.batch_size, rng, config.device, uncond_ratio,
                             model.dit.config.border_hints)
        with torch.no_grad():
            x = model.latents(batch)
        cond = model.cond_mask(batch)
        edges, hints = batch["edges"], batch["lane_hint"]

        def fn(z: torch.Tensor, r: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return model.dit(z, r, t, cond, edges, hints=hints)

        loss, parts = meanflow_loss(fn, x, cond, flow, gen)
        if decode_weight > 0.0:
            decoded, decoded_parts = _existence_loss(one_step_sample(model, fn, x, cond, gen), batch)
            loss, parts = loss + decode_weight * decoded, {**parts, **decoded_parts}
        if junction_weight > 0.0 or straight_weight > 0.0:
            out = one_step_sample(model, fn, x, cond, gen, t_min=JUNCTION_T_MIN)
            for weight, judge in ((junction_weight, junction_loss), (straight_weight, straight_loss)):
                if weight > 0.0:
                    term, term_parts = judge(out["lane_feat"], out["lane_logit"], batch)
                    loss, parts = loss + weight * term, {**parts, **term_parts}
        return loss, parts
    return loss_fn


def train_vae(tiles: Tiles, vae_config: VAEConfig, config: TrainConfig, log: Logger | None = None
              ) -> tuple[TileVAE, TrainResult]:
    """Train the gated VAE on ``tiles``; returns it (eval mode, on CPU) and the loss history."""
    with torch.random.fork_rng(devices=[]):  # seeded parameter init without touching the global state
        torch.manual_seed(config.seed)
        vae = TileVAE(vae_config).to(config.device).train()
    result = _run(list(vae.parameters()), vae_loss_fn(vae, tiles, config), config, log)
    return vae.cpu().eval(), result


@torch.no_grad()
def latent_scale(vae: TileVAE, tiles: Tiles, device: str = "cpu", chunk: int = 256) -> float:
    """Standard deviation of the VAE posterior means over all tokens of ``tiles``."""
    vae = vae.to(device).eval()
    values = []
    for i in range(0, len(tiles["lane_valid"]), chunk):
        mu, _ = vae.encode(batch_to_torch({k: v[i:i + chunk] for k, v in tiles.items()}, device))
        values.append(mu.flatten().cpu())
    return float(torch.cat(values).std().clamp(min=1e-3))


def train_dit(vae: TileVAE, tiles: Tiles, dit_config: DiTConfig, config: TrainConfig,
              flow: MeanFlowConfig, log: Logger | None = None,
              init: dict[str, torch.Tensor] | None = None) -> tuple[OutpaintModel, TrainResult]:
    """Train the EGR-DiT with MeanFlow (or plain flow matching) on the frozen VAE's latents.

    ``init``: a DiT state dict to start from (missing keys, e.g. a new hint projection, keep their init).
    """
    scale = latent_scale(vae, tiles, config.device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed + 1)
        model = OutpaintModel(vae.config, dit_config, scale)
    model.vae.load_state_dict(vae.state_dict())
    if init is not None:
        model.dit.load_state_dict(init, strict=False)
    model = model.to(config.device)
    model.vae.eval().requires_grad_(False)
    model.dit.train()
    result = _run(list(model.dit.parameters()), dit_loss_fn(model, tiles, config, flow), config, log)
    return model.cpu().eval(), result
