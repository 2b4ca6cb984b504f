"""Response generators (seed 000 §3.2): how an agent is asked to respond and how it sees others.

Each generator is one small class: `instruction` is what the agent is asked to do this turn;
`render` is how another agent's turn is shown to it. `reasoning` hides final answers from
everyone but their author, so agents share reasoning only.
"""
from __future__ import annotations

from .answers import strip_confidence, strip_final_answer
from .events import Turn
from .registry import register


def label_turn(turn: Turn, text: str) -> str:
    return f"[{turn.agent}]: {text.strip()}"


class ResponseGenerator:
    """Base: neutral instruction, others' turns shown in full.

    `shares_answers` False means agents discuss without stating answers: they are not asked for
    a final-answer line, and each forms its own solution once the discussion is over."""

    shares_answers = True

    instruction = ("Answer the question. If others have spoken, take their points into account, say briefly "
                   "where you agree or disagree, and improve the solution where you can.")

    def render(self, turn: Turn, viewer: str, confidence_visible: bool) -> str:
        text = turn.content
        if not confidence_visible and turn.agent != viewer:
            text = strip_confidence(text)
        return label_turn(turn, text)


@register("response_generator", "simple")
class Simple(ResponseGenerator):
    """Neutral, unbiased replies (seed 000's default)."""


@register("response_generator", "critical")
class Critical(ResponseGenerator):
    """Push back on earlier answers to counter sycophancy."""

    instruction = ("Examine the answers given so far critically: look for errors, gaps and weak arguments. "
                   "Do not agree just to be agreeable; propose a better solution whenever you find one.")


@register("response_generator", "reasoning")
class Reasoning(ResponseGenerator):
    """Seed 000 §3.2: agents exchange reasoning paths only, never final solutions, so that they
    are not drawn to agree with one another's answers; each forms its own solution at the end."""

    shares_answers = False
    instruction = ("Share your reasoning step by step, but do not state a final answer or conclusion: the others "
                   "see everything you write, and everyone decides on their own solution only at the end.")

    def render(self, turn: Turn, viewer: str, confidence_visible: bool) -> str:
        shown = super().render(turn, viewer, confidence_visible)
        return shown if turn.agent == viewer else label_turn(turn, strip_final_answer(shown.split(": ", 1)[1]))
