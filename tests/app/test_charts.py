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
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest
from app_helpers import keys, open_debate, scripted_debate, texts

import madlab_ui.plots as plots
from mad_core import figures
from mad_core.store import Store
from mad_core.view import DebateView

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


def cell_lines(cell: str) -> list[str]:
    return [html.unescape(line) for line in cell.split("<br>")] if cell else []


def test_timeline_cells_say_the_answer_legibly_and_colours_match_the_votes(debate_id):
    at = open_debate(debate_id)
    timeline, _ = chart_of(at, "plot_timeline")
    votes, _ = chart_of(at, "plot_votes")
    cells = timeline["data"][0]
    assert cells["textfont"]["size"] >= 12 and cells["texttemplate"] == "%{text}"
    room = figures.cell_width_px(1, list(SAID))  # one round: the cell is the plot's whole width
    assert cells["text"][1] == ["Lyon"]
    assert cells["text"][0][0] == ("the capital is &lt;b&gt;Paris&lt;/b&gt;<br>&lt;script&gt;alert(1)&lt;/script&gt; "
                                   "because the…")
    # must not happen: a cell's text wider than its cell (it ran into the next cell at ~270 px)
    for row in cells["text"]:
        for cell in row:
            assert 1 <= len(cell_lines(cell)) <= figures.CELL_LINES
            assert all(figures.text_px(line, figures.CELL_FONT_PX) <= room for line in cell_lines(cell)), cell
    assert cells["customdata"][0][0].startswith("the capital is &lt;b&gt;Paris") and "%{customdata}" in \
        cells["hovertemplate"]
    # one answer, one colour: Agent 1's and the third agent's answer, and Agent 2's, in both charts
    timeline_color = {row: figures.cell_color(cells, row, 0) for row in range(3)}
    bar_color = dict(enumerate(votes["data"][0]["marker"]["color"]))
    assert timeline_color == bar_color
    assert timeline_color[0] == timeline_color[2] != timeline_color[1]


LONG_NUMBER = "1303211111232111133445678" + "9" * 140  # a small model's "answer" (researcher's trial)


def timeline_of(rounds: int, answers: dict[str, str]):
    """The timeline figure of `rounds` rounds in which each agent gives its answer in `answers`."""
    report = {"rounds": [{"round": r, "answers": dict(answers)} for r in range(1, rounds + 1)], "agents": {}}
    return figures.timeline_figure(SimpleNamespace(agents=list(answers)), report)


@pytest.mark.parametrize("rounds", [1, 2, 3, 5])
def test_a_timeline_cell_holds_what_fits_it_and_the_hover_the_whole_answer(rounds):
    answers = {"Agent 1": LONG_NUMBER, "Agent 2": "The task is to verify that 91 must be yes",
               "Agent 3": 'A person asked you, "How many 7s are there?"'}
    cells = timeline_of(rounds, answers).data[0]
    room = figures.cell_width_px(rounds, list(answers))
    assert room >= figures.MIN_CELL_TEXT_PX
    for row, answer in enumerate(answers.values()):
        for col in range(rounds):
            lines = cell_lines(cells.text[row][col])
            # the answer, or its start cut with … (must not happen: a line wider than its cell, or no text)
            assert lines and len(lines) <= figures.CELL_LINES
            assert all(figures.text_px(line, figures.CELL_FONT_PX) <= room for line in lines), lines
            said = "".join(lines).replace(" ", "")
            whole = answer.replace(" ", "")
            assert whole.startswith(said[:-1]) and said.endswith("…") if said != whole else True
            assert cells.customdata[row][col] == html.escape(answer, quote=False)  # the whole answer on hover
    assert cell_lines(cells.text[0][0])[0].startswith("1303211")  # a long number is broken, not dropped
    if rounds == 1:
        assert cell_lines(cells.text[1][0]) == ["The task is to verify that 91 must be yes"]  # all of it fits


def test_a_timeline_of_many_rounds_names_the_answers_in_a_legend_instead():
    answers = {"Agent 1": "Paris", "Agent 2": "Lyon <b>", "Agent 3": "Paris"}
    fig = timeline_of(12, answers)
    assert figures.cell_width_px(12, list(answers)) < figures.MIN_CELL_TEXT_PX
    cells, legend = fig.data[0], fig.data[1:]
    assert all(cell == "" for row in cells.text for cell in row)  # must not happen: text in a 30 px cell
    assert [(t.name, t.marker.color) for t in legend] == [
        ("Paris", figures.cell_color(cells, 0, 0)), ("Lyon &lt;b&gt;", figures.cell_color(cells, 1, 0))]
    assert all(t.showlegend for t in legend)
    assert fig.layout.title.subtitle.text == "one colour per answer; legend: the answers"


