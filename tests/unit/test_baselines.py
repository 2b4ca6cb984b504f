"""Baselines and repeats in a sweep (issue 21, items 1, 3 and 9): what each baseline runs (the exact
prompts and calls), k matched to the call budget, the same items and seeds, every configuration
compared with its own baselines, repeats with distinct derived seeds clustered by item, and bad
input refused by name before anything is written.

The scripted model answers yes/no items by what it is asked: a prompt that asks to reason step by
step gets the right answer, except for samples whose label says otherwise (see `Answers`).
"""
from __future__ import annotations

import threading

import pytest

from mad_core.config import ConfigError, DebateConfig
from mad_core.experiments import ExperimentConfig, ExperimentRunner, create_experiment, storage
from mad_core.experiments import results as R
from mad_core.experiments.baselines import STEP_BY_STEP
from mad_core.experiments.spec import repeat_seed
from mad_core.live import plan_calls
from mad_core.store import Store


def cheap_embed(texts):
    return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]


class Answers:
    """Debaters: Agent 1 wrong, Agents 2-3 right, every vote "1" (Agent 1's solution), so simple voting
    is always wrong. Baselines: a prompt with STEP_BY_STEP is answered right by "Agent 1" (the single
    baseline) and by samples 1 and 2 of self-consistency, wrong by the others."""

    def __init__(self, items):
        self.items = items
        self.prompts: list[tuple[str, str, list[dict]]] = []  # (agent, kind, messages)
        self.lock = threading.Lock()

    def item(self, messages):
        text = "\n".join(str(m.get("content")) for m in messages)
        return next(item for item in self.items if item.question in text)

    def __call__(self, messages, info):
        meta = info["metadata"]
        agent, kind = meta["agent"], meta["kind"]
        with self.lock:
            self.prompts.append((agent, kind, messages))
        if kind == "vote":
            return "1"
        item = self.item(messages)
        wrong = "no" if item.answer == "yes" else "yes"
        stepwise = any(STEP_BY_STEP in str(m.get("content")) for m in messages)
        if stepwise:
            right = agent in ("Agent 1", "Sample 1", "Sample 2")
        else:
            right = agent != "Agent 1"
        answer = item.answer if right else wrong
        return answer if kind == "extraction" else f"{agent} thinks.\nFinal answer: {answer}"


def sweep(model: str, **changes) -> dict:
    data = {"name": "baselines", "task_set": "yes_no", "items": 3, "seeds": [1], "concurrency": 2,
            "base": {"models": model, "rounds": 1, "max_rounds": 1, "protocol": "simple_voting"},
            "baselines": ["single", {"name": "self_consistency", "k": 3}, "independent_vote"]}
    data.update(changes)
    return data


def items_of(data: dict):
    return ExperimentConfig.from_dict({**data, "baselines": [], "base": {"models": "scripted/echo"}}).task_items


def run_sweep(script, **changes):
    """A sweep (`sweep(**changes)`) answered by `Answers`, created and run to its end: (store, experiment
    id, the Answers, the scripted model's Script)."""
    data = sweep("scripted/echo", **changes)
    answers = Answers(items_of(data))
    model, calls = script(answers)
    data["base"] = {**data["base"], "models": model}
    store = Store()
    experiment_id = create_experiment(store, ExperimentConfig.from_dict(data))
    assert ExperimentRunner(experiment_id, embed=cheap_embed).run() == "finished"
    return store, experiment_id, answers, calls


# ----- the plan ------------------------------------------------------------------------------------------
def test_each_baseline_is_a_configuration_derived_from_each_configuration(script):
    model, _ = script(["x"])
    experiment = ExperimentConfig.from_dict(sweep(model, grid={"protocol": ["simple_voting", "solution_counting"]},
                                                  baselines=["single", "self_consistency", "independent_vote"]))
    by_key = {c.key: c for c in experiment.configurations}
    assert list(by_key) == ["c1", "c2", "b1", "b2", "b3", "b4", "b5"]
    single = by_key["b1"]  # the same for both configurations: run once
    assert single.values == {"baseline": "single"} and single.step_by_step
    assert single.settings["agents"] == [{"label": "Agent 1", "model": model, "temperature": 0.7, "max_tokens": 256}]
    assert (single.settings["rounds"], single.settings["max_rounds"], single.settings["paradigm"],
            single.settings["protocol"]) == (1, 1, "simultaneous", "solution_counting")
    # k matched to each configuration's call budget (live.plan_calls, decided after its rounds).
    item = experiment.task_items[0]
    budgets = {}
    for key in ("c1", "c2"):
        settings = {**by_key[key].settings, "question": item.question, "answer_type": item.kind}
        budgets[key] = plan_calls(settings).total(1)
    assert budgets == {"c1": 9, "c2": 6}  # 3 answers + 3 extractions + 3 ballots; 3 answers + 3 extractions
    assert by_key["b2"].values == {"baseline": "self_consistency", "k": 9, "for": "c1"}
    assert by_key["b3"].values == {"baseline": "self_consistency", "k": 6, "for": "c2"}
    assert [a["label"] for a in by_key["b2"].settings["agents"]] == [f"Sample {i}" for i in range(1, 10)]
    vote = by_key["b4"]  # the configuration's own agents and protocol, one round, no discussion
    assert vote.settings["protocol"] == "simple_voting" and not vote.step_by_step
    assert by_key["b5"].settings["protocol"] == "solution_counting"
    assert by_key["c1"].compared_with == {"single": "b1", "self_consistency": "b2", "independent_vote": "b4"}
    assert by_key["c2"].compared_with == {"single": "b1", "self_consistency": "b3", "independent_vote": "b5"}
    assert experiment.total == 7 * 3 and len(experiment.runs()) == 21
    # The same items and seeds for every configuration and baseline.
    plan = {(r.configuration.key, r.item.id, r.seed) for r in experiment.runs()}
    assert plan == {(c, i.id, 1) for c in by_key for i in experiment.task_items}


