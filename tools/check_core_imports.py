"""Fail if an import runs against the layer order, or if the core library imports a server or window toolkit.

Layers, top to bottom (a module may import its own package and any package of a LOWER layer; two
packages of one layer do not import each other):

    cli → viewer → sim_server, batch → eval → train → wire → sim (engine) → policies → world
        → generation, data, vehicle → scene → geometry → checkpoints
        → errors, files, plugins, v1, the ``vectorworld`` root

Every import counts, also one inside a function (a lazy import is still a dependency). Outside
``viewer/``, ``cli/`` and ``sim_server/`` nothing imports grpc, fastapi or pygame.

Usage: python tools/check_core_imports.py [--root DIR]   (exit 1 and a list of offending imports on failure)
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

FORBIDDEN = {"grpc", "grpc_health", "grpc_reflection", "fastapi", "uvicorn", "starlette", "pygame"}
EDGE_PACKAGES = ("vectorworld.viewer", "vectorworld.cli", "sim_server")
TOP_PACKAGES = ("vectorworld", "policies", "sim_server")

LAYERS: tuple[tuple[str, ...], ...] = (
    ("vectorworld.cli",),
    ("vectorworld.viewer",),
    ("sim_server", "vectorworld.batch"),
    ("vectorworld.eval",),
    ("vectorworld.train",),
    ("vectorworld.wire",),
    ("vectorworld.sim",),
    ("policies",),
    ("vectorworld.world",),
    ("vectorworld.generation", "vectorworld.data", "vectorworld.vehicle"),
    ("vectorworld.scene",),
    ("vectorworld.geometry",),
    ("vectorworld.checkpoints",),
    ("vectorworld.errors", "vectorworld.files", "vectorworld.plugins", "vectorworld.v1", "vectorworld"),
)
"""The layer order, top first. ``vectorworld`` (the root package: version, step length) is the bottom."""


def layer_of(module: str) -> tuple[int, str] | None:
    """(layer index, package) of a project module by its longest matching package; None if not ours."""
    best: tuple[int, str] | None = None
    for index, packages in enumerate(LAYERS):
        for package in packages:
            if module == package or module.startswith(package + "."):
                if best is None or len(package) > len(best[1]):
                    best = (index, package)
    return best


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The absolute names an import statement brings in (``from a import b`` gives ``a.b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".")
        base = base if is_package else base[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return [f"{source}.{alias.name}" for alias in node.names] if source else []


def offending_imports(root: Path) -> list[str]:
    """Every layer violation and forbidden toolkit import under ``root``'s project packages."""
    found = []
    for top in TOP_PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            module = _module_name(path, root)
            own = layer_of(module)
            edge = module.startswith(EDGE_PACKAGES)
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                for name in _imported(node, module, path.name == "__init__.py"):
                    where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
                    if name.split(".")[0] in FORBIDDEN and not edge:
                        found.append(f"{where}: imports {name} (servers and windows only at the edges)")
                        continue
                    target = layer_of(name)
                    if own is None or target is None or target[1] == own[1]:
                        continue
                    if target[0] <= own[0]:
                        found.append(f"{where}: {own[1]} imports {name} ({target[1]} is "
                                     f"{'the same layer' if target[0] == own[0] else 'a higher layer'})")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="checkout to check (default: this one)")
    found = offending_imports(parser.parse_args().root)
    for line in found:
        print(line)
    print(f"core import check: {'FAILED' if found else 'ok'} ({len(found)} offending imports)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
