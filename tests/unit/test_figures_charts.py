"""Charts a person can read (mad_core/figures.py): colours by the answer the metrics count, a
votes chart in which every ballot shows, agreement lines that never hide one another, and a
timeline without slivers of a cell's colour outside its frame."""
from __future__ import annotations

import html
from types import SimpleNamespace

from mad_core import figures

# Round 1 of the teacher's debate: Agents 1 and 3 in different words, one answer (SBERT: key k0).
REPORT = {"rounds": [
    {"round": 1, "answers": {"Agent 1": "You're welcome!", "Agent 2": "The current solution", "Agent 3": "Also it is"},
     "keys": {"Agent 1": "k0", "Agent 2": "k1", "Agent 3": "k0"}},
    {"round": 2, "answers": {"Agent 1": "It is 5 cents", "Agent 2": "The question is", "Agent 3": None},
     "keys": {"Agent 1": "k1", "Agent 2": "k2", "Agent 3": None}}],
    "agents": {"Agent 1": {"changes": [{"round": 2, "agent": "Agent 1", "from": "You're welcome!",
                                        "to": "It is 5 cents"}]}}}
AGENTS = ["Agent 1", "Agent 2", "Agent 3"]


def test_timeline_colours_follow_the_answer_key_and_cells_keep_their_words():
    fig = figures.timeline_figure(SimpleNamespace(agents=AGENTS), REPORT)
    cells = fig.data[0]
    colour = {(row, col): figures.cell_color(cells, row, col) for row in range(3) for col in range(2)}
    by_key: dict[str, set] = {}
    for (row, col), c in colour.items():
        key = REPORT["rounds"][col]["keys"][AGENTS[row]]
        if key is not None:
            by_key.setdefault(key, set()).add(c)
    # must not happen: two colours for one key, or one colour for two keys
    assert all(len(cs) == 1 for cs in by_key.values()) and len({next(iter(cs)) for cs in by_key.values()}) == 3
    assert colour[(0, 0)] == colour[(2, 0)] != colour[(1, 0)] == colour[(0, 1)]
    assert colour[(2, 1)] is None  # no readable answer: grey
    assert html.unescape(cells.text[0][0]) != html.unescape(cells.text[2][0])  # each cell its own words
    assert figures.answer_colors(REPORT, AGENTS) == {"k0": figures.CATEGORY_COLORS[0], "k1": figures.CATEGORY_COLORS[1],
                                                      "k2": figures.CATEGORY_COLORS[2]}


def test_a_report_without_keys_is_coloured_by_its_answers():
    old = {"rounds": [{"round": 1, "answers": {"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Paris"}}]}
    cells = figures.timeline_figure(SimpleNamespace(agents=AGENTS), old).data[0]
    assert figures.cell_color(cells, 0, 0) == figures.cell_color(cells, 2, 0) != figures.cell_color(cells, 1, 0)


def test_the_timeline_legend_names_a_key_by_its_first_words():
    report = {"rounds": [dict(REPORT["rounds"][0], round=r) for r in range(1, 13)], "agents": {}}
    fig = figures.timeline_figure(SimpleNamespace(agents=AGENTS), report)
    assert [(t.name, t.marker.color) for t in fig.data[1:]] == [
        ("You're welcome!", figures.CATEGORY_COLORS[0]), ("The current solution", figures.CATEGORY_COLORS[1])]


def test_a_changed_answers_frame_lies_on_its_cells_border():
    fig = figures.timeline_figure(SimpleNamespace(agents=AGENTS), REPORT)
    cells = fig.data[0]
    (frame,) = fig.layout.shapes
    # The frame's line fills the gap round the cell (cell edges at column +- 0.5, row +- 0.5): it
    # had been drawn inside the cell, leaving a strip of the cell's colour outside it that read as
    # a sliver of the next cell. Must not happen: cell colour between a frame and its cell's edge.
    assert (frame.x0, frame.x1, frame.y0, frame.y1) == (0.5, 1.5, -0.5, 0.5)
    assert frame.line.width >= cells.xgap and frame.line.width >= cells.ygap


