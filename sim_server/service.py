"""The SimulatorService servicer: a thin adapter from protobuf requests to the SessionManager.

Error mapping (the only place library exceptions become gRPC status codes):

=====================================================  ===================  ================================
exception                                              code                 when
=====================================================  ===================  ================================
CommandError, ConfigError, DataFormatError             INVALID_ARGUMENT     bad command / config field (named)
malformed request bytes                                INVALID_ARGUMENT     not a message of the RPC's type
SessionNotFoundError                                   NOT_FOUND            unknown, closed or reaped session
SessionLostError                                       DATA_LOSS            existed before a restart, could
                                                                            not be rebuilt from its journal
StepMismatchError                                      ABORTED              stale request, or a resend of the
                                                                            step just applied with another
                                                                            command (trailing metadata
                                                                            ``vw-current-step``)
SessionBusyError                                       ABORTED              another call held the session
EpisodeFinishedError, SessionFailedError               FAILED_PRECONDITION  episode over / session broken
SessionCapError                                        RESOURCE_EXHAUSTED   session cap reached
ShuttingDownError                                      UNAVAILABLE          server draining
SessionRecoveringError                                 UNAVAILABLE          being rebuilt after a restart
                                                                            (trailing metadata
                                                                            ``vw-recovering``)
anything else                                          INTERNAL             bug; the server stays up
=====================================================  ===================  ================================

A resend of the step just applied (same ``expected_step``, same command) is not a mismatch: it answers the
kept reply of that step, byte for byte (``SessionManager.step_reply``).

Asyncio: every RPC is a coroutine on the gRPC event loop; engine work (reset, step, observe and encode)
runs on the bounded :class:`~sim_server.engine_pool.EnginePool`. A call on a session first waits for the
session's turn on the loop (``ManagedSession.alock``, up to the lock timeout), so queued calls hold no
engine thread. Requests arrive as raw bytes and are parsed here, so garbage answers INVALID_ARGUMENT
(gRPC's own deserializer would answer INTERNAL and log a traceback); replies leave as serialized bytes,
built on the engine thread.

ABORTED (not FAILED_PRECONDITION) for a step mismatch because it is a concurrency conflict: the client
should re-read the session (GetSession) and continue from its current step, as gRPC recommends for
read-modify-write conflicts.

Observation encodings (CreateSessionRequest.lane_delivery / agent_layout / history_delivery) are per
session: a LANE_DELIVERY_DELTA session's lane encoder and a HISTORY_DELIVERY_DELTA session's history encoder
live in its ManagedSession and are fed the session's observations in step order under its lock
(CreateSession, Step, StreamSession); GetSession always answers complete lanes and histories.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from sim_server import RECOVERING_METADATA
from sim_server.config import ServerConfig
from sim_server.engine_pool import EnginePool
from sim_server.heap import HeapFreezer
from sim_server.metrics import ServerMetrics
from sim_server.sessions import (
    ManagedSession,
    SessionBusyError,
    SessionCapError,
    SessionFailedError,
    SessionLostError,
    SessionManager,
    SessionNotFoundError,
    SessionRecoveringError,
    ShuttingDownError,
)
from vectorworld import DT_S
from vectorworld.data.sources import KINDS as SOURCE_KINDS
from vectorworld.errors import (
    CommandError,
    ConfigError,
    DataFormatError,
    EpisodeFinishedError,
    StepMismatchError,
)
from vectorworld.sim.config import SessionConfig
from vectorworld.v1 import simulator_service_pb2 as pb
from vectorworld.wire import codec
from vectorworld.wire.session_encoder import ObservationEncoder

log = logging.getLogger(__name__)
T = TypeVar("T")
M = TypeVar("M", bound=Message)
US_PER_STEP = int(round(DT_S * 1e6))
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["SimulatorService"].full_name

_CODES: tuple[tuple[type[BaseException], grpc.StatusCode], ...] = (
    (CommandError, grpc.StatusCode.INVALID_ARGUMENT),
    (ConfigError, grpc.StatusCode.INVALID_ARGUMENT),
    (DataFormatError, grpc.StatusCode.INVALID_ARGUMENT),
    (SessionNotFoundError, grpc.StatusCode.NOT_FOUND),
    (SessionLostError, grpc.StatusCode.DATA_LOSS),
    (StepMismatchError, grpc.StatusCode.ABORTED),
    (SessionBusyError, grpc.StatusCode.ABORTED),
    (EpisodeFinishedError, grpc.StatusCode.FAILED_PRECONDITION),
    (SessionFailedError, grpc.StatusCode.FAILED_PRECONDITION),
    (SessionCapError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (ShuttingDownError, grpc.StatusCode.UNAVAILABLE),
    (SessionRecoveringError, grpc.StatusCode.UNAVAILABLE),
)


def status_for(err: BaseException) -> grpc.StatusCode:
    """The status code of a library exception (INTERNAL for anything unexpected)."""
    for cls, code in _CODES:
        if isinstance(err, cls):
            return code
    return grpc.StatusCode.INTERNAL


class SimulatorServicer:
    """Implements vectorworld.v1.SimulatorService over a :class:`SessionManager` (asyncio, bytes in and
    out; register it with :func:`method_handlers`)."""

    def __init__(self, manager: SessionManager, config: ServerConfig, metrics: ServerMetrics,
                 pool: EnginePool | None = None, heap: HeapFreezer | None = None) -> None:
        self.manager = manager
        self.config = config
        self.metrics = metrics
        self.pool = EnginePool(config.engine_workers, config.engine_saturation_s) if pool is None else pool
        self.heap = HeapFreezer(enabled=False) if heap is None else heap

    # ----------------------------------------------------------------- RPCs
    async def CreateSession(self, raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        async def run() -> bytes:
            request = _parse(pb.CreateSessionRequest, raw)
            config = codec.config_from_proto(request.config, self.config.session_defaults)
            if ":" in config.planner and not self.config.allow_plugin_planners:
                raise ConfigError(f"config.planner {config.planner!r}: plug-in planners are disabled on "
                                  f"this server; use a built-in planner name such as 'idm'")
            if ":" in config.generator and config.generator != self.config.session_defaults.generator:
                raise ConfigError(f"config.generator {config.generator[:200]!r}: a checkpoint is chosen by the "
                                  f"server (vectorworld serve --generator NAME:CHECKPOINT); send a generator name "
                                  f"such as 'learned'")
            config = self._confine_scenario(config)
            encoder = ObservationEncoder.from_request(request.lane_delivery, request.agent_layout,
                                                      request.history_delivery)

            def create() -> bytes:
                managed, obs = self.manager.create(config, encoder)
                response = pb.CreateSessionResponse(session_id=managed.id, step=obs.step,
                                                    sim_time_us=obs.sim_time_us, config=resolved_config(config))
                with self.manager.locked(managed.id):  # the first observation: complete, the deltas' base
                    managed.encoder.encode(obs, response.observation)
                self.heap.settle()  # the new session's objects: frozen, never walked by a full collection
                return response.SerializeToString()

            reply = await self.pool.run(create)
            self.metrics.sessions_created.inc()
            return reply

        return await self._call("CreateSession", context, run)

    async def Step(self, raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        async def run() -> bytes:
            request = _parse(pb.StepRequest, raw)
            return await self._step(request.session_id, request.expected_step, request.command, context)

        return await self._call("Step", context, run)

    async def StreamSession(self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
                            ) -> AsyncIterator[bytes]:
        session_id = ""
        async for raw in requests:
            async def run(raw: bytes = raw) -> bytes:
                nonlocal session_id
                request = _parse(pb.StreamSessionRequest, raw)
                if not session_id:
                    session_id = request.session_id
                    _require_id(session_id)
                elif request.session_id and request.session_id != session_id:
                    raise ConfigError(f"session_id {request.session_id!r} differs from this stream's "
                                      f"session {session_id!r}")
                return await self._step(session_id, request.expected_step, request.command, context)

            yield await self._call("StreamSession", context, run)

    async def GetSession(self, raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        async def run() -> bytes:
            request = _parse(pb.GetSessionRequest, raw)
            _require_id(request.session_id)

            def read() -> bytes:
                managed, report, obs = self.manager.report(request.session_id, request.include_observation)
                response = pb.GetSessionResponse(session_id=managed.id)
                self._info(managed, response.info)
                response.step, response.sim_time_us = response.info.step, response.info.sim_time_us
                response.report.CopyFrom(codec.report_to_proto(report))
                if obs is not None:  # complete lanes and histories (never a delta), in the session's layout
                    managed.encoder.encode_complete(obs, response.observation)
                return response.SerializeToString()

            return await self.pool.run(read)

        return await self._call("GetSession", context, run)

    async def ListSessions(self, raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        async def run() -> bytes:
            request = _parse(pb.ListSessionsRequest, raw)
            if request.page_size < 0:
                raise ConfigError(f"page_size must be >= 0, got {request.page_size}")
            start = 0
            if request.page_token:
                if not request.page_token.isdigit() or len(request.page_token) > 12:
                    raise ConfigError(f"page_token {request.page_token[:40]!r} is malformed")
                start = int(request.page_token)
            size = min(request.page_size or self.config.list_page_max, self.config.list_page_max)

            def page() -> bytes:
                sessions = self.manager.list()
                response = pb.ListSessionsResponse()
                for managed in sessions[start:start + size]:
                    self._info(managed, response.sessions.add())
                if start + size < len(sessions):
                    response.next_page_token = str(start + size)
                return response.SerializeToString()

            return await self.pool.run(page)

        return await self._call("ListSessions", context, run)

    async def CloseSession(self, raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        async def run() -> bytes:
            request = _parse(pb.CloseSessionRequest, raw)
            _require_id(request.session_id)
            async with self._turn(self.manager.get(request.session_id)):
                managed, report = await self.pool.run(lambda: self.manager.close(request.session_id))
            self.metrics.sessions_closed.inc("client")
            step = managed.session.step_index
            return pb.CloseSessionResponse(session_id=managed.id, step=step, sim_time_us=step * US_PER_STEP,
                                           report=codec.report_to_proto(report)).SerializeToString()

        return await self._call("CloseSession", context, run)

    # ----------------------------------------------------------------- shared
    def _confine_scenario(self, config: SessionConfig) -> SessionConfig:
        """Resolve ``config.scenario`` inside the server's scenario directory, or refuse it."""
        scenario = getattr(config, "scenario", None)
        if not scenario:
            return config
        root = self.config.scenario_dir
        if root is None:
            raise ConfigError("config.scenario: this server does not start sessions from scenarios "
                              "(start it with --scenario-dir)")
        kind, sep, rest = scenario.partition(":")
        if not sep or kind not in SOURCE_KINDS:
            raise ConfigError(f"config.scenario {scenario[:200]!r} must be 'KIND:PATH[#SELECTOR]' with KIND one of "
                              f"{', '.join(SOURCE_KINDS)} and PATH relative to the server's scenario directory")
        path, hash_sep, selector = rest.partition("#")
        base = Path(root).resolve()
        resolved = (base / path).resolve()
        exists = resolved.is_file() or (kind == "scenarionet" and resolved.is_dir())  # a ScenarioNet dataset folder
        if not path or any(c in path for c in "*?[") or not resolved.is_relative_to(base) or not exists:
            raise ConfigError(f"config.scenario: {path[:200]!r} is not a file in the server's scenario "
                              f"directory")
        return dataclasses.replace(config, scenario=f"{kind}:{resolved}{hash_sep}{selector}")

    @contextlib.asynccontextmanager
    async def _turn(self, managed: ManagedSession) -> AsyncIterator[None]:
        """The session's turn (waiting on the event loop, not in an engine thread)."""
        try:
            if managed.alock.locked():  # (the usual case, a free session, needs no timeout task)
                await asyncio.wait_for(managed.alock.acquire(), self.config.session_lock_timeout_s)
            else:
                await managed.alock.acquire()
        except TimeoutError as err:
            raise SessionBusyError(f"session {managed.id!r} is busy with another call (waited "
                                   f"{self.config.session_lock_timeout_s:g} s)") from err
        try:
            yield
        finally:
            managed.alock.release()

    async def _step(self, session_id: str, expected_step: int, command_msg: Any,
                    context: grpc.aio.ServicerContext) -> bytes:
        """Validate, step exactly once (or answer the kept reply of a resend), return the serialized reply."""
        t0 = time.perf_counter()
        _require_id(session_id)
        if expected_step < 0:
            raise ConfigError(f"expected_step must be >= 0, got {expected_step}")
        managed = self.manager.get(session_id)

        def step() -> tuple[bytes, bool]:  # on the engine thread: the command's decode too (loop stays free)
            command = codec.command_from_proto(command_msg)
            return self.manager.step_reply(session_id, command, expected_step, command_msg.SerializeToString())

        async with self._turn(managed):
            try:
                reply, replayed = await self.pool.run(step)
            except StepMismatchError:
                context.set_trailing_metadata((("vw-current-step", str(managed.session.step_index)),))
                raise
            except EpisodeFinishedError as err:  # the engine's message suggests Session.reset(): not an RPC
                session = managed.session
                raise EpisodeFinishedError(f"the episode already ended ({session.end_reason.value}) at step "
                                           f"{session.step_index}; read it with GetSession, close the session "
                                           f"and create a new one") from err
        if replayed:
            self.metrics.replayed_steps.inc()
        else:
            self.metrics.steps.inc()
            self.metrics.step_latency.observe(time.perf_counter() - t0)
        return reply

    @staticmethod
    def _info(managed: ManagedSession, out: pb.SessionInfo) -> None:
        session = managed.session
        now = time.monotonic()
        out.session_id = managed.id
        out.step, out.sim_time_us = session.step_index, session.step_index * US_PER_STEP
        out.state = pb.SESSION_STATE_FINISHED if session.done else pb.SESSION_STATE_RUNNING
        out.end_reason = codec.end_reason_to_proto(session.end_reason)
        out.km = session.metrics.distance_m / 1000.0
        out.config.CopyFrom(resolved_config(session.config))
        out.age_s, out.idle_s = max(now - managed.created_s, 0.0), max(now - managed.last_used_s, 0.0)
        encoder = managed.encoder
        out.lane_delivery, out.agent_layout = encoder.lane_delivery, encoder.agent_layout
        out.history_delivery = encoder.history_delivery

    async def _call(self, method: str, context: grpc.aio.ServicerContext, run: Callable[[], Awaitable[T]]) -> T:
        """Run one RPC body; map exceptions to status codes and count the outcome."""
        try:
            result = await run()
        except Exception as err:  # noqa: BLE001 - every failure becomes a status code
            code = status_for(err)
            if code is grpc.StatusCode.INTERNAL:
                log.exception("internal error in %s", method)
                message = f"internal error in {method}: {type(err).__name__}: {err}"
            else:
                message = str(err) or type(err).__name__
            if isinstance(err, SessionRecoveringError):  # the client keeps waiting (sim_server/client.py)
                context.set_trailing_metadata(((RECOVERING_METADATA, "1"),))
            self.metrics.rpcs.inc(method, code.name)
            self.metrics.errors.inc(code.name)
            await context.abort(code, message[:2000])
            raise AssertionError("unreachable: abort raises") from err
        self.metrics.rpcs.inc(method, "OK")
        return result


