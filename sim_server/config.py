"""Server configuration: a frozen dataclass with safe defaults (loopback only, no auth, 64 sessions)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from vectorworld.errors import ConfigError
from vectorworld.sim.config import SessionConfig


@dataclass(frozen=True)
class ServerConfig:
    """How the simulator service runs.

    host: interface to bind (``127.0.0.1`` by default: not reachable from other machines).
    port / http_port: gRPC and HTTP side-app ports (0 = any free port; ``http_port=None`` = no side app).
    token: if set, every call must carry ``authorization: Bearer <token>`` (gRPC health checks and the
        HTTP /healthz and /readyz probes are exempt so orchestrators can probe without secrets).
    tls_cert / tls_key: PEM files; both set = TLS on the gRPC port.
    max_sessions: live-session cap (CreateSession beyond it answers RESOURCE_EXHAUSTED).
    idle_timeout_s: sessions without a call for this long are closed by the reaper (s).
    session_defaults: the SessionConfig that unset CreateSession fields take.
    allow_plugin_planners: accept ``module:Class`` planner specs from clients (imports code: off).
    scenario_dir: directory of log files clients may start scenarios from (``SessionConfig.scenario``,
        paths relative to it; anything resolving outside is refused). None: scenarios are refused.
    """

    host: str = "127.0.0.1"
    port: int = 50051
    http_port: int | None = 8080
    token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    max_sessions: int = 64
    idle_timeout_s: float = 600.0
    reap_interval_s: float = 10.0
    max_workers: int = 16
    max_receive_message_bytes: int = 4 * 1024 * 1024
    max_send_message_bytes: int = 64 * 1024 * 1024
    grace_s: float = 10.0
    session_lock_timeout_s: float = 30.0
    list_page_max: int = 1000
    session_defaults: SessionConfig = field(default_factory=SessionConfig)
    allow_plugin_planners: bool = False
    scenario_dir: Path | None = None

    def validate(self) -> ServerConfig:
        """Return self, or raise ConfigError naming the bad option."""
        for name in ("port", "http_port"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 65535:
                raise ConfigError(f"--{name.replace('_', '-')} must be in [0, 65535], got {value}")
        if self.max_sessions < 1:
            raise ConfigError(f"--max-sessions must be >= 1, got {self.max_sessions}")
        if self.max_workers < 1:
            raise ConfigError(f"max_workers must be >= 1, got {self.max_workers}")
        for name in ("idle_timeout_s", "reap_interval_s", "grace_s", "session_lock_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a positive number of seconds, got {value}")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("--tls-cert and --tls-key must be given together")
        for name in ("tls_cert", "tls_key"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ConfigError(f"--{name.replace('_', '-')} {path} does not exist")
        if self.scenario_dir is not None and not Path(self.scenario_dir).is_dir():
            raise ConfigError(f"--scenario-dir {self.scenario_dir} is not a directory")
        if self.token is not None and not self.token.strip():
            raise ConfigError("--token must not be empty")
        return self
