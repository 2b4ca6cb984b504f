"""A debate's metric report (mad_core/metrics/report.py) on debates run by the engine on the scripted model.

Every expected number is computed by hand from the scripted answers in the test; a fake embedder
(a lookup table of 2-d vectors) replaces SBERT, so similarities are exact too.
"""
from __future__ import annotations

import json
import math

import litellm
import pytest

from mad_core import ConfigError, Controller, DebateConfig, DebateEngine, exports
from mad_core.events import SteeringApplied, Turn, TurnFinished
from mad_core.export_schema import ExportError, validate_export
from mad_core.metrics import report as reports
from mad_core.metrics.report import TEXT_CLUSTER_THRESHOLD, AnswerReader, compute_report, debate_report, estimated_cost
from mad_core.store import Store
from mad_core.view import DebateView
from tests.builders import config, run

OPTIONS = ["Nice", "Paris", "Lyon"]
# Round 1: two agents say B in different forms, one says C; round 2: everyone says B.
CHOICES = {1: {"Agent 1": "B", "Agent 2": "(C) Lyon", "Agent 3": "b."},
           2: {"Agent 1": "B", "Agent 2": "(B) Paris", "Agent 3": "B"}}
VECTORS = {"B": [1.0, 0.0], "b.": [1.0, 0.0], "(C) Lyon": [0.0, 1.0], "(B) Paris": [1.0, 1.0]}


class FakeEmbed:
    """Looks texts up in a table (anything else: [1, 1]); counts its calls and the texts it got."""

    def __init__(self, table=None):
        self.table = table if table is not None else VECTORS
        self.calls = 0
        self.texts: list[str] = []

    def __call__(self, texts):
        self.calls += 1
        self.texts += list(texts)
        return [self.table.get(t, [1.0, 1.0]) for t in texts]


def scripted(answers: dict[int, dict[str, str]]):
    """Discussion turns end with "Final answer: X" for the round's X; extraction says X; votes pick 1."""
    last = max(answers)

    def reply(messages, info):
        meta = info["metadata"]
        answer = answers[min(meta["round"], last)].get(meta["agent"], "?")
        if meta["kind"] == "vote":
            return "1"
        if meta["kind"] == "extraction":
            return answer
        return f"Reasoning of {meta['agent']}.\nFinal answer: {answer}"
    return reply


def run_debate(script, store, answers, **settings) -> str:
    model, _ = script(scripted(answers))
    cfg = config(model, **{"question": "Which city is the capital of France? (A) Nice (B) Paris (C) Lyon",
                           "rounds": len(answers), "max_rounds": len(answers) + 1, "protocol": "simple_voting",
                           **settings})
    return run(cfg, store=store).engine.debate_id


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "metrics.db") as s:
        yield s


def choice_debate(script, store) -> str:
    return run_debate(script, store, CHOICES, reference="B", answer_type="choice", answer_options=OPTIONS)


