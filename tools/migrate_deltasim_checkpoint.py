"""Move a DeltaSim checkpoint of the earlier layout (``STEM.safetensors`` + ``STEM.json``, format
``vectorworld.deltasim/2``) into the one checkpoint layout (a folder with ``model.safetensors`` and
``config.json``, format ``vectorworld-deltasim`` version 2) without touching its weights: the safetensors
file is moved byte for byte and the sidecar's content is kept (only its format tag and layout change).

Usage: python tools/migrate_deltasim_checkpoint.py STEM [FOLDER]   (default FOLDER: STEM's folder)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from policies.deltasim.checkpoint import FORMAT, LEGACY_FORMAT, VERSION  # noqa: E402
from vectorworld.checkpoints import WEIGHTS_FILE, write_config  # noqa: E402


def migrate(stem: Path, folder: Path) -> Path:
    """Move ``stem``.safetensors to ``folder``/model.safetensors and rewrite ``stem``.json as its config."""
    weights, sidecar_path = Path(f"{stem}.safetensors"), Path(f"{stem}.json")
    sidecar = json.loads(sidecar_path.read_text())
    if sidecar.get("format") != LEGACY_FORMAT:
        raise SystemExit(f"{sidecar_path}: format {sidecar.get('format')!r}, expected {LEGACY_FORMAT!r}")
    del sidecar["format"]
    folder.mkdir(parents=True, exist_ok=True)
    shutil.move(weights, folder / WEIGHTS_FILE)
    write_config(folder, FORMAT, VERSION, sidecar)
    sidecar_path.unlink()
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stem", type=Path)
    parser.add_argument("folder", type=Path, nargs="?")
    args = parser.parse_args()
    print(f"checkpoint folder: {migrate(args.stem, args.folder or args.stem.parent)}")


if __name__ == "__main__":
    main()
