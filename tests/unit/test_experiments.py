"""Experiments (mad_core/experiments, `python -m mad_core experiment`): validation, the grid, the
results' arithmetic, runs on the scripted model, the concurrency bound, stop and resume, CSV.

The scripted debaters answer by task item: Agent 1 gives a wrong answer, Agents 2 and 3 the
right one; every vote is "1" (Agent 1's solution) and the judge picks Agent 1 on the first two
items and Agent 2 on the others, so each protocol's table numbers can be worked out by hand.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import yaml

from mad_core import cli
from mad_core.config import ConfigError
from mad_core.experiments import ExperimentConfig, ExperimentRunner, create_experiment, expand_grid, storage
from mad_core.experiments import results as R
from mad_core.experiments.runner import eta_seconds, progress_of
from mad_core.store import Store
from mad_core.tasks.answer_types import read_answer
import test_router


def cheap_embed(texts):
    """A stand-in for SBERT: texts that are equal embed equally."""
    return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]


def spec(model: str, **changes) -> dict:
    data = {"name": "t", "task_set": "yes_no", "items": 3, "seeds": [1], "concurrency": 2,
            "base": {"models": model, "rounds": 1, "max_rounds": 2}, "grid": {"protocol": ["simple_voting"]}}
    data.update(changes)
    return data


# ----- validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("change, field", [
    ({"grid": {"protocol": ["simple_voting", "nonsense"]}}, "grid.protocol[1]"),
    ({"grid": {"rounds": [1, 0]}}, "grid.rounds[1]"),
    ({"grid": {"protocol": []}}, "grid.protocol"),
    ({"grid": {"protocol": ["judge", "judge"]}}, "grid.protocol[1]"),
    ({"grid": {"question": ["x"]}}, "grid.question"),
    ({"grid": {"ci": [True], "paradigm": ["memory"]}}, "grid.ci"),
    ({"grid": {"colour": ["red"]}}, "grid.colour"),
    ({"grid": {"models": ["scripted/no-such-script"]}}, "grid.models[0]"),
    ({"grid": {"models": [["scripted/echo", "scripted/echo"]]}}, "grid.models[0]"),
    ({"grid": {"paradigm": ["memory", "two_sided"]}}, "grid"),
    ({"seeds": [1, 1]}, "seeds[1]"),
    ({"seeds": [-1]}, "seeds[0]"),
    ({"seeds": []}, "seeds"),
    ({"items": 0}, "items"),
    ({"items": 999}, "items"),
    ({"task_set": "no_such_set"}, "task_set"),
    ({"task_options": {"players": 4}}, "task_options"),
    ({"task_set": "kks", "task_options": {"players": 12}}, "task_options.players"),
    ({"task_set": "kks", "task_options": {"colour": 1}}, "task_options.colour"),
    ({"concurrency": 0}, "concurrency"),
    ({"surprise": 1}, "surprise"),
])
def test_every_bad_field_is_named_before_anything_runs(change, field, script, tmp_path):
    model, _ = script(["1"])
    with pytest.raises(ConfigError) as caught:
        ExperimentConfig.from_dict(spec(model, **change))
    assert caught.value.field == field, caught.value


def test_base_errors_name_the_base_and_a_bad_file_writes_nothing(script, madlab_home, tmp_path, capsys):
    model, calls = script(["1"])
    data = spec(model)
    data["base"]["rounds"] = 0
    with pytest.raises(ConfigError) as caught:
        ExperimentConfig.from_dict(data)
    assert caught.value.field == "base.rounds"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(spec(model, grid={"protocol": ["simple_voting", "nonsense"]})))
    assert cli.main(["experiment", str(path)]) == 2
    assert "grid.protocol[1]" in capsys.readouterr().err
    # Must not happen: anything written or any model called.
    assert not (madlab_home / "madlab.db").exists()
    assert calls.history == []


# ----- the grid -------------------------------------------------------------------------------------
def test_grid_is_the_cartesian_product_with_agents_models_and_aliases():
    grid = {"protocol": ["simple_voting", "judge", "majority_consensus"], "agents": [2, 3], "aad": [False, True]}
    configurations = expand_grid({"models": "scripted/echo", "rounds": 2}, grid)
    assert len(configurations) == 12
    assert configurations[0].values == {"protocol": "simple_voting", "agents": 2, "aad": False}
    assert [len(c.settings["agents"]) for c in configurations[:4]] == [2, 2, 3, 3]
    assert all(a["model"] == "scripted/echo" for c in configurations for a in c.settings["agents"])
    assert {c.settings["all_agents_drafting"] for c in configurations} == {False, True}
    assert configurations[5].label == "protocol=judge · agents=2 · aad=True"
    # `models` assigns one model per agent by position; a list of agent mappings is taken as it is.
    two = expand_grid({"agents": 2}, {"models": [["scripted/a", "scripted/b"], "scripted/c"]})
    assert [[a["model"] for a in c.settings["agents"]] for c in two] == [["scripted/a", "scripted/b"]] + [["scripted/c"] * 2]
    listed = expand_grid({}, {"agents": [[{"label": "Pro", "model": "scripted/p"}, {"label": "Con"}]]})
    assert listed[0].settings["agents"][0] == {"label": "Pro", "model": "scripted/p"}
    assert listed[0].label == "agents=[Pro, Con]"
    ci = expand_grid({}, {"ci": [False, True], "generator": ["critical"]})
    assert "paradigm" not in ci[0].settings and ci[0].settings["response_generator"] == "critical"
    assert ci[1].settings["paradigm"] == "collective_refinement" and ci[1].settings["all_agents_drafting"] is True


def test_plan_covers_every_configuration_item_and_seed_with_item_settings(script):
    model, _ = script(["1"])
    experiment = ExperimentConfig.from_dict(spec(model, seeds=[4, 5], grid={"protocol": ["simple_voting", "judge"]},
                                                 base={"models": model, "judge_model": model}))
    runs = experiment.runs()
    assert len(runs) == experiment.total == 2 * 3 * 2
    assert {(r.configuration.key, r.item.id, r.seed) for r in runs} == {
        (c, i.id, s) for c in ("c1", "c2") for i in experiment.task_items for s in (4, 5)}
    config = runs[0].debate_config()
    item = runs[0].item
    assert config.seed == 4 and config.reference == item.answer and config.task == item.instruction
    assert config.question.startswith(item.question) and item.instruction not in config.question
    assert (config.answer_type, config.answer_options) == ("yes_no", None)
    kks = ExperimentConfig.from_dict(spec(model, task_set="kks", items=1, task_options={"players": 3})).runs()[0]
    assert kks.debate_config().answer_type == "kks" and kks.debate_config().answer_options == list(kks.item.names)
    choice = ExperimentConfig.from_dict(spec(model, task_set="multiple_choice", items=1)).runs()[0]
    assert choice.debate_config().answer_options == list(choice.item.choices)
    assert "(A) " + choice.item.choices[0] in choice.debate_config().question


# ----- the results' arithmetic -------------------------------------------------------------------------
def test_mean_and_sample_sd_skip_missing_values():
    assert R.mean_sd([1, 0, 1, None, 1]) == R.Stat(0.75, 0.5, 4)
    assert R.mean_sd([2.0]) == R.Stat(2.0, None, 1)
    assert R.mean_sd([None, "x", True]) == R.Stat(None, None, 0)
    assert R.mean_sd([1, 2, 3, 4]).sd == pytest.approx(1.2909944487)
    # the same numbers in any order give the same digits (debates end in any order; a reproduction
    # must give the same table): a plain sum says 0.6000000000000001 for one order, 0.6 for another
    assert R.mean_sd([0.1, 0.2, 0.3]) == R.mean_sd([0.3, 0.2, 0.1]) == R.mean_sd([0.2, 0.3, 0.1])
    assert R.Stat(0.6, 0.5164, 10).text() == "0.60 ± 0.52" and R.Stat(None, None, 0).text() == "–"


def summary(correct, *, decided=True, rounds=1, similarity=None, prompt=10, completion=5, cost=0.0, smooth=None):
    return {"decided": decided, "correct": correct, "accuracy_smooth": smooth, "rounds_to_decision": rounds,
            "answer_similarity": similarity, "agreement_all_auc": None, "prompt_tokens": prompt,
            "completion_tokens": completion, "cost_usd": cost}


def test_aggregate_by_configuration_with_hand_made_summaries():
    configurations = [{"key": "c1", "label": "protocol=a", "values": {"protocol": "a"}},
                      {"key": "c2", "label": "protocol=b", "values": {"protocol": "b"}}]
    runs = [
        {"config_key": "c1", "status": "finished", "summary": summary(True, rounds=1, similarity=0.9)},
        {"config_key": "c1", "status": "finished", "summary": summary(False, rounds=3, similarity=0.5)},
        {"config_key": "c1", "status": "failed", "summary": summary(None, decided=False, rounds=None)},
        {"config_key": "c1", "status": "pending", "summary": None},
        {"config_key": "c2", "status": "finished", "summary": summary(True, rounds=2, prompt=7, completion=3,
                                                                     cost=0.25)},
    ]
    c1, c2 = R.aggregate(runs, configurations)
    assert (c1.planned, c1.finished, c1.failed) == (4, 2, 1)
    # accuracy: 1, 0, and 0 for the debate without a decision
    assert c1.stats["accuracy"].mean == pytest.approx(1 / 3) and c1.stats["accuracy"].n == 3
    assert c1.stats["accuracy"].sd == pytest.approx(0.5773502692)
    assert c1.stats["rounds_to_decision"] == R.Stat(2.0, pytest.approx(1.4142135624), 2)
    assert c1.stats["similarity"].mean == pytest.approx(0.7)
    assert c1.stats["tokens"] == R.Stat(15.0, 0.0, 3)
    assert c2.stats["accuracy"] == R.Stat(1.0, None, 1) and c2.stats["cost_usd"].mean == 0.25
    assert c2.stats["tokens"].mean == 10.0
    shown = R.display_records([c1, c2])
    assert shown[0]["accuracy"] == "0.33 ± 0.58" and shown[1]["rounds to decision"] == "2.00"
    assert R.rounds_distribution(runs, configurations) == {"protocol=a": {1: 1, 3: 1}, "protocol=b": {2: 1}}


def test_transitions_are_summed_over_debates():
    total = R.sum_transitions([{"majority_correct": {"correct": 2}, "minority_wrong": {"correct": 1}},
                               None, {"majority_correct": {"correct": 1, "wrong": 1}}])
    assert total == {"majority_correct": {"correct": 3, "wrong": 1}, "minority_wrong": {"correct": 1}}


def test_csv_cells_cannot_run_as_formulas():
    text = R.to_csv([{"configuration": "=HYPERLINK(\"http://x\")", "label": "+1", "accuracy_mean": -0.5,
                      "note": "@SUM(A1)"}])
    row = next(iter(__import__("csv").DictReader(text.splitlines())))
    assert row["configuration"].startswith("'=") and row["label"] == "'+1" and row["note"] == "'@SUM(A1)"
    assert row["accuracy_mean"] == "-0.5"  # numbers stay numbers


def test_eta_is_mean_wall_time_times_debates_left_over_concurrency():
    assert eta_seconds(3.0, remaining=6, concurrency=3) == 6.0
    assert eta_seconds(None, remaining=6, concurrency=3) is None
    assert eta_seconds(5.0, remaining=0, concurrency=1) == 0.0


# ----- running on the scripted model -------------------------------------------------------------
def wrong_answer(item) -> str:
    """A wrong answer of the item's kind (one player's role changed for a KKS puzzle)."""
    if item.kind == "yes_no":
        return "no" if item.answer == "yes" else "yes"
    roles = dict(read_answer("kks", item.answer, names=item.names).value)
    first = next(iter(roles))
    roles[first] = "knave" if roles[first] != "knave" else "knight"
    return ", ".join(f"{name} is a {role}" for name, role in roles.items())


def right_answer(item) -> str:
    if item.kind == "yes_no":
        return item.answer
    roles = read_answer("kks", item.answer, names=item.names).value
    return ", ".join(f"{name} is a {role}" for name, role in roles.items())


class Debaters:
    """Scripted replies by item: Agent 1 wrong, others right; votes "1"; the judge picks by item."""

    def __init__(self, items, *, hold=None, before=None):
        self.items = items
        self.before = before  # called with the item at every call (the concurrency test's gate)
        self.calls: list[tuple[str, str, str, int]] = []  # (item id, agent, kind, round)
        self.lock = threading.Lock()
        self.hold = hold  # (item id, agent, kind) -> (reached: Event, gate: Event)

    def item_of(self, messages):
        text = "\n".join(str(m.get("content")) for m in messages)
        found = [item for item in self.items if item.question in text]
        assert len(found) == 1, text[:300]
        return found[0]

    def __call__(self, messages, info):
        meta = info["metadata"]
        item, agent, kind = self.item_of(messages), meta["agent"], meta["kind"]
        with self.lock:
            self.calls.append((item.id, agent, kind, meta.get("round")))
        if self.before is not None:
            self.before(item)
        held = (self.hold or {}).get((item.id, agent, kind))
        if held is not None:
            held[0].set()
            assert held[1].wait(60), "the test never opened the gate"
        if kind == "vote":
            return "1"
        if kind == "judge":
            return "Agent 1" if self.items.index(item) < 2 else "Agent 2"
        answer = wrong_answer(item) if agent == "Agent 1" else right_answer(item)
        return answer if kind == "extraction" else f"Thinking it through as {agent}.\nFinal answer: {answer}"


def make(script, data_changes=None, *, hold=None, before=None):
    experiment_data = {"name": "scripted sweep", "task_set": "yes_no", "items": 3, "seeds": [1], "concurrency": 1,
                       "base": {"rounds": 1, "max_rounds": 2}, "grid": {"protocol": ["simple_voting"]}}
    experiment_data.update(data_changes or {})
    items = ExperimentConfig.from_dict({**experiment_data, "base": {"models": "scripted/echo"}}).task_items
    debaters = Debaters(items, hold=hold, before=before)
    model, _ = script(debaters)
    experiment_data["base"] = {**experiment_data["base"], "models": model, "judge_model": model,
                               "judge_adaptive_break": False}
    experiment = ExperimentConfig.from_dict(experiment_data)
    store = Store()
    return store, create_experiment(store, experiment), debaters


def test_concurrency_bound_is_respected(script):
    gate, both, lock = threading.Event(), threading.Event(), threading.Lock()
    started: set[str] = set()

    def wait_at_gate(item) -> None:
        with lock:
            started.add(item.id)
            if len(started) >= 2:
                both.set()
        assert gate.wait(60), "the test never opened the gate"

    store, experiment_id, _ = make(script, {"items": 5, "concurrency": 2}, before=wait_at_gate)
    runner = ExperimentRunner(experiment_id, embed=cheap_embed)
    thread = threading.Thread(target=runner.run)
    thread.start()
    try:
        assert both.wait(30)
        rows = storage.runs(store, experiment_id)
        # Two debates hold a model call; no third has begun.
        assert sum(r["status"] == "running" for r in rows) == 2 and len(started) == 2
        assert progress_of(store, experiment_id).running == 2
    finally:
        gate.set()
        thread.join(60)
    rows = storage.runs(store, experiment_id)
    assert [r["status"] for r in rows] == ["finished"] * 5
    spans = sorted([(r["finished_at"], -1) for r in rows] + [(r["started_at"], 1) for r in rows])
    running = peak = 0
    for _, step in spans:
        running += step
        peak = max(peak, running)
    assert peak == 2


def test_stop_then_resume_reruns_nothing_finished_and_resumes_the_interrupted_debate(script):
    reached, gate = threading.Event(), threading.Event()
    items = ExperimentConfig.from_dict({"task_set": "yes_no", "items": 3, "seeds": [1],
                                        "base": {"models": "scripted/echo"}}).task_items
    store, experiment_id, debaters = make(script, hold={(items[2].id, "Agent 2", "discussion"): (reached, gate)})
    runner = ExperimentRunner(experiment_id, embed=cheap_embed)
    thread = threading.Thread(target=runner.run)
    thread.start()
    assert reached.wait(30)  # the third debate is in Agent 2's turn; the first two finished
    runner.stop()
    gate.set()
    thread.join(60)
    assert runner.status == "stopped"
    rows = storage.runs(store, experiment_id)
    assert [r["status"] for r in rows] == ["finished", "finished", "stopped"]
    assert storage.get_experiment(store, experiment_id)["status"] == "stopped"
    interrupted = rows[2]["debate_id"]
    before = {r["debate_id"]: len(store.turns(r["debate_id"])) for r in rows}
    first_calls = len(debaters.calls)

    debaters.hold = None
    progress = []
    assert ExperimentRunner(experiment_id, embed=cheap_embed, on_progress=progress.append).run() == "finished"
    rows = storage.runs(store, experiment_id)
    assert [r["status"] for r in rows] == ["finished"] * 3
    assert rows[2]["debate_id"] == interrupted and rows[2]["attempts"] == 2  # resumed, not a new debate
    again = debaters.calls[first_calls:]
    # Must not happen: a finished debate asked again, or a finished turn of the resumed one asked again.
    assert {c[0] for c in again} == {items[2].id}
    assert (items[2].id, "Agent 1", "discussion", 1) not in again
    assert {r["debate_id"]: len(store.turns(r["debate_id"])) for r in rows[:2]} == \
        {k: v for k, v in before.items() if k != interrupted}
    assert store.get_debate(interrupted)["status"] == "finished"
    assert (progress[-1].done, progress[-1].total, progress[-1].failed) == (3, 3, 0)


def test_a_running_experiment_cannot_be_claimed_twice(script):
    store, experiment_id, _ = make(script)
    storage.claim(store, experiment_id, "someone-else")
    with pytest.raises(storage.ExperimentBusy):
        ExperimentRunner(experiment_id).run()
    assert storage.runs(store, experiment_id)[0]["status"] == "pending"  # nothing ran


def test_cli_runs_an_experiment_prints_progress_and_writes_csv(script, tmp_path, capsys, monkeypatch):
    import mad_core.experiments.runner as runner_module

    items = ExperimentConfig.from_dict({"task_set": "yes_no", "items": 2, "seeds": [1],
                                        "base": {"models": "scripted/echo"}}).task_items
    model, _ = script(Debaters(items))
    monkeypatch.setattr(runner_module.ExperimentRunner, "_report", lambda self, store, debate_id: None)
    monkeypatch.setattr(R, "_report", lambda store, debate_id, embed: {"summary": summary(True), "transitions": {}})
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "=cli sweep", "task_set": "yes_no", "items": 2, "seeds": [1, 2],
                                    "base": {"models": model, "rounds": 1, "max_rounds": 2},
                                    "grid": {"protocol": ["simple_voting", "solution_counting"]}}))
    table, per_debate = tmp_path / "table.csv", tmp_path / "runs.csv"
    assert cli.main(["experiment", str(path), "--csv", str(table), "--runs-csv", str(per_debate)]) == 0
    out = capsys.readouterr().out
    assert "[8/8]" in out and "ETA" in out and "protocol=solution_counting" in out
    assert "1.00 ± 0.00" in out
    lines = table.read_text().splitlines()
    assert lines[0].startswith("configuration,label,protocol,debates,finished,failed,accuracy_mean")
    assert len(lines) == 3 and len(per_debate.read_text().splitlines()) == 9
    experiment_id = storage.list_experiments(Store())[0]["id"]
    assert cli.main(["experiment", "--list"]) == 0
    assert experiment_id[:8] in capsys.readouterr().out
    assert cli.main(["experiment", "--show", experiment_id[:8]]) == 0
    assert "protocol=simple_voting" in capsys.readouterr().out
    assert cli.main(["experiment", "--resume", "nope"]) == 2


def test_the_example_experiments_are_valid():
    for path in sorted(Path("assets/experiments").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        if data["task_set"] == "kks":
            pytest.importorskip("mad_core.tasks.generated")
        ExperimentConfig.load(path)


def test_three_protocols_five_kks_puzzles_two_seeds_on_the_scripted_model(script):
    """The issue's acceptance sweep: 30 debates stored, linked, and the table worked out by hand."""
    store, experiment_id, debaters = make(script, {
        "task_set": "kks", "items": 5, "task_options": {"players": 4}, "seeds": [1, 2], "concurrency": 3,
        "grid": {"protocol": ["simple_voting", "solution_counting", "judge"]}})
    progress = []
    assert ExperimentRunner(experiment_id, embed=cheap_embed, on_progress=progress.append).run() == "finished"
    rows = storage.runs(store, experiment_id)
    assert len(rows) == 30 and {r["status"] for r in rows} == {"finished"}
    assert len({r["debate_id"] for r in rows}) == 30
    assert [p.done for p in progress] == list(range(31)) and progress[-1].eta_s == 0.0
    items = debaters.items
    for row in rows:  # each debate is stored like any other and linked to its run
        debate = store.get_debate(row["debate_id"])
        item = next(i for i in items if i.id == row["item_id"])
        assert debate["status"] == "finished" and debate["config"]["seed"] == row["seed"]
        assert debate["reference"] == item.answer and storage.experiment_of_debate(store, debate["id"])["id"] == row["id"]
        right = read_answer("kks", item.answer, names=item.names).value
        decided = read_answer("kks", debate["answer"], names=item.names).value
        wrong_by = {"c1": True, "c2": False, "c3": items.index(item) < 2}[row["config_key"]]
        assert (decided != right) is wrong_by, (row["config_key"], item.id, debate["answer"])

    pytest.importorskip("mad_core.metrics.report", reason="the table needs helper A's debate reports")
    found = R.experiment_results(store, experiment_id, embed=cheap_embed)
    assert found.problems == []
    voting, counting, judge = found.table
    assert [r.label for r in found.table] == ["protocol=simple_voting", "protocol=solution_counting", "protocol=judge"]
    # By hand: voting always takes Agent 1's wrong assignment; counting the two agents' right one;
    # the judge is wrong on 2 of the 5 puzzles, for both seeds: mean 0.6, sd sqrt((4·0.36 + 6·0.16)/9).
    assert voting.stats["accuracy"] == R.Stat(0.0, 0.0, 10)
    assert counting.stats["accuracy"] == R.Stat(1.0, 0.0, 10)
    assert judge.stats["accuracy"].mean == pytest.approx(0.6)
    assert judge.stats["accuracy"].sd == pytest.approx((2.4 / 9) ** 0.5)
    # Smooth accuracy (share of the 4 players right): Agent 1's assignment has one player wrong.
    assert voting.stats["accuracy_smooth"] == R.Stat(0.75, 0.0, 10)
    assert judge.stats["accuracy_smooth"].mean == pytest.approx(0.9)
    assert judge.stats["accuracy_smooth"].sd == pytest.approx((0.15 / 9) ** 0.5)
    # All three agree on 3 of the 4 players in every round (agreement per player, seed 001 App. B).
    assert all(row.stats["agreement_auc"] == R.Stat(0.75, 0.0, 10) for row in found.table)
    assert all(row.stats["cost_usd"] == R.Stat(0.0, 0.0, 10) for row in found.table)  # a local test model
    for row in found.table:
        assert row.stats["rounds_to_decision"] == R.Stat(1.0, 0.0, 10)
        assert (row.planned, row.finished, row.failed) == (10, 10, 0)
    tokens = [sum((t.prompt_tokens or 0) + (t.completion_tokens or 0) for t in store.turns(r["debate_id"]))
              for r in rows if r["config_key"] == "c1"]
    assert voting.stats["tokens"].mean == pytest.approx(sum(tokens) / 10)
    assert R.display_records(found.table)[2]["accuracy"] == "0.60 ± 0.52"
    _check_uncertainty(found, [i.id for i in items])
    # Per debate, per agent and player (seed 001 §6.2): on the 3 players all agents get right, and for
    # Agents 2-3 on the fourth, majority-correct -> correct (3·3 + 2 = 11); Agent 1 on the fourth,
    # minority-wrong -> wrong (1). Summed over the 30 debates:
    assert found.plots["transitions"] == {"majority-correct": {"correct": 330}, "minority-wrong": {"wrong": 30}}
    assert found.plots["rounds"] == {label: {1: 10} for label in
                                     ("protocol=simple_voting", "protocol=solution_counting", "protocol=judge")}


