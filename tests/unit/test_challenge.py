"""The challenge step (seed 000 §5 and App. E.3; mad_core/challenge.py): its five settings and their
exact prompts, the decision replaced only when the first agent's challenge changes it, both answers
kept in the record (events, store, view, export), and the challenge and improvement rates."""
from __future__ import annotations

import pytest

from mad_core import ConfigError, DebateConfig, exports
from mad_core.challenge import IRRELEVANT_ANSWER
from mad_core.challenge import CHALLENGE_SETTINGS, challenge_setting
from mad_core.events import ChallengeResult, DebateFinished, DecisionReached, ErrorOccurred, TurnFinished
from mad_core.experiments import results as R
from mad_core.export_schema import validate_export
from mad_core.metrics.report import compute_report
from mad_core.store import Store
from mad_core.view import DebateView
from tests.builders import config, of, run

QUESTION = "What is the capital of France?"
LABELS = ("Agent 1", "Agent 2", "Agent 3")
STANCE = "Check it critically. Reply with the single word AGREE if you accept it, or DISAGREE if you do not."
ANSWERING = ("You do not accept it. Give the answer you think is right. "
             "End your reply with one line of the form `Final answer: <your answer>`.")


AXES: dict[str, int] = {}


def embed(texts):
    """A stand-in for SBERT that never merges two different texts (one axis per distinct text)."""
    vectors = []
    for text in texts:
        vector = [0.0] * 64
        vector[AXES.setdefault(text, len(AXES)) % 64] = 1.0
        vectors.append(vector)
    return vectors


def debater(answers: dict[str, str], stances: dict[str, str], new: dict[str, str], prepared: str = ""):
    """A scripted debater: discussion answers per agent, votes for solution 1 (Agent 1's answer),
    challenge stances and new answers per agent, and the setting's preparation text."""
    def reply(messages, info):
        meta = info["metadata"]
        kind, agent, user = meta["kind"], meta["agent"], messages[-1]["content"]
        if kind == "vote":
            return "1"
        if kind == "extraction":
            return answers[agent]
        if kind == "challenge":
            if "Background information" not in user and "group settled" not in user:
                return prepared  # the wrong answer / the background information (before the agents are asked)
            if "You do not accept it" in user:
                return f"On reflection.\nFinal answer: {new[agent]}"
            return stances.get(agent, "AGREE")
        return f"I think about it as {agent}.\nFinal answer: {answers[agent]}"
    return reply


def run_debate(script, setting, answers=None, stances=None, new=None, prepared="", store=None, **settings):
    answers = answers or {label: "Lyon" for label in LABELS}
    model, scripted = script(debater(answers, stances or {}, new or {}, prepared))
    cfg = config(model, len(LABELS), **{"question": QUESTION, "protocol": "simple_voting", "rounds": 1,
                                        "max_rounds": 1, "challenge": setting, **settings})
    events = run(cfg, store=store)
    return events, events.engine, scripted


def challenge_prompts(events) -> list[str]:
    return [e.turn.prompt[-1]["content"] for e in of(events, TurnFinished) if e.turn.kind == "challenge"]


# ----- the setting ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value, setting", [(True, "solution"), (False, None), *((s, s) for s in CHALLENGE_SETTINGS)])
def test_the_challenge_setting_takes_the_papers_settings_by_name_and_true_is_the_first(value, setting):
    cfg = DebateConfig.from_dict({"question": "q", "challenge": value}, check_models=False)
    assert challenge_setting(cfg.challenge) == setting
    assert cfg.challenge == value  # kept as given: an old config or stored debate reads back unchanged


@pytest.mark.parametrize("value", ["off", "Solution", "rag", 1, None, ["history"]])
def test_any_other_challenge_value_is_refused_naming_the_field(value):
    with pytest.raises(ConfigError) as refused:
        DebateConfig.from_dict({"question": "q", "challenge": value}, check_models=False)
    assert refused.value.field == "challenge"
    assert "solution, history, information, wrong, irrelevant" in refused.value.message


