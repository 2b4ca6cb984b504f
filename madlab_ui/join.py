"""The class joins by code: the /join page students open on their phones, the teacher's view of who
joined (with the class CSV), and the class's answers on the stage after a reveal.

- Join page (`render_join_page`, pages/9_Join.py, a visitor's page): `join_code` (the code on the
  screen), `join_nickname` (their nickname in the debate's class) and `join_send`. A refusal is said
  right under the field it is about (`join_code_error`, `join_nickname_error`: a malformed, unknown or
  retired code; an empty, too long or taken nickname) and nothing is written (`mad_core.classroom.enter`).
  Once joined, the URL names the target (`poll=<id>` or `seat=<id>`) beside the device's token
  (`device=`, as the poll page keeps it), so a reload shows it again with the same nickname and
  prediction; what opens is `JOIN_KINDS[kind]`. A poll's page follows the debate: when the teacher
  opens the next poll, the joined phone shows it without a new code. A coding project's coder
  invitation (`mad_core.qda.invitations`, no nickname needed) opens that project's Coding page
  (`?invite=CODE`; what such a visitor reaches is `access`'s docstring); a retired one is said under
  the code field, and nothing opens.
- Teacher (`render_class`, the presenter's sidebar, refreshed every POLL_REFRESH_S): `class_joined`
  (the nicknames), `class_predicted` (who predicted in the poll on the stage) and `class_csv` (the class
  CSV, one row per student per poll: `mad_core.classroom.class_csv`).
- Stage (`render_class_panel`, instead of the agents' columns once the poll on the stage is revealed,
  until the teacher switches back with `presenter_class_toggle`, key A): `poll_class_panel` holding the plotly
  bar chart `poll_chart` (the class's counts per answer, the decided/right answer marked, the agents'
  count beside it) and `poll_agent_answer_{i}` (what each agent had answered at the poll's round).

What it must not do: write the store except through `mad_core.classroom` / `mad_core.polls`, admit a
device to anything it did not enter a code for (`classroom.admitted`), or render user text as HTML
(nicknames and answers are markdown-escaped or plain text).
"""
from __future__ import annotations

import streamlit as st

from mad_core import classroom, polls
from mad_core.classroom import ClassroomError
from mad_core.qda import invitations
from mad_core.view import DebateView

from . import access
from . import poll as poll_ui
from .common import md_escape, model_markdown, open_store
from .seat import render_seat_page

JOINED_NICKNAME = "join_me"  # session key: the nickname this session joined under (filled in again)
ERRORS = "join_errors"  # session key: {field: message} of the last refused join
CLASS_VIEW = poll_ui.CLASS_VIEW  # session key: False while the teacher shows the agents after a reveal
FIELDS = {"code": "Code", "nickname": "Nickname", "device": "This page"}
CODING_PAGE = "pages/8_Coding.py"
INVITING = "join_inviting"  # session key: the live coder invitation just typed, opened on the next run


# ----- the students' join page --------------------------------------------------------------------
def render_joined_poll(poll_id: str, device: str, nickname: str) -> None:
    """A joined student's poll: the debate's newest poll (the class follows the teacher's polls)."""
    store = open_store()
    poll = polls.get_poll(store, poll_id)
    newest = classroom.newest_poll(store, poll["debate_id"]) if poll is not None else None
    if newest is None:
        return
    if newest["id"] != poll_id:
        st.query_params["poll"] = newest["id"]
    poll_ui.render_poll(newest, device, nickname, follow=True)


# kind of code -> what a device that joined it sees: (target id, device token, nickname).
JOIN_KINDS = {"poll": render_joined_poll, "seat": render_seat_page}


def _invited(typed: object) -> bool:
    """A coder invitation typed: a live one admits this session to its project (opened on the next run),
    a retired one is said under the code field. False when the code is no coder invitation."""
    invitation = invitations.admits(open_store(), typed)
    if invitation is None:
        return False
    if invitation["retired"]:
        st.session_state[ERRORS] = {"code": f"{FIELDS['code']}: the coder invitation {invitation['code']} was "
                                            "retired by the project's lead: ask them for the current code"}
    else:
        st.session_state[access.INVITED] = st.session_state[INVITING] = invitation["code"]
    return True


def _join(device: str) -> None:
    """The Join button: enter the code under the nickname; the URL then names what it opened."""
    st.session_state.pop(ERRORS, None)
    if _invited(st.session_state.get("join_code")):
        return
    try:
        joined = classroom.enter(open_store(), st.session_state.get("join_code"),
                                 st.session_state.get("join_nickname"), device)
    except ClassroomError as exc:
        st.session_state[ERRORS] = {exc.field: f"{FIELDS.get(exc.field, exc.field)}: {exc.message}"}
        return
    st.session_state[JOINED_NICKNAME] = joined["nickname"]
    st.query_params[joined["kind"]] = joined["target"]


def _field_error(field: str) -> None:
    message = (st.session_state.get(ERRORS) or {}).get(field)
    if message:
        with st.container(key=f"join_{field}_error"):
            st.error(model_markdown(message))  # it may quote the nickname: shown as typed, never rendered


