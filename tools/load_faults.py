"""The fault phases of ``tools/load_test.py`` (``--faults``, ``--idle-streams``): the service under real load.

faults: ``--fault-streams`` concurrent streams, of which ``--fault-active`` step continuously (built-in planner,
``--steps`` steps each, Python client) and the rest are idle (one step, then silent; asyncio client). When
the active sessions are half way, the server child is killed with SIGKILL and started again on the same port
and state directory (journals): every client continues by itself (transparent retries, kept replies). Some
active clients (``--fault-vanish``) vanish mid-stream: they send a request and drop their connection without
reading the reply, then a fresh client resends that request (it must get the reply of the step that was
applied, not a second step) and streams on. After the restart every idle stream speaks once more (its session
must have been rebuilt). A prober sends gRPC health Checks every 50 ms throughout.

Figures: per-step client latency (p50/p99), overhead above the engine step of the same step (client latency
minus the server's engine time, p50/p99), errors, sessions recovered / lost, the downtime of the restart,
health Check latency (p50/p99/max outside the restart window, and failures outside it), and whether every
active session ended at exactly ``--steps`` (no step lost or applied twice).

idle: ``--idle-streams`` idle streams (each its own session, one step, then silent); then a new session is
created and stepped: the server must still serve it (its create and step latencies, health latency).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from sim_server.client import SimClient
from vectorworld.sim.config import SessionConfig
from vectorworld.v1 import session_pb2
from vectorworld.v1 import simulator_service_pb2 as pb

METHOD = "/vectorworld.v1.SimulatorService/"
BUILTIN = session_pb2.EgoCommand(builtin_planner=session_pb2.BuiltinPlannerCommand())


def percentiles(values: list[float], prefix: str) -> dict[str, float]:
    arr = np.asarray(values, np.float64)
    arr = arr[np.isfinite(arr)]
    out = {f"{prefix}_p{q}": float(np.percentile(arr, q)) if arr.size else float("nan") for q in (50, 99)}
    out[f"{prefix}_max"] = float(arr.max()) if arr.size else float("nan")
    return out


PROBER = """
import json, os, sys, time
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
target, period, running, deadline = sys.argv[1], float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
samples, channel = [], grpc.insecure_channel(target)
while os.path.exists(running) and time.perf_counter() < deadline:
    t0 = time.perf_counter()
    try:
        health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2.0)
        samples.append((t0, (time.perf_counter() - t0) * 1e3))
    except grpc.RpcError:
        samples.append((t0, None))
        channel.close()  # a fresh channel: no client-side reconnect backoff after a restart
        channel = grpc.insecure_channel(target)
    time.sleep(max(period - (time.perf_counter() - t0), 0.0))
