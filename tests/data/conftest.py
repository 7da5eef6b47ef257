"""Fixtures of the data-reader tests: the real WOMD sample (skipped when absent) and nuPlan fixture files."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
WOMD_SAMPLE = ROOT / "../shared/data/womd/motion_data_one_scenario.tfrecord"


def _load_fixture_module() -> ModuleType:
    name = "vectorworld_tests_nuplan_fixture"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("nuplan_fixture.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def womd_path() -> Path:
    if not WOMD_SAMPLE.is_file():
        pytest.skip(f"real WOMD sample not found at {WOMD_SAMPLE.resolve()}")
    return WOMD_SAMPLE.resolve()


@pytest.fixture(scope="session")
def womd_scenario(womd_path: Path):
    from vectorworld.data.womd import read_womd

    return read_womd(womd_path)


@pytest.fixture(scope="session")
def nuplan_fixture() -> ModuleType:
    """The fixture-builder module (tests/data/nuplan_fixture.py)."""
    return _load_fixture_module()


@pytest.fixture(scope="session")
def nuplan_files(tmp_path_factory: pytest.TempPathFactory, nuplan_fixture: ModuleType):
    """(log db path, maps root, LogTruth) built once per session; treat as read-only."""
    root = tmp_path_factory.mktemp("nuplan")
    truth = nuplan_fixture.build_log_db(root / "log.db")
    nuplan_fixture.build_maps_root(root / "maps")
    return root / "log.db", root / "maps", truth


@pytest.fixture(scope="session")
def nuplan_scenario(nuplan_files):
    from vectorworld.data.nuplan import read_nuplan

    db, maps, _ = nuplan_files
    return read_nuplan(db, 0, maps_root=maps)


@pytest.fixture(scope="session")
def womd_message(womd_path: Path):
    """The real sample's WOMD Scenario message (what the format writers convert)."""
    from vectorworld.data import womd_pb2
    from vectorworld.data.tfrecord import read_record

    return womd_pb2.Scenario.FromString(read_record(womd_path, 0).payload)


@pytest.fixture(scope="session")
def format_files(tmp_path_factory: pytest.TempPathFactory, womd_message) -> dict[str, Path]:
    """The real sample converted by our writers: kind -> path (treat as read-only)."""
    from vectorworld.data.gpudrive import write_gpudrive
    from vectorworld.data.scenarionet_writer import write_scenarionet
    from vectorworld.data.womd_example import write_womd_example

    root = tmp_path_factory.mktemp("formats")
    write_womd_example(root / "sample.tfexample.tfrecord", [womd_message])
    write_scenarionet(root / "scenarionet", [womd_message])
    return {"womd-example": root / "sample.tfexample.tfrecord",
            "gpudrive": write_gpudrive(root / "scene.json", womd_message),
            "scenarionet": root / "scenarionet"}
