"""Statistics of the procedural generator over a grown world, next to the WOMD figures of DESIGN.md §5.

Grows one streaming world at random open ends (``eval.generator_metrics.grow_worlds``, the procedure of the
training corpus and the generator evaluation) with a generator that logs every tile, and prints, per tile:
lanes touching it (the lanes known when it was made), agents in it and their nearest-neighbour distance;
per lane: segment length between graph nodes, heading change per metre, successors (in the final world);
per vehicle: speed, length, width; generation time per tile (wall and CPU, p50 / p95), the growth counters
per tile, and how many straight fallback lanes the world laid at ports the generator left open.

Usage: python tools/procedural_stats.py [--tiles 200] [--seed 0] [--json stats.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from vectorworld import geometry
from vectorworld.eval.generator_metrics import grow_worlds
from vectorworld.generation.procedural.tile_log import LoggedProcedural, LoggedTile
from vectorworld.scene import AgentType, LaneGraph

WOMD = {  # DESIGN.md §5: one 64 m tile per valid vehicle of the shared WOMD scenario (p10, p50, p90)
    "lanes touching a tile": (10, 30, 43),
    "agents in a tile": (6, 10, 18),
    "lane segment length (m)": (3.5, 15, 59),
    "heading change per metre (rad/m)": (0.00001, 0.003, 0.12),
    "successors per lane": (0, 1, 1.3),
    "vehicle speed (m/s)": (0, 0.5, 14),
    "nearest other agent (m)": (3.4, 7.4, 17),
    "vehicle length (m)": (4.4, 4.7, 5.4),
    "vehicle width (m)": (2.0, 2.1, 2.3),
}


def _lanes_touching(graph: LaneGraph, frame) -> int:  # noqa: ANN001 - TileFrame
    count = 0
    for lane_id in graph.near(frame.center_xy, frame.size_m):
        pts = geometry.resample_by_spacing(graph[lane_id].points, 1.0)
        count += bool(frame.contains(pts).any())
    return count


def collect(tiles: list[LoggedTile], final: LaneGraph) -> dict[str, np.ndarray]:
    """Per-tile, per-lane and per-agent samples of the statistics in :data:`WOMD`."""
    touching, per_tile, nearest = [], [], []
    all_xy = np.zeros((0, 2))
    graph = LaneGraph()
    for tile in tiles:
        graph.add(tile.content.lanes)
        all_xy = np.concatenate([all_xy, tile.content.agents.xy])
        touching.append(_lanes_touching(graph, tile.frame))
        inside = tile.frame.contains(all_xy)
        per_tile.append(int(inside.sum()))
        pts = all_xy[inside]
        if len(pts) > 1:
            d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
            np.fill_diagonal(d, np.inf)
            nearest.extend(d.min(1).tolist())
    lanes = [lane for t in tiles for lane in t.content.lanes]
    heading_rate = []
    for lane in lanes:
        seg = np.diff(lane.points, axis=0)
        yaw = np.arctan2(seg[:, 1], seg[:, 0])
        ds = 0.5 * (np.linalg.norm(seg[1:], axis=-1) + np.linalg.norm(seg[:-1], axis=-1))
        heading_rate.extend((np.abs(geometry.wrap_angle(np.diff(yaw))) / np.maximum(ds, 1e-6)).tolist())
    succ = [len([s for s in lane.successors if s in final]) for lane in final.lanes.values()]
    agents = [t.content.agents for t in tiles]
    vehicle = np.concatenate([a.agent_type == AgentType.VEHICLE for a in agents])
    return {
        "lanes touching a tile": np.array(touching),
        "agents in a tile": np.array(per_tile),
        "lane segment length (m)": np.array([lane.length_m for lane in lanes]),
        "heading change per metre (rad/m)": np.array(heading_rate),
        "successors per lane": np.array(succ),
        "vehicle speed (m/s)": np.concatenate([a.speed for a in agents])[vehicle],
        "nearest other agent (m)": np.array(nearest),
        "vehicle length (m)": np.concatenate([a.length for a in agents])[vehicle],
        "vehicle width (m)": np.concatenate([a.width for a in agents])[vehicle],
    }


def summary(tiles: list[LoggedTile], final: LaneGraph) -> dict[str, object]:
    samples = collect(tiles, final)
    stats: dict[str, object] = {}
    for name, values in samples.items():
        p = np.percentile(values, [10, 50, 90]) if len(values) else np.full(3, np.nan)
        stats[name] = {"p10": float(p[0]), "p50": float(p[1]), "p90": float(p[2]),
                       "mean": float(values.mean()) if len(values) else float("nan"), "womd": WOMD[name]}
    reports = [t.report for t in tiles]
    wall = np.array([t.wall_ms for t in tiles])
    cpu = np.array([t.cpu_ms for t in tiles])
    stats["tiles"] = len(tiles)
    stats["tile ms (wall) p50/p95"] = [float(np.percentile(wall, 50)), float(np.percentile(wall, 95))]
    stats["tile ms (cpu) p50/p95"] = [float(np.percentile(cpu, 50)), float(np.percentile(cpu, 95))]
    stats["share of tiles with a junction"] = float(np.mean([r.junctions > 0 for r in reports]))
    for key in ("junctions", "tapers", "crossings", "joins", "bridges", "stopped", "roads"):
        stats[f"{key} per tile"] = float(np.mean([getattr(r, key) for r in reports]))
    generated = {lane.id for t in tiles for lane in t.content.lanes}
    stats["straight fallback lanes (ports the generator left open)"] = len(set(final.lanes) - generated)
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiles", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    generator = LoggedProcedural()
    grown = grow_worlds(generator, worlds=1, tiles_per_world=args.tiles, seed=args.seed)
    stats = summary(generator.log, grown.graphs[0])
    print(f"{'statistic':36s} {'p10':>9s} {'p50':>9s} {'p90':>9s} {'mean':>9s}   WOMD p10 / p50 / p90")
    for name in WOMD:
        s = stats[name]
        ref = " / ".join(f"{v:g}" for v in s["womd"])
        print(f"{name:36s} {s['p10']:9.4g} {s['p50']:9.4g} {s['p90']:9.4g} {s['mean']:9.4g}   {ref}")
    for name, value in stats.items():
        if name not in WOMD:
            print(f"{name}: {np.round(value, 3).tolist() if isinstance(value, list) else round(value, 3)}")
    if args.json is not None:
        args.json.write_text(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
