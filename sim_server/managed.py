"""A live session's record in the server: :class:`ManagedSession` (the engine's Session with its locks,
observation encoder, journal and kept reply), :class:`CachedReply`, and the session-level errors the
:class:`~sim_server.sessions.SessionManager` raises (the servicer maps them to gRPC status codes).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

from sim_server.journal import SessionJournal
from vectorworld.errors import VectorWorldError
from vectorworld.sim.observation import Observation
from vectorworld.sim.session import Session
from vectorworld.v1 import simulator_service_pb2 as pb
from vectorworld.wire.session_encoder import ObservationEncoder


class SessionNotFoundError(VectorWorldError, KeyError):
    """No live session has this id (never created, closed, or reaped)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SessionCapError(VectorWorldError):
    """The server already runs its maximum number of sessions."""


class SessionBusyError(VectorWorldError):
    """Another call held the session's lock for longer than the lock timeout."""


class SessionFailedError(VectorWorldError):
    """An earlier call raised an unexpected error inside this session; its state is not trustworthy."""


class ShuttingDownError(VectorWorldError):
    """The server is draining and accepts no new sessions."""


class SessionLostError(VectorWorldError):
    """The session existed before the server restarted but could not be rebuilt from its journal."""


class SessionRecoveringError(VectorWorldError):
    """The session is being rebuilt from its journal after a restart; retry shortly."""


@dataclass(frozen=True)
class CachedReply:
    """The last step's reply, kept until the client asks for the step after it."""

    expected_step: int
    command: bytes
    reply: bytes


@dataclass
class ManagedSession:
    """A live session and its bookkeeping. ``lock`` serialises every call on the session."""

    id: str
    session: Session
    created_s: float
    last_used_s: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    tiles_seen: int = 0
    failure: str | None = None
    closed: bool = False
    encoder: ObservationEncoder = field(default_factory=ObservationEncoder, repr=False)
    """How this session's observations are encoded, with the state its deltas keep (used under ``lock``)."""
    journal: SessionJournal | None = field(default=None, repr=False)
    last_reply: CachedReply | None = field(default=None, repr=False)
    recovery_replayed: int = 0
    """Rebuilt after a restart: how many journal steps were replayed (after the snapshot, if one was used)."""
    recovery_snapshot: bool = False
    """Rebuilt after a restart from a snapshot (``sim_server/snapshots.py``)."""
    alock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    """The asyncio server's per-session queue: callers wait here (on the event loop, costing no engine
    thread) before their work goes to the engine pool, where ``lock`` is then free or nearly so."""

    @property
    def encoding(self) -> dict[str, bool]:
        """The encoder's choice as keywords of :class:`ObservationEncoder` (journal headers keep it)."""
        return {"lane_delta": self.encoder.lane_delta, "agent_table": self.encoder.agent_table,
                "history_delta": self.encoder.history_delta}

    def encode_reply(self, obs: Observation) -> bytes:
        """The serialized step reply (StepResponse and StreamSessionResponse have the same fields)."""
        response = pb.StepResponse(session_id=self.id, step=obs.step, sim_time_us=obs.sim_time_us)
        self.encoder.encode(obs, response.observation)
        return response.SerializeToString()
