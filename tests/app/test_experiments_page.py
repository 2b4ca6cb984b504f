"""The Experiments page (AppTest): a stored experiment's table and plots with the right numbers,
a form that refuses a bad value by name, a sweep started from the form, and a debate opened in
the transcript view (pages/1_Transcripts.py).

The scripted debaters answer the first two yes/no items (both "no"): Agent 1 says "yes", the
others "no", and everyone votes for solution 1 (Agent 1's). So simple voting is always wrong
(accuracy 0.00) and solution counting always right (1.00), each with its 95 % interval; both decide in
round 1.
"""
from __future__ import annotations

import json

import pytest
from app_helpers import app, embed, keys
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from mad_core.experiments import ExperimentConfig, ExperimentRunner, create_experiment, runner, storage
from mad_core.models.scripted import Script, register_script, unregister_script
from mad_core.store import Store
from madlab_ui.common import OPEN_DEBATE
from madlab_ui.experiments import EXP_ERROR, EXP_OPEN

EXPERIMENTS = "pages/4_Experiments.py"
MODEL = "scripted/apptest_exp"


def reply(messages, info) -> str:
    meta = info["metadata"]
    answer = "yes" if meta.get("agent") == "Agent 1" else "no"
    if meta.get("kind") == "vote":
        return "1"
    return answer if meta.get("kind") == "extraction" else f"Reasoning of {meta.get('agent')}.\nFinal answer: {answer}"


@pytest.fixture(autouse=True)
def debaters():
    register_script("apptest_exp", Script(replies=reply))
    yield MODEL
    unregister_script("apptest_exp")


SPEC = {"name": "Voting vs counting", "task_set": "yes_no", "items": 2, "seeds": [1, 2], "concurrency": 2,
        "base": {"models": MODEL, "rounds": 1, "max_rounds": 2},
        "grid": {"protocol": ["simple_voting", "solution_counting"]}}


def stored_experiment() -> str:
    store = Store()
    experiment_id = create_experiment(store, ExperimentConfig.from_dict(SPEC))
    assert ExperimentRunner(experiment_id, embed=embed).run() == "finished"
    return experiment_id


def opened(experiment_id: str):
    at = app(EXPERIMENTS)
    at.button(key=f"exp_open_{experiment_id[:8]}").click().run()
    assert not at.exception, at.exception
    return at


def table_rows(at) -> dict[str, dict]:
    frame = at.get_by_key("exp_table").table[0].value
    return {row["configuration"].replace("\\", ""): row for row in frame.to_dict("records")}


def test_a_stored_experiment_shows_its_table_and_plot_data():
    experiment_id = stored_experiment()
    at = opened(experiment_id)
    rows = table_rows(at)
    assert set(rows) == {"protocol=simple_voting", "protocol=solution_counting"}
    pytest.importorskip("mad_core.metrics.report", reason="the numbers come from helper A's debate reports")
    voting, counting = rows["protocol=simple_voting"], rows["protocol=solution_counting"]
    assert (voting["debates"], voting["finished"], voting["failed"]) == (4, 4, 0)
    # Accuracy with its 95 % interval: both items run twice and every run agrees, so the interval is
    # Wilson's over the 2 items (statsmodels computes the reference): 0 of 2 and 2 of 2.
    none_low, none_high = proportion_confint(0, 2, alpha=0.05, method="wilson")
    all_low, all_high = proportion_confint(2, 2, alpha=0.05, method="wilson")
    assert voting["accuracy"] == f"0.00 [{none_low:.2f}, {none_high:.2f}]" == "0.00 [0.00, 0.66]"
    assert counting["accuracy"] == f"1.00 [{all_low:.2f}, {all_high:.2f}]" == "1.00 [0.34, 1.00]"
    # The one comparison: on all 4 (item, seed) pairs counting was right and voting wrong: exact
    # McNemar p = 2 · 0.5^4 (scipy's binomial test), Holm over one test is the same.
    compared = at.get_by_key("exp_comparisons").table[0].value.to_dict("records")
    assert len(compared) == 1
    expected_p = binomtest(0, 4, 0.5).pvalue
    assert compared[0]["difference"] == "-1.00" and compared[0]["pairs"] == 4
    assert compared[0]["McNemar p"] == compared[0]["Holm p"] == f"{expected_p:.3f}" == "0.125"
    assert (compared[0]["A right, B wrong"], compared[0]["A wrong, B right"]) == (0, 4)
    assert voting["rounds to decision"] == counting["rounds to decision"] == "1.00 ± 0.00"
    store = Store()
    tokens = {}
    for run in storage.runs(store, experiment_id):
        turns = store.turns(run["debate_id"])
        tokens.setdefault(run["config_key"], []).append(sum((t.prompt_tokens or 0) + (t.completion_tokens or 0)
                                                            for t in turns))
    assert voting["tokens"].split(" ± ")[0] == f"{sum(tokens['c1']) / 4:.0f}"
    chart = at.get_by_key("exp_plot_accuracy")
    figure = chart.get("plotly_chart")[0].proto.spec
    assert '"y":[0.0,1.0]' in figure.replace(" ", "") and "protocol=solution_counting" in figure
    bars = json.loads(figure)["data"][0]["error_y"]  # the 95 % intervals as error bars
    assert bars["array"] == pytest.approx([none_high, 0.0]) and bars["arrayminus"] == pytest.approx([0.0, 1 - all_low])
    rounds = at.get_by_key("exp_plot_rounds").get("plotly_chart")[0].proto.spec
    assert '"x":[1],"y":[4]' in rounds.replace(" ", "")
    progress = at.get_by_key("exp_progress")
    assert "8 of 8 debates done" in progress.get("progress")[0].proto.text


