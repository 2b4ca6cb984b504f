"""Scenario 4: markup in model text is shown as text and never runs."""
from __future__ import annotations

import pytest
from e2e_helpers import (configure_debate, expect, expect_no_exception, expect_status, open_debate_page,
                         open_disclosure, start, turn, unique)

pytestmark = pytest.mark.e2e


def test_model_markup_is_shown_as_text(page, server, store):
    open_debate_page(page, server.url)
    question = unique("XSS check: say something.")
    configure_debate(page, question, ["scripted/xss"] * 2)
    start(page)
    expect_status(page, "finished")

    for k in (0, 1):
        expect(turn(page, k)).to_contain_text("<script>window.__xss=1</script>")
        expect(turn(page, k)).to_contain_text('<img src=x onerror="window.__xss=2">')
    # Agent 2's prompt quotes agent 1's reply: shown as text too.
    expect(open_disclosure(page, "prompt_1")).to_contain_text("<script>")
    expect_no_exception(page)

    # Must not happen: the markup ran or became elements.
    assert page.evaluate("window.__xss") is None
    expect(page.locator('img[src="x"]')).to_have_count(0)
    assert page.evaluate("() => [...document.scripts].filter(s => s.textContent.includes('__xss')).length") == 0
