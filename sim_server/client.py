"""Python client of the simulator service, returning the engine's own types (Observation, report dict).

>>> with SimClient("localhost:50051") as client:                      # doctest: +SKIP
...     session = client.create_session(seed=0, target_km=1.0)
...     obs = session.observation
...     while not obs.done:
...         obs = session.step(command=None)       # None: the server's built-in planner drives
...     report = session.close()

Encoding: sessions are created with LANE_DELIVERY_DELTA (a reply carries only the lanes that changed since
the previous one; the session object keeps the rest) and AGENT_LAYOUT_TABLE (agents as packed columns), the
cheapest encodings; the Observation objects are the same as with ``lane_delivery="full"`` and
``agent_layout="messages"``. ``history_delivery="delta"`` (an agent's history is sent when it comes into view,
then only its current state; the session object keeps the histories) also gives the same observations with
~80 % fewer bytes per reply, but on loopback it costs more CPU than the smaller reply saves (see
tools/load_test.py --compare-history), so it is opt-in: for slow links.

Retries: read-only calls (GetSession, ListSessions) and steps are retried on UNAVAILABLE / DEADLINE_EXCEEDED
with exponential backoff (capped at 1 s), at least ``retries`` times and for as long as ``reconnect_s`` allows
(default 30 s, for the server process to come back), and while the server says the session is being rebuilt
from its journal (UNAVAILABLE with trailing metadata ``vw-recovering``: it is up and replaying) for up to
``recovery_wait_s`` (default 600 s) — so a client rides out a restart however long recovery takes on a
loaded machine, yet gives up on a server that is simply gone after ``reconnect_s``. ``retries=0`` turns
retrying off. A Step is retried with the *same* expected step index and command; the server keeps the reply
of the step it applied last, so a retry whose first attempt had been applied gets that very reply (never a
second step). A stream (:meth:`RemoteSession.stream`) that breaks is resumed on a new stream that first
resends the request whose reply had not arrived. (Against a server without kept replies, an ABORTED retry
falls back to GetSession and adopts the state when it is exactly one step further.) After any other ABORTED
step (the session was stepped by someone else), :meth:`RemoteSession.resync` reads the current state and
stepping continues from there. CreateSession and CloseSession are not retried (not idempotent).
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc

from sim_server import RECOVERING_METADATA, simulator_service_pb2_grpc
from vectorworld.errors import DataFormatError
from vectorworld.sim.observation import Observation
from vectorworld.v1 import session_pb2
from vectorworld.v1 import simulator_service_pb2 as pb
from vectorworld.vehicle.commands import EgoCommand
from vectorworld.wire import codec

T = TypeVar("T")
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
LANE_DELIVERY = {"full": codec.LANE_DELIVERY_FULL, "delta": codec.LANE_DELIVERY_DELTA}
"""``create_session(lane_delivery=...)`` names -> CreateSessionRequest.lane_delivery."""
AGENT_LAYOUT = {"messages": codec.AGENT_LAYOUT_MESSAGES, "table": codec.AGENT_LAYOUT_TABLE}
"""``create_session(agent_layout=...)`` names -> CreateSessionRequest.agent_layout."""
HISTORY_DELIVERY = {"full": codec.HISTORY_DELIVERY_FULL, "delta": codec.HISTORY_DELIVERY_DELTA}
"""``create_session(history_delivery=...)`` names -> CreateSessionRequest.history_delivery."""


@dataclass(frozen=True)
class SessionStatus:
    """GetSession's answer in Python types."""

    session_id: str
    step: int
    sim_time_us: int
    finished: bool
    end_reason: str
    km: float
    report: dict[str, Any]
    observation: Observation | None


