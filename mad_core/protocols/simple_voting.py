"""Simple voting (seed 000 §3.2): each agent votes for one solution; most votes wins.

The ballot is one solution number: "I vote for Solution 2.", "**2**", or {"vote": 2} from a
backend with constrained output. A reply naming several solutions is ambiguous, never a guess.
"""
from __future__ import annotations

from typing import Any

from ..registry import register
from .ballots import Ballot, bad, listing, named_numbers, one_solution
from .counting import check_index
from .decision import Voting
from .schemas import closed_object, solution_number


@register("protocol", "simple_voting")
class SimpleVoting(Voting):
    """One vote per agent; most votes wins."""

    instruction = "Vote for the one solution you think is best. Reply with its number only."
    unit = "votes"
    json_key = "vote"

    def schema(self, n_solutions: int, points: int) -> dict[str, Any]:
        return closed_object(vote=solution_number(n_solutions))

    def read_text(self, text: str, n_solutions: int, points: int) -> Ballot:
        numbers = named_numbers(text)
        if not numbers:
            return bad("no solution number found")
        if len(numbers) > 1:
            return bad(f"ambiguous vote: the reply names several solutions ({listing(numbers)})")
        return one_solution(numbers[0], n_solutions)

    def read_json(self, value: Any, n_solutions: int, points: int) -> Ballot:
        return one_solution(value, n_solutions)

    def score(self, ballot: Any, n_solutions: int) -> list[float]:
        points = [0.0] * n_solutions
        points[check_index(ballot, n_solutions, ballot)] = 1.0
        return points
