"""A person's seat on the Debate page (the teacher) and on a phone (`madlab_ui.seat.render_seat_page`).

The debate runs in the background as the app runs it (`live.start`, the process's seat registry); the test
waits on the registry's gate for the seat to wait, never sleeps. Hostile text in another agent's reply must
reach the seat's box literally (plain text), never as markdown or HTML.
"""
from __future__ import annotations

import threading

import pytest
from app_helpers import APP, join, keys, texts
from streamlit.testing.v1 import AppTest

from mad_core import join_codes, live, seats
from mad_core.config import PERSON, DebateConfig
from mad_core.models.scripted import Script, register_script, unregister_script
from mad_core.store import Store

HOSTILE = "<b>bold?</b> **not bold** [link](http://example.com) $x$"


AFTER_SEAT = threading.Event()  # Agent 3, who speaks after the seat, waits for it (set by the tests)


def _reply(messages, info) -> str:
    if info["metadata"]["agent"] == "Agent 3":
        assert AFTER_SEAT.wait(30)
    return f"{HOSTILE}\nFinal answer: Paris"


@pytest.fixture
def seated():
    """A debate whose Agent 2 is a person, started in the background; its seat is waiting."""
    AFTER_SEAT.clear()
    register_script("seatbox", Script(replies=_reply))
    data = {"question": "What is the capital of France?", "rounds": 1, "max_rounds": 1,
            "protocol": "solution_counting", "extract_final_answers": False,
            "agents": [{"label": "Agent 1", "model": "scripted/seatbox"}, {"label": "Agent 2", "model": PERSON},
                       {"label": "Agent 3", "model": "scripted/seatbox"}]}
    debate = live.start(DebateConfig.from_dict(data), store=Store())
    seat_id = f"{debate.debate_id}.1"
    seat = seats.REGISTRY.wait_for(seat_id, lambda s: s.state == "waiting", timeout=30)
    assert seat is not None
    yield debate, seat
    AFTER_SEAT.set()
    debate.controller.stop()
    debate.thread.join(timeout=30)
    unregister_script("seatbox")


def watching(debate_id: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state["debate_id"] = debate_id
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_teacher_sees_the_seat_code_and_exactly_what_the_agent_sees_and_sends_the_turn(seated):
    debate, seat = seated
    at = watching(debate.debate_id)
    code = join_codes.code_of(Store(), "seat", seat.seat_id)
    assert code is not None and code in texts(at.get_by_key("seat_code_0"))
    assert join_codes.resolve(Store(), code)["target"] == seat.seat_id  # the code admits to this seat
    shown = [t.value for t in at.get_by_key("tseat_0_messages").text]
    assert shown == [m["content"] for m in seat.messages]  # exactly the messages, each as plain text
    assert any(HOSTILE in value for value in shown)  # another agent's words, literally
    assert all(HOSTILE not in str(m.value) for m in at.get_by_key("tseat_0_box").markdown)  # never as markdown
    at.text_area(key=f"tseat_0_text_{seat.turn_id}").set_value("I say Lyon.\nFinal answer: Lyon")
    at.button(key="tseat_0_send").click().run()
    assert not at.exception, at.exception
    AFTER_SEAT.set()
    join(debate.debate_id)
    (turn,) = [t for t in Store().turns(debate.debate_id) if t.agent == "Agent 2"]
    assert (turn.content, turn.seat, turn.model, turn.answer) == ("I say Lyon.\nFinal answer: Lyon", "person",
                                                                  PERSON, "Lyon")
    assert seats.REGISTRY.get(seat.seat_id).holder is None  # held for that one reply only


def test_a_seat_held_by_a_phone_shows_its_holder_and_release_and_no_box_for_the_teacher(seated):
    debate, seat = seated
    seats.REGISTRY.claim(seat.seat_id, "phone-1", "Ann <i>")
    at = watching(debate.debate_id)
    assert "held by Ann" in texts(at.get_by_key("seat_0"))
    assert "tseat_0_box" not in keys(at)
    at.button(key="seat_release_0").click().run()
    assert seats.REGISTRY.get(seat.seat_id).holder is None
    assert "tseat_0_box" in keys(at)  # free again: the teacher may reply


PHONE = """
from madlab_ui.seat import render_seat_page
render_seat_page({seat_id!r}, {device!r}, {nickname!r})
"""


def phone(seat_id: str, device: str, nickname: str) -> AppTest:
    at = AppTest.from_string(PHONE.format(seat_id=seat_id, device=device, nickname=nickname), default_timeout=30)
    at.run()
    assert not at.exception, at.exception
    return at


def test_a_phone_takes_the_seat_a_second_phone_is_refused_and_a_late_reply_is_told(seated, monkeypatch):
    debate, seat = seated
    first = phone(seat.seat_id, "phone-1", "Ann")
    assert [t.value for t in first.get_by_key("seat_messages").text] == [m["content"] for m in seat.messages]
    second = phone(seat.seat_id, "phone-2", "Bob")
    assert "Ann holds this seat" in texts(second.get_by_key("seat_refused"))
    assert "seat_box" not in keys(second)
    # The time limit passes while Ann still types: her Send is refused with the reason, nothing kept.
    later = seats.REGISTRY.now() + seat.time_limit_s + 1
    monkeypatch.setattr(seats.REGISTRY, "_clock", lambda: later)
    seats.REGISTRY.wake()
    assert seats.REGISTRY.wait_for(seat.seat_id, lambda s: s.state == "timed_out", timeout=30) is not None
    first.text_area(key=f"seat_text_{seat.turn_id}").set_value("Lyon!")
    first.button(key="seat_send").click().run()
    assert "too late" in texts(first.get_by_key("seat_error"))
    AFTER_SEAT.set()
    join(debate.debate_id)
    (turn,) = [t for t in Store().turns(debate.debate_id) if t.agent == "Agent 2"]
    assert (turn.seat, turn.content) == ("skipped", "")


def test_the_form_offers_a_person_with_its_seat_settings_and_refuses_bad_ones_by_field():
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert "a person" in at.selectbox(key="agent_model_1").options  # the option as the box shows it
    at.text_area(key="question").set_value("What is the capital of France?")
    at.selectbox(key="agent_model_1").set_value(PERSON)
    at.run()
    assert {"agent_seatlimit_1", "agent_atlimit_1"} <= keys(at) and "agent_seatlimit_0" not in keys(at)
    at.number_input(key="agent_seatlimit_1").set_value(2.0)
    at.selectbox(key="agent_atlimit_1").set_value("model")
    at.run()
    at.button(key="start").click().run()
    assert "between 5 and 3600" in texts(at.get_by_key("error_agent_seatlimit_1"))
    at.number_input(key="agent_seatlimit_1").set_value(60.0)
    at.run()
    at.button(key="start").click().run()
    assert "name the model" in texts(at.get_by_key("error_agent_standin_1"))
    assert "error_agent_seatlimit_1" not in keys(at)
    assert "debate_id" not in at.session_state  # nothing started
