"""Traffic signals in the scene: per-lane signal states, phase plans, and the state of every light at a step.

A signalised lane carries a :class:`LaneSignal` (``Lane.signal``): the signal *program* that drives it (a
junction's cyclic :class:`PhasePlan`, or a :class:`LoggedProgram` replaying a recorded log and then continuing
with a phase plan) and the lane's *group* (its column in the program). The lane's stop point is its first
point: a vehicle enters the controlled movement when its front crosses the start of the lane.

States use WOMD's numbering (:class:`SignalState`): red = STOP / ARROW_STOP, yellow = CAUTION /
ARROW_CAUTION, green = GO (permissive: yield to conflicting traffic) / ARROW_GO (protected). UNKNOWN and the
flashing states leave the movement to the unsignalised right-of-way rules.

Time ``t_s`` is the simulation time (s) since the start of the episode (step * 0.1 s).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

import numpy as np


class SignalState(IntEnum):
    """Traffic-signal state of a controlled lane (WOMD numbering)."""

    UNKNOWN = 0
    ARROW_STOP = 1
    ARROW_CAUTION = 2
    ARROW_GO = 3
    STOP = 4
    CAUTION = 5
    GO = 6
    FLASHING_STOP = 7
    FLASHING_CAUTION = 8


RED_STATES = frozenset({SignalState.STOP, SignalState.ARROW_STOP})
YELLOW_STATES = frozenset({SignalState.CAUTION, SignalState.ARROW_CAUTION})
GREEN_STATES = frozenset({SignalState.GO, SignalState.ARROW_GO})

_RED = np.zeros(len(SignalState), bool)
_RED[[int(s) for s in RED_STATES]] = True
_YELLOW = np.zeros(len(SignalState), bool)
_YELLOW[[int(s) for s in YELLOW_STATES]] = True


def is_red(states: np.ndarray) -> np.ndarray:
    """(...) bool: red (stop) states of an int array of :class:`SignalState`."""
    return _RED[np.asarray(states, dtype=np.int64)]


def is_yellow(states: np.ndarray) -> np.ndarray:
    """(...) bool: yellow (caution) states."""
    return _YELLOW[np.asarray(states, dtype=np.int64)]


class SignalProgram(Protocol):
    """What drives a set of lights: the state of each group at a time."""

    def states(self, groups: np.ndarray, t_s: float) -> np.ndarray:
        """(G,) int8 :class:`SignalState` of ``groups`` (G,) at ``t_s``."""
        ...

    def rule_states(self, groups: np.ndarray, t_s: float) -> np.ndarray:
        """(G,) the states traffic obeys at ``t_s`` (a log's dropouts filled with the last known state)."""
        ...


@dataclass(frozen=True)
class Phase:
    """One interval of a phase plan: ``states[g]`` is the state of group g for ``duration_s``."""

    duration_s: float
    states: tuple[SignalState, ...]

    def __post_init__(self) -> None:
        if not self.duration_s > 0:
            raise ValueError(f"phase duration_s must be > 0, got {self.duration_s}")


@dataclass(frozen=True)
class PhasePlan:
    """A fixed-time cycle of phases shifted by ``offset_s`` (the plan is at ``offset_s`` into its cycle at
    t = 0). Every phase has one state per group."""

    phases: tuple[Phase, ...]
    offset_s: float = 0.0
    _ends: np.ndarray = field(init=False, repr=False, compare=False)
    _table: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.phases:
            raise ValueError("phases: a phase plan needs at least one phase")
        width = {len(p.states) for p in self.phases}
        if len(width) != 1:
            raise ValueError(f"phases: every phase needs one state per group, got widths {sorted(width)}")
        object.__setattr__(self, "_ends", np.cumsum([p.duration_s for p in self.phases]))
        object.__setattr__(self, "_table", np.array([[int(s) for s in p.states] for p in self.phases], np.int8))

    @property
    def cycle_s(self) -> float:
        return float(self._ends[-1])

    @property
    def groups(self) -> int:
        return self._table.shape[1]

    def phase_at(self, t_s: float) -> int:
        """Index of the phase running at ``t_s``."""
        pos = (t_s + self.offset_s) % self.cycle_s
        return min(int(np.searchsorted(self._ends, pos, side="right")), len(self.phases) - 1)

    def states(self, groups: np.ndarray, t_s: float) -> np.ndarray:
        return self._table[self.phase_at(t_s), np.asarray(groups, dtype=np.int64)]

    def rule_states(self, groups: np.ndarray, t_s: float) -> np.ndarray:
        return self.states(groups, t_s)


@dataclass(frozen=True, eq=False)
class LoggedProgram:
    """Recorded states replayed exactly, then a phase plan.

    states: (S, G) int8 logged :class:`SignalState` per log step and group (UNKNOWN where the log has none);
    start_step: the log step at t = 0 (the log's "current" step); dt_s: the log's step; after: the plan that
    continues after the last logged step (its t = 0 is the first step after the log).
    """

    states_log: np.ndarray
    start_step: int
    dt_s: float
    after: PhasePlan
    _filled: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        filled = np.array(self.states_log, dtype=np.int8, copy=True)
        for k in range(1, len(filled)):  # a dropout (UNKNOWN after a known state) keeps the last known one
            gap = filled[k] == SignalState.UNKNOWN
            filled[k, gap] = filled[k - 1, gap]
        object.__setattr__(self, "_filled", filled)

    def log_step(self, t_s: float) -> int:
        return self.start_step + int(round(t_s / self.dt_s))

    def _lookup(self, table: np.ndarray, groups: np.ndarray, t_s: float) -> np.ndarray:
        k = self.log_step(t_s)
        groups = np.asarray(groups, dtype=np.int64)
        if k < len(table):
            return table[max(k, 0), groups]
        return self.after.states(groups, (k - len(table)) * self.dt_s)

    def states(self, groups: np.ndarray, t_s: float) -> np.ndarray:
        return self._lookup(self.states_log, groups, t_s)

    def rule_states(self, groups: np.ndarray, t_s: float) -> np.ndarray:
        return self._lookup(self._filled, groups, t_s)


@dataclass(frozen=True, eq=False)
class LaneSignal:
    """The light over one lane: its program, its group in it, and the id of the controller (junction) that
    owns the program."""

    controller: int
    group: int
    program: SignalProgram


@dataclass(frozen=True, eq=False)
class SignalView:
    """Every light of the known world at one step (L signalised lanes, sorted by lane id).

    lane_ids: (L,) int64; states: (L,) int8 :class:`SignalState` as shown (a log's, exactly); stop_xy: (L, 2)
    m, global frame, the stop point (each lane's first point); stop_yaw: (L,) rad, the lane's heading there;
    width_m: (L,) lane width; rule_states: (L,) int8, what traffic obeys (``states`` with a log's dropouts
    filled by the last known state; ``states`` when None). :meth:`state` answers from ``rule_states``.
    """

    lane_ids: np.ndarray
    states: np.ndarray
    stop_xy: np.ndarray
    stop_yaw: np.ndarray
    width_m: np.ndarray
    rule_states: np.ndarray | None = None
    _index: dict[int, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {int(i): k for k, i in enumerate(self.lane_ids.tolist())})
        if self.rule_states is None:
            object.__setattr__(self, "rule_states", self.states)

    @staticmethod
    def empty() -> SignalView:
        return SignalView(np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros((0, 2)), np.zeros(0), np.zeros(0))

    def __len__(self) -> int:
        return len(self.lane_ids)

    def state(self, lane_id: int) -> SignalState | None:
        """The state traffic obeys at ``lane_id``'s light, None if the lane has none."""
        k = self._index.get(int(lane_id))
        return None if k is None else SignalState(int(self.rule_states[k]))

    def subset(self, lane_ids: Iterable[int]) -> SignalView:
        """The lights of the lanes among ``lane_ids`` (a view of fewer lanes)."""
        keep = np.isin(self.lane_ids, np.fromiter(lane_ids, np.int64))
        return SignalView(self.lane_ids[keep], self.states[keep], self.stop_xy[keep], self.stop_yaw[keep],
                          self.width_m[keep], self.rule_states[keep])

    def as_dict(self) -> dict[int, SignalState]:
        return {int(i): SignalState(int(s)) for i, s in zip(self.lane_ids, self.states, strict=True)}


class SignalBoard:
    """The lights of a changing lane graph: :meth:`view` gives the states at a time. The set of lit lanes
    (and their stop points) is kept until the graph changes (``graph.version``)."""

    def __init__(self) -> None:
        self._version = -1
        self._graph_id = 0
        self._static: SignalView = SignalView.empty()
        self._programs: list[tuple[SignalProgram, np.ndarray, np.ndarray]] = []
        self._last: tuple[float, SignalView] | None = None

    def view(self, graph, t_s: float) -> SignalView:  # noqa: ANN001 - vectorworld.scene.LaneGraph
        """Every light of ``graph`` at ``t_s`` (the last view is kept: a step asks for it several times)."""
        if graph.version != self._version or id(graph) != self._graph_id:
            self._rebuild(graph.lanes.values())
            self._version, self._graph_id = graph.version, id(graph)
            self._last = None
        if self._last is not None and self._last[0] == t_s:
            return self._last[1]
        static = self._static
        if not len(static):
            return static
        states = np.zeros(len(static), np.int8)
        rule = np.zeros(len(static), np.int8)
        for program, rows, groups in self._programs:
            states[rows] = program.states(groups, t_s)
            rule[rows] = program.rule_states(groups, t_s)
        view = SignalView(static.lane_ids, states, static.stop_xy, static.stop_yaw, static.width_m, rule)
        self._last = (t_s, view)
        return view

    def _rebuild(self, lanes: Iterable) -> None:  # noqa: ANN001 - Iterable[Lane]
        lit = sorted((lane for lane in lanes if lane.signal is not None), key=lambda lane: lane.id)
        if not lit:
            self._static, self._programs = SignalView.empty(), []
            return
        by_program: dict[int, list[int]] = {}
        for k, lane in enumerate(lit):
            by_program.setdefault(id(lane.signal.program), []).append(k)
        self._programs = [(lit[rows[0]].signal.program, np.array(rows),
                           np.array([lit[k].signal.group for k in rows], np.int64)) for rows in by_program.values()]
        d = np.array([lane.points[1] - lane.points[0] for lane in lit])
        self._static = SignalView(np.array([lane.id for lane in lit], np.int64), np.zeros(len(lit), np.int8),
                                  np.array([lane.points[0] for lane in lit]), np.arctan2(d[:, 1], d[:, 0]),
                                  np.array([lane.width_m for lane in lit]))
