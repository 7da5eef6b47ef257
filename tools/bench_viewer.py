"""Benchmark the debugger's renderer: frames per second replaying a 1 km recording with 100 agents on screen.

    python tools/bench_viewer.py                      # synthetic dense 1 km recording, 100 agents in view
    python tools/bench_viewer.py --recording run.vwrec  # any recording (e.g. rollout --km 1 --record)

The synthetic recording is written with the real RecordingWriter and read back with the viewer's loader,
so load time is measured too. It is a dense urban strip: a new 64 m tile every 32 m of ego travel with 6
through lanes, 4 cross-street lanes and 6 turn connectors (~16 lanes per tile, ~100 lanes in view), and
100 vehicles kept within the window around the ego. Rendering uses SDL's dummy driver into a 1280x800
surface with every layer on (drivable area, tiles, lanes, chevrons, lane-graph edges, route, trails, ego
plan, labels, velocity arrows, HUD), the camera following the ego -- what playback draws per frame, minus
the display flip. Prints load time, mean / p95 frame time and fps, and random-seek latency.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from vectorworld import geometry  # noqa: E402
from vectorworld.scene import HISTORY_STEPS, Agents, AgentType, Lane, LaneType, Tile  # noqa: E402
from vectorworld.sim.config import SessionConfig  # noqa: E402
from vectorworld.sim.metrics import StepMetrics  # noqa: E402
from vectorworld.sim.observation import EndReason, Frame  # noqa: E402

TILE_EVERY_M = 32.0
EGO_SPEED_MPS = 10.0
NUM_AGENTS = 100


def _tile_lanes(k: int, next_id: int) -> tuple[list[Lane], int]:
    """Lanes of the k-th tile of the strip (x in [32k, 32k + 32]): through lanes, a cross street, turns."""
    x0, x1 = TILE_EVERY_M * k, TILE_EVERY_M * (k + 1)
    lanes = []
    for y in (-8.75, -5.25, -1.75, 1.75, 5.25, 8.75):
        xs = np.linspace(x0, x1, 9) if y < 0 else np.linspace(x1, x0, 9)
        lanes.append(Lane(next_id, np.stack([xs, np.full(9, y)], -1), tile_id=k,
                          predecessors=(next_id - 16,) if k > 0 else ()))
        next_id += 1
    cx = x0 + 16.0
    for y_dir, x in ((1, cx - 5.25), (1, cx - 1.75), (-1, cx + 1.75), (-1, cx + 5.25)):
        ys = np.linspace(-30.0, 30.0, 12) * y_dir
        lanes.append(Lane(next_id, np.stack([np.full(12, x), ys], -1), lane_type=LaneType.SURFACE_STREET,
                          tile_id=k))
        next_id += 1
    for turn in range(6):
        side = 1.0 if turn % 2 else -1.0
        p0 = np.array([cx - 12.0, -1.75 - 3.5 * (turn // 2)])
        p1 = np.array([cx - 1.75 * side, 12.0 * side])
        pts = geometry.hermite_curve(p0, 0.0, p1, side * np.pi / 2, 10)
        lanes.append(Lane(next_id, pts, lane_type=LaneType.CONNECTOR, tile_id=k))
        next_id += 1
    return lanes, next_id


def synthetic_frames(km: float = 1.0, seed: int = 0) -> list[Frame]:
    """A dense 1 km strip with NUM_AGENTS vehicles always around the ego (see the module docstring)."""
    rng = np.random.default_rng(seed)
    steps = int(km * 1000.0 / (EGO_SPEED_MPS * 0.1)) + 1
    cap = NUM_AGENTS + 8
    lane_y = np.array([-8.75, -5.25, -1.75, 1.75, 5.25, 8.75])
    offset_x = rng.uniform(-95.0, 95.0, NUM_AGENTS)
    slot_lane = rng.integers(0, 6, NUM_AGENTS)
    speed = rng.uniform(6.0, 14.0, NUM_AGENTS) * np.where(lane_y[slot_lane] < 0, 1.0, -1.0)
    frames, next_id, tiles_done, alive = [], 1, 0, []
    for step in range(steps):
        ego_x = EGO_SPEED_MPS * 0.1 * step
        new_tiles, new_lanes, removed = [], [], []
        while tiles_done * TILE_EVERY_M < ego_x + 120.0:
            lanes, first = _tile_lanes(tiles_done, next_id)
            ids = tuple(range(next_id, first))
            next_id = first
            new_lanes += lanes
            new_tiles.append(Tile(tiles_done, np.array([TILE_EVERY_M * tiles_done, 0.0]), 0.0, tiles_done,
                                  "bench", ids, 5.0))
            alive.append((tiles_done, ids))
            tiles_done += 1
        while alive and TILE_EVERY_M * (alive[0][0] + 1) < ego_x - 160.0:
            removed += list(alive.pop(0)[1])
        t = step * 0.1
        x = ego_x + ((offset_x + (speed - EGO_SPEED_MPS) * t + 95.0) % 190.0) - 95.0
        a = Agents.empty(cap, HISTORY_STEPS)
        n = NUM_AGENTS + 1
        ids = np.full(cap, -1)
        ids[:n] = np.arange(n)
        valid = np.zeros(cap, bool)
        valid[:n] = True
        xy = np.zeros((cap, 2))
        xy[0] = (ego_x, -1.75)
        xy[1:n, 0], xy[1:n, 1] = x, lane_y[slot_lane]
        yaw = np.zeros(cap)
        yaw[1:n] = np.where(speed < 0, np.pi, 0.0)
        spd = np.zeros(cap)
        spd[0], spd[1:n] = EGO_SPEED_MPS, np.abs(speed)
        types = np.zeros(cap, np.int8)
        types[:n] = AgentType.VEHICLE
        a = Agents(ids, valid, types, xy, yaw, spd, np.where(valid, 4.6, 0.0), np.where(valid, 2.0, 0.0),
                   a.history, a.history_valid)
        policy = np.where(valid, 1, -1).astype(np.int8)
        policy[0] = 0
        plan = np.stack([ego_x + EGO_SPEED_MPS * 0.1 * np.arange(1, 31), np.full(30, -1.75), np.zeros(30)], -1)
        frames.append(Frame(step, step * 100_000, a, 0, policy, tuple(new_tiles), tuple(new_lanes), tuple(removed),
                            plan, StepMetrics(ego_distance_m=1.0), ego_x / 1000.0, 5.0 if new_tiles else 0.0, 1.0,
                            EndReason.NONE))
    return frames


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recording", type=Path, help="replay this recording instead of the synthetic one")
    parser.add_argument("--frames", type=int, default=600, help="consecutive frames to render (from mid-run)")
    parser.add_argument("--size", default="1280x800")
    args = parser.parse_args()

    import pygame

    from vectorworld.viewer.camera import Camera
    from vectorworld.viewer.headless import parse_size
    from vectorworld.viewer.playback import Playback, ViewOptions
    from vectorworld.viewer.recording_source import open_recording
    from vectorworld.viewer.renderer import Renderer, follow_camera

    size = parse_size(args.size)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.recording
        if path is None:
            from vectorworld.wire.recording import RecordingWriter

            path = Path(tmp) / "bench.vwrec"
            t0 = time.perf_counter()
            frames = synthetic_frames()
            with RecordingWriter(path, SessionConfig(generator="bench")) as writer:
                for f in frames:
                    writer.write_frame(f)
            print(f"synthetic 1 km recording: {len(frames)} frames, {path.stat().st_size / 1e6:.1f} MB, "
                  f"built in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        store = open_recording(path).store
        load_s = time.perf_counter() - t0
    pygame.font.init()
    surface = pygame.Surface(size)
    renderer = Renderer()
    options = ViewOptions(lane_edges=True)
    camera = Camera(scale_px_per_m=6.0, size_px=size)
    # Playback order: consecutive frames (one map delta per frame, like the window at x1 speed and 10 fps
    # of sim; the window draws more frames than steps, which only makes the cached map hit more often).
    start = max(0, len(store) // 2 - args.frames // 2)
    indices = np.arange(start, min(len(store), start + args.frames))
    on_screen, frame_s, redraw = [], [], []
    for index in indices:
        pb = Playback(index=int(index))
        cam = follow_camera(camera, store, pb)
        before = renderer.map_redraws
        t = time.perf_counter()
        renderer.draw(surface, store, pb, cam, options, "bench")
        frame_s.append(time.perf_counter() - t)
        redraw.append(renderer.map_redraws > before)
        a = store.frames[index].agents
        view = cam.view_bbox()
        inside = a.valid & (a.xy[:, 0] >= view[0]) & (a.xy[:, 0] <= view[2]) & (a.xy[:, 1] >= view[1]) \
            & (a.xy[:, 1] <= view[3])
        on_screen.append(int(inside.sum()))
    lanes_in_view = len(store.map_at(store.last_index // 2).lanes)
    rng = np.random.default_rng(0)
    seek_s = []
    for index in rng.integers(0, len(store), 50):
        t = time.perf_counter()
        store.map_at(int(index))
        seek_s.append(time.perf_counter() - t)
    ft = np.array(frame_s[5:]) * 1e3
    redraw_ms = np.array(frame_s)[np.array(redraw)] * 1e3
    print(f"recording: {len(store)} frames, {store.frames[-1].km:.2f} km, loaded in {load_s:.2f} s")
    print(f"agents on screen: mean {np.mean(on_screen):.0f}, min {np.min(on_screen)}; "
          f"lanes alive mid-run {lanes_in_view}")
    print(f"frame time: mean {ft.mean():.1f} ms, p95 {np.percentile(ft, 95):.1f} ms -> "
          f"{1000.0 / ft.mean():.0f} fps (mean), {1000.0 / np.percentile(ft, 95):.0f} fps (p95), {size[0]}x{size[1]}")
    print(f"map canvas re-draws (new tile / lanes retired / view drifted): {len(redraw_ms)} of {len(ft) + 5} "
          f"frames, {redraw_ms.mean() if len(redraw_ms) else 0.0:.1f} ms each")
    print(f"random seek (map rebuild): mean {np.mean(seek_s) * 1e3:.2f} ms, max {np.max(seek_s) * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
