"""Regenerate the checked-in Python protobuf modules from the .proto files under proto/.

Usage: ``python tools/gen_protos.py [--out DIR]`` (default: the repository root, i.e. in place).

Generated code is checked in so the package needs no protoc at install time; a test regenerates into a
temporary folder and compares, so a .proto edit without regeneration fails CI. Needs grpcio-tools.

Each entry of :data:`PROTOS` maps the import path the module should have (protoc's *virtual* path) to the
.proto file on disk, so ``proto/womd/scenario.proto`` becomes ``vectorworld/data/womd_pb2.py`` with the
module name ``vectorworld.data.womd_pb2`` baked into its descriptors.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROTOS: dict[str, str] = {
    "vectorworld/data/womd.proto": "proto/womd/scenario.proto",
    "vectorworld/data/tf_example.proto": "proto/tfexample/example.proto",
    # The service contract: modules land in vectorworld/v1/ (protobuf only, importable by the core).
    "vectorworld/v1/world.proto": "proto/vectorworld/v1/world.proto",
    "vectorworld/v1/session.proto": "proto/vectorworld/v1/session.proto",
    "vectorworld/v1/simulator_service.proto": "proto/vectorworld/v1/simulator_service.proto",
    "vectorworld/v1/recording.proto": "proto/vectorworld/v1/recording.proto",
}
"""Virtual proto path (decides the generated module path) -> .proto file relative to the repo root."""

GRPC_SERVICES: dict[str, str] = {
    "vectorworld/v1/simulator_service.proto": "sim_server/simulator_service_pb2_grpc.py",
}
"""Protos with services -> where their ``*_pb2_grpc.py`` goes (outside the core: it imports grpc)."""

_TOOL_VERSIONS = (
    re.compile(rb"GRPC_GENERATED_VERSION = '[^']*'"),
    re.compile(rb"# Protobuf Python Version: [^\n]*"),
    re.compile(rb"(ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,)\s*\d+,\s*\d+,\s*\d+,"),
)


def without_tool_versions(code: bytes) -> bytes:
    """Generated code without the generator's version stamps (grpcio-tools / protoc release), which change
    with every release of the tools and say nothing about whether the code matches its .proto."""
    for pattern in _TOOL_VERSIONS:
        code = pattern.sub(lambda m: m.group(1) if m.groups() else b"<version>", code)
    return code


def generate(out_root: Path, protos: dict[str, str] | None = None) -> list[Path]:
    """Run protoc for every entry of ``protos``; write ``*_pb2.py`` and ``*_pb2.pyi`` under ``out_root``,
    and for the protos in :data:`GRPC_SERVICES` their ``*_pb2_grpc.py`` at the path given there.

    Returns the paths written. Raises RuntimeError if protoc fails.
    """
    import tempfile

    from grpc_tools import protoc  # dev-only dependency, imported lazily

    written: list[Path] = []
    for virtual, physical in (protos or PROTOS).items():
        args = [
            "protoc",
            f"-I{virtual}={ROOT / physical}",
            f"-I{ROOT / 'proto'}",  # resolves imports such as "vectorworld/v1/world.proto"
            f"--python_out={out_root}",
            f"--pyi_out={out_root}",
            virtual,
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed for {physical}")
        stem = virtual.removesuffix(".proto")
        written += [out_root / f"{stem}_pb2.py", out_root / f"{stem}_pb2.pyi"]
        if virtual in GRPC_SERVICES:
            with tempfile.TemporaryDirectory() as tmp:
                if protoc.main(args[:3] + [f"--grpc_python_out={tmp}", virtual]) != 0:
                    raise RuntimeError(f"protoc (grpc) failed for {physical}")
                target = out_root / GRPC_SERVICES[virtual]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes((Path(tmp) / f"{stem}_pb2_grpc.py").read_bytes())
            written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT, help="output root (default: repository root)")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