# ----- exact prompts per setting ---------------------------------------------------------------------
def test_the_first_setting_asks_about_the_final_answer_only(script):
    events, _, _ = run_debate(script, True, stances={"Agent 1": "DISAGREE"}, new={"Agent 1": "Paris"})
    prompts = challenge_prompts(events)
    settled = f"Question: {QUESTION}\n\nThe group settled on this final answer:\nLyon"
    assert prompts == [f"{settled}\n\n{STANCE}"] * 3 + [f"{settled}\n\n{ANSWERING}"]


def test_the_history_setting_shows_each_agent_the_discussion_it_saw(script):
    answers = {"Agent 1": "Lyon", "Agent 2": "Nice", "Agent 3": "Lyon"}
    events, _, _ = run_debate(script, "history", answers=answers)
    said = "\n\n".join(f"[{label}]: I think about it as {label}.\nFinal answer: {answers[label]}" for label in LABELS)
    expected = (f"Question: {QUESTION}\n\nWhat has been said so far:\n\n{said}\n\n"
                f"The group settled on this final answer:\nLyon\n\n{STANCE}")
    assert challenge_prompts(events) == [expected] * 3


def test_the_information_setting_writes_background_facts_first_and_shows_them(script):
    facts = "Paris has been the seat of the French government since 1944."
    events, _, scripted = run_debate(script, "information", prepared=facts)
    prompts = challenge_prompts(events)
    assert prompts[0] == (f"Question: {QUESTION}\n\nWrite a few short facts from general knowledge that help to "
                          "answer this question: definitions, data, rules that apply. Do not say which answer is "
                          "correct.")
    asked = (f"Question: {QUESTION}\n\nBackground information that may help you:\n{facts}\n\n"
             f"The group settled on this final answer:\nLyon\n\n{STANCE}")
    assert prompts[1:] == [asked] * 3
    first = next(t.turn for t in of(events, TurnFinished) if t.turn.kind == "challenge")
    assert (first.agent, first.content) == ("Agent 1", facts)  # a turn of the record, under the first agent


@pytest.mark.parametrize("setting, shown", [("wrong", "Marseille"), ("irrelevant", IRRELEVANT_ANSWER)])
def test_the_baselines_put_a_planted_answer_to_the_agents_instead_of_the_decision(script, setting, shown):
    events, _, _ = run_debate(script, setting, prepared="It is surely Marseille.\nFinal answer: Marseille")
    prompts = challenge_prompts(events)
    asked = f"Question: {QUESTION}\n\nThe group settled on this final answer:\n{shown}\n\n{STANCE}"
    if setting == "wrong":
        assert prompts[0] == (f"Question: {QUESTION}\n\nGive an answer to this question that is wrong, in the form "
                              "the question asks for. Reply with the wrong answer only.")
        prompts = prompts[1:]
    assert prompts == [asked] * 3
    assert "Lyon" not in "".join(prompts)  # the decision itself is never shown in a baseline


def test_a_planted_answer_that_cannot_be_written_skips_the_step_and_says_why(script):
    events, engine, _ = run_debate(script, "wrong", prepared="")
    assert of(events, ChallengeResult) == []
    assert any(e.message.startswith("Challenge step (wrong): the wrong answer could not be written (the challenge "
                                    "call failed: EmptyReplyError") and e.message.endswith("the agents were not asked.")
               for e in of(events, ErrorOccurred))
    assert engine.status == "finished" and of(events, DebateFinished)[-1].answer == "Lyon"


