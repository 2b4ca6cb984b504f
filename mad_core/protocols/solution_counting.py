"""Solution counting (seed 000 App. D): the answer given most often wins; a tie means another round.

Answers are counted as the debate's answer type reads them (`tasks.answer_types.answer_key`).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..registry import register
from ..tasks.answer_types import answer_key, shown_answer
from .decision import DecisionContext, Outcome, Protocol


@register("protocol", "solution_counting")
class SolutionCounting(Protocol):
    """The answer given most often wins (seed 000 App. D); a tie means another round."""

    score_unit = "agents giving this answer"
    options = ("extract_final_answers", "answer_type", "answer_options")

    def calls_per_attempt(self, cfg, agents: int, extractions: int) -> int:
        return extractions  # the solutions; counting them asks nobody

    def decide(self, eng: DecisionContext, forced: bool) -> Outcome:
        agents, solutions = eng.solutions()
        if not solutions:
            return Outcome(False, "no solutions to count")
        # Answers are counted as the debate's answer type reads them, as the metrics count them: "18
        # apples" and "18" are one answer of a number debate (free text: normalize_answer, as always).
        # An unreadable solution is counted for no answer.
        kind, options = eng.cfg.answer_type or "text", eng.cfg.answer_options
        keys = [answer_key(kind, s, options) for s in solutions]
        counts = Counter(k for k in keys if k is not None)
        scores = [float(counts[k]) if k is not None else 0.0 for k in keys]
        shown = {k: shown_answer(solutions[keys.index(k)], {"answer_type": kind, "answer_options": options})
                 for k in counts}
        base: dict[str, Any] = dict(scores=scores, solutions=solutions, solution_agents=agents,
                    details={"counts": {shown[k]: c for k, c in counts.items()}})
        if not counts:
            return Outcome(False, f"no readable {kind} answer among the {len(solutions)} solutions", **base)
        top = max(counts.values())
        leaders = [k for k, c in counts.items() if c == top]
        if len(leaders) > 1:
            return Outcome(False, f"tie: {len(leaders)} answers are each given {top} time(s)", **base)
        index = keys.index(leaders[0])
        answer = solutions[index] if kind == "text" else shown[leaders[0]]
        return Outcome(True, f"{shown[leaders[0]]}: given by {top} of {len(solutions)} agents", answer=answer,
                       winner_agent=agents[index], winner_index=index, **base)
