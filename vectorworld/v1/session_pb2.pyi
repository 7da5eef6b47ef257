from vectorworld.v1 import world_pb2 as _world_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SessionConfig(_message.Message):
    __slots__ = ("seed", "target_km", "generator", "npc_policy", "planner", "scenario", "observation_radius_m", "max_steps", "agent_capacity", "terminate_on_collision", "ego_start_speed_mps")
    SEED_FIELD_NUMBER: _ClassVar[int]
    TARGET_KM_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    NPC_POLICY_FIELD_NUMBER: _ClassVar[int]
    PLANNER_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_RADIUS_M_FIELD_NUMBER: _ClassVar[int]
    MAX_STEPS_FIELD_NUMBER: _ClassVar[int]
    AGENT_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    TERMINATE_ON_COLLISION_FIELD_NUMBER: _ClassVar[int]
    EGO_START_SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    seed: int
    target_km: float
    generator: str
    npc_policy: str
    planner: str
    scenario: str
    observation_radius_m: float
    max_steps: int
    agent_capacity: int
    terminate_on_collision: bool
    ego_start_speed_mps: float
    def __init__(self, seed: _Optional[int] = ..., target_km: _Optional[float] = ..., generator: _Optional[str] = ..., npc_policy: _Optional[str] = ..., planner: _Optional[str] = ..., scenario: _Optional[str] = ..., observation_radius_m: _Optional[float] = ..., max_steps: _Optional[int] = ..., agent_capacity: _Optional[int] = ..., terminate_on_collision: _Optional[bool] = ..., ego_start_speed_mps: _Optional[float] = ...) -> None: ...

class ControlCommand(_message.Message):
    __slots__ = ("accel_mps2", "steering_rad")
    ACCEL_MPS2_FIELD_NUMBER: _ClassVar[int]
    STEERING_RAD_FIELD_NUMBER: _ClassVar[int]
    accel_mps2: float
    steering_rad: float
    def __init__(self, accel_mps2: _Optional[float] = ..., steering_rad: _Optional[float] = ...) -> None: ...

class TrajectoryCommand(_message.Message):
    __slots__ = ("poses",)
    POSES_FIELD_NUMBER: _ClassVar[int]
    poses: _containers.RepeatedCompositeFieldContainer[_world_pb2.Pose]
    def __init__(self, poses: _Optional[_Iterable[_Union[_world_pb2.Pose, _Mapping]]] = ...) -> None: ...

class StateCommand(_message.Message):
    __slots__ = ("pose", "speed_mps")
    POSE_FIELD_NUMBER: _ClassVar[int]
    SPEED_MPS_FIELD_NUMBER: _ClassVar[int]
    pose: _world_pb2.Pose
    speed_mps: float
    def __init__(self, pose: _Optional[_Union[_world_pb2.Pose, _Mapping]] = ..., speed_mps: _Optional[float] = ...) -> None: ...

class BuiltinPlannerCommand(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EgoCommand(_message.Message):
    __slots__ = ("control", "trajectory", "state", "builtin_planner")
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    TRAJECTORY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    BUILTIN_PLANNER_FIELD_NUMBER: _ClassVar[int]
    control: ControlCommand
    trajectory: TrajectoryCommand
    state: StateCommand
    builtin_planner: BuiltinPlannerCommand
    def __init__(self, control: _Optional[_Union[ControlCommand, _Mapping]] = ..., trajectory: _Optional[_Union[TrajectoryCommand, _Mapping]] = ..., state: _Optional[_Union[StateCommand, _Mapping]] = ..., builtin_planner: _Optional[_Union[BuiltinPlannerCommand, _Mapping]] = ...) -> None: ...
