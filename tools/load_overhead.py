"""The client side of ``tools/load_test.py``: driving sessions, pairing every step's client latency with the
server child's engine time of that step, and the overhead phase (one session per RPC and encoding, and the
bare-gRPC floor). The phase is described in ``load_test.py``'s docstring.
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
from load_server import FLOOR_METHOD, ServerProcess

from sim_server.client import RemoteSession, SimClient
from vectorworld.sim.config import SessionConfig

WARMUP_STEPS = 10
"""Steps at the start of each overhead run left out of its statistics (stream set-up, first tiles)."""

def load_average() -> float | None:
    """The 1-minute load average (None where unavailable)."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


Encoding = tuple[str, str, str]
"""(lane delivery, agent layout, history delivery) as SimClient.create_session names them: ("delta", "table",
"delta") etc."""
PLAIN: Encoding = ("full", "messages", "full")
"""The encoding of a client that sets none of the options (the server defaults)."""


def encoding_options(encoding: Encoding) -> dict[str, str]:
    return {"lane_delivery": encoding[0], "agent_layout": encoding[1], "history_delivery": encoding[2]}


# --------------------------------------------------------------------------- client side
StepLatencies = list[tuple[int, float, float]]
"""(step index of the observation received, send time, receive time) per step (``time.perf_counter``):
send = the command handed to the client, receive = the typed Observation back."""


def drive(session: RemoteSession, steps: int, rpc: str, deadline: float) -> StepLatencies:
    """Step ``session`` ``steps`` times (built-in planner) over ``rpc`` ("stream" or "unary")."""
    out: StepLatencies = []
    if rpc == "unary":
        for _ in range(steps):
            if time.perf_counter() > deadline:
                break
            t0 = time.perf_counter()
            obs = session.step()
            out.append((obs.step, t0, time.perf_counter()))
        return out
    sent: list[float] = []

    def commands() -> Iterator[None]:
        for _ in range(steps):
            if time.perf_counter() > deadline:
                return
            sent.append(time.perf_counter())
            yield None

    for k, obs in enumerate(session.stream(commands())):
        out.append((obs.step, sent[k], time.perf_counter()))
    return out


def summarise(latencies: dict[str, StepLatencies], times: dict[tuple[str, int], tuple[float, ...]],
              skip: int = 0) -> dict[str, Any]:
    """p50/p99 (ms) of the client latency, the engine time, the server-side handler time and the paired
    overhead (latency - engine of the same step), plus p50s of where the overhead goes: ``request`` (send
    to handler start: client encode, transport, server hand-off), ``server_pre`` (command decode, lookup,
    lock), ``server_post`` (observation encode, metrics), ``response`` (handler end to typed Observation:
    serialization, transport, client hand-off, parse and decode)."""
    cols: dict[str, list[float]] = {name: [] for name in ("client", "engine", "handler", "overhead", "request",
                                                            "server_pre", "server_post", "response")}
    for sid, rows in latencies.items():
        for step, sent, received in rows[skip:]:
            cols["client"].append(received - sent)
            if (sid, step) not in times:
                continue
            engine, handler, engine_end, handler_end = times[(sid, step)]
            handler_start, engine_start = handler_end - handler, engine_end - engine
            cols["engine"].append(engine)
            cols["handler"].append(handler)
            cols["overhead"].append(received - sent - engine)
            cols["request"].append(handler_start - sent)
            cols["server_pre"].append(engine_start - handler_start)
            cols["server_post"].append(handler_end - engine_end)
            cols["response"].append(received - handler_end)
    out: dict[str, Any] = {"steps": len(cols["client"]), "paired": len(cols["overhead"])}
    for name, values in cols.items():
        arr = np.asarray(values, np.float64) * 1e3
        arr = arr[np.isfinite(arr)]
        for q in (50, 99):
            out[f"{name}_ms_p{q}"] = float(np.percentile(arr, q)) if arr.size else float("nan")
    out["server_side_ms_p50"] = out["handler_ms_p50"] - out["engine_ms_p50"]
    return out


