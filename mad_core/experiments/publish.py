"""A sweep's results as a Markdown report a researcher can paste or convert: the results table
with each accuracy's 95 % interval and the difference from each baseline, every paired comparison
(McNemar and Holm p, effect sizes), what discussion changed, and how each figure was computed.

Text from the spec or the task set (names, labels) is written through `exports.md_safe`, so the
report renders literally and carries no live HTML. Nothing here reads the database or calls a model.
"""
from __future__ import annotations

from typing import Any

from ..exports import md_safe
from . import results, uncertainty

CONVENTIONS = (
    "Accuracy: the share of debates whose decision is right (a debate without a decision counts as wrong), "
    "with its 95 % interval: Wilson when each item ran once, else a percentile bootstrap that resamples "
    "whole items (runs of one item are not independent).",
    "Comparisons pair runs of the same item and seed. Difference = accuracy of A − accuracy of B, with a "
    "paired bootstrap interval clustered by item; p = exact McNemar test on the pairs where one was right "
    "and the other wrong; Holm p corrects for all comparisons of the sweep; Cohen's h = 2·asin(√pA) − "
    "2·asin(√pB) (0.2 small, 0.5 medium, 0.8 large).",
    "Discussion changes: each debate's first-round clear-majority answer against its final decision.",
    "Other columns: mean ± sample standard deviation over the debates that ended.",
)


def _number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(records: list[dict[str, Any]]) -> list[str]:
    if not records:
        return ["(none)"]
    columns = list(dict.fromkeys(key for record in records for key in record))
    lines = ["| " + " | ".join(md_safe(str(c)).replace("|", "\\|") for c in columns) + " |",
             "|" + "---|" * len(columns)]
    for record in records:
        cells = [md_safe(_number(record.get(c))).replace("|", "\\|").replace("\n", " ") for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown_report(found: results.Results) -> str:
    """The whole report of one experiment's results."""
    labels = found.labels
    statistics = found.statistics
    comparisons = [{key: record[key] for key in ("a", "b", "n_pairs", "diff", "diff_low", "diff_high", "p_mcnemar",
                                                 "p_holm", "cohens_h", "odds_ratio", "a_right_b_wrong",
                                                 "a_wrong_b_right")}
                   for record in uncertainty.comparison_records(statistics, labels)]
    lines = [f"# {md_safe(str(found.experiment.get('name') or 'experiment'))}", "",
             f"{md_safe(results.spec_summary(found.experiment.get('spec') or {}))} · status "
             f"{md_safe(str(found.experiment.get('status')))}", "", "## Results", ""]
    lines += _table(results.display_records(found.table, statistics))
    lines += ["", "## Paired comparisons", ""] + _table(comparisons)
    lines += ["", "## What discussion changed", ""] + _table(uncertainty.change_records(statistics, labels))
    lines += ["", "## How the figures were computed", ""] + [f"- {line}" for line in CONVENTIONS]
    lines += [f"- Not computed: {md_safe(problem)}" for problem in found.problems]
    return "\n".join(lines) + "\n"
