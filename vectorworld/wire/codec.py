"""Conversion between the engine's Python values and the ``vectorworld.v1`` protobuf messages.

The server, the client and recordings all go through these functions, so the wire and the engine agree
on one mapping. Every position is in the global world frame (m, rad), as on both sides. Only protobuf is
imported here (no grpc): the generated ``vectorworld.v1.*_pb2`` modules are part of the core.

Commands and configs arriving from the wire are validated here with errors that name the wire field
(:class:`CommandError`, :class:`ConfigError`); the engine validates value ranges again on use.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from vectorworld.errors import CommandError, ConfigError, DataFormatError
from vectorworld.files import json_default
from vectorworld.scene import Agents, Crosswalk
from vectorworld.signals import SignalView
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.metrics import StepMetrics, StuckRemoval
from vectorworld.sim.observation import EndReason, Frame, Observation
from vectorworld.v1 import session_pb2, world_pb2
from vectorworld.vehicle.commands import ControlCommand, EgoCommand, StateCommand, TrajectoryCommand
from vectorworld.wire.history import AgentHistoryCache, HistoryDeltaEncoder
from vectorworld.wire.lanes import LaneDecodeCache, LaneDeltaEncoder, LaneEncodeMemo, lanes_to_wire
from vectorworld.wire.raw import (
    agents_from_proto,
    agents_to_wire,
    lane_from_proto,
    policy_of_from_proto,
    polyline_from_proto,
    polyline_to_wire,
    tile_from_proto,
    tile_to_proto,
)
from vectorworld.wire.raw import (
    polyline_to_proto as polyline_to_proto,  # re-exported: part of this module's API
)
from vectorworld.wire.table import agent_table_to_wire, agents_from_table

_END_TO_WIRE = {
    EndReason.NONE: world_pb2.END_REASON_RUNNING,
    EndReason.GOAL_REACHED: world_pb2.END_REASON_GOAL_REACHED,
    EndReason.COLLISION: world_pb2.END_REASON_COLLISION,
    EndReason.MAX_STEPS: world_pb2.END_REASON_MAX_STEPS,
    EndReason.LOG_ENDED: world_pb2.END_REASON_LOG_ENDED,
    EndReason.NO_ROAD: world_pb2.END_REASON_NO_ROAD,
}
_END_FROM_WIRE = {v: k for k, v in _END_TO_WIRE.items()}
_END_FROM_WIRE[world_pb2.END_REASON_UNSPECIFIED] = EndReason.NONE


LANE_DELIVERY_FULL, LANE_DELIVERY_DELTA = world_pb2.LANE_DELIVERY_FULL, world_pb2.LANE_DELIVERY_DELTA
"""How a session's observations carry lanes (CreateSessionRequest.lane_delivery, Observation.lane_delivery)."""
AGENT_LAYOUT_MESSAGES, AGENT_LAYOUT_TABLE = world_pb2.AGENT_LAYOUT_MESSAGES, world_pb2.AGENT_LAYOUT_TABLE
"""How a session's observations carry agents (CreateSessionRequest.agent_layout)."""
HISTORY_DELIVERY_FULL, HISTORY_DELIVERY_DELTA = world_pb2.HISTORY_DELIVERY_FULL, world_pb2.HISTORY_DELIVERY_DELTA
"""How a session's observations carry agent histories (CreateSessionRequest.history_delivery, needs TABLE)."""
_AGENT_TABLE_FIELD = world_pb2.Observation.DESCRIPTOR.fields_by_name["agent_table"].number
_ROUTE_POLYLINE_FIELD = world_pb2.Observation.DESCRIPTOR.fields_by_name["route_polyline"].number

WALL_CLOCK_REPORT_FIELDS = ("wall_s", "rtf", "tile_ms_p50", "tile_ms_p95", "npc_policy_ms")
"""Report fields measured with the wall clock (not reproducible; zeroed in deterministic recordings)."""


def end_reason_to_proto(reason: EndReason) -> int:
    return _END_TO_WIRE[reason]


