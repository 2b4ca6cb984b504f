"""Plotly charts of a debate's metrics, from a `DebateView` only (numbers come from `mad_core.metrics`).

SBERT diversity is computed once per (debate, round, texts) and only for rounds that are
complete; the first call loads the embedding model (seconds), so `warm_up()` loads it in a
background thread when a debate starts. Tests may set `EMBED` to a fake embedder.
What it must not do: compute a protocol, or draw anything that is not in the view.
"""
from __future__ import annotations

import threading
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from mad_core import metrics
from mad_core import registry
from mad_core.protocols.decision import Protocol
from mad_core.view import DISCUSSION_KINDS, DebateView

from .common import short

EMBED = None  # None = the bundled SBERT model; tests put a cheap function here
EMPTY = "Appears after the first round."
CATEGORY_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6",
                   "#9d755d", "#bab0ac"]

_cache: dict[tuple, float | None] = {}
_cache_lock = threading.Lock()
_warm = threading.Event()


def warm_up() -> None:
    """Load the SBERT model in the background (once per process) so the first round's plot is quick."""
    if EMBED is not None or _warm.is_set():
        return
    _warm.set()
    threading.Thread(target=metrics.default_embed, args=(["warm up"],), name="madlab-sbert-warmup",
                     daemon=True).start()


# ----- series ---------------------------------------------------------------------------------
def complete_rounds(view: DebateView) -> set[int]:
    """Rounds whose discussion is over (later round begun, decision step begun, or debate ended)."""
    rounds = {t.round for t in view.turns if t.kind in DISCUSSION_KINDS}
    if view.status != "running":
        return rounds
    last = max(rounds, default=-1)
    done = {r for r in rounds if r < last}
    after = any(t.round == last and t.kind not in DISCUSSION_KINDS + ("persona",) for t in view.turns)
    if after or any(a.round == last for a in view.attempts):
        done.add(last)
    streaming = {t.round for t in view.turns if t.status == "streaming" and t.kind in DISCUSSION_KINDS}
    return done - streaming


def diversity_series(view: DebateView) -> list[tuple[int, float | None]]:
    """SBERT answer diversity (1 - mean pairwise cosine similarity) of each complete round."""
    done = complete_rounds(view)
    series = []
    for rnd, texts in view.texts_by_round():
        if rnd not in done:
            continue
        values = [texts[a] for a in sorted(texts)]
        key = (view.debate_id, rnd, tuple(values))
        with _cache_lock:
            known = key in _cache
            value = _cache.get(key)
        if not known:
            value = metrics.answer_diversity(values, embed=EMBED)
            with _cache_lock:
                _cache[key] = value
        series.append((rnd, value))
    return series


def entropy_series(view: DebateView) -> list[tuple[int, float]]:
    """Entropy (bits) of the agents' normalized answers in each complete round."""
    done = complete_rounds(view)
    return [(rnd, metrics.entropy(list(a.values()))) for rnd, a in view.answers_by_round() if rnd in done]


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


def votes_figure(rounds: list[dict[str, Any]], protocol: str) -> go.Figure:
    fig = go.Figure()
    for item in rounds:
        fig.add_trace(go.Bar(x=item["labels"], y=item["counts"], name=f"round {item['round']}"))
    unit = rounds[-1]["unit"] if rounds else ""
    fig.update_layout(barmode="group")
    return _layout(fig, f"{protocol}: {unit}", unit, xtitle="")


def timeline_figure(view: DebateView) -> go.Figure | None:
    """Rows = agents, columns = rounds, color = (normalized) answer; changed answers are circled."""
    by_round = view.answers_by_round()
    if not by_round:
        return None
    data = metrics.answer_timeline([answers for _, answers in by_round])
    round_names = [f"R{rnd}" for rnd, _ in by_round]
    labels = [label for label in view.agents if label in data["labels"]] + \
        [label for label in data["labels"] if label not in view.agents]
    categories = list(dict.fromkeys(a for label in labels for a in data["answers"][label] if a is not None))
    z = [[None if a is None else categories.index(a) for a in data["answers"][label]] for label in labels]
    text = [[short(a, 24) if a is not None else "" for a in data["answers"][label]] for label in labels]
    n = max(1, len(categories))
    scale = []
    for i in range(n):
        color = CATEGORY_COLORS[i % len(CATEGORY_COLORS)]
        scale += [[i / n, color], [(i + 1) / n, color]]
    fig = go.Figure(go.Heatmap(z=z, x=round_names, y=labels, text=text, texttemplate="%{text}", zmin=-0.5,
                               zmax=n - 0.5, colorscale=scale, showscale=False, xgap=3, ygap=3,
                               hovertemplate="%{y}, %{x}: %{text}<extra></extra>"))
    changes = data["changes"]
    if changes:
        fig.add_trace(go.Scatter(x=[round_names[c["round"]] for c in changes], y=[c["agent"] for c in changes],
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


def render_plots(view: DebateView) -> None:
    """The four live plots, in a 2 x 2 grid, keyed plot_diversity / plot_entropy / plot_votes / plot_timeline."""
    with st.spinner("Computing answer diversity (the first time loads the SBERT model)…"):
        diversity = diversity_series(view)
    entropy = entropy_series(view)
    votes = vote_rounds(view)
    left, right = st.columns(2)
    with left:
        chart("plot_diversity", "Answer diversity (SBERT)",
               line_figure({"diversity": diversity}, "Answer diversity (SBERT, 1 - cosine)", "diversity")
               if diversity else None)
        chart("plot_votes", "Votes", votes_figure(votes, view.config.get("protocol", "")) if votes else None,
               "Appears after the first round's vote or decision attempt.")
    with right:
        chart("plot_entropy", "Entropy of answers",
               line_figure({"entropy": entropy}, "Entropy of the agents' answers", "bits") if entropy else None)
        chart("plot_timeline", "Answer timeline", timeline_figure(view))
