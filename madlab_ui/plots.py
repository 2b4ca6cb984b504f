"""Plotly charts and tables of a debate's metrics, from a `DebateView` and its metric report.

The numbers come from `mad_core.metrics.report` (the report of the debate: answers read with its
answer type, SBERT similarity of the final answers and of whole replies, entropy, log-likelihood,
agreement, disagreement, accuracy, per-agent states and changes). A finished debate's report is
the database's cached one (`debate_report`); a running debate's is computed here over its
complete rounds only, and kept per (debate, complete rounds), so a live refresh recomputes
nothing until a round completes; embeddings are memoised in this process. The first SBERT call
loads the model (seconds), so `warm_up()` loads it in a background thread when a debate starts.
Tests may set `EMBED` to a fake embedder.

The figures themselves are built in `mad_core.figures` (shared with the printable handout):
one answer -> colour map per debate, shortened and wrapped labels, model text escaped for plotly.
Every chart downloads as PNG (the camera in its toolbar, always shown) and as a standalone HTML
file (plotly.js embedded; built only when its `html_{chart key}` button is clicked).

Nothing that depends on the reference answer (correct, accuracy, log-likelihood) is shown
while a debate runs, nor before the page's "Reveal reference answer" was pressed: no spoiler.
What it must not do: compute a protocol, draw anything that is not in the view or its report,
or render model text as HTML.
"""
from __future__ import annotations

import functools
import threading
from collections import Counter
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from mad_core import figures, glossary, metrics
from mad_core.metrics import report as reports
from mad_core.view import DISCUSSION_KINDS, DebateView

from . import transcript
from .common import md_escape, open_store, short

EMBED = None  # None = the bundled SBERT model; tests put a cheap function here
EMPTY = "Appears after the first round."
line_figure = figures.line_figure  # the Compare page draws its lines with it
# The plot's own toolbar: only the camera (PNG download, twice the size on screen), always shown.
PLOT_CONFIG = {"displayModeBar": True, "displaylogo": False, "modeBarButtons": [["toImage"]],
               "toImageButtonOptions": {"format": "png", "scale": 2}}
MAX_CACHED = 64  # reports kept in this process
MAX_MEMO_TEXTS = 1000  # texts whose embeddings the in-process memo keeps (~12 KB each); then it starts afresh
# What each chart's HTML download button names (its label is its accessible name: never five "HTML").
CHART_NAMES = {"plot_diversity": "answer similarity", "plot_entropy": "entropy", "plot_agreement": "agreement",
               "plot_accuracy": "accuracy", "plot_votes": "vote", "plot_timeline": "answer timeline",
               "compare_diversity": "diversity comparison", "compare_entropy": "entropy comparison",
               "compare_agreement": "agreement comparison"}
num = reports.format_number  # a metric as people read it ("-" for None)

_cache: dict[tuple, dict[str, Any]] = {}  # (debate, state, embedder) -> report
_memos: dict[int, reports.MemoEmbedder] = {}  # id(EMBED) -> its in-process embedding memo
_cache_lock = threading.Lock()
_warm = threading.Event()


def warm_up() -> None:
    """Load the SBERT model in the background (once per process) so the first round's plot is quick."""
    if EMBED is not None or _warm.is_set():
        return
    _warm.set()
    threading.Thread(target=metrics.default_embed, args=(["warm up"],), name="madlab-sbert-warmup",
                     daemon=True).start()


# ----- the report -----------------------------------------------------------------------------
def complete_rounds(view: DebateView) -> set[int]:
    """Rounds whose discussion is over (later round begun, decision step begun, or debate ended)."""
    return reports.complete_rounds(view)


def _memo() -> reports.MemoEmbedder:
    with _cache_lock:
        memo = _memos.get(id(EMBED))
        if memo is None or memo.embed is not EMBED or len(memo.vectors) > MAX_MEMO_TEXTS:
            memo = _memos[id(EMBED)] = reports.MemoEmbedder(EMBED)
        return memo


def debate_metrics(view: DebateView) -> dict[str, Any]:
    """The metric report of the debate in `view` (complete rounds only while it runs)."""
    done = complete_rounds(view)
    state = tuple((t.id, t.status) for t in view.turns if t.kind in DISCUSSION_KINDS and t.round in done)
    decided = None if view.decision is None else (view.decision.round, view.decision.answer)
    key = (view.debate_id, view.status, len(view.turns), state, decided, id(EMBED))
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    found = None
    if view.status != "running" and view.debate_id:
        try:
            store = open_store()
            try:
                found = reports.debate_report(store, view.debate_id, embed=EMBED)
            finally:
                store.close()
        except LookupError:  # a view of a debate this database does not hold
            found = None
    if found is None:
        found = reports.compute_report(view, embed=_memo(), rounds=done, embedder=reports.embedder_name(EMBED))
    with _cache_lock:
        while len(_cache) >= MAX_CACHED:
            _cache.pop(next(iter(_cache)))
        _cache[key] = found
    return found