def end_reason_from_proto(value: int) -> EndReason:
    return _END_FROM_WIRE.get(value, EndReason.NONE)


# --------------------------------------------------------------------------- metrics and report
def step_metrics_to_proto(m: StepMetrics, out: world_pb2.StepMetrics) -> world_pb2.StepMetrics:
    out.ego_collided_ids.extend(int(i) for i in m.ego_collided_ids)
    out.ego_offroad, out.ego_comfortable = bool(m.ego_offroad), bool(m.ego_comfortable)
    out.npc_collision_events, out.npc_offroad_events = int(m.npc_collision_events), int(m.npc_offroad_events)
    out.npc_infeasible_steps, out.npc_vehicle_steps = int(m.npc_infeasible_steps), int(m.npc_vehicle_steps)
    out.ego_distance_m = float(m.ego_distance_m)
    out.score_events.extend(m.score_events)
    out.ego_red_light, out.ego_stopped = bool(m.ego_red_light), bool(m.ego_stopped)
    for r in m.stuck_removals:
        removal = out.stuck_removals.add(agent_id=int(r.agent_id), cause=r.cause)
        removal.pose.x_m, removal.pose.y_m, removal.pose.yaw_rad = float(r.x_m), float(r.y_m), float(r.yaw_rad)
    return out


def step_metrics_from_proto(msg: world_pb2.StepMetrics) -> StepMetrics:
    removals = tuple(StuckRemoval(r.agent_id, r.cause, r.pose.x_m, r.pose.y_m, r.pose.yaw_rad)
                     for r in msg.stuck_removals)
    return StepMetrics(tuple(msg.ego_collided_ids), msg.ego_offroad, msg.npc_collision_events,
                       msg.npc_offroad_events, msg.npc_infeasible_steps, msg.npc_vehicle_steps,
                       msg.ego_comfortable, msg.ego_distance_m, tuple(msg.score_events),
                       ego_red_light=msg.ego_red_light, ego_stopped=msg.ego_stopped, stuck_removals=removals)


def signals_to_proto(view: SignalView, out: Any) -> None:  # noqa: ANN401 - repeated TrafficLight field
    """Append one TrafficLight per light of ``view`` to the repeated field ``out``."""
    for lane_id, state, (x, y), yaw, width, rule in zip(view.lane_ids.tolist(), view.states.tolist(),
                                                        view.stop_xy.tolist(), view.stop_yaw.tolist(),
                                                        view.width_m.tolist(), view.rule_states.tolist(), strict=True):
        out.add(lane_id=lane_id, state=state, stop_x_m=x, stop_y_m=y, stop_yaw_rad=yaw, width_m=width, rule_state=rule)


def signals_from_proto(lights: Any) -> SignalView:  # noqa: ANN401 - repeated TrafficLight field
    """The SignalView of a repeated TrafficLight field (sorted by lane id, as the engine's views are)."""
    if not len(lights):
        return SignalView.empty()
    rows = sorted(lights, key=lambda light: light.lane_id)
    return SignalView(np.array([r.lane_id for r in rows], np.int64), np.array([r.state for r in rows], np.int8),
                      np.array([(r.stop_x_m, r.stop_y_m) for r in rows], np.float64),
                      np.array([r.stop_yaw_rad for r in rows], np.float64),
                      np.array([r.width_m for r in rows], np.float64), np.array([r.rule_state for r in rows], np.int8))


def crosswalks_to_proto(crosswalks: tuple[Crosswalk, ...], occupied: frozenset[int], out: Any) -> None:  # noqa: ANN401
    """Append one Crosswalk message per crosswalk to the repeated field ``out``, in id order."""
    for walk in sorted(crosswalks, key=lambda w: w.id):
        msg = out.add(id=walk.id, half_width_m=walk.half_width_m, occupied=walk.id in occupied)
        msg.walk.x_m.extend(walk.walk[:, 0].tolist())
        msg.walk.y_m.extend(walk.walk[:, 1].tolist())
        msg.conflict_lane_ids.extend(walk.conflicts)
        msg.through_lane_ids.extend(walk.through)


