"""The episode config, :class:`SessionConfig`, and its one validator.

Every way in -- the CLI, a gRPC CreateSession, a recording's header, a batch task -- builds a SessionConfig
and calls :meth:`SessionConfig.validate`, so the limits are the same everywhere. Errors are
:class:`~vectorworld.errors.ConfigError` whose message starts with the *field* name (``target_km must be
...``) and whose ``field`` attribute names it; the CLI words them with its flags, the server with the wire
field path (``config.target_km``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from policies import DEFAULT_NPC_POLICY
from vectorworld import DT_S
from vectorworld.errors import ConfigError
from vectorworld.world import WorldConfig

MAX_TARGET_KM = 10_000.0
MAX_OBSERVATION_RADIUS_M = 10_000.0
MAX_STEPS = 10_000_000
MAX_AGENT_CAPACITY = 1024
MAX_EGO_START_SPEED_MPS = 60.0

_Check = tuple[str, Callable[[float], bool], str]
_LIMITS: tuple[_Check, ...] = (
    ("target_km", lambda v: 0 < v <= MAX_TARGET_KM, f"a finite number in (0, {MAX_TARGET_KM:g}]"),
    ("observation_radius_m", lambda v: 0 < v <= MAX_OBSERVATION_RADIUS_M,
     f"a finite number in (0, {MAX_OBSERVATION_RADIUS_M:g}]"),
    ("agent_capacity", lambda v: 1 <= v <= MAX_AGENT_CAPACITY, f"an integer in [1, {MAX_AGENT_CAPACITY}]"),
    ("ego_start_speed_mps", lambda v: 0 <= v <= MAX_EGO_START_SPEED_MPS,
     f"a finite number in [0, {MAX_EGO_START_SPEED_MPS:g}]"),
    ("max_steps", lambda v: 1 <= v <= MAX_STEPS, f"None or an integer in [1, {MAX_STEPS}]"),
)


@dataclass(frozen=True)
class SessionConfig:
    """Everything that defines an episode. Same config + same commands -> identical episode."""

    seed: int = 0
    target_km: float = 1.0
    generator: str = "procedural"
    npc_policy: str = DEFAULT_NPC_POLICY
    planner: str = "idm"
    agent_capacity: int = 128
    observation_radius_m: float = 80.0
    max_steps: int | None = None
    terminate_on_collision: bool = True
    ego_start_speed_mps: float = 6.0
    scenario: str | None = None
    """Start from a log: ``womd:PATH[#INDEX]`` or ``nuplan:DB[#SCENE]`` (None: a generated world)."""
    nuplan_maps_dir: str | None = None
    world: WorldConfig = field(default_factory=WorldConfig)

    def validate(self) -> SessionConfig:
        """Return self, or raise ConfigError naming the first field outside its limits."""
        for name, ok, allowed in _LIMITS:
            value = getattr(self, name)
            if name == "max_steps" and value is None:
                continue
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not (number and math.isfinite(value) and ok(value)):
                raise ConfigError(f"{name} must be {allowed}, got {value!r}", field=name)
        if self.npc_policy == "log-replay" and self.scenario is None:
            raise ConfigError("npc_policy log-replay needs a log to replay: set scenario to womd:PATH or "
                              "nuplan:DB", field="npc_policy")
        return self

    @property
    def step_limit(self) -> int:
        """Default limit: the target distance at an average of 1 m/s (urban driving with junction waits)."""
        return self.max_steps or int(math.ceil(self.target_km * 1000.0 / 1.0 / DT_S))
