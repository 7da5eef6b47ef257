"""Load test of the simulator service on loopback: per-step service overhead, throughput, memory.

Usage::

    python tools/load_test.py                        # 300-step overhead runs, 32 x 500 load, 1,000 churned
    python tools/load_test.py --sessions 8 --steps 100 --churn 100 --generator test-straight
    python tools/load_test.py --compare --rounds 3 --skip-load    # plain vs compact encoding, interleaved
    python tools/load_test.py --compare-history --rounds 3 --skip-load   # compact, full vs delta histories

The server runs in a child process (this script with ``--serve``), so client and server do not share a
GIL. The child records, for every step, the engine time (``SessionManager.on_step``: ``Session.step``
including building the observation) and the server-side handler time (command decode, engine step,
observation encode), and answers ``engine`` / ``stats`` / ``quit`` lines on its stdin.

Phases:

1. overhead: one session over StreamSession (lock-step, one request per step), then one over unary Step,
   per observation encoding (``--lanes`` delta/full, ``--agents`` table/messages, ``--history`` full/delta; by
   default delta lanes, an agent table and full histories, as the Python client; ``--compare`` alternates
   them with the plain encoding, full lanes, agent messages and full histories, ``--compare-history`` runs
   the chosen lanes and agents with full and with delta histories; over ``--rounds`` rounds so all see the
   same machine load). Per step: the
   client-observed latency (command handed to the client -> typed Observation back), the engine time of
   that same step on the server, and their difference: what the service adds (command encode/decode,
   observation encode, transport, client decode). p50/p99 of each, first steps skipped.
   In each round, after the stream runs, the *floor*: a bare lock-step gRPC stream on the same server
   (same thread pool and options, same client pattern) whose handler spins, holding the GIL, for the
   round's p50 engine time and answers ``--floor-bytes`` opaque bytes. Its overhead (latency - spin) is
   what gRPC and the machine cost with no protobuf, no session and no engine; "above floor" = a stream
   run's overhead p50 - the floor's p50 (encode, decode and session bookkeeping). Last, per encoding, the
   serialized size of the Step replies of one more session (``reply_bytes_p50`` / ``_mean``; same seed
   and steps as the timed sessions, built-in planner), outside the timed runs.
2. load: N concurrent sessions x M steps (StreamSession, or Step with ``--load-rpc unary``), one client
   thread each: steps/s, client latency, engine time and paired overhead p50/p99; no errors and no live
   session afterwards (leak check).
3. churn: create-and-close K sessions; the server's RSS (after gc and glibc ``malloc_trim``, so memory the
   allocator merely keeps for reuse does not count; the untrimmed figure is reported too) and live Python
   objects before and after.

Files: this script (the load and churn phases, the command line), ``load_overhead.py`` (driving sessions,
pairing step times, the overhead phase), ``load_server.py`` (the server child), ``load_faults.py`` (the fault
and idle phases).

Bounded: loopback only, fixed counts, sessions that cannot end early (huge target, collisions do not
terminate), and a wall-clock limit per phase after which workers stop early (``timed_out``).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))  # load_server, load_overhead, load_faults

from load_overhead import (  # noqa: E402
    PLAIN,
    Encoding,
    StepLatencies,
    drive,
    encoding_options,
    load_average,
    overhead,
    summarise,
)
from load_server import ServerProcess, serve_child, session_config  # noqa: E402

from sim_server.client import SimClient  # noqa: E402
from sim_server.config import default_engine_workers  # noqa: E402
from vectorworld.sim.config import SessionConfig  # noqa: E402


def _uptime() -> str:
    """``/proc/loadavg`` (1, 5, 15-minute load averages, runnable/total tasks), or "?" where unavailable."""
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "?"


def load(server: ServerProcess, config: SessionConfig, sessions: int, steps: int, rpc: str,
         time_limit_s: float, encoding: Encoding = ("delta", "table", "full")) -> dict[str, Any]:
    """N concurrent sessions x M steps; every step's client latency paired with its engine time."""
    latencies: dict[str, StepLatencies] = {}
    errors: list[str] = []
    start = threading.Barrier(sessions + 1)
    deadline = [float("inf")]

    def worker(k: int) -> None:
        try:
            with SimClient(server.target, timeout_s=max(120.0, time_limit_s)) as client:
                session = client.create_session(seed=config.seed + k, target_km=config.target_km,
                                                max_steps=config.max_steps, terminate_on_collision=False,
                                                **encoding_options(encoding))
                start.wait()
                latencies[session.id] = drive(session, steps, rpc, deadline[0])
                session.close()
        except Exception as err:  # noqa: BLE001 - reported, not raised, so the other sessions finish
            errors.append(f"session {k}: {type(err).__name__}: {err}")
            if not start.broken:
                start.abort()

    server.step_times()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(sessions)]
    for t in threads:
        t.start()
    try:
        start.wait()
    except threading.BrokenBarrierError:
        pass
    t0 = time.perf_counter()
    deadline[0] = t0 + time_limit_s
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    figures = summarise(latencies, server.step_times())
    live = server.ask("stats")["live_sessions"]
    if live:
        errors.append(f"{live} sessions still live after every client closed its own (leak)")
    return figures | {"rpc": rpc, **encoding_options(encoding), "sessions": sessions,
                      "steps_per_session": steps, "wall_s": wall,
                      "steps_per_s": figures["steps"] / wall if wall > 0 else 0.0,
                      "timed_out": figures["steps"] < sessions * steps and not errors,
                      "live_sessions_after": live, "errors": errors, "load_average": load_average()}


