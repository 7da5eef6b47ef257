"""DeltaSim checkpoints: weights in safetensors (never pickle) + a JSON sidecar with configs, the k-disks
vocabulary parameters and training metadata.

Layout: ``<stem>.safetensors`` holds the network's state dict plus ``vocabulary.primitives`` (K, 3);
``<stem>.json`` holds ``format``, ``net`` (DeltaSimNetConfig), ``observation`` (ObservationConfig),
``vocabulary`` (eps, theta_weight, dt_s, size) and ``meta`` (free-form training record).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from policies.deltasim.kdisks import MotionVocabulary
from policies.deltasim.net import DeltaSimNet, DeltaSimNetConfig
from policies.deltasim.observation import ObservationConfig
from vectorworld.checkpoints import read_sidecar, read_weights, write_checkpoint
from vectorworld.errors import CheckpointError, ConfigError

FORMAT = "vectorworld.deltasim/2"
"""Version 2: junction stop token among the neighbour tokens, query-only blocks (``context_layers``)."""
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "weights" / "deltasim"
"""Stem of the shipped checkpoint (``.safetensors`` + ``.json``)."""


@dataclass(frozen=True)
class DeltaSimCheckpoint:
    """A loaded checkpoint: the network (eval mode), its vocabulary, observation config and metadata."""

    net: DeltaSimNet
    vocabulary: MotionVocabulary
    observation: ObservationConfig
    meta: dict


def _paths(stem: str | Path) -> tuple[Path, Path]:
    stem = Path(stem)
    if stem.suffix in (".safetensors", ".json"):
        stem = stem.with_suffix("")
    return stem.with_suffix(".safetensors"), stem.with_suffix(".json")


def save_checkpoint(stem: str | Path, net: DeltaSimNet, vocabulary: MotionVocabulary,
                    observation: ObservationConfig, meta: dict | None = None) -> tuple[Path, Path]:
    """Write ``<stem>.safetensors`` and ``<stem>.json``; returns both paths."""
    weights_path, json_path = _paths(stem)
    tensors = {k: v.detach().contiguous().clone() for k, v in net.state_dict().items()}
    tensors["vocabulary.primitives"] = torch.from_numpy(vocabulary.primitives.copy())
    sidecar = {
        "format": FORMAT,
        "net": net.config.to_dict(),
        "observation": dataclasses.asdict(observation),
        "vocabulary": {"eps": vocabulary.eps, "theta_weight": vocabulary.theta_weight,
                       "dt_s": vocabulary.dt_s, "size": vocabulary.size,
                       "primitives": vocabulary.primitives.round(6).tolist()},
        "meta": meta or {},
    }
    write_checkpoint(weights_path, tensors, json_path, json.dumps(sidecar, indent=1))
    return weights_path, json_path


def load_checkpoint(stem: str | Path = DEFAULT_CHECKPOINT) -> DeltaSimCheckpoint:
    """Load a checkpoint; raises CheckpointError if a file is missing, corrupt, or does not match."""
    weights_path, json_path = _paths(stem)
    for path in (weights_path, json_path):
        if not path.is_file():
            raise CheckpointError(f"DeltaSim checkpoint file not found: {path}")
    sidecar = read_sidecar(json_path)
    if sidecar.get("format") != FORMAT:
        found = sidecar.get("format")
        hint = (" (an older DeltaSim checkpoint: retrain it with tools/train_deltasim.py)"
                if isinstance(found, str) and found.startswith("vectorworld.deltasim/") else "")
        raise CheckpointError(f"{json_path}: format is {found!r}, not {FORMAT!r}{hint}")
    try:
        net_config = DeltaSimNetConfig.from_dict(sidecar["net"])
        obs_config = ObservationConfig(**sidecar["observation"])
        voc = sidecar["vocabulary"]
        eps, theta_weight, dt_s = float(voc["eps"]), float(voc["theta_weight"]), float(voc["dt_s"])
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{json_path}: missing or invalid field ({err})") from err
    tensors = read_weights(weights_path)
    primitives = tensors.pop("vocabulary.primitives", None)
    if primitives is None or tuple(primitives.shape) != (net_config.vocab_size, 3):
        raise CheckpointError(f"{weights_path}: vocabulary does not match vocab_size={net_config.vocab_size}")
    try:
        vocabulary = MotionVocabulary(primitives.double().numpy(), eps, theta_weight, dt_s)
    except ConfigError as err:
        raise CheckpointError(f"{weights_path}: bad vocabulary ({err})") from err
    net = DeltaSimNet(net_config)
    try:
        net.load_state_dict(tensors, strict=True)
    except RuntimeError as err:
        raise CheckpointError(f"{weights_path}: weights do not match the network config ({err})") from err
    if not all(torch.isfinite(t).all() for t in tensors.values()):
        raise CheckpointError(f"{weights_path}: weights contain NaN or inf")
    net.eval()
    return DeltaSimCheckpoint(net, vocabulary, obs_config, dict(sidecar.get("meta", {})))