def floor_run(server: ServerProcess, steps: int, spin_s: float, reply_bytes: int, deadline: float
              ) -> list[tuple[float, float, float, float]]:
    """The floor: ``steps`` lock-step requests on the bare stream, the same pattern as
    :meth:`RemoteSession.stream` (the next request is made after the previous reply arrived); per step
    (sent, handler start, handler end, received) as ``time.perf_counter`` values, warm-up left out."""
    rows: list[tuple[float, float, float, float]] = []
    turn, finished = threading.Semaphore(1), threading.Event()
    sent: list[float] = []
    request = struct.pack("<dI", spin_s, reply_bytes)

    def requests() -> Iterator[bytes]:
        for _ in range(steps):
            while not turn.acquire(timeout=0.05):
                if finished.is_set():  # the call ended early (server gone): stop the request thread
                    return
            if time.perf_counter() > deadline:
                return
            sent.append(time.perf_counter())
            yield request

    with grpc.insecure_channel(server.target) as channel:
        try:
            for k, reply in enumerate(channel.stream_stream(FLOOR_METHOD)(requests())):
                rows.append((sent[k], *struct.unpack_from("<dd", reply), time.perf_counter()))
                turn.release()
        finally:
            finished.set()
    return rows[min(WARMUP_STEPS, len(rows) // 2):]


def overhead_run(server: ServerProcess, config: SessionConfig, steps: int, rpc: str, encoding: Encoding,
                 time_limit_s: float) -> tuple[dict[str, StepLatencies], dict[tuple[str, int], tuple[float, ...]],
                                               bool]:
    """One session, ``steps`` sequential steps over ``rpc``: its step latencies (warm-up left out), the
    server's step times, and whether it stopped at the time limit."""
    server.step_times()
    with SimClient(server.target, timeout_s=120.0) as client:
        session = client.create_session(seed=config.seed, target_km=config.target_km, max_steps=config.max_steps,
                                        terminate_on_collision=False, **encoding_options(encoding))
        rows = drive(session, steps, rpc, time.perf_counter() + time_limit_s)
        session.close()
    return {session.id: rows[min(WARMUP_STEPS, len(rows) // 2):]}, server.step_times(), len(rows) < steps


def reply_sizes(server: ServerProcess, config: SessionConfig, steps: int, encoding: Encoding) -> dict[str, float]:
    """Serialized StepResponse sizes (bytes) of one session stepped ``steps`` times with the built-in planner
    (warm-up left out): p50, mean and max."""
    from vectorworld.v1 import simulator_service_pb2 as pb

    sizes = []
    with SimClient(server.target, timeout_s=120.0) as client:
        session = client.create_session(seed=config.seed, target_km=config.target_km, max_steps=config.max_steps,
                                        terminate_on_collision=False, **encoding_options(encoding))
        for k in range(steps):
            request = pb.StepRequest(session_id=session.id, expected_step=k)
            request.command.builtin_planner.SetInParent()
            sizes.append(client.stub.Step(request, timeout=client.timeout_s).ByteSize())
        session.close()
    kept = np.asarray(sizes[min(WARMUP_STEPS, len(sizes) // 2):], np.float64)
    return {"reply_bytes_p50": float(np.median(kept)), "reply_bytes_mean": float(kept.mean()),
            "reply_bytes_max": float(kept.max())}


def overhead(server: ServerProcess, config: SessionConfig, steps: int, modes: tuple[Encoding, ...], rounds: int,
             time_limit_s: float, floor_bytes: int = 24_000) -> dict[str, dict[str, Any]]:
    """Per-step latency vs. the engine's own time, for each RPC ("stream", "unary") and observation encoding
    in ``modes``: ``rounds`` sessions each, interleaved (round r runs the modes in reverse order when r is odd)
    so that the modes see the same machine load; the steps of a key's rounds are pooled. Keys: the RPC
    alone for one mode, else "RPC/LANES+AGENTS+HISTORY"; "floor" (``floor_bytes`` > 0): the bare stream, one
    run per round after its stream runs, spinning for their p50 engine time; stream keys then also hold
    ``above_floor_ms_p50``. Every key of a mode also holds its :func:`reply_sizes`."""
    pooled: dict[str, tuple[dict[str, StepLatencies], dict[tuple[str, int], tuple[float, ...]], list[Any]]] = {}
    floor: list[tuple[float, float, float, float]] = []
    floor_loads: list[Any] = []
    for r in range(rounds):
        for rpc in ("stream", "unary"):
            engine: list[float] = []
            for mode in modes if r % 2 == 0 else modes[::-1]:
                latencies, times, timed_out = overhead_run(server, config, steps, rpc, mode, time_limit_s)
                key = rpc if len(modes) == 1 else f"{rpc}/{'+'.join(mode)}"
                entry = pooled.setdefault(key, ({}, {}, [rpc, mode, False, []]))
                entry[0].update(latencies)
                entry[1].update(times)
                entry[2][2] |= timed_out
                entry[2][3].append(load_average())
                engine += [t[0] for t in times.values()]
            if rpc == "stream" and floor_bytes > 0 and engine:
                floor += floor_run(server, steps, float(np.median(engine)), floor_bytes,
                                   time.perf_counter() + time_limit_s)
                floor_loads.append(load_average())
    out = {}
    sizes = {mode: reply_sizes(server, config, min(steps, 200), mode) for mode in modes}
    for key, (latencies, times, (rpc, mode, timed_out, loads)) in pooled.items():
        out[key] = summarise(latencies, times) | {"rpc": rpc, **encoding_options(mode), "rounds": rounds,
                                                  "timed_out": timed_out, "load_average": max(loads)} | sizes[mode]
    if floor:
        sent, start, end, received = (np.asarray(col, np.float64) * 1e3 for col in zip(*floor, strict=True))
        columns = {"client": received - sent, "overhead": received - sent - (end - start), "request": start - sent,
                   "response": received - end}
        out["floor"] = {"rpc": "floor", "rounds": rounds, "steps": len(floor), "reply_bytes": floor_bytes,
                        "spin_ms_p50": float(np.percentile(end - start, 50)), "load_average": max(floor_loads),
                        **{f"{name}_ms_p{q}": float(np.percentile(values, q))
                           for name, values in columns.items() for q in (50, 99)}}
        for figures in out.values():
            if figures["rpc"] == "stream":
                figures["above_floor_ms_p50"] = figures["overhead_ms_p50"] - out["floor"]["overhead_ms_p50"]
    return out