# ----- series (also used by the Compare page) -----------------------------------------------------
def diversity_series(view: DebateView) -> list[tuple[int, float | None]]:
    """Answer diversity of each complete round: 1 - SBERT similarity of the agents' final answers
    (seed 000 Table 1)."""
    return [(rnd, None if value is None else 1.0 - value)
            for rnd, value in figures.round_series(debate_metrics(view), "answer_similarity")]


def entropy_series(view: DebateView) -> list[tuple[int, float]]:
    """Entropy (bits) of the agents' answers, read with the debate's answer type, per complete round."""
    return figures.round_series(debate_metrics(view), "entropy")


def agreement_series(view: DebateView) -> list[tuple[int, float | None]]:
    """Share of agents holding the most common answer in each complete round, answers read with the
    debate's answer type (the report's answer keys: different words it holds for one answer count
    as one): an unreadable answer holds none; None (a gap) for a round without any readable answer."""
    out = []
    for row in debate_metrics(view).get("rounds") or []:
        answers = [figures.answer_key(row, agent) for agent in row.get("answers") or {}]
        held = Counter(a for a in answers if a is not None)
        out.append((row["round"], max(held.values()) / len(answers) if held else None))
    return out


# ----- rendering ------------------------------------------------------------------------------
def chart_name(container_key: str, title: str = "") -> str:
    """What a chart's buttons call it: "vote" ("Download the vote chart as HTML")."""
    return CHART_NAMES.get(container_key) or title.lower() or container_key


def chart_config(container_key: str, title: str = "") -> dict[str, Any]:
    """st.plotly_chart's config: the camera button (PNG named after the chart) always visible, its
    tooltip and accessible name saying which chart it saves (plotly's words for it, replaced through
    the figure's own `locales`: five cameras are never five "Download plot as a PNG")."""
    png = {"Download plot as a PNG": f"Download the {chart_name(container_key, title)} chart as PNG"}
    return {**PLOT_CONFIG, "toImageButtonOptions": {**PLOT_CONFIG["toImageButtonOptions"], "filename": container_key},
            "locales": {"en-US": {"dictionary": png}, "en": {"dictionary": png}}}


def chart_html(fig: go.Figure, container_key: str) -> str:
    """The chart as a standalone HTML page (what its `html_{key}` button downloads)."""
    return figures.figure_html(fig, chart_config(container_key))


def download_label(container_key: str, title: str) -> str:
    """The HTML download button's words, which say which chart: "Download the vote chart as HTML"."""
    return f"Download the {chart_name(container_key, title)} chart as HTML"


def chart(container_key: str, title: str, fig: go.Figure | None, empty: str = EMPTY) -> None:
    """A chart in its box, keyed `container_key`, with the PNG camera in its toolbar and an
    `html_{container_key}` button that downloads it as a standalone HTML file (built only when
    clicked: Streamlit calls `data` then, in another thread)."""
    with st.container(key=container_key, border=True):
        if fig is None:
            st.markdown(f"**{title}**")
            st.caption(empty)
            return
        st.plotly_chart(fig, key=f"chart_{container_key}", config=chart_config(container_key, title))
        st.download_button(download_label(container_key, title), data=functools.partial(chart_html, fig, container_key),
                           file_name=f"{container_key}.html", mime="text/html", key=f"html_{container_key}",
                           on_click="ignore", icon=":material/download:",
                           help="The chart as a standalone HTML file (works offline); the camera above saves a PNG.")


def revealed(view: DebateView) -> bool:
    """Whether this session revealed the debate's reference (`transcript.reveal_key`)."""
    return bool(st.session_state.get(transcript.reveal_key(view)))


