"""The recipe of the shipped DeltaSim checkpoint: record IDM teacher traffic in Session rollouts, train, save.

``train_from_dir`` is what ``tools/train_deltasim.py`` and ``vectorworld train deltasim`` run. The data
directory caches the recorded samples (``deltasim_samples.npz``) so a rerun trains on identical data; the
output directory gets the checkpoint pair and ``train_record.json`` (the resolved recipe + training log).
The corpus is recorded by :mod:`vectorworld.train.deltasim_corpus` on Session seeds far from the evaluation seeds.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policies.deltasim.checkpoint import DeltaSimCheckpoint, load_checkpoint, save_checkpoint
from policies.deltasim.net import DeltaSimNetConfig
from policies.deltasim.observation import ObservationConfig
from policies.idm import IdmParams, IdmPolicy
from vectorworld.errors import ConfigError
from vectorworld.train.deltasim_corpus import SessionCorpusConfig, session_corpus
from vectorworld.train.deltasim_data import Samples
from vectorworld.train.deltasim_training import TrainConfig, evaluate_bc, train_deltasim

SAMPLES_FILE = "deltasim_samples.npz"
RECIPE_FILE = "deltasim_samples.json"
"""The :class:`DataRecipe` the cached samples were recorded with (JSON, beside SAMPLES_FILE)."""


SEED_BASE = 1000
"""Session seeds of the corpus start at SEED_BASE * (recipe seed + 1): never among the evaluation seeds."""


@dataclass(frozen=True)
class DataRecipe:
    """Session corpus (see :class:`vectorworld.train.deltasim_corpus.SessionCorpusConfig`): ``episodes`` Sessions of
    ``warmup_steps`` + ``steps`` steps, every ``record_every``-th step recorded; the last ``val_fraction``
    of episodes is held out. ``action_noise``: DART-style noise (m, m, rad per step)."""

    episodes: int = 64
    steps: int = 600
    warmup_steps: int = 20
    record_every: int = 3
    seed: int = 0
    val_fraction: float = 0.1
    action_noise: tuple[float, float, float] = (0.04, 0.05, 0.015)
    speed_factor: tuple[float, float] = (0.7, 1.15)
    """Range of the teacher drivers' speed factor (x the speed limit), drawn once per episode."""

    def corpus(self) -> SessionCorpusConfig:
        return SessionCorpusConfig(episodes=self.episodes, steps=self.steps, warmup_steps=self.warmup_steps,
                                   record_every=self.record_every, first_seed=SEED_BASE * (self.seed + 1),
                                   action_noise=self.action_noise)


def idm_teacher(rng: np.random.Generator, speed_factor: tuple[float, float] = DataRecipe.speed_factor) -> IdmPolicy:
    """IDM with parameters drawn around the calm urban default (one driver style per episode)."""
    return IdmPolicy(IdmParams(
        time_headway_s=float(rng.uniform(1.0, 2.0)),
        min_gap_m=float(rng.uniform(2.0, 3.5)),
        max_accel_mps2=float(rng.uniform(1.2, 2.5)),
        comfort_decel_mps2=float(rng.uniform(2.0, 3.5)),
        speed_factor=float(rng.uniform(*speed_factor)),
    ))


def _recorded(recipe: dict) -> dict:
    """The fields of a recipe (as JSON) that decide the recorded samples (the split is made at training); a
    cache recorded before the speed-factor range was a field had the range that was then fixed."""
    return {"speed_factor": [0.7, 1.15], **{k: v for k, v in recipe.items() if k != "val_fraction"}}


