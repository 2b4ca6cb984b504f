"""Metrics a researcher can trust (issue 10, second round of trials): a number answer is the
claimed one or unreadable, everywhere it is graded; a round's entropy and agreement are over its
readable answers and say how many there were (None, never 0 bits, when there was none); "who
changed their answer when" quotes what the agent saw, never a reply written at the same time.

Debates run on the scripted model through the engine; a fake embedder stands in for SBERT.
"""
from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from mad_core import DebateConfig, DebateEngine, figures
from mad_core.events import TurnFinished
from mad_core.metrics.report import compute_report, debate_report
from mad_core.store import Store, list_debates, stored_correctness
from mad_core.view import DebateView
from tests import builders
from tests.builders import config


def embed(texts):
    return [[1.0, 0.0] for _ in texts]


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "trust.db") as s:
        yield s


def run(script, store, reply, **settings) -> str:
    model, _ = script(reply)
    cfg = config(model, **{"question": "Is 91 a prime number?", "protocol": "simple_voting", **settings})
    return builders.run(cfg, store=store).engine.debate_id


# ----- 1. a number answer is the claimed one, or unreadable ---------------------------------------
def test_a_debate_deciding_the_wrong_number_by_its_last_number_is_not_correct(script, store):
    said = "0.11 is the larger of 0.9"  # the researcher's debate: reference 0.9

    def reply(messages, info):
        return "1" if info["metadata"]["kind"] == "vote" else said

    debate = run(script, store, reply, rounds=1, max_rounds=2, reference="0.9", answer_type="number")
    report = debate_report(store, debate, embed=embed)
    [row] = report["rounds"]
    # must not happen: "0.11 is the larger of 0.9" read as 0.9 (its last number), graded correct
    assert row["answers"] == {"Agent 1": None, "Agent 2": None, "Agent 3": None}
    assert (row["readable"], row["entropy"], row["correct_share"]) == (0, None, 0.0)
    assert report["summary"]["correct"] is False and report["summary"]["accuracy_strict"] == 0.0
    # the list's correctness filter and the report agree
    assert stored_correctness(store, store.get_debate(debate)) == "incorrect"
    assert [d["id"] for d in list_debates(store, correctness="correct")] == []


# ----- 2. entropy and agreement over readable answers -----------------------------------------------
YES_NO = {  # round -> agent -> (discussion reply, extraction reply or None)
    1: {"Agent 1": "Maybe, it depends.", "Agent 2": "I cannot say.", "Agent 3": "Final answer: yes"},
    2: {"Agent 1": "Hmm, maybe.", "Agent 2": "It depends.", "Agent 3": "Unclear."},
    3: {"Agent 1": "Perhaps.", "Agent 2": "Not sure.", "Agent 3": "Maybe."},
}
EXTRACTED = {"Agent 1": '{"answer": "yes"}', "Agent 2": '{"answer": "yes"}', "Agent 3": '{"answer": "no answer"}'}


def yes_no_reply(messages, info):
    meta = info["metadata"]
    if meta["kind"] == "vote":
        return "1"
    if meta["kind"] == "extraction":
        return EXTRACTED[meta["agent"]]
    return YES_NO[min(meta["round"], 3)][meta["agent"]]