def test_results_are_read_from_what_each_run_kept_and_recomputed_when_its_debate_changed(script, monkeypatch):
    """A results table of many debates is one query: the runner keeps each report's numbers on its
    run; a kept result whose debate changed since (another stamp) is measured again, and only it."""
    import mad_core.metrics.report as report_module

    store, experiment_id, _ = make(script, {"seeds": [1, 2], "grid": {"protocol": ["simple_voting", "judge"]}})
    assert ExperimentRunner(experiment_id, embed=cheap_embed).run() == "finished"
    rows = storage.runs(store, experiment_id)
    kept = [json.loads(r["result"]) for r in rows]
    assert len(kept) == 12 and all(k["stamp"] and k["summary"]["decided"] for k in kept)
    expected = R.experiment_results(store, experiment_id, embed=cheap_embed)
    asked: list[str] = []
    real = report_module.debate_report

    def counted(store_, debate_id, *, embed=None):
        asked.append(debate_id)
        return real(store_, debate_id, embed=embed)

    monkeypatch.setattr(report_module, "debate_report", counted)
    again = R.experiment_results(store, experiment_id, embed=cheap_embed)
    assert asked == []  # must not happen: a report read back per debate
    assert R.table_records(again.table, again.statistics) == R.table_records(expected.table, expected.statistics)
    assert [r["summary"] for r in again.runs] == [r["summary"] for r in expected.runs]
    changed = rows[4]["debate_id"]
    with store.transaction() as db:
        db.execute("UPDATE debates SET updated_at = updated_at + 1 WHERE id = ?", [changed])
    R.experiment_results(store, experiment_id, embed=cheap_embed)
    assert asked == [changed]
    other_embedder = R.experiment_results(store, experiment_id, embed=lambda texts: cheap_embed(texts))
    assert len(asked) == 1 + 12 and other_embedder.problems == []  # another embedder: every report again


