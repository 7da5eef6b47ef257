"""DeltaSim checkpoints, in the layout of :mod:`vectorworld.checkpoints`: one folder with
``model.safetensors`` (weights, never pickle) and ``config.json`` (configs, the k-disks vocabulary
parameters and training metadata).

``model.safetensors`` holds the network's state dict plus ``vocabulary.primitives`` (K, 3); ``config.json``
holds ``format`` / ``version``, ``net`` (DeltaSimNetConfig), ``observation`` (ObservationConfig),
``vocabulary`` (eps, theta_weight, dt_s, size, primitives rounded for reading) and ``meta`` (free-form
training record). ``tools/migrate_deltasim_checkpoint.py`` moves a checkpoint of the earlier layout
(``STEM.safetensors`` + ``STEM.json``) into this one without touching its weights.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from policies.deltasim.kdisks import MotionVocabulary
from policies.deltasim.net import DeltaSimNet, DeltaSimNetConfig
from policies.deltasim.observation import ObservationConfig
from vectorworld.checkpoints import CONFIG_FILE, WEIGHTS_FILE, read_config, read_weights, write_checkpoint
from vectorworld.errors import CheckpointError, ConfigError

FORMAT = "vectorworld-deltasim"
VERSION = 2
"""Version 2: junction stop token among the neighbour tokens, query-only blocks (``context_layers``)."""
LEGACY_FORMAT = "vectorworld.deltasim/2"
"""The format tag of version 2 in the earlier layout (``STEM.safetensors`` + ``STEM.json``)."""
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "weights"
"""Folder of the shipped checkpoint."""


@dataclass(frozen=True)
class DeltaSimCheckpoint:
    """A loaded checkpoint: the network (eval mode), its vocabulary, observation config and metadata."""

    net: DeltaSimNet
    vocabulary: MotionVocabulary
    observation: ObservationConfig
    meta: dict


def checkpoint_folder(path: str | Path) -> Path:
    """The checkpoint folder ``path`` names (the folder itself, or one of its two files)."""
    path = Path(path)
    return path.parent if path.name in (WEIGHTS_FILE, CONFIG_FILE) else path


def sidecar(net_config: dict, observation: ObservationConfig, vocabulary: MotionVocabulary, meta: dict) -> dict:
    """What ``config.json`` holds besides ``format`` / ``version``."""
    return {
        "net": net_config,
        "observation": dataclasses.asdict(observation),
        "vocabulary": {"eps": vocabulary.eps, "theta_weight": vocabulary.theta_weight,
                       "dt_s": vocabulary.dt_s, "size": vocabulary.size,
                       "primitives": vocabulary.primitives.round(6).tolist()},
        "meta": meta,
    }


def legacy_stem(path: str | Path) -> Path | None:
    """The stem of an earlier-layout checkpoint at ``path`` (``path`` itself, or ``path/deltasim``), if any."""
    path = Path(path)
    for stem in (path, path / "deltasim"):
        if Path(f"{stem}.safetensors").is_file() and Path(f"{stem}.json").is_file():
            return stem
    return None


def save_checkpoint(folder: str | Path, net: DeltaSimNet, vocabulary: MotionVocabulary,
                    observation: ObservationConfig, meta: dict | None = None) -> Path:
    """Write ``folder/model.safetensors`` and ``folder/config.json``; returns the folder."""
    tensors = {k: v.detach().contiguous().clone() for k, v in net.state_dict().items()}
    tensors["vocabulary.primitives"] = torch.from_numpy(vocabulary.primitives.copy())
    return write_checkpoint(folder, tensors, FORMAT, VERSION,
                            sidecar(net.config.to_dict(), observation, vocabulary, meta or {}))


def load_checkpoint(folder: str | Path = DEFAULT_CHECKPOINT) -> DeltaSimCheckpoint:
    """Load a checkpoint folder; raises CheckpointError if a file is missing, corrupt, or does not match."""
    folder = checkpoint_folder(folder)
    weights_path, json_path = folder / WEIGHTS_FILE, folder / CONFIG_FILE
    for path in (weights_path, json_path):
        if not path.is_file():
            legacy = legacy_stem(folder)
            hint = "" if legacy is None else (f" ({legacy}.safetensors + .json is a checkpoint of the earlier "
                                              "layout: move it with tools/migrate_deltasim_checkpoint.py)")
            raise CheckpointError(f"DeltaSim checkpoint file not found: {path}{hint}")
    sidecar = read_config(folder, FORMAT, VERSION)
    try:
        net_config = DeltaSimNetConfig.from_dict(sidecar["net"])
        obs_config = ObservationConfig(**sidecar["observation"])
        voc = sidecar["vocabulary"]
        eps, theta_weight, dt_s = float(voc["eps"]), float(voc["theta_weight"]), float(voc["dt_s"])
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{json_path}: missing or invalid field ({err})") from err
    tensors = read_weights(folder)
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
