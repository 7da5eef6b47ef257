"""Where realism samples come from: real logs, dataset build folders, and generated worlds driven by a session.

* ``reference_samples("womd:GLOB" | "nuplan:DB" | PATH)``: every scenario of the source at its current
  step, one tile centred on every valid vehicle (the SDC included), lanes from the scenario's map.
* ``reference_samples(FOLDER)`` (a ``vectorworld dataset build`` folder): the stored tiles; only the
  per-tile and per-agent features (lane-level features need the whole map, which a build does not keep).
* ``generated_samples(generator, seeds, ...)``: a :class:`~vectorworld.sim.session.Session` per seed (the
  default ego and the chosen NPCs) driven for ``seconds``; every ``every_s`` a snapshot with one tile on
  the ego and one on every vehicle within ``anchor_radius_m`` of it (tiles there are generated all
  round). Lanes are measured once per world, when a tile first touches them; junction spacing once per
  world over every lane its tiles touched (a road between two junctions is seldom inside one snapshot's
  tiles: measured per snapshot, chains that span several were cut or lost, which halved the figure).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vectorworld.data.tiles import TileConfig
from vectorworld.errors import ConfigError, DataFormatError
from vectorworld.eval.realism_features import (
    Samples,
    Snapshot,
    junction_lanes,
    junction_spacing,
    lane_samples,
    lanes_touched,
    tile_samples,
)
from vectorworld.scene import AgentType, Lane, LaneGraph


@dataclass(frozen=True)
class DriveConfig:
    """How generated worlds are sampled: seeds ``seed .. seed + worlds - 1``, each driven ``seconds`` (s)
    with a snapshot every ``every_s`` (s), the first after ``warmup_s``; tiles on the ego and on vehicles
    within ``anchor_radius_m`` (m) of it."""

    worlds: int = 8
    seed: int = 0
    seconds: float = 60.0
    every_s: float = 5.0
    warmup_s: float = 5.0
    anchor_radius_m: float = 40.0
    npc_policy: str = "idm"

    def validate(self) -> DriveConfig:
        if self.worlds < 1:
            raise ConfigError(f"worlds must be >= 1, got {self.worlds}", field="worlds")
        if not (self.seconds > 0 and self.every_s > 0 and self.warmup_s >= 0):
            raise ConfigError(f"seconds and every_s must be positive and warmup_s >= 0, got {self.seconds}, "
                              f"{self.every_s}, {self.warmup_s}", field="seconds")
        return self


@dataclass
class SampleSet:
    """Samples of one side of the comparison, plus example snapshots for the bird's-eye figure."""

    label: str
    samples: Samples = field(default_factory=Samples)
    tiles: int = 0
    examples: list[Snapshot] = field(default_factory=list)


def _snapshot_from_scenario(scenario) -> Snapshot:  # noqa: ANN001 - data.scenario.Scenario
    tr, step = scenario.tracks, scenario.current_index
    valid = tr.valid[:, step]
    vehicles = valid & (tr.types == AgentType.VEHICLE)
    return Snapshot(graph=scenario.map.lanes, xy=tr.xy[valid, step], yaw=tr.yaw[valid, step],
                    speed=tr.speed[valid, step], length=tr.length[valid], width=tr.width[valid],
                    agent_type=tr.types[valid].astype(np.int8), anchor_xy=tr.xy[vehicles, step].reshape(-1, 2),
                    anchor_yaw=tr.yaw[vehicles, step])


def reference_samples(source: str, nuplan_maps_dir: str | None = None, max_scenarios: int | None = None,
                      tile: TileConfig = TileConfig(),
                      progress: Callable[[int], None] | None = None) -> SampleSet:
    """Samples of real data: a scenario source string or a dataset build folder (see module docstring)."""
    path = Path(source)
    if path.is_dir():
        return _dataset_samples(path, max_scenarios)
    from vectorworld.data.sources import iter_scenario_loaders

    out = SampleSet(label=source)
    for k, load in enumerate(iter_scenario_loaders(source, nuplan_maps_dir)):
        if max_scenarios is not None and k >= max_scenarios:
            break
        snap = _snapshot_from_scenario(load())
        tile_samples(snap, tile, out.samples)
        lane_samples(snap.graph, lanes_touched(snap, tile), out.samples)
        out.tiles += len(snap.anchor_xy)
        if len(out.examples) < 2:
            out.examples.append(snap)
        if progress is not None:
            progress(k + 1)
    if out.tiles == 0:
        raise DataFormatError(f"{source}: no vehicle to centre a tile on")
    return out


