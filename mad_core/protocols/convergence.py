"""Convergence (seed 004 without a judge): the final draft most similar to the others wins."""
from __future__ import annotations

from ..answers import final_answer
from ..metrics import convergence_winner
from ..registry import register
from .decision import DecisionContext, Outcome, Protocol


@register("protocol", "convergence")
class Convergence(Protocol):
    """Seed 004 without a judge: the final draft most similar to the others (token overlap) wins."""

    score_unit = "mean token overlap"

    def calls_per_attempt(self, cfg, agents: int, extractions: int) -> int:
        return 0  # the latest drafts, compared without a model

    def decide(self, eng: DecisionContext, forced: bool) -> Outcome:
        agents, drafts = eng.latest_drafts()
        if not drafts:
            return Outcome(False, "no drafts yet")
        index, scores = convergence_winner(drafts)
        tie = sum(1 for s in scores if s == scores[index]) > 1
        note = "convergence winner by mean token overlap" + ("; tie broken by agent order" if tie else "")
        return Outcome(True, note, answer=drafts[index], winner_agent=agents[index], winner_index=index,
                       scores=scores, solutions=drafts, solution_agents=agents,
                       details={"final_answer": final_answer(drafts[index]), "tie_broken": tie})
