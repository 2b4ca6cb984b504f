"""Readable charts on an opened debate (madlab_ui/plots.py over mad_core/figures.py).

Agents give long, hostile free-text answers: the vote chart's labels stay short (wrapped, at
most two lines) with automargin; the timeline's cells say the answer in >= 12 px text with the
whole answer in the hover; one answer has one colour in both charts; every chart keeps the PNG
camera and downloads as a standalone HTML file in which the model text is escaped.
"""
from __future__ import annotations

import html
import json
import re

import plotly.graph_objects as go
import pytest
from app_helpers import keys, open_debate, scripted_debate, texts

import madlab_ui.plots as plots
from mad_core import figures

LONG = "the capital is <b>Paris</b> <script>alert(1)</script> because the river Seine flows right through it"
SAID = {"Agent 1": LONG, "Agent 2": "Lyon", "A very long agent label that goes on": LONG}


def reply(messages, info) -> str:
    meta = info["metadata"]
    if meta["kind"] == "vote":
        return "1"
    answer = SAID[meta["agent"]]
    return answer if meta["kind"] == "extraction" else f"I think so.\nFinal answer: {answer}"


@pytest.fixture
def debate_id():
    return scripted_debate("charts", reply, {
        "question": "Capital of France?", "rounds": 1, "max_rounds": 1, "protocol": "simple_voting",
        "agents": [{"label": label, "model": "scripted/charts"} for label in SAID]})


def chart_of(at, key: str) -> tuple[dict, dict]:
    """(the figure's spec, st.plotly_chart's config) of the chart in the container `key`."""
    proto = at.get_by_key(key).get("plotly_chart")[0].proto
    return json.loads(proto.spec), json.loads(proto.config)


def test_vote_labels_are_short_wrapped_and_get_their_margin(debate_id):
    at = open_debate(debate_id)
    spec, _ = chart_of(at, "plot_votes")
    bars = spec["data"][0]
    assert bars["orientation"] == "h" and spec["layout"]["yaxis"]["automargin"] is True
    for label in bars["y"]:
        lines = label.split("<br>")
        assert len(lines) <= 2 and all(len(html.unescape(line)) <= figures.LINE_CHARS for line in lines), label
        assert "<b>" not in label and "<script" not in label
    assert bars["y"][2].startswith("Solution 3 (A very …<br>→ the capital is")
    # the hover holds the whole answer, escaped (plotly would read <b> and friends as markup)
    assert bars["customdata"][0][1] == ("the capital is &lt;b&gt;Paris&lt;/b&gt; &lt;script&gt;alert(1)&lt;/script&gt; "
                                        "because the river Seine flows right through it")


def test_timeline_cells_say_the_answer_legibly_and_colours_match_the_votes(debate_id):
    at = open_debate(debate_id)
    timeline, _ = chart_of(at, "plot_timeline")
    votes, _ = chart_of(at, "plot_votes")
    cells = timeline["data"][0]
    assert cells["textfont"]["size"] >= 12 and cells["texttemplate"] == "%{text}"
    assert cells["text"][1] == ["Lyon"] and cells["text"][0][0] == "the capital is<br>&lt;b&gt;Paris&lt;/b&gt; …"
    assert cells["customdata"][0][0].startswith("the capital is &lt;b&gt;Paris") and "%{customdata}" in \
        cells["hovertemplate"]
    # one answer, one colour: Agent 1's and the third agent's answer, and Agent 2's, in both charts
    timeline_color = {row: figures.cell_color(cells, row, 0) for row in range(3)}
    bar_color = dict(enumerate(votes["data"][0]["marker"]["color"]))
    assert timeline_color == bar_color
    assert timeline_color[0] == timeline_color[2] != timeline_color[1]


def test_every_chart_keeps_the_png_camera_and_downloads_as_html(debate_id):
    at = open_debate(debate_id)
    drawn = ["plot_diversity", "plot_entropy", "plot_agreement", "plot_votes", "plot_timeline"]
    buttons = {b.key: b for b in at.get("download_button")}
    for key in drawn:
        _, config = chart_of(at, key)
        assert config["displayModeBar"] is True and config["modeBarButtons"] == [["toImage"]]
        assert config["toImageButtonOptions"] == {"format": "png", "scale": 2, "filename": key}
        assert buttons[f"html_{key}"].proto.label == "HTML"
    # what the votes chart's button hands over: one standalone page, plotly.js inside, text escaped
    spec, _ = chart_of(at, "plot_votes")
    page = plots.chart_html(go.Figure(spec), "plot_votes")
    assert_offline_and_escaped(page)
    assert "&lt;script&gt;alert(1)&lt;\\u002fscript&gt;" in page and "<b>Paris" not in page
    assert '"filename": "plot_votes"' in page or '"filename":"plot_votes"' in page


def assert_offline_and_escaped(page: str) -> None:
    """plotly.js embedded (several MB, no <script src=...>), no model tag alive."""
    assert page.startswith("<!doctype html>") and len(page) > 1_000_000
    assert re.findall(r"<script[^>]*\bsrc=", page) == []
    assert "<script>alert(1)" not in page and "<i>x</i>" not in page


def test_a_figure_downloads_as_offline_html():
    fig = figures.line_figure({"<i>x</i>": [(1, 0.5)]}, "t", "y")
    page = figures.figure_html(fig)
    assert_offline_and_escaped(page)
    assert '"name":"&lt;i&gt;x&lt;\\u002fi&gt;"' in page


def test_the_decision_card_leads_with_the_answer_and_judges_it_only_after_the_reveal():
    def choice(messages, info) -> str:
        meta = info["metadata"]
        return "1" if meta["kind"] == "vote" else "I weigh it.\nFinal answer: (B) Paris"

    debate = scripted_debate("charts_choice", choice, {
        "question": "Capital of France? (A) Nice (B) Paris", "rounds": 1, "max_rounds": 1,
        "protocol": "simple_voting", "answer_type": "choice", "answer_options": ["Nice", "Paris"],
        "reference": "Paris", "agents": [{"label": f"Agent {i}", "model": "scripted/charts_choice"} for i in (1, 2)]})
    at = open_debate(debate)
    card = at.get_by_key("decision_card")
    assert texts(at.get_by_key("decision_answer")) == "#### \\(B\\) Paris"
    # no spoiler: nothing on the page says whether the decision matches before the reveal
    assert "decision_agreement" not in keys(at) and "matches" not in texts(at.main) and "differs" not in texts(at.main)
    assert [e.label for e in card.expander] == ["Full winning text (Agent 1)", "Solutions and scores"]
    at.button(key="reveal_reference").click().run()
    # "Paris" is option B's text: the answer type reads both as B (a string compare would say they differ)
    assert texts(at.get_by_key("decision_agreement")) == "✅ the decision matches it \\(read as a choice answer\\)"