def _dataset_samples(folder: Path, max_tiles: int | None) -> SampleSet:
    from vectorworld.data.dataset import iter_shard_tiles

    out = SampleSet(label=str(folder))
    s = out.samples
    for shard in iter_shard_tiles(folder):
        for t in range(len(shard["tile_kind"])):
            if max_tiles is not None and out.tiles >= max_tiles:
                return out
            out.tiles += 1
            s.add("lanes_per_tile", [int(shard["lane_valid"][t].sum())])
            valid = shard["agent_valid"][t]
            types = shard["agent_type"][t][valid]
            state = shard["agent_state"][t][valid].astype(np.float64)
            s.add("agents_per_tile", [len(types)])
            s.add("pedestrians_per_tile", [int((types == AgentType.PEDESTRIAN).sum())])
            s.add("cyclists_per_tile", [int((types == AgentType.CYCLIST).sum())])
            if len(state) > 1:
                d = np.linalg.norm(state[:, None, :2] - state[None, :, :2], axis=-1)
                np.fill_diagonal(d, np.inf)
                s.add("nn_distance_m", d.min(1))
                s.add("nn_below_2m", d.min(1) < 2.0)
            s.add("heading_rel_deg", np.degrees(np.abs(np.arctan2(state[:, 4], state[:, 3]))))
            veh = types == AgentType.VEHICLE
            s.add("vehicle_speed_mps", np.abs(state[veh, 2]))
            s.add("vehicle_standing", np.abs(state[veh, 2]) < 0.5)
            s.add("vehicle_length_m", state[veh, 5])
            s.add("vehicle_width_m", state[veh, 6])
    if out.tiles == 0:
        raise DataFormatError(f"{folder}: the dataset folder holds no tiles")
    return out


def iter_drive_snapshots(generator: str, config: DriveConfig) -> Iterator[tuple[int, Snapshot]]:
    """(world index, snapshot) along the ego's path of every seed (see module docstring)."""
    from vectorworld.sim.session import Session, SessionConfig

    config.validate()
    for w in range(config.worlds):
        session = Session(SessionConfig(seed=config.seed + w, generator=generator, npc_policy=config.npc_policy,
                                        target_km=100.0, terminate_on_collision=False))
        session.reset()
        steps = int(round(config.seconds / 0.1))
        every = max(1, int(round(config.every_s / 0.1)))
        first = int(round(config.warmup_s / 0.1))
        for k in range(1, steps + 1):
            if session.done:
                break
            session.advance()
            if k >= first and (k - first) % every == 0:
                yield w, session_snapshot(session, config.anchor_radius_m)


def session_snapshot(session, anchor_radius_m: float) -> Snapshot:  # noqa: ANN001 - sim.session.Session
    """The session's world now: tiles on the ego and on every vehicle within ``anchor_radius_m`` of it."""
    a = session.agents
    valid = a.valid.copy()
    ego = session.ego_slot
    near = valid & (a.agent_type == AgentType.VEHICLE) & (
        np.linalg.norm(a.xy - a.xy[ego], axis=-1) <= anchor_radius_m)
    near[ego] = True
    return Snapshot(graph=session.world.graph, xy=a.xy[valid].copy(), yaw=a.yaw[valid].copy(),
                    speed=a.speed[valid].copy(), length=a.length[valid].copy(), width=a.width[valid].copy(),
                    agent_type=a.agent_type[valid].astype(np.int8), anchor_xy=a.xy[near].copy(),
                    anchor_yaw=a.yaw[near].copy())


def generated_samples(generator: str, config: DriveConfig = DriveConfig(), tile: TileConfig = TileConfig(),
                      progress: Callable[[int], None] | None = None) -> SampleSet:
    """Samples of ``generator``'s worlds, driven as in :func:`iter_drive_snapshots`."""
    out = SampleSet(label=generator)
    seen: dict[int, set[int]] = {}
    kept: dict[int, dict[int, Lane]] = {}  # per world: the touched lanes and their neighbours, latest version
    for world, snap in iter_drive_snapshots(generator, config):
        tile_samples(snap, tile, out.samples)
        touched = lanes_touched(snap, tile)
        ids = touched - seen.setdefault(world, set())
        seen[world] |= ids
        lane_samples(snap.graph, ids, out.samples, spacing=False)
        keep_lanes(snap.graph, touched, kept.setdefault(world, {}))
        out.tiles += len(snap.anchor_xy)
        if len(out.examples) < 2 and out.tiles > 20 * (len(out.examples) + 1):
            out.examples.append(_frozen(snap))
        if progress is not None:
            progress(world + 1)
    for world, lanes in kept.items():
        out.samples.add("junction_spacing_m", world_junction_spacing(lanes, seen[world]))
    return out


def keep_lanes(graph: LaneGraph, ids: set[int], kept: dict[int, Lane]) -> None:
    """Record the lanes ``ids`` and their graph neighbours as ``graph`` holds them now (later links included)."""
    for lane_id in ids:
        lane = graph[lane_id]
        kept[lane_id] = lane
        for other in (*lane.successors, *lane.predecessors):
            if other in graph:
                kept[other] = graph[other]


def world_junction_spacing(lanes: dict[int, Lane], ids: set[int]) -> list[float]:
    """Junction spacing over every lane a world's tiles touched (lanes retired meanwhile included)."""
    graph = LaneGraph()
    graph.add(lanes.values())
    ids = {i for i in ids if i in graph}
    return junction_spacing(graph, ids, junction_lanes(graph, ids)[0]) if ids else []


def _frozen(snap: Snapshot) -> Snapshot:
    """A copy whose graph no longer changes with the session (for the figure)."""
    from vectorworld.scene import LaneGraph

    graph = LaneGraph()
    graph.add(snap.graph.lanes.values())
    return Snapshot(graph, snap.xy, snap.yaw, snap.speed, snap.length, snap.width, snap.agent_type,
                    snap.anchor_xy, snap.anchor_yaw)
