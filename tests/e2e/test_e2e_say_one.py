"""Scenario 3: a moderator message to one agent reaches that agent's next prompt and no one else's."""
from __future__ import annotations

import pytest
from e2e_scripts import words
from e2e_helpers import (LIVE_TIMEOUT, choose, click, configure_debate, debate_by_question, expect,
                         expect_no_exception, expect_status, fill, key, open_debate_page, open_disclosure, start,
                         turn, unique)

pytestmark = pytest.mark.e2e


def test_message_to_one_agent_reaches_only_its_prompt(page, server, store):
    open_debate_page(page, server.url)
    question = unique("Steering check: what colour is the sky?")
    configure_debate(page, question, ["scripted/steer"] * 3)
    start(page)

    expect(turn(page, 0)).to_contain_text(words("ta", 30)[1], timeout=LIVE_TIMEOUT)
    expect(turn(page, 2)).to_have_count(0)  # Agent 3 has not spoken yet
    message = unique("Please consider sunsets")
    choose(page, "say_one_agent", "Agent 3")
    fill(page, "say_one_text", message)
    click(page, "say_one_send")

    expect(key(page, "steer_0")).to_contain_text(message, timeout=LIVE_TIMEOUT)
    expect(key(page, "steer_0")).to_contain_text("Agent 3")
    expect_status(page, "finished", timeout=180_000)
    expect(turn(page, 2)).to_contain_text("Agent 3")
    expect(open_disclosure(page, "prompt_2")).to_contain_text(message)
    # Must not happen: the message shows up in another agent's prompt.
    for k in (0, 1):
        shown = open_disclosure(page, f"prompt_{k}")
        expect(shown).to_contain_text(question)  # the prompt is drawn: the next check is not vacuous
        expect(shown).not_to_contain_text(message)
    expect_no_exception(page)

    record = debate_by_question(store, question)
    turns = store.turns(record["id"])
    third = turns[2]  # turn_2 in the UI: Agent 3's round-1 reply
    assert third.agent == "Agent 3" and third.kind == "discussion"
    assert any(message in m["content"] for m in third.prompt)
    leaked = [(t.seq, t.agent, t.kind) for t in turns
              if t.agent != "Agent 3" and any(message in m["content"] for m in t.prompt)]
    assert not leaked, f"the message reached other agents: {leaked}"
    steering = [s for s in store.steering(record["id"]) if s["action"] == "message"]
    assert [(s["targets"], s["message"]) for s in steering] == [(["Agent 3"], message)]