def _joined_target(device: str) -> tuple[str, str, str] | None:
    """(kind, target, nickname) named in the URL that this device joined (a reload), else None."""
    store = open_store()
    for kind in JOIN_KINDS:
        target = st.query_params.get(kind)
        admitted = classroom.admitted(store, device, kind, target) if target else None
        if admitted is not None:
            return kind, str(target), admitted["nickname"]
    return None


def render_join_page() -> None:
    """The page a student opens on a phone: the code and a nickname, then what the code opened."""
    invited = st.session_state.pop(INVITING, None)
    if invited:  # a coder invitation: that project's Coding page, the code in its URL
        st.switch_page(CODING_PAGE, query_params={access.INVITE_PARAM: invited})
    device = poll_ui.device_token()
    joined = _joined_target(device)
    if joined is not None:
        kind, target, nickname = joined
        JOIN_KINDS[kind](target, device, nickname)
        return
    st.markdown("Type the code on the screen and the nickname the class will see (a coder invitation needs no "
                "nickname: you choose your coder name on the Coding page).")
    st.text_input("Code", key="join_code", max_chars=12, placeholder="e.g. K7M3PX")
    _field_error("code")
    st.session_state.setdefault("join_nickname", st.session_state.get(JOINED_NICKNAME) or "")
    st.text_input("Nickname", key="join_nickname", max_chars=classroom.MAX_NICKNAME_CHARS * 2,
                  placeholder=f"at most {classroom.MAX_NICKNAME_CHARS} characters")
    _field_error("nickname")
    _field_error("device")
    st.button("Join", key="join_send", type="primary", on_click=_join, args=(device,))


# ----- the teacher: who joined, the class CSV -----------------------------------------------------
def render_class(debate_id: str) -> None:
    """Who joined the debate's class and who predicted in the poll on the stage (refreshed by itself),
    and the class CSV."""

    @st.fragment(run_every=poll_ui.POLL_REFRESH_S)
    def joined() -> None:
        store = open_store()
        members = classroom.participants(store, debate_id)
        st.markdown(f"**Joined by code: {len(members)}**")
        with st.container(key="class_joined"):
            st.text(", ".join(member["nickname"] for member in members) or "nobody yet")
        poll = poll_ui.current_poll(store, debate_id)
        if poll is None:
            return
        nicknames = {row["nickname"] for row in members}
        names = [row["label"] for row in polls.predictions_of(store, poll["id"])]
        with st.container(key="class_predicted"):
            st.text(f"Predicted in this poll: {len(names)}" + (f" · {', '.join(names)}" if names else "")
                    + (f" · waiting for {len(nicknames - set(names))}" if nicknames - set(names) else ""))

    joined()
    st.download_button("Class CSV (every prediction)", data=lambda: classroom.class_csv(open_store(), debate_id),
                       file_name=f"class-{debate_id[:8]}.csv", mime="text/csv", key="class_csv", on_click="ignore",
                       help="One row per student per poll: round, nickname, device (a short hash), prediction, "
                            "the decision and whether it matched.")


# ----- the stage after a reveal -------------------------------------------------------------------
def class_panel_shown(debate_id: str | None) -> bool:
    """Is the class's answers panel on the stage (the poll on the stage revealed, the teacher not back
    on the agents)?"""
    if not debate_id or not st.session_state.get(CLASS_VIEW, True):
        return False
    shown = poll_ui.current_poll(open_store(), debate_id)
    return shown is not None and shown["status"] == "revealed"


def render_class_panel(view: DebateView) -> None:
    """The revealed poll's chart beside what each agent had answered at the poll's round."""
    store = open_store()
    poll = poll_ui.current_poll(store, view.debate_id)
    if poll is None:
        return
    agents = classroom.agents_at_round(view, poll.get("round"))
    rnd = poll.get("round")
    with st.container(key="poll_class_panel"):
        left, right = st.columns([3, 2], gap="medium")
        with left:
            st.plotly_chart(classroom.results_figure(polls.results(store, poll["id"]), agents), key="poll_chart",
                            config={"displayModeBar": False})
        with right:
            st.markdown("#### The agents " + ("before the debate" if not rnd else f"at round {rnd}"))
            for i, agent in enumerate(view.agents):
                said = agents.get(agent) or ("had not answered yet" if not rnd else "no readable answer")
                with st.container(key=f"poll_agent_answer_{i}"):
                    st.markdown(f"**{md_escape(agent)}:** {md_escape(said)}")


def _toggle_class_view() -> None:
    st.session_state[CLASS_VIEW] = not st.session_state.get(CLASS_VIEW, True)


def render_class_toggle(debate_id: str) -> None:
    """The keys' row button (key A) that switches the stage between the class's answers and the agents,
    once the poll on the stage is revealed."""
    shown = poll_ui.current_poll(open_store(), debate_id)
    if shown is None or shown["status"] != "revealed":
        return
    showing = st.session_state.get(CLASS_VIEW, True)
    st.button("Agents" if showing else "Class answers", key="presenter_class_toggle", icon="🔁", shortcut="A",
              type="tertiary", on_click=_toggle_class_view,
              help="Switch the stage between the class's answers and the agents (key A).")