def test_an_experiment_killed_mid_debate_resumes_from_the_command_line(tmp_path):
    """kill -9 while the second debate is half done; `experiment --resume` finishes the plan: the
    first debate is left alone, the second continues from its stored turns, the third runs."""
    from test_concurrency import ok_turns, wait_for, worker

    db = tmp_path / "kill.db"
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "killed", "task_set": "yes_no", "items": 3, "seeds": [1], "concurrency": 1,
                                    "base": {"models": "scripted/worker", "rounds": 2, "max_rounds": 2}}))
    process = worker(db, "experiment", str(path), token_delay=0.05)
    try:
        store = Store(db)

        def half_way() -> bool:
            rows = list(store.db.query("SELECT * FROM experiment_runs ORDER BY run_index")) \
                if store.db["experiment_runs"].exists() else []
            return len(rows) == 3 and rows[0]["status"] == "finished" and bool(rows[1]["debate_id"]) and \
                len(ok_turns(store, rows[1]["debate_id"])) >= 2

        wait_for(half_way, "the second debate to be half done")
    finally:
        process.kill()
        process.wait(30)
    store = Store(db)
    experiment = storage.list_experiments(store)[0]
    assert experiment["status"] == "interrupted"
    first, second, _ = storage.runs(store, experiment["id"])
    def stamps(debate_id: str) -> set[tuple]:
        return {(t.id, t.finished_at) for t in store.turns(debate_id) if t.status == "ok"}

    first_turns, second_turns = stamps(first["debate_id"]), stamps(second["debate_id"])

    resumed = worker(db, "experiment", "--resume", experiment["id"][:8])
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert "[3/3]" in out
    rows = storage.runs(store, experiment["id"])
    assert [r["status"] for r in rows] == ["finished"] * 3
    assert [r["debate_id"] for r in rows[:2]] == [first["debate_id"], second["debate_id"]]
    # Must not happen: the finished debate touched, or the half-done one's turns asked again.
    assert stamps(first["debate_id"]) == first_turns
    assert second_turns and second_turns < stamps(second["debate_id"])
    assert store.get_debate(second["debate_id"])["status"] == "finished"
    assert storage.get_experiment(store, experiment["id"])["status"] == "finished"


