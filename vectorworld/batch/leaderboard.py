"""The planner leaderboard (``vectorworld eval planner``): every planner on the same seeds, through the batch
runner, then CLS, driving score and infractions per km with 95% CIs and the paired difference to the first
planner (episode i of every planner faces the same world and traffic seed, so differences are paired).

    DIR/<planner>/   a report directory per planner (episodes.jsonl, summary.json, episodes.csv, plots/)
    DIR/leaderboard.json, DIR/plots/leaderboard.png
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from policies import DEFAULT_NPC_POLICY
from policies.ego import load_planner
from vectorworld.batch.backends import Backend, SerialBackend
from vectorworld.batch.runner import run_batch
from vectorworld.batch.statistics import mean_ci, paired_test
from vectorworld.batch.summary import ok_records
from vectorworld.errors import ConfigError
from vectorworld.files import write_json_atomic
from vectorworld.sim.config import SessionConfig

LEADERBOARD_METRICS = ("cls", "driving_score", "infractions_per_km", "route_completion", "at_fault_collisions",
                       "completed", "rtf")
"""Per planner: mean and 95% CI of each (``completed`` as a rate); the paired difference for the first three."""
PAIRED_METRICS = ("cls", "driving_score", "infractions_per_km")
LEADERBOARD_FILE = "leaderboard.json"
OnRecord = Callable[[str, dict[str, Any]], None]


def parse_planners(spec: str) -> tuple[str, ...]:
    """Comma-separated planner names, each loadable (ConfigError naming the bad one), no duplicates."""
    names = tuple(name.strip() for name in spec.split(",") if name.strip())
    if not names:
        raise ConfigError("planners needs at least one planner name", field="planners")
    if len(set(names)) != len(names):
        raise ConfigError(f"planners lists a planner twice: {spec!r}", field="planners")
    for name in names:
        load_planner(name)
    return names


def evaluate_planners(planners: Sequence[str], episodes: int, km: float, seed: int = 0,
                      npc_policy: str = DEFAULT_NPC_POLICY, generator: str = "procedural",
                      backend_factory: Callable[[], Backend] = SerialBackend, out_dir: Path | None = None,
                      on_record: OnRecord | None = None, plots: bool = True, resume: bool = False) -> dict[str, Any]:
    """Run ``episodes`` episodes of ``km`` per planner (seeds ``seed .. seed + episodes - 1``) and return the
    leaderboard: ``{"planners": {name: row}, "baseline": first name, "episodes", "km", "seed"}``.

    resume: continue the planners' batches already in ``out_dir`` (episodes there are not run again; planners
    can also be run by separate invocations into one ``out_dir`` and tabled together by a last one)."""
    if not planners:
        raise ConfigError("planners needs at least one planner name", field="planners")
    records: dict[str, list[dict[str, Any]]] = {}
    for name in planners:
        config = SessionConfig(seed=seed, target_km=km, planner=name, npc_policy=npc_policy,
                               generator=generator).validate()
        result = run_batch(config, episodes, backend_factory(), out_dir / name if out_dir is not None else None,
                           resume=resume and out_dir is not None,
                           on_result=(lambda r, n=name: on_record(n, r)) if on_record is not None else None,
                           plots=plots)
        records[name] = result.records
        if result.interrupted:
            raise KeyboardInterrupt
    board = leaderboard(records)
    board.update({"episodes": episodes, "km": km, "seed": seed, "npc_policy": npc_policy, "generator": generator})
    if out_dir is not None:
        write_json_atomic(Path(out_dir) / LEADERBOARD_FILE, board)
        if plots:
            from vectorworld.batch.leaderboard_plots import write_leaderboard_plot

            board["warnings"] = write_leaderboard_plot(Path(out_dir) / "plots", board)
    return board


def leaderboard(records: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Rows per planner from each planner's batch records (in the order given; the first is the baseline)."""
    names = list(records)
    ok = {name: {int(r["index"]): r for r in ok_records(rs)} for name, rs in records.items()}
    base = names[0]
    rows: dict[str, dict[str, Any]] = {}
    for name in names:
        row: dict[str, Any] = {"episodes": len(records[name]), "succeeded": len(ok[name])}
        values = list(ok[name].values())
        for metric in LEADERBOARD_METRICS:
            if values and all(metric in r for r in values):
                est = mean_ci(np.array([float(r[metric]) for r in values]), metric == "completed")
                row[metric], row[f"{metric}_ci95"] = est.mean, [est.ci_low, est.ci_high]
        shared = sorted(set(ok[name]) & set(ok[base]))
        if name != base and shared:
            for metric in PAIRED_METRICS:
                a = np.array([float(ok[base][i][metric]) for i in shared])
                b = np.array([float(ok[name][i][metric]) for i in shared])
                test = paired_test(a, b)
                row[f"{metric}_diff_vs_{base}"] = test.diff
                row[f"{metric}_diff_ci95"] = [test.ci_low, test.ci_high]
                row[f"{metric}_diff_p"] = test.p_value
            row["paired_episodes"] = len(shared)
        rows[name] = row
    return {"planners": rows, "baseline": base}