# ----- a hand-computed multiple-choice debate ---------------------------------------------------------
def test_choice_debate_report_matches_the_hand_computed_numbers(script, store):
    debate = choice_debate(script, store)
    report = debate_report(store, debate, embed=FakeEmbed())
    first, second = report["rounds"]
    # "B", "(C) Lyon", "b." are read as B, C, B: one answer in two forms
    assert first["answers"] == {"Agent 1": "B", "Agent 2": "C", "Agent 3": "B"}
    assert second["answers"] == {"Agent 1": "B", "Agent 2": "B", "Agent 3": "B"}
    assert first["entropy"] == pytest.approx(-(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3)))
    assert second["entropy"] == 0.0
    assert first["log_likelihood"] == pytest.approx(math.log2(2 / 3)) and second["log_likelihood"] == 0.0
    assert (first["agree_all"], first["agree_majority"], second["agree_all"]) == (0.0, 1.0, 1.0)
    assert first["disagreement"] == pytest.approx(2 / 3)  # B-C, B-B, C-B: two of three pairs differ
    assert first["accuracy_strict"] == first["accuracy_smooth"] == 1.0  # the majority (B) is right
    assert first["path_consistency"] == {"Agent 1": 0.5, "Agent 2": 0.0, "Agent 3": 0.5}
    # SBERT of the final answers as written: B.(C)Lyon = 0, B.b. = 1, (C)Lyon.b. = 0
    assert first["answer_similarity"] == pytest.approx(1 / 3)
    assert second["answer_similarity"] == pytest.approx((2 * math.sqrt(0.5) + 1) / 3)
    assert first["reply_similarity"] == pytest.approx(1.0)  # whole replies are not in the table: all [1, 1]
    summary = report["summary"]
    assert (summary["decided"], summary["answer"], summary["correct"]) == (True, "B", True)
    assert (summary["accuracy_strict"], summary["accuracy_auc_strict"]) == (1.0, 1.0)
    assert (summary["agreement_all_auc"], summary["agreement_majority_auc"]) == (0.5, 1.0)
    assert summary["answer_similarity"] == second["answer_similarity"]
    assert summary["rounds_to_decision"] == 2 and summary["cost_usd"] == 0.0
    turns = store.turns(debate)
    assert summary["calls"] == len(turns) and summary["completion_tokens"] == sum(t.completion_tokens for t in turns)
    assert report["transitions"] == {"majority-correct": {"correct": 2}, "minority-wrong": {"correct": 1}}
    agent2 = report["agents"]["Agent 2"]
    assert (agent2["initial_state"], agent2["final_state"]) == ("minority-wrong", "correct")
    assert agent2["path_consistency"] == pytest.approx(0.5)
    [change] = agent2["changes"]
    assert (change["round"], change["from"], change["to"]) == (2, "C", "B")
    assert change["before"] == {"agent": "Agent 1", "round": 2, "text": "Reasoning of Agent 1. Final answer: B"}
    assert report["agents"]["Agent 1"]["changes"] == [] and report["version"] == reports.VERSION
    json.dumps(report, allow_nan=False)  # plain JSON


def test_an_unreadable_round_counts_the_same_in_accuracy_and_agreement_aucs(script, store):
    """Issue 19.10 / seed 001 App. B: the AUCs average over every round, so a round whose answers
    cannot be read scores 0 in the accuracy AUCs and the agreement AUCs alike (before: 0 in one,
    left out of the other); the round itself is a gap that says how many answers were readable,
    and 1 readable answer of 3 is no majority (the initial-state rule, "chaos")."""
    answers = {1: {"Agent 1": "(Z) Rome", "Agent 2": "(Z) Rome", "Agent 3": "(Z) Rome"},  # no option Z: unreadable
               2: {"Agent 1": "B", "Agent 2": "(Z) Rome", "Agent 3": "(Z) Rome"},  # one readable of three
               3: {"Agent 1": "B", "Agent 2": "B", "Agent 3": "B"}}
    debate = run_debate(script, store, answers, reference="B", answer_type="choice", answer_options=OPTIONS)
    report = debate_report(store, debate, embed=FakeEmbed())
    first, second, third = report["rounds"][:3]
    assert [r["readable"] for r in (first, second, third)] == [0, 1, 3]
    assert all(first[k] is None for k in ("agree_all", "agree_majority", "accuracy_strict", "accuracy_smooth"))
    # one readable "B" of three agents: no clear majority, so the round's prediction is wrong, not "B"
    assert (second["accuracy_strict"], second["agree_majority"], second["agree_all"]) == (0.0, 0.0, 0.0)
    assert (third["accuracy_strict"], third["agree_all"]) == (1.0, 1.0)
    summary = report["summary"]
    n = len(report["rounds"])
    expected = (n - 2) / n  # rounds 1 and 2 score 0, every later round 1
    assert summary["accuracy_auc_strict"] == pytest.approx(expected)
    assert summary["agreement_all_auc"] == pytest.approx(expected)  # must not happen: round 1 left out of T
    assert summary["agreement_majority_auc"] == pytest.approx(expected)
    table = "\n".join(reports.markdown_lines(report))
    assert "| 1 | 0 of 3 |" in table and "| 2 | 1 of 3 |" in table  # how many answers each round had readable


def test_numbers_in_different_forms_are_one_answer(script, store):
    answers = {1: {"Agent 1": "1/2", "Agent 2": "0.5", "Agent 3": "50%"}}
    report = debate_report(store, run_debate(script, store, answers, reference="0.50", answer_type="number"),
                           embed=FakeEmbed())
    [row] = report["rounds"]
    assert set(row["answers"].values()) == {"0.5"}
    assert (row["entropy"], row["agree_all"], row["accuracy_strict"]) == (0.0, 1.0, 1.0)