def test_the_migration_creates_the_experiment_tables(tmp_path):
    db = Store(tmp_path / "fresh.db").db
    assert set(db["experiments"].columns_dict) >= {"id", "name", "spec", "status", "total", "concurrency", "owner",
                                                   "pid", "host", "heartbeat_at", "created_at", "finished_at"}
    assert set(db["experiment_runs"].columns_dict) >= {"experiment_id", "run_index", "config_key", "item_id", "seed",
                                                       "debate_id", "status", "wall_s", "attempts"}
    assert any(index.unique and index.columns == ["experiment_id", "run_index"]
               for index in db["experiment_runs"].indexes)


def test_no_secret_reaches_the_stored_spec(script):
    model, _ = script(["1"])
    experiment = ExperimentConfig.from_dict(spec(model))
    experiment.base["api_key"] = "sk-secret"  # as if a caller slipped one in after validation
    store = Store()
    experiment_id = create_experiment(store, experiment)
    assert "sk-secret" not in json.dumps(storage.get_experiment(store, experiment_id)["spec"])


servers, router_file, GROUP = test_router.servers, test_router.router_file, test_router.GROUP  # its fixtures


@pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")
def test_a_sweep_can_target_a_router_group_over_several_servers(servers, router_file):
    """A router group's name is a model name: the sweep's calls spread over both fake servers."""
    a, b = servers
    router_file(a, b)
    experiment = ExperimentConfig.from_dict({"task_set": "yes_no", "items": 2, "seeds": [1], "concurrency": 2,
                                             "base": {"models": GROUP, "rounds": 1, "max_rounds": 1},
                                             "grid": {"protocol": ["simple_voting", "solution_counting"]}})
    store = Store()
    experiment_id = create_experiment(store, experiment)
    assert ExperimentRunner(experiment_id, embed=cheap_embed).run() == "finished"
    rows = storage.runs(store, experiment_id)
    assert [r["status"] for r in rows] == ["finished"] * 4
    turns = [t for r in rows for t in store.turns(r["debate_id"])]
    assert {t.model for t in turns} == {GROUP} and a.calls > 0 and b.calls > 0
    # Every turn the servers answered (the response cache answered the others: attempts 0, e.g. the
    # second configuration's first-round answers, asked with the same prompt and seed as the first's).
    assert a.calls + b.calls == len([t for t in turns if t.attempts]) > 0