class SimClient:
    """A connection to a simulator server. ``token`` adds ``authorization: Bearer`` to every call;
    ``root_certificates`` (PEM bytes or a path) switches to TLS."""

    def __init__(self, target: str = "localhost:50051", token: str | None = None,
                 root_certificates: bytes | str | Path | None = None, timeout_s: float = 60.0,
                 retries: int = 3, backoff_s: float = 0.1, reconnect_s: float = 30.0,
                 recovery_wait_s: float = 600.0, max_receive_message_bytes: int = 64 * 1024 * 1024) -> None:
        options = [("grpc.max_receive_message_length", max_receive_message_bytes)]
        if root_certificates is not None:
            if not isinstance(root_certificates, bytes):
                root_certificates = Path(root_certificates).read_bytes()
            self.channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates),
                                               options=options)
        else:
            self.channel = grpc.insecure_channel(target, options=options)
        self.stub = simulator_service_pb2_grpc.SimulatorServiceStub(self.channel)
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.reconnect_s = reconnect_s
        self.recovery_wait_s = recovery_wait_s

    # ----------------------------------------------------------------- sessions
    def create_session(self, seed: int = 0, target_km: float | None = None, generator: str = "",
                       npc_policy: str = "", planner: str = "", scenario: str = "",
                       observation_radius_m: float | None = None, max_steps: int | None = None,
                       lane_delivery: str = "delta", agent_layout: str = "table",
                       history_delivery: str = "full", **optional: Any) -> RemoteSession:
        """Create and reset a session; empty / None arguments take the server's defaults.
        ``lane_delivery``: "delta" (replies carry only the lanes that changed; the session object rebuilds
        the complete lanes) or "full"; ``agent_layout``: "table" (packed columns) or "messages";
        ``history_delivery``: "full" or "delta" (an agent's history is sent once, then only its current
        state; the session object rebuilds the histories; needs "table"; ~80 % smaller replies, slightly more
        CPU). Either way the observations are the same values; the defaults are the fastest on loopback.
        ``optional``: agent_capacity, terminate_on_collision, ego_start_speed_mps."""
        if lane_delivery not in LANE_DELIVERY:
            raise ValueError(f"lane_delivery must be one of {sorted(LANE_DELIVERY)}, got {lane_delivery!r}")
        if agent_layout not in AGENT_LAYOUT:
            raise ValueError(f"agent_layout must be one of {sorted(AGENT_LAYOUT)}, got {agent_layout!r}")
        if history_delivery not in HISTORY_DELIVERY or (history_delivery == "delta" and agent_layout != "table"):
            raise ValueError(f"history_delivery must be one of {sorted(HISTORY_DELIVERY)} (\"delta\" only with "
                             f"agent_layout=\"table\"), got {history_delivery!r}")
        config = session_pb2.SessionConfig(seed=seed, generator=generator, npc_policy=npc_policy,
                                           planner=planner, scenario=scenario, **optional)
        for name, value in (("target_km", target_km), ("observation_radius_m", observation_radius_m),
                            ("max_steps", max_steps)):
            if value is not None:
                setattr(config, name, value)
        request = pb.CreateSessionRequest(config=config, lane_delivery=LANE_DELIVERY[lane_delivery],
                                          agent_layout=AGENT_LAYOUT[agent_layout],
                                          history_delivery=HISTORY_DELIVERY[history_delivery])
        response = self.stub.CreateSession(request, timeout=self.timeout_s, metadata=self.metadata)
        lanes, histories = codec.LaneDecodeCache(), codec.AgentHistoryCache()
        return RemoteSession(self, response.session_id, response.step,
                             codec.observation_from_proto(response.observation, lanes, histories), lanes, histories)

    def session(self, session_id: str) -> RemoteSession:
        """Attach to an existing session (reads its current state)."""
        lanes, histories = codec.LaneDecodeCache(), codec.AgentHistoryCache()
        status = self.get_session(session_id, include_observation=True, lane_cache=lanes, history_cache=histories)
        return RemoteSession(self, session_id, status.step, status.observation, lanes, histories)

    def get_session(self, session_id: str, include_observation: bool = False,
                    lane_cache: codec.LaneDecodeCache | None = None,
                    history_cache: codec.AgentHistoryCache | None = None) -> SessionStatus:
        """The session's state; its observation (complete lanes and histories) also seeds ``lane_cache`` and
        ``history_cache`` if given."""
        response = self._retry(lambda retry: self.stub.GetSession(
            pb.GetSessionRequest(session_id=session_id, include_observation=include_observation),
            timeout=self.timeout_s, metadata=self.metadata, wait_for_ready=retry))
        info = response.info
        return SessionStatus(session_id=response.session_id, step=response.step,
                             sim_time_us=response.sim_time_us,
                             finished=info.state == pb.SESSION_STATE_FINISHED,
                             end_reason=codec.end_reason_from_proto(info.end_reason).value, km=info.km,
                             report=codec.report_from_proto(response.report),
                             observation=codec.observation_from_proto(response.observation, lane_cache,
                                                                     history_cache)
                             if response.HasField("observation") else None)

    def list_sessions(self) -> list[pb.SessionInfo]:
        """Every live session (all pages)."""
        out: list[pb.SessionInfo] = []
        token = ""
        while True:
            page = self._retry(lambda retry, t=token: self.stub.ListSessions(
                pb.ListSessionsRequest(page_token=t), timeout=self.timeout_s, metadata=self.metadata,
                wait_for_ready=retry))
            out.extend(page.sessions)
            token = page.next_page_token
            if not token:
                return out

    def close_session(self, session_id: str) -> dict[str, Any]:
        response = self.stub.CloseSession(pb.CloseSessionRequest(session_id=session_id),
                                          timeout=self.timeout_s, metadata=self.metadata)
        return codec.report_from_proto(response.report)

    # ----------------------------------------------------------------- plumbing
    def _retry(self, call: Callable[[bool], T]) -> T:
        """``call(retrying)`` until it succeeds or fails for good (see the module docstring)."""
        start, attempt = time.monotonic(), 0
        while True:
            try:
                return call(attempt > 0)
            except grpc.RpcError as err:
                self.backoff(err, attempt, start)
                attempt += 1

    def backoff(self, err: grpc.RpcError, attempt: int, start: float) -> None:
        """Sleep before retry ``attempt + 1``, or re-raise ``err`` when it is not worth retrying."""
        window = self.reconnect_s
        if err.code() is grpc.StatusCode.UNAVAILABLE and recovering(err):
            window = max(window, self.recovery_wait_s)
        if err.code() not in RETRYABLE or self.retries <= 0 or (
                attempt >= self.retries and time.monotonic() - start > window):
            raise err
        time.sleep(min(self.backoff_s * 2 ** attempt, 1.0))

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> SimClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def recovering(err: grpc.RpcError) -> bool:
    """Whether ``err`` says the session is being rebuilt after a server restart (``vw-recovering``)."""
    trailing = getattr(err, "trailing_metadata", None)
    try:
        return any(key == RECOVERING_METADATA for key, _ in (trailing() if trailing else None) or ())
    except (TypeError, ValueError):
        return False