def test_a_debate_of_the_sweep_opens_in_the_transcript_view():
    experiment_id = stored_experiment()
    at = opened(experiment_id)
    first = storage.runs(Store(), experiment_id)[0]
    at.button(key=f"exp_debate_{first['run_index']}").click().run()
    assert not at.exception, at.exception
    assert at.session_state[OPEN_DEBATE] == first["debate_id"]
    assert "transcript" in keys(at)  # the Transcripts page, with the debate opened


def test_the_form_names_a_bad_value_and_stores_nothing():
    at = app(EXPERIMENTS)
    at.text_input(key="exp_seeds").set_value("1, two").run()
    at.button(key="exp_start").click().run()
    assert at.session_state[EXP_ERROR].startswith("seeds:")
    assert any("seeds:" in e.value for e in at.error)
    at.text_input(key="exp_seeds").set_value("1").run()
    at.text_input(key="exp_models").set_value("scripted/no-such-script").run()
    at.button(key="exp_start").click().run()
    assert at.session_state[EXP_ERROR].startswith("base.models:")
    assert storage.list_experiments(Store()) == []  # must not happen: a refused sweep stored


def test_the_form_starts_a_sweep_in_the_background(debaters):
    at = app(EXPERIMENTS)
    at.text_input(key="exp_name").set_value("From the form").run()
    at.selectbox(key="exp_task_set").set_value("yes_no").run()
    at.number_input(key="exp_items").set_value(2).run()
    at.text_input(key="exp_seeds").set_value("1").run()
    at.text_input(key="exp_agents").set_value("3").run()
    at.text_input(key="exp_rounds").set_value("1").run()
    at.number_input(key="exp_max_rounds").set_value(2).run()
    at.text_input(key="exp_models").set_value(debaters).run()
    at.multiselect(key="exp_protocols").set_value(["simple_voting", "solution_counting"]).run()
    at.button(key="exp_start").click().run()
    assert not at.exception, at.exception
    experiment_id = at.session_state[EXP_OPEN]
    background = runner.active(experiment_id)
    if background is not None:
        background.thread.join(60)
    record = storage.get_experiment(Store(), experiment_id)
    assert record["name"] == "From the form" and record["status"] == "finished"
    assert record["spec"]["grid"] == {"protocol": ["simple_voting", "solution_counting"]}
    assert record["spec"]["base"]["rounds"] == 1 and record["spec"]["seeds"] == [1]
    at.run()
    rows = table_rows(at)
    assert (rows["protocol=solution_counting"]["debates"], rows["protocol=solution_counting"]["finished"]) == (2, 2)
    pytest.importorskip("mad_core.metrics.report", reason="the numbers come from helper A's debate reports")
    assert rows["protocol=solution_counting"]["accuracy"] == "1.00 [0.34, 1.00]"  # Wilson, 2 of 2 items
