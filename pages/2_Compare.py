"""Compare: pick stored debates (`compare_ids`) to see their decisions side by side and their
diversity / entropy / agreement per round overlaid."""
from __future__ import annotations

import streamlit as st

from mad_core.view import DebateView
from madlab_ui import plots, transcript
from madlab_ui.common import id8, md_escape, open_store, page_setup, short

page_setup("Compare")
st.title("Compare debates")
store = open_store()
debates = {row["id"]: row for row in store.list_debates()}
chosen = st.multiselect("Debates", list(debates), key="compare_ids", placeholder="pick two or more debates",
                        format_func=lambda d: f"{id8(d)} · {short(debates[d]['question'], 60)} · "
                                              f"{debates[d]['protocol']} · {debates[d]['status']}")
if not chosen:
    st.info("Pick debates to compare their decisions and how their answers evolved.")
    st.stop()

views = {d: DebateView.from_store(store, d) for d in chosen}
names = {d: f"{id8(d)} ({debates[d]['protocol']})" for d in chosen}
with st.container(key="compare_decisions"):
    for column, (debate_id, view) in zip(st.columns(len(chosen)), views.items()):
        with column, st.container(border=True, key=f"compare_{id8(debate_id)}"):
            st.markdown(f"**{md_escape(names[debate_id])}**")
            st.caption(md_escape(short(view.config.get("question"), 160)))
            st.caption(f"{view.config.get('paradigm')} · {len(view.agents)} agents · status {view.status}")
            if view.decision is not None:
                st.markdown(view.decision.answer or "(empty answer)")
                winner = view.decision.winner_agent or "-"
                notes = " · forced" if view.decision.forced else ""
                notes += " · fallback" if view.decision.fallback else ""
                st.caption(f"round {view.decision.round} · winner {md_escape(winner)}{notes}")
            else:
                st.caption("no decision")
            transcript.render_usage_line(view)

for key, title, ytitle, series in (
    ("compare_diversity", "Answer diversity (SBERT)", "diversity", plots.diversity_series),
    ("compare_entropy", "Entropy of answers", "bits", plots.entropy_series),
    ("compare_agreement", "Agreement (share holding the most common answer)", "share", plots.agreement_series),
):
    with st.spinner(f"Computing {title.lower()}…"):
        data = {names[d]: series(v) for d, v in views.items()}
    fig = plots.line_figure(data, title, ytitle) if any(data.values()) else None
    plots.chart(key, title, fig)
