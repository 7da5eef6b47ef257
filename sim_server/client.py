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

Retries: read-only calls (GetSession, ListSessions) are retried on UNAVAILABLE / DEADLINE_EXCEEDED with
exponential backoff. A Step is retried with the *same* expected step index, so a retry can never apply a
command twice: if the first attempt had in fact been applied, the server answers ABORTED and the client
reads the session (GetSession, whose observation always carries every lane and whole histories, the base
of the next deltas) and returns its observation when it is exactly one step further. After any other ABORTED step (the
session was stepped by someone else), :meth:`RemoteSession.resync` reads the current state and stepping
continues from there. CreateSession, CloseSession and streams are not retried (not idempotent).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc

from sim_server import simulator_service_pb2_grpc
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
                 retries: int = 3, backoff_s: float = 0.1,
                 max_receive_message_bytes: int = 64 * 1024 * 1024) -> None:
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
        response = self._retry(lambda: self.stub.GetSession(
            pb.GetSessionRequest(session_id=session_id, include_observation=include_observation),
            timeout=self.timeout_s, metadata=self.metadata))
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
            page = self._retry(lambda t=token: self.stub.ListSessions(
                pb.ListSessionsRequest(page_token=t), timeout=self.timeout_s, metadata=self.metadata))
            out.extend(page.sessions)
            token = page.next_page_token
            if not token:
                return out

    def close_session(self, session_id: str) -> dict[str, Any]:
        response = self.stub.CloseSession(pb.CloseSessionRequest(session_id=session_id),
                                          timeout=self.timeout_s, metadata=self.metadata)
        return codec.report_from_proto(response.report)

    # ----------------------------------------------------------------- plumbing
    def _retry(self, call: Callable[[], T]) -> T:
        for attempt in range(self.retries + 1):
            try:
                return call()
            except grpc.RpcError as err:
                if err.code() not in RETRYABLE or attempt == self.retries:
                    raise
                time.sleep(self.backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> SimClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
        for attempt in range(self.client.retries + 1):
            try:
                response = self.client.stub.Step(request, timeout=self.client.timeout_s,
                                                 metadata=self.client.metadata)
                return self._advance(response.step, response.observation)
            except grpc.RpcError as err:
                code = err.code()
                if code == grpc.StatusCode.ABORTED and attempt > 0:
                    # A previous attempt may have been applied: adopt the state if it is one step on (its
                    # lanes are complete, and they are the base of the next reply's lane delta).
                    status = self._read_complete()
                    if status.step == expected + 1 and status.observation is not None:
                        self.step_index, self.observation = status.step, status.observation
                        return status.observation
                    raise
                if code not in RETRYABLE or attempt == self.client.retries:
                    raise
                time.sleep(self.client.backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")

    def stream(self, commands: Iterable[EgoCommand | None]) -> Iterator[Observation]:
        """Step once per command over one StreamSession call; yields each observation.

        Lock-step: the next command is drawn from ``commands`` only after the previous observation
        arrived (and is in :attr:`observation`), so ``commands`` may be a generator that plans from the
        latest observation, and may stop when ``session.observation.done``."""
        first = self.step_index
        turn = threading.Semaphore(1)
        finished = threading.Event()

        def requests() -> Iterator[pb.StreamSessionRequest]:
            iterator = iter(commands)
            k = 0
            while True:
                while not turn.acquire(timeout=0.05):
                    if finished.is_set():
                        return
                if finished.is_set():
                    return
                try:
                    command = next(iterator)
                except StopIteration:
                    return
                # the session id is required in the first request only
                request = pb.StreamSessionRequest(session_id="" if k else self.id, expected_step=first + k)
                codec.command_to_proto(command, request.command)
                k += 1
                yield request

        try:
            for response in self.client.stub.StreamSession(requests(), metadata=self.client.metadata):
                obs = self._advance(response.step, response.observation)
                turn.release()
                yield obs
        finally:
            finished.set()

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
