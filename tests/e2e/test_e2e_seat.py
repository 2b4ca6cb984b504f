"""A student takes a seat in the debate from a phone (issue 23, items 3 and 5): the teacher makes Agent 2
"a person" in the form and starts; the Debate page shows the seat's code; a phone-sized context types it
with a nickname on /join, reads exactly what the agent sees, types the turn and the ballot; the teacher's
transcript shows the typed turn marked as a person's. Must not happen: a second phone let into the held
seat, or the debate deciding without the person's ballot."""
from __future__ import annotations

import re

import pytest
from e2e_helpers import (LIVE_TIMEOUT, choose, configure_debate, debate_by_question, expect, expect_no_exception,
                         expect_status, open_debate_page, start, unique, wait_for_idle)
from e2e_helpers import key as by_key
from test_e2e_join import phone_joins

pytestmark = pytest.mark.e2e
MODEL = "scripted/seat_e2e"  # Agent 1: "Final answer: 42" for its turn, "42" extracted, "1" for its ballot


def send(phone, text: str) -> None:
    """Type the seat's reply and send it (the form's Send)."""
    by_key(phone, "seat_box").get_by_label("Your turn").fill(text)
    by_key(phone, "seat_send").locator("button").click()
    wait_for_idle(phone)


def test_a_student_holds_a_seat_from_a_phone_and_types_the_agents_turn_and_ballot(page, server, store, browser):
    question = unique("Seat check: what is six times seven?")
    open_debate_page(page, server.url)
    configure_debate(page, question, [MODEL, MODEL])
    choose(page, "agent_model_1", "a person")
    expect(by_key(page, "seat_settings_agent_model_1")).to_be_visible()
    start(page)
    code_box = by_key(page, "seat_code_0")
    expect(code_box).to_contain_text(re.compile(r"[A-Z0-9]{6}"), timeout=LIVE_TIMEOUT)
    code = re.search(r"\b([A-Z0-9]{6})\b", code_box.inner_text()).group(1)
    contexts = []
    try:
        phone = phone_joins(browser, contexts, server.url, code, "Ada")
        expect(by_key(phone, "seat_box")).to_contain_text("Seat: Agent 2", timeout=LIVE_TIMEOUT)
        expect(by_key(phone, "seat_turn")).to_contain_text("Your turn as Agent 2 (discussion)", timeout=LIVE_TIMEOUT)
        expect(by_key(phone, "seat_messages")).to_contain_text(question)
        expect(by_key(phone, "seat_messages")).to_contain_text("Final answer: 42")  # Agent 1 spoke first (memory)
        expect(by_key(page, "seat_0")).to_contain_text("held by Ada")

        stranger = phone_joins(browser, contexts, server.url, code, "Bo")
        expect(by_key(stranger, "seat_refused")).to_contain_text("Ada holds this seat")
        expect(by_key(stranger, "seat_box")).to_have_count(0)  # must not: a second holder

        send(phone, "Six sevens are forty-two.\nFinal answer: 42")
        expect(by_key(phone, "seat_turn")).to_contain_text("(vote)", timeout=LIVE_TIMEOUT)
        expect(by_key(phone, "seat_format")).to_contain_text("the number of the solution you vote for")
        send(phone, "1")
        expect_status(page, "finished")
        expect(page.get_by_text("typed by a person").first).to_be_visible()
        expect(page.get_by_text("Six sevens are forty-two.").first).to_be_visible()
        expect_no_exception(page)
    finally:
        for context in contexts:
            context.close()
    debate = debate_by_question(store, question)
    rows = store.query("SELECT agent, kind, model, seat, content FROM turns WHERE debate_id = ? ORDER BY seq",
                       [debate["id"]])
    typed = [(r["kind"], r["content"]) for r in rows if r["agent"] == "Agent 2"]
    assert typed == [("discussion", "Six sevens are forty-two.\nFinal answer: 42"), ("vote", "1")]
    assert {r["seat"] for r in rows if r["agent"] == "Agent 2"} == {"person"}
    assert {r["model"] for r in rows if r["agent"] == "Agent 2"} == {"person"}
