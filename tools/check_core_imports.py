"""Fail if the core library (vectorworld/ outside viewer/ and cli/) imports a server or window toolkit.

Usage: python tools/check_core_imports.py   (exit 1 and a list of offending imports on failure)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

FORBIDDEN = {"grpc", "grpc_health", "grpc_reflection", "fastapi", "uvicorn", "starlette", "pygame"}
EDGE_DIRS = {"viewer", "cli"}


def offending_imports(root: Path) -> list[str]:
    found = []
    for path in sorted((root / "vectorworld").rglob("*.py")):
        rel = path.relative_to(root / "vectorworld")
        if rel.parts[0] in EDGE_DIRS:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in FORBIDDEN:
                    found.append(f"{path.relative_to(root)}:{node.lineno}: imports {name}")
    return found


def main() -> int:
    root = Path(__file__).resolve().parents[1]
    found = offending_imports(root)
    for line in found:
        print(line)
    print(f"core import check: {'FAILED' if found else 'ok'} ({len(found)} forbidden imports)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