@pytest.mark.parametrize("rounds", [1, 12])
def test_the_timelines_subtitle_fits_with_changes_and_with_a_legend(rounds):
    report = {"rounds": [{"round": r, "answers": {"Agent 1": f"answer {r % 2}"}} for r in range(1, rounds + 1)],
              "agents": {"Agent 1": {"changes": [{"round": 1, "agent": "Agent 1", "from": "a", "to": "b"}]}}}
    sub = figures.timeline_figure(SimpleNamespace(agents=["Agent 1"]), report).layout.title.subtitle.text
    assert sub.startswith("black frame: changed answer; ") and "…" not in sub  # must not happen: a cut hint


def test_every_title_fits_beside_the_camera(debate_id):
    at = open_debate(debate_id)
    at.button(key="reveal_reference").click().run() if "reveal_reference" in keys(at) else None
    drawn = ["plot_diversity", "plot_entropy", "plot_agreement", "plot_votes", "plot_timeline"]
    for key in drawn:
        spec, _ = chart_of(at, key)
        title = spec["layout"]["title"]
        assert (title["x"], title["xanchor"]) == (0, "left")  # at the left, away from the camera on the right
        head, sub = html.unescape(title["text"]), html.unescape(title["subtitle"]["text"])
        # must not happen: a title that runs under the camera (or one cut short)
        assert figures.text_px(head, figures.TITLE_FONT_PX * 1.1) <= figures.TITLE_PX and "…" not in head, key
        assert figures.text_px(sub, figures.SUBTITLE_FONT_PX) <= figures.TITLE_PX and "…" not in sub, key
        assert spec["layout"]["margin"]["t"] >= 70  # room for the title and its subtitle
    spec, _ = chart_of(at, "plot_diversity")
    assert (spec["layout"]["title"]["text"], spec["layout"]["title"]["subtitle"]["text"]) == (
        "Answer similarity (SBERT)", "cosine: final answers and whole replies")
    # a caller's long title (the Compare page's) is split into a title and a subtitle
    fig = figures.line_figure({"a": [(1, 0.5)]}, "Agreement (share holding the most common answer)", "share")
    assert (fig.layout.title.text, fig.layout.title.subtitle.text) == ("Agreement",
                                                                       "share holding the most common answer")


def test_charts_are_one_per_row_and_the_agent_table_fits(debate_id):
    at = open_debate(debate_id)
    in_columns = {node.key for column in at.columns for node in column if getattr(node, "key", None)}
    charts = {key for key in keys(at) if key.startswith("plot_")}
    assert {"plot_votes", "plot_timeline"} <= charts
    assert charts & in_columns == set()  # must not happen: two charts side by side (~270 px each)
    table = at.get_by_key("agent_metrics").table[0].value
    assert list(table.columns) == ["agent", "model", "consistency", "initial → final", "changes"]
    # no reference, so no states: a dash, never a lone "-" (st.table reads it as a Markdown bullet)
    assert list(table["initial → final"]) == ["—"] * 3 and "-" not in table.astype(str).values.ravel()


def test_every_chart_keeps_the_png_camera_and_downloads_as_html(debate_id):
    at = open_debate(debate_id)
    drawn = ["plot_diversity", "plot_entropy", "plot_agreement", "plot_votes", "plot_timeline"]
    buttons = {b.key: b for b in at.get("download_button")}
    for key in drawn:
        _, config = chart_of(at, key)
        assert config["displayModeBar"] is True and config["modeBarButtons"] == [["toImage"]]
        assert config["toImageButtonOptions"] == {"format": "png", "scale": 2, "filename": key}
    # Each download button says which chart it saves (its label is its accessible name): never five "HTML".
    labels = [buttons[f"html_{key}"].proto.label for key in drawn]
    assert buttons["html_plot_votes"].proto.label == "Download the vote chart as HTML"
    assert len(set(labels)) == len(drawn) and all(label.startswith("Download the ") for label in labels), labels
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
    assert texts(at.get_by_key("decision_answer")) == "#### B"  # read as a choice, as every display shows it
    # no spoiler: nothing on the page says whether the decision matches before the reveal
    assert "decision_agreement" not in keys(at) and "matches" not in texts(at.main) and "differs" not in texts(at.main)
    assert [e.label for e in card.expander] == ["Full winning text (Agent 1)", "Solutions and scores"]
    at.button(key="reveal_reference").click().run()
    # "Paris" is option B's text: the answer type reads both as B (a string compare would say they differ)
    assert texts(at.get_by_key("decision_agreement")) == "✅ the decision matches it \\(read as a choice answer\\)"


def test_a_long_decision_is_a_one_line_headline_with_the_whole_answer_a_click_away():
    def count(messages, info) -> str:
        meta = info["metadata"]
        return "1" if meta["kind"] == "vote" else f"I count the digits.\nFinal answer: {LONG_NUMBER}"

    debate = scripted_debate("charts_long", count, {
        "question": "Is 91 a prime number?", "rounds": 1, "max_rounds": 1, "protocol": "simple_voting",
        "agents": [{"label": f"Agent {i}", "model": "scripted/charts_long"} for i in (1, 2)]})
    at = open_debate(debate)
    headline = texts(at.get_by_key("decision_answer"))
    # must not happen: the 165 digits as a three-line heading
    assert headline == f"#### {LONG_NUMBER[:59]}…" and len(headline) - len("#### ") == 60
    card = at.get_by_key("decision_card")
    assert [e.label for e in card.expander][0] == "Whole answer and winning text (Agent 1)"
    whole = [t.value for t in card.expander[0].text]
    assert whole == [LONG_NUMBER, f"I count the digits.\nFinal answer: {LONG_NUMBER}"]


