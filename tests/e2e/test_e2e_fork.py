"""Scenario 5: fork a finished debate at a middle turn from the Transcripts page."""
from __future__ import annotations

import pytest
from e2e_helpers import (LIVE_TIMEOUT, click, configure_debate, debate_by_question, expect, expect_no_exception,
                         expect_status, key, open_app, open_debate_page, start, turn, unique)

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