class RemoteSession:
    """One served session. Tracks the step index so each Step names the step it expects."""

    def __init__(self, client: SimClient, session_id: str, step: int, observation: Observation | None,
                 lane_cache: codec.LaneDecodeCache | None = None,
                 history_cache: codec.AgentHistoryCache | None = None) -> None:
        self.client = client
        self.id = session_id
        self.step_index = step
        self.observation = observation
        # Lanes and agent histories of the previous observation, the base of the server's deltas.
        self._lanes = codec.LaneDecodeCache() if lane_cache is None else lane_cache
        self._histories = codec.AgentHistoryCache() if history_cache is None else history_cache

    def step(self, command: EgoCommand | None = None) -> Observation:
        """Advance 0.1 s; ``None`` lets the server's built-in planner drive. Returns the new observation."""
        expected = self.step_index
        request = pb.StepRequest(session_id=self.id, expected_step=expected)
        codec.command_to_proto(command, request.command)
        start, attempt = time.monotonic(), 0
        while True:
            try:
                response = self.client.stub.Step(request, timeout=self.client.timeout_s,
                                                 metadata=self.client.metadata, wait_for_ready=attempt > 0)
                return self._advance(response.step, response.observation)
            except grpc.RpcError as err:
                if err.code() == grpc.StatusCode.ABORTED and attempt > 0:
                    # A server without kept replies, and a previous attempt was applied: adopt the state if it
                    # is one step on (its lanes are complete, and they are the base of the next reply's delta).
                    status = self._read_complete()
                    if status.step == expected + 1 and status.observation is not None:
                        self.step_index, self.observation = status.step, status.observation
                        return status.observation
                    raise
                self.client.backoff(err, attempt, start)
                attempt += 1

    def stream(self, commands: Iterable[EgoCommand | None]) -> Iterator[Observation]:
        """Step once per command over one StreamSession call; yields each observation.

        Lock-step: the next command is drawn from ``commands`` (in the caller's thread) only after the
        previous observation arrived and was handed out (it is in :attr:`observation`), so ``commands`` may
        be a generator that plans from the latest observation, and may stop when ``session.observation.done``.
        A stream broken by UNAVAILABLE (a server restart) is resumed on a new one, which resends the request
        whose reply had not arrived (the server answers a resend with its kept reply: exactly once)."""
        iterator = iter(commands)
        pending = self._next_stream_request(iterator)  # sent (or about to be), reply not yet received
        start, attempt = time.monotonic(), 0
        while pending is not None:
            outbox: queue.Queue[pb.StreamSessionRequest | None] = queue.Queue()
            first = pb.StreamSessionRequest()
            first.CopyFrom(pending)
            first.session_id = self.id  # required in a stream's first request only
            outbox.put(first)
            try:
                call = self.client.stub.StreamSession(iter(outbox.get, None), metadata=self.client.metadata,
                                                      wait_for_ready=attempt > 0)
                for response in call:
                    obs = self._advance(response.step, response.observation)
                    pending, start, attempt = None, time.monotonic(), 0
                    yield obs
                    pending = self._next_stream_request(iterator)
                    outbox.put(pending)  # None: half-close, the server ends the stream
                return
            except grpc.RpcError as err:
                self.client.backoff(err, attempt, start)
                attempt += 1
            finally:
                outbox.put(None)

    def _next_stream_request(self, iterator: Iterator[EgoCommand | None]) -> pb.StreamSessionRequest | None:
        try:
            command = next(iterator)
        except StopIteration:
            return None
        request = pb.StreamSessionRequest(expected_step=self.step_index)
        codec.command_to_proto(command, request.command)
        return request

    def status(self, include_observation: bool = False) -> SessionStatus:
        return self.client.get_session(self.id, include_observation)

    def close(self) -> dict[str, Any]:
        """Close the session; returns its episode report."""
        return self.client.close_session(self.id)

    def resync(self) -> Observation:
        """Re-read the session's current step and complete observation (after a lost reply or an ABORTED
        step, e.g. another client stepped the session); later steps continue from there."""
        status = self._read_complete()
        if status.observation is None:  # pragma: no cover - the server always sends it when asked
            raise RuntimeError(f"session {self.id}: GetSession returned no observation")
        self.step_index, self.observation = status.step, status.observation
        return status.observation

    def _read_complete(self) -> SessionStatus:
        """GetSession with the current observation, which also becomes the base of the next deltas."""
        return self.client.get_session(self.id, include_observation=True, lane_cache=self._lanes,
                                       history_cache=self._histories)

    def _advance(self, step: int, message: Any) -> Observation:
        lane_base = message.lane_delivery != codec.LANE_DELIVERY_DELTA or self._lanes.holds(message.lane_base_step)
        history_base = message.history_delivery != codec.HISTORY_DELIVERY_DELTA \
            or self._histories.holds(message.history_base_step)
        if not (lane_base and history_base):
            # A delta on an observation this object never decoded (it cannot happen while this object is the
            # session's only driver): read the complete observation of that step instead.
            status = self._read_complete()
            if status.step != step or status.observation is None:
                base = message.history_base_step if lane_base else message.lane_base_step
                raise DataFormatError(f"session {self.id}: reply {step} carries lanes or agent histories as a "
                                      f"delta on step {base}, which this client does not hold, and the session "
                                      f"has moved on to step {status.step}; call resync()")
            self.step_index, self.observation = step, status.observation
            return self.observation
        self.step_index = step
        self.observation = codec.observation_from_proto(message, self._lanes, self._histories)
        return self.observation