def crosswalks_from_proto(msgs: Any) -> tuple[tuple[Crosswalk, ...], frozenset[int]]:  # noqa: ANN401
    """The crosswalks of a repeated Crosswalk field and the ids of the occupied ones; raises ConfigError
    naming ``crosswalks.walk`` for a walk with fewer than two points."""
    walks = []
    for msg in msgs:
        points = polyline_from_proto(msg.walk, "crosswalks.walk")
        if len(points) < 2:
            raise ConfigError(f"crosswalks.walk of crosswalk {msg.id} has {len(points)} points; needs at least 2",
                              field="crosswalks.walk")
        walks.append(Crosswalk(msg.id, points, msg.half_width_m, tuple(msg.conflict_lane_ids),
                               tuple(msg.through_lane_ids)))
    return tuple(walks), frozenset(msg.id for msg in msgs if msg.occupied)


_REPORT_FIELDS = {f.name for f in world_pb2.EpisodeReport.DESCRIPTOR.fields} - {"extra_json", "end_reason"}


def report_to_proto(report: dict[str, Any], include_timings: bool = True) -> world_pb2.EpisodeReport:
    """The Session.report() dict as a message; keys the schema does not name go to ``extra_json``.

    ``include_timings=False`` zeroes the wall-clock fields (:data:`WALL_CLOCK_REPORT_FIELDS`)."""
    msg = world_pb2.EpisodeReport()
    extra: dict[str, Any] = {}
    for key, value in report.items():
        if key == "end_reason":
            msg.end_reason = end_reason_to_proto(EndReason(value))
        elif key in _REPORT_FIELDS:
            if key in WALL_CLOCK_REPORT_FIELDS and not include_timings:
                continue
            setattr(msg, key, type(getattr(msg, key))(value))
        else:
            extra[key] = value
    if extra:
        msg.extra_json = json.dumps(extra, sort_keys=True, default=json_default)
    return msg


def report_from_proto(msg: world_pb2.EpisodeReport) -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(msg, name) for name in sorted(_REPORT_FIELDS)}
    out["end_reason"] = end_reason_from_proto(msg.end_reason).value
    if msg.extra_json:
        out.update(json.loads(msg.extra_json))
    return out


# --------------------------------------------------------------------------- observation and frame
def observation_to_proto(obs: Observation, out: world_pb2.Observation | None = None,
                         lane_memo: LaneEncodeMemo | None = None, lane_delta: LaneDeltaEncoder | None = None,
                         agent_table: bool = False, history_delta: HistoryDeltaEncoder | None = None
                         ) -> world_pb2.Observation:
    """The observation as a message. Lanes: with ``lane_delta`` (one per LANE_DELIVERY_DELTA session, called
    in step order) only those changed since its previous observation, else all of them (``lane_memo``, one
    per session, reuses the previous step's encoded lanes; ``lane_delivery`` is then left unset). Agents:
    ``agent_table`` (AGENT_LAYOUT_TABLE) as one AgentTable, else one Agent message each. Histories: with
    ``history_delta`` (one per HISTORY_DELIVERY_DELTA session, called in step order; needs ``agent_table``,
    ConfigError without) only those the client cannot rebuild from its previous observation, else all."""
    msg = world_pb2.Observation() if out is None else out
    msg.step, msg.sim_time_us, msg.ego_index = int(obs.step), int(obs.sim_time_us), int(obs.ego_slot)
    if history_delta is not None and not agent_table:
        raise ConfigError("history deltas (HISTORY_DELIVERY_DELTA) need the agent table (AGENT_LAYOUT_TABLE)")
    if agent_table:
        valid = obs.agents.valid
        slots = None if valid.all() else np.flatnonzero(valid)
        sent = None
        if history_delta is not None:
            rows = obs.agents if slots is None else Agents(**{f.name: getattr(obs.agents, f.name)[slots]
                                                              for f in dataclasses.fields(Agents)})
            delta = history_delta.encode(rows, int(obs.step))
            msg.history_delivery, sent = delta.delivery, delta.sent
            if sent is not None:
                msg.history_base_step = delta.base_step
        agents = agent_table_to_wire(obs.agents, slots, _AGENT_TABLE_FIELD, sent)
    else:
        agents = agents_to_wire(obs.agents, np.flatnonzero(obs.agents.valid), 3)
    if lane_delta is not None:
        lanes = lane_delta.encode(obs.lanes, int(obs.step)).wire
    else:
        lanes = lane_memo.encode(obs.lanes, 5) if lane_memo is not None else lanes_to_wire(obs.lanes, 5)
    msg.MergeFromString(agents + lanes + polyline_to_wire(obs.route_polyline, _ROUTE_POLYLINE_FIELD))
    msg.route_lane_ids.extend(int(i) for i in obs.route_lane_ids)
    step_metrics_to_proto(obs.step_metrics, msg.step_metrics)
    msg.terminated, msg.truncated = bool(obs.terminated), bool(obs.truncated)
    msg.end_reason, msg.km = end_reason_to_proto(obs.end_reason), float(obs.km)
    signals_to_proto(obs.signals, msg.traffic_lights)
    crosswalks_to_proto(obs.crosswalks, obs.occupied_crosswalks, msg.crosswalks)
    return msg