def _check_uncertainty(found, item_ids):
    """The sweep's intervals and paired tests, against scipy and statsmodels computed here from the
    per-item results: voting is wrong on every run, counting right on every run, the judge wrong on
    the first 2 of the 5 puzzles for both seeds."""
    import numpy as np
    from scipy.stats import binomtest, bootstrap
    from statsmodels.stats.multitest import multipletests
    from statsmodels.stats.proportion import proportion_confint

    intervals = found.statistics.intervals
    # The judge: 5 items run twice each, so a percentile bootstrap that resamples whole items.
    correct = np.array([0.0 if i < 2 else 2.0 for i in range(5)])
    runs = np.array([2.0] * 5)
    reference = bootstrap((correct, runs), lambda c, n, axis=-1: c.sum(axis) / n.sum(axis), paired=True,
                          vectorized=True, method="percentile", n_resamples=2000, confidence_level=0.95,
                          rng=np.random.default_rng(0)).confidence_interval
    judge = intervals["c3"]
    assert (judge.estimate, judge.method, judge.n_items, judge.n_runs) == (pytest.approx(0.6), "cluster bootstrap", 5, 10)
    assert (judge.low, judge.high) == (pytest.approx(reference.low), pytest.approx(reference.high))
    # Every run of voting wrong (of counting right): Wilson over the 5 items, never a collapsed [p, p].
    assert (intervals["c1"].low, intervals["c1"].high) == pytest.approx(proportion_confint(0, 5, method="wilson"))
    assert (intervals["c2"].low, intervals["c2"].high) == pytest.approx(proportion_confint(5, 5, method="wilson"))
    assert R.display_records(found.table, found.statistics)[2]["accuracy"] == f"0.60 [{judge.low:.2f}, {judge.high:.2f}]"
    # Paired on the 10 (item, seed) units: every pair of configurations, exact McNemar, Holm over the three.
    tested = {(c.config_a, c.config_b): c for c in found.statistics.comparisons}
    assert list(tested) == [("c1", "c2"), ("c1", "c3"), ("c2", "c3")]
    discordant = {("c1", "c2"): (0, 10), ("c1", "c3"): (0, 6), ("c2", "c3"): (4, 0)}
    raw = [binomtest(min(d), sum(d), 0.5).pvalue for d in discordant.values()]
    holm = multipletests(raw, method="holm")[1]
    for (pair, (a_wins, b_wins)), p, p_holm in zip(discordant.items(), raw, holm):
        c = tested[pair]
        assert (c.n_pairs, c.a_right_b_wrong, c.a_wrong_b_right) == (10, a_wins, b_wins), pair
        assert (c.p_mcnemar, c.p_holm) == (pytest.approx(p), pytest.approx(p_holm)), pair
        assert c.diff == pytest.approx((a_wins - b_wins) / 10)
        if pair == ("c1", "c2"):  # every item: counting right, voting wrong: no spread, so no interval
            assert (c.diff_low, c.diff_high) == (None, None) and "same way" in c.note
        else:
            assert c.diff_low <= c.diff <= c.diff_high
    assert found.plots["accuracy"][2] == {"configuration": "protocol=judge", "accuracy": pytest.approx(0.6),
                                          "sd": pytest.approx((2.4 / 9) ** 0.5), "n": 10, "low": judge.low,
                                          "high": judge.high, "interval": "cluster bootstrap"}
    assert len(item_ids) == 5
