"""MAD Lab, the Debate page: set up a multi-agent debate, start it, watch it stream and steer it.

This file is also the app's router (`madlab_ui.navigation.route`): run as the entry file it builds
the named pages (`navigation.PAGES`: Debate, Transcripts, Compare, ...) and runs the chosen one; run as
the Debate page, it draws the page below.

The debate never runs inside this script: Start hands the config to `mad_core.live`, which runs
it in a background thread of the server; this page keeps the debate id (and the session's
incremental view of it, `madlab_ui.live_page`) in `st.session_state`. A full run draws what is
settled; a fragment redraws only what moves, a few times a second (`live_page.refresh_interval`).
A rerun or a closed tab neither stops nor duplicates a debate. The URL carries the session's token
and the watched debate (`madlab_ui.session_memory`): a reload or a second tab with that URL shows the
same form and debate; a tab without one lists the debates running now.

Who sees what is `madlab_ui.access`'s: a tab that did not start the watched debate watches it
read-only; a visitor (another machine without the teacher key) gets no form and no list of
running debates: only the debate named in its link (`?debate=<id>`), read-only, or one line.
"""
from __future__ import annotations

import streamlit as st

from mad_core import live
from mad_core.store import mark_dead_interrupted
from mad_core.view import DebateView
from madlab_ui import access, browse, codebook, controls, forms, heap, live_page, navigation, seat, session_memory
from madlab_ui.common import DEBATE_ID, FORK_REQUEST, id8, md_escape, open_store, owner_id
from madlab_ui.page import page_setup



def load(debate_id: str) -> live_page.LivePage | None:
    """The session's view of a debate: a live one followed incrementally, others read from the store."""
    debate = live.get(debate_id)
    if debate is not None:
        return live_page.current_page(debate_id, debate)
    store = open_store()
    if store.get_debate(debate_id) is None:
        return None
    mark_dead_interrupted(store)  # run by a process that is gone: say so
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
    if not page.running:  # resume_button asks access: the teacher's only
        controls.resume_button(open_store(), debate_id, page.view.status, st, key="resume_debate")
    fork_note(open_store().get_debate(debate_id))
    seat.render_teacher_seats(debate_id, owner_id())  # a person's seats: their codes, and the teacher's box
    live_page.watch(page, f"reveal_{debate_id}")


def fork_note(record: dict | None) -> None:
    """A forked debate says so, running and after: "↩️ fork of <parent id8> after turn N", with a
    button (`fork_parent`) that opens the parent on the Transcripts page."""
    label = codebook.fork_label(record)
    if not label:
        return
    with st.container(key="fork_note", horizontal=True, vertical_alignment="center", gap="small"):
        st.markdown(f"↩️ {md_escape(label)}", width="content")
        if access.is_teacher():  # the parent opens on the Transcripts page, which a visitor may not open
            codebook.parent_button(record, "fork_parent", switch=True)


# A projector is 1280x720: the form box and the transcript box take the height the window has (a fixed
# height either hides Start and the latest turn below the fold there or wastes a large screen; the form's
# column is as high as the window allows and its box takes what a fork banner, the summary of the form's
# problems, Start and its caption leave, so these stay in view), and the
# page's top padding shrinks, so Start, the status line, the latest turn and the sidebar's steering
# controls are in view without scrolling the page (tests/e2e/test_e2e_reload.py measures it). Our own
# static CSS, nothing a user or a model wrote.
FIT_WINDOW_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 3rem; padding-left: 2rem; padding-right: 2rem; }
[data-testid="stVerticalBlock"]:has(> div > .st-key-setup_form) { height: max(540px, calc(100dvh - 135px)); }
div:has(> .st-key-setup_form) { flex: 1 1 0 !important; height: auto !important; min-height: 180px; }
.st-key-form_errors { max-height: 35dvh; overflow-y: auto; flex-shrink: 0; }
div:has(> .st-key-transcript) { --box: max(300px, calc(100dvh - 300px)); }
div:has(> .st-key-transcript) { flex-basis: var(--box) !important; height: var(--box) !important; }
</style>"""


def render_visitor() -> None:
    """A visitor's Debate page: the debate in its link, read-only; no form, no list of running debates."""
    if st.session_state.get(DEBATE_ID):
        watch(st.session_state[DEBATE_ID])
    else:
        with st.container(key="visitor_home"):
            st.markdown(access.VISITOR_HOME)
    session_memory.show_watched_in_url()
    session_memory.remember()


def render_teacher() -> None:
    """The teacher's Debate page: the form beside the watched debate (or the debates running now)."""
    fork_asked = st.session_state.get(FORK_REQUEST)
    arrived_to_fork = bool(fork_asked) and not fork_asked.get("applied")  # render_fork_banner marks it applied
    setup, stage = st.columns([2, 3], gap="large")
    with setup:
        forms.render_fork_banner()
        forms.render_form()
    with stage:
        watched = st.session_state.get(DEBATE_ID)
        if watched:
            watch(watched)
        else:
            st.info("Pick a preset or write a question, choose the agents and the rules, then press Start. "
                    "The debate runs in the background: you may reload this page, leave it, or watch it from "
                    "another tab (Transcripts lists running debates).")
            browse.render_running(title="Debates running now", action="Watch")
    session_memory.show_watched_in_url()
    if arrived_to_fork:  # from a Fork button far down a transcript: open at the top, at this page's address
        navigation.arrive_at_top()
    session_memory.remember()  # again: the run itself may have changed the form (a fork applied) or the debate


def render_debate_page() -> None:
    page_setup("Debate")
    access.key_notice()
    st.html(FIT_WINDOW_CSS)
    st.subheader(":material/forum: MAD Lab · watch and steer multi-agent LLM debates", anchor=False)
    if access.is_visitor():
        render_visitor()
    else:
        render_teacher()


# The entry file's run routes to the chosen page (maybe this one, run again as the page) and ends there;
# the page's own run draws it. Never st.stop() here: it puts the session's script runner in its stopped
# state, which throws away a click queued while this run drew (a steering click lost after every full
# redraw of a streaming debate, found by bench/class_phones.py).
if not navigation.route():
    render_debate_page()
heap.settle()  # after a run that imported more: what the imports left is kept out of full collections