def observation_from_proto(msg: world_pb2.Observation, lane_cache: LaneDecodeCache | None = None,
                           history_cache: AgentHistoryCache | None = None) -> Observation:
    """The Observation. ``lane_cache`` (one per session, fed every observation in step order) reuses lanes
    decoded earlier and is required for LANE_DELIVERY_DELTA observations (DataFormatError without it, or
    when it does not hold the delta's base: see :meth:`LaneDecodeCache.observation_lanes`); likewise
    ``history_cache`` for HISTORY_DELIVERY_DELTA observations (:meth:`AgentHistoryCache.observation_agents`)."""
    if lane_cache is not None:
        lanes = lane_cache.observation_lanes(msg)
    elif msg.lane_delivery == world_pb2.LANE_DELIVERY_DELTA:
        raise DataFormatError(f"observation {msg.step} carries a lane delta: decode it with the session's "
                              f"LaneDecodeCache")
    else:
        lanes = tuple(lane_from_proto(lane) for lane in msg.lanes)
    if history_cache is not None:
        agents = history_cache.observation_agents(msg)
    elif msg.history_delivery == world_pb2.HISTORY_DELIVERY_DELTA:
        raise DataFormatError(f"observation {msg.step} carries agent histories as a delta: decode it with the "
                              f"session's AgentHistoryCache")
    else:
        agents = agents_from_table(msg.agent_table) if msg.HasField("agent_table") else agents_from_proto(msg.agents)
    crosswalks, occupied = crosswalks_from_proto(msg.crosswalks)
    return Observation(step=msg.step, sim_time_us=msg.sim_time_us, agents=agents,
                       ego_slot=msg.ego_index, lanes=lanes, route_lane_ids=tuple(msg.route_lane_ids),
                       route_polyline=polyline_from_proto(msg.route_polyline, "route_polyline"),
                       step_metrics=step_metrics_from_proto(msg.step_metrics), terminated=msg.terminated,
                       truncated=msg.truncated, end_reason=end_reason_from_proto(msg.end_reason), km=msg.km,
                       signals=signals_from_proto(msg.traffic_lights), crosswalks=crosswalks,
                       occupied_crosswalks=occupied)


