"""A log's traffic lights as a signal program: the recorded states exactly, then a phase plan that continues.

Every lane of the map with at least one known state in the log (WOMD ``dynamic_map_states``, nuPlan
``traffic_light_status``) gets a :class:`~vectorworld.signals.LaneSignal` of one
:class:`~vectorworld.signals.LoggedProgram` (one group per lane, states as logged, UNKNOWN where a step does
not list the lane). After the log a two-axis fixed-time plan continues: the lanes are split by heading
(folded modulo 180 degrees) into the axis of the first lane and the one across it; each axis gets a green
of ``green_s``, a yellow and an all-red in turn. It starts where the log leaves off: the axis that showed green
or yellow last goes on (green: a fresh green; yellow: its yellow), and if every lane was red last, an
all-red clearance comes first. Lanes that the log shows with arrows keep arrows.
"""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.data.scenario import TrafficSignals
from vectorworld.scene import Lane, LaneGraph
from vectorworld.signals import (
    GREEN_STATES,
    YELLOW_STATES,
    LaneSignal,
    LoggedProgram,
    Phase,
    PhasePlan,
    SignalState,
)

GREEN_S = 20.0
YELLOW_S = 4.0
ALL_RED_S = 2.0
LOG_CONTROLLER = -1
"""Controller id of a log's lights."""

_ARROWS = {SignalState.ARROW_STOP, SignalState.ARROW_CAUTION, SignalState.ARROW_GO}


def logged_states(signals: TrafficSignals, lane_ids: list[int]) -> np.ndarray:
    """(S, G) int8: the state of each of ``lane_ids`` at every step of the log (UNKNOWN where not listed)."""
    col = {lane: g for g, lane in enumerate(lane_ids)}
    out = np.zeros((signals.valid.shape[0], len(lane_ids)), np.int8)
    for k in range(signals.valid.shape[0]):
        for lane, state in zip(signals.lane_ids[k][signals.valid[k]], signals.states[k][signals.valid[k]], strict=True):
            g = col.get(int(lane))
            if g is not None:
                out[k, g] = state
    return out


def _last_known(column: np.ndarray) -> SignalState:
    known = column[column != SignalState.UNKNOWN]
    return SignalState(int(known[-1])) if len(known) else SignalState.UNKNOWN


def continuation(lanes: list[Lane], log: np.ndarray, green_s: float = GREEN_S) -> PhasePlan:
    """The phase plan that continues after the log ``log`` (S, G) of ``lanes`` (G) (module docstring)."""
    heading = np.array([lane.start_pose[1] for lane in lanes])
    folded = geometry.wrap_angle(2.0 * (heading - heading[0])) / 2.0  # modulo pi
    axis = (np.abs(folded) > np.pi / 4).astype(int)
    arrow = np.array([bool(set(np.unique(log[:, g]).tolist()) & {int(s) for s in _ARROWS}) for g in range(len(lanes))])
    last = [_last_known(log[:, g]) for g in range(len(lanes))]

    def states(green_axis: int | None, kind: str) -> tuple[SignalState, ...]:
        out = []
        for g in range(len(lanes)):
            if green_axis is None or axis[g] != green_axis:
                out.append(SignalState.ARROW_STOP if arrow[g] else SignalState.STOP)
            elif kind == "green":
                out.append(SignalState.ARROW_GO if arrow[g] else SignalState.GO)
            else:
                out.append(SignalState.ARROW_CAUTION if arrow[g] else SignalState.CAUTION)
        return tuple(out)

    green_last = [int(axis[g]) for g in range(len(lanes)) if last[g] in GREEN_STATES]
    yellow_last = [int(axis[g]) for g in range(len(lanes)) if last[g] in YELLOW_STATES]
    first = green_last[0] if green_last else yellow_last[0] if yellow_last else 0
    order = [first, 1 - first] if (axis == 1 - first).any() else [first]
    phases: list[Phase] = []
    for ax in order:
        phases += [Phase(green_s, states(ax, "green")), Phase(YELLOW_S, states(ax, "yellow")),
                   Phase(ALL_RED_S, states(None, "red"))]
    cycle = sum(p.duration_s for p in phases)
    if green_last:
        offset = 0.0
    elif yellow_last:
        offset = green_s
    else:
        offset = cycle - ALL_RED_S  # every lane red: clear first, then the first axis
    return PhasePlan(tuple(phases), offset_s=offset)


def replay_signals(signals: TrafficSignals, graph: LaneGraph, start_step: int,
                   dt_s: float = 0.1) -> dict[int, LaneSignal]:
    """Lane id -> its light, for every lane of ``graph`` with a known state in the log; session time 0 is log
    step ``start_step`` (the log's current step)."""
    seen = {int(lane) for lane, state in zip(signals.lane_ids[signals.valid], signals.states[signals.valid],
                                             strict=True) if state != SignalState.UNKNOWN}
    lane_ids = sorted(lane for lane in seen if lane in graph)
    if not lane_ids:
        return {}
    log = logged_states(signals, lane_ids)
    lanes = [graph[i] for i in lane_ids]
    program = LoggedProgram(log, start_step, dt_s, continuation(lanes, log))
    return {lane: LaneSignal(LOG_CONTROLLER, g, program) for g, lane in enumerate(lane_ids)}
