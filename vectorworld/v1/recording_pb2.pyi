from vectorworld.v1 import session_pb2 as _session_pb2
from vectorworld.v1 import world_pb2 as _world_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RecordingHeader(_message.Message):
    __slots__ = ("format_version", "vectorworld_version", "config", "config_json", "seed", "has_timings", "has_history")
    FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    VECTORWORLD_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    HAS_TIMINGS_FIELD_NUMBER: _ClassVar[int]
    HAS_HISTORY_FIELD_NUMBER: _ClassVar[int]
    format_version: int
    vectorworld_version: str
    config: _session_pb2.SessionConfig
    config_json: str
    seed: int
    has_timings: bool
    has_history: bool
    def __init__(self, format_version: _Optional[int] = ..., vectorworld_version: _Optional[str] = ..., config: _Optional[_Union[_session_pb2.SessionConfig, _Mapping]] = ..., config_json: _Optional[str] = ..., seed: _Optional[int] = ..., has_timings: _Optional[bool] = ..., has_history: _Optional[bool] = ...) -> None: ...

class Record(_message.Message):
    __slots__ = ("header", "frame", "report")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    FRAME_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    header: RecordingHeader
    frame: _world_pb2.Frame
    report: _world_pb2.EpisodeReport
    def __init__(self, header: _Optional[_Union[RecordingHeader, _Mapping]] = ..., frame: _Optional[_Union[_world_pb2.Frame, _Mapping]] = ..., report: _Optional[_Union[_world_pb2.EpisodeReport, _Mapping]] = ...) -> None: ...
