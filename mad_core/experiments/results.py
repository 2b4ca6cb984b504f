"""An experiment's results: one row per configuration (mean ± standard deviation over seeds and
items), the data of its plots, and CSV exports.

What it is for: the numbers of each debate come from its report (`mad_core.metrics.report.
debate_report`, cached in the database); this module only gathers and aggregates them. The
aggregation functions are pure (summary dicts in, numbers out) so that they are tested with
hand-made summaries.

Conventions (say so wherever the numbers are shown):
  * mean over the debates that have the value (None is skipped) with n = how many had it;
    sd is the SAMPLE standard deviation (n - 1), None when n < 2;
  * accuracy: 1 when the debate's decision is correct, 0 when it is wrong or when the debate
    reached no decision (failed: no answer counts as wrong, as an unanswered item would);
  * tokens: prompt + completion tokens of every call of the debate; cost in US dollars
    (litellm's price table; 0 for local models);
  * only debates that ended (finished or failed) count; pending, running and stopped ones wait.

What it must not do: draw (plots are built by madlab_ui from `plot_data`), call a model, import
streamlit, or write a CSV cell that a spreadsheet would run as a formula (`csv_safe`).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from ..exports import records_csv
from ..store import Store
from . import storage, uncertainty


@dataclass(frozen=True)
class Stat:
    """Mean and sample standard deviation of the values that were there (n of them)."""

    mean: float | None
    sd: float | None
    n: int

    def text(self, digits: int = 2) -> str:
        if self.mean is None:
            return "–"
        if self.sd is None:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} ± {self.sd:.{digits}f}"


def mean_sd(values: list[Any]) -> Stat:
    """Mean ± sample sd of the numbers among `values` (None and non-numbers skipped)."""
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
               and math.isfinite(float(v))]
    if not numbers:
        return Stat(None, None, 0)
    # fsum: exactly rounded, so the same numbers in another order (debates end in any order) give
    # the same digits, which a sweep reproduced from its archive must (bundle.TABLES)
    mean = math.fsum(numbers) / len(numbers)
    if len(numbers) < 2:
        return Stat(mean, None, 1)
    return Stat(mean, math.sqrt(math.fsum((x - mean) ** 2 for x in numbers) / (len(numbers) - 1)), len(numbers))


def accuracy_of(summary: dict[str, Any]) -> float | None:
    """1.0 correct, 0.0 wrong or undecided, None when there is nothing to judge against."""
    if not summary.get("decided"):
        return 0.0
    correct = summary.get("correct")
    return None if correct is None else float(bool(correct))


def _tokens(summary: dict[str, Any]) -> float | None:
    parts = [summary.get("prompt_tokens"), summary.get("completion_tokens")]
    if all(p is None for p in parts):
        return None
    return float(sum(p or 0 for p in parts))


# name -> (column title, value of one debate's summary, digits shown)
METRICS: dict[str, tuple[str, Callable[[dict[str, Any]], Any], int]] = {
    "accuracy": ("accuracy", accuracy_of, 2),
    "accuracy_smooth": ("smooth accuracy", lambda s: s.get("accuracy_smooth"), 2),
    "rounds_to_decision": ("rounds to decision", lambda s: s.get("rounds_to_decision"), 2),
    "similarity": ("answer similarity", lambda s: s.get("answer_similarity"), 3),
    "agreement_auc": ("agreement AUC (all)", lambda s: s.get("agreement_all_auc"), 2),
    "tokens": ("tokens", _tokens, 0),
    "cost_usd": ("cost (USD)", lambda s: s.get("cost_usd"), 4),
}
# The challenge step (seed 000 §5, Figures 6 and 7; counted per debate by the report's `_challenge`):
# the share of debates whose answer was challenged, whose decision the challenge changed, and, of the
# challenged ones with a reference, whose new answer scored higher / lower. Shown only when some
# configuration has a challenge step.
CHALLENGE_METRICS: dict[str, tuple[str, Callable[[dict[str, Any]], Any], int]] = {
    "challenge_rate": ("challenged", lambda s: s.get("challenged"), 2),
    "challenge_changed": ("changed by the challenge", lambda s: s.get("challenge_changed"), 2),
    "challenge_improved": ("challenge improved", lambda s: s.get("challenge_improved"), 2),
    "challenge_worsened": ("challenge worsened", lambda s: s.get("challenge_worsened"), 2),
}
ALL_METRICS = {**METRICS, **CHALLENGE_METRICS}


@dataclass
class ConfigRow:
    """One configuration's line of the results table."""

    key: str
    label: str
    values: dict[str, Any]  # grid axis -> value
    planned: int
    finished: int
    failed: int
    stats: dict[str, Stat]


