"""Load test of the simulator service on loopback: throughput, step latency, overhead, memory.

Usage::

    python tools/load_test.py                                  # 32 sessions x 500 steps, 1,000 churned
    python tools/load_test.py --sessions 8 --steps 100 --churn 100 --generator test-straight

Phases (all in one process: an in-process server on 127.0.0.1, clients in threads):

1. baseline: one session driven locally (``Session.step``) and the same config over gRPC, sequentially;
   the difference is the per-step cost of the service (encode, transport, decode) without contention.
2. load: N concurrent sessions x M steps with the built-in planner; aggregate steps/s, client-side step
   latency p50/p99, and the server's own engine step time and server-side step latency (histograms).
3. churn: create-and-close K sessions, then the process RSS against the RSS before (leak check).

Bounded: nothing but loopback, fixed step counts, sessions that cannot end early (huge target, collisions
do not terminate). Prints a table and optionally writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim_server.client import SimClient  # noqa: E402
from sim_server.config import ServerConfig  # noqa: E402
from sim_server.server import create_server  # noqa: E402
from vectorworld.sim.session import Session, SessionConfig  # noqa: E402


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


def baseline(target: str, config: SessionConfig, steps: int) -> dict[str, float]:
    """Median ms per step: local engine vs. the same episode over gRPC, one session each, steps
    interleaved (local, served, local, ...) so both see the same machine load."""
    local = Session(config)
    local.reset()
    local_s, served_s = [], []
    with SimClient(target) as client:
        session = client.create_session(seed=config.seed, target_km=config.target_km,
                                        max_steps=config.max_steps, terminate_on_collision=False)
        for _ in range(steps):
            t0 = time.perf_counter()
            local.step()
            t1 = time.perf_counter()
            session.step()
            t2 = time.perf_counter()
            local_s.append(t1 - t0)
            served_s.append(t2 - t1)
        session.close()
    local_ms, served_ms = float(np.median(local_s)) * 1e3, float(np.median(served_s)) * 1e3
    return {"local_ms_per_step": local_ms, "served_ms_per_step": served_ms,
            "overhead_ms_per_step": served_ms - local_ms}


def load(target: str, config: SessionConfig, sessions: int, steps: int) -> dict[str, Any]:
    """N concurrent sessions x M steps; client-side latencies of every step."""
    latencies: list[list[float]] = [[] for _ in range(sessions)]
    errors: list[str] = []
    start = threading.Barrier(sessions + 1)

    def worker(k: int) -> None:
        try:
            with SimClient(target, timeout_s=120.0) as client:
                session = client.create_session(seed=config.seed + k, target_km=config.target_km,
                                                max_steps=config.max_steps, terminate_on_collision=False)
                start.wait()
                for _ in range(steps):
                    t0 = time.perf_counter()
                    session.step()
                    latencies[k].append(time.perf_counter() - t0)
                session.close()
        except Exception as err:  # noqa: BLE001 - reported, not raised, so the other sessions finish
            errors.append(f"session {k}: {type(err).__name__}: {err}")
            if start.n_waiting and not start.broken:
                start.abort()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(sessions)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    flat = np.array([x for per in latencies for x in per]) * 1e3
    return {"sessions": sessions, "steps_per_session": steps, "steps": int(flat.size), "wall_s": wall,
            "steps_per_s": flat.size / wall if wall > 0 else 0.0,
            "latency_ms_p50": float(np.percentile(flat, 50)) if flat.size else float("nan"),
            "latency_ms_p99": float(np.percentile(flat, 99)) if flat.size else float("nan"),
            "errors": errors}


def churn(target: str, config: SessionConfig, count: int, threads: int = 4) -> dict[str, float]:
    """Create and close ``count`` sessions from ``threads`` clients, after a warm-up round of
    ``threads`` x 10 (allocator arenas, gRPC channels); RSS (MiB) and live Python objects before/after."""
    per_thread = count // threads

    def worker(n: int) -> None:
        with SimClient(target) as client:
            for k in range(n):
                client.create_session(seed=k, target_km=config.target_km).close()

    warm = [threading.Thread(target=worker, args=(10,)) for _ in range(threads)]
    for t in warm:
        t.start()
    for t in warm:
        t.join()
    gc.collect()
    before, objects_before = rss_mib(), len(gc.get_objects())
    pool = [threading.Thread(target=worker, args=(per_thread,)) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.perf_counter() - t0
    gc.collect()
    after = rss_mib()
    return {"sessions": per_thread * threads, "rss_before_mib": before, "rss_after_mib": after,
            "rss_growth_mib": after - before, "python_objects_growth": len(gc.get_objects()) - objects_before,
            "sessions_per_s": per_thread * threads / wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--churn", type=int, default=1000)
    parser.add_argument("--baseline-steps", type=int, default=300)
    parser.add_argument("--generator", default="procedural")
    parser.add_argument("--npc", default="idm")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if args.generator == "test-straight":
        import tests.straight_world  # noqa: F401 - registers the test generator
    steps_cap = max(args.steps, args.baseline_steps)
    config = SessionConfig(generator=args.generator, npc_policy=args.npc, target_km=1000.0,
                           max_steps=steps_cap, terminate_on_collision=False)
    server = create_server(ServerConfig(port=0, http_port=None, max_sessions=args.sessions + 8,
                                        max_workers=args.sessions + 4, session_defaults=config))
    target = f"127.0.0.1:{server.port}"
    try:
        figures: dict[str, Any] = {"config": dataclasses.asdict(config) | {"world": None}}
        figures["baseline"] = baseline(target, config, args.baseline_steps)
        engine_before = (server.metrics.engine_step.count, _hist_sum(server))
        figures["load"] = load(target, config, args.sessions, args.steps)
        n = server.metrics.engine_step.count - engine_before[0]
        figures["load"]["engine_ms_per_step"] = (_hist_sum(server) - engine_before[1]) * 1e3 / max(n, 1)
        figures["load"]["server_step_ms_mean"] = _server_step_mean_ms(server)
        figures["load"]["overhead_p50_vs_engine"] = (figures["load"]["latency_ms_p50"]
                                                     / max(figures["load"]["engine_ms_per_step"], 1e-9))
        figures["churn"] = churn(target, config, args.churn)
    finally:
        server.stop(grace_s=2.0)
    _print(figures)
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    return 1 if figures["load"]["errors"] else 0


def _hist_sum(server: Any) -> float:
    return server.metrics.engine_step.total


def _server_step_mean_ms(server: Any) -> float:
    h = server.metrics.step_latency
    return h.total * 1e3 / max(h.count, 1)


def _print(f: dict[str, Any]) -> None:
    b, lo, c = f["baseline"], f["load"], f["churn"]
    print(f"baseline (1 session, sequential, medians): local {b['local_ms_per_step']:.2f} ms/step, served "
          f"{b['served_ms_per_step']:.2f} ms/step, service overhead {b['overhead_ms_per_step']:.2f} ms/step")
    print(f"load ({lo['sessions']} sessions x {lo['steps_per_session']} steps): {lo['steps_per_s']:.0f} steps/s, "
          f"latency p50 {lo['latency_ms_p50']:.1f} ms, p99 {lo['latency_ms_p99']:.1f} ms; engine "
          f"{lo['engine_ms_per_step']:.2f} ms/step, server-side step {lo['server_step_ms_mean']:.2f} ms "
          f"(mean); {len(lo['errors'])} errors")
    print(f"churn ({c['sessions']} sessions created and closed, {c['sessions_per_s']:.0f}/s): RSS "
          f"{c['rss_before_mib']:.0f} -> {c['rss_after_mib']:.0f} MiB ({c['rss_growth_mib']:+.1f} MiB), "
          f"live Python objects {c['python_objects_growth']:+d}")
    for e in lo["errors"][:5]:
        print("  error:", e)


if __name__ == "__main__":
    sys.exit(main())
