"""Steering controls of a live debate: buttons only call `Controller` methods.

Keys: `pause`, `resume`, `stop`, `force_decision`, `say_all_text` + `say_all_send`,
`say_one_agent` + `say_one_text` + `say_one_send`. A message reaches the agents' next prompts
(the engine applies it between turns), then shows up in the transcript as `steer_{j}`.
`resume_button` continues a stopped, failed or interrupted debate (key given by the page); when
the debate cannot be resumed (finished, run elsewhere, its model gone) it says why and nothing
changes.
"""
from __future__ import annotations

import streamlit as st

from mad_core import live
from mad_core.config import ConfigError
from mad_core.live import LiveDebate
from mad_core.store import RESUMABLE_STATUSES, ResumeRefused

from .common import DEBATE_ID, DEBATE_PAGE, owner_id

NOTICE = "steer_notice"
RESUME_ERROR = "resume_error"


def resume_button(store, debate_id: str, status: str, where, key: str) -> None:
    """A Resume button (in `where`) for a debate that ended unfinished and that nobody here runs."""
    running_here = (debate := live.get(debate_id)) is not None and not debate.done
    if status not in RESUMABLE_STATUSES or running_here:
        return
    if where.button("Resume", key=key, icon="▶️", width="stretch",
                    help="Continue from the last finished turn, on the Debate page."):
        try:
            live.start_resume(debate_id, store, owner=owner_id())
        except (ResumeRefused, ConfigError) as exc:
            st.session_state[RESUME_ERROR] = (debate_id, f"Cannot resume: {exc}")
        else:
            st.session_state.pop(RESUME_ERROR, None)
            st.session_state[DEBATE_ID] = debate_id
            st.switch_page(DEBATE_PAGE)
    error = st.session_state.get(RESUME_ERROR)
    if error and error[0] == debate_id:
        st.error(error[1])


def _say(debate: LiveDebate, text_key: str, to_one: bool) -> None:
    targets = [st.session_state.get("say_one_agent")] if to_one else None
    try:
        debate.controller.say(st.session_state.get(text_key, ""), targets)
    except ValueError as exc:
        st.session_state[NOTICE] = ("error", str(exc))
        return
    st.session_state[text_key] = ""  # sent: clear the box (a refused message stays for editing)
    to = ", ".join(targets) if targets else "all agents"
    st.session_state[NOTICE] = ("ok", f"Message for {to} queued: it reaches their next turn.")


def render_controls(debate: LiveDebate | None, labels: list[str]) -> None:
    """Pause / resume / stop / force decision, and moderator messages; disabled when they don't apply."""
    active = debate is not None and not debate.done and not debate.controller.stopped
    paused = active and debate.controller.paused
    controller = debate.controller if debate is not None else None
    with st.container(key="controls"):
        top, bottom = st.columns(2), st.columns(2)
        top[0].button("Pause", key="pause", icon="⏸️", disabled=not active or paused, width="stretch",
                      on_click=getattr(controller, "pause", None))
        top[1].button("Resume", key="resume", icon="▶️", disabled=not paused, width="stretch",
                      on_click=getattr(controller, "resume", None))
        bottom[0].button("Stop", key="stop", icon="⏹️", disabled=not active, width="stretch",
                         on_click=getattr(controller, "stop", None))
        bottom[1].button("Decide now", key="force_decision", icon="⚖️", width="stretch",
                         disabled=not active or controller.force_requested,
                         on_click=getattr(controller, "force_decision", None),
                         help="Skip the remaining rounds: the protocol decides now (or its fallback rule does).")
        # Forms send the chosen agent, the text and the click together: no intermediate rerun can
        # race with the live fragment's redraws and lose a choice.
        with st.form("say_all_form", border=False):
            st.text_input("Message to all agents", key="say_all_text", disabled=not active,
                          placeholder="e.g. Check the units again.")
            st.form_submit_button("Send to all", key="say_all_send", disabled=not active,
                                  on_click=_say, args=(debate, "say_all_text", False))
        with st.form("say_one_form", border=False):
            st.selectbox("Message to one agent", labels or ["-"], key="say_one_agent", disabled=not active)
            st.text_input("Private message", key="say_one_text", disabled=not active,
                          label_visibility="collapsed", placeholder="private message")
            st.form_submit_button("Send to this agent", key="say_one_send", disabled=not active,
                                  on_click=_say, args=(debate, "say_one_text", True))
        notice = st.session_state.pop(NOTICE, None)
        if notice:
            (st.error if notice[0] == "error" else st.success)(notice[1])