def test_kks_assignments_count_as_a_whole_and_per_player(script, store):
    truth = "Alice: knight, Bob: knave, Cara: spy"
    wrong_bob = "Alice: knight, Bob: spy, Cara: spy"
    answers = {1: {"Agent 1": truth, "Agent 2": wrong_bob, "Agent 3": truth}, 2: {a: truth for a in
                                                                                   ("Agent 1", "Agent 2", "Agent 3")}}
    debate = run_debate(script, store, answers, reference=truth, answer_type="kks",
                        answer_options=["Alice", "Bob", "Cara"])
    report = debate_report(store, debate, embed=FakeEmbed())
    first = report["rounds"][0]
    assert first["entropy"] == pytest.approx(-(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3)))
    assert first["agree_all"] == pytest.approx(2 / 3)  # Alice and Cara unanimous, Bob not
    assert first["answers"]["Agent 2"] == "Alice: knight, Bob: spy, Cara: spy"
    agent2 = report["agents"]["Agent 2"]
    assert agent2["initial_state"] == {"Alice": "majority-correct", "Bob": "minority-wrong",
                                       "Cara": "majority-correct"}
    assert agent2["final_state"] == {"Alice": "correct", "Bob": "correct", "Cara": "correct"}
    assert report["transitions"] == {"majority-correct": {"correct": 8}, "minority-wrong": {"correct": 1}}
    assert report["summary"]["accuracy_smooth"] == 1.0 and report["summary"]["correct"] is True


def test_kks_smooth_accuracy_counts_players(script, store):
    truth = "Alice: knight, Bob: knave, Cara: spy"
    wrong = "Alice: knight, Bob: spy, Cara: knave"
    answers = {1: {"Agent 1": wrong, "Agent 2": wrong, "Agent 3": truth}}
    debate = run_debate(script, store, answers, reference=truth, answer_type="kks",
                        answer_options=["Alice", "Bob", "Cara"])
    summary = debate_report(store, debate, embed=FakeEmbed())["summary"]
    assert (summary["accuracy_strict"], summary["accuracy_smooth"]) == (0.0, pytest.approx(1 / 3))
    assert summary["correct"] is False and summary["accuracy_auc_smooth"] == pytest.approx(1 / 3)


def test_free_text_answers_are_grouped_by_embedding_clusters(script, store):
    answers = {1: {"Agent 1": "Paris", "Agent 2": "paris, France", "Agent 3": "Lyon"}}
    close = [0.99, math.sqrt(1 - 0.99 ** 2)]  # cosine 0.99 with [1, 0]
    embed = FakeEmbed({"Paris": [1.0, 0.0], "paris, France": close, "Lyon": [0.0, 1.0]})
    report = debate_report(store, run_debate(script, store, answers, reference="Paris"), embed=embed)
    [row] = report["rounds"]
    assert row["entropy"] == pytest.approx(-(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3)))
    assert row["agree_majority"] == 1.0 and row["accuracy_strict"] == 1.0
    assert row["log_likelihood"] == pytest.approx(math.log2(2 / 3))


def test_text_clusters_need_the_documented_threshold():
    def reader(cosine):
        other = [cosine, math.sqrt(1 - cosine ** 2)]
        r = AnswerReader("text", None, None, FakeEmbed({"Paris": [1.0, 0.0], "Parigi": other}))
        r.cluster(["Paris", "Parigi"])
        return r
    at, below = reader(TEXT_CLUSTER_THRESHOLD), reader(TEXT_CLUSTER_THRESHOLD - 0.01)
    assert at.read("Parigi")[0] == at.read("Paris")[0]
    assert below.read("Parigi")[0] != below.read("Paris")[0]


# ----- the cache --------------------------------------------------------------------------------------
def test_a_second_report_is_read_from_the_cache_and_a_changed_debate_recomputes(script, store, monkeypatch):
    debate = choice_debate(script, store)
    embed = FakeEmbed()
    first = debate_report(store, debate, embed=embed)
    assert embed.calls == 1  # one batch for every text
    computed = []
    original = reports.compute_report
    monkeypatch.setattr(reports, "compute_report", lambda *a, **k: computed.append(1) or original(*a, **k))
    assert debate_report(store, debate, embed=embed) == first and computed == [] and embed.calls == 1
    store.record(SteeringApplied(action="message", targets=None, message="Look again."), debate_id=debate)
    again = debate_report(store, debate, embed=embed)
    assert computed == [1] and again == first  # recomputed, same numbers
    assert embed.calls == 1  # every embedding came from the database
    assert store.db["embeddings"].count == len(set(embed.texts))
    assert store.db["metric_reports"].count == 1
    store.delete_debate(debate)
    assert store.db["metric_reports"].count == 0


