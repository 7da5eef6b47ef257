"""One served session's observation encoding: how it carries lanes, agents and histories, and the state its
deltas keep between steps.

A session chooses its encoding once (CreateSessionRequest.lane_delivery / agent_layout / history_delivery);
:class:`ObservationEncoder` holds that choice with the caches it needs, so the server keeps one object per
session instead of four fields passed along as positional arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vectorworld.errors import ConfigError
from vectorworld.sim.observation import Observation
from vectorworld.v1 import world_pb2
from vectorworld.wire.codec import observation_to_proto
from vectorworld.wire.history import HistoryDeltaEncoder
from vectorworld.wire.lanes import LaneDeltaEncoder, LaneEncodeMemo


@dataclass
class ObservationEncoder:
    """Encodes one session's observations; :meth:`encode` is called in step order (not thread-safe: the
    server calls it under the session's lock).

    lane_delta: lanes as deltas against the previous observation sent (LANE_DELIVERY_DELTA);
    agent_table: agents as one AgentTable (AGENT_LAYOUT_TABLE); history_delta: agent histories as deltas
    (HISTORY_DELIVERY_DELTA, needs ``agent_table``)."""

    lane_delta: bool = False
    agent_table: bool = False
    history_delta: bool = False
    _lane_memo: LaneEncodeMemo = field(default_factory=LaneEncodeMemo, init=False, repr=False)
    _lanes: LaneDeltaEncoder | None = field(default=None, init=False, repr=False)
    _histories: HistoryDeltaEncoder | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.history_delta and not self.agent_table:
            raise ConfigError("history_delivery = DELTA needs agent_layout = AGENT_LAYOUT_TABLE (agent messages "
                              "always carry whole histories)", field="history_delivery")
        self._lanes = LaneDeltaEncoder() if self.lane_delta else None
        self._histories = HistoryDeltaEncoder() if self.history_delta else None

    @classmethod
    def from_request(cls, lane_delivery: int, agent_layout: int, history_delivery: int) -> ObservationEncoder:
        """The encoder a CreateSessionRequest asks for; ConfigError (naming the field) for a value outside
        its enum or history deltas without the agent table."""
        _check_enum("lane_delivery", lane_delivery, world_pb2.LaneDelivery)
        _check_enum("agent_layout", agent_layout, world_pb2.AgentLayout)
        _check_enum("history_delivery", history_delivery, world_pb2.HistoryDelivery)
        return cls(lane_delta=lane_delivery == world_pb2.LANE_DELIVERY_DELTA,
                   agent_table=agent_layout == world_pb2.AGENT_LAYOUT_TABLE,
                   history_delta=history_delivery == world_pb2.HISTORY_DELIVERY_DELTA)

    def encode(self, obs: Observation, out: world_pb2.Observation | None = None) -> world_pb2.Observation:
        """The next observation of the session in its encoding (deltas against the previous one sent)."""
        return observation_to_proto(obs, out, self._lane_memo, self._lanes, self.agent_table, self._histories)

    def encode_complete(self, obs: Observation, out: world_pb2.Observation | None = None
                        ) -> world_pb2.Observation:
        """An out-of-order observation (GetSession): complete lanes and histories, never a delta, in the
        session's agent layout; the deltas' state is left as it was."""
        return observation_to_proto(obs, out, self._lane_memo, agent_table=self.agent_table)

    @property
    def lane_delivery(self) -> int:
        return world_pb2.LANE_DELIVERY_DELTA if self.lane_delta else world_pb2.LANE_DELIVERY_FULL

    @property
    def agent_layout(self) -> int:
        return world_pb2.AGENT_LAYOUT_TABLE if self.agent_table else world_pb2.AGENT_LAYOUT_MESSAGES

    @property
    def history_delivery(self) -> int:
        return world_pb2.HISTORY_DELIVERY_DELTA if self.history_delta else world_pb2.HISTORY_DELIVERY_FULL


def _check_enum(name: str, value: int, enum: object) -> None:
    descriptor = enum.DESCRIPTOR  # type: ignore[attr-defined]
    if value not in descriptor.values_by_number:
        allowed = ", ".join(f"{v.number} {v.name}" for v in descriptor.values)
        raise ConfigError(f"{name} = {value} is not a {descriptor.name} value ({allowed}; 0 means the default)",
                          field=name)
