"""A page that remembers: the session token in the URL, the form and the watched debate brought back
on a reload (a new session with the same URL), the owner id following the token, the list of running
debates on a fresh tab, and the memory itself (bounded, copies in and out)."""
from __future__ import annotations

from app_helpers import APP, HELD, SCRIPT, TRANSCRIPTS, app, config, join, keys, run_debate, texts
from streamlit.testing.v1 import AppTest

from mad_core import live
from mad_core.store import Store
from madlab_ui import session_memory
from madlab_ui.session_memory import DEBATE_PARAM, TOKEN_PARAM, Memory, valid_token

INFO = "Pick a preset or write a question"


def reload(token: str | None = None, debate: str | None = None, page: str = APP) -> AppTest:
    """A new session (what a reload or a second tab is to Streamlit) opened with this URL."""
    at = AppTest.from_file(APP, default_timeout=30)
    if token:
        at.query_params[TOKEN_PARAM] = token
    if debate:
        at.query_params[DEBATE_PARAM] = debate
    at.run()
    if page != APP:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def typed(at: AppTest, question: str) -> AppTest:
    at.text_area(key="question").set_value(question)
    at.number_input(key="n_agents").set_value(2)
    at.number_input(key="max_tokens").set_value(77).run()
    at.text_input(key="agent_persona_1").set_value("a careful historian").run()
    for i in range(2):
        at.session_state[f"agent_model_{i}"] = f"scripted/{SCRIPT}"
    return at.run()


def test_a_first_visit_gets_a_token_in_the_url_that_is_its_owner_id():
    at = app()
    token = at.query_params[TOKEN_PARAM]
    token = token[0] if isinstance(token, list) else token
    assert valid_token(token)
    assert at.session_state["owner_id"] == token
    assert DEBATE_PARAM not in at.query_params  # nothing watched yet


def test_reload_brings_back_the_form_and_the_running_debate_it_still_owns(gate):
    first = typed(app(), "Which river is longest?")
    token = first.session_state["owner_id"]
    for i in range(2):
        first.session_state[f"agent_model_{i}"] = f"scripted/{HELD}"
    first.run()
    first.button(key="start").click().run()
    debate_id = first.session_state["debate_id"]
    assert first.query_params[DEBATE_PARAM] in (debate_id, [debate_id])

    again = reload(token)  # the same URL, a new session (no debate= parameter: the memory has it)
    assert again.text_area(key="question").value == "Which river is longest?"
    assert again.number_input(key="n_agents").value == 2
    assert again.number_input(key="max_tokens").value == 77
    assert again.text_input(key="agent_persona_1").value == "a careful historian"
    assert again.session_state["debate_id"] == debate_id
    assert "running" in texts(again.get_by_key("debate_status"))
    # Must not happen: the empty page's hint instead of the debate.
    assert INFO not in texts(again.main)
    # The owner id follows the token: the reloaded session owns the debate it started.
    assert again.session_state["owner_id"] == token == live.get(debate_id).owner
    assert len(live.running()) == 1  # reattaching started nothing


def test_a_second_tab_with_the_debate_in_its_url_shows_that_debate():
    debate_id = run_debate("Which planet is largest?")
    at = reload(debate=debate_id)
    assert at.session_state["debate_id"] == debate_id
    assert "finished" in texts(at.get_by_key("debate_status"))
    assert "turn_0" in keys(at)
    assert at.text_area(key="question").value == ""  # a URL without a token brings no form back
    assert at.session_state["owner_id"] != ""


def test_the_url_debate_wins_over_the_remembered_one():
    first, second = run_debate("First question?"), run_debate("Second question?")
    at = app()
    token = at.session_state["owner_id"]
    session_memory.MEMORY.save(token, {"debate_id": first, "question": "typed before"})
    again = reload(token, debate=second)
    assert again.session_state["debate_id"] == second
    assert again.text_area(key="question").value == "typed before"


def test_reload_on_another_page_keeps_the_form_for_the_debate_page():
    first = typed(app(), "Why is the sea salty?")
    token = first.session_state["owner_id"]
    elsewhere = reload(token, page=TRANSCRIPTS)
    elsewhere.switch_page(APP).run()
    assert elsewhere.text_area(key="question").value == "Why is the sea salty?"


def test_a_fresh_tab_lists_the_debates_running_now_to_watch(gate):
    typed(app(), "Not to be shown elsewhere")
    running = live.start(config(model=f"scripted/{HELD}"), store=Store(), owner="someone else")
    fresh = reload()
    assert INFO in texts(fresh.main)
    assert "Debates running now" in texts(fresh.get_by_key("running_list"))
    button = fresh.button(key=f"reattach_{running.debate_id[:8]}")
    assert button.label == "Watch"
    assert fresh.text_area(key="question").value == ""  # another session's form is not shown here
    button.click().run()
    assert fresh.session_state["debate_id"] == running.debate_id
    assert "running" in texts(fresh.get_by_key("debate_status"))


def test_a_forged_token_is_replaced_and_restores_nothing():
    at = reload("../../etc/passwd")
    token = at.session_state["owner_id"]
    assert valid_token(token) and token != "../../etc/passwd"
    assert at.query_params[TOKEN_PARAM] in (token, [token])


def test_a_gone_debate_in_the_url_is_dropped_from_it():
    at = reload(debate="0123456789abcdef0123456789abcdef")
    assert "is gone" in texts(at.main)
    assert DEBATE_PARAM not in at.query_params
    assert "debate_id" not in at.session_state


def test_start_is_remembered_before_the_page_is_drawn_again():
    at = typed(app(), "What is 6 times 7?")
    at.button(key="start").click().run()
    debate_id = at.session_state["debate_id"]
    join(debate_id)
    assert session_memory.MEMORY.load(at.session_state["owner_id"])["debate_id"] == debate_id


def test_memory_is_bounded_and_hands_out_copies():
    memory = Memory(limit=2)
    extra = {"connectivity": {"Agent 1": ["Agent 2"]}}
    memory.save("a", {"form_extra": extra})
    extra["connectivity"]["Agent 1"].append("Agent 3")  # the caller's dict changes afterwards
    loaded = memory.load("a")
    assert loaded == {"form_extra": {"connectivity": {"Agent 1": ["Agent 2"]}}}
    loaded["form_extra"]["connectivity"].clear()
    assert memory.load("a")["form_extra"]["connectivity"] == {"Agent 1": ["Agent 2"]}
    memory.save("b", {"question": "b"})
    memory.save("c", {"question": "c"})
    assert memory.load("a") == {}  # the oldest is forgotten beyond the limit
    assert (memory.load("b"), memory.load("c")) == ({"question": "b"}, {"question": "c"})