def test_a_running_debate_is_measured_over_its_complete_rounds_only(store):
    config = DebateConfig(question="q", agents=DebateConfig(question="q").agents[:2])
    store.create_debate("running1", config)

    def turn(seq, rnd, agent, answer):
        return TurnFinished(Turn(id=f"t{seq}", seq=seq, round=rnd, agent=agent, kind="discussion", model="scripted/x",
                                 prompt=[], content=f"Final answer: {answer}", answer=answer, started_at=seq,
                                 finished_at=seq + 0.5))
    for event in (turn(0, 1, "Agent 1", "Paris"), turn(1, 1, "Agent 2", "Lyon"), turn(2, 2, "Agent 1", "Paris")):
        store.record(event, debate_id="running1")
    report = debate_report(store, "running1", embed=FakeEmbed())
    assert [r["round"] for r in report["rounds"]] == [1]  # round 2 is still going on
    assert report["summary"]["decided"] is False and report["summary"]["answer"] is None


# ----- odd debates ---------------------------------------------------------------------------------
def test_failed_stopped_and_empty_debates_give_nones(script, store):
    def broken(messages, info):
        raise RuntimeError("the model is down")
    model, _ = script(broken)
    config = DebateConfig.from_dict({"question": "q", "agents": [{"label": "A", "model": model}], "rounds": 1,
                                     "max_rounds": 1, "reference": "B", "answer_type": "choice"})
    failed = DebateEngine(config, store=store)
    list(failed.run())
    controller = Controller()
    controller.stop()
    stopped = DebateEngine(config, controller=controller, store=store)
    list(stopped.run())
    store.create_debate("empty", config)
    for debate in (failed.debate_id, stopped.debate_id, "empty"):
        report = debate_report(store, debate, embed=FakeEmbed())
        summary = report["summary"]
        assert summary["decided"] is False and summary["correct"] is None and summary["accuracy_strict"] is None
        assert summary["answer_similarity"] is None and summary["rounds_to_decision"] is None
        json.dumps(report, allow_nan=False)
    with pytest.raises(LookupError):
        debate_report(store, "no-such-debate")


def test_a_broken_view_gives_the_empty_report_with_the_reason():
    view = DebateView(debate_id="x", config={"answer_type": "choice", "agents": "not a list"})
    view.turns = None  # what no fold produces
    report = compute_report(view, embed=FakeEmbed())
    assert report["rounds"] == [] and report["summary"]["decided"] is False
    assert report["problems"] and "could not be computed" in report["problems"][0]


# ----- cost ---------------------------------------------------------------------------------------
def test_cost_comes_from_litellms_local_map_and_is_zero_for_local_models():
    price = litellm.model_cost["gpt-4o-mini"]
    expected = 1000 * price["input_cost_per_token"] + 500 * price["output_cost_per_token"]
    assert estimated_cost("openai/gpt-4o-mini", 1000, 500) == pytest.approx(expected)
    for model in ("scripted/x", "local/smollm2-135m", "hf/HuggingFaceTB/SmolLM2-135M-Instruct", "ollama/llama3.2"):
        assert estimated_cost(model, 1000, 500) == 0.0
    assert estimated_cost("openai/no-such-model-anywhere", 1000, 500) is None


def test_agent_cost_adds_up_its_turns():
    view = DebateView(debate_id="c", config={"question": "q", "agents": [{"label": "A", "model": "openai/gpt-4o-mini"},
                                                                        {"label": "B", "model": "scripted/x"}]})
    for seq, (agent, model) in enumerate([("A", "openai/gpt-4o-mini"), ("A", "openai/gpt-4o-mini"),
                                          ("B", "scripted/x")]):
        view.apply(TurnFinished(Turn(id=f"t{seq}", seq=seq, round=1, agent=agent, kind="discussion", model=model,
                                     prompt=[], content="Final answer: x", prompt_tokens=100, completion_tokens=10)))
    report = compute_report(view, embed=FakeEmbed())
    one = estimated_cost("openai/gpt-4o-mini", 100, 10)
    assert report["agents"]["A"]["cost_usd"] == pytest.approx(2 * one) and report["agents"]["B"]["cost_usd"] == 0.0
    assert report["summary"]["cost_usd"] == pytest.approx(2 * one)
    assert report["agents"]["A"]["prompt_tokens"] == 200 and report["summary"]["completion_tokens"] == 30


