"""Approval voting (seed 000 §3.2): each agent approves any number of solutions; most approvals wins.

The ballot is a list of solution numbers: "1, 3", "Solutions 1 and 3", or {"approved": [1, 3]}
from a backend with constrained output. In text a repeated approval counts once; in JSON,
where the schema asks for unique numbers, it makes the ballot invalid.
"""
from __future__ import annotations

from typing import Any

from ..registry import register
from .ballots import Ballot, bad, distinct, json_numbers, named_numbers, ok, out_of_range
from .counting import check_index, check_sequence
from .decision import Voting
from .schemas import closed_object, solution_numbers


@register("protocol", "approval_voting")
class ApprovalVoting(Voting):
    """Each agent approves any number of solutions; most approvals wins."""

    instruction = "Approve every solution you find acceptable. Reply with their numbers only, separated by commas."
    unit = "approvals"
    json_key = "approved"

    def schema(self, n_solutions: int, points: int) -> dict[str, Any]:
        return closed_object(approved=solution_numbers(n_solutions, 1))

    def read_text(self, text: str, n_solutions: int, points: int) -> Ballot:
        numbers = named_numbers(text)
        if not numbers:
            return bad("no solution number found")
        problem = out_of_range(numbers, n_solutions)
        return bad(problem) if problem else ok([n - 1 for n in numbers])

    def read_json(self, value: Any, n_solutions: int, points: int) -> Ballot:
        return distinct(json_numbers(value, "approved"), n_solutions, "no solution approved", "approved")

    def score(self, ballot: Any, n_solutions: int) -> list[float]:
        check_sequence(ballot)
        points = [0.0] * n_solutions
        for index in ballot:  # a repeated approval still counts once
            points[check_index(index, n_solutions, ballot)] = 1.0
        return points