def load_or_record(data_dir: Path, recipe: DataRecipe, observation: ObservationConfig, workers: int = 1,
                   log: Callable[[dict], None] | None = None) -> Samples:
    """Samples cached in ``data_dir`` or freshly recorded there (with the recipe beside them, in
    RECIPE_FILE); ``workers`` processes record episodes in parallel (same samples).

    A cache is used only if it was recorded with the same recipe (the validation split may differ): otherwise
    the training record would claim a recipe the data does not follow. Raises ConfigError for a cache of
    another (or an unknown) recipe."""
    data_dir = Path(data_dir)
    path = data_dir / SAMPLES_FILE
    wanted = json.loads(json.dumps(dataclasses.asdict(recipe)))  # tuples as JSON lists, as stored
    if path.is_file():
        recipe_path = data_dir / RECIPE_FILE
        try:
            cached = json.loads(recipe_path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ConfigError(f"{path}: no readable recipe beside the cached samples ({err}); record into an "
                              "empty data_dir", field="data_dir") from err
        if _recorded(cached) != _recorded(wanted):
            raise ConfigError(f"{path} was recorded with recipe {cached}, not {wanted}: use another data_dir "
                              "(or remove this cache) to record the requested recipe", field="data_dir")
        return Samples.load(path)
    data_dir.mkdir(parents=True, exist_ok=True)
    teacher = functools.partial(idm_teacher, speed_factor=recipe.speed_factor)
    samples = session_corpus(recipe.corpus(), teacher, observation, log=log, workers=workers)
    samples.save(path)
    (data_dir / RECIPE_FILE).write_text(json.dumps(wanted, indent=1))
    return samples


def train_from_dir(data_dir: Path, out_dir: Path, recipe: DataRecipe = DataRecipe(),
                   config: TrainConfig = TrainConfig(), net_config: DeltaSimNetConfig = DeltaSimNetConfig(),
                   observation: ObservationConfig = ObservationConfig(),
                   log: Callable[[dict], None] | None = None, workers: int = 1,
                   init_from: Path | None = None) -> dict:
    """Record (or load) data, train, and write the checkpoint folder ``out_dir`` (``model.safetensors``,
    ``config.json``) and ``out_dir/train_record.json``. Returns the training record.

    ``init_from``: a checkpoint folder to fine-tune instead of training from scratch (its network and
    vocabulary; its observation settings must be ``observation``'s, ConfigError naming the field if not)."""
    init = _fine_tune_start(init_from, observation) if init_from is not None else None
    samples = load_or_record(data_dir, recipe, observation, workers, log)
    episodes = int(samples.episode.max()) + 1
    first_val = episodes - max(1, int(round(episodes * recipe.val_fraction)))
    train = samples.subset(np.nonzero(samples.episode < first_val)[0])
    val = samples.subset(np.nonzero(samples.episode >= first_val)[0])
    net_config = dataclasses.replace(net_config, history_steps=observation.history_steps,
                                     max_neighbors=observation.max_neighbors,
                                     max_lane_chunks=observation.max_lane_chunks,
                                     chunk_points=observation.chunk_points)
    net, vocab, record = train_deltasim(train, config, net_config, val=val, log=log,
                                        init=None if init is None else (init.net, init.vocabulary))
    record["val"] = evaluate_bc(net, vocab, val)
    record["val_samples"] = len(val)
    meta = {"recipe": dataclasses.asdict(recipe), "train": dataclasses.asdict(config),
            "data": "IDM teacher traffic in procedural Session rollouts (vectorworld.train.deltasim_corpus)",
            "record": record}
    if init is not None:
        meta["fine_tuned_from"] = {"folder": str(init_from), "meta": init.meta}
    out_dir = Path(out_dir)
    save_checkpoint(out_dir, net, vocab, observation, meta)
    (out_dir / "train_record.json").write_text(json.dumps(meta, indent=1))
    return record


def _fine_tune_start(folder: Path, observation: ObservationConfig) -> DeltaSimCheckpoint:
    """The checkpoint to fine-tune, refused when it observes differently from the corpus to be recorded."""
    start = load_checkpoint(folder)
    for f in dataclasses.fields(ObservationConfig):
        if getattr(start.observation, f.name) != getattr(observation, f.name):
            raise ConfigError(f"cannot fine-tune {folder}: its observation.{f.name} is "
                              f"{getattr(start.observation, f.name)!r}, the corpus records "
                              f"{getattr(observation, f.name)!r}")
    return start
