"""Checkpoints of the learned generator, in the layout of :mod:`vectorworld.checkpoints` (one folder with
``model.safetensors`` and ``config.json``).

Weights of several modules share one safetensors file under prefixes (``vae.``, ``dit.``); the JSON holds
the format tag, each module's config and free-form metadata (latent scale, training recipe). Anything
missing, corrupt or not matching the model raises :class:`vectorworld.errors.CheckpointError`.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from vectorworld import checkpoints
from vectorworld.checkpoints import WEIGHTS_FILE, read_weights, write_checkpoint
from vectorworld.errors import CheckpointError

FORMAT = "vectorworld-generator"
VERSION = 1


def save_checkpoint(folder: str | Path, modules: dict[str, nn.Module], config: dict[str, object]) -> Path:
    """Write the modules' weights (float32) and ``config`` (JSON-serialisable) to ``folder``."""
    tensors = {f"{name}.{key}": value.detach().to("cpu", torch.float32).contiguous()
               for name, module in modules.items() for key, value in module.state_dict().items()}
    return write_checkpoint(folder, tensors, FORMAT, VERSION, {"modules": sorted(modules), **config})


def read_config(folder: str | Path) -> dict[str, object]:
    """The checkpoint's JSON config; CheckpointError if missing, unparsable or of another format."""
    return checkpoints.read_config(folder, FORMAT, VERSION)


def load_weights(folder: str | Path, modules: dict[str, nn.Module]) -> None:
    """Load weights into ``modules`` (strict: every key present with the right shape, nothing extra)."""
    path = Path(folder) / WEIGHTS_FILE
    tensors = read_weights(folder)
    for name, module in modules.items():
        prefix = f"{name}."
        state = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
        expected = module.state_dict()
        missing = sorted(set(expected) - set(state))
        extra = sorted(set(state) - set(expected))
        if missing or extra:
            raise CheckpointError(f"checkpoint {path} does not match module {name!r}: "
                                  f"missing {missing[:3]}, unexpected {extra[:3]}")
        for key, value in state.items():
            if tuple(value.shape) != tuple(expected[key].shape):
                raise CheckpointError(f"checkpoint {path}: {name}.{key} has shape {tuple(value.shape)}, "
                                      f"the model expects {tuple(expected[key].shape)}")
        module.load_state_dict(state, strict=True)
