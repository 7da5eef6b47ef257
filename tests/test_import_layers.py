"""The layer check (tools/check_core_imports.py): this tree passes, a planted upward import fails it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "check_core_imports.py"


def _tool():  # noqa: ANN202 - a module loaded from a path
    spec = importlib.util.spec_from_file_location("check_core_imports", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


CLEAN = {
    "vectorworld/__init__.py": "DT_S = 0.1\n",
    "vectorworld/geometry.py": "import math\n",
    "vectorworld/scene.py": "from vectorworld import geometry\n",
    "vectorworld/sim/__init__.py": "",
    "vectorworld/sim/session.py": "from policies.base import Policy\nfrom vectorworld.scene import Lane\n",
    "vectorworld/sim/metrics.py": "from .session import Session\n",
    "policies/__init__.py": "",
    "policies/base.py": "from vectorworld.scene import Lane\n",
    "sim_server/service.py": "import grpc\nfrom vectorworld.sim.session import Session\n",
}


def test_this_tree_passes() -> None:
    assert _tool().offending_imports(ROOT) == []


def test_a_clean_planted_tree_passes(tmp_path: Path) -> None:
    assert _tool().offending_imports(_tree(tmp_path, CLEAN)) == []


@pytest.mark.parametrize(("name", "text", "importer", "imported"), [
    ("policies/ego.py", "from vectorworld.sim.session import Session\n", "policies", "vectorworld.sim.session"),
    ("policies/lazy.py", "def f():\n    from vectorworld.sim import session\n", "policies", "vectorworld.sim.session"),
    ("vectorworld/scene.py", "import vectorworld.sim.session\n", "vectorworld.scene", "vectorworld.sim.session"),
    ("vectorworld/wire/codec.py", "from sim_server import service\n", "vectorworld.wire", "sim_server.service"),
    ("vectorworld/sim/observation.py", "from vectorworld.wire.codec import x\n", "vectorworld.sim",
     "vectorworld.wire.codec"),
    ("vectorworld/world/streaming.py", "from ..sim.session import Session\n", "vectorworld.world",
     "vectorworld.sim.session"),
    ("vectorworld/batch/store.py", "from sim_server.service import X\n", "vectorworld.batch", "sim_server.service"),
])
def test_a_planted_upward_import_fails(tmp_path: Path, name: str, text: str, importer: str, imported: str) -> None:
    found = _tool().offending_imports(_tree(tmp_path, CLEAN | {name: text}))
    assert len(found) == 1
    assert found[0].startswith(name) and f"{importer} imports {imported}" in found[0]


def test_a_toolkit_import_in_the_core_fails(tmp_path: Path) -> None:
    found = _tool().offending_imports(_tree(tmp_path, CLEAN | {"vectorworld/batch/episode.py": "import pygame\n"}))
    assert len(found) == 1 and "pygame" in found[0]


def test_the_command_exits_1_on_a_planted_tree(tmp_path: Path) -> None:
    root = _tree(tmp_path, CLEAN | {"policies/ego.py": "from vectorworld.sim.session import Session\n"})
    bad = subprocess.run([sys.executable, str(TOOL), "--root", str(root)], capture_output=True, text=True)
    assert bad.returncode == 1 and "policies/ego.py:1" in bad.stdout
    good = subprocess.run([sys.executable, str(TOOL), "--root", str(_tree(tmp_path / "ok", CLEAN))],
                          capture_output=True, text=True)
    assert good.returncode == 0, good.stdout
