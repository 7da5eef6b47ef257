"""Convert a WOMD file with our writers and drive a rollout from each format until 1 km past its map.

Usage: ``python tools/format_rollouts.py [WOMD_FILE] [--km-past 1.0] [--npc deltasim] [--formats ...]``

For each format (womd, womd-example, gpudrive, scenarionet) prints: steps until the ego left the recorded
map's extent, distance then, steps and distance at the end, end reason, wall time. Runs on one torch thread.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vectorworld.data import womd_pb2  # noqa: E402
from vectorworld.data.gpudrive import write_gpudrive  # noqa: E402
from vectorworld.data.scenarionet_writer import write_scenarionet  # noqa: E402
from vectorworld.data.tfrecord import read_record  # noqa: E402
from vectorworld.data.womd_example import write_womd_example  # noqa: E402

DEFAULT_WOMD = ROOT / "../shared/data/womd/motion_data_one_scenario.tfrecord"


def convert(womd: Path, folder: Path) -> dict[str, str]:
    msg = womd_pb2.Scenario.FromString(read_record(womd, 0).payload)
    write_womd_example(folder / "sample.tfrecord", [msg])
    write_scenarionet(folder / "scenarionet", [msg])
    write_gpudrive(folder / "scene.json", msg)
    return {"womd": f"womd:{womd}", "womd-example": f"womd-example:{folder / 'sample.tfrecord'}",
            "gpudrive": f"gpudrive:{folder / 'scene.json'}", "scenarionet": f"scenarionet:{folder / 'scenarionet'}"}


def drive_past_map(source: str, km_past: float, npc: str, max_steps: int) -> dict[str, object]:
    """Drive until ``km_past`` km after the ego first leaves the recorded map's extent."""
    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    session = Session(SessionConfig(seed=0, scenario=source, target_km=10_000.0, npc_policy=npc,
                                    max_steps=max_steps).validate())
    obs = session.reset()
    x0, y0, x1, y1 = session.scenario.map.extent()
    left_step, left_m = None, None
    t0 = time.perf_counter()
    while not obs.done:
        obs = session.step()
        x, y = session.agents.xy[session.ego_slot]
        if left_step is None and not (x0 <= x <= x1 and y0 <= y <= y1):
            left_step, left_m = session.step_index, session.metrics.distance_m
        if left_m is not None and session.metrics.distance_m >= left_m + km_past * 1000.0:
            break
    return {"left_map_step": left_step, "left_map_m": left_m, "steps": session.step_index,
            "distance_m": session.metrics.distance_m, "end_reason": session.end_reason.value,
            "wall_s": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("womd", nargs="?", type=Path, default=DEFAULT_WOMD)
    parser.add_argument("--km-past", type=float, default=1.0)
    parser.add_argument("--npc", default="deltasim")
    parser.add_argument("--max-steps", type=int, default=20_000)
    parser.add_argument("--formats", nargs="*", default=["womd", "womd-example", "gpudrive", "scenarionet"])
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        sources = convert(args.womd, Path(tmp))
        print("format        left map (step, m)   end (step, m)      reason        wall s")
        for kind in args.formats:
            r = drive_past_map(sources[kind], args.km_past, args.npc, args.max_steps)
            print(f"{kind:<13} {r['left_map_step']!s:>6} {r['left_map_m'] or 0:>9.0f}   {r['steps']:>6} "
                  f"{r['distance_m']:>8.0f}   {r['end_reason']:<12} {r['wall_s']:>7.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
