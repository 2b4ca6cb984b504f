"""A decision as Compare and the decision card show it (issue 10, third trial): the decided answer
is text, never Markdown structure ("1. Not a number. 2. Not a number." is no numbered list), and a
winner whose answer is its extracted final answer is named so, beside a last discussion reply
that says something else."""
from __future__ import annotations

import pytest
from app_helpers import COMPARE, app, open_debate, run_debate, scripted_debate, texts

LISTED = "1. Not a number. 2. Not a number."  # the researcher's decision, read as a numbered list


def reply(messages, info):
    meta = info["metadata"]
    if meta["kind"] == "vote":
        return "1"
    if meta["kind"] == "extraction":
        return '{"answer": "%s"}' % (LISTED if meta["agent"] == "Agent 1" else "# 42")
    return "I will give an example here of what a number might be."


@pytest.fixture
def listed():
    return scripted_debate("compare_listed", reply, {
        "question": "Is NaN a number?", "rounds": 1, "max_rounds": 1, "protocol": "simple_voting",
        "extract_final_answers": True,
        "agents": [{"label": f"Agent {i}", "model": "scripted/compare_listed"} for i in (1, 2)]})


def test_compare_shows_a_decision_that_looks_like_a_list_literally(listed):
    other = run_debate("Which river flows through Paris?")
    at = app(COMPARE)
    at.multiselect(key="compare_ids").set_value([listed, other]).run()
    assert not at.exception, at.exception
    column = at.get_by_key(f"compare_{listed[:8]}")
    shown = [str(m.value) for m in column.markdown]
    # every Markdown character escaped: it renders as the text "1. Not a number. 2. Not a number."
    assert r"**Decision:** 1\. Not a number\. 2\. Not a number\." in shown
    # Must not happen: the model's text handed to Markdown as it is (a numbered list, or a heading).
    assert not any(text.lstrip().startswith(("1.", "#")) for text in shown)
    assert "winner Agent 1's final answer" in texts(column)


def test_the_decision_card_says_the_winners_answer_is_its_extracted_final_answer(listed):
    at = open_debate(listed)
    card = texts(at.get_by_key("decision_card"))
    assert "winner **Agent 1's final answer**" in card
    # a debate without extraction names the winner alone
    plain = texts(open_debate(run_debate("Which ocean is the largest?", extract_final_answers=False))
                  .get_by_key("decision_card"))
    assert "winner **Agent 1**" in plain and "extracted" not in plain