def frame_to_proto(frame: Frame, include_timings: bool = True, include_history: bool = False,
                   out: world_pb2.Frame | None = None) -> world_pb2.Frame:
    """The frame's valid agents, map changes and metrics; timings only with ``include_timings``."""
    msg = world_pb2.Frame() if out is None else out
    msg.step, msg.sim_time_us = int(frame.step), int(frame.sim_time_us)
    msg.capacity, msg.ego_slot = int(frame.agents.capacity), int(frame.ego_slot)
    msg.MergeFromString(agents_to_wire(frame.agents, np.flatnonzero(frame.agents.valid), 4, include_history,
                                       frame.policy_of) + lanes_to_wire(frame.new_lanes, 7))
    for tile in frame.new_tiles:
        tile_to_proto(tile, msg.new_tiles.add())
    msg.removed_lane_ids.extend(int(i) for i in frame.removed_lane_ids)
    for x, y, yaw in np.asarray(frame.ego_plan, np.float64).reshape(-1, 3).tolist():
        msg.ego_plan.add(x_m=x, y_m=y, yaw_rad=yaw)
    step_metrics_to_proto(frame.step_metrics, msg.step_metrics)
    msg.km, msg.end_reason = float(frame.km), end_reason_to_proto(frame.end_reason)
    if include_timings:
        msg.timings.tile_ms, msg.timings.npc_policy_ms = float(frame.tile_ms), float(frame.npc_policy_ms)
        msg.timings.new_tile_latency_ms.extend(float(t.latency_ms) for t in frame.new_tiles)
    signals_to_proto(frame.signals, msg.traffic_lights)
    crosswalks_to_proto(frame.crosswalks, frame.occupied_crosswalks, msg.crosswalks)
    return msg


def frame_from_proto(msg: world_pb2.Frame) -> Frame:
    """A Frame; free agent slots are empty, and timings are 0 when the message has none."""
    latencies = list(msg.timings.new_tile_latency_ms) if msg.HasField("timings") else []
    latencies = (latencies + [0.0] * len(msg.new_tiles))[:len(msg.new_tiles)]
    plan = np.array([(p.x_m, p.y_m, p.yaw_rad) for p in msg.ego_plan], np.float64).reshape(-1, 3)
    crosswalks, occupied = crosswalks_from_proto(msg.crosswalks)
    return Frame(step=msg.step, sim_time_us=msg.sim_time_us,
                 agents=agents_from_proto(msg.agents, capacity=msg.capacity), ego_slot=msg.ego_slot,
                 policy_of=policy_of_from_proto(msg.agents, msg.capacity),
                 new_tiles=tuple(tile_from_proto(t, lat) for t, lat in zip(msg.new_tiles, latencies, strict=True)),
                 new_lanes=tuple(lane_from_proto(lane) for lane in msg.new_lanes),
                 removed_lane_ids=tuple(msg.removed_lane_ids), ego_plan=plan,
                 step_metrics=step_metrics_from_proto(msg.step_metrics), km=msg.km,
                 tile_ms=msg.timings.tile_ms, npc_policy_ms=msg.timings.npc_policy_ms,
                 end_reason=end_reason_from_proto(msg.end_reason), signals=signals_from_proto(msg.traffic_lights),
                 crosswalks=crosswalks, occupied_crosswalks=occupied)


# --------------------------------------------------------------------------- commands
def command_to_proto(command: EgoCommand | None, out: session_pb2.EgoCommand | None = None
                     ) -> session_pb2.EgoCommand:
    """``None`` asks for the session's built-in planner."""
    msg = session_pb2.EgoCommand() if out is None else out
    if command is None:
        msg.builtin_planner.SetInParent()
    elif isinstance(command, ControlCommand):
        msg.control.accel_mps2, msg.control.steering_rad = command.accel_mps2, command.steering_rad
    elif isinstance(command, TrajectoryCommand):
        for x, y, yaw in np.asarray(command.poses, np.float64).reshape(-1, 3).tolist():
            msg.trajectory.poses.add(x_m=x, y_m=y, yaw_rad=yaw)
    elif isinstance(command, StateCommand):
        msg.state.pose.x_m, msg.state.pose.y_m = command.x_m, command.y_m
        msg.state.pose.yaw_rad, msg.state.speed_mps = command.yaw_rad, command.speed_mps
    else:
        raise CommandError(f"unknown command type {type(command).__name__}")
    return msg


