"""A person's seat in a debate: the box where its holder reads what the agent sees and types its turn.

Two places draw it (`mad_core.seats` keeps the seats of the running debates):
- a student's phone: `render_seat_page(seat_id, device, nickname)`, called by the join page once a seat's
  code and a nickname were typed (or by any script: it stands alone). It takes the seat for `device`
  (again after a reload) or says why not (another device holds it, the debate ended), then shows the box;
- the Debate page, for the teacher: `render_teacher_seats(debate_id, device)` lists each seat of the watched
  debate with its code to hand out, who holds it (with Release), and, when a turn waits and no student
  holds the seat, the same box: the teacher's Send takes the seat for that one reply.

The box (`seat_box`): whose seat it is, the question, exactly the messages the agent would be sent (each
drawn as plain text under its role, never as markdown or HTML), the format a ballot or an agreement must
have, the seconds left, and a text area with Send. A refused reply (too late, not the holder, empty) is
shown in `<prefix>_error` where the person is looking, and nothing was sent. While no turn waits it says
what the seat is doing; the box refreshes itself every `REFRESH_S` seconds.

What it must not do: render a message, a reply or a nickname as HTML or markdown, show a seat's code to
anyone but the teacher, or run anything of the debate.
"""
from __future__ import annotations

import streamlit as st

from mad_core import seats
from mad_core.seats import Seat, SeatError

from . import access
from .common import md_escape, open_store

REFRESH_S = 1.0
TEACHER_NICKNAME = "the teacher"
_STATE_WORDS = {
    "idle": "Not this seat's turn yet: the box asks for a reply when it comes.",
    "answered": "Sent: the reply is the agent's turn. The box asks again at the seat's next turn.",
    "timed_out": "The time limit passed before a reply came: the debate went on without it.",
    "interrupted": "The turn was cut: the debate was stopped or a decision was forced.",
    "closed": "The debate has ended. Thank you!",
}


def _errors_key(prefix: str) -> str:
    return f"{prefix}_refused"


def _send(seat_id: str, device: str, turn_id: str | None, prefix: str, as_teacher: bool) -> None:
    """Send the text area's reply (a form's on_click): refused replies are kept to be shown, nothing sent."""
    text = st.session_state.get(f"{prefix}_text_{turn_id}", "")
    registry = seats.REGISTRY
    try:
        if as_teacher:  # the teacher speaks for a free seat: held for this one reply
            registry.claim(seat_id, device, TEACHER_NICKNAME)
            try:
                registry.reply(seat_id, device, text, turn_id=turn_id)
            finally:
                registry.release(seat_id)
        else:
            registry.reply(seat_id, device, text, turn_id=turn_id)
        st.session_state.pop(_errors_key(prefix), None)
    except SeatError as exc:
        st.session_state[_errors_key(prefix)] = exc.message


def seat_box(seat: Seat, device: str, prefix: str, as_teacher: bool = False) -> None:
    """The seat's box (see the module docstring); `prefix` keys its widgets."""
    registry = seats.REGISTRY
    with st.container(key=f"{prefix}_box", border=True):
        st.markdown(f"**Seat: {md_escape(seat.agent)}**")
        refused = st.session_state.get(_errors_key(prefix))
        if refused:
            with st.container(key=f"{prefix}_error"):
                st.error(md_escape(refused))
        if seat.state != "waiting":
            with st.container(key=f"{prefix}_state"):
                st.caption(_STATE_WORDS.get(seat.state, seat.state))
            return
        left = seat.seconds_left(registry.now())
        paused = " (the debate is paused: the clock waits)" if seat.paused else ""
        with st.container(key=f"{prefix}_turn"):
            st.caption(f"Your turn as {md_escape(seat.agent)} ({md_escape(seat.kind or 'turn')}): "
                       f"{left:.0f} s left{paused}" if left is not None else "Your turn")
            st.caption("Question")
            st.text(seat.question)
            st.caption("What the agent sees (exactly the messages a model in this seat would get):")
            with st.container(key=f"{prefix}_messages", height=320):
                for message in seat.messages:
                    st.caption(md_escape(str(message.get("role", ""))))
                    st.text(str(message.get("content", "")))
            if seat.format_hint:
                with st.container(key=f"{prefix}_format"):
                    st.info(md_escape(seat.format_hint))
        with st.form(key=f"{prefix}_form", border=False):  # a refused reply keeps its text
            st.text_area("Your turn", key=f"{prefix}_text_{seat.turn_id}", height=160)
            st.form_submit_button("Send", key=f"{prefix}_send", on_click=_send,
                                  args=(seat.seat_id, device, seat.turn_id, prefix, as_teacher))


def render_seat_page(seat_id: str, device: str, nickname: str) -> None:
    """A student's seat (see the module docstring): take it for `device` as `nickname`, then the box."""
    try:
        seats.REGISTRY.claim(seat_id, device, nickname)
    except SeatError as exc:
        with st.container(key="seat_refused"):
            st.error(md_escape(exc.message))
        return
    st.fragment(run_every=REFRESH_S)(_student_box)(seat_id, device)


def _student_box(seat_id: str, device: str) -> None:
    seat = seats.REGISTRY.get(seat_id)
    if seat is None or seat.holder != device:
        with st.container(key="seat_lost"):
            st.warning("You no longer hold this seat (the teacher freed it, or the debate ended). "
                       "Type its code again to take it back.")
        return
    st.caption(f"You are {md_escape(seat.nickname or '')}, in {md_escape(seat.agent)}'s seat.")
    seat_box(seat, device, "seat")


def _release(seat_id: str) -> None:
    try:
        seats.REGISTRY.release(seat_id)
    except SeatError:
        pass  # the debate ended meanwhile: nothing to free


def render_teacher_seats(debate_id: str, device: str) -> None:
    """The watched debate's seats, for the teacher (nothing for anyone else, nothing without seats)."""
    if not access.is_teacher():
        return
    found = seats.REGISTRY.seats_of(debate_id)
    if not found:
        return
    if all(seat.state == "closed" for seat in found):
        seats.retire_codes(open_store(), [seat.seat_id for seat in found])  # they admit nobody now
        return
    st.fragment(run_every=REFRESH_S)(_teacher_seats)(debate_id, device)


def _teacher_seats(debate_id: str, device: str) -> None:
    store = open_store()
    for i, seat in enumerate(seats.REGISTRY.seats_of(debate_id)):
        with st.container(key=f"seat_{i}", border=True):
            with st.container(key=f"seat_code_{i}", horizontal=True):
                st.markdown(f"**{md_escape(seat.agent)}** is a person · seat code")
                st.code(seats.seat_code(store, seat.seat_id), language=None)
            if seat.holder is not None:
                st.caption(f"held by {md_escape(seat.nickname or 'someone')}")
                st.button("Release", key=f"seat_release_{i}", on_click=_release, args=(seat.seat_id,),
                          help="Free the seat so that another device (or you, here) can reply.")
            if seat.holder is None or seat.holder == device:
                seat_box(seat, device, f"tseat_{i}", as_teacher=True)
