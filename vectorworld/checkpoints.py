"""The checkpoint layout of every learned model: one folder, weights in ``model.safetensors`` (loaded
weights-only: no pickle, no code), configs and metadata in ``config.json``, whose ``format`` and ``version``
name the model and its version.

Each model (the generator in :mod:`vectorworld.generation.learned.checkpoints`, ΔSim in
:mod:`policies.deltasim.checkpoint`) chooses its format tag and what its config holds; the layout, reading
and writing the two files, checking the tag, and every error on the way go through here. Anything missing
or corrupt raises :class:`~vectorworld.errors.CheckpointError` naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vectorworld.errors import CheckpointError
from vectorworld.files import atomic_write

if TYPE_CHECKING:  # torch stays a lazy import of the models that need it
    import torch

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"


def write_checkpoint(folder: str | Path, tensors: dict[str, torch.Tensor], fmt: str, version: int,
                     config: dict[str, Any]) -> Path:
    """Write ``folder/model.safetensors`` (contiguous CPU tensors) and ``folder/config.json`` (``config`` with
    ``format`` and ``version``; sorted keys, indent 2), each atomically; returns the folder."""
    from safetensors.torch import save

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_write(folder / WEIGHTS_FILE, "wb") as f:
        f.write(save(tensors))
    return write_config(folder, fmt, version, config)


def write_config(folder: str | Path, fmt: str, version: int, config: dict[str, Any]) -> Path:
    """Write ``folder/config.json`` alone (atomically; e.g. beside weights moved from another layout)."""
    folder = Path(folder)
    with atomic_write(folder / CONFIG_FILE) as f:
        f.write(json.dumps({**config, "format": fmt, "version": version}, indent=2, sort_keys=True))
    return folder


def read_config(folder: str | Path, fmt: str, version: int) -> dict[str, Any]:
    """``folder/config.json`` as a dict; CheckpointError if it is missing, not a JSON object, or not of
    format ``fmt`` version ``version``."""
    path = Path(folder) / CONFIG_FILE
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError as err:
        raise CheckpointError(f"checkpoint file not found: {path}") from err
    except (OSError, ValueError) as err:
        raise CheckpointError(f"{path}: not valid JSON ({err})") from err
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: not a checkpoint config (a JSON object)")
    if config.get("format") != fmt or config.get("version") != version:
        raise CheckpointError(f"{path} is not a {fmt} v{version} checkpoint config (format "
                              f"{config.get('format')!r}, version {config.get('version')!r})")
    return config


def read_weights(folder: str | Path) -> dict[str, torch.Tensor]:
    """The tensors of ``folder/model.safetensors`` (weights only); CheckpointError if missing or corrupt."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(folder) / WEIGHTS_FILE
    if not path.is_file():
        raise CheckpointError(f"checkpoint file not found: {path}")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"{path}: corrupt or unreadable safetensors ({err})") from err
