"""Scenario: a teacher shows a finished debate's charts on a projector (1280x720) and on a laptop
(1440x900), in the Debate page's stage column, where they are narrowest.

Must not happen: a chart's title running under the toolbar's camera, an answer timeline cell's
text running past its cell into the next, the agents table cut at its right edge, or the
decision's 165-digit answer as a heading of several lines or running past its chat bubble; a
consensus ballot drawn as an empty row, a legend whose swatches match no bar, a cut subtitle."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e_helpers import (LIVE_TIMEOUT, click, expect, expect_no_exception, finished_debate, key, open_app, unique,
                         wait_for_idle)

from mad_core.config import DebateConfig
from mad_core.engine import DebateEngine
from mad_core.models import ensure_registered
from mad_core.models.scripted import Script, register_script, unregister_script

pytestmark = pytest.mark.e2e
CHARTS = ("plot_diversity", "plot_entropy", "plot_agreement", "plot_votes", "plot_timeline")

# Per chart: the title's and subtitle's boxes, the camera's box, and (timeline) each cell text's
# box with the plot area and the number of columns.
MEASURE = """(box) => {
    const rect = (el) => { const r = el.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
    const titles = [...box.querySelectorAll('.gtitle, .gtitle-subtitle')].filter(t => t.textContent).map(rect);
    const camera = box.querySelector('.modebar');
    const plot = box.querySelector('.nsewdrag');
    const cells = [...box.querySelectorAll('.heatmaplayer text')].filter(t => t.textContent).map(rect);
    const columns = box.querySelectorAll('g.xtick').length;
    return {titles, camera: camera && rect(camera), plot: plot && rect(plot), cells, columns,
            width: box.getBoundingClientRect().width};
}"""


@pytest.mark.parametrize("size", [(1280, 720), (1440, 900)])
def test_charts_read_in_the_stage_column(page, server, store, size):
    width, height = size
    page.set_viewport_size({"width": width, "height": height})
    question = unique(f"Charts at {width}: is 91 a prime number?")
    finished_debate(page, server.url, store, question, [f"scripted/charts_e2e_{width}"] * 3)
    expect_no_exception(page)
    card = key(page, "decision_answer")
    expect(card).to_contain_text("1303211111")
    lines = card.locator("h4").evaluate("""(h) => {  // the answer's lines of text, as laid out
        const walk = document.createTreeWalker(h, NodeFilter.SHOW_TEXT); const tops = new Set();
        for (let node = walk.nextNode(); node; node = walk.nextNode()) {
            if (!node.textContent.includes('13032')) continue;
            const range = document.createRange(); range.selectNodeContents(node);
            [...range.getClientRects()].filter(r => r.width > 0).forEach(r => tops.add(Math.round(r.top)));
        }
        return tops.size; }""")
    assert 1 <= lines <= 2, lines  # must not happen: a heading of three lines and more (it had 165 digits)
    bubbles = page.locator('[data-testid="stChatMessage"]')
    expect(bubbles.filter(has_text="13032").first).to_be_visible()
    overflowing = bubbles.evaluate_all("""(all) => all.filter(b => [...b.querySelectorAll('*')].some(
        e => e.getBoundingClientRect().right > b.getBoundingClientRect().right + 1)).map(b => b.innerText.slice(0, 80))""")
    assert overflowing == []  # must not happen: the 165-digit answer running past its bubble
    shots = Path(os.environ.get("MADLAB_E2E_ARTIFACTS", server.home.parent))
    for name in CHARTS:
        box = key(page, name)
        box.scroll_into_view_if_needed()
        expect(box.locator(".main-svg").first).to_be_visible()
        m = box.evaluate(MEASURE)
        assert m["width"] > 400, (name, m["width"])  # one chart per row: never ~270 px
        assert m["titles"] and m["camera"], name
        for title in m["titles"]:  # must not happen: a title under the camera
            assert title["r"] <= m["camera"]["l"] or title["b"] <= m["camera"]["t"] or title["t"] >= m["camera"]["b"], \
                (name, title, m["camera"])
        box.screenshot(path=str(shots / f"charts-{name}-stage-{width}.png"))
        if name == "plot_timeline":
            plot, n = m["plot"], m["columns"]
            assert n >= 1 and len(m["cells"]) == 3, m
            cell_width = (plot["r"] - plot["l"]) / n
            for cell in m["cells"]:  # must not happen: cell text running into the next cell
                col = int(((cell["l"] + cell["r"]) / 2 - plot["l"]) // cell_width)
                assert plot["l"] + col * cell_width <= cell["l"] and cell["r"] <= plot["l"] + (col + 1) * cell_width, \
                    (cell, plot, n)
    table = key(page, "agent_metrics")
    table.scroll_into_view_if_needed()
    fits = table.evaluate("""(box) => [...box.querySelectorAll('table')].every(
        t => t.getBoundingClientRect().right <= box.getBoundingClientRect().right + 1)""")
    assert fits, "the agents table is cut at its right edge"
    table.screenshot(path=str(shots / f"charts-agents-{width}.png"))


STANCES = {"Agent 1": "DISAGREE. It is Paris.\nFinal answer: Paris", "Agent 2": "DISAGREE. Lyon.\nFinal answer: Lyon",
           "Agent 3": "DISAGREE. Nice, surely.\nFinal answer: Nice"}


def stance_reply(messages, info) -> str:
    meta = info["metadata"]
    return STANCES[meta["agent"]] if meta["kind"] not in ("vote", "extraction") else "Nice"


def test_every_consensus_ballot_shows_in_the_votes_chart(page, server, store):
    """The researcher's majority_consensus debate: each round the last proposer agrees with its own
    proposal and the two others do not (ballots 0, 0, 1), over two rounds."""
    ensure_registered()
    name = f"charts-stances-{unique('x')[-6:]}"
    register_script(name, Script(replies=stance_reply))
    try:
        engine = DebateEngine(DebateConfig.from_dict({
            "question": unique("Consensus chart: capital of France?"), "rounds": 2, "max_rounds": 2,
            "protocol": "majority_consensus",
            "agents": [{"label": label, "model": f"scripted/{name}"} for label in STANCES]}), store=store)
        list(engine.run())
    finally:
        unregister_script(name)
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, server.url, "/Transcripts")
    click(page, f"open_{engine.debate_id[:8]}")
    box = key(page, "plot_votes")
    expect(box.locator(".main-svg").first).to_be_visible(timeout=LIVE_TIMEOUT)
    wait_for_idle(page, timeout=LIVE_TIMEOUT)
    box.scroll_into_view_if_needed()
    drawn = box.evaluate("""(box) => ({
        bars: [...box.querySelectorAll('.barlayer .point path')].map(p => p.getBoundingClientRect().width),
        words: [...box.querySelectorAll('.barlayer .point text, .barlayer text.bartext')].map(t => t.textContent),
        legend: box.querySelectorAll('.legend .traces').length,
        subtitle: [...box.querySelectorAll('.gtitle-subtitle')].map(t => t.textContent).join(''),
        right: Math.max(...[...box.querySelectorAll('.gtitle-subtitle')].map(t => t.getBoundingClientRect().right)),
        edge: box.getBoundingClientRect().right})""")
    assert len(drawn["bars"]) == 6, drawn
    # must not happen: a disagreement drawn as nothing (6 of 9 rows looked empty)
    assert all(width > 20 for width in drawn["bars"]), drawn
    assert sorted(drawn["words"]) == ["agrees"] * 2 + ["disagrees"] * 4, drawn
    assert drawn["legend"] == 0, drawn  # no swatch that matches no bar
    assert drawn["subtitle"] == "each agent's ballot; colour = its answer" and drawn["right"] <= drawn["edge"], drawn
    expect_no_exception(page)
