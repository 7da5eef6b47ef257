from vectorworld.v1 import session_pb2 as _session_pb2
from vectorworld.v1 import world_pb2 as _world_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SessionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SESSION_STATE_UNSPECIFIED: _ClassVar[SessionState]
    SESSION_STATE_RUNNING: _ClassVar[SessionState]
    SESSION_STATE_FINISHED: _ClassVar[SessionState]
SESSION_STATE_UNSPECIFIED: SessionState
SESSION_STATE_RUNNING: SessionState
SESSION_STATE_FINISHED: SessionState

class SessionInfo(_message.Message):
    __slots__ = ("session_id", "step", "sim_time_us", "state", "end_reason", "km", "config", "age_s", "idle_s", "lane_delivery", "agent_layout", "history_delivery")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    SIM_TIME_US_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    END_REASON_FIELD_NUMBER: _ClassVar[int]
    KM_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    AGE_S_FIELD_NUMBER: _ClassVar[int]
    IDLE_S_FIELD_NUMBER: _ClassVar[int]
    LANE_DELIVERY_FIELD_NUMBER: _ClassVar[int]
    AGENT_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    HISTORY_DELIVERY_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    step: int
    sim_time_us: int
    state: SessionState
    end_reason: _world_pb2.EndReason
    km: float
    config: _session_pb2.SessionConfig
    age_s: float
    idle_s: float
    lane_delivery: _world_pb2.LaneDelivery
    agent_layout: _world_pb2.AgentLayout
    history_delivery: _world_pb2.HistoryDelivery
    def __init__(self, session_id: _Optional[str] = ..., step: _Optional[int] = ..., sim_time_us: _Optional[int] = ..., state: _Optional[_Union[SessionState, str]] = ..., end_reason: _Optional[_Union[_world_pb2.EndReason, str]] = ..., km: _Optional[float] = ..., config: _Optional[_Union[_session_pb2.SessionConfig, _Mapping]] = ..., age_s: _Optional[float] = ..., idle_s: _Optional[float] = ..., lane_delivery: _Optional[_Union[_world_pb2.LaneDelivery, str]] = ..., agent_layout: _Optional[_Union[_world_pb2.AgentLayout, str]] = ..., history_delivery: _Optional[_Union[_world_pb2.HistoryDelivery, str]] = ...) -> None: ...

class CreateSessionRequest(_message.Message):
    __slots__ = ("config", "lane_delivery", "agent_layout", "history_delivery")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    LANE_DELIVERY_FIELD_NUMBER: _ClassVar[int]
    AGENT_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    HISTORY_DELIVERY_FIELD_NUMBER: _ClassVar[int]
    config: _session_pb2.SessionConfig
    lane_delivery: _world_pb2.LaneDelivery
    agent_layout: _world_pb2.AgentLayout
    history_delivery: _world_pb2.HistoryDelivery
    def __init__(self, config: _Optional[_Union[_session_pb2.SessionConfig, _Mapping]] = ..., lane_delivery: _Optional[_Union[_world_pb2.LaneDelivery, str]] = ..., agent_layout: _Optional[_Union[_world_pb2.AgentLayout, str]] = ..., history_delivery: _Optional[_Union[_world_pb2.HistoryDelivery, str]] = ...) -> None: ...

class CreateSessionResponse(_message.Message):
    __slots__ = ("session_id", "step", "sim_time_us", "observation", "config")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    SIM_TIME_US_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    step: int
    sim_time_us: int
    observation: _world_pb2.Observation
    config: _session_pb2.SessionConfig
    def __init__(self, session_id: _Optional[str] = ..., step: _Optional[int] = ..., sim_time_us: _Optional[int] = ..., observation: _Optional[_Union[_world_pb2.Observation, _Mapping]] = ..., config: _Optional[_Union[_session_pb2.SessionConfig, _Mapping]] = ...) -> None: ...

class StepRequest(_message.Message):
    __slots__ = ("session_id", "expected_step", "command")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_STEP_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    expected_step: int
    command: _session_pb2.EgoCommand
    def __init__(self, session_id: _Optional[str] = ..., expected_step: _Optional[int] = ..., command: _Optional[_Union[_session_pb2.EgoCommand, _Mapping]] = ...) -> None: ...

class StepResponse(_message.Message):
    __slots__ = ("session_id", "step", "sim_time_us", "observation")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    SIM_TIME_US_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    step: int
    sim_time_us: int
    observation: _world_pb2.Observation
    def __init__(self, session_id: _Optional[str] = ..., step: _Optional[int] = ..., sim_time_us: _Optional[int] = ..., observation: _Optional[_Union[_world_pb2.Observation, _Mapping]] = ...) -> None: ...

class StreamSessionRequest(_message.Message):
    __slots__ = ("session_id", "expected_step", "command")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_STEP_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    expected_step: int
    command: _session_pb2.EgoCommand
    def __init__(self, session_id: _Optional[str] = ..., expected_step: _Optional[int] = ..., command: _Optional[_Union[_session_pb2.EgoCommand, _Mapping]] = ...) -> None: ...

class StreamSessionResponse(_message.Message):
    __slots__ = ("session_id", "step", "sim_time_us", "observation")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    SIM_TIME_US_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    step: int
    sim_time_us: int
    observation: _world_pb2.Observation
    def __init__(self, session_id: _Optional[str] = ..., step: _Optional[int] = ..., sim_time_us: _Optional[int] = ..., observation: _Optional[_Union[_world_pb2.Observation, _Mapping]] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ("session_id", "include_observation")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    include_observation: bool
    def __init__(self, session_id: _Optional[str] = ..., include_observation: _Optional[bool] = ...) -> None: ...

class GetSessionResponse(_message.Message):
    __slots__ = ("session_id", "step", "sim_time_us", "info", "observation", "report")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    SIM_TIME_US_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    step: int
    sim_time_us: int
    info: SessionInfo
    observation: _world_pb2.Observation
    report: _world_pb2.EpisodeReport
    def __init__(self, session_id: _Optional[str] = ..., step: _Optional[int] = ..., sim_time_us: _Optional[int] = ..., info: _Optional[_Union[SessionInfo, _Mapping]] = ..., observation: _Optional[_Union[_world_pb2.Observation, _Mapping]] = ..., report: _Optional[_Union[_world_pb2.EpisodeReport, _Mapping]] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ("sessions", "next_page_token")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[SessionInfo]
    next_page_token: str
    def __init__(self, sessions: _Optional[_Iterable[_Union[SessionInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = ("session_id", "step", "sim_time_us", "report")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    SIM_TIME_US_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    step: int
    sim_time_us: int
    report: _world_pb2.EpisodeReport
    def __init__(self, session_id: _Optional[str] = ..., step: _Optional[int] = ..., sim_time_us: _Optional[int] = ..., report: _Optional[_Union[_world_pb2.EpisodeReport, _Mapping]] = ...) -> None: ...
