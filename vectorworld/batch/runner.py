"""Run a batch of episodes on a backend, streaming records to a report directory; resume a killed batch.

Episode i always uses seed ``config.seed + i``, whatever the backend or the number of workers, so a
batch's per-episode metrics (timings aside) do not depend on how it ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vectorworld.batch.backends import Backend, SerialBackend
from vectorworld.batch.episode import REPORT_VERSION, summarize
from vectorworld.batch.report_dir import CONFIG_FILE, check_resumable, config_payload, write_report_dir
from vectorworld.batch.store import EpisodeStore
from vectorworld.batch.tasks import EpisodeFn, make_tasks
from vectorworld.errors import ConfigError
from vectorworld.files import write_json_atomic
from vectorworld.sim.config import SessionConfig

RecordCallback = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class BatchResult:
    """What a batch produced: every record of episodes 0..N-1 known so far (sorted by index), the indices
    run by this call and those skipped because a previous run already finished them."""

    records: list[dict[str, Any]]
    ran: tuple[int, ...]
    skipped: tuple[int, ...]
    interrupted: bool
    config: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.records if "error" in r]

    def report(self) -> dict[str, Any]:
        """The single-file payload of ``vectorworld rollout --out report.json``: the session config with the
        episode count, how the batch ran, every record, the summary and whether it was interrupted."""
        return {"version": REPORT_VERSION, "config": self.config["session"] | {"episodes": self.config["episodes"]},
                "execution": self.config["execution"], "episodes": self.records,
                "summary": summarize(self.records), "interrupted": self.interrupted}


def run_batch(config: SessionConfig, episodes: int, backend: Backend | None = None, out_dir: Path | None = None,
              resume: bool = False, record_path: Path | None = None, on_result: RecordCallback | None = None,
              episode_fn: EpisodeFn | None = None, plots: bool = True,
              on_start: Callable[[int, int], None] | None = None) -> BatchResult:
    """Run episodes ``0..episodes-1`` of ``config`` on ``backend`` (default: this process).

    out_dir: stream records to ``out_dir/episodes.jsonl`` and write the report directory at the end
    (also after Ctrl-C). resume: skip episodes ``out_dir`` already finished (failed ones run again).
    on_start(already_done, to_run) is called once before the first episode; on_result(record) after each.
    episode_fn: replaces the episode function (tests inject failures with it).
    A KeyboardInterrupt stops the batch and returns what finished, with ``interrupted`` set.
    """
    if episodes < 1:
        raise ConfigError(f"episodes must be >= 1, got {episodes}", field="episodes")
    backend = backend or SerialBackend()
    payload = config_payload(config, episodes, backend.describe())
    store: EpisodeStore | None = None
    if out_dir is not None:
        out_dir = Path(out_dir)
        if resume:
            check_resumable(out_dir, payload)
        store = EpisodeStore(out_dir, resume)
        beyond = sorted(i for i in store.records if i >= episodes)
        if beyond:
            raise ConfigError(f"resume: {out_dir} already holds episode {beyond[0]} but episodes is {episodes}",
                              field="resume")
        out_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out_dir / CONFIG_FILE, payload)
    records: dict[int, dict[str, Any]] = dict(store.records) if store is not None else {}
    done = store.done_indices() if store is not None else set()
    todo = [i for i in range(episodes) if i not in done]
    if on_start is not None:
        on_start(len(done), len(todo))
    ran: list[int] = []
    interrupted = False
    try:
        if store is not None:
            store.open()
        with backend:
            for record in backend.run(make_tasks(config, todo, record_path, episode_fn, episodes)):
                if store is not None:
                    store.append(record)
                records[int(record["index"])] = record
                ran.append(int(record["index"]))
                if on_result is not None:
                    on_result(record)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if store is not None:
            store.close()
    ordered = [records[i] for i in sorted(records)]
    summary: dict[str, Any] = {}
    warnings: list[str] = []
    if store is not None and out_dir is not None:
        store.compact()
        summary, warnings = write_report_dir(out_dir, ordered, episodes, interrupted, plots and not interrupted)
    return BatchResult(ordered, tuple(ran), tuple(sorted(done)), interrupted, payload, summary, tuple(warnings))