def aggregate(runs: list[dict[str, Any]], configurations: list[dict[str, Any]]) -> list[ConfigRow]:
    """The results table from per-debate rows.

    `runs`: {"config_key", "status", "summary": the report's summary or None};
    `configurations`: {"key", "label", "values"} in table order."""
    table = []
    for configuration in configurations:
        mine = [r for r in runs if r["config_key"] == configuration["key"]]
        ended = [r for r in mine if r["status"] in storage.DONE_RUN_STATUSES and r.get("summary") is not None]
        stats = {name: mean_sd([fn(r["summary"]) for r in ended]) for name, (_, fn, _) in ALL_METRICS.items()}
        table.append(ConfigRow(configuration["key"], configuration["label"], dict(configuration["values"]),
                               len(mine), sum(r["status"] == "finished" for r in mine),
                               sum(r["status"] == "failed" for r in mine), stats))
    return table


def sum_transitions(reports: list[dict[str, Any] | None]) -> dict[str, dict[str, int]]:
    """{initial state: {final state: count}} summed over debates (seed 001 §6.2)."""
    total: dict[str, dict[str, int]] = {}
    for transitions in reports:
        for initial, finals in (transitions or {}).items():
            for final, count in (finals or {}).items():
                row = total.setdefault(str(initial), {})
                row[str(final)] = row.get(str(final), 0) + int(count)
    return total


def rounds_distribution(runs: list[dict[str, Any]], configurations: list[dict[str, Any]]) -> dict[str, dict[int, int]]:
    """{configuration label: {rounds to decision: debates}} over the debates that decided."""
    labels = {c["key"]: c["label"] for c in configurations}
    out: dict[str, dict[int, int]] = {c["label"]: {} for c in configurations}
    for run in runs:
        value = (run.get("summary") or {}).get("rounds_to_decision")
        if run["status"] in storage.DONE_RUN_STATUSES and isinstance(value, int) and not isinstance(value, bool):
            counts = out[labels[run["config_key"]]]
            counts[value] = counts.get(value, 0) + 1
    return {label: dict(sorted(counts.items())) for label, counts in out.items()}


def plot_data(table: list[ConfigRow], runs: list[dict[str, Any]], configurations: list[dict[str, Any]],
              statistics: uncertainty.SweepStatistics | None = None) -> dict[str, Any]:
    """The numbers behind each plot (the app draws them and offers them for download); accuracy
    with its 95 % interval (`uncertainty`) for the error bars."""
    intervals = statistics.intervals if statistics is not None else {}
    return {
        "accuracy": [{"configuration": r.label, "accuracy": r.stats["accuracy"].mean, "sd": r.stats["accuracy"].sd,
                      "n": r.stats["accuracy"].n, "low": getattr(intervals.get(r.key), "low", None),
                      "high": getattr(intervals.get(r.key), "high", None),
                      "interval": getattr(intervals.get(r.key), "method", None)} for r in table],
        "similarity_vs_accuracy": [{"configuration": r.label, "similarity": r.stats["similarity"].mean,
                                    "accuracy": r.stats["accuracy"].mean} for r in table
                                   if r.stats["similarity"].mean is not None and r.stats["accuracy"].mean is not None],
        "rounds": rounds_distribution(runs, configurations),
        "transitions": sum_transitions([r.get("transitions") for r in runs
                                        if r["status"] in storage.DONE_RUN_STATUSES]),
    }