print(json.dumps(samples), flush=True)
"""
"""The prober process: health Check every period until the ``running`` file is gone, then the samples."""


class HealthProber:
    """gRPC health Check every ``period_s`` from a process of its own (so the load test's client threads,
    which share this process's GIL, do not delay the probe): (time, latency ms or None if it failed).
    Times are ``time.perf_counter`` (CLOCK_MONOTONIC on Linux: comparable across processes)."""

    def __init__(self, target: str, period_s: float = 0.05, max_s: float = 3600.0) -> None:
        self.samples: list[tuple[float, float | None]] = []
        self.started = time.perf_counter()
        fd, running = tempfile.mkstemp(prefix="vw-prober-")
        os.close(fd)
        self._running = Path(running)
        self._proc = subprocess.Popen([sys.executable, "-c", PROBER, target, str(period_s), running,
                                       str(time.perf_counter() + max_s)], stdout=subprocess.PIPE, text=True)

    def stop(self, window: tuple[float, float] = (0.0, 0.0), busy_until: float | None = None) -> dict[str, Any]:
        """Figures outside ``window`` (the restart: perf_counter from, to), the failures outside it, and the
        slowest checks outside it (``health_worst``: s since the prober started, ms; inf = failed); with
        ``busy_until`` (perf_counter) also the max and count over 100 ms of the checks before it
        (``health_busy_*``: while the active sessions stepped, not the teardown that closes every session)."""
        self._running.unlink(missing_ok=True)
        out, _ = self._proc.communicate(timeout=60)
        self.samples = [(t, ms) for t, ms in json.loads(out or "[]")]
        outside = [(t, ms) for t, ms in self.samples if not window[0] <= t <= window[1]]
        ok = [ms for _, ms in outside if ms is not None]
        busy = [ms for t, ms in outside if ms is not None and busy_until is not None and t < busy_until]
        if busy_until is not None:
            extra = {"health_busy_ms_max": max(busy, default=float("nan")),
                     "health_busy_over_100ms": sum(ms > 100.0 for ms in busy)}
        else:
            extra = {}
        worst = sorted(((ms if ms is not None else float("inf"), t - self.started) for t, ms in outside), reverse=True)
        return {"checks": len(outside), "failures": sum(ms is None for _, ms in outside),
                "health_over_100ms": sum(ms > 100.0 for ms in ok), **percentiles(ok, "health_ms"),
                "health_worst": [(round(t, 2), round(ms, 1)) for ms, t in worst[:8]], **extra}


class IdleStreams:
    """``count`` idle streams on an asyncio client: each creates its session, steps once, then stays silent
    until :meth:`speak` (one more step each; a stream cut by a restart is reopened) or :meth:`close`."""

    def __init__(self, target: str, count: int, config: SessionConfig) -> None:
        self.target, self.count, self.config = target, count, config
        self.errors: list[str] = []
        self.opened = 0
        self.spoke = 0
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._ids: list[str] = []
        self._queues: list[asyncio.Queue[bytes | None]] = []
        self._calls: list[Any] = []
        asyncio.run_coroutine_threadsafe(self._open(), self.loop).result()

    async def _open(self) -> None:
        self.channel = grpc.aio.insecure_channel(self.target)
        create = self.channel.unary_unary(METHOD + "CreateSession",
                                          request_serializer=pb.CreateSessionRequest.SerializeToString,
                                          response_deserializer=pb.CreateSessionResponse.FromString)
        config = session_pb2.SessionConfig(seed=int(self.config.seed), target_km=self.config.target_km,
                                           max_steps=int(self.config.max_steps or 1000), terminate_on_collision=False)

        async def one(k: int) -> None:
            try:
                config_k = session_pb2.SessionConfig()
                config_k.CopyFrom(config)
                config_k.seed = 1000 + k
                session_id = (await create(pb.CreateSessionRequest(config=config_k), timeout=300)).session_id
                self._ids[k] = session_id
                await self._step(k, 0)
                self.opened += 1
            except grpc.RpcError as err:
                self.errors.append(f"idle {k}: {err.code().name}: {err.details()}")

        self._ids = [""] * self.count
        self._queues = [asyncio.Queue() for _ in range(self.count)]
        self._calls = [None] * self.count
        await asyncio.gather(*(one(k) for k in range(self.count)))

    async def _step(self, k: int, expected: int) -> None:
        if self._calls[k] is None:
            stream = self.channel.stream_stream(METHOD + "StreamSession",
                                                request_serializer=pb.StreamSessionRequest.SerializeToString,
                                                response_deserializer=pb.StreamSessionResponse.FromString)
            queue = self._queues[k] = asyncio.Queue()

            async def requests() -> Any:
                while (item := await queue.get()) is not None:
                    yield item

            self._calls[k] = stream(requests())
        request = pb.StreamSessionRequest(session_id=self._ids[k], expected_step=expected, command=BUILTIN)
        await self._queues[k].put(request)
        reply = await self._calls[k].read()
        if reply is grpc.aio.EOF or reply.step != expected + 1:
            raise RuntimeError(f"idle stream {k}: no reply for step {expected}")

    def speak(self, deadline_s: float = 300.0) -> None:
        """One more step on every idle stream (reopening the ones a restart cut)."""
        async def all_speak() -> None:
            async def one(k: int) -> None:
                if not self._ids[k]:
                    return
                start = time.monotonic()
                while True:
                    try:
                        await self._step(k, 1)
                        self.spoke += 1
                        return
                    except (grpc.RpcError, RuntimeError) as err:
                        self._calls[k] = None  # cut by the restart: a new stream
                        if time.monotonic() - start > deadline_s:
                            self.errors.append(f"idle {k} after the restart: {err}")
                            return
                        await asyncio.sleep(0.5)

            await asyncio.gather(*(one(k) for k in range(self.count)))

        asyncio.run_coroutine_threadsafe(all_speak(), self.loop).result()

    def close(self) -> None:
        async def close_all() -> None:
            for queue in self._queues:
                await queue.put(None)
            close = self.channel.unary_unary(METHOD + "CloseSession",
                                             request_serializer=pb.CloseSessionRequest.SerializeToString,
                                             response_deserializer=pb.CloseSessionResponse.FromString)
            for session_id in self._ids:
                if session_id:
                    try:
                        await close(pb.CloseSessionRequest(session_id=session_id), timeout=60)
                    except grpc.RpcError as err:
                        self.errors.append(f"closing {session_id}: {err.code().name}")
            await self.channel.close()

        asyncio.run_coroutine_threadsafe(close_all(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


def vanish_and_resend(target: str, session_id: str, expected: int) -> int:
    """Send step ``expected`` and drop the connection without reading the reply; then resend it from a fresh
    client. Returns the step of the reply the resend got (``expected + 1`` when exactly once)."""
    request = pb.StepRequest(session_id=session_id, expected_step=expected, command=BUILTIN)
    channel = grpc.insecure_channel(target)
    future = pb_stub(channel).Step.future(request, timeout=60)
    time.sleep(0.001)
    future.cancel()
    channel.close()
    with SimClient(target, timeout_s=60.0) as client:
        return client.stub.Step(request, timeout=60).step


def pb_stub(channel: grpc.Channel) -> Any:
    from sim_server import simulator_service_pb2_grpc

    return simulator_service_pb2_grpc.SimulatorServiceStub(channel)


def faults(make_server: Callable[[int, Path | None], Any], config: SessionConfig, streams: int, active: int,
           steps: int, vanish: int, time_limit_s: float) -> dict[str, Any]:
    """The fault phase (module docstring). ``make_server(port, state_dir)`` starts a server child."""
    state = Path(tempfile.mkdtemp(prefix="vw-load-state-"))
    server = make_server(0, state)
    port, target = server.port, server.target
    prober = HealthProber(target)
    errors: list[str] = []
    rows: dict[str, list[tuple[int, float, float]]] = {}
    times: dict[tuple[str, int], tuple[float, ...]] = {}
    progress = [0] * active
    final_step = [0] * active
    vanished: list[int] = []
    idle = IdleStreams(target, max(streams - active, 0), config)
    deadline = time.perf_counter() + time_limit_s

    def worker(k: int) -> None:
        try:
            with SimClient(target, timeout_s=120.0) as client:  # the client's default reconnect window
                session = client.create_session(seed=config.seed + k, target_km=config.target_km,
                                                max_steps=config.max_steps, terminate_on_collision=False)
                out = rows.setdefault(session.id, [])
                vanish_at = steps // 3 if k < vanish else -1
                while session.step_index < steps and time.perf_counter() < deadline:
                    if session.step_index == vanish_at:
                        vanished.append(vanish_and_resend(target, session.id, session.step_index)
                                        - vanish_at)
                        session.resync()
                        continue
                    sent: list[float] = []

                    def commands(stop_at: int, sent: list[float] = sent) -> Any:
                        while session.step_index < stop_at and time.perf_counter() < deadline:
                            sent.append(time.perf_counter())
                            yield None

                    stop_at = vanish_at if session.step_index < vanish_at else steps
                    for j, obs in enumerate(session.stream(commands(stop_at))):
                        out.append((obs.step, sent[j], time.perf_counter()))
                        progress[k] = obs.step
                final_step[k] = session.step_index
                session.close()
        except Exception as err:  # noqa: BLE001 - reported
            errors.append(f"active {k}: {type(err).__name__}: {err}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(active)]
    t0 = time.perf_counter()
    phases = {"idle_open_s": round(t0 - prober.started, 2)}
    for t in threads:
        t.start()
    restart: dict[str, Any] = {}
    polled = time.perf_counter()
    while any(t.is_alive() for t in threads):
        time.sleep(0.01)
        if not restart and time.perf_counter() - polled > 0.5:
            times.update(server.step_times())
            polled = time.perf_counter()
        if not restart and active and float(np.median(progress)) >= steps / 2:
            times.update(server.step_times())
            killed = time.perf_counter()
            server.kill()
            server = make_server(port, state)
            restart = {"at_step_median": float(np.median(progress)), "window": (killed, time.perf_counter())}
            phases |= {"killed_s": round(killed - prober.started, 2),
                       "restarted_s": round(restart["window"][1] - prober.started, 2)}
            restart["downtime_s"] = restart["window"][1] - killed
            stats_after = server.ask("stats")
            restart |= {k: int(stats_after[k]) for k in ("recovered", "lost", "recovery_snapshots",
                                                         "recovery_replayed_steps")}
            restart["recovery_s"] = float(stats_after["recovery_s"])
    times.update(server.step_times())
    wall = time.perf_counter() - t0
    active_done = time.perf_counter()
    phases["active_done_s"] = round(active_done - prober.started, 2)
    idle.speak()
    idle.close()
    errors += idle.errors
    health = prober.stop(restart.get("window", (0.0, 0.0)), busy_until=active_done)
    stats = server.ask("stats")
    server.close()
    shutil.rmtree(state, ignore_errors=True)
    latency, steady, overhead, steady_overhead = [], [], [], []
    window = restart.get("window", (0.0, 0.0))
    for sid, session_rows in rows.items():
        for step, sent, received in session_rows[10:]:
            latency.append((received - sent) * 1e3)
            calm = received < window[0] or sent > window[1]  # not waiting out the restart
            if calm:
                steady.append((received - sent) * 1e3)
            if (sid, step) in times:
                overhead.append((received - sent - times[(sid, step)][0]) * 1e3)
                if calm:
                    steady_overhead.append(overhead[-1])
    return {"streams": streams, "active": active, "idle": max(streams - active, 0), "steps_per_session": steps,
            "wall_s": wall, "errors": errors, "idle_opened": idle.opened, "idle_spoke_after_restart": idle.spoke,
            "exactly_steps": sum(s == steps for s in final_step), "vanished": len(vanished),
            "vanished_exactly_once": sum(v == 1 for v in vanished), "paired": len(overhead),
            **percentiles(latency, "client_ms"), **percentiles(steady, "client_outside_restart_ms"),
            **percentiles(overhead, "overhead_ms"), **percentiles(steady_overhead, "overhead_outside_restart_ms"),
            "restart": {k: v for k, v in restart.items() if k != "window"}, **health, "phases": phases,
            "replayed_steps": stats["replayed_steps"], "live_sessions_after": stats["live_sessions"]}


def idle_capacity(make_server: Callable[[int, Path | None], Any], config: SessionConfig, count: int
                  ) -> dict[str, Any]:
    """``count`` idle streams, then a new session: created and stepped? (module docstring)."""
    server = make_server(0, None)
    prober = HealthProber(server.target)
    idle = IdleStreams(server.target, count, config)
    figures: dict[str, Any] = {"idle_streams": count, "idle_opened": idle.opened, "errors": list(idle.errors)}
    try:
        with SimClient(server.target, timeout_s=60.0) as client:
            t0 = time.perf_counter()
            session = client.create_session(seed=7, target_km=config.target_km, max_steps=config.max_steps)
            figures["new_session_create_ms"] = (time.perf_counter() - t0) * 1e3
            step_ms = []
            for _ in range(20):
                t1 = time.perf_counter()
                session.step()
                step_ms.append((time.perf_counter() - t1) * 1e3)
            figures |= percentiles(step_ms, "new_session_step_ms")
            figures["new_session_served"] = session.step_index == 20
            session.close()
    except grpc.RpcError as err:
        figures["errors"].append(f"new session: {err.code().name}: {err.details()}")
        figures["new_session_served"] = False
    figures |= prober.stop()
    idle.close()
    figures["live_sessions_after"] = server.ask("stats")["live_sessions"]
    server.close()
    return figures
