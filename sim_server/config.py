"""Server configuration: a frozen dataclass with safe defaults (loopback only, no auth, 64 sessions)."""

from __future__ import annotations

import math
import os
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
    max_sessions: live-session cap (CreateSession beyond it answers RESOURCE_EXHAUSTED). Streams waiting
        for their next request cost no thread (asyncio server), so the cap is about memory: a live session
        holds its world, a few MB.
    engine_workers: threads that run engine work (reset, step, observe, encode); every other part of a call
        runs on the event loop. Default :func:`default_engine_workers`: the cores, at most 4. The engine is
        Python + numpy holding the GIL most of the time, so more workers than cores buys nothing, and each
        one more thread waiting for the GIL delays the event loop (health checks): on 2 cores, 4 workers
        measured health Check p99 105-124 ms under 32 active sessions, 2 workers with a 1 ms switch
        interval 54 ms. A slow step holds one worker and the others keep serving.
    engine_saturation_s: the engine pool counts as saturated while a job has waited this long for a worker;
        gRPC health and /readyz then answer NOT_SERVING / 503 (calls are still served).
    engine_nice: engine threads run this many nice levels below the rest of the server (Linux: per thread),
        so the event loop (health checks, idle streams, hand-offs) gets the CPU before engine work.
    gil_switch_interval_s: the interpreter's GIL switch interval while the server runs (``sys.
        setswitchinterval``, process-wide; Python's default is 5 ms; None leaves it alone): an engine thread
        holding the GIL gives it up to the event loop after this long.
    gc_freeze: keep live sessions' objects out of the cyclic garbage collector's full collections
        (``gc.freeze`` after start, recovery, every CreateSession and reaper round; ``sim_server/heap.py``).
        Without it a full collection stops the whole server for ~3 ms per live session (0.57 s at 200
        sessions, measured); with it a pause that long is left only when, after many sessions closed, their
        frozen garbage is thawed and collected. Process-wide (an embedding process's objects are frozen too;
        unfrozen at stop).
    state_dir: where session journals live (``sim_server/journal.py``); None = no journal (sessions end
        with the process). :func:`default_state_dir` is what ``vectorworld serve`` uses by default.
    journal_fsync_s: how often journals are fsync'd (each step is written before its reply either way).
    snapshot_every: a journaled session's state is snapshotted every this many steps (and at step 0), so a
        restart replays at most this many steps per session (``sim_server/snapshots.py``); 0 = never (replay
        from the start).
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
    engine_workers: int = field(default_factory=lambda: default_engine_workers())
    engine_saturation_s: float = 1.0
    engine_nice: int = 5
    gil_switch_interval_s: float | None = 0.001
    gc_freeze: bool = True
    state_dir: Path | None = None
    journal_fsync_s: float = 0.2
    snapshot_every: int = 200
    max_receive_message_bytes: int = 4 * 1024 * 1024
    max_send_message_bytes: int = 64 * 1024 * 1024
    grace_s: float = 10.0
    session_lock_timeout_s: float = 30.0
    list_page_max: int = 1000
    session_defaults: SessionConfig = field(default_factory=SessionConfig)
    allow_plugin_planners: bool = False
    scenario_dir: Path | None = None

    def validate(self) -> ServerConfig:
        """Return self, or raise ConfigError naming the bad field (``ConfigError.field``; the CLI words
        fields as its flags)."""
        for name in ("port", "http_port"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 65535:
                raise ConfigError(f"{name} must be in [0, 65535], got {value}", field=name)
        if self.max_sessions < 1:
            raise ConfigError(f"max_sessions must be >= 1, got {self.max_sessions}", field="max_sessions")
        if not 0 <= self.engine_nice <= 19:
            raise ConfigError(f"engine_nice must be in [0, 19], got {self.engine_nice}", field="engine_nice")
        if self.gil_switch_interval_s is not None and not (math.isfinite(self.gil_switch_interval_s)
                                                           and 1e-5 <= self.gil_switch_interval_s <= 0.1):
            raise ConfigError(f"gil_switch_interval_s must be None or in [1e-5, 0.1] s, got "
                              f"{self.gil_switch_interval_s}", field="gil_switch_interval_s")
        if not 1 <= self.engine_workers <= 256:
            raise ConfigError(f"engine_workers must be in [1, 256], got {self.engine_workers}",
                              field="engine_workers")
        if self.snapshot_every < 0:
            raise ConfigError(f"snapshot_every must be >= 0 steps (0 = no snapshots), got {self.snapshot_every}",
                              field="snapshot_every")
        for name in ("idle_timeout_s", "reap_interval_s", "grace_s", "session_lock_timeout_s",
                     "engine_saturation_s", "journal_fsync_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a positive number of seconds, got {value}", field=name)
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("tls_cert and tls_key must be given together",
                              field="tls_key" if self.tls_key is None else "tls_cert")
        for name in ("tls_cert", "tls_key"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ConfigError(f"{name} {path} does not exist", field=name)
        if self.scenario_dir is not None and not Path(self.scenario_dir).is_dir():
            raise ConfigError(f"scenario_dir {self.scenario_dir} is not a directory", field="scenario_dir")
        if self.token is not None and not self.token.strip():
            raise ConfigError("token must not be empty", field="token")
        return self


def default_engine_workers() -> int:
    """The engine workers ``ServerConfig`` and ``vectorworld serve`` default to: the machine's cores, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


def default_state_dir() -> Path:
    """The per-user state folder of ``vectorworld serve``: ``$XDG_STATE_HOME/vectorworld/sessions``
    (``~/.local/state/vectorworld/sessions`` when XDG_STATE_HOME is unset)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "vectorworld" / "sessions"
