"""The checkpoint format of every learned model: weights in safetensors (loaded weights-only: no pickle, no
code), configs and metadata in a JSON sidecar whose ``format`` names the model and its version.

Each model (the generator in :mod:`vectorworld.generation.learned.checkpoints`, ΔSim in
:mod:`policies.deltasim.checkpoint`) chooses its file names, its format tag and what its sidecar holds;
reading and writing the two files, and every error on the way, go through here. Anything missing or
corrupt raises :class:`~vectorworld.errors.CheckpointError` naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vectorworld.errors import CheckpointError
from vectorworld.files import atomic_write

if TYPE_CHECKING:  # torch stays a lazy import of the models that need it
    import torch


def write_checkpoint(weights_path: Path, tensors: dict[str, torch.Tensor], json_path: Path, json_text: str) -> None:
    """Write the weights (contiguous CPU tensors) and the sidecar, each atomically."""
    from safetensors.torch import save

    weights_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(weights_path, "wb") as f:
        f.write(save(tensors))
    with atomic_write(json_path) as f:
        f.write(json_text)


def read_sidecar(json_path: Path) -> dict[str, Any]:
    """The sidecar as a dict; CheckpointError if it is missing, not JSON or not an object."""
    try:
        sidecar = json.loads(Path(json_path).read_text())
    except FileNotFoundError as err:
        raise CheckpointError(f"checkpoint file not found: {json_path}") from err
    except (OSError, ValueError) as err:
        raise CheckpointError(f"{json_path}: not valid JSON ({err})") from err
    if not isinstance(sidecar, dict):
        raise CheckpointError(f"{json_path}: not a checkpoint sidecar (a JSON object)")
    return sidecar


def read_weights(weights_path: Path) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file (weights only); CheckpointError if missing or corrupt."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not Path(weights_path).is_file():
        raise CheckpointError(f"checkpoint file not found: {weights_path}")
    try:
        return load_file(str(weights_path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"{weights_path}: corrupt or unreadable safetensors ({err})") from err