# ----- exports ------------------------------------------------------------------------------------
def test_exports_carry_the_report_and_an_import_recomputes_it(script, store, tmp_path):
    debate = choice_debate(script, store)
    embed = FakeEmbed()
    data = exports.export_debate(store, debate, embed=embed)
    assert data["metrics"] == debate_report(store, debate, embed=embed)
    tampered = json.loads(json.dumps(data))
    tampered["metrics"]["summary"]["correct"] = False
    tampered["metrics"]["rounds"][0]["entropy"] = 99.0
    with Store(tmp_path / "other.db") as other:
        copy = exports.import_debate(other, tampered, new_id=True)
        mine = debate_report(other, copy, embed=embed)
    assert mine["summary"]["correct"] is True
    assert mine["rounds"][0]["entropy"] == data["metrics"]["rounds"][0]["entropy"] != 99.0
    with pytest.raises(ExportError) as refused:
        validate_export({**data, "metrics": ["not", "a", "report"]})
    assert refused.value.field == "metrics"
    csv_text = exports.to_csv(store, debate, embed=embed)
    header, *rows = csv_text.splitlines()
    assert "answer_read" in header and "round_entropy" in header and "round_answer_similarity" in header
    assert sum(1 for row in rows if ",C," in row) == 1  # Agent 2's round-1 answer as read
    markdown = exports.to_markdown(store, debate, embed=embed)
    assert "## Metrics" in markdown and "| 1 | 3 of 3 | 0.918 | 0 | 1 | 0.667 | 1 |" in markdown
    assert "Agent 2 changed from C to B in round 2" in markdown


# ----- configuration ------------------------------------------------------------------------------
@pytest.mark.parametrize("settings, field", [
    ({"answer_type": "letter"}, "answer_type"),
    ({"answer_options": "A, B"}, "answer_options"),
    ({"answer_type": "choice", "answer_options": ["x"] * 11}, "answer_options"),
    ({"answer_options": ["Nice", ""]}, "answer_options[1]"),
    ({"answer_options": ["x" * 201]}, "answer_options[0]"),
    ({"answer_type": "kks", "answer_options": ["Alice", "alice"]}, "answer_options"),
])
def test_bad_answer_settings_name_the_field(settings, field):
    with pytest.raises(ConfigError) as refused:
        DebateConfig.from_dict({"question": "q", **settings}, check_models=False)
    assert refused.value.field == field


def test_answer_settings_round_trip_through_the_config():
    config = DebateConfig.from_dict({"question": "q", "answer_type": "choice", "answer_options": OPTIONS},
                                    check_models=False)
    assert DebateConfig.from_dict(config.to_dict(), check_models=False).answer_options == OPTIONS
    assert DebateConfig(question="q").answer_type == "text" and DebateConfig(question="q").answer_options is None


def test_per_player_kks_debates_count_transitions_per_player_round(script, store):
    """Seed 001 §6.2: in the per-player mode, a state is taken before each player's round."""
    names = ["Alice", "Bob", "Cara"]
    truth = "Alice: knight, Bob: knave, Cara: spy"
    wrong_cara = "Alice: knight, Bob: knave, Cara: knave"

    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "debate":
            return "I think Alice is a knight."
        answer = wrong_cara if (meta["agent"], meta["round"]) == ("Agent 2", 3) else truth
        return f"Reasoning.\nFinal answer: {answer}"
    model, _ = script(reply)
    config = DebateConfig.from_dict({
        "question": "Alice says Bob is a knave. Bob says Cara is the spy. Cara says nothing.", "reference": truth,
        "answer_type": "kks", "answer_options": names, "paradigm": "kks_per_player", "protocol": "kks_player_vote",
        "rounds": 5, "max_rounds": 5, "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)]})
    engine = DebateEngine(config, store=store)
    list(engine.run())
    report = debate_report(store, engine.debate_id, embed=FakeEmbed())
    # Rounds 2-4 discuss Alice, Bob, Cara (3 agents x 3 players). Agent 2 turns Cara wrong in round 3
    # (Bob's round) and right again in Cara's round 4: before Cara's round it is a minority and wrong.
    # (Its first and last answers are both right: first-vs-last states would count 9 majority-correct.)
    assert report["transitions"] == {"majority-correct": {"correct": 8}, "minority-wrong": {"correct": 1}}
    assert report["agents"]["Agent 2"]["initial_state"]["Cara"] == "majority-correct"
