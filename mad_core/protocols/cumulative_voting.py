"""Cumulative voting (seed 000 §3.2): each agent shares a budget of points; most points wins.

The budget is the configuration's `cumulative_points` (10 by default: seed 000's prompt, App.
E.2; its prose says 25). The ballot maps solution numbers to whole points: {"1": 6, "2": 4}
(its JSON form, which constrained output sends, is the mapping itself and is read as text is)
or "Solution 1: 6, Solution 2: 4". Points may not be negative, a solution may be given points
once, and they may sum to less than the budget ("up to"), never more.
"""
from __future__ import annotations

from typing import Any

from ..registry import register
from .ballots import Ballot, allocation_pairs, as_points, as_solution_number, bad, clean, ok, out_of_range
from .counting import check_index
from .decision import Voting
from .schemas import closed_object


@register("protocol", "cumulative_voting")
class CumulativeVoting(Voting):
    """Each agent shares a budget of points; most points wins."""

    instruction = (
        "Share up to {points} points among the solutions, giving more to better ones. Reply only with a JSON object "
        'mapping solution numbers to points, e.g. {{"1": 6, "2": 4}}.'
    )
    unit = "points"
    json_key = None  # the JSON form is the points mapping itself, which `read_text` reads first
    options = (*Voting.options, "cumulative_points")

    def schema(self, n_solutions: int, points: int) -> dict[str, Any]:
        return closed_object(**{str(n): {"type": "integer", "minimum": 0, "maximum": points}
                                for n in range(1, n_solutions + 1)})

    def read_text(self, text: str, n_solutions: int, points: int) -> Ballot:
        pairs = allocation_pairs(clean(text))
        if not pairs:
            return bad("no points allocation found")
        allocation: dict[int, int] = {}
        for key, value in pairs:
            number = as_solution_number(key)
            given = as_points(number, value)
            if given < 0:
                return bad(f"solution {number} is given negative points ({given})")
            if number in allocation:
                return bad(f"solution {number} is given points more than once")
            allocation[number] = given
        problem = out_of_range(list(allocation), n_solutions)
        if problem:
            return bad(problem)
        total = sum(allocation.values())
        if total > points:
            return bad(f"points sum to {total}, more than the {points} allowed")
        return ok({number - 1: given for number, given in allocation.items()})

    def score(self, ballot: Any, n_solutions: int) -> list[float]:
        if not isinstance(ballot, dict):
            raise ValueError(f"ballot {ballot!r}: expected a dict of solution index -> points")
        points = [0.0] * n_solutions
        for index, given in ballot.items():
            check_index(index, n_solutions, ballot)
            if isinstance(given, bool) or not isinstance(given, int) or given < 0:
                raise ValueError(f"ballot {ballot!r}: points must be non-negative ints, got {given!r}")
            points[index] += given
        return points