def command_from_proto(msg: session_pb2.EgoCommand, field_name: str = "command") -> EgoCommand | None:
    """The engine command, or ``None`` for ``builtin_planner``. Raises CommandError (naming the wire
    field) when no command is set or a trajectory is empty; value ranges are checked by the engine."""
    kind = msg.WhichOneof("command")
    if kind is None:
        raise CommandError(f"{field_name}: set one of control, trajectory, state or builtin_planner")
    if kind == "builtin_planner":
        return None
    if kind == "control":
        return ControlCommand(msg.control.accel_mps2, msg.control.steering_rad)
    if kind == "state":
        p = msg.state.pose
        return StateCommand(p.x_m, p.y_m, p.yaw_rad, msg.state.speed_mps)
    poses = msg.trajectory.poses
    if not poses:
        raise CommandError(f"{field_name}.trajectory.poses must hold at least one pose")
    return TrajectoryCommand(np.array([(p.x_m, p.y_m, p.yaw_rad) for p in poses], np.float64))


# --------------------------------------------------------------------------- config
_OPTIONAL_CONFIG = ("target_km", "observation_radius_m", "max_steps", "agent_capacity",
                    "terminate_on_collision", "ego_start_speed_mps")
_NAMED_CONFIG = ("generator", "npc_policy", "planner")


def config_to_proto(config: SessionConfig) -> session_pb2.SessionConfig:
    msg = session_pb2.SessionConfig(seed=int(config.seed), generator=config.generator,
                                    npc_policy=config.npc_policy, planner=config.planner)
    for name in _OPTIONAL_CONFIG:
        value = getattr(config, name)
        if value is not None:
            setattr(msg, name, value)
    scenario = getattr(config, "scenario", None)
    if scenario:
        msg.scenario = str(scenario)
    return msg


def config_from_proto(msg: session_pb2.SessionConfig, defaults: SessionConfig | None = None,
                      field_prefix: str = "config") -> SessionConfig:
    """A validated SessionConfig (:meth:`SessionConfig.validate`): unset fields keep ``defaults``. Raises
    ConfigError naming the wire field (``config.target_km``)."""
    base = SessionConfig() if defaults is None else defaults
    changes: dict[str, Any] = {"seed": int(msg.seed)}
    for name in _NAMED_CONFIG:
        value = getattr(msg, name)
        if value:
            changes[name] = value
    for name in _OPTIONAL_CONFIG:
        if msg.HasField(name):
            changes[name] = getattr(msg, name)
    if msg.scenario:
        changes["scenario"] = msg.scenario
    try:
        return dataclasses.replace(base, **changes).validate()
    except ConfigError as err:
        name = f"{field_prefix}.{err.field}" if err.field else field_prefix
        raise ConfigError(f"{field_prefix}.{err}" if err.field else f"{field_prefix}: {err}", field=name) from err


def config_dict(config: SessionConfig) -> dict[str, Any]:
    """The complete resolved config (nested dataclasses included) as JSON-ready values."""
    return json.loads(config_to_json(config))


def config_to_json(config: SessionConfig) -> str:
    """The complete resolved config (nested dataclasses included) as sorted, compact JSON."""
    return json.dumps(dataclasses.asdict(config), sort_keys=True, separators=(",", ":"),
                      default=json_default)


def config_from_json(text: str) -> SessionConfig:
    """Inverse of :func:`config_to_json`; unknown keys (a newer writer) are ignored."""
    return _dataclass_from_dict(SessionConfig, json.loads(text))


def _dataclass_from_dict(cls: type, data: dict[str, Any]) -> Any:
    default = cls()
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data or not f.init:
            continue
        current = getattr(default, f.name)
        value = data[f.name]
        if dataclasses.is_dataclass(current) and isinstance(value, dict):
            value = _dataclass_from_dict(type(current), value)
        elif isinstance(current, tuple) and isinstance(value, list):
            value = tuple(value)
        kwargs[f.name] = value
    return cls(**kwargs)