UNREADABLE = {1: {"Agent 1": "Maybe.", "Agent 2": "It depends.", "Agent 3": "Final answer: yes"},
              2: {"Agent 1": "Perhaps.", "Agent 2": "Not sure.", "Agent 3": "Unclear."}}


def unreadable_reply(messages, info) -> str:
    meta = info["metadata"]
    if meta["kind"] == "vote":
        return "1"
    if meta["kind"] == "extraction":
        return '{"answer": "no answer"}'
    return UNREADABLE[meta["round"]][meta["agent"]]


def test_a_round_without_readable_answers_is_a_gap_with_a_note_not_0_bits():
    """The researcher's yes/no debate: only Agent 3 answered in round 1, nobody in round 2."""
    debate = scripted_debate("unreadable", unreadable_reply, {
        "question": "Is 91 a prime number?", "rounds": 2, "max_rounds": 2, "protocol": "simple_voting",
        "answer_type": "yes_no",
        "agents": [{"label": f"Agent {i}", "model": "scripted/unreadable"} for i in (1, 2, 3)]})
    at = open_debate(debate)
    entropy, _ = chart_of(at, "plot_entropy")
    assert entropy["data"][0]["y"] == [0.0, None]  # must not happen: 0 bits for round 2
    notes = {a["x"]: a["text"] for a in entropy["layout"]["annotations"]}
    assert notes == {1: "1 of 3 answers readable", 2: "no readable answers"}
    assert entropy["layout"]["title"]["subtitle"]["text"] == "of readable answers; 0 bits: all agree"
    agreement, _ = chart_of(at, "plot_agreement")
    assert agreement["data"][0]["y"] == [0.0, None]  # all agree: none in round 1 (1 of 3), no value in round 2
    timeline, _ = chart_of(at, "plot_timeline")
    cells = timeline["data"][0]
    nothing = "no readable answer"
    assert cells["customdata"] == [[nothing, nothing], [nothing, nothing], ["yes", nothing]]
    assert all(cell for row in cells["text"] for cell in row)  # must not happen: a blank cell
    # the Compare page's curves: an unreadable answer holds no answer, a round without one is a gap
    view = DebateView.from_store(Store(), debate)
    assert plots.agreement_series(view) == [(1, pytest.approx(1 / 3)), (2, None)]
    assert plots.entropy_series(view) == [(1, 0.0), (2, None)]


CENTS = {"Agent 1": "the ball costs 5 cents", "Agent 2": "five cents is what the ball costs", "Agent 3": "Lyon"}


def cents_reply(messages, info) -> str:
    meta = info["metadata"]
    return "1" if meta["kind"] == "vote" else f"Let me see.\nFinal answer: {CENTS[meta['agent']]}"


def test_one_answer_the_metrics_count_is_one_colour_whatever_its_words(monkeypatch):
    """The teacher's bat-and-ball debate: SBERT holds two agents' different words for one answer
    (entropy 0 bits), so the charts must colour them alike (they were blue and orange)."""
    monkeypatch.setattr(plots, "EMBED", lambda texts: [[1.0, 0.0] if "cent" in t else [0.0, 1.0] for t in texts])
    debate = scripted_debate("charts_cents", cents_reply, {
        "question": "A bat and a ball cost $1.10 together...", "rounds": 1, "max_rounds": 1,
        "protocol": "simple_voting", "agents": [{"label": a, "model": "scripted/charts_cents"} for a in CENTS]})
    at = open_debate(debate)
    timeline, _ = chart_of(at, "plot_timeline")
    votes, _ = chart_of(at, "plot_votes")
    cells = timeline["data"][0]
    assert [html.unescape(row[0]) for row in cells["customdata"]] == list(CENTS.values())  # each cell its own words
    colour = [figures.cell_color(cells, row, 0) for row in range(3)]
    # must not happen: two colours for the one answer (Agents 1 and 2), one colour for two (Agent 3's)
    assert colour[0] == colour[1] != colour[2]
    assert votes["data"][0]["marker"]["color"] == colour  # the votes chart agrees with the timeline
    report = plots.debate_metrics(DebateView.from_store(Store(), debate))
    assert report["rounds"][0]["keys"]["Agent 1"] == report["rounds"][0]["keys"]["Agent 2"]
    # the Compare page's agreement curve counts the same answers: 2 of 3 hold one (never 1 of 3)
    assert plots.agreement_series(DebateView.from_store(Store(), debate)) == [(1, pytest.approx(2 / 3))]
