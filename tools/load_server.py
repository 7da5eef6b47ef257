"""The server side of ``tools/load_test.py``: the server child process (``load_test.py --serve``) with its
per-step timing and control channel, the bare-gRPC floor handler, and :class:`ServerProcess`, the parent's
handle on that child.
"""

from __future__ import annotations

import argparse
import gc
import json
import queue
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parents[1]
LOAD_TEST = Path(__file__).resolve().with_name("load_test.py")
sys.path.insert(0, str(ROOT))

from vectorworld.sim.config import SessionConfig  # noqa: E402

FLOOR_METHOD = "/vectorworld.loadtest.Floor/Echo"
"""The bare stream of the floor measurement (bytes in and out, no protobuf), served by the server child only."""


def rss_mib() -> float:
    """Resident set size of this process (MiB), from /proc (Linux) or getrusage's peak elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def session_config(args: argparse.Namespace) -> SessionConfig:
    if args.generator == "test-straight":
        import tests.straight_world  # noqa: F401 - registers the test generator
    return SessionConfig(generator=args.generator, npc_policy=args.npc, target_km=1000.0,
                         max_steps=max(args.steps, args.overhead_steps) + 1, terminate_on_collision=False)


# --------------------------------------------------------------------------- the server child
def serve_child(args: argparse.Namespace) -> int:
    """Run the server, record per-step timings, answer control lines on stdin until ``quit`` or EOF."""
    from sim_server.config import ServerConfig
    from sim_server.server import create_server, release_free_memory

    server = create_server(ServerConfig(port=args.port, http_port=None,
                                        max_sessions=max(args.sessions + 8, args.max_sessions),
                                        engine_workers=args.engine_workers, state_dir=args.state_dir,
                                        engine_nice=args.engine_nice, snapshot_every=args.snapshot_every,
                                        gc_freeze=args.gc_freeze,
                                        gil_switch_interval_s=args.gil_switch_ms / 1000.0 if args.gil_switch_ms
                                        else None,
                                        session_defaults=session_config(args)), start=False)
    server.add_generic_rpc_handlers((floor_handler(server.pool),))
    lock = threading.Lock()
    # (session id, step) -> [engine s, handler s, engine end, handler end] (perf_counter, shared clock)
    steps: dict[tuple[str, int], list[float]] = {}
    previous_on_step, step_handler = server.manager.on_step, server.servicer._step

    def on_step(managed: Any, engine_s: float, new_tiles: list[float]) -> None:  # on the engine thread
        if previous_on_step is not None:
            previous_on_step(managed, engine_s, new_tiles)
        with lock:
            steps[(managed.id, managed.session.step_index)] = [engine_s, float("nan"), time.perf_counter(),
                                                               float("nan")]

    async def timed_step(session_id: str, expected_step: int, command: Any, context: Any) -> bytes:
        t0 = time.perf_counter()  # the servicer's step: decode, engine pool, encode (on the event loop)
        reply = await step_handler(session_id, expected_step, command, context)
        end = time.perf_counter()
        with lock:
            row = steps.get((session_id, expected_step + 1))
            if row is not None:
                row[1], row[3] = end - t0, end
        return reply

    server.manager.on_step = on_step
    server.servicer._step = timed_step  # type: ignore[method-assign]
    server.start()
    print(f"@@ {json.dumps({'port': server.port})}", flush=True)
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "engine":
                with lock:
                    rows = [[sid, step, *times] for (sid, step), times in steps.items()]
                    steps.clear()
                reply: dict[str, Any] = {"steps": rows}
            elif command == "stats":
                server.housekeeping()  # the reaper's round (frozen garbage of closed sessions, sim_server/heap.py)
                gc.collect()
                m = server.metrics
                reply = {"rss_mib": rss_mib(), "objects": len(gc.get_objects()) + gc.get_freeze_count(),
                         "live_sessions": len(server.manager), "recovered": m.sessions_recovered.value(),
                         "lost": m.sessions_lost.value(), "replayed_steps": m.replayed_steps.value(),
                         "recovery_s": server.recovery_s, "recovery_snapshots": m.recovery_snapshots.value(),
                         "recovery_replayed_steps": m.recovery_replayed_steps.value(),
                         "engine_step_s_total": m.engine_step.total, "engine_steps": m.engine_step.count}
                reply["rss_trimmed_mib"] = rss_mib() if release_free_memory() else None
            elif command == "quit":
                break
            else:
                reply = {"error": f"unknown command {command!r}"}
            print(f"@@ {json.dumps(reply)}", flush=True)
    finally:
        server.stop(grace_s=2.0)
    return 0


def floor_handler(pool: Any) -> grpc.GenericRpcHandler:
    """The floor's bare lock-step stream: each request (spin s as a little-endian double, reply size as a
    uint32) is answered after spinning that long on an engine-pool thread, holding the GIL as an engine step
    does (the same hand-off from the event loop as a real step), with that many bytes, the first 16 the
    spin's start and end (``time.perf_counter``, doubles)."""
    def spin(spin_s: float) -> tuple[float, float]:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < spin_s:
            pass
        return t0, time.perf_counter()

    async def echo(requests: Any, _context: Any) -> Any:
        async for request in requests:
            spin_s, size = struct.unpack("<dI", request)
            t0, t1 = await pool.run(lambda s=spin_s: spin(s))
            yield struct.pack("<dd", t0, t1) + bytes(max(size - 16, 0))

    service, method = FLOOR_METHOD.strip("/").split("/")
    return grpc.method_handlers_generic_handler(service, {
        method: grpc.stream_stream_rpc_method_handler(echo, request_deserializer=None, response_serializer=None)})


class ServerProcess:
    """The server child and its control channel (one request line, one ``@@ {json}`` answer line)."""

    def __init__(self, args: argparse.Namespace, timeout_s: float = 120.0, port: int = 0,
                 state_dir: Path | None = None) -> None:
        command = [sys.executable, str(LOAD_TEST), "--serve", "--generator", args.generator,
                   "--npc", args.npc, "--sessions", str(args.sessions), "--steps", str(args.steps),
                   "--overhead-steps", str(args.overhead_steps), "--engine-workers", str(args.engine_workers),
                   "--max-sessions", str(args.max_sessions), "--port", str(port),
                   "--engine-nice", str(args.engine_nice), "--snapshot-every", str(args.snapshot_every),
                   "--gil-switch-ms", str(args.gil_switch_ms)] + ([] if args.gc_freeze else ["--no-gc-freeze"])
        if state_dir is not None:
            command += ["--state-dir", str(state_dir)]
        self.proc = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.timeout_s = timeout_s
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.port = int(self._answer()["port"])
        self.target = f"127.0.0.1:{self.port}"

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("@@ "):
                self._lines.put(line[3:])
        self._lines.put(None)

    def _answer(self) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=self.timeout_s)
        except queue.Empty:
            line = None
        if line is None:
            raise RuntimeError(f"the server child did not answer (exit code {self.proc.poll()})")
        return json.loads(line)

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def step_times(self) -> dict[tuple[str, int], tuple[float, ...]]:
        """(session id, step) -> (engine s, server-side handler s, engine end, handler end) of the steps
        since the last call; the ends are ``time.perf_counter()`` values (CLOCK_MONOTONIC on Linux, the
        same clock in both processes)."""
        return {(sid, step): tuple(times) for sid, step, *times in self.ask("engine")["steps"]}

    def kill(self) -> None:
        """SIGKILL, no shutdown at all (the fault phase's crash)."""
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=30.0)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
