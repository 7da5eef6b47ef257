"""The agents of an observation as one ``AgentTable`` of packed columns (``AGENT_LAYOUT_TABLE``).

An observation leaves the server every 0.1 s; with one ``Agent`` message per agent, building it and reading
it back cost a few hundred numpy and protobuf calls per step. A packed fixed-width column's wire bytes are
exactly the little-endian array (doubles, sfixed64 ids) behind a tag and a length, so the table is written
with one ``tobytes`` per column and read with one ``np.frombuffer`` per column from the table's
serialization: a fixed, small number of calls whatever the number of agents. Values are bit-identical to
the ``Agent`` messages' (tests/sim_server/test_observation_encoding.py). Only protobuf and numpy are
imported (core code).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vectorworld.errors import ConfigError, DataFormatError
from vectorworld.scene import HISTORY_STEPS, Agents
from vectorworld.v1 import world_pb2
from vectorworld.wire.raw import AGENT_TYPES, length_delimited_spans
from vectorworld.wire.varint import LEN, VARINT, encode_varint, field_tag

_FIELDS = world_pb2.AgentTable.DESCRIPTOR.fields_by_name
_COLUMNS = ("x_m", "y_m", "yaw_rad", "speed_mps", "length_m", "width_m")
_TAGS = {name: field_tag(_FIELDS[name].number, LEN) for name in (*_COLUMNS, "id", "agent_type", "history",
                                                              "history_valid", "history_sent")}
_HISTORY_STEPS_TAG = field_tag(_FIELDS["history_steps"].number, VARINT)
_NUMBERS = {name: f.number for name, f in _FIELDS.items()}
_TYPE_OF_BYTE = np.array([v if v in AGENT_TYPES else 0 for v in range(128)], np.int8)
"""Agent type of each single-byte wire value (0-127): itself if it is an AgentType, else 0 (unknown)."""


_NO_HISTORY, _NO_HISTORY_VALID = np.zeros((0, HISTORY_STEPS, 4)), np.zeros((0, HISTORY_STEPS), bool)


def _packed(name: str, data: bytes) -> bytes:
    return _TAGS[name] + encode_varint(len(data)) + data


def _varints(values: np.ndarray) -> bytes:
    """Packed varints of int64 values (Python loop over the cached single varints: faster than numpy for the
    few dozen small agent types of an observation)."""
    return b"".join([encode_varint(v) for v in values.tolist()])


def agent_table_to_wire(agents: Agents, slots: Sequence[int] | np.ndarray | None, field_number: int,
                        history_sent: np.ndarray | None = None) -> bytes:
    """The wire bytes of an ``AgentTable`` holding the agents of ``slots`` (rows in that order; None: every
    slot, as in an observation, whose agent table is compacted) as the message field ``field_number`` of the
    enclosing message (merge them with ``MergeFromString``). ``history_sent`` ((N,) bool, one per row;
    HISTORY_DELIVERY_DELTA): only the histories of those rows are written, and the flags as ``history_sent``."""
    rows: slice | np.ndarray = slice(None) if slots is None else np.asarray(slots, dtype=np.intp).reshape(-1)
    f8 = np.dtype("<f8")

    def doubles(values: np.ndarray) -> bytes:
        return np.ascontiguousarray(values, f8).tobytes()

    history, history_valid, sent = agents.history[rows], agents.history_valid[rows], b""
    if history_sent is not None:
        flags = np.ascontiguousarray(history_sent, bool).reshape(-1)
        if len(flags) != len(history):
            raise ConfigError(f"history_sent holds {len(flags)} flags for {len(history)} agents")
        sent = _packed("history_sent", flags.view(np.uint8).tobytes())
        if flags.any():
            rows_sent = np.flatnonzero(flags)
            history, history_valid = history[rows_sent], history_valid[rows_sent]
        else:  # no history at all (most steps)
            history, history_valid = _NO_HISTORY, _NO_HISTORY_VALID
    body = b"".join((
        _packed("id", np.ascontiguousarray(agents.id[rows], "<i8").tobytes()),
        _packed("agent_type", _varints(agents.agent_type[rows])),
        _packed("x_m", doubles(agents.xy[rows, 0])),
        _packed("y_m", doubles(agents.xy[rows, 1])),
        _packed("yaw_rad", doubles(agents.yaw[rows])),
        _packed("speed_mps", doubles(agents.speed[rows])),
        _packed("length_m", doubles(agents.length[rows])),
        _packed("width_m", doubles(agents.width[rows])),
        _HISTORY_STEPS_TAG + encode_varint(agents.history.shape[1]),
        _packed("history", doubles(history)),
        _packed("history_valid", np.ascontiguousarray(history_valid, np.uint8).tobytes()),
        sent,
    ))
    return field_tag(field_number, LEN) + encode_varint(len(body)) + body


def agents_from_table(msg: world_pb2.AgentTable, history_steps: int = HISTORY_STEPS,
                      previous: HeldHistories | None = None) -> Agents:
    """Agents, one valid slot per row, exactly as :func:`~vectorworld.wire.raw.agents_from_proto`
    reads the same agents as ``Agent`` messages: unknown agent types become 0, a table without history gives
    each agent its current state as the only valid history entry, a longer history keeps its last
    ``history_steps`` entries. Raises DataFormatError (naming the column) when column lengths disagree.

    A table with ``history_sent`` (HISTORY_DELIVERY_DELTA) needs ``previous``, the histories of the
    observation it is a delta on: rows without their history get that of the same id there, shifted one
    step, with their current state as the newest entry (DataFormatError if ``previous`` is None, lacks the
    id, or has another history length)."""
    data = bytearray(msg.SerializeToString())  # writable: the arrays below are views of it
    spans = length_delimited_spans(data)
    n = spans.get(_NUMBERS["id"], (0, 0))[1] // 8
    steps = msg.history_steps

    def column(name: str, count: int, dtype: str, itemsize: int, rows: int | None = None) -> np.ndarray:
        offset, size = spans.get(_NUMBERS[name], (0, 0))
        if size != count * itemsize:
            rows = n if rows is None else rows
            raise DataFormatError(f"agent_table.{name} holds {size // itemsize} values, expected {count} "
                                  f"({rows} agents{'' if count == rows else f' x {count // max(rows, 1)}'})")
        return np.frombuffer(data, dtype, count, offset)

    if spans.get(_NUMBERS["agent_type"], (0, 0))[1] == n:  # one byte per type: all in [0, 127]
        types = _TYPE_OF_BYTE[column("agent_type", n, "u1", 1)]
    else:
        wide = np.array(msg.agent_type, np.int64)
        if len(wide) != n:
            raise DataFormatError(f"agent_table.agent_type holds {len(wide)} values, expected {n} (one per id)")
        types = np.where((wide >= 0) & (wide < len(_TYPE_OF_BYTE)), _TYPE_OF_BYTE[wide & 0x7F], 0)
    ids = column("id", n, "<i8", 8)
    x, y, yaw, speed = (column(name, n, "<f8", 8) for name in _COLUMNS[:4])
    length, width = column("length_m", n, "<f8", 8), column("width_m", n, "<f8", 8)
    xy = np.empty((n, 2))
    xy[:, 0], xy[:, 1] = x, y
    if _NUMBERS["history_sent"] in spans:  # a history delta
        sent = column("history_sent", n, "u1", 1) != 0
        m = int(np.count_nonzero(sent))
        history, history_valid = _delta_histories(ids, (x, y, yaw, speed), sent if m else None, steps,
                                                  history_steps, previous)
        if m:
            history[sent] = column("history", m * steps * 4, "<f8", 8, m).reshape(m, steps, 4)
            history_valid[sent] = column("history_valid", m * steps, "u1", 1, m).reshape(m, steps) != 0
    elif steps and steps == history_steps:  # the usual case: the history arrays are views of the table
        history = column("history", n * steps * 4, "<f8", 8).reshape(n, steps, 4)
        history_valid = column("history_valid", n * steps, "u1", 1).reshape(n, steps) != 0
    else:
        history, history_valid = np.zeros((n, history_steps, 4)), np.zeros((n, history_steps), bool)
        h = min(steps, history_steps)
        if h:
            history[:, -h:] = column("history", n * steps * 4, "<f8", 8).reshape(n, steps, 4)[:, -h:]
            history_valid[:, -h:] = column("history_valid", n * steps, "u1", 1).reshape(n, steps)[:, -h:] != 0
        elif history_steps:
            history[:, -1, :2], history[:, -1, 2], history[:, -1, 3] = xy, yaw, speed
            history_valid[:, -1] = True
    return Agents(id=ids, valid=np.ones(n, bool), agent_type=types.astype(np.int8, copy=False),
                  xy=xy, yaw=yaw, speed=speed, length=length, width=width, history=history,
                  history_valid=history_valid)


@dataclass(frozen=True)
class HeldHistories:
    """The agents of the observation a history delta applies to (the client's own copies): ids (K,) int64,
    history (K, H, 4) float64 (x_m, y_m, yaw_rad, speed_mps; global frame), history_valid (K, H) bool."""

    ids: np.ndarray
    history: np.ndarray
    history_valid: np.ndarray


def rows_of(ids: np.ndarray, held: np.ndarray) -> np.ndarray:
    """(N,) intp: the row of each of ``ids`` in ``held`` ((K,) distinct int64), -1 where absent."""
    if not len(held):
        return np.full(len(ids), -1, np.intp)
    order = np.argsort(held, kind="stable")
    ranked = held[order]
    at = np.minimum(np.searchsorted(ranked, ids), len(held) - 1)
    return np.where(ranked[at] == ids, order[at], -1)


def _delta_histories(ids: np.ndarray, current: tuple[np.ndarray, ...], sent: np.ndarray | None, steps: int,
                     history_steps: int, previous: HeldHistories | None) -> tuple[np.ndarray, np.ndarray]:
    """(N, H, 4) and (N, H) histories of a delta table's rows: those not ``sent`` ((N,) bool; None: none is
    sent) rebuilt from ``previous`` (the same id's history there, shifted one step, then ``current`` = (x, y,
    yaw, speed) columns, valid); the rows ``sent`` are left for the caller to fill."""
    if previous is None:
        raise DataFormatError("agent_table carries a history delta (history_sent): decode it with the "
                              "session's AgentHistoryCache")
    if steps != history_steps or previous.history.shape[1] != steps:
        raise DataFormatError(f"agent_table: a history delta with history_steps = {steps}, on histories of "
                              f"{previous.history.shape[1]} steps; expected {history_steps}")
    n, (x, y, yaw, speed) = len(ids), current
    history, valid = np.empty((n, steps, 4)), np.empty((n, steps), bool)
    history[:, -1, 0], history[:, -1, 1], history[:, -1, 2], history[:, -1, 3] = x, y, yaw, speed
    valid[:, -1] = True
    if sent is None and ids.tobytes() == previous.ids.tobytes():  # the same agents (most steps)
        history[:, :-1], valid[:, :-1] = previous.history[:, 1:], previous.history_valid[:, 1:]
        return history, valid
    kept = np.ones(n, bool) if sent is None else ~sent
    rows = rows_of(ids[kept], previous.ids)
    if (rows < 0).any():
        missing = ids[kept][rows < 0][:5].tolist()
        raise DataFormatError(f"agent_table: agents {missing} come without their history but are not in the "
                              f"observation the history delta applies to")
    history[kept, :-1], valid[kept, :-1] = previous.history[rows, 1:], previous.history_valid[rows, 1:]
    return history, valid
