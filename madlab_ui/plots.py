"""Plotly charts and tables of a debate's metrics, from a `DebateView` and its metric report.

The numbers come from `mad_core.metrics.report` (the report of the debate: answers read with its
answer type, SBERT similarity of the final answers and of whole replies, entropy, log-likelihood,
agreement, disagreement, accuracy, per-agent states and changes). A finished debate's report is
the database's cached one (`debate_report`); a running debate's is computed here over its
complete rounds only, and kept per (debate, complete rounds), so a live refresh recomputes
nothing until a round completes; embeddings are memoised in this process. The first SBERT call
loads the model (seconds), so `warm_up()` loads it in a background thread when a debate starts.
Tests may set `EMBED` to a fake embedder.

While a debate runs, nothing that depends on the reference answer is drawn (accuracy,
log-likelihood): the reference stays hidden until the debate is over.
What it must not do: compute a protocol, draw anything that is not in the view or its report,
or render model text as HTML.
"""
from __future__ import annotations

import threading
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from mad_core import metrics
from mad_core import registry
from mad_core.metrics import report as reports
from mad_core.protocols.decision import Protocol
from mad_core.view import DISCUSSION_KINDS, DebateView

from .common import md_escape, open_store, short

EMBED = None  # None = the bundled SBERT model; tests put a cheap function here
EMPTY = "Appears after the first round."
CATEGORY_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6",
                   "#9d755d", "#bab0ac"]
MAX_CACHED = 64  # reports kept in this process
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
        if memo is None or memo.embed is not EMBED:
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


def _round_series(report: dict[str, Any], name: str) -> list[tuple[int, float | None]]:
    return [(row["round"], row.get(name)) for row in report.get("rounds") or []]


# ----- series (also used by the Compare page) -----------------------------------------------------
def diversity_series(view: DebateView) -> list[tuple[int, float | None]]:
    """Answer diversity of each complete round: 1 - SBERT similarity of the agents' final answers
    (seed 000 Table 1)."""
    return [(rnd, None if value is None else 1.0 - value)
            for rnd, value in _round_series(debate_metrics(view), "answer_similarity")]


def entropy_series(view: DebateView) -> list[tuple[int, float]]:
    """Entropy (bits) of the agents' answers, read with the debate's answer type, per complete round."""
    return _round_series(debate_metrics(view), "entropy")


def agreement_series(view: DebateView) -> list[tuple[int, float]]:
    """Share of agents holding the most common answer in each complete round."""
    done = complete_rounds(view)
    return [(rnd, metrics.agreement(list(a.values()))) for rnd, a in view.answers_by_round() if rnd in done]


def vote_rounds(view: DebateView) -> list[dict[str, Any]]:
    """Per round with votes or decision attempts: {"round", "unit", "labels", "counts"}."""
    protocol = view.config.get("protocol", "")
    try:
        traits = registry.get("protocol", protocol)
    except Exception:  # noqa: BLE001 - a debate stored with a protocol this version lacks
        traits = Protocol
    rounds = sorted({v.round for v in view.votes} | {a.round for a in view.attempts})
    out = []
    for rnd in rounds:
        attempt = next((a for a in reversed(view.attempts) if a.round == rnd), None)
        votes = view.votes_of_round(rnd)
        solutions = attempt.solution_agents if attempt and attempt.solution_agents else view.agents
        n = max(1, len(solutions))
        names = [f"Solution {i + 1} ({solutions[i]})" if i < len(solutions) else f"Solution {i + 1}"
                 for i in range(n)]
        if traits.casts_ballots and votes:
            ballots = [v.ballot if v.valid else None for v in votes if v.protocol == protocol]
            try:
                breakdown = metrics.vote_breakdown(protocol, ballots, n)
            except ValueError:
                continue
            out.append({"round": rnd, "unit": breakdown["unit"], "labels": names, "counts": breakdown["counts"]})
        elif votes:  # no agent ballots: a judge's picks
            counts = [0.0] * n
            for v in votes:
                if v.valid and isinstance(v.ballot, int) and v.ballot < n:
                    counts[v.ballot] += 1
            out.append({"round": rnd, "unit": "judge's pick", "labels": names, "counts": counts})
        elif attempt and attempt.scores:
            labels = (view.agents if traits.scores_per_agent else attempt.solution_agents) or names
            out.append({"round": rnd, "unit": traits.score_unit, "labels": list(labels)[:len(attempt.scores)],
                        "counts": list(attempt.scores)})
    return out


