"""Behaviour cloning of DeltaSim: k-disks vocabulary from the data, then cross-entropy on the primitive,
a residual regression on the chosen primitive, and the kinematic feasibility term.

    loss = CE(logits, k*) + w_res * |(r(k*) - r*) / scale|^2 + w_feas * E_{k ~ softmax(logits)} cost(k)

where k* is the primitive nearest to the recorded motion, r* = motion - primitive(k*) (clipped to the
residual range) and cost is :func:`policies.deltasim.feasibility.kinematic_cost` from the sample's speed and type.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from policies.deltasim.feasibility import kinematic_cost
from policies.deltasim.kdisks import MotionVocabulary, build_kdisks, straight_motions
from policies.deltasim.net import DeltaSimNet, DeltaSimNetConfig
from policies.deltasim.observation import with_stop_token
from vectorworld.train.deltasim_data import Samples


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation and vocabulary settings (defaults: the shipped checkpoint's recipe)."""

    seed: int = 0
    epochs: int = 10
    batch_size: int = 256
    lr: float = 2e-3
    weight_decay: float = 1e-4
    residual_weight: float = 1.0
    feasibility_weight: float = 0.1
    feasibility_cost_cap: float = 20.0
    vocab_eps: float = 0.035
    vocab_theta_weight: float = 10.0
    vocab_max_size: int = 384
    vocab_max_speed_mps: float = 25.0
    max_seconds: float = 1800.0
    threads: int = 1
    start_weight: int = 1
    """Each sample where the teacher sets a standing agent off (:func:`set_off_samples`) is drawn this many
    times per epoch: a city's teacher stands at lights and crosswalks for long stretches and sets off in one
    step, so at weight 1 setting off is about 1% of the standing samples and the clone learns to stay."""


STANDING_MPS = 0.1
SET_OFF_M = 0.003
"""A sample sets off when the agent stands (below STANDING_MPS) and the teacher moves it more than this (m)."""


def set_off_samples(samples: Samples) -> np.ndarray:
    """Indices of the samples where the teacher sets a standing agent off."""
    return np.flatnonzero((samples.speed < STANDING_MPS) & (samples.motion[:, 0] > SET_OFF_M))


def epoch_order(rng: np.random.Generator, samples: Samples, start_weight: int) -> np.ndarray:
    """One epoch's sample order: every sample once, set-off samples ``start_weight`` times."""
    if start_weight <= 1:
        return rng.permutation(len(samples))
    extra = np.repeat(set_off_samples(samples), start_weight - 1)
    return rng.permutation(np.concatenate([np.arange(len(samples)), extra]))


def learning_rate(peak: float, progress: float) -> float:
    """Linear warm-up over the first 5 % then cosine decay to 2 % of ``peak``; ``progress`` in [0, 1] is
    the larger of the step fraction and the time fraction, so a time-capped run still anneals fully."""
    if progress < 0.05:
        return peak * max(progress / 0.05, 0.02)
    return peak * (0.02 + 0.98 * 0.5 * (1.0 + np.cos(np.pi * min((progress - 0.05) / 0.95, 1.0))))


def build_vocabulary(samples: Samples, config: TrainConfig) -> MotionVocabulary:
    """k-disks over the recorded motions plus straight motions at every speed (always a feasible one)."""
    rng = np.random.default_rng(config.seed)
    pool = np.concatenate([samples.motion.astype(np.float64),
                           straight_motions(config.vocab_max_speed_mps, config.vocab_eps)])
    return build_kdisks(pool, rng, eps=config.vocab_eps, theta_weight=config.vocab_theta_weight,
                        max_size=config.vocab_max_size)


def _batch(samples: Samples, index: np.ndarray) -> dict[str, torch.Tensor]:
    """The network's inputs for samples ``index`` (the stop token appended to the neighbours, as at
    inference: :func:`policies.deltasim.net.observation_tensors`)."""
    neighbors, neighbor_mask = with_stop_token(samples.neighbors[index], samples.neighbor_mask[index],
                                               samples.stop[index], samples.stop_mask[index])
    return {
        "history": torch.from_numpy(samples.history[index]),
        "static": torch.from_numpy(samples.static[index]),
        "neighbors": torch.from_numpy(neighbors),
        "neighbor_mask": torch.from_numpy(neighbor_mask),
        "lane_points": torch.from_numpy(samples.lane_points[index]),
        "lane_features": torch.from_numpy(samples.lane_features[index]),
        "lane_mask": torch.from_numpy(samples.lane_mask[index]),
        "route_ahead": torch.from_numpy(samples.route_ahead[index]),
    }