def churn(server: ServerProcess, config: SessionConfig, count: int, threads: int = 4) -> dict[str, Any]:
    """Create and close ``count`` sessions from ``threads`` clients after a warm-up round of ``threads`` x
    10 (allocator arenas, gRPC channels); the server's RSS (MiB) and live Python objects before/after."""
    per_thread = count // threads

    def worker(n: int) -> None:
        with SimClient(server.target) as client:
            for k in range(n):
                client.create_session(seed=k, target_km=config.target_km).close()

    def run(n: int) -> float:
        pool = [threading.Thread(target=worker, args=(n,)) for _ in range(threads)]
        t0 = time.perf_counter()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        return time.perf_counter() - t0

    run(10)
    before = server.ask("stats")
    wall = run(per_thread)
    after = server.ask("stats")
    # RSS after gc and malloc_trim: memory the allocator keeps for reuse (per-thread arenas) is not a leak
    rss_before, rss_after = (s["rss_trimmed_mib"] or s["rss_mib"] for s in (before, after))
    return {"sessions": per_thread * threads, "rss_before_mib": rss_before, "rss_after_mib": rss_after,
            "rss_growth_mib": rss_after - rss_before, "rss_after_untrimmed_mib": after["rss_mib"],
            "python_objects_growth": after["objects"] - before["objects"],
            "live_sessions_after": after["live_sessions"], "sessions_per_s": per_thread * threads / wall,
            "load_average": load_average()}


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--churn", type=int, default=1000)
    parser.add_argument("--overhead-steps", "--baseline-steps", dest="overhead_steps", type=int, default=300)
    parser.add_argument("--load-rpc", choices=("stream", "unary"), default="stream")
    parser.add_argument("--lanes", choices=("delta", "full"), default="delta", help="lane delivery")
    parser.add_argument("--agents", choices=("table", "messages"), default="table", help="agent layout")
    parser.add_argument("--history", choices=("full", "delta"), default="full",
                        help="agent history delivery (delta needs --agents table)")
    parser.add_argument("--compare", action="store_true",
                        help="overhead runs also with full lanes + agent messages + full histories (the plain "
                             "encoding), interleaved")
    parser.add_argument("--compare-history", action="store_true",
                        help="overhead runs with full and with delta histories (the chosen lanes and agents), "
                             "interleaved")
    parser.add_argument("--rounds", type=int, default=1, help="overhead sessions per RPC and encoding")
    parser.add_argument("--skip-load", action="store_true", help="overhead phase only (no load, no churn)")
    parser.add_argument("--floor-bytes", type=int, default=24_000,
                        help="reply size of the bare-gRPC floor run (a procedural observation with delta lanes + "
                             "agent table is ~22 KB with full histories, ~7 KB with delta histories); 0: no floor run")
    parser.add_argument("--time-limit-s", type=float, default=600.0, help="per phase; workers stop after it")
    parser.add_argument("--generator", default="procedural")
    parser.add_argument("--npc", default="idm")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    parser.add_argument("--faults", action="store_true",
                        help="the fault phase (tools/load_faults.py): --fault-streams streams, --fault-active of "
                             "them stepping --steps steps, a kill -9 and restart half way, vanishing clients")
    parser.add_argument("--fault-streams", type=int, default=200)
    parser.add_argument("--fault-active", type=int, default=32)
    parser.add_argument("--fault-vanish", type=int, default=4, help="active clients that vanish mid-stream once")
    parser.add_argument("--idle-streams", type=int, default=0,
                        help="the idle phase: this many idle streams, then a new session must still be served")
    parser.add_argument("--skip-overhead", action="store_true", help="no overhead phase")
    parser.add_argument("--engine-workers", type=int, default=default_engine_workers(),
                        help="the server's --engine-workers (default: its default, the cores, at most 4)")
    parser.add_argument("--engine-nice", type=int, default=5, help="the server's ServerConfig.engine_nice")
    parser.add_argument("--snapshot-every", type=int, default=200,
                        help="the server's --snapshot-every (0: recovery replays whole journals)")
    parser.add_argument("--gil-switch-ms", type=float, default=1.0,
                        help="the server's ServerConfig.gil_switch_interval_s in ms (0: Python's default, 5 ms)")
    parser.add_argument("--no-gc-freeze", dest="gc_freeze", action="store_false",
                        help="the server's ServerConfig.gc_freeze off (full GC collections walk every session)")
    parser.add_argument("--max-sessions", type=int, default=64, help="the server's --max-sessions (at least "
                                                                      "--sessions + 8)")
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)  # the server child's
    parser.add_argument("--state-dir", type=Path, default=None, help=argparse.SUPPRESS)  # the server child's
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the server child
    args = parser.parse_args(argv)
    if args.serve:
        return serve_child(args)
    if (args.history == "delta" or args.compare_history) and args.agents != "table":
        parser.error("delta histories (--history delta, --compare-history) need --agents table")
    chosen: Encoding = (args.lanes, args.agents, args.history)
    candidates = [PLAIN] if args.compare else []
    candidates += [(args.lanes, args.agents, "full"), (args.lanes, args.agents, "delta")] if args.compare_history \
        else []
    modes = tuple(dict.fromkeys([*candidates, chosen]))
    config = session_config(args)
    args.max_sessions = max(args.max_sessions, args.sessions + 8, args.fault_streams + 8 if args.faults else 0,
                            args.idle_streams + 8)
    figures: dict[str, Any] = {"config": {"generator": config.generator, "npc_policy": config.npc_policy,
                                          "engine_workers": args.engine_workers}}
    if not (args.skip_overhead and args.skip_load):
        server = ServerProcess(args)
        try:
            if not args.skip_overhead:
                figures["overhead"] = overhead(server, config, args.overhead_steps, modes, max(args.rounds, 1),
                                               args.time_limit_s, args.floor_bytes)
            if not args.skip_load:
                figures["load"] = load(server, config, args.sessions, args.steps, args.load_rpc,
                                       args.time_limit_s, chosen)
                figures["churn"] = churn(server, config, args.churn)
        finally:
            server.close()
    from load_faults import faults, idle_capacity

    def make_server(port: int, state_dir: Path | None) -> ServerProcess:
        return ServerProcess(args, port=port, state_dir=state_dir)

    if args.faults:
        figures["faults"] = faults(make_server, config, args.fault_streams, args.fault_active, args.steps,
                                   args.fault_vanish, args.time_limit_s)
    if args.idle_streams:
        figures["idle"] = idle_capacity(make_server, config, args.idle_streams)
    _print(figures)
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    failed = "load" in figures and (figures["load"]["errors"] or figures["churn"]["live_sessions_after"])
    failed = failed or any(figures[k]["errors"] or figures[k]["live_sessions_after"] for k in ("faults", "idle")
                           if k in figures)
    return 1 if failed else 0