# ----- figures --------------------------------------------------------------------------------
def _layout(fig: go.Figure, title: str, ytitle: str, xtitle: str = "round") -> go.Figure:
    fig.update_layout(title=title, height=300, margin=dict(l=10, r=10, t=40, b=10), xaxis_title=xtitle,
                      yaxis_title=ytitle, legend=dict(orientation="h", y=-0.25))
    return fig


def line_figure(series: dict[str, list[tuple[int, float | None]]], title: str, ytitle: str) -> go.Figure:
    """One line per named series of (round, value)."""
    fig = go.Figure()
    for name, points in series.items():
        fig.add_trace(go.Scatter(x=[r for r, _ in points], y=[v for _, v in points], mode="lines+markers",
                                 name=name, connectgaps=False))
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, title, ytitle)


def report_figure(report: dict[str, Any], traces: dict[str, str], title: str, ytitle: str) -> go.Figure | None:
    """A line per report column (`traces`: legend name -> per-round key); None before any round."""
    if not report.get("rounds"):
        return None
    fig = line_figure({name: _round_series(report, column) for name, column in traces.items()}, title, ytitle)
    if any(v is not None and v < 0 for column in traces.values() for _, v in _round_series(report, column)):
        fig.update_yaxes(rangemode="normal")  # log-likelihood is at most 0
    return fig


def votes_figure(rounds: list[dict[str, Any]], protocol: str) -> go.Figure:
    fig = go.Figure()
    for item in rounds:
        fig.add_trace(go.Bar(x=item["labels"], y=item["counts"], name=f"round {item['round']}"))
    unit = rounds[-1]["unit"] if rounds else ""
    fig.update_layout(barmode="group")
    return _layout(fig, f"{protocol}: {unit}", unit, xtitle="")


def timeline_figure(view: DebateView, report: dict[str, Any] | None = None) -> go.Figure | None:
    """Rows = agents, columns = rounds, color = the answer as the metrics read it (the debate's
    answer type: "B" and "(B) Paris" are one color); changed answers are circled."""
    report = report if report is not None else debate_metrics(view)
    rounds = report.get("rounds") or []
    if not rounds:
        return None
    round_names = [f"R{row['round']}" for row in rounds]
    seen = list(dict.fromkeys(label for row in rounds for label in row["answers"]))
    labels = [label for label in view.agents if label in seen] + [label for label in seen if label not in view.agents]
    answers = {label: [row["answers"].get(label) for row in rounds] for label in labels}
    categories = list(dict.fromkeys(a for label in labels for a in answers[label] if a is not None))
    z = [[None if a is None else categories.index(a) for a in answers[label]] for label in labels]
    text = [[short(a, 24) if a is not None else "" for a in answers[label]] for label in labels]
    n = max(1, len(categories))
    scale = []
    for i in range(n):
        color = CATEGORY_COLORS[i % len(CATEGORY_COLORS)]
        scale += [[i / n, color], [(i + 1) / n, color]]
    fig = go.Figure(go.Heatmap(z=z, x=round_names, y=labels, text=text, texttemplate="%{text}", zmin=-0.5,
                               zmax=n - 0.5, colorscale=scale, showscale=False, xgap=3, ygap=3,
                               hovertemplate="%{y}, %{x}: %{text}<extra></extra>"))
    changes = [c for agent in (report.get("agents") or {}).values() for c in agent.get("changes") or []
               if f"R{c['round']}" in round_names]
    if changes:
        fig.add_trace(go.Scatter(x=[f"R{c['round']}" for c in changes], y=[c["agent"] for c in changes],
                                 mode="markers", name="changed answer",
                                 marker=dict(symbol="circle-open", size=26, color="black", line=dict(width=2))))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, "Answer timeline", "", xtitle="")


# ----- rendering ------------------------------------------------------------------------------
def chart(container_key: str, title: str, fig: go.Figure | None, empty: str = EMPTY) -> None:
    with st.container(key=container_key, border=True):
        if fig is None:
            st.markdown(f"**{title}**")
            st.caption(empty)
        else:
            st.plotly_chart(fig, key=f"chart_{container_key}", config={"displayModeBar": False})


