"""MAD Lab, the Debate page: set up a multi-agent debate, start it, watch it stream and steer it.

The debate never runs inside this script: Start hands the config to `mad_core.live`, which runs
it in a background thread of the server; this page keeps only the debate id in
`st.session_state` and redraws it from fragments every 0.5 s. A rerun or a closed tab neither
stops nor duplicates a debate (the Transcripts page lists running ones to reattach).
"""
from __future__ import annotations

import streamlit as st

from mad_core import live
from mad_core.view import DebateView
from madlab_ui import controls, forms, plots, transcript
from madlab_ui.common import DEBATE_ID, id8, open_store, page_setup

page_setup("Debate")


def load(debate_id: str):
    """(live debate or None, its view or None): live debates from memory, others from the store."""
    debate = live.get(debate_id)
    if debate is not None:
        return debate, debate.view()
    store = open_store()
    if store.get_debate(debate_id) is None:
        return None, None
    store.mark_dead_interrupted()  # run by a process that is gone: say so
    return None, DebateView.from_store(store, debate_id)


def watch(debate_id: str) -> None:
    debate, view = load(debate_id)
    if view is None:
        st.warning(f"Debate {id8(debate_id)} is gone.")
        st.session_state.pop(DEBATE_ID, None)
        return
    was_running = debate is not None and not debate.done
    with st.sidebar:
        st.subheader("Steer the debate")
        controls.render_controls(debate, view.agents)
    if not was_running:
        controls.resume_button(open_store(), debate_id, view.status, st, key="resume_debate")

    # One auto-refreshing fragment only: several run_every fragments interrupt each other.
    @st.fragment(run_every=0.5 if was_running else None)
    def body() -> None:
        current, now = load(debate_id)
        if now is None:  # deleted meanwhile
            return
        transcript.render_status(now, current)
        transcript.render_decision(now)
        if now.status != "running":
            transcript.render_reference(now, f"reveal_{debate_id}")
        st.markdown(now.config.get("question", ""))
        with st.container(height=640, autoscroll=True, key="transcript"):
            transcript.render_transcript(now)
        transcript.render_usage(now)
        plots.render_plots(now)
        if was_running and (current is None or current.done):
            st.rerun(scope="app")  # the debate ended: redraw the controls (now disabled) once

    body()


st.title("🗣️ MAD Lab")
st.caption("Watch and steer multi-agent LLM debates.")
setup, stage = st.columns([2, 3], gap="large")
with setup:
    st.header("Set up")
    forms.render_fork_banner()
    forms.render_form()
with stage:
    st.header("Debate")
    watched = st.session_state.get(DEBATE_ID)
    if watched:
        watch(watched)
    else:
        st.info("Pick a preset or write a question, choose the agents and the rules, then press Start. "
                "The debate runs in the background: you may reload this page, leave it, or watch it from "
                "another tab (Transcripts lists running debates).")