def _print(f: dict[str, Any]) -> None:
    def row(name: str, d: dict[str, Any]) -> str:
        return (f"{name}: client {d['client_ms_p50']:.2f}/{d['client_ms_p99']:.2f} ms, engine "
                f"{d['engine_ms_p50']:.2f}/{d['engine_ms_p99']:.2f} ms, overhead {d['overhead_ms_p50']:.2f}/"
                f"{d['overhead_ms_p99']:.2f} ms (p50/p99; p50 of request {d['request_ms_p50']:.2f}, server pre "
                f"{d['server_pre_ms_p50']:.2f} / post {d['server_post_ms_p50']:.2f}, response "
                f"{d['response_ms_p50']:.2f} ms; {d['paired']} steps; load avg {d['load_average']})")

    print(f"uptime: {_uptime()}")
    _print_faults(f)
    for d in f.get("overhead", {}).values():
        if d["rpc"] == "floor":
            print(f"floor, {d['rounds']} x bare lock-step gRPC stream (spin {d['spin_ms_p50']:.2f} ms, "
                  f"{d['reply_bytes']} B replies): overhead {d['overhead_ms_p50']:.2f}/{d['overhead_ms_p99']:.2f} ms "
                  f"(p50/p99; p50 of request {d['request_ms_p50']:.2f}, response {d['response_ms_p50']:.2f} ms; "
                  f"{d['steps']} steps; load avg {d['load_average']})")
            continue
        above = f"; above floor {d['above_floor_ms_p50']:.2f} ms p50" if "above_floor_ms_p50" in d else ""
        print(row(f"overhead, {d['rounds']} x 1 session, {d['rpc']}, {d['lane_delivery']} lanes, "
                  f"{d['agent_layout']} agents, {d['history_delivery']} histories", d) + above
              + f"; replies {d['reply_bytes_p50'] / 1e3:.1f} KB p50")
    if "load" not in f:
        return
    lo, c = f["load"], f["churn"]
    print(row(f"load {lo['sessions']} x {lo['steps_per_session']} ({lo['rpc']}, {lo['lane_delivery']} lanes, "
              f"{lo['agent_layout']} agents, {lo['history_delivery']} histories), "
              f"{lo['steps_per_s']:.0f} steps/s",
              lo) + f"; {len(lo['errors'])} errors, {lo['live_sessions_after']} sessions left")
    print(f"churn ({c['sessions']} sessions created and closed, {c['sessions_per_s']:.0f}/s): server RSS "
          f"{c['rss_before_mib']:.0f} -> {c['rss_after_mib']:.0f} MiB ({c['rss_growth_mib']:+.1f} MiB; untrimmed "
          f"{c['rss_after_untrimmed_mib']:.0f} MiB), "
          f"live Python objects {c['python_objects_growth']:+d}")
    for e in lo["errors"][:5]:
        print("  error:", e)


