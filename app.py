"""MAD Lab, the Debate page: set up a multi-agent debate, start it, watch it stream and steer it.

The debate never runs inside this script: Start hands the config to `mad_core.live`, which runs
it in a background thread of the server; this page keeps the debate id (and the session's
incremental view of it, `madlab_ui.live_page`) in `st.session_state`. A full run draws what is
settled; a fragment redraws only what moves, a few times a second (`live_page.refresh_interval`).
A rerun or a closed tab neither stops nor duplicates a debate (the Transcripts page lists running
ones to reattach).
"""
from __future__ import annotations

import streamlit as st

from mad_core import live
from mad_core.view import DebateView
from madlab_ui import controls, forms, live_page
from madlab_ui.common import DEBATE_ID, id8, open_store, page_setup

page_setup("Debate")


def load(debate_id: str) -> live_page.LivePage | None:
    """The session's view of a debate: a live one followed incrementally, others read from the store."""
    debate = live.get(debate_id)
    if debate is not None:
        return live_page.current_page(debate_id, debate)
    store = open_store()
    if store.get_debate(debate_id) is None:
        return None
    store.mark_dead_interrupted()  # run by a process that is gone: say so
    return live_page.current_page(debate_id, None, DebateView.from_store(store, debate_id))


def watch(debate_id: str) -> None:
    page = load(debate_id)
    if page is None:
        st.warning(f"Debate {id8(debate_id)} is gone.")
        st.session_state.pop(DEBATE_ID, None)
        return
    with st.sidebar:
        st.subheader("Steer the debate")
        controls.render_controls(page.debate, page.view.agents)
    if not page.running:
        controls.resume_button(open_store(), debate_id, page.view.status, st, key="resume_debate")
    live_page.watch(page, f"reveal_{debate_id}")


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