def test_the_single_agent_gets_the_items_instruction_and_a_request_to_reason_step_by_step(script):
    model, _ = script(["x"])
    experiment = ExperimentConfig.from_dict(sweep(model))
    run = next(r for r in experiment.runs() if r.configuration.key == "b1")
    config = run.debate_config()
    assert isinstance(config, DebateConfig)
    assert config.task == f"Answer yes or no. {STEP_BY_STEP}"
    debate = next(r for r in experiment.runs() if r.configuration.key == "c1").debate_config()
    assert debate.task == "Answer yes or no."  # must not: the debate's own instruction changed


def test_repeats_run_each_item_again_with_distinct_derived_seeds(script):
    model, _ = script(["x"])
    experiment = ExperimentConfig.from_dict(sweep(model, seeds=[1, 2], repeats=3, baselines=[]))
    runs = experiment.runs()
    assert experiment.total == len(runs) == 1 * 3 * 2 * 3
    seeds = sorted({r.seed for r in runs})
    assert len(seeds) == 6 and {1, 2} <= set(seeds)
    assert [repeat_seed(1, r) for r in range(3)] == [1, repeat_seed(1, 1), repeat_seed(1, 2)]
    per_item = {}
    for r in runs:
        per_item.setdefault(r.item.id, []).append((r.seed, r.repeat))
    assert all(len(set(v)) == 6 for v in per_item.values())
    again = ExperimentConfig.from_dict(experiment.to_dict())  # stored and read back: the same plan
    assert [(r.item.id, r.seed) for r in again.runs()] == [(r.item.id, r.seed) for r in runs]


# ----- bad input ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("change, field", [
    ({"baselines": ["single", "majority_of_one"]}, "baselines[1]"),
    ({"baselines": [{"name": "self_consistency", "match": "tokens"}]}, "baselines[0].match"),
    ({"baselines": [{"name": "self_consistency", "match": "turns"}]}, "baselines[0].match"),
    ({"baselines": [{"name": "self_consistency", "k": 1}]}, "baselines[0].k"),
    ({"baselines": [{"name": "self_consistency", "k": 5, "match": "calls"}]}, "baselines[0].match"),
    ({"baselines": [{"name": "single", "k": 5}]}, "baselines[0].k"),
    ({"baselines": ["single", "single"]}, "baselines[1]"),
    ({"baselines": "single"}, "baselines"),
    ({"repeats": 0}, "repeats"),
    ({"repeats": "2"}, "repeats"),
    ({"base": {"models": "M", "rounds": 12, "max_rounds": 12}, "baselines": ["self_consistency"]}, "baselines[0]"),
])
def test_bad_baselines_and_repeats_are_named_and_nothing_is_written(change, field, script, madlab_home):
    model, calls = script(["x"])
    data = sweep(model, **change)
    if data["base"].get("models") == "M":
        data["base"]["models"] = model  # 12 rounds of 3 agents + votes: k over 32 samples
    with pytest.raises(ConfigError) as caught:
        ExperimentConfig.from_dict(data)
    assert caught.value.field == field, caught.value
    assert not (madlab_home / "madlab.db").exists() and calls.history == []  # must not: a write or a call


