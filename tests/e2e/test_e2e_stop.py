"""Scenario 2: Stop while the second agent streams: its partial text stays, the third never speaks."""
from __future__ import annotations

import pytest
from e2e_scripts import words
from e2e_helpers import (LIVE_TIMEOUT, click, configure_debate, debate_by_question, expect, expect_no_exception,
                         expect_status, key, open_debate_page, start, turn, unique)

pytestmark = pytest.mark.e2e


def test_stop_mid_turn_keeps_partial_text(page, server, store):
    open_debate_page(page, server.url)
    question = unique("Stop check: name a prime number.")
    configure_debate(page, question, ["scripted/slow"] * 3)
    start(page)

    second = words("lb", 30)
    expect(turn(page, 1)).to_contain_text(second[2], timeout=LIVE_TIMEOUT)
    click(page, "stop")  # the mouse stays over Stop, which is disabled at once: no mouse-leave follows
    expect_status(page, "stopped")
    # Must not happen: a hover tooltip ("Cut the turn under way…") left over the Pause | Resume row.
    expect(page.locator('[data-testid="stTooltipContent"], [role="tooltip"]')).to_have_count(0)
    expect(key(page, "controls")).to_contain_text("Stop: end now")  # said in a caption instead

    expect(turn(page, 1)).to_be_visible()
    partial = turn(page, 1).inner_text()
    assert second[0] in partial and second[2] in partial, partial
    assert second[-1] not in partial, f"turn_1 finished before Stop took effect: {partial!r}"
    # Must not happen: the third agent speaks after Stop (the debate is over once 'stopped' shows).
    expect(turn(page, 2)).to_have_count(0)
    expect_no_exception(page)

    record = debate_by_question(store, question)
    assert record["status"] == "stopped"
    labels = [a["label"] for a in store.agents(record["id"])]
    turns = store.turns(record["id"])
    assert [t.agent for t in turns] == labels[:2], [(t.seq, t.agent, t.status) for t in turns]
    assert not [t for t in turns if t.agent == labels[2]]
    assert turns[0].status == "ok"
    assert turns[1].status == "interrupted"
    assert turns[1].content.strip(), "the partial text of the interrupted turn was not stored"
    assert " ".join(second).startswith(turns[1].content.strip())
    assert second[-1] not in turns[1].content
