"""Build and run the simulator service: ``create_server`` (in-process, tests bind port 0) and ``serve``.

The gRPC server (``grpc.aio``, on its own event loop thread) carries SimulatorService, gRPC health checking
(``grpc.health.v1``, service names "" and "vectorworld.v1.SimulatorService") and server reflection; engine
work runs on a bounded :class:`~sim_server.engine_pool.EnginePool` (``engine_workers`` threads), so a
stream waiting for its next request costs no thread and a slow step holds one worker only. The FastAPI
side app runs in the same process on its own port (uvicorn in a thread).

Health: SERVING while started, not draining and the engine pool not saturated (a job waited more than
``engine_saturation_s``), else NOT_SERVING; ``/readyz`` follows the same rule. Checked every 50 ms.

Durability: with ``state_dir`` every session is journaled (``sim_server/journal.py``); :meth:`SimServer.start`
first rebuilds the sessions an earlier run left (``sim_server/recovery.py``; calls on them answer
UNAVAILABLE meanwhile, health says NOT_SERVING), then reports SERVING.

Graceful shutdown (:meth:`SimServer.stop`, and SIGTERM/SIGINT under :func:`serve`): health flips to
NOT_SERVING and /readyz to 503, new sessions are refused, then the server lets calls in flight finish (up
to ``grace``, steps included) and refuses new calls; after that every session ends (journaled sessions
keep their journals: the next start rebuilds them) and the side app stops.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import Coroutine, Sequence
from concurrent.futures import as_completed
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from sim_server.auth import BearerTokenInterceptor
from sim_server.config import ServerConfig
from sim_server.engine_pool import EnginePool
from sim_server.heap import HeapFreezer
from sim_server.journal import JournalStore
from sim_server.metrics import ServerMetrics
from sim_server.recovery import lost_from_earlier_runs, recover_one
from sim_server.service import SERVICE_NAME, SimulatorServicer, method_handlers
from sim_server.sessions import SessionFactory, SessionManager
from vectorworld.sim.session import Session

log = logging.getLogger(__name__)
T = TypeVar("T")
HEALTH_PERIOD_S = 0.05
SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


class SimServer:
    """A running gRPC server (and side app) with its session manager; stop it with :meth:`stop`.

    The public methods are synchronous and may be called from any thread but the server's own loop."""

    def __init__(self, config: ServerConfig, factory: SessionFactory = Session) -> None:
        self.config = config.validate()
        self.factory = factory
        self.journals = None if config.state_dir is None else JournalStore(Path(config.state_dir),
                                                                             config.journal_fsync_s,
                                                                             config.snapshot_every)
        self.pool = EnginePool(config.engine_workers, config.engine_saturation_s, nice=config.engine_nice)
        self.heap = HeapFreezer(config.gc_freeze)
        self.manager = SessionManager(config.max_sessions, config.idle_timeout_s,
                                      config.session_lock_timeout_s, factory, on_step=self._on_step,
                                      on_reaped=lambda ids: self.metrics.sessions_closed.inc(
                                          "reaped", amount=len(ids)), journals=self.journals)
        self.metrics = ServerMetrics(live_sessions=lambda: float(len(self.manager)),
                                     engine_queued=lambda: float(self.pool.queued),
                                     engine_running=lambda: float(self.pool.running))
        self.servicer = SimulatorServicer(self.manager, config, self.metrics, self.pool, self.heap)
        self._started = threading.Event()
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._serving_status: int | None = None
        self._monitor: asyncio.Task[None] | None = None
        self.http_port: int | None = None
        self._closed_at_release = 0.0
        self.recovery_s = 0.0
        """How long rebuilding the journaled sessions took at start (s)."""
        self._http_server = None
        self._http_thread: threading.Thread | None = None
        self.loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self.loop.run_forever, name="vectorworld-grpc", daemon=True)
        self._loop_thread.start()
        try:
            self.port = self._run(self._build())
        except BaseException:
            self._end_loop()
            self.pool.shutdown()
            raise

    async def _build(self) -> int:
        config = self.config
        interceptors = []
        if config.token is not None:
            interceptors.append(BearerTokenInterceptor(
                config.token, on_reject=lambda m: self.metrics.errors.inc("UNAUTHENTICATED")))
        options = [("grpc.max_receive_message_length", config.max_receive_message_bytes),
                   ("grpc.max_send_message_length", config.max_send_message_bytes),
                   ("grpc.so_reuseport", 0)]
        self.server = grpc.aio.server(interceptors=interceptors, options=options)
        handlers = method_handlers(self.servicer)
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME),
                                            self.server)
        address = f"{_host_for_grpc(config.host)}:{config.port}"
        _probe_port(config.host, config.port)  # a busy port: one clear line (gRPC core would log its own)
        try:
            if config.tls_cert is not None and config.tls_key is not None:
                credentials = grpc.ssl_server_credentials(
                    [(Path(config.tls_key).read_bytes(), Path(config.tls_cert).read_bytes())])
                port = self.server.add_secure_port(address, credentials)
            else:
                port = self.server.add_insecure_port(address)
        except RuntimeError as err:  # grpc.aio: "Failed to bind to address ..."
            raise OSError(f"cannot bind the gRPC port {address} (in use?)") from err
        if port == 0:
            raise OSError(f"cannot bind the gRPC port {address} (in use?)")
        return port

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        """Serve more (asyncio) handlers; only before :meth:`start` (the load test's floor stream)."""
        self._run(self._add_handlers(handlers))

    async def _add_handlers(self, handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        self.server.add_generic_rpc_handlers(tuple(handlers))

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> SimServer:
        """Start serving (gRPC, side app, reaper), rebuild journaled sessions, then report SERVING."""
        try:
            return self._start()
        except BaseException:
            self.stop(grace_s=0.0)
            raise

    def _start(self) -> SimServer:
        if self.config.gil_switch_interval_s is not None:
            sys.setswitchinterval(self.config.gil_switch_interval_s)
        pending = self._pending_recovery()  # marked before the port opens: never NOT_FOUND for them
        self._run(self.server.start())
        for name in ("", SERVICE_NAME):
            self._run(self.health.set(name, NOT_SERVING))
        if self.config.http_port is not None:
            self._start_http()
        self._recover(pending)
        self.heap.settle()  # the imports and the rebuilt sessions: never walked by a collection again
        if self.journals is not None:
            self.journals.start()
        self.manager.start_reaper(self.config.reap_interval_s, on_tick=self.housekeeping)
        self._started.set()
        self._monitor = self._run(self._start_monitor())
        log.info("vectorworld serving gRPC on %s:%d%s (%d engine workers%s)", self.config.host, self.port,
                 f", HTTP on {self.http_port}" if self.http_port else "", self.config.engine_workers,
                 f", journals in {self.config.state_dir}" if self.journals else ", no journal")
        return self

    def stop(self, grace_s: float | None = None) -> None:
        """Graceful shutdown: NOT_SERVING, drain, finish calls in flight (up to ``grace_s``), end all."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            self._started.clear()
            self.manager.drain()
            grace = self.config.grace_s if grace_s is None else grace_s
            self._run(self._astop(grace))
            ended = self.manager.shutdown()
            if ended:
                self.metrics.sessions_closed.inc("shutdown", amount=ended)
            self.pool.shutdown()
            if self._http_server is not None:
                self._http_server.should_exit = True
                if self._http_thread is not None:
                    self._http_thread.join(timeout=5.0)
            self._end_loop()
            self.heap.release()
            self._stopped.set()

    async def _astop(self, grace: float) -> None:
        if self._monitor is not None:
            self._monitor.cancel()
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until :meth:`stop` has finished (True) or the timeout passed (False)."""
        return self._stopped.wait(timeout_s)

    @property
    def ready(self) -> bool:
        """Started, not draining, engine pool not saturated (what health and /readyz report)."""
        return self._started.is_set() and not self.manager.draining and not self.pool.saturated()

    def health_status(self, service: str = "") -> int:
        """The gRPC health status the server reports for ``service`` (health_pb2 enum value)."""
        request = health_pb2.HealthCheckRequest(service=service)
        return self._run(self.health.Check(request, None)).status

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop(grace_s=1.0)

    # ----------------------------------------------------------------- internals
    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def _end_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._loop_thread.join(timeout=10.0)
        if not self._loop_thread.is_alive():
            self.loop.close()

    async def _start_monitor(self) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(self._watch_health())

    async def _watch_health(self) -> None:
        """Health follows :attr:`ready` (saturation comes and goes with load)."""
        while True:
            status = SERVING if self.ready else NOT_SERVING
            if status != self._serving_status:
                self._serving_status = status
                for name in ("", SERVICE_NAME):
                    await self.health.set(name, status)
                if status == NOT_SERVING and self._started.is_set():
                    log.warning("engine pool saturated (a job waited > %.2f s): health NOT_SERVING",
                                self.config.engine_saturation_s)
            await asyncio.sleep(HEALTH_PERIOD_S)

    def _pending_recovery(self) -> list[Path]:
        """The journals of an earlier run, their sessions marked as being rebuilt (calls on them answer
        UNAVAILABLE ``vw-recovering`` until they are); the earlier runs' lost sessions, marked lost."""
        if self.journals is None:
            return []
        for session_id, reason in lost_from_earlier_runs(self.journals).items():
            self.manager.end_recovery(session_id, None, reason)
        self.journals.remove_orphan_snapshots()
        paths = self.journals.pending()
        for path in paths:
            self.manager.begin_recovery(path.stem)
        return paths

    def _recover(self, paths: list[Path]) -> None:
        """Rebuild the sessions of ``paths`` (in parallel on the engine pool), each published when done."""
        if self.journals is None:
            return
        t0 = time.perf_counter()
        futures = {self.pool.submit(recover_one, path, self.journals, self.factory, self.manager.clock): path
                   for path in paths}
        for future in as_completed(futures):  # each session answers as soon as it is rebuilt
            session_id, managed, lost = future.result()
            self.manager.end_recovery(futures[future].stem, managed, lost)
            self.heap.settle()  # (each rebuilt session at once: no full collection walks the growing heap)
            if managed is not None:
                self.metrics.sessions_recovered.inc()
                self.metrics.recovery_replayed_steps.inc(amount=managed.recovery_replayed)
                if managed.recovery_snapshot:
                    self.metrics.recovery_snapshots.inc()
            else:
                self.metrics.sessions_lost.inc()
        self.recovery_s = time.perf_counter() - t0
        if paths:
            log.info("recovered %d of %d journaled sessions in %.1f s (%d from snapshots, %d steps replayed)",
                     self.metrics.sessions_recovered.value(), len(paths), self.recovery_s,
                     self.metrics.recovery_snapshots.value(), self.metrics.recovery_replayed_steps.value())

    def _on_step(self, managed: object, engine_s: float, new_tile_ms: list[float]) -> None:
        self.metrics.engine_step.observe(engine_s)
        for ms in new_tile_ms:
            self.metrics.tile_latency.observe(ms / 1000.0)

    def housekeeping(self) -> None:
        """The reaper's round: settle (or thaw) the frozen heap (``sim_server/heap.py``), then hand free
        memory back to the OS if sessions closed (or a thaw freed theirs)."""
        closed = sum(self.metrics.sessions_closed.value(reason) for reason in ("client", "reaped"))
        if self.heap.tick(len(self.manager), closed):
            self._closed_at_release = -1.0  # their memory was freed only now
        self.release_memory()

    def release_memory(self) -> bool:
        """If sessions closed since the last call, hand the allocator's free memory back to the OS (glibc
        keeps freed memory in per-thread arenas: after many sessions stepped in parallel RSS would stay
        hundreds of MB above what is live). The reaper calls this after every round; an embedder may call
        it too. Returns whether memory was released (False: nothing closed since, or no glibc)."""
        closed = sum(self.metrics.sessions_closed.value(reason) for reason in ("client", "reaped"))
        if closed == self._closed_at_release:
            return False
        self._closed_at_release = closed
        return release_free_memory()

    def _start_http(self) -> None:
        import uvicorn

        from sim_server.http_app import create_http_app

        app = create_http_app(self.manager, self.metrics, lambda: self.ready, self.config.token)
        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.config.host, self.config.http_port or 0))
        sock.listen(128)
        self.http_port = sock.getsockname()[1]
        uv_config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self._http_server = uvicorn.Server(uv_config)
        server = self._http_server
        self._http_thread = threading.Thread(target=lambda: server.run(sockets=[sock]),
                                             name="vectorworld-http", daemon=True)
        self._http_thread.start()


def release_free_memory() -> bool:
    """``malloc_trim(0)``: return free heap memory to the OS. False where the C library is not glibc."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True


def _probe_port(host: str, port: int) -> None:
    """Raise OSError ("... in use") if ``host:port`` cannot be bound right now (port 0: nothing to check)."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            raise OSError(f"cannot bind the gRPC port {host}:{port}: {err.strerror or err}") from err


def _host_for_grpc(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def create_server(config: ServerConfig, factory: SessionFactory = Session, start: bool = True) -> SimServer:
    """Build (and by default start) the server. ``config.port = 0`` binds any free port (``.port``)."""
    server = SimServer(config, factory)
    return server.start() if start else server


def serve(config: ServerConfig) -> None:
    """Run until SIGTERM or SIGINT, then shut down gracefully (must run in the main thread)."""
    server = create_server(config)
    stopping = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: shutting down (grace %.1f s)", signum, config.grace_s)
        stopping.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while not stopping.wait(0.5):
            pass
        server.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
