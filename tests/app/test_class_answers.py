"""Answers a class can read and nothing to wait for in the dark (issue 18), as page logic: the Presenter's
answer lines, the poll's "current answers" and the handout agree; a numeric reference suggests the number
answer type; Start refuses a remote model without its API key before anything runs."""
from __future__ import annotations

import re

from app_helpers import APP, SCRIPT, app, keys, scripted_debate, texts
from streamlit.testing.v1 import AppTest
from test_debate_page import fill

from mad_core import handout, live
from mad_core.store import Store, list_debates

PRESENTER = "pages/5_Presenter.py"
REPLIES = {"Agent 1": "Five cents.\nFinal answer: $0.05", "Agent 2": "Final answer: 4.0000000000000001",
           "Agent 3": "Cents it is.\nFinal answer: 5 cents = $0.05", "Agent 4": "I am not sure."}
SHOWN = ["0.05", "4", "0.05", "no readable answer"]  # in agent order


def number_debate() -> str:
    def reply(messages, info):
        return REPLIES[info["metadata"]["agent"]]

    data = {"question": "How much does the ball cost?", "answer_type": "number", "rounds": 1, "max_rounds": 1,
            "protocol": "solution_counting", "extract_final_answers": False,
            "agents": [{"label": label, "model": "scripted/numbers"} for label in REPLIES]}
    return scripted_debate("numbers", reply, data)


def plain(markdown: str) -> str:
    return markdown.replace("\\", "")


def test_the_presenter_the_poll_and_the_handout_show_the_same_answers():
    debate_id = number_debate()
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.query_params["replay"] = debate_id
    at.switch_page(PRESENTER).run()
    at.selectbox(key="presenter_round").set_value(1).run()  # round 1's first turn
    for _ in range(len(REPLIES) - 1):  # every agent's turn, not yet the decision
        at.button(key="presenter_next").click().run()
    assert not at.exception, at.exception
    presenter = [plain(texts(at.get_by_key(f"presenter_answer_{i}"))).removeprefix("#### Answer: ")
                 for i in range(len(REPLIES))]
    at.button(key="poll_fill").click().run()
    poll = at.text_area(key="poll_options").value.splitlines()
    markdown = handout.handout_markdown(Store(), debate_id, images=False)
    lines = [plain(line).removeprefix("**Answer:** ") for line in markdown.splitlines()
             if line.startswith("**Answer:** ")]
    printed = lines[1:]  # the first is the decision's
    assert presenter == printed == SHOWN
    assert poll == ["0.05", "4"]  # the readable answers, each once, in the agents' order
    assert lines[0] == "0.05"  # the decision card's answer, read the same way: 0.05 counted twice, 4 once
    # must not happen: a float's noise, an unreduced fraction or a cut reply anywhere
    everything = "\n".join(presenter + poll + lines)
    assert not re.search(r"4\.0000|40000000000000001|Five cents|Cents it is", everything)


def test_a_numeric_reference_suggests_the_number_type_and_one_click_applies_it():
    at = app()
    at.text_input(key="reference").set_value("$0.05").run()
    assert at.selectbox(key="answer_type").value == "text"  # must not happen: the type changed by itself
    assert "reads as a number" in texts(at.get_by_key("suggest_number_type"))
    at.button(key="use_number_type").click().run()
    assert at.selectbox(key="answer_type").value == "number"
    assert "suggest_number_type" not in keys(at)
    at.selectbox(key="answer_type").set_value("text").run()
    at.text_input(key="reference").set_value("Paris").run()
    assert "suggest_number_type" not in keys(at)  # must not happen: a text reference suggests a number


def remote_form(monkeypatch, key: str | None) -> AppTest:
    if key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    return fill(app(), models={0: "openai/gpt-4o-mini"})


def test_start_refuses_a_remote_model_without_its_key_before_anything_runs(monkeypatch):
    at = remote_form(monkeypatch, None)
    at.button(key="start").click().run()
    message = plain(texts(at.get_by_key("error_agent_model_0")))
    assert "openai/gpt-4o-mini" in message and "OPENAI_API_KEY" in message and ".streamlit/secrets.toml" in message
    assert "Model 1" in texts(at.get_by_key("form_errors"))
    # must not happen: a debate started or written, or the other agents' scripted model refused
    assert "debate_id" not in at.session_state and list_debates(Store()) == []
    assert "error_agent_model_1" not in keys(at)


def test_start_with_the_key_set_goes_past_the_check(monkeypatch):
    reached = []

    def start(config, **kwargs):  # stands in for the real start: nothing is called, nothing runs
        reached.append(config.agents[0].model)
        raise RuntimeError("stopped before any call")

    monkeypatch.setattr(live, "start", start)
    at = remote_form(monkeypatch, "sk-test-not-a-real-key")
    at.button(key="start").click().run()
    assert reached == ["openai/gpt-4o-mini"]
    assert "stopped before any call" in texts(at.get_by_key("error_form"))
    assert "error_agent_model_0" not in keys(at)  # must not happen: the key asked for although it is set


def test_classroom_presets_come_first_and_say_what_they_show():
    at = app()
    options = at.selectbox(key="preset").options
    assert options[1:4] == ["Can the majority be wrong?", "Does arguing fix a wrong answer?", "Who speaks last wins?"]
    at.selectbox(key="preset").set_value("lesson_arguing_fixes").run()
    note = texts(at.get_by_key("preset_note"))
    assert "What it shows:" in note and "about 9 model calls" in note
    assert at.selectbox(key="answer_type").value == "number" and at.text_input(key="reference").value == "0.05"
    assert "suggest_number_type" not in keys(at)  # the type is already number


def test_a_scripted_model_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = fill(app(), model=f"scripted/{SCRIPT}")
    at.button(key="start").click().run()
    assert "debate_id" in at.session_state and not [k for k in keys(at) if k.startswith("error_")]
    live.get(at.session_state["debate_id"]).thread.join(timeout=30)
