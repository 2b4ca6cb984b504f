"""Two-sided MAD with two to four debaters (seed 002 §4.3, Table 7), the judge that reads every side,
and the judge of other paradigms, which chooses among the agents' answers and is never asked for a
side (mad_core/paradigms.py TwoSided, mad_core/protocols/decision.py Judge, ballots.read_judge_verdict)."""
from __future__ import annotations

import pytest

from mad_core import ConfigError, DebateConfig, DebateEngine
from mad_core.events import DecisionReached, TurnFinished
from mad_core.protocols.ballots import Verdict, read_judge_verdict
from tests import builders
from tests.builders import config

QUESTION = "What is 6 * 7?"
ANSWERS = {"Agent 1": "40", "Agent 2": "41", "Agent 3": "42", "Agent 4": "43"}
JUDGE_SYSTEM = ("You moderate a debate between {n} participants. You read their arguments and judge which answer "
                "is correct. You are impartial and care only about correctness.")
SIDES = ("affirmative", "negative", "third debater", "fourth debater")


def debater(judge):
    """Debaters state their answer each round; the judge answers with `judge(round)`."""
    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "judge":
            return judge(meta["round"])
        return f"{meta['agent']} argues in round {meta['round']}.\nFinal answer: {ANSWERS[meta['agent']]}"
    return reply


def run(script, n: int, judge, json_schema: bool = False, **settings):
    model, scripted = script(debater(judge), json_schema=json_schema)
    events = builders.run(config(model, n, **{"question": QUESTION, "paradigm": "two_sided", "protocol": "judge",
                                              "judge_model": model, "rounds": 2, "max_rounds": 2, **settings}))
    return events, scripted, model


def turns(events, kind):
    return [e.turn for e in events if isinstance(e, TurnFinished) and e.turn.kind == kind]


def decision(events) -> DecisionReached:
    return [e for e in events if isinstance(e, DecisionReached)][-1]


def argued(agent: str, rnd: int) -> str:
    return f"{agent} argues in round {rnd}.\nFinal answer: {ANSWERS[agent]}"


def verdict_request(labels: list[str]) -> str:
    return ("Has the debate already reached a correct answer? Reply with four lines:\nDecision: YES or NO\n"
            f"Supported side: the label of the debater whose answer you hold correct (one of: {', '.join(labels)})\n"
            "Answer: <the correct answer if YES, otherwise leave empty>\nReason: <one short sentence>")


# ----- the paradigm -------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4])
def test_two_to_four_debaters_are_accepted(n):
    cfg = DebateConfig.from_dict({"question": "q", "paradigm": "two_sided", "protocol": "judge",
                                  "agents": [{"label": f"D{i}", "model": "scripted/x"} for i in range(n)]},
                                 check_models=False)
    assert len(cfg.agents) == n


@pytest.mark.parametrize("n", [1, 5])
def test_fewer_than_two_or_more_than_four_debaters_are_refused(n):
    with pytest.raises(ConfigError) as refused:
        DebateConfig.from_dict({"question": "q", "paradigm": "two_sided", "protocol": "judge",
                                "agents": [{"label": f"D{i}", "model": "scripted/x"} for i in range(n)]},
                               check_models=False)
    assert refused.value.field == "agents" and "2 to 4 debaters" in refused.value.message


def test_three_debaters_speak_one_by_one_in_the_configured_order_and_each_sees_the_history(script):
    events, _, _ = run(script, 3, lambda rnd: "Decision: NO\nAnswer:")
    spoken = turns(events, "discussion")
    assert [(t.round, t.agent) for t in spoken] == [(1, "Agent 1"), (1, "Agent 2"), (1, "Agent 3"),
                                                     (2, "Agent 1"), (2, "Agent 2"), (2, "Agent 3")]
    systems = [t.prompt[0]["content"] for t in spoken[:3]]
    assert "You argue the affirmative side" in systems[0] and "You argue the negative side" in systems[1]
    assert "You are the third debater: weigh the positions argued before you" in systems[2]
    third = spoken[2].prompt[-1]["content"]
    assert f"[Agent 1]: {argued('Agent 1', 1)}" in third and f"[Agent 2]: {argued('Agent 2', 1)}" in third
    assert "[Agent 3]" not in spoken[0].prompt[-1]["content"]  # nobody hears a later speaker of the round early