# ----- reading an experiment's results from the database ------------------------------------------
@dataclass
class Results:
    """Everything the results view shows for one experiment."""

    experiment: dict[str, Any]
    configurations: list[dict[str, Any]]  # {"key", "label", "values"}
    runs: list[dict[str, Any]]  # the run rows, each with "config_label", "summary", "transitions"
    table: list[ConfigRow]
    plots: dict[str, Any]
    problems: list[str] = field(default_factory=list)  # reports that could not be computed
    statistics: uncertainty.SweepStatistics = field(default_factory=uncertainty.SweepStatistics)

    @property
    def labels(self) -> dict[str, str]:
        return {c["key"]: c["label"] for c in self.configurations}


def configurations_of(experiment: dict[str, Any]) -> list[dict[str, Any]]:
    """The configurations of a stored experiment as planned (`storage.configuration_records`: the
    grid's, then its baselines); an experiment stored before they were kept: its grid expanded
    again from its spec (no task set, no model check)."""
    if experiment.get("configurations"):
        return [dict(c) for c in experiment["configurations"]]
    from .spec import expand_grid

    spec = experiment.get("spec") or {}
    return [{"key": c.key, "label": c.label, "values": c.values, "baseline": False, "compared_with": {}}
            for c in expand_grid(spec.get("base") or {}, spec.get("grid") or {})]


def experiment_results(store: Store, experiment_id: str, *, embed: Any = None) -> Results:
    """Gather what each of an experiment's debates measured and aggregate it.

    One query reads the runs with their debates' state and what the runner kept of each report
    (`store_run_result`); a run whose kept result is missing or no longer matches its debate (the
    debate changed, another embedder, another metrics version) has its report read or computed."""
    experiment = storage.get_experiment(store, experiment_id)
    if experiment is None:
        raise LookupError(f"no experiment with id {experiment_id!r}")
    configurations = configurations_of(experiment)
    labels = {c["key"]: c["label"] for c in configurations}
    stamp_of = _stamper(embed)
    sql = """SELECT r.*, d.id AS d_id, d.status AS d_status, d.updated_at AS d_updated_at,
                    d.finished_at AS d_finished_at, d.reference AS d_reference
             FROM experiment_runs r LEFT JOIN debates d ON d.id = r.debate_id
             WHERE r.experiment_id = ? ORDER BY r.run_index"""
    rows, problems = [], []
    for row in store.query(sql, [experiment_id]):
        run = {key: value for key, value in row.items() if not key.startswith("d_") and key != "result"}
        found = None
        if run["status"] in storage.DONE_RUN_STATUSES and row["d_id"]:
            debate = {"status": row["d_status"], "updated_at": row["d_updated_at"], "finished_at": row["d_finished_at"]}
            found = _kept(row.get("result"), stamp_of(debate))
            if found is None:
                try:
                    found = run_result(_report(store, run["debate_id"], embed))
                except Exception as exc:  # noqa: BLE001 - one bad debate must not hide the others
                    problems.append(f"debate {run['debate_id'][:8]}: {type(exc).__name__}: {exc}")
        rows.append({**run, "config_label": labels.get(run["config_key"], run["config_key"]),
                     "reference": row["d_reference"], "summary": (found or {}).get("summary"),
                     "transitions": (found or {}).get("transitions"), "first_correct": (found or {}).get("first_correct")})
    table = aggregate(rows, configurations)
    statistics = uncertainty.sweep_statistics(rows, configurations, accuracy=accuracy_of)
    return Results(experiment, configurations, rows, table, plot_data(table, rows, configurations, statistics),
                   problems, statistics)


def run_result(report: dict[str, Any], stamp: str | None = None) -> dict[str, Any]:
    """What the results table needs of one debate's report: its summary, its transitions and whether
    the first round's clear majority was right; `stamp` says which state of the debate it measured."""
    return {"stamp": stamp, "summary": report.get("summary"), "transitions": report.get("transitions"),
            "first_correct": _first_round_correct(report)}


