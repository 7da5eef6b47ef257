"""Drive figures of a `vectorworld rollout --out REPORT.json` batch (or an `--out-dir` folder), pooled.

Prints: simulated seconds per km, ego stopped share, NPCs removed as stuck per km (and by cause, where the
report has them), NPC collisions and off-road per km, completion, ego collisions, red-light infractions,
RTF and wall seconds per km.

Usage: python tools/drive_summary.py REPORT.json|OUT_DIR [...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def load_episodes(path: Path) -> list[dict]:
    """The successful episode reports of a `--out` JSON report or an `--out-dir` folder (episodes.jsonl)."""
    if path.is_dir():
        rows = [json.loads(line) for line in (path / "episodes.jsonl").read_text().splitlines() if line.strip()]
    else:
        rows = json.loads(path.read_text())["episodes"]
    return [e for e in rows if "error" not in e]


def summarize(path: Path) -> dict[str, float]:
    episodes = load_episodes(path)
    km = sum(e["km"] for e in episodes)
    causes: dict[str, int] = {}
    for e in episodes:
        for cause, n in e.get("npc_removed_stuck_causes", {}).items():
            causes[cause] = causes.get(cause, 0) + n
    return {
        "episodes": len(episodes),
        "km": round(km, 3),
        "sim_s_per_km": round(sum(e["sim_s"] for e in episodes) / km, 1),
        "sim_s_per_km_worst": round(max(e["sim_s"] / max(e["km"], 1e-6) for e in episodes), 1),
        "ego_stopped_share": round(sum(e.get("ego_stopped_rate", float("nan")) * e["steps"] for e in episodes)
                                   / sum(e["steps"] for e in episodes), 3),
        "stuck_removed_per_km": round(sum(e["npc_removed_stuck"] for e in episodes) / km, 2),
        "completion": round(sum(bool(e["completed"]) for e in episodes) / len(episodes), 3),
        "ego_collisions": sum(e["ego_collisions"] for e in episodes),
        "stuck_causes_per_km": {cause: round(n / km, 2) for cause, n in sorted(causes.items())},
        "npc_collisions_per_km": round(sum(e["npc_collisions_per_km"] * e["km"] for e in episodes) / km, 2),
        "npc_offroad_per_km": round(sum(e["npc_offroad_per_km"] * e["km"] for e in episodes) / km, 2),
        "kinematic_infeasibility_rate": round(sum(e["kinematic_infeasibility_rate"] for e in episodes)
                                              / len(episodes), 5),
        "red_light_infractions": sum(e.get("red_light_infractions", 0) for e in episodes),
        "rtf_mean": round(sum(e["rtf"] for e in episodes) / len(episodes), 2),
        "wall_s_per_km": round(sum(e["wall_s"] for e in episodes) / km, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", type=Path, nargs="+")
    args = parser.parse_args()
    for path in args.reports:
        print(path, json.dumps(summarize(path)))


if __name__ == "__main__":
    main()