# ----- a sweep with baselines, run on the scripted model ---------------------------------------------------
def test_a_sweep_runs_its_baselines_on_the_same_items_and_compares_each_row_with_them(script):
    # cache off: every call reaches the model, to count them
    store, experiment_id, answers, calls = run_sweep(script, base={"rounds": 1, "max_rounds": 1,
                                                                   "protocol": "simple_voting", "cache": "off"})
    runs = storage.runs(store, experiment_id)
    assert sorted({r["config_key"] for r in runs}) == ["b1", "b2", "b3", "c1"]
    assert all(r["status"] == "finished" for r in runs)
    # The baselines made exactly their calls: 1 answer (single), k = 3 samples, 3 answers + 3 extractions
    # + 3 ballots for the independent vote, on each of the 3 items; the debate 3 + 3 + 3 too.
    assert calls.calls == 3 * (1 + 3 + 9 + 9)
    # The single baseline's exact prompt carries the item's instruction and the step-by-step request.
    singles = [m for agent, kind, m in answers.prompts if agent == "Agent 1" and any(STEP_BY_STEP in str(x["content"])
                                                                                     for x in m)]
    assert len(singles) == 3 and all("Answer yes or no. " + STEP_BY_STEP in "\n".join(x["content"] for x in m)
                                     for m in singles)
    found = R.experiment_results(store, experiment_id, embed=cheap_embed)
    accuracy = {row.key: row.stats["accuracy"].mean for row in found.table}
    # The debate's vote follows Agent 1 (wrong); single right; self-consistency: samples 1-2 right of 3
    # (the majority as the answer type reads it); the independent vote is the debate without talk: wrong.
    assert accuracy == {"c1": 0.0, "b1": 1.0, "b2": 1.0, "b3": 0.0}
    versus = found.statistics.versus["c1"]
    assert set(versus) == {"single", "self_consistency", "independent_vote"}
    assert versus["single"].diff == pytest.approx(-1.0) and versus["single"].a_wrong_b_right == 3
    assert versus["independent_vote"].diff == 0.0 and versus["independent_vote"].p_mcnemar == 1.0
    shown = R.display_records(found.table, found.statistics)[0]
    assert shown["vs single"].startswith("-1.00") and "Holm p = " in shown["vs single"]
    record = R.table_records(found.table, found.statistics)[0]
    assert record["vs_single_baseline"] == "b1" and record["vs_single_diff"] == pytest.approx(-1.0)
    assert record["vs_single_p_holm"] == pytest.approx(found.statistics.versus["c1"]["single"].p_holm)
    # What the vote did to the discussion's answer: round 1's majority (Agents 2-3) was right on every
    # item, the decision (Agent 1's solution) wrong: 3 right -> wrong, none the other way.
    changes = found.statistics.changes["c1"]
    assert (changes.right_to_wrong, changes.wrong_to_right, changes.net) == (3, 0, -3)
    # The per-debate CSV says which baseline each debate belongs to and the item's reference.
    per_debate = R.run_records(found.runs, found.configurations)
    items = {i.id: i for i in answers.items}
    assert {(r["config_key"], r["baseline"]) for r in per_debate} == {
        ("c1", ""), ("b1", "single"), ("b2", "self_consistency"), ("b3", "independent_vote")}
    assert all(r["reference"] == items[r["item_id"]].answer for r in per_debate)
    header = R.to_csv(per_debate).splitlines()[0].split(",")
    assert {"baseline", "reference", "item_id", "seed", "debate_id"} <= set(header)
    labels = [c["label"] for c in found.configurations]
    assert labels == ["all", "baseline=single", "baseline=self_consistency · k=3", "baseline=independent_vote"]


def test_the_report_and_the_comparisons_csv_carry_the_intervals_and_tests(script, tmp_path, capsys):
    from mad_core import cli
    from mad_core.exports import md_safe

    store, experiment_id, _, _ = run_sweep(script, baselines=["single"])
    report, comparisons = tmp_path / "report.md", tmp_path / "comparisons.csv"
    assert cli.main(["experiment", "--show", experiment_id[:8], "--report", str(report),
                     "--comparisons-csv", str(comparisons)]) == 0
    out = capsys.readouterr().out
    found = R.experiment_results(store, experiment_id)
    single = found.statistics.versus["c1"]["single"]
    assert f"all  vs  baseline=single: -1.00, McNemar p = {single.p_mcnemar:.3f}" in out  # 3 items: no interval
    text = report.read_text()
    assert "## Paired comparisons" in text and "## What discussion changed" in text
    assert "| all | baseline=single | 3 | -1.000 | – | – |" in text  # every item the same way: no interval
    assert md_safe(found.statistics.intervals["c1"].text(2)) in text  # the accuracy with its interval
    rows = comparisons.read_text().splitlines()
    assert rows[0].startswith("a,b,config_a,config_b,n_pairs,diff,diff_low,diff_high,p_mcnemar,p_holm,cohens_h")
    assert rows[1].startswith("all,baseline=single,c1,b1,3,-1.0,")


def test_a_rerun_of_a_finished_sweep_asks_no_model_and_gives_the_same_tables(script):
    data = sweep("scripted/echo")  # sweeps read and write the response cache unless told otherwise
    answers = Answers(items_of(data))
    model, calls = script(answers)
    data["base"]["models"] = model
    store = Store()
    tables = []
    for _ in range(2):
        experiment_id = create_experiment(store, ExperimentConfig.from_dict(data))
        made = calls.calls
        assert ExperimentRunner(experiment_id, embed=cheap_embed).run() == "finished"
        found = R.experiment_results(store, experiment_id, embed=cheap_embed)
        tables.append((calls.calls - made, R.table_records(found.table, found.statistics)))
    (first_calls, first), (second_calls, second) = tables
    assert first_calls > 0 and second_calls == 0  # must not: a model asked again
    assert second == first
    off = sweep(model)
    off["base"]["cache"] = "off"
    experiment_id = create_experiment(store, ExperimentConfig.from_dict(off))
    made = calls.calls
    assert ExperimentRunner(experiment_id, embed=cheap_embed).run() == "finished"
    assert calls.calls - made == 3 * (1 + 3 + 9 + 9)  # cache off: every call made again
