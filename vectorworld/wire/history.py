"""Agent histories as deltas (``HISTORY_DELIVERY_DELTA``): each agent's history is sent once, then only its
current state.

An observation's agent table carries H = 11 history entries per agent, ~80 % of a compact observation's
bytes, although a client that decoded the previous observation already holds all of them but the newest:
from one step to the next an agent's history shifts by one entry and gains its current state
(:meth:`~vectorworld.scene.Agents.with_state`). The server side, :class:`HistoryDeltaEncoder`, checks that
bit for bit per agent against the previous observation it sent and omits only the histories the client
can rebuild exactly; :class:`AgentHistoryCache` rebuilds them on the client. Observation.history_delivery
in ``proto/vectorworld/v1/world.proto`` is the contract. Only protobuf and numpy are imported (core code).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld.errors import DataFormatError
from vectorworld.scene import Agents
from vectorworld.v1 import world_pb2
from vectorworld.wire.raw import agents_from_proto
from vectorworld.wire.table import HeldHistories, agents_from_table, rows_of

HISTORY_FULL, HISTORY_DELTA = world_pb2.HISTORY_DELIVERY_FULL, world_pb2.HISTORY_DELIVERY_DELTA


@dataclass(frozen=True)
class HistoryDelta:
    """What :meth:`HistoryDeltaEncoder.encode` decides for one observation.

    delivery: ``HISTORY_DELIVERY_FULL`` (every history is sent) or ``HISTORY_DELIVERY_DELTA``; sent: (N,)
    bool, per row, whether its history is sent (None when FULL); base_step: step of the observation the
    delta applies to (DELTA)."""

    delivery: int
    sent: np.ndarray | None
    base_step: int


@dataclass(frozen=True)
class _Base:
    """The agents of the last observation encoded, as the bytes the next comparison needs: its step and
    number of rows, ids (int64), history entries 1 .. H-1 ((N, H-1, 4) float64) and their validity ((N, H-1)
    bool). Comparing bytes is bitwise: -0.0 differs from 0.0, a NaN equals only the same NaN."""

    step: int
    n: int
    ids: bytes
    tail: bytes
    valid_tail: bytes

    def arrays(self, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """ids (N,), tail (N, H-1, 4) and valid_tail (N, H-1) as (read-only) arrays."""
        return (np.frombuffer(self.ids, np.int64), np.frombuffer(self.tail, np.float64).reshape(self.n, steps - 1, 4),
                np.frombuffer(self.valid_tail, bool).reshape(self.n, steps - 1))


class HistoryDeltaEncoder:
    """Server side of ``HISTORY_DELIVERY_DELTA`` for one session: the agents of the last observation it
    encoded.

    Call :meth:`encode` for every observation the session sends from CreateSession, Step and StreamSession,
    in step order and under the session's lock (GetSession's complete observations do not go through it),
    exactly as :class:`~vectorworld.wire.lanes.LaneDeltaEncoder`. A row's history is omitted only when
    its id was in the previous observation and its history equals that one shifted by one step with the
    row's current state (x, y, yaw, speed), valid, as the newest entry, bit for bit (-0.0 is not 0.0, a NaN
    equals only the same NaN): exactly what the client rebuilds."""

    def __init__(self) -> None:
        self._base: _Base | None = None
        self._steps = 0

    def encode(self, agents: Agents, step: int) -> HistoryDelta:
        """The history delivery of the observation of ``step`` whose agent table rows are ``agents`` (all
        rows, in order); remembers them as the base of the next delta. The first observation (and one with
        duplicate ids, or after one) goes out complete."""
        ids = np.asarray(agents.id, np.int64)
        history, valid = np.asarray(agents.history, np.float64), np.asarray(agents.history_valid, bool)
        n, steps = history.shape[:2]
        ids_bytes, base, base_steps = ids.tobytes(), self._base, self._steps
        same_ids = base is not None and ids_bytes == base.ids
        unique = same_ids or n < 2 or bool(np.diff(np.sort(ids)).all())
        self._base = _Base(step, n, ids_bytes, history[:, 1:].tobytes(), valid[:, 1:].tobytes()) \
            if unique and steps else None
        self._steps = steps
        if base is None or not unique or not steps or base_steps != steps:
            return HistoryDelta(HISTORY_FULL, None, 0)
        current = (np.asarray(agents.xy, np.float64), np.asarray(agents.yaw, np.float64),
                   np.asarray(agents.speed, np.float64))
        if (same_ids and history[:, :-1].tobytes() == base.tail and valid[:, :-1].tobytes() == base.valid_tail
                and bool(valid[:, -1].all()) and history[:, -1, :2].tobytes() == current[0].tobytes()
                and history[:, -1, 2].tobytes() == current[1].tobytes()
                and history[:, -1, 3].tobytes() == current[2].tobytes()):
            return HistoryDelta(HISTORY_DELTA, np.zeros(n, bool), base.step)  # every history rebuilds (most steps)
        # row by row: what the client rebuilds from the base (rows absent from it: anything; they are sent)
        base_ids, tail, valid_tail = base.arrays(steps)
        rows = np.arange(n) if same_ids else rows_of(ids, base_ids)
        held = np.maximum(rows, 0)
        expected = np.empty((n, steps, 4))
        expected[:, :-1], expected[:, -1, :2], expected[:, -1, 2], expected[:, -1, 3] = tail[held], *current
        expected_valid = np.empty((n, steps), bool)
        expected_valid[:, :-1], expected_valid[:, -1] = valid_tail[held], True
        same = ((history.view(np.uint64).reshape(n, -1) == expected.view(np.uint64).reshape(n, -1)).all(1)
                & (valid == expected_valid).all(1) & (rows >= 0))
        return HistoryDelta(HISTORY_DELTA, ~same, base.step)


class AgentHistoryCache:
    """Client-side agent histories of one session: decodes every observation's agents, rebuilding the
    histories a ``HISTORY_DELIVERY_DELTA`` observation leaves out from the previous observation's.

    Holds its own copy of the latest observation's ids and histories (a planner may edit the arrays it was
    handed). One per session, fed every observation in step order (the server's step order is the decode
    order), like :class:`~vectorworld.wire.lanes.LaneDecodeCache`."""

    def __init__(self) -> None:
        self._held: tuple[int, HeldHistories] | None = None

    def holds(self, step: int) -> bool:
        """True if the histories of the observation of ``step`` are held (a delta based on it applies)."""
        return self._held is not None and self._held[0] == step

    def observation_agents(self, msg: world_pb2.Observation) -> Agents:
        """The agents of ``msg`` with complete histories, whether it carries them all or a delta; remembers
        them. Raises DataFormatError for a delta whose base step is not held (check :meth:`holds` first;
        the remedy is a complete observation from GetSession) or that cannot be rebuilt from it."""
        if msg.history_delivery != HISTORY_DELTA:
            agents = agents_from_table(msg.agent_table) if msg.HasField("agent_table") \
                else agents_from_proto(msg.agents)
        else:
            held = self._held
            if held is None or held[0] != msg.history_base_step:
                raise DataFormatError(f"observation {msg.step}: its agent histories are a delta on the "
                                      f"observation of step {msg.history_base_step}, but the client holds "
                                      f"{'none' if held is None else f'those of step {held[0]}'}; read the "
                                      f"complete observation with GetSession(include_observation=true)")
            if not msg.HasField("agent_table"):
                raise DataFormatError(f"observation {msg.step}: a history delta needs agent_table "
                                      f"(HISTORY_DELIVERY_DELTA needs AGENT_LAYOUT_TABLE)")
            agents = agents_from_table(msg.agent_table, previous=held[1])
        self._held = (msg.step, HeldHistories(agents.id.copy(), agents.history.copy(), agents.history_valid.copy()))
        return agents
