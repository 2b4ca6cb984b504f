"""Scenario 5: fork a finished debate at a middle turn from the Transcripts page."""
from __future__ import annotations

import re

import pytest
from e2e_helpers import (LIVE_TIMEOUT, click, configure_debate, debate_by_question, expect, expect_no_exception,
                         expect_status, key, open_app, open_debate_page, start, turn, unique, wait_for_idle)

pytestmark = pytest.mark.e2e


def test_fork_continues_as_linked_debate(page, server, store):
    open_debate_page(page, server.url)
    question = unique("Fork check: what is the capital of France?")
    configure_debate(page, question, ["scripted/forkme"] * 3)
    start(page)
    expect_status(page, "finished")

    parent = debate_by_question(store, question)
    parent_turns = store.turns(parent["id"])
    k = 1  # a middle turn: Agent 2's reply in round 1
    fork_seq = parent_turns[k].seq

    open_app(page, server.url, "/Transcripts")
    expect(key(page, "debate_list")).to_be_visible()
    click(page, f"open_{parent['id'][:8]}")
    expect(turn(page, k)).to_contain_text("fbw01")
    click(page, f"fork_{k}")

    expect(key(page, "start")).to_be_visible(timeout=LIVE_TIMEOUT)
    expect(key(page, "question").locator("textarea")).to_have_value(question)
    start(page)
    expect_status(page, "finished")
    expect_no_exception(page)

    children = list(store.db.query("SELECT id FROM debates WHERE parent_id = ?", [parent["id"]]))
    assert len(children) == 1, children
    child = store.get_debate(children[0]["id"])
    assert child["status"] == "finished"
    assert child["forked_from_seq"] == fork_seq
    inherited = [t for t in store.turns(child["id"]) if t.seq <= fork_seq]
    expected = [t for t in parent_turns if t.seq <= fork_seq]
    assert [(t.seq, t.agent, t.kind, t.content) for t in inherited] == \
        [(t.seq, t.agent, t.kind, t.content) for t in expected]
    # Must not happen: the fork writes into its parent.
    assert [t.id for t in store.turns(parent["id"])] == [t.id for t in parent_turns]
    assert store.get_debate(parent["id"])["status"] == "finished"


FLAMINGO = "Moderator note: remember the flamingo rule, check the pressure."
PELICAN = "Pelican aside, sent after the fork point."


def test_fork_keeps_the_parents_moderator_message_and_marks_what_it_copied(page, server, store, script):
    """The tester's case: a message to all sent after Agent 1's turn, the fork made on Agent 2's turn
    (turn 1). The parent runs here, in the test's process, on the server's database (its messages
    said while Agent 1 and Agent 2 speak); the fork runs in the app on the `fork_msg` script."""
    from e2e_scripts import reply as scripted_reply

    from mad_core import Controller, DebateConfig, DebateEngine

    controller = Controller()

    def parent_reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "discussion":
            said = {"Agent 1": FLAMINGO, "Agent 2": PELICAN}.get(meta["agent"])
            if said:
                controller.say(said)  # applied after this turn, before the next agent's prompt
            return scripted_reply({"Agent 1": "pa", "Agent 2": "pb", "Agent 3": "pc"}[meta["agent"]], 6, "100")
        return "100" if meta["kind"] == "extraction" else "1"

    model, _ = script(parent_reply, name="fork_msg")
    question = unique("Fork with a message: at what temperature does water boil?")
    config = DebateConfig.from_dict({"question": question, "rounds": 1, "max_rounds": 1,
                                     "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)]})
    parent = DebateEngine(config, controller=controller, store=store)
    list(parent.run())
    parent_turns = store.turns(parent.debate_id)
    assert FLAMINGO in str(parent_turns[2].prompt) and PELICAN in str(parent_turns[2].prompt)

    open_app(page, server.url, "/Transcripts")
    click(page, f"open_{parent.debate_id[:8]}")
    expect(turn(page, 1)).to_contain_text("pbw01")
    click(page, "fork_1")
    expect(key(page, "start")).to_be_visible(timeout=LIVE_TIMEOUT)
    start(page)
    expect_status(page, "finished")
    expect_no_exception(page)

    # The fork's transcript: the message where it was said, marked as the parent's, and the copied turns.
    expect(key(page, "steer_0")).to_contain_text(FLAMINGO)
    expect(key(page, "steer_0")).to_contain_text("from the parent")
    for k in (0, 1):
        expect(turn(page, k)).to_contain_text("from the parent")
    expect(turn(page, 2)).to_contain_text("fmw01")
    # Must not happen: the fork's own turn marked as copied, or the message sent after the fork point shown.
    expect(turn(page, 2)).not_to_contain_text("from the parent")
    expect(page.get_by_text(PELICAN)).to_have_count(0)

    child = store.db.query("SELECT id FROM debates WHERE parent_id = ?", [parent.debate_id])
    child_turns = store.turns(next(child)["id"])
    first_new = next(t for t in child_turns if t.seq > 1)
    assert first_new.agent == "Agent 3" and FLAMINGO in str(first_new.prompt)
    assert not any(PELICAN in str(t.prompt) for t in child_turns)


def test_fork_opens_the_debate_page_at_its_address_at_the_top_and_says_it_is_a_fork(page, server, store, script):
    """The researcher's case at 1280x720: Fork on a turn far down a long transcript. The Debate page
    opens at its own address ("/", not "/Transcripts"), scrolled to the top (its title and the fork's
    banner in view), and the fork, running and finished, says "fork of <parent> after turn N" with a
    button to open the parent. The parent runs here, in the test's process; the fork on `fork_top`."""
    from mad_core import DebateConfig, DebateEngine

    page.set_viewport_size({"width": 1280, "height": 720})
    model, _ = script(["Final answer: 7"], name="fork_top")
    question = unique("Fork at the top: how many days has a week?")
    config = DebateConfig.from_dict({"question": question, "rounds": 3, "max_rounds": 3,
                                     "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)]})
    parent = DebateEngine(config, store=store)
    list(parent.run())
    k = 5  # far down the transcript: the page is scrolled to reach its Fork button
    seq = store.turns(parent.debate_id)[k].seq

    open_app(page, server.url, f"/Transcripts?open={parent.debate_id}")
    fork_button = key(page, f"fork_{k}")
    fork_button.scroll_into_view_if_needed()
    assert page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollTop") > 0
    fork_button.get_by_role("button").click()

    expect(key(page, "fork_banner")).to_be_visible(timeout=LIVE_TIMEOUT)
    wait_for_idle(page)
    expect(page).to_have_url(re.compile(r"^http://[^/]+/(\?.*)?$"))
    expect(key(page, "fork_banner")).to_be_in_viewport(ratio=1)
    expect(page.get_by_text("MAD Lab · watch and steer")).to_be_in_viewport(ratio=1)
    # Must not happen: the Transcripts page's address kept while the Debate page is shown.
    assert "/Transcripts" not in page.url

    start(page)
    note = key(page, "fork_note")
    expect(note).to_contain_text(f"fork of {parent.debate_id[:8]} after turn {seq}")  # while it runs
    expect_status(page, "finished")
    expect(note).to_contain_text(f"fork of {parent.debate_id[:8]} after turn {seq}")  # and after
    click(page, "fork_parent")
    expect(key(page, "debate_title")).to_contain_text(question)
    assert f"open={parent.debate_id}" in page.url