def test_rounds_without_readable_answers_have_no_entropy_and_say_how_many_were_read(script, store):
    debate = run(script, store, yes_no_reply, rounds=3, max_rounds=4, reference="no", answer_type="yes_no",
                 extract_final_answers=True)
    report = debate_report(store, debate, embed=embed)
    first, second, third = report["rounds"]
    assert first["answers"] == {"Agent 1": None, "Agent 2": None, "Agent 3": "yes"}
    assert (first["readable"], first["agents"], first["entropy"]) == (1, 3, 0.0)
    # seed 001 App. B counts every agent: one readable "yes" of three is no unanimity
    assert (first["agree_all"], first["disagreement"]) == (0.0, None)
    # must not happen: 0 bits ("every agent gives one answer") for a round in which nobody answered
    assert (second["readable"], second["entropy"]) == (0, None)
    assert (second["agree_all"], second["agree_majority"]) == (None, None)
    assert second["disagreement"] is None
    # the decision round's extraction answers (what the vote chart shows) are the round's answers
    assert third["answers"] == {"Agent 1": "yes", "Agent 2": "yes", "Agent 3": None}
    assert (third["readable"], third["entropy"]) == (2, 0.0)
    # seed 001 App. B averages over every round, as the accuracy AUCs do: the round nobody answered
    # counts 0 (a gap in the chart), so majority agreement is (0 + 0 + 1) / 3, not (0 + 1) / 2
    assert report["summary"]["agreement_all_auc"] == 0.0
    assert report["summary"]["agreement_majority_auc"] == pytest.approx(1 / 3)

    view = DebateView.from_store(store, debate)
    charts = figures.debate_figures(view, report, revealed=False)
    entropy = charts["plot_entropy"][1]
    assert list(entropy.data[0].y) == [0.0, None, 0.0]  # a gap, never a 0
    notes = {a.x: a.text for a in entropy.layout.annotations}
    assert notes == {1: "1 of 3 answers readable", 2: "no readable answers", 3: "2 of 3 answers readable"}
    assert list(entropy.data[0].customdata) == ["1 of 3 answers readable", "no readable answers",
                                                "2 of 3 answers readable"]
    assert "%{customdata}" in entropy.data[0].hovertemplate
    agreement = charts["plot_agreement"][1]
    assert list(agreement.data[0].y) == [0.0, None, 0.0]
    assert {a.x: a.text for a in agreement.layout.annotations} == notes

    cells = charts["plot_timeline"][1].data[0]
    # round 3 shows the answers the votes show (Agent 1 -> yes), not a blank
    assert [figures.cell_color(cells, 0, c) is None for c in range(3)] == [True, True, False]
    assert cells.customdata[0][0] == "no readable answer"
    assert cells.text[0][1].replace("<br>", " ") == "no readable answer"  # must not happen: a blank cell
    assert cells.customdata[2][0] == "yes"
    votes = figures.vote_rounds(view, report)
    assert votes[-1]["answers"][0] == "yes" == cells.customdata[0][2]


def test_a_timeline_cell_of_an_agent_that_did_not_speak_says_so():
    report = {"rounds": [{"round": 1, "answers": {"Agent 1": "yes", "Agent 2": None}},
                         {"round": 2, "answers": {"Agent 1": "yes"}}], "agents": {}}
    cells = figures.timeline_figure(SimpleNamespace(agents=["Agent 1", "Agent 2"]), report).data[0]
    assert [list(row) for row in cells.customdata] == [["yes", "yes"], ["no readable answer", "did not speak"]]
    assert cells.text[1][0].replace("<br>", " ") == "no readable answer"  # must not happen: a blank cell
    assert figures.cell_color(cells, 1, 0) is None and figures.cell_color(cells, 0, 0) == figures.CATEGORY_COLORS[0]


# ----- 3. "just before" is what the agent saw ------------------------------------------------------------
def test_simultaneous_change_quotes_the_previous_round_not_a_reply_written_at_the_same_time(script, store):
    answers = {1: {"Agent 1": "B", "Agent 2": "B", "Agent 3": "C"}, 2: {"Agent 1": "B", "Agent 2": "B", "Agent 3": "B"}}
    third_done = threading.Event()  # round 2: Agent 1's call ends only after Agent 3's has ended

    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "vote":
            return "1"
        if meta["round"] == 2 and meta["agent"] == "Agent 1":
            assert third_done.wait(10)
        return f"{meta['agent']} in round {meta['round']}.\nFinal answer: {answers[meta['round']][meta['agent']]}"

    model, _ = script(reply)
    config = DebateConfig.from_dict({
        "question": "Capital of France? (A) Nice (B) Paris (C) Lyon", "rounds": 2, "max_rounds": 3,
        "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)], "protocol": "simple_voting",
        "paradigm": "simultaneous", "answer_type": "choice", "answer_options": ["Nice", "Paris", "Lyon"]})
    engine = DebateEngine(config, store=store)
    finished = []
    for event in engine.run():
        if isinstance(event, TurnFinished) and event.turn.round == 2 and event.turn.kind == "discussion":
            finished.append(event.turn.agent)
            if event.turn.agent == "Agent 3":
                third_done.set()
    assert finished.index("Agent 3") < finished.index("Agent 1")  # not the agent order (Agent 2 may end anywhere)
    report = debate_report(store, engine.debate_id, embed=embed)
    [change] = report["agents"]["Agent 3"]["changes"]
    assert (change["round"], change["from"], change["to"]) == (2, "C", "B")
    # what Agent 3 saw: round 1's replies; the last of them by another agent is Agent 2's
    assert change["before"] == {"agent": "Agent 2", "round": 1, "text": "Agent 2 in round 1. Final answer: B"}
    # must not happen: a round-2 reply (written at the same time as Agent 3's) quoted as "just before"
    assert change["short"].endswith("after Agent 2 said: Agent 2 in round 1. Final answer: B")
    assert "in round 2." not in change["short"]