# ----- the judge reads every side ---------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_judge_prompt_lists_each_debaters_latest_argument_by_label(script, n):
    events, _, _ = run(script, n, lambda rnd: "Decision: NO\nAnswer:")
    labels = [f"Agent {i + 1}" for i in range(n)]
    first, second = [t.prompt for t in turns(events, "judge")][:2]
    latest = "\n\n".join(f"[{label}] ({side}):\n{argued(label, 1)}" for label, side in zip(labels, SIDES))
    assert first == [{"role": "system", "content": JUDGE_SYSTEM.format(n=n)},
                     {"role": "user", "content": f"Question: {QUESTION}\n\nEach debater's latest argument:\n\n"
                                                 f"{latest}\n\n{verdict_request(labels)}"}]
    earlier = "\n\n".join(f"[{label}] (round 1): {argued(label, 1)}" for label in labels)
    latest = "\n\n".join(f"[{label}] ({side}):\n{argued(label, 2)}" for label, side in zip(labels, SIDES))
    assert second[1]["content"] == (f"Question: {QUESTION}\n\nEarlier in the debate:\n\n{earlier}\n\n"
                                    f"Each debater's latest argument:\n\n{latest}\n\n{verdict_request(labels)}")


def test_the_verdict_schema_lists_the_debaters(script):
    _, scripted, _ = run(script, 3, lambda rnd: '{"decision": "NO", "side": "Agent 1", "answer": "", "reason": ""}',
                         json_schema=True)
    formats = [call["response_format"] for call in scripted.history if call["metadata"]["kind"] == "judge"]
    schema = formats[0]["json_schema"]["schema"]
    assert schema["properties"]["side"] == {"type": "string", "enum": ["Agent 1", "Agent 2", "Agent 3"]}
    assert list(schema["properties"]) == ["decision", "side", "answer", "reason"]


@pytest.mark.parametrize("verdict", [
    "Decision: YES\nSupported side: Agent 3\nAnswer:\nReason: the product is 42.",
    "Decision: YES\nSupported side: **Debater 3**\nAnswer:",
    '{"decision": "YES", "side": "Agent 3", "answer": "", "reason": "the product is 42."}',
])
def test_the_verdict_picks_debater_3s_answer(script, verdict):
    events, _, model = run(script, 3, lambda rnd: verdict if rnd == 2 else "Decision: NO\nAnswer:")
    decided = decision(events)
    assert (decided.answer, decided.round, decided.winner_agent) == ("42", 2, "judge")
    assert {k: decided.details[k] for k in ("side", "side_agent", "side_model")} == \
        {"side": "third debater", "side_agent": "Agent 3", "side_model": model}


def test_the_judges_own_answer_wins_over_the_named_debaters(script):
    events, _, _ = run(script, 4, lambda rnd: "Decision: YES\nSupported side: Agent 4\nAnswer: 42")
    assert (decision(events).answer, decision(events).details["side_agent"]) == ("42", "Agent 4")


def test_an_old_affirmative_negative_verdict_still_reads_for_two_debaters(script):
    events, _, model = run(script, 2, lambda rnd: "Decision: YES\nSupported side: Negative\nAnswer: 41")
    assert {k: decision(events).details[k] for k in ("side", "side_agent", "side_model")} == \
        {"side": "negative", "side_agent": "Agent 2", "side_model": model}