# ----- the decision: replaced when the first agent's challenge changes it, kept otherwise -------------
def test_the_first_agents_challenge_replaces_the_decision_and_both_answers_stay_in_the_record(script):
    store = Store()
    events, engine, _ = run_debate(script, "solution", stances={"Agent 1": "DISAGREE", "Agent 3": "DISAGREE"},
                                   new={"Agent 1": "Paris", "Agent 3": "Nice"}, store=store)
    decisions = of(events, DecisionReached)
    assert [d.answer for d in decisions] == ["Lyon", "Paris"]
    record = decisions[1].details["challenge"]
    assert {k: record[k] for k in ("setting", "original_answer", "new_answer", "answer", "decider", "changed")} == \
        {"setting": "solution", "original_answer": "Lyon", "new_answer": "Paris", "answer": "Paris",
         "decider": "Agent 1", "changed": True}
    assert decisions[1].winner_agent == "Agent 1" and decisions[1].solutions == decisions[0].solutions
    assert [(c.agent, c.agrees, c.new_answer) for c in of(events, ChallengeResult)] == [
        ("Agent 1", False, "Paris"), ("Agent 2", True, None), ("Agent 3", False, "Nice")]
    assert of(events, DebateFinished)[-1].answer == engine.answer == "Paris"
    # the store keeps both decisions; the debate's answer is the new one
    assert [(d["answer"], d["final"]) for d in store.decisions(engine.debate_id) if d["final"]] == \
        [("Lyon", 1), ("Paris", 1)]
    assert store.get_debate(engine.debate_id)["answer"] == "Paris"
    view = DebateView.from_store(store, engine.debate_id)
    assert (view.decision.answer, view.protocol_decision.answer) == ("Paris", "Lyon")
    assert view.challenge_change["original_answer"] == "Lyon"
    # the export carries both and passes the import checks
    exported = validate_export(exports.export_debate(store, engine.debate_id, embed=embed))
    finals = [d for d in exported["decisions"] if d["final"]]
    assert [d["answer"] for d in finals] == ["Lyon", "Paris"]
    assert finals[1]["details"]["challenge"]["original_answer"] == "Lyon"


@pytest.mark.parametrize("stances, new, why", [
    ({"Agent 2": "DISAGREE"}, {"Agent 2": "Paris"}, "only a later agent challenged"),
    ({"Agent 1": "DISAGREE"}, {"Agent 1": "LYON"}, "the new answer reads as the same answer"),
    ({}, {}, "everyone agreed"),
])
def test_the_decision_is_kept_when_the_first_agents_challenge_does_not_change_it(script, stances, new, why):
    events, engine, _ = run_debate(script, "solution", stances=stances, new=new, answer_type="text")
    assert [d.answer for d in of(events, DecisionReached)] == ["Lyon"], why  # must not: a second decision
    assert engine.answer == of(events, DebateFinished)[-1].answer == "Lyon"
    view = DebateView()
    for event in events:
        view.apply(event)
    assert view.challenge_change is None and view.protocol_decision is None


def test_a_planted_answer_challenged_never_replaces_the_decision(script):
    events, engine, _ = run_debate(script, "irrelevant", stances={label: "DISAGREE" for label in LABELS},
                                   new={label: "Paris" for label in LABELS})
    assert [c.agrees for c in of(events, ChallengeResult)] == [False, False, False]
    assert [d.answer for d in of(events, DecisionReached)] == ["Lyon"] and engine.answer == "Lyon"


def test_a_stored_debate_with_challenge_true_reads_back_as_the_first_setting(script):
    store = Store()
    events, engine, _ = run_debate(script, True, store=store)
    stored = store.get_debate(engine.debate_id)["config"]
    assert stored["challenge"] is True and challenge_setting(stored["challenge"]) == "solution"
    report = compute_report(DebateView.from_store(store, engine.debate_id), embed=embed)
    assert report["challenge"]["setting"] == "solution"


# ----- rates -----------------------------------------------------------------------------------------
def report_of(events) -> dict:
    view = DebateView()
    for event in events:
        view.apply(event)
    return compute_report(view, embed=embed)


