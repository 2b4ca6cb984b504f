"""A sweep's uncertainty: each configuration's accuracy with its interval, the paired comparisons
(configurations with each other, each configuration with its own baselines), Holm across all of
them, and what discussion changed.

From the run rows `results.experiment_results` gathers ({"config_key", "item_id", "seed",
"status", "summary", "first_correct"}); the figures themselves come from `stats` (scipy and
statsmodels). A run's unit is (item, seed): configurations run on the same items with the same
seeds (repeats have derived seeds, the same for every configuration), so their runs pair up, and
runs of one item are clustered in every bootstrap. Correct: the debate's decision is right (a debate
that ended without one counts as wrong, as in the results table); runs without a reference are
not judged. Only debates that ended (finished or failed) count.

Compared: every pair of the grid's configurations, and each configuration with each baseline it
was planned with (`Configuration.compared_with`: a = the configuration, b = the baseline, so a
positive difference means better than the baseline); Holm's correction runs over all of them.
Nothing here reads the database or draws.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any

from . import stats, storage

LEVEL = stats.DEFAULT_LEVEL


@dataclass
class SweepStatistics:
    """Everything uncertain about one sweep's results."""

    intervals: dict[str, stats.Interval] = field(default_factory=dict)  # configuration key -> accuracy
    comparisons: list[stats.Comparison] = field(default_factory=list)  # Holm-corrected, in test order
    versus: dict[str, dict[str, stats.Comparison]] = field(default_factory=dict)  # key -> baseline -> comparison
    changes: dict[str, stats.Changes] = field(default_factory=dict)  # key -> first round vs final


def correctness(runs: list[dict[str, Any]], summary_value: Any) -> dict[str, dict[tuple, int | None]]:
    """configuration key -> {(item, seed): 0/1/None} over the runs that ended with a report."""
    out: dict[str, dict[tuple, int | None]] = {}
    for run in runs:
        if run["status"] not in storage.DONE_RUN_STATUSES or run.get("summary") is None:
            continue
        value = summary_value(run)
        out.setdefault(run["config_key"], {})[(run["item_id"], run["seed"])] = (
            None if value is None else int(value >= 1.0))
    return out


def _pairs(configurations: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    """(a, b, baseline name or None) of every comparison of the sweep."""
    grid = [c for c in configurations if not c.get("baseline")]
    pairs: list[tuple[str, str, str | None]] = [(a["key"], b["key"], None) for a, b in combinations(grid, 2)]
    for configuration in grid:
        pairs += [(configuration["key"], key, name) for name, key in (configuration.get("compared_with") or {}).items()]
    return pairs


def sweep_statistics(runs: list[dict[str, Any]], configurations: list[dict[str, Any]], *, accuracy: Any,
                     level: float = LEVEL, seed: int = 0) -> SweepStatistics:
    """The sweep's intervals, comparisons and changes; `accuracy(summary)` is the results table's
    accuracy of one debate (1, 0, or None when there is nothing to judge against)."""
    final = correctness(runs, lambda run: accuracy(run["summary"]))
    first = correctness(runs, lambda run: run.get("first_correct"))
    result = SweepStatistics()
    for configuration in configurations:
        key = configuration["key"]
        by_item: dict[Any, list[int | None]] = {}
        for (item, _), value in final.get(key, {}).items():
            by_item.setdefault(item, []).append(value)
        result.intervals[key] = stats.accuracy_interval(by_item, level, seed=seed)
        result.changes[key] = stats.discussion_changes(first.get(key, {}), final.get(key, {}))
    tested = [(replace(stats.paired_comparison(final.get(a, {}), final.get(b, {}), level=level, seed=seed),
                       config_a=a, config_b=b), name) for a, b, name in _pairs(configurations)]
    adjusted = stats.holm([comparison.p_mcnemar for comparison, _ in tested])
    for (comparison, name), p in zip(tested, adjusted):
        comparison = replace(comparison, p_holm=p)
        result.comparisons.append(comparison)
        if name is not None:
            result.versus.setdefault(comparison.config_a, {})[name] = comparison
    return result


def comparison_records(statistics: SweepStatistics, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The comparisons as flat records (CSV, the page's table): labels beside the keys."""
    return [{"a": labels.get(c.config_a, c.config_a), "b": labels.get(c.config_b, c.config_b), **c.to_record(),
             "text": c.text()} for c in statistics.comparisons]


def change_records(statistics: SweepStatistics, labels: dict[str, str]) -> list[dict[str, Any]]:
    """What discussion changed, per configuration: first round -> final decision."""
    return [{"configuration": labels.get(key, key), **changes.to_record()}
            for key, changes in statistics.changes.items()]