def store_run_result(store: Store, debate_id: str, *, embed: Any = None) -> None:
    """Compute (or read) an ended debate's report and keep its `run_result` on its experiment run."""
    from ..metrics.report import debate_report, embedder_name, report_stamp

    report = debate_report(store, debate_id, embed=embed)
    debate = store.get_debate(debate_id)
    if debate is not None:
        storage.save_run_result(store, debate_id, run_result(report, report_stamp(debate, embedder_name(embed))))


def _stamper(embed: Any) -> Callable[[dict[str, Any]], str]:
    from ..metrics.report import embedder_name, report_stamp

    name = embedder_name(embed)
    return lambda debate: report_stamp(debate, name)


def _kept(text: str | None, stamp: str) -> dict[str, Any] | None:
    """The run's kept result when it measured the debate as it is now (same stamp), else None."""
    if not text:
        return None
    try:
        kept = json.loads(text)
    except ValueError:
        return None
    return kept if isinstance(kept, dict) and kept.get("stamp") == stamp else None


def _first_round_correct(report: dict[str, Any] | None) -> float | None:
    """Whether the first round's clear majority was right (the report's round accuracy, strict)."""
    rounds = (report or {}).get("rounds") or []
    return rounds[0].get("accuracy_strict") if rounds else None


def _report(store: Store, debate_id: str, embed: Any) -> dict[str, Any]:
    from ..metrics.report import debate_report

    return debate_report(store, debate_id, embed=embed)


# ----- exports ---------------------------------------------------------------------------------------
def shown_metrics(table: list[ConfigRow]) -> dict[str, tuple[str, Callable[[dict[str, Any]], Any], int]]:
    """The metrics a table shows: METRICS, and CHALLENGE_METRICS when some debate of it had a challenge step."""
    challenged = any(row.stats.get("challenge_rate", Stat(None, None, 0)).n for row in table)
    return ALL_METRICS if challenged else METRICS


def _baseline_names(statistics: uncertainty.SweepStatistics | None) -> list[str]:
    return list(dict.fromkeys(name for versus in (statistics.versus if statistics else {}).values() for name in versus))


def table_records(table: list[ConfigRow], statistics: uncertainty.SweepStatistics | None = None) -> list[dict[str, Any]]:
    """The table as flat records: configuration, axis values, counts, mean / sd / n per metric, the
    accuracy's 95 % interval, and the difference from each baseline (interval, McNemar and Holm p)."""
    records = []
    shown = shown_metrics(table)
    names = _baseline_names(statistics)
    for row in table:
        record: dict[str, Any] = {"configuration": row.key, "label": row.label}
        record.update({axis: _cell(value) for axis, value in row.values.items()})
        record.update(debates=row.planned, finished=row.finished, failed=row.failed)
        for name, stat in row.stats.items():
            if name in shown:
                record.update({f"{name}_mean": stat.mean, f"{name}_sd": stat.sd, f"{name}_n": stat.n})
        if statistics is not None:
            interval = statistics.intervals.get(row.key)
            record.update(accuracy_low=getattr(interval, "low", None), accuracy_high=getattr(interval, "high", None),
                          accuracy_interval=getattr(interval, "method", None))
            for name in names:
                found = statistics.versus.get(row.key, {}).get(name)
                record.update({f"vs_{name}_{part}": getattr(found, attr, None) for part, attr in (
                    ("baseline", "config_b"), ("diff", "diff"), ("diff_low", "diff_low"), ("diff_high", "diff_high"),
                    ("p_mcnemar", "p_mcnemar"), ("p_holm", "p_holm"), ("cohens_h", "cohens_h"))})
        records.append(record)
    return records