def bc_losses(net: DeltaSimNet, vocab: MotionVocabulary, samples: Samples, index: np.ndarray,
              tokens: np.ndarray, config: TrainConfig) -> dict[str, torch.Tensor]:
    """The three loss terms (scalars) and top-1 accuracy on the samples ``index``."""
    logits, residual = net(**_batch(samples, index))
    target = torch.from_numpy(tokens[index])
    prims = torch.from_numpy(vocab.primitives.astype(np.float32))
    scale = net.residual_scale
    res_target = torch.from_numpy(samples.motion[index]) - prims[target]
    res_target = torch.maximum(torch.minimum(res_target, scale * 0.98), -scale * 0.98)
    res_pred = residual[torch.arange(len(index)), target]
    speed = torch.from_numpy(samples.speed[index])
    cost = kinematic_cost(prims[None], speed[:, None], torch.from_numpy(samples.agent_type[index].astype(
        np.int64))[:, None], vocab.dt_s)
    return {
        "ce": F.cross_entropy(logits, target),
        "residual": (((res_pred - res_target) / scale) ** 2).sum(-1).mean(),
        "feasibility": (torch.softmax(logits, -1) * cost.clamp(max=config.feasibility_cost_cap)).sum(-1).mean(),
        "top1": (logits.argmax(-1) == target).float().mean(),
    }


def train_deltasim(train: Samples, config: TrainConfig = TrainConfig(),
                   net_config: DeltaSimNetConfig | None = None, val: Samples | None = None,
                   vocab: MotionVocabulary | None = None, log: Callable[[dict], None] | None = None,
                   init: tuple[DeltaSimNet, MotionVocabulary] | None = None
                   ) -> tuple[DeltaSimNet, MotionVocabulary, dict]:
    """Train a DeltaSim network by behaviour cloning. Returns (net in eval mode, vocabulary, record).

    ``init``: a trained network and its vocabulary to fine-tune (a copy of its weights and its vocabulary are
    used; ``net_config`` and ``vocab`` are then ignored): the world changed, but not so much that what the
    network knows is lost."""
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)  # parameter init; data order uses the numpy rng below
    if init is not None:
        start_net, vocab = init
        net = DeltaSimNet(start_net.config)
        net.load_state_dict(start_net.state_dict())
    else:
        vocab = vocab or build_vocabulary(train, config)
        net_config = net_config or DeltaSimNetConfig()
        net_config = replace(net_config, vocab_size=vocab.size,
                             residual_scale=(vocab.eps, vocab.eps, vocab.eps / vocab.theta_weight))
        net = DeltaSimNet(net_config)
    opt = torch.optim.AdamW(net.parameters(), lr=learning_rate(config.lr, 0.0), weight_decay=config.weight_decay)
    tokens = vocab.nearest(train.motion.astype(np.float64))
    extra = max(config.start_weight - 1, 0) * len(set_off_samples(train))
    steps_per_epoch = max(1, (len(train) + extra) // config.batch_size)
    total = steps_per_epoch * config.epochs
    rng = np.random.default_rng(config.seed)
    start = time.perf_counter()
    record: dict = {"epochs": [], "vocab_size": vocab.size, "train_samples": len(train), "stopped_early": False}
    step = 0
    for epoch in range(config.epochs):
        net.train()
        order = epoch_order(rng, train, config.start_weight)
        sums = {"ce": 0.0, "residual": 0.0, "feasibility": 0.0, "top1": 0.0}
        for b in range(steps_per_epoch):
            idx = order[b * config.batch_size:(b + 1) * config.batch_size]
            terms = bc_losses(net, vocab, train, idx, tokens, config)
            loss = (terms["ce"] + config.residual_weight * terms["residual"]
                    + config.feasibility_weight * terms["feasibility"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            progress = max(step / total, (time.perf_counter() - start) / config.max_seconds)
            for group in opt.param_groups:
                group["lr"] = learning_rate(config.lr, progress)
            step += 1
            for k in sums:
                sums[k] += float(terms[k].detach())
            if progress >= 1.0:
                record["stopped_early"] = step < total
                break
        entry = {"epoch": epoch, **{k: v / max(b + 1, 1) for k, v in sums.items()},
                 "seconds": round(time.perf_counter() - start, 1)}
        if val is not None:
            entry.update({f"val_{k}": v for k, v in evaluate_bc(net, vocab, val).items()})
        record["epochs"].append(entry)
        if log is not None:
            log(entry)
        if record["stopped_early"]:
            break
    net.eval()
    record["seconds"] = round(time.perf_counter() - start, 1)
    return net, vocab, record


@torch.no_grad()
def evaluate_bc(net: DeltaSimNet, vocab: MotionVocabulary, samples: Samples, batch_size: int = 1024
                ) -> dict[str, float]:
    """Held-out one-step metrics: CE, top-1 primitive accuracy, and mean position error (m) of the
    predicted motion (argmax primitive + residual) against the recorded one."""
    was_training = net.training
    net.eval()
    tokens = vocab.nearest(samples.motion.astype(np.float64))
    ce, top1, err, n = 0.0, 0.0, 0.0, 0
    for start in range(0, len(samples), batch_size):
        idx = np.arange(start, min(start + batch_size, len(samples)))
        logits, residual = net(**_batch(samples, idx))
        target = torch.from_numpy(tokens[idx])
        ce += float(F.cross_entropy(logits, target, reduction="sum"))
        pick = logits.argmax(-1)
        top1 += float((pick == target).sum())
        motion = vocab.primitives[pick.numpy()] + residual[torch.arange(len(idx)), pick].double().numpy()
        err += float(np.linalg.norm(motion[:, :2] - samples.motion[idx, :2], axis=-1).sum())
        n += len(idx)
    net.train(was_training)
    return {"ce": ce / max(n, 1), "top1": top1 / max(n, 1), "step_error_m": err / max(n, 1)}
