"""Ranked voting (seed 000 §3.2, counted as MALLM counts it): each agent ranks up to 5 solutions.

The ballot is a list of solution numbers, best first: "2 > 3 > 1", "2 3 1", or {"ranking": [2,
3, 1]} from a backend with constrained output; a solution ranked twice makes it invalid. The
solution at position p (0 = best) earns min(5, solutions) - p points, unranked solutions and
positions past the fifth nothing (a partial ranking counts as given). Seed 000 App. C says only
"adding the ranking indices ... best cumulative rank", which leaves partial rankings open; we
follow MALLM's `RankedVoting.process_results` (the authors' code). So the ballots [1, 2, 3] and
[3] (1-based) give solution 1 three points and solution 3 one plus three: 3 wins.
"""
from __future__ import annotations

from typing import Any

from ..registry import register
from .ballots import Ballot, clean, distinct, json_numbers, mentioned_numbers
from .counting import check_index, check_sequence
from .decision import Voting
from .schemas import closed_object, solution_numbers

RANKED_DEPTH = 5  # seed 000 App. E.2 asks for "up to 5 rankings"; MALLM scores min(5, solutions) - position


@register("protocol", "ranked_voting")
class RankedVoting(Voting):
    """Each agent ranks up to 5 solutions; the most rank points win (MALLM's count: the solution ranked
    at position p, 0 = best, earns min(5, solutions) - p; see `RankedVoting.score`)."""

    instruction = (
        "Rank the solutions from best to worst, up to 5 of them (a solution you leave out earns no points). "
        "Reply with their numbers only, best first, separated by spaces (for three solutions, e.g. `2 3 1`)."
    )
    unit = "rank points (MALLM: min(5, n) − position)"
    json_key = "ranking"

    def schema(self, n_solutions: int, points: int) -> dict[str, Any]:
        return closed_object(ranking=solution_numbers(n_solutions, 1))  # up to 5 count (seed 000 App. E.2, MALLM)

    def read_text(self, text: str, n_solutions: int, points: int) -> Ballot:
        return distinct(mentioned_numbers(clean(text)), n_solutions, "no ranking found", "ranked")

    def read_json(self, value: Any, n_solutions: int, points: int) -> Ballot:
        return distinct(json_numbers(value, "ranking"), n_solutions, "no ranking found", "ranked")

    def score(self, ballot: Any, n_solutions: int) -> list[float]:
        check_sequence(ballot)
        if len(set(ballot)) != len(ballot):
            raise ValueError(f"ballot {ballot!r}: a solution is ranked more than once")
        points = [0.0] * n_solutions
        for position, index in enumerate(ballot):
            points[check_index(index, n_solutions, ballot)] = float(max(0, min(RANKED_DEPTH, n_solutions) - position))
        return points

    def chart(self, ballots: list, n_solutions: int) -> dict[str, Any]:
        """rank_counts[s][p]: how many ballots put solution s at position p."""
        rank_counts = [[0] * n_solutions for _ in range(n_solutions)]
        for ballot in ballots:
            for position, solution in enumerate(ballot or []):
                rank_counts[solution][position] += 1
        return {"rank_counts": rank_counts}