def render_summary(view: DebateView, report: dict[str, Any]) -> None:
    """The debate's numbers in one box (keyed metrics_summary)."""
    summary = report.get("summary") or {}
    over = view.status != "running"
    with st.container(key="metrics_summary", border=True):
        st.markdown(f"**Metrics** (answers read as: {md_escape(str(report.get('answer_type')))})")
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
    """Per agent: model, calls, tokens, latency, estimated cost, path consistency, initial and
    final state (seed 001 §6.2), and who changed their answer when, after what (keyed agent_metrics)."""
    agents = report.get("agents") or {}
    with st.container(key="agent_metrics", border=True):
        st.markdown("**Agents**")
        if not agents:
            st.caption(EMPTY)
            return
        rows = [{"agent": label, "model": row.get("model") or "", "calls": row.get("calls", 0),
                 "tokens in": row.get("prompt_tokens", 0), "tokens out": row.get("completion_tokens", 0),
                 "seconds": f"{row.get('latency_s') or 0.0:.1f}",
                 "cost": reports.format_dollars(row.get("cost_usd"), "unknown"),
                 "path consistency": num(row.get("path_consistency")),
                 "initial → final": _states(row), "changes": len(row.get("changes") or [])}
                for label, row in agents.items()]
        st.table(rows)
        changes = [c for row in agents.values() for c in row.get("changes") or []]
        if changes:
            st.markdown("**Who changed their answer when**")
            for change in sorted(changes, key=lambda c: c["round"]):
                st.markdown(f"- round {change['round']}: **{md_escape(change['agent'])}** "
                            f"{md_escape(short(change.get('from'), 60))} → {md_escape(short(change.get('to'), 60))}")
                before = change.get("before")
                if before:
                    st.caption(f"just before, {md_escape(before['agent'])} said: {md_escape(before['text'])}")


def _states(row: dict[str, Any]) -> str:
    start, end = row.get("initial_state"), row.get("final_state")
    if start is None:
        return "-"
    if isinstance(start, dict):  # per player (Knight-Knave-Spy)
        return "; ".join(f"{player}: {state} → {(end or {}).get(player, '-')}" for player, state in start.items())
    return f"{start} → {end or '-'}"


def render_plots(view: DebateView) -> None:
    """The metrics: summary, the charts in a grid (plot_diversity = similarity of final answers and
    of whole replies, plot_entropy, plot_agreement, plot_accuracy, plot_votes, plot_timeline) and the
    per-agent table."""
    with st.spinner("Computing the metrics (the first time loads the SBERT model)…"):
        report = debate_metrics(view)
    over = view.status != "running"
    referenced = over and bool((view.config or {}).get("reference"))
    render_summary(view, report)
    votes = vote_rounds(view)
    left, right = st.columns(2)
    with left:
        chart("plot_diversity", "Answer similarity (SBERT)", report_figure(
            report, {"final answers": "answer_similarity", "whole replies": "reply_similarity"},
            "Answer similarity (SBERT cosine): final answers vs whole replies", "cosine similarity"))
        chart("plot_agreement", "Agreement", report_figure(
            report, {"all agree": "agree_all", "majority agrees": "agree_majority", "disagreement": "disagreement"},
            "Agreement and disagreement per round", "share"))
        chart("plot_votes", "Votes", votes_figure(votes, view.config.get("protocol", "")) if votes else None,
              "Appears after the first round's vote or decision attempt.")
    with right:
        entropy = {"entropy (bits)": "entropy"}
        if referenced:
            entropy["log-likelihood of the reference (log2)"] = "log_likelihood"
        chart("plot_entropy", "Entropy of answers", report_figure(report, entropy, "Entropy of the agents' answers",
                                                                   "bits"))
        if referenced:
            chart("plot_accuracy", "Accuracy", report_figure(
                report, {"strict": "accuracy_strict", "smooth (per part)": "accuracy_smooth"},
                "Accuracy of the round's majority answer", "accuracy"))
        chart("plot_timeline", "Answer timeline", timeline_figure(view, report))
    render_agents(report)