def display_records(table: list[ConfigRow], statistics: uncertainty.SweepStatistics | None = None
                    ) -> list[dict[str, Any]]:
    """The table as people read it: one "mean ± sd" text per metric, accuracy as "0.62 [0.48, 0.74]"
    (95 % interval), and per baseline "+0.10 [-0.05, 0.25], Holm p = 0.31"."""
    records = []
    shown = shown_metrics(table)
    names = _baseline_names(statistics)
    for row in table:
        record: dict[str, Any] = {"configuration": row.label, "debates": row.planned, "finished": row.finished,
                                  "failed": row.failed}
        for name, (title, _, digits) in shown.items():
            record[title] = row.stats[name].text(digits)
        if statistics is not None and row.key in statistics.intervals:
            record["accuracy"] = statistics.intervals[row.key].text(2)
        for name in names:
            found = statistics.versus.get(row.key, {}).get(name) if statistics else None
            record[f"vs {name}"] = _versus_text(found)
        records.append(record)
    return records


def _versus_text(found: Any) -> str:
    if found is None:
        return "–"
    if found.diff is None:
        return "n/a"
    interval = f" [{found.diff_low:+.2f}, {found.diff_high:+.2f}]" if found.diff_low is not None else ""
    holm = "n/a" if found.p_holm is None else f"{found.p_holm:.3f}"
    return f"{found.diff:+.2f}{interval}, Holm p = {holm}"


def run_records(runs: list[dict[str, Any]], configurations: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One record per planned debate: where it stands, which baseline it belongs to ("" for a
    configuration of the grid), the item's reference and its summary's numbers."""
    keys = ("run_index", "config_key", "config_label", "item_id", "seed", "debate_id", "status", "wall_s", "error")
    kinds = {c["key"]: (c.get("values") or {}).get("baseline", "") if c.get("baseline") else ""
             for c in configurations or []}
    records = []
    for run in runs:
        record = {key: run.get(key) for key in keys}
        record["baseline"] = kinds.get(run.get("config_key"), "")
        record["reference"] = run.get("reference")
        summary = run.get("summary") or {}
        record.update({name: (fn(summary) if summary else None) for name, (_, fn, _) in METRICS.items()})
        if summary.get("challenged") is not None:  # a debate with a challenge step
            record.update({name: fn(summary) for name, (_, fn, _) in CHALLENGE_METRICS.items()})
        record["answer"] = summary.get("answer")
        records.append(record)
    return records


def to_csv(records: list[dict[str, Any]]) -> str:
    """Records as CSV; every cell through `csv_safe` (no formula reaches a spreadsheet)."""
    return records_csv(records)


def _cell(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def text_table(table: list[ConfigRow], statistics: uncertainty.SweepStatistics | None = None) -> str:
    """The results table as aligned plain text (the CLI prints it)."""
    records = display_records(table, statistics)
    if not records:
        return "(no configurations)"
    columns = list(records[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in records)) for c in columns}
    lines = ["  ".join(c.ljust(widths[c]) for c in columns)]
    lines += ["  ".join(str(r[c]).ljust(widths[c]) for c in columns) for r in records]
    return "\n".join(lines)


def spec_summary(spec: dict[str, Any]) -> str:
    """One line: the task set, items, seeds and grid of a stored spec."""
    grid = " × ".join(f"{axis} ({len(values)})" for axis, values in (spec.get("grid") or {}).items()) or "no grid"
    task_set = spec.get("task_set")
    if isinstance(task_set, dict):  # a file or a dataset (tasks/files.py)
        task_set = task_set.get("file") or f"hf:{task_set.get('hf')}"
    return (f"{task_set} · {spec.get('items')} items · seeds {spec.get('seeds')} · {grid} · "
            f"concurrency {spec.get('concurrency')}")


__all__ = ["Stat", "mean_sd", "accuracy_of", "METRICS", "CHALLENGE_METRICS", "ALL_METRICS", "shown_metrics",
           "ConfigRow", "aggregate", "sum_transitions", "rounds_distribution", "plot_data", "Results",
           "experiment_results", "run_result", "store_run_result", "table_records", "display_records", "run_records", "to_csv", "text_table",
           "spec_summary", "configurations_of"]
