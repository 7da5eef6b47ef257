"""The report directory of a batch (``--out-dir DIR``) and how to read a finished run back.

    DIR/config.json      resolved config: the session config, episode count, how it ran
    DIR/episodes.jsonl   one record per episode, streamed as episodes finish (vectorworld.batch.store)
    DIR/summary.json     aggregates with 95% confidence intervals (vectorworld.batch.summary)
    DIR/episodes.csv     one row per episode, scalar fields only
    DIR/plots/*.png      metric distributions, infractions per km, real-time factor, tile latency
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vectorworld.batch.episode import REPORT_VERSION
from vectorworld.batch.store import EPISODES_FILE, read_records
from vectorworld.batch.summary import metric_names, ok_records, summarize_batch
from vectorworld.errors import ConfigError, DataFormatError
from vectorworld.files import atomic_write, write_json_atomic
from vectorworld.sim.config import SessionConfig

CONFIG_FILE = "config.json"
SUMMARY_FILE = "summary.json"
CSV_FILE = "episodes.csv"
PLOTS_DIR = "plots"


def config_payload(config: SessionConfig, episodes: int, execution: dict[str, Any]) -> dict[str, Any]:
    """config.json: ``session`` (what defines the episodes), ``episodes``, ``execution`` (how they ran)."""
    session = json.loads(json.dumps(dataclasses.asdict(config)))
    return {"version": REPORT_VERSION, "session": session, "episodes": episodes, "execution": execution}


def check_resumable(directory: Path, payload: dict[str, Any]) -> None:
    """Refuse to resume a batch whose stored session config differs (the episodes would not be comparable)."""
    path = Path(directory) / CONFIG_FILE
    if not path.exists():
        return
    try:
        stored = json.loads(path.read_text())["session"]
    except (ValueError, KeyError, TypeError) as err:
        raise DataFormatError(f"{path}: not a batch config ({err})") from None
    new = payload["session"]
    changed = sorted(k for k in set(stored) | set(new) if stored.get(k) != new.get(k))
    if changed:
        raise ConfigError(f"resume: {path} was written with different settings ({', '.join(changed)}); "
                          "use the same settings or another out_dir", field="resume")


def episodes_csv(records: list[dict[str, Any]]) -> str:
    """CSV text: index, seed, every metric, end_reason and error (empty for successful episodes)."""
    columns = ["index", "seed", *metric_names(records)]
    if any("end_reason" in r for r in records):
        columns.append("end_reason")
    columns.append("error")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in records:
        row = r if "error" in r else ok_records([r])[0]  # with the derived per-km fields
        writer.writerow({c: row.get(c, "") for c in columns})
    return buf.getvalue()


def write_report_dir(directory: Path, records: list[dict[str, Any]], episodes: int, interrupted: bool = False,
                     plots: bool = True) -> tuple[dict[str, Any], list[str]]:
    """Write summary.json, episodes.csv and (``plots``) the PNGs; return the summary and any warnings."""
    directory = Path(directory)
    summary = summarize_batch(records, episodes, interrupted)
    write_json_atomic(directory / SUMMARY_FILE, summary)
    with atomic_write(directory / CSV_FILE) as f:
        f.write(episodes_csv(records))
    warnings: list[str] = []
    if plots:
        from vectorworld.batch.plots import write_plots

        warnings.extend(write_plots(directory / PLOTS_DIR, records))
    return summary, warnings


@dataclass(frozen=True)
class Run:
    """A finished (or partial) batch read back: its records sorted by index, its config if known."""

    name: str
    records: list[dict[str, Any]]
    config: dict[str, Any]


def load_run(path: Path) -> Run:
    """Read a report directory (``episodes.jsonl`` + ``config.json``) or a single-file ``--out`` report."""
    path = Path(path)
    if path.is_dir():
        jsonl = path / EPISODES_FILE
        if not jsonl.exists():
            raise DataFormatError(f"{path} is not a batch report directory (no {EPISODES_FILE})")
        records, _ = read_records(jsonl)
        config_path = path / CONFIG_FILE
        config = json.loads(config_path.read_text()) if config_path.exists() else {}
        return Run(path.name, [records[i] for i in sorted(records)], config)
    if not path.exists():
        raise DataFormatError(f"{path} does not exist")
    try:
        report = json.loads(path.read_text())
        episodes = report["episodes"]
    except (ValueError, KeyError, TypeError) as err:
        raise DataFormatError(f"{path}: not a rollout report ({err})") from None
    records = [{"index": e.get("index", i), **e} for i, e in enumerate(episodes)]
    return Run(path.stem, records, report.get("config", {}))
