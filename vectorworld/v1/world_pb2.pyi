from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AgentType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AGENT_TYPE_UNSPECIFIED: _ClassVar[AgentType]
    AGENT_TYPE_VEHICLE: _ClassVar[AgentType]
    AGENT_TYPE_PEDESTRIAN: _ClassVar[AgentType]
    AGENT_TYPE_CYCLIST: _ClassVar[AgentType]
    AGENT_TYPE_OTHER: _ClassVar[AgentType]

class LaneType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LANE_TYPE_UNSPECIFIED: _ClassVar[LaneType]
    LANE_TYPE_FREEWAY: _ClassVar[LaneType]
    LANE_TYPE_SURFACE_STREET: _ClassVar[LaneType]
    LANE_TYPE_BIKE_LANE: _ClassVar[LaneType]
    LANE_TYPE_CONNECTOR: _ClassVar[LaneType]

class SignalState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SIGNAL_STATE_UNSPECIFIED: _ClassVar[SignalState]
    SIGNAL_STATE_ARROW_STOP: _ClassVar[SignalState]
    SIGNAL_STATE_ARROW_CAUTION: _ClassVar[SignalState]
    SIGNAL_STATE_ARROW_GO: _ClassVar[SignalState]
    SIGNAL_STATE_STOP: _ClassVar[SignalState]
    SIGNAL_STATE_CAUTION: _ClassVar[SignalState]
    SIGNAL_STATE_GO: _ClassVar[SignalState]
    SIGNAL_STATE_FLASHING_STOP: _ClassVar[SignalState]
    SIGNAL_STATE_FLASHING_CAUTION: _ClassVar[SignalState]

class EndReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    END_REASON_UNSPECIFIED: _ClassVar[EndReason]
    END_REASON_RUNNING: _ClassVar[EndReason]
    END_REASON_GOAL_REACHED: _ClassVar[EndReason]
    END_REASON_COLLISION: _ClassVar[EndReason]
    END_REASON_MAX_STEPS: _ClassVar[EndReason]
    END_REASON_LOG_ENDED: _ClassVar[EndReason]
    END_REASON_NO_ROAD: _ClassVar[EndReason]

