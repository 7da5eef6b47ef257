"""Compare two batch runs metric by metric (e.g. two planner versions on the same seeds).

For each metric both runs share: the two means, the difference (run - baseline), its 95% CI and the
two-sided p-value of Welch's t-test, and a significance marker (* p<0.05, ** p<0.01, *** p<0.001).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vectorworld.batch.statistics import MeanEstimate, WelchResult, mean_ci, significance_marker, welch_test
from vectorworld.batch.summary import is_proportion, metric_names, metric_values


@dataclass(frozen=True)
class MetricDiff:
    """One metric of ``run`` against ``baseline``; ``test.diff`` = mean(run) - mean(baseline)."""

    name: str
    run: MeanEstimate
    baseline: MeanEstimate
    test: WelchResult

    @property
    def marker(self) -> str:
        return significance_marker(self.test.p_value)

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.name, "run_mean": self.run.mean, "baseline_mean": self.baseline.mean,
                "diff": self.test.diff, "diff_ci95": [self.test.ci_low, self.test.ci_high],
                "p_value": self.test.p_value, "significance": self.marker}


def describe_run(records: list[dict[str, Any]]) -> list[tuple[str, MeanEstimate]]:
    """(metric, estimate with 95% CI) for every metric of one run, in display order."""
    return [(name, mean_ci(metric_values(records, name), is_proportion(records, name)))
            for name in metric_names(records)]


def compare_runs(run: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> list[MetricDiff]:
    """Per-metric differences for the metrics both runs have; empty if either has no successful episode."""
    shared = [m for m in metric_names(run) if m in set(metric_names(baseline))]
    diffs = []
    for name in shared:
        a, b = metric_values(baseline, name), metric_values(run, name)
        diffs.append(MetricDiff(name, mean_ci(b, is_proportion(run, name)),
                                mean_ci(a, is_proportion(baseline, name)), welch_test(a, b)))
    return diffs