def test_a_moderator_message_the_agent_received_is_what_it_heard_last(script, store):
    answers = {1: {"Agent 1": "B", "Agent 2": "C"}, 2: {"Agent 1": "B", "Agent 2": "B"}}

    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "vote":
            return "1"
        return f"{meta['agent']} in round {meta['round']}.\nFinal answer: {answers[meta['round']][meta['agent']]}"

    model, _ = script(reply)
    config = DebateConfig.from_dict({
        "question": "Capital of France? (A) Nice (B) Paris (C) Lyon", "rounds": 2, "max_rounds": 3,
        "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2)], "protocol": "simple_voting",
        "paradigm": "simultaneous", "answer_type": "choice", "answer_options": ["Nice", "Paris", "Lyon"]})

    def say(event):  # a listener: at the step boundary after Agent 2's first turn
        if isinstance(event, TurnFinished) and (event.turn.round, event.turn.agent) == (1, "Agent 2"):
            engine.controller.say("Think of the river <b>Seine</b>.", targets=["Agent 2"])

    engine = DebateEngine(config, store=store, listeners=[say])
    list(engine.run())
    view = DebateView.from_store(store, engine.debate_id)
    prompt = next(t.prompt for t in view.turns if t.round == 2 and t.agent == "Agent 2")
    assert "Think of the river <b>Seine</b>." in prompt[-1]["content"]
    [change] = compute_report(view, embed=embed)["agents"]["Agent 2"]["changes"]
    assert change["before"] == {"agent": "moderator", "round": 2, "text": "Think of the river <b>Seine</b>."}


def test_a_timeline_of_many_rounds_names_the_grey_of_unreadable_answers_in_its_legend():
    rounds = [{"round": r, "answers": {"Agent 1": "yes", "Agent 2": None if r == 3 else "no"}} for r in range(1, 13)]
    fig = figures.timeline_figure(SimpleNamespace(agents=["Agent 1", "Agent 2"]), {"rounds": rounds, "agents": {}})
    assert [(t.name, t.marker.color) for t in fig.data[1:]] == [
        ("yes", figures.CATEGORY_COLORS[0]), ("no", figures.CATEGORY_COLORS[1]),
        ("no readable answer", figures.NO_ANSWER_COLOR)]
    assert fig.data[0].customdata[1][2] == "no readable answer"  # the hover says it (the cell is too narrow)


# ----- 4. the final answers' similarity is over the answers (issue 10, third round) -------------------
BAT_AND_BALL = {  # the teacher's debate: extraction replies in the constrained JSON form
    "Agent 1": '{\n  "answer": "The answer is: 1111"\n}',
    "Agent 2": '{\n  "answer": "1.01"\n}',
    "Agent 3": '{\n    "answer": "You\'ll need to consider the total cost of $1.10, so the ball costs $0.05."\n}',
}


class OneHotEmbedder:
    """Every distinct text its own direction (different texts: cosine 0, the same text: 1); records
    what it was asked to embed."""

    def __init__(self):
        self.seen: list[list[str]] = []
        self.axes: dict[str, int] = {}

    def __call__(self, texts):
        self.seen.append(list(texts))
        vectors = []
        for text in texts:
            axis = self.axes.setdefault(text, len(self.axes))
            vectors.append([1.0 if i == axis else 0.0 for i in range(64)])
        return vectors


def test_the_final_answer_similarity_is_over_the_extracted_answers_not_the_json_closing_brace(script, store, roles):
    reply = roles(vote='{"vote": 1}', extraction=lambda messages, meta: BAT_AND_BALL[meta["agent"]],
                  discussion=lambda messages, meta: f"{meta['agent']} weighs the bat and the ball, no answer line.")
    debate = run(script, store, reply, rounds=1, max_rounds=2, answer_type="text", extract_final_answers=True)
    view = DebateView.from_store(store, debate)
    # the engine records the answer without the lead-in the model wrote inside the JSON
    assert view.decision.answer == "1111" and view.decision.winner_agent == "Agent 1"
    assert view.decision.solutions[:2] == ["1111", "1.01"]
    embedder = OneHotEmbedder()
    report = compute_report(view, embed=embedder)
    answers = ["1111", "1.01", "You'll need to consider the total cost of $1.10, so the ball costs $0.05."]
    assert answers in embedder.seen  # the similarity was computed over the three answers themselves
    [row] = report["rounds"]
    assert row["answers"] == dict(zip(("Agent 1", "Agent 2", "Agent 3"), answers))
    # must not happen: 1.0 for three different answers (three "}" embedded alike)
    assert row["answer_similarity"] == 0.0 == report["summary"]["answer_similarity"]
    assert not any("}" in seen for seen in embedder.seen)
    assert report["summary"]["answer"] == "1111"
