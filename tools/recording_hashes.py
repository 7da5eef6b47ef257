"""Byte-identity baseline: sha256 of the recordings of a few seeds with each NPC policy.

Every episode runs through the real rollout path (``vectorworld rollout --record``, one subprocess per
episode, so the checkout under test is exactly what is imported). Recordings hold no wall-clock values by
default, so a refactoring that changes no behaviour prints the same hashes before and after.

Usage: python tools/recording_hashes.py [--seeds 0 1 2] [--km 0.5] [--npc deltasim idm constant-velocity]
                                        [--repo PATH]   (a second checkout, e.g. a git worktree of an
                                                         older commit; default: this one)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

NPC_POLICIES = ("deltasim", "idm", "constant-velocity")
_CLI = "import sys; from vectorworld.cli import main; sys.argv = ['vectorworld'] + sys.argv[1:]; main()"


def record_hash(repo: Path, seed: int, km: float, npc: str, workdir: Path) -> str:
    """Run one episode of ``repo``'s code and return the sha256 of its recording."""
    path = workdir / f"seed{seed}-{npc}.vwrec"
    env = dict(os.environ, PYTHONPATH=str(repo))
    run = subprocess.run([sys.executable, "-c", _CLI, "rollout", "--km", str(km), "--seed", str(seed), "--npc",
                          npc, "--record", str(path)], cwd=repo, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"seed {seed} --npc {npc} failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--km", type=float, default=0.5)
    parser.add_argument("--npc", nargs="+", default=list(NPC_POLICIES))
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    repo = args.repo.resolve()
    print(f"# recordings of {repo}: {args.km} km per episode")
    print("seed | npc | sha256")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for npc in args.npc:
                digest = record_hash(repo, seed, args.km, npc, Path(tmp))
                print(f"{seed} | {npc} | {digest}", flush=True)


if __name__ == "__main__":
    main()