CONSENSUS = [{"round": r, "unit": "agrees (1) or not (0)", "labels": AGENTS, "counts": [0.0, 0.0, 1.0],
              "answers": ["You're welcome!", "The current solution", "Also it is"], "keys": ["k0", "k1", "k0"],
              "stances": True} for r in (1, 2, 3)]


def test_every_consensus_ballot_shows_and_says_what_it_was():
    fig = figures.votes_figure(CONSENSUS, "majority_consensus", figures.answer_colors(REPORT, AGENTS))
    assert len(fig.data) == 3
    for bars in fig.data:
        # must not happen: a disagreement drawn as nothing (6 of 9 rows looked empty)
        assert list(bars.x) == [-1, -1, 1] and all(x != 0 for x in bars.x)
        assert list(bars.text) == ["disagrees", "disagrees", "agrees"] and bars.texttemplate == "%{text}"
        assert list(bars.marker.color) == [figures.CATEGORY_COLORS[0], figures.CATEGORY_COLORS[1],
                                           figures.CATEGORY_COLORS[0]]  # by key: Agents 1 and 3 alike
        assert bars.marker.pattern.shape is None
    assert [list(bars.y[0]) for bars in fig.data] == [[f"R{r}"] * 3 for r in (1, 2, 3)]  # grouped by round
    axis = fig.layout.xaxis
    assert list(axis.ticktext) == ["disagrees", "", "agrees"] and list(axis.tickvals) == [-1, 0, 1]
    # must not happen: legend swatches that match no bar (blue / red hatching / purple crosses)
    assert not any(bars.showlegend is not False for bars in fig.data)
    sub = html.unescape(fig.layout.title.subtitle.text)
    assert sub == "each agent's ballot; colour = its answer"
    assert "…" not in sub and figures.text_px(sub, figures.SUBTITLE_FONT_PX) <= figures.TITLE_PX  # never cut


def test_vote_counts_say_their_value_even_at_zero():
    item = {"round": 1, "unit": "votes", "labels": ["Solution 1 (Agent 1)", "Solution 2 (Agent 2)"],
            "counts": [2, 0], "answers": ["1111", "1.01"], "keys": ["k0", "k1"]}
    fig = figures.votes_figure([item], "simple_voting")
    (bars,) = fig.data
    assert list(bars.x) == [2, 0] and list(bars.text) == ["2", "0"] and bars.textposition == "outside"
    assert bars.showlegend is False and bars.y[0].startswith("Solution 1 (Agent 1)<br>→ 1111")
    assert html.unescape(fig.layout.title.subtitle.text) == "votes; colour = the answer"


def test_all_agree_and_majority_agrees_stay_visible_when_equal():
    rows = [{"round": r, "agree_all": v, "agree_majority": v, "disagreement": 1 - v} for r, v in ((1, 0.0), (2, 1.0))]
    fig = figures.report_figure({"rounds": rows}, {"all agree": "agree_all", "majority agrees": "agree_majority",
                                                   "disagreement": "disagreement"}, "Agreement", "share")
    under, over, _ = fig.data
    assert list(under.y) == list(over.y)  # the case: one line on top of the other
    assert (under.line.dash, under.marker.symbol) != (over.line.dash, over.marker.symbol)
    # the line underneath is wider and its markers bigger and open: it shows round the one on top
    assert under.line.width > over.line.width and under.marker.size > over.marker.size
    assert under.marker.symbol.endswith("-open")
    notes = [a for a in fig.layout.annotations if a.text == "all agree = majority agrees"]
    assert [(a.x, a.y) for a in notes] == [(1, 0.0)]  # said once, where they first meet


def test_lines_that_never_meet_get_no_note():
    rows = [{"round": 1, "agree_all": 0.0, "agree_majority": 1.0}]
    fig = figures.report_figure({"rounds": rows}, {"all agree": "agree_all", "majority agrees": "agree_majority"},
                                "Agreement", "share")
    assert not fig.layout.annotations


def test_only_the_agreement_lines_get_the_note():
    rows = [{"round": 1, "answer_similarity": 1.0, "reply_similarity": 1.0}]
    fig = figures.report_figure({"rounds": rows}, {"final answers": "answer_similarity",
                                                   "whole replies": "reply_similarity"}, "Similarity", "cosine")
    assert not fig.layout.annotations  # must not happen: a long note on a chart it was not made for