class LaneDelivery(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LANE_DELIVERY_UNSPECIFIED: _ClassVar[LaneDelivery]
    LANE_DELIVERY_FULL: _ClassVar[LaneDelivery]
    LANE_DELIVERY_DELTA: _ClassVar[LaneDelivery]

class AgentLayout(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AGENT_LAYOUT_UNSPECIFIED: _ClassVar[AgentLayout]
    AGENT_LAYOUT_MESSAGES: _ClassVar[AgentLayout]
    AGENT_LAYOUT_TABLE: _ClassVar[AgentLayout]

class HistoryDelivery(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HISTORY_DELIVERY_UNSPECIFIED: _ClassVar[HistoryDelivery]
    HISTORY_DELIVERY_FULL: _ClassVar[HistoryDelivery]
    HISTORY_DELIVERY_DELTA: _ClassVar[HistoryDelivery]

class Controller(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTROLLER_UNSPECIFIED: _ClassVar[Controller]
    CONTROLLER_EGO: _ClassVar[Controller]
    CONTROLLER_NPC_POLICY: _ClassVar[Controller]
    CONTROLLER_LOG_REPLAY: _ClassVar[Controller]
AGENT_TYPE_UNSPECIFIED: AgentType
AGENT_TYPE_VEHICLE: AgentType
AGENT_TYPE_PEDESTRIAN: AgentType
AGENT_TYPE_CYCLIST: AgentType
AGENT_TYPE_OTHER: AgentType
LANE_TYPE_UNSPECIFIED: LaneType
LANE_TYPE_FREEWAY: LaneType
LANE_TYPE_SURFACE_STREET: LaneType
LANE_TYPE_BIKE_LANE: LaneType
LANE_TYPE_CONNECTOR: LaneType
SIGNAL_STATE_UNSPECIFIED: SignalState
SIGNAL_STATE_ARROW_STOP: SignalState
SIGNAL_STATE_ARROW_CAUTION: SignalState
SIGNAL_STATE_ARROW_GO: SignalState
SIGNAL_STATE_STOP: SignalState
SIGNAL_STATE_CAUTION: SignalState
SIGNAL_STATE_GO: SignalState
SIGNAL_STATE_FLASHING_STOP: SignalState
SIGNAL_STATE_FLASHING_CAUTION: SignalState
END_REASON_UNSPECIFIED: EndReason
END_REASON_RUNNING: EndReason
END_REASON_GOAL_REACHED: EndReason
END_REASON_COLLISION: EndReason
END_REASON_MAX_STEPS: EndReason
END_REASON_LOG_ENDED: EndReason
END_REASON_NO_ROAD: EndReason
LANE_DELIVERY_UNSPECIFIED: LaneDelivery
LANE_DELIVERY_FULL: LaneDelivery
LANE_DELIVERY_DELTA: LaneDelivery
AGENT_LAYOUT_UNSPECIFIED: AgentLayout
AGENT_LAYOUT_MESSAGES: AgentLayout
AGENT_LAYOUT_TABLE: AgentLayout
HISTORY_DELIVERY_UNSPECIFIED: HistoryDelivery
HISTORY_DELIVERY_FULL: HistoryDelivery
HISTORY_DELIVERY_DELTA: HistoryDelivery
CONTROLLER_UNSPECIFIED: Controller
CONTROLLER_EGO: Controller
CONTROLLER_NPC_POLICY: Controller
CONTROLLER_LOG_REPLAY: Controller

class Pose(_message.Message):
    __slots__ = ("x_m", "y_m", "yaw_rad")
    X_M_FIELD_NUMBER: _ClassVar[int]
    Y_M_FIELD_NUMBER: _ClassVar[int]
    YAW_RAD_FIELD_NUMBER: _ClassVar[int]
    x_m: float
    y_m: float
    yaw_rad: float
    def __init__(self, x_m: _Optional[float] = ..., y_m: _Optional[float] = ..., yaw_rad: _Optional[float] = ...) -> None: ...

class Polyline(_message.Message):
    __slots__ = ("x_m", "y_m")
    X_M_FIELD_NUMBER: _ClassVar[int]
    Y_M_FIELD_NUMBER: _ClassVar[int]
    x_m: _containers.RepeatedScalarFieldContainer[float]
    y_m: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, x_m: _Optional[_Iterable[float]] = ..., y_m: _Optional[_Iterable[float]] = ...) -> None: ...

class Lane(_message.Message):
    __slots__ = ("id", "centerline", "width_m", "speed_limit_mps", "lane_type", "successors", "predecessors", "left_neighbors", "right_neighbors", "tile_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    CENTERLINE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_M_FIELD_NUMBER: _ClassVar[int]
    SPEED_LIMIT_MPS_FIELD_NUMBER: _ClassVar[int]
    LANE_TYPE_FIELD_NUMBER: _ClassVar[int]
    SUCCESSORS_FIELD_NUMBER: _ClassVar[int]
    PREDECESSORS_FIELD_NUMBER: _ClassVar[int]
    LEFT_NEIGHBORS_FIELD_NUMBER: _ClassVar[int]
    RIGHT_NEIGHBORS_FIELD_NUMBER: _ClassVar[int]
    TILE_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    centerline: Polyline
    width_m: float
    speed_limit_mps: float
    lane_type: LaneType
    successors: _containers.RepeatedScalarFieldContainer[int]
    predecessors: _containers.RepeatedScalarFieldContainer[int]
    left_neighbors: _containers.RepeatedScalarFieldContainer[int]
    right_neighbors: _containers.RepeatedScalarFieldContainer[int]
    tile_id: int
    def __init__(self, id: _Optional[int] = ..., centerline: _Optional[_Union[Polyline, _Mapping]] = ..., width_m: _Optional[float] = ..., speed_limit_mps: _Optional[float] = ..., lane_type: _Optional[_Union[LaneType, str]] = ..., successors: _Optional[_Iterable[int]] = ..., predecessors: _Optional[_Iterable[int]] = ..., left_neighbors: _Optional[_Iterable[int]] = ..., right_neighbors: _Optional[_Iterable[int]] = ..., tile_id: _Optional[int] = ...) -> None: ...

class TrafficLight(_message.Message):
    __slots__ = ("lane_id", "state", "stop_x_m", "stop_y_m", "stop_yaw_rad", "width_m", "rule_state")
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STOP_X_M_FIELD_NUMBER: _ClassVar[int]
    STOP_Y_M_FIELD_NUMBER: _ClassVar[int]
    STOP_YAW_RAD_FIELD_NUMBER: _ClassVar[int]
    WIDTH_M_FIELD_NUMBER: _ClassVar[int]
    RULE_STATE_FIELD_NUMBER: _ClassVar[int]
    lane_id: int
    state: SignalState
    stop_x_m: float
    stop_y_m: float
    stop_yaw_rad: float
    width_m: float
    rule_state: SignalState
    def __init__(self, lane_id: _Optional[int] = ..., state: _Optional[_Union[SignalState, str]] = ..., stop_x_m: _Optional[float] = ..., stop_y_m: _Optional[float] = ..., stop_yaw_rad: _Optional[float] = ..., width_m: _Optional[float] = ..., rule_state: _Optional[_Union[SignalState, str]] = ...) -> None: ...

class Crosswalk(_message.Message):
    __slots__ = ("id", "walk", "half_width_m", "conflict_lane_ids", "through_lane_ids", "occupied")
    ID_FIELD_NUMBER: _ClassVar[int]
    WALK_FIELD_NUMBER: _ClassVar[int]
    HALF_WIDTH_M_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_LANE_IDS_FIELD_NUMBER: _ClassVar[int]
    THROUGH_LANE_IDS_FIELD_NUMBER: _ClassVar[int]
    OCCUPIED_FIELD_NUMBER: _ClassVar[int]
    id: int
    walk: Polyline
    half_width_m: float
    conflict_lane_ids: _containers.RepeatedScalarFieldContainer[int]
    through_lane_ids: _containers.RepeatedScalarFieldContainer[int]
    occupied: bool
    def __init__(self, id: _Optional[int] = ..., walk: _Optional[_Union[Polyline, _Mapping]] = ..., half_width_m: _Optional[float] = ..., conflict_lane_ids: _Optional[_Iterable[int]] = ..., through_lane_ids: _Optional[_Iterable[int]] = ..., occupied: _Optional[bool] = ...) -> None: ...

class Agent(_message.Message):
    __slots__ = ("id", "agent_type", "pose", "speed_mps", "length_m", "width_m", "history_x_m", "history_y_m", "history_yaw_rad", "history_speed_mps", "history_valid", "slot", "controller")
    ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    POSE_FIELD_NUMBER: _ClassVar[int]
    SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    LENGTH_M_FIELD_NUMBER: _ClassVar[int]
    WIDTH_M_FIELD_NUMBER: _ClassVar[int]
    HISTORY_X_M_FIELD_NUMBER: _ClassVar[int]
    HISTORY_Y_M_FIELD_NUMBER: _ClassVar[int]
    HISTORY_YAW_RAD_FIELD_NUMBER: _ClassVar[int]
    HISTORY_SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    HISTORY_VALID_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    id: int
    agent_type: AgentType
    pose: Pose
    speed_mps: float
    length_m: float
    width_m: float
    history_x_m: _containers.RepeatedScalarFieldContainer[float]
    history_y_m: _containers.RepeatedScalarFieldContainer[float]
    history_yaw_rad: _containers.RepeatedScalarFieldContainer[float]
    history_speed_mps: _containers.RepeatedScalarFieldContainer[float]
    history_valid: _containers.RepeatedScalarFieldContainer[bool]
    slot: int
    controller: Controller
    def __init__(self, id: _Optional[int] = ..., agent_type: _Optional[_Union[AgentType, str]] = ..., pose: _Optional[_Union[Pose, _Mapping]] = ..., speed_mps: _Optional[float] = ..., length_m: _Optional[float] = ..., width_m: _Optional[float] = ..., history_x_m: _Optional[_Iterable[float]] = ..., history_y_m: _Optional[_Iterable[float]] = ..., history_yaw_rad: _Optional[_Iterable[float]] = ..., history_speed_mps: _Optional[_Iterable[float]] = ..., history_valid: _Optional[_Iterable[bool]] = ..., slot: _Optional[int] = ..., controller: _Optional[_Union[Controller, str]] = ...) -> None: ...

class AgentTable(_message.Message):
    __slots__ = ("id", "agent_type", "x_m", "y_m", "yaw_rad", "speed_mps", "length_m", "width_m", "history_steps", "history", "history_valid", "history_sent")
    ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    X_M_FIELD_NUMBER: _ClassVar[int]
    Y_M_FIELD_NUMBER: _ClassVar[int]
    YAW_RAD_FIELD_NUMBER: _ClassVar[int]
    SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    LENGTH_M_FIELD_NUMBER: _ClassVar[int]
    WIDTH_M_FIELD_NUMBER: _ClassVar[int]
    HISTORY_STEPS_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    HISTORY_VALID_FIELD_NUMBER: _ClassVar[int]
    HISTORY_SENT_FIELD_NUMBER: _ClassVar[int]
    id: _containers.RepeatedScalarFieldContainer[int]
    agent_type: _containers.RepeatedScalarFieldContainer[AgentType]
    x_m: _containers.RepeatedScalarFieldContainer[float]
    y_m: _containers.RepeatedScalarFieldContainer[float]
    yaw_rad: _containers.RepeatedScalarFieldContainer[float]
    speed_mps: _containers.RepeatedScalarFieldContainer[float]
    length_m: _containers.RepeatedScalarFieldContainer[float]
    width_m: _containers.RepeatedScalarFieldContainer[float]
    history_steps: int
    history: _containers.RepeatedScalarFieldContainer[float]
    history_valid: _containers.RepeatedScalarFieldContainer[bool]
    history_sent: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, id: _Optional[_Iterable[int]] = ..., agent_type: _Optional[_Iterable[_Union[AgentType, str]]] = ..., x_m: _Optional[_Iterable[float]] = ..., y_m: _Optional[_Iterable[float]] = ..., yaw_rad: _Optional[_Iterable[float]] = ..., speed_mps: _Optional[_Iterable[float]] = ..., length_m: _Optional[_Iterable[float]] = ..., width_m: _Optional[_Iterable[float]] = ..., history_steps: _Optional[int] = ..., history: _Optional[_Iterable[float]] = ..., history_valid: _Optional[_Iterable[bool]] = ..., history_sent: _Optional[_Iterable[bool]] = ...) -> None: ...

class Tile(_message.Message):
    __slots__ = ("id", "center_x_m", "center_y_m", "yaw_rad", "order", "generator", "lane_ids", "size_m")
    ID_FIELD_NUMBER: _ClassVar[int]
    CENTER_X_M_FIELD_NUMBER: _ClassVar[int]
    CENTER_Y_M_FIELD_NUMBER: _ClassVar[int]
    YAW_RAD_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    LANE_IDS_FIELD_NUMBER: _ClassVar[int]
    SIZE_M_FIELD_NUMBER: _ClassVar[int]
    id: int
    center_x_m: float
    center_y_m: float
    yaw_rad: float
    order: int
    generator: str
    lane_ids: _containers.RepeatedScalarFieldContainer[int]
    size_m: float
    def __init__(self, id: _Optional[int] = ..., center_x_m: _Optional[float] = ..., center_y_m: _Optional[float] = ..., yaw_rad: _Optional[float] = ..., order: _Optional[int] = ..., generator: _Optional[str] = ..., lane_ids: _Optional[_Iterable[int]] = ..., size_m: _Optional[float] = ...) -> None: ...

class StuckRemoval(_message.Message):
    __slots__ = ("agent_id", "cause", "pose")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    POSE_FIELD_NUMBER: _ClassVar[int]
    agent_id: int
    cause: str
    pose: Pose
    def __init__(self, agent_id: _Optional[int] = ..., cause: _Optional[str] = ..., pose: _Optional[_Union[Pose, _Mapping]] = ...) -> None: ...

class StepMetrics(_message.Message):
    __slots__ = ("ego_collided_ids", "ego_offroad", "npc_collision_events", "npc_offroad_events", "npc_infeasible_steps", "npc_vehicle_steps", "ego_comfortable", "ego_distance_m", "score_events", "ego_red_light", "ego_stopped", "stuck_removals")
    EGO_COLLIDED_IDS_FIELD_NUMBER: _ClassVar[int]
    EGO_OFFROAD_FIELD_NUMBER: _ClassVar[int]
    NPC_COLLISION_EVENTS_FIELD_NUMBER: _ClassVar[int]
    NPC_OFFROAD_EVENTS_FIELD_NUMBER: _ClassVar[int]
    NPC_INFEASIBLE_STEPS_FIELD_NUMBER: _ClassVar[int]
    NPC_VEHICLE_STEPS_FIELD_NUMBER: _ClassVar[int]
    EGO_COMFORTABLE_FIELD_NUMBER: _ClassVar[int]
    EGO_DISTANCE_M_FIELD_NUMBER: _ClassVar[int]
    SCORE_EVENTS_FIELD_NUMBER: _ClassVar[int]
    EGO_RED_LIGHT_FIELD_NUMBER: _ClassVar[int]
    EGO_STOPPED_FIELD_NUMBER: _ClassVar[int]
    STUCK_REMOVALS_FIELD_NUMBER: _ClassVar[int]
    ego_collided_ids: _containers.RepeatedScalarFieldContainer[int]
    ego_offroad: bool
    npc_collision_events: int
    npc_offroad_events: int
    npc_infeasible_steps: int
    npc_vehicle_steps: int
    ego_comfortable: bool
    ego_distance_m: float
    score_events: _containers.RepeatedScalarFieldContainer[str]
    ego_red_light: bool
    ego_stopped: bool
    stuck_removals: _containers.RepeatedCompositeFieldContainer[StuckRemoval]
    def __init__(self, ego_collided_ids: _Optional[_Iterable[int]] = ..., ego_offroad: _Optional[bool] = ..., npc_collision_events: _Optional[int] = ..., npc_offroad_events: _Optional[int] = ..., npc_infeasible_steps: _Optional[int] = ..., npc_vehicle_steps: _Optional[int] = ..., ego_comfortable: _Optional[bool] = ..., ego_distance_m: _Optional[float] = ..., score_events: _Optional[_Iterable[str]] = ..., ego_red_light: _Optional[bool] = ..., ego_stopped: _Optional[bool] = ..., stuck_removals: _Optional[_Iterable[_Union[StuckRemoval, _Mapping]]] = ...) -> None: ...

class Observation(_message.Message):
    __slots__ = ("step", "sim_time_us", "agents", "ego_index", "lanes", "route_lane_ids", "route_polyline", "step_metrics", "terminated", "truncated", "end_reason", "km", "lane_delivery", "lane_ids", "lane_base_step", "agent_table", "history_delivery", "history_base_step", "traffic_lights", "crosswalks")
    STEP_FIELD_NUMBER: _ClassVar[int]
    SIM_TIME_US_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    EGO_INDEX_FIELD_NUMBER: _ClassVar[int]
    LANES_FIELD_NUMBER: _ClassVar[int]
    ROUTE_LANE_IDS_FIELD_NUMBER: _ClassVar[int]
    ROUTE_POLYLINE_FIELD_NUMBER: _ClassVar[int]
    STEP_METRICS_FIELD_NUMBER: _ClassVar[int]
    TERMINATED_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    KM_FIELD_NUMBER: _ClassVar[int]
    LANE_DELIVERY_FIELD_NUMBER: _ClassVar[int]
    LANE_IDS_FIELD_NUMBER: _ClassVar[int]
    LANE_BASE_STEP_FIELD_NUMBER: _ClassVar[int]
    AGENT_TABLE_FIELD_NUMBER: _ClassVar[int]
    HISTORY_DELIVERY_FIELD_NUMBER: _ClassVar[int]
    HISTORY_BASE_STEP_FIELD_NUMBER: _ClassVar[int]
    TRAFFIC_LIGHTS_FIELD_NUMBER: _ClassVar[int]
    CROSSWALKS_FIELD_NUMBER: _ClassVar[int]
    step: int
    sim_time_us: int
    agents: _containers.RepeatedCompositeFieldContainer[Agent]
    ego_index: int
    lanes: _containers.RepeatedCompositeFieldContainer[Lane]
    route_lane_ids: _containers.RepeatedScalarFieldContainer[int]
    route_polyline: Polyline
    step_metrics: StepMetrics
    terminated: bool
    truncated: bool
    end_reason: EndReason
    km: float
    lane_delivery: LaneDelivery
    lane_ids: _containers.RepeatedScalarFieldContainer[int]
    lane_base_step: int
    agent_table: AgentTable
    history_delivery: HistoryDelivery
    history_base_step: int
    traffic_lights: _containers.RepeatedCompositeFieldContainer[TrafficLight]
    crosswalks: _containers.RepeatedCompositeFieldContainer[Crosswalk]
    def __init__(self, step: _Optional[int] = ..., sim_time_us: _Optional[int] = ..., agents: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ..., ego_index: _Optional[int] = ..., lanes: _Optional[_Iterable[_Union[Lane, _Mapping]]] = ..., route_lane_ids: _Optional[_Iterable[int]] = ..., route_polyline: _Optional[_Union[Polyline, _Mapping]] = ..., step_metrics: _Optional[_Union[StepMetrics, _Mapping]] = ..., terminated: _Optional[bool] = ..., truncated: _Optional[bool] = ..., end_reason: _Optional[_Union[EndReason, str]] = ..., km: _Optional[float] = ..., lane_delivery: _Optional[_Union[LaneDelivery, str]] = ..., lane_ids: _Optional[_Iterable[int]] = ..., lane_base_step: _Optional[int] = ..., agent_table: _Optional[_Union[AgentTable, _Mapping]] = ..., history_delivery: _Optional[_Union[HistoryDelivery, str]] = ..., history_base_step: _Optional[int] = ..., traffic_lights: _Optional[_Iterable[_Union[TrafficLight, _Mapping]]] = ..., crosswalks: _Optional[_Iterable[_Union[Crosswalk, _Mapping]]] = ...) -> None: ...

class FrameTimings(_message.Message):
    __slots__ = ("tile_ms", "npc_policy_ms", "new_tile_latency_ms")
    TILE_MS_FIELD_NUMBER: _ClassVar[int]
    NPC_POLICY_MS_FIELD_NUMBER: _ClassVar[int]
    NEW_TILE_LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    tile_ms: float
    npc_policy_ms: float
    new_tile_latency_ms: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, tile_ms: _Optional[float] = ..., npc_policy_ms: _Optional[float] = ..., new_tile_latency_ms: _Optional[_Iterable[float]] = ...) -> None: ...

class Frame(_message.Message):
    __slots__ = ("step", "sim_time_us", "capacity", "agents", "ego_slot", "new_tiles", "new_lanes", "removed_lane_ids", "ego_plan", "step_metrics", "km", "end_reason", "timings", "traffic_lights", "crosswalks")
    STEP_FIELD_NUMBER: _ClassVar[int]
    SIM_TIME_US_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    EGO_SLOT_FIELD_NUMBER: _ClassVar[int]
    NEW_TILES_FIELD_NUMBER: _ClassVar[int]
    NEW_LANES_FIELD_NUMBER: _ClassVar[int]
    REMOVED_LANE_IDS_FIELD_NUMBER: _ClassVar[int]
    EGO_PLAN_FIELD_NUMBER: _ClassVar[int]
    STEP_METRICS_FIELD_NUMBER: _ClassVar[int]
    KM_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    TRAFFIC_LIGHTS_FIELD_NUMBER: _ClassVar[int]
    CROSSWALKS_FIELD_NUMBER: _ClassVar[int]
    step: int
    sim_time_us: int
    capacity: int
    agents: _containers.RepeatedCompositeFieldContainer[Agent]
    ego_slot: int
    new_tiles: _containers.RepeatedCompositeFieldContainer[Tile]
    new_lanes: _containers.RepeatedCompositeFieldContainer[Lane]
    removed_lane_ids: _containers.RepeatedScalarFieldContainer[int]
    ego_plan: _containers.RepeatedCompositeFieldContainer[Pose]
    step_metrics: StepMetrics
    km: float
    end_reason: EndReason
    timings: FrameTimings
    traffic_lights: _containers.RepeatedCompositeFieldContainer[TrafficLight]
    crosswalks: _containers.RepeatedCompositeFieldContainer[Crosswalk]
    def __init__(self, step: _Optional[int] = ..., sim_time_us: _Optional[int] = ..., capacity: _Optional[int] = ..., agents: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ..., ego_slot: _Optional[int] = ..., new_tiles: _Optional[_Iterable[_Union[Tile, _Mapping]]] = ..., new_lanes: _Optional[_Iterable[_Union[Lane, _Mapping]]] = ..., removed_lane_ids: _Optional[_Iterable[int]] = ..., ego_plan: _Optional[_Iterable[_Union[Pose, _Mapping]]] = ..., step_metrics: _Optional[_Union[StepMetrics, _Mapping]] = ..., km: _Optional[float] = ..., end_reason: _Optional[_Union[EndReason, str]] = ..., timings: _Optional[_Union[FrameTimings, _Mapping]] = ..., traffic_lights: _Optional[_Iterable[_Union[TrafficLight, _Mapping]]] = ..., crosswalks: _Optional[_Iterable[_Union[Crosswalk, _Mapping]]] = ...) -> None: ...

class EpisodeReport(_message.Message):
    __slots__ = ("seed", "km", "steps", "completed", "end_reason", "ego_collisions", "ego_offroad_rate", "npc_collisions_per_km", "npc_offroad_per_km", "kinematic_infeasibility_rate", "ego_comfort_rate", "sim_s", "wall_s", "rtf", "tile_ms_p50", "tile_ms_p95", "npc_policy_ms", "tiles", "fallback_tiles", "extra_json", "cls", "driving_score", "route_completion", "at_fault_collisions", "infractions_per_km", "red_light_infractions", "ego_stopped_rate")
    SEED_FIELD_NUMBER: _ClassVar[int]
    KM_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    EGO_COLLISIONS_FIELD_NUMBER: _ClassVar[int]
    EGO_OFFROAD_RATE_FIELD_NUMBER: _ClassVar[int]
    NPC_COLLISIONS_PER_KM_FIELD_NUMBER: _ClassVar[int]
    NPC_OFFROAD_PER_KM_FIELD_NUMBER: _ClassVar[int]
    KINEMATIC_INFEASIBILITY_RATE_FIELD_NUMBER: _ClassVar[int]
    EGO_COMFORT_RATE_FIELD_NUMBER: _ClassVar[int]
    SIM_S_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    RTF_FIELD_NUMBER: _ClassVar[int]
    TILE_MS_P50_FIELD_NUMBER: _ClassVar[int]
    TILE_MS_P95_FIELD_NUMBER: _ClassVar[int]
    NPC_POLICY_MS_FIELD_NUMBER: _ClassVar[int]
    TILES_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_TILES_FIELD_NUMBER: _ClassVar[int]
    EXTRA_JSON_FIELD_NUMBER: _ClassVar[int]
    CLS_FIELD_NUMBER: _ClassVar[int]
    DRIVING_SCORE_FIELD_NUMBER: _ClassVar[int]
    ROUTE_COMPLETION_FIELD_NUMBER: _ClassVar[int]
    AT_FAULT_COLLISIONS_FIELD_NUMBER: _ClassVar[int]
    INFRACTIONS_PER_KM_FIELD_NUMBER: _ClassVar[int]
    RED_LIGHT_INFRACTIONS_FIELD_NUMBER: _ClassVar[int]
    EGO_STOPPED_RATE_FIELD_NUMBER: _ClassVar[int]
    seed: int
    km: float
    steps: int
    completed: bool
    end_reason: EndReason
    ego_collisions: int
    ego_offroad_rate: float
    npc_collisions_per_km: float
    npc_offroad_per_km: float
    kinematic_infeasibility_rate: float
    ego_comfort_rate: float
    sim_s: float
    wall_s: float
    rtf: float
    tile_ms_p50: float
    tile_ms_p95: float
    npc_policy_ms: float
    tiles: int
    fallback_tiles: int
    extra_json: str
    cls: float
    driving_score: float
    route_completion: float
    at_fault_collisions: int
    infractions_per_km: float
    red_light_infractions: int
    ego_stopped_rate: float
    def __init__(self, seed: _Optional[int] = ..., km: _Optional[float] = ..., steps: _Optional[int] = ..., completed: _Optional[bool] = ..., end_reason: _Optional[_Union[EndReason, str]] = ..., ego_collisions: _Optional[int] = ..., ego_offroad_rate: _Optional[float] = ..., npc_collisions_per_km: _Optional[float] = ..., npc_offroad_per_km: _Optional[float] = ..., kinematic_infeasibility_rate: _Optional[float] = ..., ego_comfort_rate: _Optional[float] = ..., sim_s: _Optional[float] = ..., wall_s: _Optional[float] = ..., rtf: _Optional[float] = ..., tile_ms_p50: _Optional[float] = ..., tile_ms_p95: _Optional[float] = ..., npc_policy_ms: _Optional[float] = ..., tiles: _Optional[int] = ..., fallback_tiles: _Optional[int] = ..., extra_json: _Optional[str] = ..., cls: _Optional[float] = ..., driving_score: _Optional[float] = ..., route_completion: _Optional[float] = ..., at_fault_collisions: _Optional[int] = ..., infractions_per_km: _Optional[float] = ..., red_light_infractions: _Optional[int] = ..., ego_stopped_rate: _Optional[float] = ...) -> None: ...
