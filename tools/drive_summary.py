"""Drive figures of a `vectorworld rollout --out REPORT.json` batch, next to the targets of issue 17.

Prints per episode and pooled: simulated seconds per km, ego stopped share, NPCs removed as stuck per km,
completion, ego collisions, RTF and wall seconds per km.

Usage: python tools/drive_summary.py REPORT.json [REPORT2.json ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def summarize(path: Path) -> dict[str, float]:
    episodes = json.loads(path.read_text())["episodes"]
    km = sum(e["km"] for e in episodes)
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
        "npc_collisions_per_km": round(sum(e["npc_collisions_per_km"] * e["km"] for e in episodes) / km, 2),
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
