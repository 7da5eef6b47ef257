"""Build and run the simulator service: ``create_server`` (in-process, tests bind port 0) and ``serve``.

The gRPC server carries SimulatorService, gRPC health checking (``grpc.health.v1``, service names "" and
"vectorworld.v1.SimulatorService") and server reflection. The FastAPI side app runs in the same process on
its own port (uvicorn in a thread).

Graceful shutdown (:meth:`SimServer.stop`, and SIGTERM/SIGINT under :func:`serve`): health flips to
NOT_SERVING and /readyz to 503, new sessions are refused, then ``server.stop(grace)`` lets calls in flight
finish (steps included) and refuses new calls; after that every session is closed and the side app stops.
"""

from __future__ import annotations

import ctypes
import logging
import signal
import socket
import threading
from concurrent import futures
from pathlib import Path
from types import FrameType

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from sim_server import simulator_service_pb2_grpc
from sim_server.auth import BearerTokenInterceptor
from sim_server.config import ServerConfig
from sim_server.metrics import ServerMetrics
from sim_server.service import SimulatorServicer
from sim_server.sessions import SessionFactory, SessionManager
from vectorworld.sim.session import Session
from vectorworld.v1 import simulator_service_pb2

log = logging.getLogger(__name__)
SERVICE_NAME = simulator_service_pb2.DESCRIPTOR.services_by_name["SimulatorService"].full_name


class SimServer:
    """A running gRPC server (and side app) with its session manager; stop it with :meth:`stop`."""

    def __init__(self, config: ServerConfig, factory: SessionFactory = Session) -> None:
        self.config = config.validate()
        self.manager = SessionManager(config.max_sessions, config.idle_timeout_s,
                                      config.session_lock_timeout_s, factory, on_step=self._on_step,
                                      on_reaped=lambda ids: self.metrics.sessions_closed.inc(
                                          "reaped", amount=len(ids)))
        self.metrics = ServerMetrics(live_sessions=lambda: float(len(self.manager)))
        self.health = health.HealthServicer()
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        interceptors = []
        if config.token is not None:
            interceptors.append(BearerTokenInterceptor(
                config.token, on_reject=lambda m: self.metrics.errors.inc("UNAUTHENTICATED")))
        options = [("grpc.max_receive_message_length", config.max_receive_message_bytes),
                   ("grpc.max_send_message_length", config.max_send_message_bytes),
                   ("grpc.so_reuseport", 0)]
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=config.max_workers,
                                                             thread_name_prefix="vectorworld-rpc"),
                                  interceptors=interceptors, options=options)
        self.servicer = SimulatorServicer(self.manager, config, self.metrics)
        simulator_service_pb2_grpc.add_SimulatorServiceServicer_to_server(self.servicer, self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME),
                                            self.server)
        address = f"{_host_for_grpc(config.host)}:{config.port}"
        if config.tls_cert is not None and config.tls_key is not None:
            credentials = grpc.ssl_server_credentials(
                [(Path(config.tls_key).read_bytes(), Path(config.tls_cert).read_bytes())])
            self.port = self.server.add_secure_port(address, credentials)
        else:
            self.port = self.server.add_insecure_port(address)
        if self.port == 0:
            raise OSError(f"cannot bind the gRPC port {address}")
        self.http_port: int | None = None
        self._closed_at_release = 0.0
        self._http_server = None
        self._http_thread: threading.Thread | None = None

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> SimServer:
        """Start serving (gRPC, side app, reaper); health says SERVING once everything is up."""
        self.server.start()
        if self.config.http_port is not None:
            self._start_http()
        self.manager.start_reaper(self.config.reap_interval_s, on_tick=self._release_memory)
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._ready.set()
        log.info("vectorworld serving gRPC on %s:%d%s", self.config.host, self.port,
                 f", HTTP on {self.http_port}" if self.http_port else "")
        return self

    def stop(self, grace_s: float | None = None) -> None:
        """Graceful shutdown: NOT_SERVING, drain, finish calls in flight (up to ``grace_s``), close all."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            self._ready.clear()
            self.health.enter_graceful_shutdown()
            self.manager.drain()
            grace = self.config.grace_s if grace_s is None else grace_s
            self.server.stop(grace).wait()
            closed = len(self.manager)
            self.manager.shutdown()
            if closed:
                self.metrics.sessions_closed.inc("shutdown", amount=closed)
            if self._http_server is not None:
                self._http_server.should_exit = True
                if self._http_thread is not None:
                    self._http_thread.join(timeout=5.0)
            self._stopped.set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until :meth:`stop` has finished (True) or the timeout passed (False)."""
        return self._stopped.wait(timeout_s)

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop(grace_s=1.0)

    # ----------------------------------------------------------------- internals
    def _on_step(self, managed: object, engine_s: float, new_tile_ms: list[float]) -> None:
        self.metrics.engine_step.observe(engine_s)
        for ms in new_tile_ms:
            self.metrics.tile_latency.observe(ms / 1000.0)

    def _release_memory(self) -> None:
        """After sessions closed, hand the allocator's free memory back to the OS (glibc keeps freed memory
        in per-thread arenas: after many sessions stepped in parallel RSS would stay hundreds of MB above
        what is live). At most once per reaper round, only when a session closed since the last one."""
        closed = sum(self.metrics.sessions_closed.value(reason) for reason in ("client", "reaped"))
        if closed != self._closed_at_release:
            self._closed_at_release = closed
            release_free_memory()

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