# ----- the judge of any other paradigm chooses among the agents' answers -------------------------------
def test_a_memory_paradigm_judge_lists_the_answers_and_is_never_asked_for_a_side(script):
    model, scripted = script(debater(lambda rnd: "Decision: YES\nChosen participant: Agent 2\nAnswer:"),
                             json_schema=True)
    agents = [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)]
    events = list(DebateEngine(DebateConfig.from_dict({
        "question": QUESTION, "agents": agents, "paradigm": "memory", "protocol": "judge", "rounds": 1,
        "max_rounds": 1})).run())
    prompt = turns(events, "judge")[0].prompt
    latest = "\n\n".join(f"[Agent {i}]:\n{argued(f'Agent {i}', 1)}" for i in (1, 2, 3))
    assert prompt[1]["content"] == (
        f"Question: {QUESTION}\n\nEach participant's latest reply:\n\n{latest}\n\n"
        "Has the debate already reached a correct answer? Reply with four lines:\nDecision: YES or NO\n"
        "Chosen participant: the label of the participant whose answer you hold correct (one of: Agent 1, "
        "Agent 2, Agent 3), or none if no participant gave it\n"
        "Answer: <the correct answer in your own words if YES, otherwise leave empty>\nReason: <one short sentence>")
    schema = [c["response_format"] for c in scripted.history if c["metadata"]["kind"] == "judge"][0]
    assert schema["json_schema"]["schema"]["properties"]["participant"]["enum"] == ["Agent 1", "Agent 2", "Agent 3",
                                                                                   "none"]
    asked = str(prompt) + str(schema)
    assert "ffirmative" not in asked and "egative" not in asked and "side" not in asked.lower()  # must not happen
    decided = decision(events)
    assert (decided.answer, decided.details["side_agent"], decided.details["side"]) == ("41", "Agent 2", None)


def test_a_memory_judge_that_names_nobody_gives_its_own_answer(script):
    model, _ = script(debater(lambda rnd: '{"decision": "YES", "participant": "none", "answer": "42", '
                                          '"reason": "all are off by one or two"}'), json_schema=True)
    agents = [{"label": f"Agent {i}", "model": model} for i in (1, 2)]
    events = list(DebateEngine(DebateConfig.from_dict({
        "question": QUESTION, "agents": agents, "protocol": "judge", "rounds": 1, "max_rounds": 1})).run())
    decided = decision(events)
    assert decided.answer == "42" and "side_agent" not in decided.details


# ----- the reader ------------------------------------------------------------------------------------
LABELS = ["Agent 1", "Agent 2", "Agent 3"]


@pytest.mark.parametrize("reply, agent", [
    ("Decision: YES\nSupported side: Agent 3\nAnswer: 42", "Agent 3"),
    ("Decision: YES\nSupported side: agent 3 (third debater)\nAnswer: 42", "Agent 3"),
    ("Decision: YES\nChosen participant: 2\nAnswer: 41", "Agent 2"),
    ("{'Whether there is a preference': 'Yes', 'Supported Side': 'Agent 1', 'debate_answer': '40'}", "Agent 1"),
    ("Decision: YES\nSupported side: Agent 1 and Agent 2\nAnswer: 40", None),  # two named: none
    ("Decision: YES\nChosen participant: none\nAnswer: 42", None),
    ("Decision: YES\nSupported side: Agent 7\nAnswer: 42", None),  # no such debater
    ("Decision: YES\nSupported side: Negative\nAnswer: 41", None),  # a side, not a label: the protocol maps it
])
def test_the_reader_names_the_debater_by_label_or_number(reply, agent):
    verdict = read_judge_verdict(reply, LABELS)
    assert verdict.agent == agent and verdict.decision is True


def test_without_labels_the_reader_is_as_before():
    assert read_judge_verdict("Decision: YES\nSupported side: Negative\nAnswer: 41") == \
        Verdict(True, "41", "negative", "", None)
    assert read_judge_verdict("Decision: YES\nSupported side: Agent 3\nAnswer: 42").agent is None
