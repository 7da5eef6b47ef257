"""The wire contract: checked-in generated code is up to date, buf-style rules hold, the core stays
free of grpc."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vectorworld.v1 import session_pb2, simulator_service_pb2, world_pb2

ROOT = Path(__file__).resolve().parents[2]
V1_PROTOS = ("world", "session", "simulator_service", "recording")


def _gen_protos_module():
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "tools" / "gen_protos.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(importlib.util.find_spec("grpc_tools") is None, reason="grpcio-tools not installed")
def test_checked_in_generated_code_is_up_to_date(tmp_path: Path) -> None:
    gen = _gen_protos_module()
    protos = {f"vectorworld/v1/{name}.proto": f"proto/vectorworld/v1/{name}.proto" for name in V1_PROTOS}
    written = gen.generate(tmp_path, protos)
    assert len(written) == 2 * len(V1_PROTOS) + 1
    for path in written:
        relative = path.relative_to(tmp_path)
        assert gen.without_tool_versions((ROOT / relative).read_bytes()) == \
            gen.without_tool_versions(path.read_bytes()), f"{relative} is stale: run python tools/gen_protos.py"


def test_core_imports_no_grpc() -> None:
    code = ("import sys, vectorworld.v1.recording_pb2, vectorworld.v1.simulator_service_pb2, "
            "vectorworld.wire.codec, vectorworld.wire.recording; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('grpc', 'fastapi', 'pygame')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_buf_style_rules() -> None:
    files = (world_pb2.DESCRIPTOR, session_pb2.DESCRIPTOR, simulator_service_pb2.DESCRIPTOR)
    for file in files:
        assert file.package == "vectorworld.v1"
        for enum in file.enum_types_by_name.values():
            zero = enum.values_by_number[0].name
            assert zero.endswith("_UNSPECIFIED"), zero
            prefix = zero.removesuffix("UNSPECIFIED")
            assert all(v.name.startswith(prefix) for v in enum.values), enum.name
    service = simulator_service_pb2.DESCRIPTOR.services_by_name["SimulatorService"]
    inputs = set()
    for method in service.methods:
        assert method.input_type.name == f"{method.name}Request"
        assert method.output_type.name == f"{method.name}Response"
        inputs.add(method.input_type.name)
        fields = set(method.output_type.fields_by_name)
        if method.name != "ListSessions":  # each listed SessionInfo carries them instead
            assert {"session_id", "step", "sim_time_us"} <= fields, method.name
    assert len(inputs) == len(service.methods) == 6
    info = simulator_service_pb2.SessionInfo.DESCRIPTOR.fields_by_name
    assert {"session_id", "step", "sim_time_us"} <= set(info)
    stream = service.methods_by_name["StreamSession"]
    assert stream.client_streaming and stream.server_streaming


def test_the_freshness_check_ignores_only_the_tools_version_stamps() -> None:
    gen = _gen_protos_module()
    stub = (ROOT / "sim_server" / "simulator_service_pb2_grpc.py").read_bytes()
    other_release = stub.replace(b"GRPC_GENERATED_VERSION = '", b"GRPC_GENERATED_VERSION = '9.")
    assert other_release != stub
    assert gen.without_tool_versions(other_release) == gen.without_tool_versions(stub)
    renamed = stub.replace(b"def Step(", b"def Stepp(", 1)
    assert renamed != stub and gen.without_tool_versions(renamed) != gen.without_tool_versions(stub)
    message = (ROOT / "vectorworld" / "v1" / "world_pb2.py").read_bytes()
    newer_protoc = re.sub(rb"Domain\.PUBLIC,\s*\d+,", b"Domain.PUBLIC,\n    8,", message)
    assert newer_protoc != message
    assert gen.without_tool_versions(newer_protoc) == gen.without_tool_versions(message)
