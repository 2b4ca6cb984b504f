"""The challenge step (seed 000 §5 and App. E.3): after the decision, every agent accepts or
challenges an answer, and one that challenges gives its own.

What it is for: everything of the step except the model calls, which the engine makes
(`phases.run_challenge`): which answer is put to the agents, the prompts of each setting, whose
challenge may change the decision, and the record of the outcome (`outcome`), which a decision the
challenge changed carries in `details["challenge"]` (the original decision stays in the record
before it: events, store and view keep both).

The settings (CHALLENGE_SETTINGS below, the paper's five scenarios; MALLM's coordinator runs
`challenge_solution` once per scenario):
  * "solution": the final answer only (App. E.3, Figures 20 and 21; `challenge: true`);
  * "history": the same, after the discussion as the agent saw it (MALLM: the agent's own
    discussion history before the question);
  * "information": the same, after background information. The paper retrieves Wikipedia passages
    (MALLM's context-plus worker); MAD Lab runs offline, so the first agent's model writes
    background facts instead, in a turn of its own (a stand-in, not a retrieval);
  * "wrong": a planted wrong answer instead of the decision. The paper generates it with another
    model (Qwen2 7B); MALLM's code asks the discussion's own model (`self.llm`): we follow the code
    and ask the first agent's model, in a turn of its own;
  * "irrelevant": a planted irrelevant answer, MALLM's fixed "I) I don't know." (the paper says a
    model wrote these too; the code uses the fixed text: we follow the code).
The two planted settings are the paper's baselines (can agents tell a bad answer?): their
challenges never change the debate's decision, which was not the answer they were shown.

Whose challenge counts: the paper reports "the new solution" of a challenged answer; MALLM's
evaluator (evaluation/evaluator.py, analyze_challenged_answers) scores only the first panelist's
entry (`next(iter(challenged_answers.values()))`), so a challenge counts when the first agent
makes it. We follow the code: the first configured agent's challenge changes the decision when its
new answer reads as a different answer (by the debate's answer type); every agent's stance is
recorded (ChallengeResult) and counted in the report's agent challenge rate.

What it must not do: call a model, emit events, import the engine or the UI, raise on model text.
"""
from __future__ import annotations

from typing import Any

from . import prompts
from .answers import final_answer, never_raises
from .tasks.answer_types import DebateAnswerType, read_answer

# The paper's five scenarios (seed 000 E.3), in the order the form lists them; `challenge: true` is the first.
CHALLENGE_SETTINGS = ("solution", "history", "information", "wrong", "irrelevant")


def challenge_setting(value: Any) -> str | None:
    """The challenge step's setting a `challenge` value names: None for none (False, None, anything
    that is no setting), "solution" for True (the first setting), else the name itself."""
    if value is True:
        return CHALLENGE_SETTINGS[0]
    return value if isinstance(value, str) and value in CHALLENGE_SETTINGS else None

IRRELEVANT_ANSWER = "I) I don't know."  # MALLM's planted irrelevant answer (coordinator.discuss)
PLANTED = ("wrong", "irrelevant")  # settings that put a planted answer to the agents, not the decision
PREPARED = ("wrong", "information")  # settings that make one model call before the agents are asked


def preparation_prompt(setting: str, question: str, task: str) -> list[dict[str, str]] | None:
    """The call a setting needs before the agents are asked (the planted wrong answer, the
    background information), or None."""
    if setting == "wrong":
        return prompts.challenge_wrong_answer_prompt(question, task)
    if setting == "information":
        return prompts.challenge_information_prompt(question, task)
    return None


def challenged_answer(setting: str, decided: str, prepared: str) -> str:
    """The answer the agents are asked to accept or challenge: the decision, or a planted one
    ("" when the planted wrong answer could not be written)."""
    if setting == "wrong":
        return (final_answer(prepared) or prepared or "").strip()
    if setting == "irrelevant":
        return IRRELEVANT_ANSWER
    return decided


def _same_answer(a: str, b: str, config: dict[str, Any]) -> bool | None:
    """Whether two answers read as the same answer of the debate's type (None: `b` is unreadable)."""
    answer_type = DebateAnswerType.of(config)
    second = read_answer(answer_type.kind, b, **answer_type.keywords)
    if not second.valid:
        return None
    first = read_answer(answer_type.kind, a, **answer_type.keywords)
    return first.valid and first.value == second.value


def _no_outcome(error: Exception) -> dict[str, Any]:
    return {"setting": None, "changed": False, "problem": f"unreadable ({type(error).__name__})"}


@never_raises(_no_outcome)
def outcome(setting: str, decider: str, stances: dict[str, bool | None], answers: dict[str, str],
            original: str, challenged: str, config: dict[str, Any]) -> dict[str, Any]:
    """The record of one challenge step (what `details["challenge"]` of a changed decision holds).

    `decider`: the first configured agent (see the module docstring); `stances`: agent -> agrees
    (True), challenges (False) or no clear stance (None); `answers`: the new answers of those that
    challenged; `original`: the decided answer; `challenged`: the answer put to the agents.
    `changed` is True only when the decider challenged a non-planted answer and its new answer
    reads as a different one; `answer` is then the new answer, else the original."""
    new = (answers.get(decider) or "").strip() or None
    challenged_by_decider = stances.get(decider) is False
    same = _same_answer(challenged, new, config) if new else None
    changed = setting not in PLANTED and challenged_by_decider and same is False
    return {
        "setting": setting, "planted": setting in PLANTED, "challenged_answer": challenged,
        "decider": decider, "challenged": challenged_by_decider, "new_answer": new,
        "changed": changed, "original_answer": original, "answer": new if changed else original,
    }