def resolved_config(config: SessionConfig) -> Any:
    """The config as the wire's SessionConfig with every field set, ``max_steps`` the step limit in force."""
    msg = codec.config_to_proto(config)
    msg.max_steps = config.step_limit
    return msg


def method_handlers(servicer: SimulatorServicer) -> dict[str, grpc.RpcMethodHandler]:
    """The service's handlers, bytes in and bytes out (no gRPC (de)serializer: see the module docstring)."""
    unary = ("CreateSession", "Step", "GetSession", "ListSessions", "CloseSession")
    handlers = {name: grpc.unary_unary_rpc_method_handler(getattr(servicer, name)) for name in unary}
    handlers["StreamSession"] = grpc.stream_stream_rpc_method_handler(servicer.StreamSession)
    return handlers


def _parse(cls: type[M], raw: bytes) -> M:
    """A request message from its bytes; ConfigError (INVALID_ARGUMENT) for bytes that are not one."""
    try:
        return cls.FromString(raw)
    except (DecodeError, RuntimeWarning, ValueError) as err:
        raise ConfigError(f"the request is not a valid {cls.DESCRIPTOR.full_name} message "
                          f"({len(raw)} bytes: {err})") from err


def _require_id(session_id: str) -> None:
    if not session_id:
        raise ConfigError("session_id is required")
    if len(session_id) > 128:
        raise SessionNotFoundError(f"no session {session_id[:32]!r}... (ids are 32 hex characters)")
