"""Steering controls of a live debate: buttons only call `Controller` methods, and say at once what they did.

Keys: `pause`, `resume`, `stop`, `force_decision`, `say_all_text` + `say_all_send`,
`say_one_agent` + `say_one_text` + `say_one_send`, the steering line `steering_status` and, right
under it, the answer to the last message sent (`steer_notice`: queued, or why it was refused), in a slot
of its own fixed height (`steer_notice_slot`), notice or none: when the notice went away after NOTICE_S
the buttons moved up, and Stop slid under a pointer aimed at Pause (found by bench/class_phones.py).
The controls live in one fragment of their own (`render_controls`): a click reruns only that
fragment, not the whole page (the form, the settled transcript, the plots), so the state it asked
for shows in the steering line within a fraction of a second. While the debate runs the fragment
also refreshes itself (`steering_interval`: as often as the live page, and at most once a second),
so "deciding: collecting 3 votes (1/3)" counts up as ballots come and a pause from another tab
shows here. The
buttons and the line are drawn together in every run, from the controller read once
(`control_state`), so the row can never show buttons for a state that is gone. (A steering line
in a fragment nested in the controls' one, redrawing the page when the buttons lagged, was
dropped: on a loaded machine the Pause | Resume row vanished for the whole debate, its line
greyed out as stale, and a first click could be lost; Streamlit's frontend is known to clean a
nested fragment's stale elements with another run's ids, streamlit/streamlit#16708.) The line reads the controller directly (not the folded view, which lags by a
refresh): the state asked for and what it waits for, in words that say what the engine does
(`steering_line`).

Buttons that change the state carry no hover `help=`: a click disables them, the browser then
never sends mouse-leave, and the tooltip stayed over the row below. What Stop and Decide now do is
a caption under their row (`STEERING_HELP`).

Layout (a projector is 1280x720, and the page's navigation takes the sidebar's first ~330 px):
the answer to a message shows under the steering line, at the top of the controls, where the
teacher looks after a click (not under the message boxes, below the fold), for NOTICE_S seconds
or until the next message; every button's label is read whole (the Stop | Decide now row is
split 2:3: in half-width columns "Decide now" was cut to "Decide …").

A message reaches the agents' next prompts (the engine applies it between turns), then shows up
in the transcript as `steer_{j}`. `resume_button` continues a stopped, failed or interrupted
debate (key given by the page); when the debate cannot be resumed (finished, run elsewhere, its
model gone) it says why and nothing changes.

Who may steer is `access.can_steer`'s to say: only the session that started the debate (a teacher). Any
other session gets the steering line and one caption (`steer_read_only`: `access.READ_ONLY`), and no
control at all: a widget never drawn has no callback a crafted message could fire. Resume is the
teacher's (`access.is_teacher`).

What it must not do: run or decide anything itself, or render model or user text as HTML.
"""
from __future__ import annotations

import time

import streamlit as st

from mad_core import live
from mad_core.config import ConfigError
from mad_core.live import LiveDebate
from mad_core.store import RESUMABLE_STATUSES, ResumeRefused

from . import access
from .common import DEBATE_ID, DEBATE_PAGE, md_escape, model_markdown, owner_id
from .live_page import SESSION_KEY, LivePage, refresh_interval
from .steering_words import steering_line

NOTICE = "steer_notice_sent"  # session key: (kind, text, time.monotonic() when sent) of the last message
NOTICE_KEY = "steer_notice"  # the notice's container
NOTICE_S = 10.0  # seconds the answer to a message stays under the steering line
RESUME_ERROR = "resume_error"
STEERING_KEY = "steering_status"
# The steering line's own refresh, at most this often (a click reruns it at once, whatever this is).
# Every fragment run makes Streamlit's frontend revisit the whole page (see live_page): refreshing
# the line as often as the live page's tick (4 a second) took the teacher's Chromium from 0.52 to
# 0.66-0.69 of a core (bench/class_phones.py's debate, 2 cores), and its clicks waited behind that work.
STEERING_REFRESH_S = 1.0
# Our own static CSS (no user or model text): a compact notice, so at 1280x720 the message box stays
# in view below it.
NOTICE_CSS = """<style>
.st-key-steer_notice_slot { height: 3.6rem !important; min-height: 3.6rem; overflow-y: auto; flex: 0 0 auto !important; }
.st-key-steer_notice [data-testid="stAlertContainer"] { padding: 0.4rem 0.75rem; }
.st-key-steer_notice [data-testid="stMarkdownContainer"] p { font-size: 0.875rem; line-height: 1.4; }
</style>"""


def resume_button(store, debate_id: str, status: str, where, key: str) -> None:
    """A Resume button (in `where`) for a debate that ended unfinished and that nobody here runs."""
    running_here = (debate := live.get(debate_id)) is not None and not debate.done
    if status not in RESUMABLE_STATUSES or running_here or not access.is_teacher():
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
        st.error(model_markdown(error[1]))  # it may quote the configuration's text: no image, no math


def control_state(debate: LiveDebate | None) -> tuple:
    """What the buttons show (which are enabled) depends on this, read from the controller now."""
    if debate is None:
        return ()
    controller = debate.controller
    return debate.done, controller.stopped, controller.paused, controller.force_requested


def _steering(debate: LiveDebate | None, notice: bool = True) -> None:
    """The steering line and, under it (`notice`: for a session that may send messages), the answer to
    the last message sent."""
    if debate is None:
        return
    with st.container(key=STEERING_KEY):
        st.markdown(f"**{md_escape(steering_line(debate))}**")
    # A slot drawn on every run, notice or none, always as high (NOTICE_CSS): the buttons and forms below
    # keep their places, on the screen (a notice going away moves nothing under the pointer) and in the
    # fragment (a notice coming or going never leaves a second copy of them on screen while the browser
    # swaps a run's elements in; seen: two "Message to one agent" boxes after Send to all).
    if notice:
        with st.container(key="steer_notice_slot"):
            _notice(st.empty())