def test_rates_on_worked_examples(script):
    """Three debates, reference Paris: (a) decided Lyon, Agent 1 challenges with Paris: changed and
    improved; (b) decided Paris, Agent 1 challenges with Lyon: changed and worse; (c) decided Lyon,
    only Agent 2 challenges: not challenged (MALLM scores the first agent's challenge only)."""
    paris = {label: "Paris" for label in LABELS}
    a = report_of(run_debate(script, "solution", stances={"Agent 1": "DISAGREE"}, new={"Agent 1": "Paris"},
                             reference="Paris")[0])
    b = report_of(run_debate(script, "solution", answers=paris, stances={"Agent 1": "DISAGREE"},
                             new={"Agent 1": "Lyon"}, reference="Paris")[0])
    c = report_of(run_debate(script, "solution", stances={"Agent 2": "DISAGREE"}, new={"Agent 2": "Paris"},
                             reference="Paris")[0])
    assert {k: a["challenge"][k] for k in ("challenged", "changed", "score_before", "score_after", "improved",
                                           "worsened", "agent_challenge_rate")} == \
        {"challenged": True, "changed": True, "score_before": 0.0, "score_after": 1.0, "improved": True,
         "worsened": False, "agent_challenge_rate": pytest.approx(1 / 3)}
    assert a["summary"]["answer"] == "Paris" and a["summary"]["correct"] is True  # the new decision is measured
    assert (b["challenge"]["improved"], b["challenge"]["worsened"], b["summary"]["correct"]) == (False, True, False)
    assert (c["challenge"]["challenged"], c["challenge"]["changed"], c["challenge"]["improved"]) == (False, False, None)
    assert c["challenge"]["challengers"] == 1 and c["summary"]["correct"] is False
    configurations = [{"key": "k", "label": "challenge=solution", "values": {"challenge": "solution"}}]
    runs = [{"config_key": "k", "status": "finished", "summary": r["summary"]} for r in (a, b, c)]
    row, = R.aggregate(runs, configurations)
    assert row.stats["challenge_rate"] == R.Stat(pytest.approx(2 / 3), pytest.approx(0.5773502692), 3)
    assert row.stats["challenge_changed"].mean == pytest.approx(2 / 3)
    assert row.stats["challenge_improved"] == R.Stat(0.5, pytest.approx(0.7071067812), 2)  # of the challenged ones
    assert row.stats["challenge_worsened"].mean == 0.5
    shown = R.display_records([row])[0]
    assert (shown["challenged"], shown["changed by the challenge"], shown["challenge improved"]) == \
        ("0.67 ± 0.58", "0.67 ± 0.58", "0.50 ± 0.71")


def test_a_baseline_scores_the_new_answer_against_the_planted_one(script):
    report = report_of(run_debate(script, "irrelevant", stances={"Agent 1": "DISAGREE"}, new={"Agent 1": "Paris"},
                                  reference="Paris")[0])
    assert {k: report["challenge"][k] for k in ("planted", "challenged_answer", "challenged", "changed",
                                                "score_before", "improved")} == \
        {"planted": True, "challenged_answer": IRRELEVANT_ANSWER, "challenged": True, "changed": False,
         "score_before": 0.0, "improved": True}
    assert report["summary"]["answer"] == "Lyon"  # the decision itself was never challenged


def test_debates_without_a_challenge_step_have_no_rates_and_no_challenge_columns(script):
    report = report_of(run_debate(script, False, reference="Paris")[0])
    assert report["challenge"] is None
    assert all(report["summary"][k] is None for k in ("challenged", "challenge_changed", "challenge_improved"))
    configurations = [{"key": "k", "label": "plain", "values": {}}]
    row, = R.aggregate([{"config_key": "k", "status": "finished", "summary": report["summary"]}], configurations)
    assert row.stats["challenge_rate"].n == 0
    assert "challenged" not in R.display_records([row])[0]  # must not: empty challenge columns everywhere
    assert not any(key.startswith("challenge") for key in R.table_records([row])[0])