def render_summary(view: DebateView, report: dict[str, Any]) -> None:
    """The debate's numbers in one box (keyed metrics_summary)."""
    summary = report.get("summary") or {}
    over = view.status != "running" and revealed(view)
    with st.container(key="metrics_summary", border=True):
        terms = ["rounds_to_decision", "answer_similarity", "agreement_all_auc", "agreement_majority_auc"]
        if over and (view.config or {}).get("reference"):
            terms = ["correct", "accuracy_strict", "accuracy_smooth", "accuracy_auc", *terms]
        if report.get("self_bleu_diversity") is not None:
            terms.append("self_bleu_diversity")
        if (report.get("judge") or {}).get("side"):
            terms.append("judge")
        st.markdown(f"**Metrics** (answers read as: {md_escape(str(report.get('answer_type')))})",
                    help=glossary.help_lines("answer_type", *terms))  # each number's sentence (the Glossary page)
        facts = [f"rounds to decision {num(summary.get('rounds_to_decision'))}",
                 f"final-answer similarity (SBERT, last round) {num(summary.get('answer_similarity'))}",
                 f"all agree AUC {num(summary.get('agreement_all_auc'))}",
                 f"majority agrees AUC {num(summary.get('agreement_majority_auc'))}"]
        if over and (view.config or {}).get("reference"):
            facts = [f"correct {num(summary.get('correct'))}",
                     f"accuracy strict {num(summary.get('accuracy_strict'))} / smooth "
                     f"{num(summary.get('accuracy_smooth'))}",
                     f"accuracy AUC {num(summary.get('accuracy_auc_strict'))} / smooth "
                     f"{num(summary.get('accuracy_auc_smooth'))}", *facts]
        if report.get("self_bleu_diversity") is not None:
            facts.append(f"Self-BLEU diversity of the two sides {num(report['self_bleu_diversity'])}")
        judge = report.get("judge")
        if judge and judge.get("side"):
            own = {True: "its own model family's side", False: "the other family's side", None: "no family's side"}
            facts.append(f"judge supported the {judge['side']} ({own[judge.get('supports_own_family')]})")
        st.markdown(" · ".join(facts))
        for problem in report.get("problems") or []:
            st.caption(md_escape(problem))


def render_agents(report: dict[str, Any]) -> None:
    """Per agent: model, path consistency, initial and final state (seed 001 §6.2), the number of
    answer changes, and who changed their answer when, after what (keyed agent_metrics). Calls,
    tokens, seconds and cost are the usage table's ("Cost and progress", drawn on the same pages):
    ten columns did not fit the Debate page's stage column."""
    agents = report.get("agents") or {}
    with st.container(key="agent_metrics", border=True):
        st.markdown("**Agents**")  # one help icon a page section: its terms are in the Glossary
        if not agents:
            st.caption(EMPTY)
            return
        rows = [{"agent": md_escape(label), "model": md_escape(row.get("model") or ""),  # cells are Markdown
                 "consistency": _cell(num(row.get("path_consistency"))),
                 "initial → final": _states(row), "changes": len(row.get("changes") or [])}
                for label, row in agents.items()]
        st.table(rows, hide_index=True)
        st.caption("consistency: path consistency of the agent's answers (seed 003 Eq. 2); calls, tokens and "
                   "cost per agent: Cost and progress.")
        changes = [c for row in agents.values() for c in row.get("changes") or []]
        if changes:
            st.markdown("**Who changed their answer when**")
            for change in sorted(changes, key=lambda c: c["round"]):
                st.markdown(f"- round {change['round']}: **{md_escape(change['agent'])}** "
                            f"{md_escape(short(change.get('from'), 60))} → {md_escape(short(change.get('to'), 60))}")
                before = change.get("before")
                if before:
                    st.caption(f"just before, {md_escape(before['agent'])} said: {md_escape(before['text'])}")


def _cell(text: str) -> str:
    """A table cell's text: st.table reads cells as Markdown, where a lone "-" is a list bullet."""
    return "—" if text == "-" else text


def _states(row: dict[str, Any]) -> str:
    start, end = row.get("initial_state"), row.get("final_state")
    if start is None:
        return "—"  # no reference: no state (a "-" would show as a bullet)
    if isinstance(start, dict):  # per player (Knight-Knave-Spy; the players' names are the user's: escaped)
        return "; ".join(f"{md_escape(player)}: {state} → {(end or {}).get(player, '—')}"
                         for player, state in start.items())
    return f"{start} → {end or '—'}"


def render_plots(view: DebateView) -> None:
    """The metrics: summary, the charts one per row (plot_diversity = similarity of final answers and
    of whole replies, plot_entropy, plot_agreement, plot_accuracy, plot_votes, plot_timeline) and the
    per-agent table."""
    with st.spinner("Computing the metrics (the first time loads the SBERT model)…"):
        report = debate_metrics(view)
    render_summary(view, report)
    charts = figures.debate_figures(view, report, revealed=revealed(view))
    empty = {"plot_votes": "Appears after the first round's vote or decision attempt."}
    # One chart per row: two side by side were ~270 px wide in the Debate page's stage column
    # (titles cut, cells too small); the figures are made to read at figures.CHART_MIN_WIDTH_PX.
    for key, (title, fig) in charts.items():
        chart(key, title, fig, empty.get(key, EMPTY))
    render_agents(report)
