"""The steps around the discussion: personas before it (seed 000), the challenge after the decision.

Each takes the running debate's `context.DebateContext` (its calls are recorded turns, its
events go to the listeners and the consumer) and never imports the engine. The rules live in
`personas.py` and `challenge.py`; this module only runs them against the debate.
"""
from __future__ import annotations

import time
from dataclasses import replace

from . import challenge, prompts
from .answers import decided_answer, final_answer, parse_agreement
from .calls import call_problem
from .context import DebateContext
from .events import ChallengeResult, DecisionReached, ErrorOccurred
from .personas import generate_personas, neutral
from .protocols.schemas import ReplyFormat, agreement_format


def assign_personas(ctx: DebateContext) -> str | None:
    """Seed 000: one task-relevant expert per agent without a persona, asked for one at a time (see
    `personas`); every call is a recorded turn (under the first agent's label). When the model
    cannot give a usable list, those agents become neutral participants and an ErrorOccurred
    says so in the debate's record. A stop while the list is asked for is no such failure: no
    more is asked, and the returned reason (the debate's finish reason) says it was stopped
    during persona generation. Returns None when not stopped."""
    cfg, state = ctx.cfg, ctx.calls.state
    model = cfg.persona_model or cfg.agents[0].model
    labels = ctx.labels

    def ask(messages: list[dict], reply: ReplyFormat) -> tuple[str | None, str]:
        turn = ctx.calls.ask(labels[0], "persona", messages, model, reply)
        return (turn.content, "") if turn.status == "ok" else (None, turn.error or turn.status)

    result = generate_personas(cfg.question, cfg.task, labels, ask, state.personas,
                               options=cfg.answer_options, stopped=lambda: ctx.stopped)
    state.personas = result.personas
    if result.stopped:  # a person stopped the debate: no model failure to report, no fallback to give
        return str(result.reason)  # "stopped by a person during persona generation"
    if not result.ok:
        fallback = [label for label in labels if not state.personas.get(label)]
        for label in fallback:
            state.personas[label] = neutral(labels.index(label))
        ctx.emit(ErrorOccurred(f"Personas: the model could not suggest usable personas in {result.attempts} "
                               f"requests ({result.reason}); {', '.join(fallback)} got a neutral persona."))
    return None


def _prepare(ctx: DebateContext, setting: str) -> str | None:
    """The challenge's preparation turn (a wrong answer or background information), or None when
    the setting needs none; "" when it could not be written (an ErrorOccurred says why)."""
    cfg = ctx.cfg
    preparation = challenge.preparation_prompt(setting, cfg.question, cfg.task)
    if preparation is None:
        return None
    turn = ctx.calls.ask(ctx.labels[0], "challenge", preparation)
    prepared = turn.content.strip() if turn.status == "ok" else ""
    if not prepared and not ctx.stopped:
        what = "wrong answer" if setting == "wrong" else "background information"
        why = call_problem(turn, "challenge") if turn.status != "ok" else "the reply was empty"
        ctx.emit(ErrorOccurred(f"Challenge step ({setting}): the {what} could not be written ({why}); "
                               "the agents were not asked."))
    return prepared


def run_challenge(ctx: DebateContext, decision: DecisionReached, setting: str) -> str | None:
    """Seed 000 §5 and App. E.3 (the rules: mad_core/challenge.py): every agent accepts or challenges
    the answer its `setting` (`config.challenge_setting`) puts to it; one that challenges gives its
    own. When the first agent's challenge changes the answer, a DecisionReached with the new answer
    (its `details["challenge"]` naming the original) follows the protocol's; the new answer is
    returned (else None)."""
    cfg, labels, discussion = ctx.cfg, ctx.labels, ctx.discussion
    original = decided_answer(decision.answer, decision.details)
    prepared = _prepare(ctx, setting)
    if prepared == "":
        return None
    prepared = prepared or ""
    put = challenge.challenged_answer(setting, original, prepared)

    def messages(label: str, answering: bool) -> list[dict[str, str]]:
        history = [discussion.render(t, label) for t in discussion.seen(label, ctx.round + 1)] \
            if setting == "history" else None
        build = prompts.challenge_answer_prompt if answering else prompts.challenge_prompt
        return build(discussion.plain_system(label), cfg.question, cfg.task, put, history=history,
                     information=prepared if setting == "information" else "")

    turns = ctx.calls.ask_many([(label, "challenge", messages(label, False), None, agreement_format())
                                for label in labels])
    stances = {t.agent: parse_agreement(t.content) if t.status == "ok" else None for t in turns}
    dissent = [label for label in labels if stances.get(label) is False]
    follow = ctx.calls.ask_many([(label, "challenge", messages(label, True), None) for label in dissent]) \
        if dissent else []
    answers = {t.agent: final_answer(t.content) for t in follow if t.status == "ok"}
    for label in labels:
        ctx.emit(ChallengeResult(label, stances.get(label), answers.get(label)))
    record = challenge.outcome(setting, labels[0], stances, answers, original, put, cfg.to_dict())
    if record.get("changed") and not ctx.stopped:
        ctx.emit(replace(decision, answer=record["answer"], winner_agent=labels[0], winner_index=None,
                         fallback=None, details={"challenge": record}, ts=time.time()))
        return record["answer"]
    return None
