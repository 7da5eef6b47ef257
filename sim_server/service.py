"""The SimulatorService servicer: a thin adapter from protobuf requests to the SessionManager.

Error mapping (the only place library exceptions become gRPC status codes):

=====================================================  ===================  ================================
exception                                              code                 when
=====================================================  ===================  ================================
CommandError, ConfigError, DataFormatError             INVALID_ARGUMENT     bad command / config field (named)
SessionNotFoundError                                   NOT_FOUND            unknown, closed or reaped session
StepMismatchError                                      ABORTED              stale or duplicated step request
                                                                            (trailing metadata
                                                                            ``vw-current-step``)
SessionBusyError                                       ABORTED              another call held the session
EpisodeFinishedError, SessionFailedError               FAILED_PRECONDITION  episode over / session broken
SessionCapError                                        RESOURCE_EXHAUSTED   session cap reached
ShuttingDownError                                      UNAVAILABLE          server draining
anything else                                          INTERNAL             bug; the server stays up
=====================================================  ===================  ================================

ABORTED (not FAILED_PRECONDITION) for a step mismatch because it is a concurrency conflict: the client
should re-read the session (GetSession) and continue from its current step, as gRPC recommends for
read-modify-write conflicts.

Observation encodings (CreateSessionRequest.lane_delivery / agent_layout / history_delivery) are per
session: its :class:`~vectorworld.wire.session_encoder.ObservationEncoder` lives in its ManagedSession and
is fed the session's observations in step order under its lock (CreateSession, Step, StreamSession);
GetSession always answers complete lanes and histories.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc

from sim_server import simulator_service_pb2_grpc
from sim_server.config import ServerConfig
from sim_server.metrics import ServerMetrics
from sim_server.sessions import (
    ManagedSession,
    SessionBusyError,
    SessionCapError,
    SessionFailedError,
    SessionManager,
    SessionNotFoundError,
    ShuttingDownError,
)
from vectorworld import DT_S
from vectorworld.errors import (
    CommandError,
    ConfigError,
    DataFormatError,
    EpisodeFinishedError,
    StepMismatchError,
)
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.observation import Observation
from vectorworld.v1 import simulator_service_pb2 as pb
from vectorworld.wire import codec
from vectorworld.wire.session_encoder import ObservationEncoder

log = logging.getLogger(__name__)
T = TypeVar("T")
US_PER_STEP = int(round(DT_S * 1e6))

_CODES: tuple[tuple[type[BaseException], grpc.StatusCode], ...] = (
    (CommandError, grpc.StatusCode.INVALID_ARGUMENT),
    (ConfigError, grpc.StatusCode.INVALID_ARGUMENT),
    (DataFormatError, grpc.StatusCode.INVALID_ARGUMENT),
    (SessionNotFoundError, grpc.StatusCode.NOT_FOUND),
    (StepMismatchError, grpc.StatusCode.ABORTED),
    (SessionBusyError, grpc.StatusCode.ABORTED),
    (EpisodeFinishedError, grpc.StatusCode.FAILED_PRECONDITION),
    (SessionFailedError, grpc.StatusCode.FAILED_PRECONDITION),
    (SessionCapError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (ShuttingDownError, grpc.StatusCode.UNAVAILABLE),
)


def status_for(err: BaseException) -> grpc.StatusCode:
    """The status code of a library exception (INTERNAL for anything unexpected)."""
    for cls, code in _CODES:
        if isinstance(err, cls):
            return code
    return grpc.StatusCode.INTERNAL


class SimulatorServicer(simulator_service_pb2_grpc.SimulatorServiceServicer):
    """Implements vectorworld.v1.SimulatorService over a :class:`SessionManager`."""

    def __init__(self, manager: SessionManager, config: ServerConfig, metrics: ServerMetrics) -> None:
        self.manager = manager
        self.config = config
        self.metrics = metrics

    # ----------------------------------------------------------------- RPCs
    def CreateSession(self, request: pb.CreateSessionRequest, context: grpc.ServicerContext
                      ) -> pb.CreateSessionResponse:
        def run() -> pb.CreateSessionResponse:
            config = codec.config_from_proto(request.config, self.config.session_defaults)
            if ":" in config.planner and not self.config.allow_plugin_planners:
                raise ConfigError(f"config.planner {config.planner!r}: plug-in planners are disabled on "
                                  f"this server; use a built-in planner name such as 'idm'")
            config = self._confine_scenario(config)
            encoder = ObservationEncoder.from_request(request.lane_delivery, request.agent_layout,
                                                      request.history_delivery)
            managed, obs = self.manager.create(config)
            self.metrics.sessions_created.inc()
            response = pb.CreateSessionResponse(session_id=managed.id, step=obs.step,
                                                sim_time_us=obs.sim_time_us,
                                                config=codec.config_to_proto(config))
            with self.manager.locked(managed.id):  # the first observation: complete, the lane deltas' base
                managed.encoder = encoder
                encoder.encode(obs, response.observation)
            return response

        return self._call("CreateSession", context, run)

    def Step(self, request: pb.StepRequest, context: grpc.ServicerContext) -> pb.StepResponse:
        def run() -> pb.StepResponse:
            response = pb.StepResponse()
            self._step(request.session_id, request.expected_step, request.command, response, context)
            return response

        return self._call("Step", context, run)

    def StreamSession(self, request_iterator: Iterator[pb.StreamSessionRequest],
                      context: grpc.ServicerContext) -> Iterator[pb.StreamSessionResponse]:
        session_id = ""
        for request in request_iterator:
            def run(request: pb.StreamSessionRequest = request) -> pb.StreamSessionResponse:
                nonlocal session_id
                if not session_id:
                    session_id = request.session_id
                    _require_id(session_id)
                elif request.session_id and request.session_id != session_id:
                    raise ConfigError(f"session_id {request.session_id!r} differs from this stream's "
                                      f"session {session_id!r}")
                response = pb.StreamSessionResponse()
                self._step(session_id, request.expected_step, request.command, response, context)
                return response

            yield self._call("StreamSession", context, run)

    def GetSession(self, request: pb.GetSessionRequest, context: grpc.ServicerContext
                   ) -> pb.GetSessionResponse:
        def run() -> pb.GetSessionResponse:
            _require_id(request.session_id)
            managed, report, obs = self.manager.report(request.session_id, request.include_observation)
            response = pb.GetSessionResponse(session_id=managed.id)
            self._info(managed, response.info)
            response.step, response.sim_time_us = response.info.step, response.info.sim_time_us
            response.report.CopyFrom(codec.report_to_proto(report))
            if obs is not None:  # complete lanes and histories (never a delta), in the session's agent layout
                managed.encoder.encode_complete(obs, response.observation)
            return response

        return self._call("GetSession", context, run)

    def ListSessions(self, request: pb.ListSessionsRequest, context: grpc.ServicerContext
                     ) -> pb.ListSessionsResponse:
        def run() -> pb.ListSessionsResponse:
            if request.page_size < 0:
                raise ConfigError(f"page_size must be >= 0, got {request.page_size}")
            start = 0
            if request.page_token:
                if not request.page_token.isdigit() or len(request.page_token) > 12:
                    raise ConfigError(f"page_token {request.page_token[:40]!r} is malformed")
                start = int(request.page_token)
            size = min(request.page_size or self.config.list_page_max, self.config.list_page_max)
            sessions = self.manager.list()
            response = pb.ListSessionsResponse()
            for managed in sessions[start:start + size]:
                self._info(managed, response.sessions.add())
            if start + size < len(sessions):
                response.next_page_token = str(start + size)
            return response

        return self._call("ListSessions", context, run)

    def CloseSession(self, request: pb.CloseSessionRequest, context: grpc.ServicerContext
                     ) -> pb.CloseSessionResponse:
        def run() -> pb.CloseSessionResponse:
            _require_id(request.session_id)
            managed, report = self.manager.close(request.session_id)
            self.metrics.sessions_closed.inc("client")
            step = managed.session.step_index
            return pb.CloseSessionResponse(session_id=managed.id, step=step, sim_time_us=step * US_PER_STEP,
                                           report=codec.report_to_proto(report))

        return self._call("CloseSession", context, run)

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
        if not sep or kind not in ("womd", "nuplan"):
            raise ConfigError(f"config.scenario {scenario[:200]!r} must be 'womd:FILE[#N]' or "
                              f"'nuplan:FILE[#SCENE]' with FILE relative to the server's scenario directory")
        path, hash_sep, selector = rest.partition("#")
        base = Path(root).resolve()
        resolved = (base / path).resolve()
        if not path or any(c in path for c in "*?[") or not resolved.is_relative_to(base) \
                or not resolved.is_file():
            raise ConfigError(f"config.scenario: {path[:200]!r} is not a file in the server's scenario "
                              f"directory")
        return dataclasses.replace(config, scenario=f"{kind}:{resolved}{hash_sep}{selector}")

    def _step(self, session_id: str, expected_step: int, command_msg: Any, response: Any,
              context: grpc.ServicerContext) -> None:
        """Validate, step under the session lock, fill ``response`` (Step or StreamSession response)."""
        t0 = time.perf_counter()
        _require_id(session_id)
        if expected_step < 0:
            raise ConfigError(f"expected_step must be >= 0, got {expected_step}")
        command = codec.command_from_proto(command_msg)
        managed = self.manager.get(session_id)

        def deliver(held: ManagedSession, obs: Observation) -> None:  # under the session lock, in step order
            response.session_id, response.step, response.sim_time_us = session_id, obs.step, obs.sim_time_us
            held.encoder.encode(obs, response.observation)

        try:
            self.manager.step(session_id, command, expected_step, deliver)
        except StepMismatchError:
            context.set_trailing_metadata((("vw-current-step", str(managed.session.step_index)),))
            raise
        self.metrics.steps.inc()
        self.metrics.step_latency.observe(time.perf_counter() - t0)

    @staticmethod
    def _info(managed: ManagedSession, out: pb.SessionInfo) -> None:
        session = managed.session
        now = time.monotonic()
        out.session_id = managed.id
        out.step, out.sim_time_us = session.step_index, session.step_index * US_PER_STEP
        out.state = pb.SESSION_STATE_FINISHED if session.done else pb.SESSION_STATE_RUNNING
        out.end_reason = codec.end_reason_to_proto(session.end_reason)
        out.km = session.metrics.distance_m / 1000.0
        out.config.CopyFrom(codec.config_to_proto(session.config))
        out.age_s, out.idle_s = max(now - managed.created_s, 0.0), max(now - managed.last_used_s, 0.0)
        encoder = managed.encoder
        out.lane_delivery, out.agent_layout = encoder.lane_delivery, encoder.agent_layout
        out.history_delivery = encoder.history_delivery

    def _call(self, method: str, context: grpc.ServicerContext, run: Callable[[], T]) -> T:
        """Run one RPC body; map exceptions to status codes and count the outcome."""
        try:
            result = run()
        except Exception as err:  # noqa: BLE001 - every failure becomes a status code
            code = status_for(err)
            if code is grpc.StatusCode.INTERNAL:
                log.exception("internal error in %s", method)
                message = f"internal error in {method}: {type(err).__name__}: {err}"
            else:
                message = str(err) or type(err).__name__
            self.metrics.rpcs.inc(method, code.name)
            self.metrics.errors.inc(code.name)
            context.abort(code, message[:2000])
        self.metrics.rpcs.inc(method, "OK")
        return result


def _require_id(session_id: str) -> None:
    if not session_id:
        raise ConfigError("session_id is required")
    if len(session_id) > 128:
        raise SessionNotFoundError(f"no session {session_id[:32]!r}... (ids are 32 hex characters)")
