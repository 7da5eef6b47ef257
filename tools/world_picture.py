"""Drive one episode and draw the whole world it grew, to see why a generator's worlds jam or stall.

Prints the episode's drive figures (km, simulated s, ego stopped share, NPCs removed as stuck and why, tiles
and fallbacks) and writes a PNG of every lane the world ever held (tiles are dropped behind the ego, the
picture keeps them): grey = the generator's tiles, orange = its procedural fallback, red = straight
extensions (no generator could continue the port), blue = the ego's path.

Usage: python tools/world_picture.py --generator learned:runs/gen/mid_req/latest --seed 0 --km 1 --out w.png
       (--plan-source prior: a road-plan model's per-tile plan draw instead of its world plan)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

COLOURS = {"generator": "0.45", "procedural-fallback": "tab:orange", "straight": "tab:red"}


def drive(generator: str, seed: int, km: float, plan_source: str | None) -> tuple[dict, dict, np.ndarray]:
    """The report, every lane seen (id -> (points, kind)) and the ego's path (T, 2) of one episode."""
    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    session = Session(SessionConfig(seed=seed, target_km=km, generator=generator))
    if plan_source is not None:
        if not hasattr(session.generator, "plan_source"):
            raise SystemExit(f"--plan-source: generator {generator!r} takes no road plans (a learned one does)")
        session.generator.plan_source = plan_source
    lanes: dict[int, tuple[np.ndarray, str]] = {}
    path = []
    try:
        session.reset()
        while not session.done:
            session.advance()
            path.append(session.agents.xy[session.ego_slot].copy())
            if session.step_index % 10 == 0 or session.done:
                world = session.world
                for lane in world.graph.lanes.values():
                    if lane.id not in lanes:
                        tile = world.tiles.get(lane.tile_id)
                        kind = ("straight" if tile is not None and tile.fallback else
                                "procedural-fallback" if tile is not None and tile.generator == "procedural-fallback"
                                else "generator")
                        lanes[lane.id] = (lane.points, kind)
        return session.report(), lanes, np.array(path)
    finally:
        session.close()


def draw(lanes: dict, path: np.ndarray, out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 10))
    for points, kind in lanes.values():
        ax.plot(points[:, 0], points[:, 1], color=COLOURS[kind], lw=0.8)
    if len(path):
        ax.plot(path[:, 0], path[:, 1], color="tab:blue", lw=2.0)
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=9)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generator", default="learned")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--km", type=float, default=1.0)
    parser.add_argument("--plan-source", choices=("city", "prior"))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    t0 = time.perf_counter()
    report, lanes, path = drive(args.generator, args.seed, args.km, args.plan_source)
    kinds = {kind: sum(k == kind for _, k in lanes.values()) for kind in COLOURS}
    figures = {key: report.get(key) for key in ("completed", "km", "sim_s", "ego_stopped_rate", "ego_collisions",
                                                "npc_removed_stuck", "npc_removed_stuck_causes", "tiles",
                                                "fallback_tiles")}
    figures.update(lanes_by_kind=kinds, wall_s=round(time.perf_counter() - t0, 1))
    print(json.dumps(figures))
    draw(lanes, path, args.out, f"{args.generator} seed {args.seed} plan {args.plan_source or 'default'}: "
         f"{report.get('km', 0):.2f} km in {report.get('sim_s', 0):.0f} s, {report.get('npc_removed_stuck')} stuck")


if __name__ == "__main__":
    main()
