"""Scenario: a model's reply has a single line break; the Debate page and the Transcripts page show
it on two lines (Markdown alone joins them: "…in future The correct answer…").

Must not happen: the two lines drawn as one."""
from __future__ import annotations

import pytest
from e2e_helpers import click, expect, expect_no_exception, finished_debate, open_app, turn, unique

pytestmark = pytest.mark.e2e
FIRST, SECOND = "even better yet in future", "The correct answer is 42"


def assert_two_lines(bubble) -> None:
    expect(bubble).to_contain_text(SECOND)
    text = bubble.inner_text()
    assert f"{FIRST}\n{SECOND}" in text, text
    assert f"{FIRST} {SECOND}" not in text  # must not happen: the lines joined


def test_a_single_line_break_in_a_reply_stays_a_line_break(page, server, store):
    debate = finished_debate(page, server.url, store, unique("Line break check"), ["scripted/line_breaks"] * 2)
    assert_two_lines(turn(page, 0))
    open_app(page, server.url, "/Transcripts")
    click(page, f"open_{debate['id'][:8]}")
    assert_two_lines(turn(page, 0))
    expect_no_exception(page)