def _print_faults(f: dict[str, Any]) -> None:
    if "faults" in f:
        d, r = f["faults"], f["faults"]["restart"]
        print(f"faults: {d['streams']} streams ({d['active']} active x {d['steps_per_session']} steps, {d['idle']} "
              f"idle), kill -9 + restart at step ~{r.get('at_step_median', float('nan')):.0f} (down "
              f"{r.get('downtime_s', float('nan')):.1f} s, recovery {r.get('recovery_s', float('nan')):.1f} s; "
              f"recovered {r.get('recovered')} ({r.get('recovery_snapshots')} from snapshots, "
              f"{r.get('recovery_replayed_steps')} steps replayed), lost {r.get('lost')}): "
              f"{len(d['errors'])} errors; client {d['client_ms_p50']:.2f}/{d['client_ms_p99']:.2f} ms (p99 outside "
              f"the restart {d['client_outside_restart_ms_p99']:.2f}), overhead "
              f"above the engine step {d['overhead_ms_p50']:.2f}/{d['overhead_ms_p99']:.2f} ms (p50/p99, "
              f"{d['paired']} steps; outside the restart {d['overhead_outside_restart_ms_p50']:.2f}/"
              f"{d['overhead_outside_restart_ms_p99']:.2f}); health {d['health_ms_p50']:.1f}/{d['health_ms_p99']:.1f}/"
              f"{d['health_ms_max']:.1f} ms (p50/p99/max, {d['checks']} checks outside the restart, "
              f"{d['failures']} failed, {d.get('health_over_100ms')} over 100 ms; while the active sessions "
              f"stepped: max {d.get('health_busy_ms_max', float('nan')):.1f} ms, "
              f"{d.get('health_busy_over_100ms')} over 100 ms); "
              f"{d['exactly_steps']}/{d['active']} sessions ended at exactly "
              f"{d['steps_per_session']} steps; {d['vanished_exactly_once']}/{d['vanished']} vanished clients' "
              f"resends answered exactly once; {d['idle_spoke_after_restart']}/{d['idle_opened']} idle sessions "
              f"stepped after the restart; {d['replayed_steps']} kept replies served; {d['wall_s']:.0f} s")
        for e in d["errors"][:5]:
            print("  error:", e)
    if "idle" in f:
        d, nan = f["idle"], float("nan")
        print(f"idle: {d['idle_opened']}/{d['idle_streams']} idle streams open; new session served: "
              f"{d['new_session_served']} (create {d.get('new_session_create_ms', nan):.0f} ms, step "
              f"{d.get('new_session_step_ms_p50', nan):.1f}/{d.get('new_session_step_ms_p99', nan):.1f}"
              f" ms p50/p99); health {d['health_ms_p50']:.1f}/{d['health_ms_p99']:.1f}/{d['health_ms_max']:.1f} ms "
              f"(p50/p99/max, {d['failures']} failed); {len(d['errors'])} errors")
        for e in d["errors"][:5]:
            print("  error:", e)


if __name__ == "__main__":
    sys.exit(main())
