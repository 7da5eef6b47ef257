"""Server metrics in the Prometheus text exposition format (version 0.0.4), written by hand.

No prometheus_client dependency: three small thread-safe types (counter, gauge callback, histogram) and a
registry that renders them. Metric names follow Prometheus conventions (base units: seconds).
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Callable, Sequence

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def _labels(names: Sequence[str], values: Sequence[str]) -> str:
    if not names:
        return ""
    escaped = (v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"') for v in values)
    return "{" + ",".join(f'{n}="{v}"' for n, v in zip(names, escaped, strict=True)) + "}"


def _num(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Counter:
    """A monotonically increasing count per label combination."""

    def __init__(self, name: str, help_text: str, label_names: Sequence[str] = ()) -> None:
        self.name, self.help, self.label_names = name, help_text, tuple(label_names)
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()

    def inc(self, *labels: str, amount: float = 1.0) -> None:
        with self._lock:
            self._values[labels] = self._values.get(labels, 0.0) + amount

    def value(self, *labels: str) -> float:
        with self._lock:
            return self._values.get(labels, 0.0)

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        with self._lock:
            items = sorted(self._values.items())
        if not items and not self.label_names:
            items = [((), 0.0)]
        lines += [f"{self.name}{_labels(self.label_names, k)} {_num(v)}" for k, v in items]
        return lines


class Gauge:
    """A value read from a callback at scrape time."""

    def __init__(self, name: str, help_text: str, read: Callable[[], float]) -> None:
        self.name, self.help, self.read = name, help_text, read

    def render(self) -> list[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} gauge", f"{self.name} {_num(self.read())}"]


class Histogram:
    """Cumulative buckets, sum and count (no labels)."""

    def __init__(self, name: str, help_text: str, buckets: Sequence[float] = LATENCY_BUCKETS_S) -> None:
        self.name, self.help = name, help_text
        self.buckets = tuple(sorted(buckets))
        self._counts = [0] * (len(self.buckets) + 1)
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        with self._lock:
            self._counts[bisect.bisect_left(self.buckets, value)] += 1
            self._sum += value

    @property
    def count(self) -> int:
        with self._lock:
            return sum(self._counts)

    @property
    def total(self) -> float:
        """Sum of the observed values."""
        with self._lock:
            return self._sum

    def render(self) -> list[str]:
        with self._lock:
            counts, total = list(self._counts), self._sum
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        running = 0
        for bound, n in zip((*self.buckets, math.inf), counts, strict=True):
            running += n
            lines.append(f'{self.name}_bucket{{le="{_num(bound)}"}} {running}')
        lines += [f"{self.name}_sum {_num(total)}", f"{self.name}_count {running}"]
        return lines


class ServerMetrics:
    """The service's metrics. ``live_sessions`` is read from the session manager at scrape time."""

    def __init__(self, live_sessions: Callable[[], float], engine_queued: Callable[[], float] = lambda: 0.0,
                 engine_running: Callable[[], float] = lambda: 0.0) -> None:
        self.sessions = Gauge("vectorworld_sessions", "Live simulation sessions.", live_sessions)
        self.engine_queued = Gauge("vectorworld_engine_queued", "Engine jobs waiting for a worker.", engine_queued)
        self.engine_running = Gauge("vectorworld_engine_running", "Engine jobs running.", engine_running)
        self.replayed_steps = Counter("vectorworld_replayed_steps_total",
                                      "Step requests answered with the kept reply of a step already applied "
                                      "(a client resent after losing the reply).")
        self.sessions_recovered = Counter("vectorworld_sessions_recovered_total",
                                          "Sessions rebuilt from their journals at start.")
        self.sessions_lost = Counter("vectorworld_sessions_lost_total",
                                     "Journaled sessions that could not be rebuilt at start.")
        self.recovery_snapshots = Counter("vectorworld_recovery_snapshots_total",
                                          "Sessions rebuilt at start from a snapshot (then the journal's later "
                                          "steps).")
        self.recovery_replayed_steps = Counter("vectorworld_recovery_replayed_steps_total",
                                               "Journal steps replayed to rebuild sessions at start.")
        self.sessions_created = Counter("vectorworld_sessions_created_total", "Sessions created.")
        self.sessions_closed = Counter("vectorworld_sessions_closed_total",
                                       "Sessions closed, by reason (client, reaped, shutdown).", ("reason",))
        self.steps = Counter("vectorworld_steps_total", "Simulation steps served (Step and StreamSession).")
        self.step_latency = Histogram("vectorworld_step_latency_seconds",
                                      "Server-side latency of one step: decode, engine step, encode.")
        self.engine_step = Histogram("vectorworld_engine_step_seconds", "Engine time of one step.")
        self.tile_latency = Histogram("vectorworld_tile_latency_seconds", "Wall time of one tile generation.",
                                      (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0))
        self.rpcs = Counter("vectorworld_rpcs_total", "RPCs handled, by method and status code.",
                            ("method", "code"))
        self.errors = Counter("vectorworld_errors_total", "RPCs that ended with an error, by status code.",
                              ("code",))

    def render(self) -> str:
        parts = (self.sessions, self.engine_queued, self.engine_running, self.sessions_created,
                 self.sessions_closed, self.sessions_recovered, self.sessions_lost,
                 self.recovery_snapshots, self.recovery_replayed_steps, self.steps,
                 self.replayed_steps, self.step_latency,
                 self.engine_step, self.tile_latency, self.rpcs, self.errors)
        return "\n".join(line for metric in parts for line in metric.render()) + "\n"
