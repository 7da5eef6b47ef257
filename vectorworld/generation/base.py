"""The TileGenerator interface: given the known world around a frontier tile, produce its new half.

The streaming world (``vectorworld.world``) decides *where* a tile goes; a generator decides *what* is in
it. Generators are plug-ins registered by name (``procedural``, ``learned``).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from vectorworld import geometry
from vectorworld.scene import TILE_SIZE_M, Crosswalk, Lane, LaneGraph


class IdAllocator:
    """Hands out increasing integer ids (lanes, agents, tiles); one per kind per world."""

    def __init__(self, start: int = 0) -> None:
        self._next = start

    def __call__(self) -> int:
        self._next += 1
        return self._next - 1

    def peek(self) -> int:
        """The id the next call will hand out."""
        return self._next


@dataclass(frozen=True)
class Port:
    """An open lane end on the frontier of the known world.

    An *out* port is the end of a lane without successors (traffic leaves the known world there): a new
    lane must start at ``xy`` with heading ``yaw``. An *in* port is the start of a lane without
    predecessors (traffic enters the known world there): a new lane must end at ``xy`` with heading ``yaw``.
    xy: (2,) m, global frame; yaw: rad, direction of travel.
    """

    lane_id: int
    xy: np.ndarray
    yaw: float
    width_m: float
    speed_limit_mps: float
    is_out: bool


@dataclass(frozen=True)
class TileFrame:
    """Where a tile goes: centre (2,) m global and yaw (rad). The tile spans [-32, 32]^2 m in its frame;
    the back half (x < 0) is known, the front half is to be generated."""

    center_xy: np.ndarray
    yaw: float
    size_m: float = TILE_SIZE_M

    def to_local(self, xy: np.ndarray) -> np.ndarray:
        return geometry.to_local(xy, self.center_xy, self.yaw)

    def to_global(self, xy: np.ndarray) -> np.ndarray:
        return geometry.to_global(xy, self.center_xy, self.yaw)

    def contains(self, xy: np.ndarray, margin_m: float = 0.0) -> np.ndarray:
        """Boolean (...) whether global points (..., 2) lie inside the square (grown by ``margin_m``)."""
        return geometry.in_square(xy, self.center_xy, self.yaw, self.size_m / 2.0 + margin_m)


def open_ports(graph: LaneGraph, near_xy: np.ndarray, radius_m: float) -> list[Port]:
    """Open lane ends of ``graph`` within ``radius_m`` of ``near_xy``: ends without successor (out ports)
    and starts without predecessor (in ports), in lane id order."""
    ports = []
    for lane_id in graph.near(near_xy, radius_m):
        lane = graph[lane_id]
        if not lane.successors:
            xy, yaw = lane.end_pose
            if np.linalg.norm(xy - near_xy) <= radius_m:
                ports.append(Port(lane_id, xy, yaw, lane.width_m, lane.speed_limit_mps, True))
        if not lane.predecessors:
            xy, yaw = lane.start_pose
            if np.linalg.norm(xy - near_xy) <= radius_m:
                ports.append(Port(lane_id, xy, yaw, lane.width_m, lane.speed_limit_mps, False))
    return ports


def tile_ports(graph: LaneGraph, frame: TileFrame, margin_m: float) -> list[Port]:
    """The open ports a tile at ``frame`` is given: those inside its square grown by ``margin_m``."""
    radius = frame.size_m / np.sqrt(2.0) + margin_m
    return [p for p in open_ports(graph, frame.center_xy, radius) if frame.contains(p.xy, margin_m)]


@dataclass(frozen=True)
class AgentSpawns:
    """Agents a generator places in a new tile. All arrays have a leading dimension A.

    xy: (A, 2) m global; yaw: (A,) rad; speed: (A,) m/s; length, width: (A,) m; agent_type: (A,) int8;
    lane_id: (A,) int64, the lane each agent starts on (-1 if none);
    motion_code: (A, 6, 2) m, body frame, the agent's recent path (oldest first, ending near (0, 0));
    all zeros means static. Used to warm-start history-conditioned policies.
    """

    xy: np.ndarray
    yaw: np.ndarray
    speed: np.ndarray
    length: np.ndarray
    width: np.ndarray
    agent_type: np.ndarray
    lane_id: np.ndarray
    motion_code: np.ndarray

    def __post_init__(self) -> None:
        count = len(self.xy)
        for name in self.__dataclass_fields__:
            if len(getattr(self, name)) != count:
                raise ValueError(f"AgentSpawns.{name} holds {len(getattr(self, name))} agents, xy holds {count}")

    @classmethod
    def none(cls) -> AgentSpawns:
        return cls(np.zeros((0, 2)), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0),
                   np.zeros(0, np.int8), np.zeros(0, np.int64), np.zeros((0, 6, 2)))

    @classmethod
    def concat(cls, parts: list[AgentSpawns]) -> AgentSpawns:
        """The agents of ``parts``, in order (none for an empty list)."""
        if not parts:
            return cls.none()
        return cls(**{k: np.concatenate([getattr(p, k) for p in parts]) for k in cls.__dataclass_fields__})

    def __len__(self) -> int:
        return len(self.xy)

    def select(self, mask: np.ndarray) -> AgentSpawns:
        return AgentSpawns(self.xy[mask], self.yaw[mask], self.speed[mask], self.length[mask],
                           self.width[mask], self.agent_type[mask], self.lane_id[mask],
                           self.motion_code[mask])


@dataclass(frozen=True)
class TileRequest:
    """Everything a generator may look at. ``graph`` is the known world: read it, never modify it."""

    frame: TileFrame
    ports: tuple[Port, ...]
    graph: LaneGraph
    lane_ids: IdAllocator
    rng: np.random.Generator
    existing_agents_xy: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    """(M, 2) m global: agents already in the world near the tile (spawns must keep clear of them)."""
    spawn_agents: bool = True


@dataclass(frozen=True)
class TileContent:
    """A generator's answer.

    lanes: the new lanes (global frame, ids from ``request.lane_ids``), with edges among themselves.
    links: successor edges (from_id, to_id) between a new lane and an existing one (either direction).
    agents: road users spawned on the new lanes.
    crosswalks: pedestrian crossings at the new junctions (ids -1: the world numbers them).
    """

    lanes: tuple[Lane, ...]
    links: tuple[tuple[int, int], ...]
    agents: AgentSpawns
    used_fallback: bool = False
    crosswalks: tuple[Crosswalk, ...] = ()


class TileGenerator(abc.ABC):
    """Produces the new half of a frontier tile."""

    name: str = "base"

    @abc.abstractmethod
    def generate(self, request: TileRequest) -> TileContent:
        """Generate the tile. Must be deterministic given ``request`` (including its rng state)."""

    def first_tile(self, frame: TileFrame, lane_ids: IdAllocator, rng: np.random.Generator) -> TileContent:
        """Generate a whole first tile (no known world) with a road through the origin along +x."""
        return self.generate(TileRequest(frame=frame, ports=(), graph=LaneGraph(), lane_ids=lane_ids,
                                         rng=rng))


GENERATORS: dict[str, Callable[..., TileGenerator]] = {}


def register_generator(name: str) -> Callable[[Callable[..., TileGenerator]], Callable[..., TileGenerator]]:
    def wrap(factory: Callable[..., TileGenerator]) -> Callable[..., TileGenerator]:
        GENERATORS[name] = factory
        return factory
    return wrap


def make_generator(spec: str, **kwargs: object) -> TileGenerator:
    """Build a registered generator from ``NAME`` or ``NAME:CHECKPOINT`` (a generator with weights, e.g.
    ``learned:runs/gen/run/latest``: that checkpoint folder instead of the shipped one). Raises ConfigError
    (field ``generator``) for an unknown name, a checkpoint the generator does not take, or a missing folder."""
    import inspect
    from pathlib import Path

    from vectorworld.errors import ConfigError
    from vectorworld.generation import available_generators, load_generator_module

    name, sep, checkpoint = spec.partition(":")
    if not load_generator_module(name):
        raise ConfigError(f"generator: unknown name {name!r}; choose one of {available_generators()}, "
                          f"optionally as NAME:CHECKPOINT", field="generator")
    factory = GENERATORS[name]
    if sep:
        if "checkpoint" not in inspect.signature(factory).parameters:
            raise ConfigError(f"generator: {name!r} takes no checkpoint, got {spec!r}", field="generator")
        if not Path(checkpoint).is_dir():
            raise ConfigError(f"generator: checkpoint folder {checkpoint!r} does not exist", field="generator")
        kwargs["checkpoint"] = checkpoint
    return factory(**kwargs)
