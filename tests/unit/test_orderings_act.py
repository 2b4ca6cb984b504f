"""Speaking orders act in the round they are computed for (seed 003), checked on the paper presets.

Each ordering preset is run with a scripted model whose first-round answers make its order differ
from the configured one, beside its fixed-order twin: the round-2 prompts must show the first
round's answers in the round-2 order, and must differ from the twin's (a knob that changes no
prompt is a defect). Every model call is the public path (litellm's provider map).
"""
from __future__ import annotations

import pytest

from mad_core import DebateConfig
from mad_core.events import DecisionAttempted, DecisionReached, RoundStarted, TurnFinished
from mad_core.presets import preset_config
from tests.builders import config, run

# The agents answering (D), the preset's reference, in the first round; the others answer (A).
# truth_last: holders of the truth go last, so agents 1-3 move to the end. MADC (Algorithm 1): the
# less consistent (the minority, agents 8-10) go first.
HOLDERS = {"madc_ordering": {"Agent 8", "Agent 9", "Agent 10"},
           "madc_truth_last": {"Agent 1", "Agent 2", "Agent 3"}}


def preset_with(name: str, model: str, **changes) -> DebateConfig:
    data = preset_config(name)
    data["agents"] = [{**agent, "model": model} for agent in data["agents"]]
    return DebateConfig.from_dict({**data, **changes})


def _round2_prompts(events) -> dict[str, str]:
    return {e.turn.agent: "\n".join(m["content"] for m in e.turn.prompt if m["role"] != "system")
            for e in events if isinstance(e, TurnFinished) and e.turn.round == 2 and e.turn.kind == "discussion"}


@pytest.mark.parametrize("preset", sorted(HOLDERS))
def test_a_paper_presets_order_reaches_the_round_2_prompts_and_differs_from_fixed(script, preset):
    holders = HOLDERS[preset]

    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] not in ("draft", "discussion"):
            return "(A)"
        letter = "D" if meta["agent"] in holders else "A"
        return f"MARK<{meta['agent']}>R{meta['round']} reasons.\nFinal answer: ({letter})"
    model, _ = script(reply)
    events = run(preset_with(preset, model))
    twin = run(preset_with(preset, model, ordering="fixed"))
    order = [e.order for e in events if isinstance(e, RoundStarted)][1]
    configured = [f"Agent {i}" for i in range(1, 11)]
    assert order != configured  # the first round's answers do move the agents
    assert [e.order for e in twin if isinstance(e, RoundStarted)][1] == configured
    prompts, fixed = _round2_prompts(events), _round2_prompts(twin)
    assert set(prompts) == set(configured)
    for viewer, text in prompts.items():
        positions = [text.index(f"MARK<{agent}>R1") for agent in order]
        assert positions == sorted(positions), (viewer, order)
        assert text != fixed[viewer], viewer  # must not happen: the same prompt as the fixed-order twin


# ----- one reading of an answer: orderings read answers as the metrics do --------------------------------
def _first_round(script, answers: dict[str, str], **settings):
    model, _ = script(lambda m, info: "1" if info["metadata"]["kind"] not in ("draft", "discussion") else
                      f"Because.\nFinal answer: {answers[info['metadata']['agent']]}")
    cfg = config(model, n=len(answers), question="How many apples?", paradigm="simultaneous", rounds=2,
                 max_rounds=2, extract_final_answers=False, **settings)
    return [e.order for e in run(cfg) if isinstance(e, RoundStarted)][1]


@pytest.mark.parametrize("kind, answers, reference, moved", [
    ("number", ("18 apples", "17", "18"), "18", ("Agent 1", "Agent 3")),
    ("number", ("1.5 m/s", "2", "1.5"), "1.5", ("Agent 1", "Agent 3")),
    ("yes_no", ("Yes, it is.", "no", "yes"), "yes", ("Agent 1", "Agent 3")),
])
def test_truth_last_reads_answers_with_the_debates_answer_type(script, kind, answers, reference, moved):
    named = dict(zip(("Agent 1", "Agent 2", "Agent 3"), answers))
    order = _first_round(script, named, ordering="truth_last", reference=reference, answer_type=kind)
    assert order == ["Agent 2", *moved]
    # answer_type text behaves as before: "18 apples" is not "18"
    if kind == "number" and reference == "18":
        order = _first_round(script, named, ordering="truth_last", reference=reference, answer_type="text")
        assert order == ["Agent 1", "Agent 2", "Agent 3"]


def test_madc_path_consistency_reads_answers_with_the_debates_answer_type(script):
    """Seed 003 Eq. 2 over the answers as read: "18 apples" and "18" agree, so Agent 3 ("17") is the
    least consistent and speaks first; as text all three differ and the order stays."""
    named = {"Agent 1": "18 apples", "Agent 2": "18", "Agent 3": "17"}
    assert _first_round(script, named, ordering="madc", answer_type="number") == ["Agent 3", "Agent 1", "Agent 2"]
    assert _first_round(script, named, ordering="madc") == ["Agent 1", "Agent 2", "Agent 3"]


@pytest.mark.parametrize("kind, answers, reference, decided, reason", [
    ("number", ("18 apples", "18", "17"), "18", "18", "18: given by 2 of 3 agents"),
    ("number", ("1.5 m/s", "2", "1.5"), "1.5", "1.5", "1.5: given by 2 of 3 agents"),
    ("yes_no", ("Yes, it is.", "no", "yes"), "yes", "yes", "yes: given by 2 of 3 agents"),
])
def test_solution_counting_counts_answers_as_read(script, kind, answers, reference, decided, reason):
    """Issue 19.3: counting over "18 apples", "18", "17" is not a three-way tie (then the first agent's
    fallback) while the report says two agents agreed: it decides the read answer, given by 2 of 3."""
    named = dict(zip(("Agent 1", "Agent 2", "Agent 3"), answers))
    model, _ = script(lambda m, info: f"Because.\nFinal answer: {named[info['metadata']['agent']]}")
    events = run(config(model, question="How many apples?", protocol="solution_counting", rounds=1, max_rounds=3,
                        extract_final_answers=False, answer_type=kind, reference=reference))
    decisions = [e for e in events if isinstance(e, DecisionReached)]
    assert len(decisions) == 1 and decisions[0].round == 1  # must not happen: a tie and another round
    assert decisions[0].answer == decided and decisions[0].fallback is None
    attempts = [e for e in events if isinstance(e, DecisionAttempted)]
    assert attempts[-1].reason == reason


def test_solution_counting_over_text_counts_as_before(script):
    named = {"Agent 1": "18 apples", "Agent 2": "18", "Agent 3": "17"}
    model, _ = script(lambda m, info: f"Because.\nFinal answer: {named[info['metadata']['agent']]}")
    events = run(config(model, question="How many apples?", protocol="solution_counting", rounds=1, max_rounds=1,
                        extract_final_answers=False))
    assert [e.reason for e in events if isinstance(e, DecisionAttempted)][0].startswith("tie: 3 answers")
