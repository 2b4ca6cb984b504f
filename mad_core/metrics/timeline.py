"""Summaries for charts: who answered what in each round, and how one vote was spread."""
from __future__ import annotations

from collections.abc import Mapping

from ..protocols.counting import tally
from ..protocols.rule import voting_rule
from ._common import as_list, norm
from .process import answer_changes


def answer_timeline(rounds: list[dict[str, str]]) -> dict:
    """Who answered what in each round, and who changed their mind when.

    `rounds[r]` maps agent label -> answer at round r. Returns
    {"labels": [...], "rounds": [0, 1, ...], "answers": {label: [normalized or None]},
     "changes": [{"agent", "round", "from", "to"}, ...]}. A change compares an agent's
    answer with its last known one, so a round it skipped does not count as a change
    (see `answer_changes`, seed 001 §6.2's "who flipped when").
    """
    rounds = [r if isinstance(r, Mapping) else {} for r in as_list(rounds)]
    labels = list(dict.fromkeys(label for by_agent in rounds for label in by_agent))
    answers: dict[str, list[str | None]] = {
        label: [norm(by_agent.get(label)) for by_agent in rounds] for label in labels
    }
    return {
        "labels": labels,
        "rounds": list(range(len(rounds))),
        "answers": answers,
        "changes": answer_changes(rounds),
    }


def vote_breakdown(protocol: str, ballots: list, n_solutions: int) -> dict:
    """Per-solution totals of one vote, ready for a bar chart (seed 000 §3.2 protocols).

    Returns {"protocol", "unit", "labels" ("Solution 1", ...), "counts" (votes, approvals,
    points or rank points per solution), "winner", "tied", "valid", "invalid"}; ranked
    voting adds "rank_counts": rank_counts[s][p] ballots put solution s at position p.
    Counting is `protocols.counting.tally` with the protocol's voting rule (its `unit`, its
    `chart` for what else is shown), which raises ValueError for a protocol that is no voting
    rule or a malformed ballot (the ballot parser's job to prevent).
    """
    rule = voting_rule(protocol)
    result = tally(rule, ballots, n_solutions)
    breakdown = {
        "protocol": protocol,
        "unit": rule.unit,
        "labels": [f"Solution {i + 1}" for i in range(n_solutions)],
        "counts": result.scores,
        "winner": result.winner,
        "tied": result.tied,
        "valid": result.valid,
        "invalid": result.invalid,
    }
    breakdown.update(rule.chart(ballots, n_solutions))
    return breakdown
