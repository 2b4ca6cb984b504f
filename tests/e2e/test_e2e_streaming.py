"""Scenario 1: a turn's text streams into its bubble, then the decision card and plots appear."""
from __future__ import annotations

import pytest
from e2e_scripts import words
from e2e_helpers import (LIVE_TIMEOUT, configure_debate, debate_by_question, expect, expect_no_exception,
                         expect_status, key, open_debate_page, start, turn, unique)

pytestmark = pytest.mark.e2e


def test_turn_text_grows_while_streaming(page, server, store):
    open_debate_page(page, server.url)
    question = unique("Streaming check: what is six times seven?")
    configure_debate(page, question, ["scripted/stream"] * 3)
    start(page)

    first = turn(page, 0)
    reply = words("sa", 30)
    expect(first).to_contain_text(reply[2], timeout=LIVE_TIMEOUT)
    early = first.inner_text()
    # Must not happen: the whole reply arriving at once (the bubble is complete when first seen).
    assert reply[-1] not in early, f"turn_0 was already complete when its 3rd word appeared: {early!r}"
    expect(first).to_contain_text(reply[15])
    later = first.inner_text()
    assert len(later) > len(early), (early, later)
    expect(first).to_contain_text("Agent 1")
    expect(first).to_contain_text("Final answer: 42", timeout=LIVE_TIMEOUT)

    expect_status(page, "finished")
    expect(key(page, "decision_card")).to_be_visible()
    expect(key(page, "decision_card")).to_contain_text("42")
    for plot in ("plot_diversity", "plot_entropy", "plot_votes", "plot_timeline"):
        expect(key(page, plot)).to_be_visible()
    expect_no_exception(page)

    record = debate_by_question(store, question)
    assert record["status"] == "finished"
    assert record["answer"] == "42"