def _notice(slot) -> None:
    """The answer to the last message sent (queued, or why not), under the steering line while fresh,
    in `slot` (an `st.empty`)."""
    notice = st.session_state.get(NOTICE)
    if notice and time.monotonic() - notice[2] > NOTICE_S:
        st.session_state.pop(NOTICE, None)
        notice = None
    if not notice:  # a blank line holds the slot open (Streamlit draws an empty container with no height)
        slot.markdown("&nbsp;")
        return
    kind, text, _ = notice
    with slot.container(key=NOTICE_KEY):
        if kind == "error":
            st.error(md_escape(text), icon="⚠️")
        else:
            st.success(md_escape(text), icon="✅")


def steering_interval(debate: LiveDebate | None) -> float | None:
    """How often the steering line refreshes itself while the debate runs: as often as the live
    page (see `live_page.refresh_interval`) but at most every STEERING_REFRESH_S; once it has ended,
    never (None)."""
    if debate is None or debate.done:
        return None
    page = st.session_state.get(SESSION_KEY)
    return max(STEERING_REFRESH_S, refresh_interval(page)) if isinstance(page, LivePage) else None


# ----- the controls --------------------------------------------------------------------------------
def _say(debate: LiveDebate, text_key: str, to_one: bool) -> None:
    targets = [st.session_state.get("say_one_agent")] if to_one else None
    try:
        debate.controller.say(st.session_state.get(text_key, ""), targets)
    except ValueError as exc:
        st.session_state[NOTICE] = ("error", f"Not sent: {exc}.", time.monotonic())
        return
    st.session_state[text_key] = ""  # sent: the box is empty here too (the browser's form empties it)
    to = ", ".join(targets) if targets else "all agents"
    st.session_state[NOTICE] = ("ok", f"Message for {to} queued: it reaches their next turn.", time.monotonic())


def render_controls(debate: LiveDebate | None, labels: list[str]) -> None:
    """Pause / resume / stop / force decision, and moderator messages, in a fragment of their own
    that refreshes itself while the debate runs. A session that may not steer it (`access.can_steer`)
    gets the steering line and the reason, no control (a visitor, also once it has ended)."""
    st.html(NOTICE_CSS)
    ended = debate is None or debate.done  # every control disabled: the teacher sees the row as it was
    if not (access.can_steer(debate) or (ended and access.is_teacher())):
        st.fragment(run_every=steering_interval(debate))(_watch_only)(debate)
        return
    st.fragment(run_every=steering_interval(debate))(_controls)(debate, labels)


def _watch_only(debate: LiveDebate | None) -> None:
    """The read-only fragment's body: the steering line and why there are no controls."""
    with st.container(key="controls_read_only"):
        _steering(debate, notice=False)
        with st.container(key="steer_read_only"):
            st.caption(access.READ_ONLY)


STEERING_HELP = ("Stop: end now (the turn under way is kept, cut). Decide now: skip the remaining rounds; "
                 "the protocol decides after this turn.")


def _controls(debate: LiveDebate | None, labels: list[str]) -> None:
    """The fragment's body: the steering line, buttons enabled for the state read once, a notice."""
    done, stopped, paused, forced = control_state(debate) or (True, False, False, False)
    active = not done and not stopped
    paused = active and paused
    controller = debate.controller if debate is not None else None
    with st.container(key="controls"):
        _steering(debate)
        # "Decide now" needs more room than "Stop": in equal half-width columns it was cut ("Decide …").
        top, bottom = st.columns(2), st.columns([2, 3])
        top[0].button("Pause", key="pause", icon="⏸️", disabled=not active or paused, width="stretch",
                      on_click=getattr(controller, "pause", None))
        top[1].button("Resume", key="resume", icon="▶️", disabled=not paused, width="stretch",
                      on_click=getattr(controller, "resume", None))
        bottom[0].button("Stop", key="stop", icon="⏹️", disabled=not active, width="stretch",
                         on_click=getattr(controller, "stop", None))
        bottom[1].button("Decide now", key="force_decision", icon="⚖️", width="stretch",
                         disabled=not active or forced, on_click=getattr(controller, "force_decision", None))
        st.caption(STEERING_HELP)  # not a hover tooltip: see the module docstring
        # Forms send the text and the click together, and empty their box in the browser once sent
        # (`clear_on_submit`: a box emptied only from the server stayed full whenever a refresh of this
        # fragment overtook the run that emptied it, so a second message was typed after the first).
        # The agent is chosen outside the form: a form's clearing would put it back to the first agent.
        with st.form("say_all_form", border=False, clear_on_submit=True):
            st.text_input("Message to all agents", key="say_all_text", disabled=not active,
                          placeholder="e.g. Check the units again.")
            st.form_submit_button("Send to all", key="say_all_send", disabled=not active,
                                  on_click=_say, args=(debate, "say_all_text", False))
        st.selectbox("Message to one agent", labels or ["-"], key="say_one_agent", disabled=not active)
        with st.form("say_one_form", border=False, clear_on_submit=True):
            st.text_input("Private message", key="say_one_text", disabled=not active,
                          label_visibility="collapsed", placeholder="private message")
            st.form_submit_button("Send to this agent", key="say_one_send", disabled=not active,
                                  on_click=_say, args=(debate, "say_one_text", True))
