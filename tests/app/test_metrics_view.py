"""The metrics of an opened debate: the plotted numbers are the report's (checked on the figures' traces).

Round 1: Agent 1 and Agent 3 answer "(B) Paris" and "B", Agent 2 "C"; round 2: all "B"; the
reference is B and the answer type "choice", so the first round has entropy H(2/3, 1/3), one
agreeing majority, accuracy 1, and Agent 2 changes from C to B in round 2.
"""
from __future__ import annotations

import json
import math

import pytest
from app_helpers import embed, keys, open_debate, texts

from mad_core import DebateConfig, DebateEngine
from mad_core.metrics.similarity import _cosine
from mad_core.models.scripted import Script, register_script, unregister_script
from mad_core.store import Store

SAID = {1: {"Agent 1": "(B) Paris", "Agent 2": "C", "Agent 3": "B"},
        2: {"Agent 1": "B", "Agent 2": "B", "Agent 3": "B"}}


def reply(messages, info) -> str:
    meta = info["metadata"]
    answer = SAID[min(meta["round"], 2)].get(meta["agent"], "B")
    if meta["kind"] == "vote":
        return "1"
    if meta["kind"] == "extraction":
        return answer
    return f"{meta['agent']} weighs the options.\nFinal answer: {answer}"


@pytest.fixture
def debate_id():
    register_script("metricsview", Script(replies=reply))
    try:
        config = DebateConfig.from_dict({
            "question": "Capital of France? (A) Nice (B) Paris (C) Lyon", "reference": "B", "answer_type": "choice",
            "answer_options": ["Nice", "Paris", "Lyon"], "rounds": 2, "max_rounds": 3, "protocol": "simple_voting",
            "agents": [{"label": f"Agent {i}", "model": "scripted/metricsview"} for i in (1, 2, 3)]})
        engine = DebateEngine(config, store=Store())
        list(engine.run())
        yield engine.debate_id
    finally:
        unregister_script("metricsview")


def traces(at, key: str) -> dict[str, list]:
    """{trace name: y values} of the chart in the container `key`."""
    spec = json.loads(at.get_by_key(key).get("plotly_chart")[0].proto.spec)
    return {trace.get("name"): trace.get("y") for trace in spec["data"]}


def test_the_plots_show_the_reports_numbers(debate_id):
    at = open_debate(debate_id)
    # no spoiler: nothing measured against the reference before it is revealed
    assert "plot_accuracy" not in keys(at) and "correct" not in texts(at.get_by_key("metrics_summary"))
    assert list(traces(at, "plot_entropy")) == ["entropy (bits)"]
    at.button(key="reveal_reference").click().run()
    entropy = traces(at, "plot_entropy")
    assert entropy["entropy (bits)"][0] == pytest.approx(-(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3)))
    assert entropy["entropy (bits)"][1] == 0.0
    assert entropy["log-likelihood of the reference (log2)"] == [pytest.approx(math.log2(2 / 3)), 0.0]
    agreement = traces(at, "plot_agreement")
    assert agreement == {"all agree": [0.0, 1.0], "majority agrees": [1.0, 1.0],
                         "disagreement": [pytest.approx(2 / 3), 0.0]}
    assert traces(at, "plot_accuracy") == {"strict": [1.0, 1.0], "smooth (per part)": [1.0, 1.0]}
    similarity = traces(at, "plot_diversity")
    vectors = embed(["(B) Paris", "C", "B"])  # round 1's final answers as written
    expected = (_cosine(vectors[0], vectors[1]) + _cosine(vectors[0], vectors[2]) + _cosine(vectors[1], vectors[2])) / 3
    assert similarity["final answers"][0] == pytest.approx(expected)
    assert similarity["final answers"][1] == pytest.approx(1.0)  # three times "B"
    assert similarity["whole replies"][1] < 1.0  # the replies name different agents: a different measure
    timeline = json.loads(at.get_by_key("plot_timeline").get("plotly_chart")[0].proto.spec)["data"]
    assert timeline[0]["text"] == [["B", "B"], ["C", "B"], ["B", "B"]]  # "(B) Paris" is read as B
    assert (timeline[1]["x"], timeline[1]["y"]) == (["R2"], ["Agent 2"])  # the one change, circled


def test_the_agent_table_shows_states_costs_and_who_changed(debate_id):
    at = open_debate(debate_id)
    at.button(key="reveal_reference").click().run()
    table = at.get_by_key("agent_metrics").table[0].value
    rows = {row["agent"]: row for row in table.to_dict("records")}
    assert rows["Agent 2"]["initial → final"] == "minority-wrong → correct"
    assert rows["Agent 1"]["initial → final"] == "majority-correct → correct"
    assert rows["Agent 2"]["changes"] == 1
    usage = {row["agent"]: row for row in at.get_by_key("usage").table[0].value.to_dict("records")}
    assert usage["Agent 2"]["cost"] == "$0.0000"  # calls, tokens and cost per agent: the usage table's
    shown = texts(at.get_by_key("agent_metrics"))
    assert "round 2: **Agent 2** C → B" in shown and "just before, Agent 1 said: Agent 1 weighs the options" in shown
    summary = texts(at.get_by_key("metrics_summary"))
    assert "correct yes" in summary and "rounds to decision 2" in summary and "all agree AUC 0.5" in summary
