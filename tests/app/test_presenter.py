"""The presenter page (agents side by side, the speaker highlighted, controls in the sidebar; live or
in replay) and the prediction poll (teacher controls, the stage, the students' page), as page logic.

AppTest never fires `run_every` fragments: every change below comes from a click or a run."""
from __future__ import annotations

from app_helpers import APP, Feed, app, keys, run_debate, texts
from streamlit.testing.v1 import AppTest

from mad_core import polls
from mad_core.events import (DebateStarted, PersonasAssigned, RoundStarted, TokenReceived, Turn, TurnFinished,
                             TurnStarted)
from mad_core.store import Store
from madlab_ui.replay import DECISION

PRESENTER = "pages/5_Presenter.py"
POLL = "pages/6_Poll.py"


def presenter(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30).run()
    for name, value in params.items():
        at.query_params[name] = value
    at.switch_page(PRESENTER).run()
    assert not at.exception, at.exception
    return at


def student(poll_id: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.query_params["poll"] = poll_id
    at.switch_page(POLL).run()
    assert not at.exception, at.exception
    return at


def test_replay_shows_agents_side_by_side_with_the_last_speaker_highlighted_and_no_form():
    debate_id = run_debate()
    at = presenter(replay=debate_id)
    present = keys(at)
    assert {"presenter_agent_0", "presenter_agent_1", "presenter_agent_2"} <= present
    assert "What is the capital of France?" in texts(at.get_by_key("presenter_question"))
    # Must not happen: the Debate page's form on the projector, or a speaker / the decision before any step.
    assert not {"question", "start", "n_agents"} & present
    assert "presenter_speaking" not in present and "decision_card" not in present
    assert at.session_state["replay"]["playing"] is False  # the presenter starts paused, at the start
    at.button(key="presenter_next").click().run()
    assert "zebrafinch" in texts(at.get_by_key("presenter_agent_0"))
    assert "Agent 1" in texts(at.get_by_key("presenter_speaking"))
    at.button(key="presenter_next").click().run()
    assert "Agent 2" in texts(at.get_by_key("presenter_speaking"))
    assert "quokka" in texts(at.get_by_key("presenter_agent_1")) and "zebrafinch" in texts(
        at.get_by_key("presenter_agent_0"))
    at.selectbox(key="presenter_round").set_value(DECISION).run()
    assert texts(at.get_by_key("decision_answer")) == "#### Paris"


def test_live_debate_highlights_the_streaming_agent_and_k_pauses_it():
    feed = Feed("f" * 32)
    config = {"question": "Live on the projector?", "agents": [{"label": f"Agent {i}", "model": "scripted/x"}
                                                               for i in (1, 2, 3)]}
    feed.send(DebateStarted("f" * 32, config), PersonasAssigned({"Agent 2": "A sceptical chemist."}),
              RoundStarted(1, ["Agent 2", "Agent 1", "Agent 3"]),
              TurnStarted("t1", 1, "Agent 2", "discussion", "scripted/x", []), TokenReceived("t1", "Agent 2", "Half a th"))
    try:
        at = app()
        at.session_state["debate_id"] = "f" * 32
        at.switch_page(PRESENTER).run()
        assert not at.exception, at.exception
        assert at.radio(key="presenter_source").value == "live"
        speaking = texts(at.get_by_key("presenter_speaking"))
        assert "Agent 2" in speaking and "Half a th" in speaking and "sceptical chemist" in speaking
        assert "has not spoken yet" in texts(at.get_by_key("presenter_agent_0"))
        pause = at.button(key="presenter_pause")
        assert pause.proto.shortcut and pause.label == "Pause"
        pause.click().run()
        assert feed.debate.controller.paused and at.button(key="presenter_pause").label == "Resume"
        at.button(key="presenter_pause").click().run()
        assert not feed.debate.controller.paused
    finally:
        feed.close()


def test_live_columns_say_what_the_speaker_does_in_true_words_and_paused_while_paused():
    """The persona call is the first agent's turn; then its discussion turn before and after its first
    word; K pauses it. Must not happen: "speaking" beside "has not spoken yet" in one column, or
    "speaking" while the debate is paused."""
    feed = Feed("e" * 32)
    config = {"question": "Truthful columns?", "agents": [{"label": f"Agent {i}", "model": "scripted/x"}
                                                          for i in (1, 2)]}
    feed.send(DebateStarted("e" * 32, config), TurnStarted("p0", 0, "Agent 1", "persona", "scripted/x", []),
              TokenReceived("p0", "Agent 1", '{"personas": ['))
    try:
        at = app()
        at.session_state["debate_id"] = "e" * 32
        at.switch_page(PRESENTER).run()
        assert not at.exception, at.exception
        column = texts(at.get_by_key("presenter_agent_0"))
        assert "writing the panel's personas" in column
        assert "speaking" not in column and "has not spoken yet" not in column
        assert '{"personas"' not in column  # the persona call's raw reply is not a discussion turn
        assert "has not spoken yet" in texts(at.get_by_key("presenter_agent_1"))

        feed.send(TurnFinished(Turn("p0", 0, 0, "Agent 1", "persona", "scripted/x", [], "{}")),
                  PersonasAssigned({"Agent 1": "A patient geologist."}),
                  RoundStarted(1, ["Agent 1", "Agent 2"]),
                  TurnStarted("t1", 1, "Agent 1", "discussion", "scripted/x", []))
        at.run()
        speaking = texts(at.get_by_key("presenter_speaking"))
        assert "about to speak" in speaking and "thinking" in speaking
        assert "has not spoken yet" not in speaking and "🎙️ speaking" not in speaking

        feed.send(TokenReceived("t1", "Agent 1", "Granite is"))
        at.run()
        speaking = texts(at.get_by_key("presenter_speaking"))
        assert "🎙️ speaking" in speaking and "Granite is ▌" in speaking

        at.button(key="presenter_pause").click().run()
        assert feed.debate.controller.paused
        speaking = texts(at.get_by_key("presenter_speaking"))
        assert "⏸️ paused" in speaking and "Granite is" in speaking
        assert "speaking" not in speaking and "▌" not in speaking
        assert "live: paused" in texts(at.get_by_key("presenter_stage"))
        at.button(key="presenter_pause").click().run()
        assert "🎙️ speaking" in texts(at.get_by_key("presenter_speaking"))
    finally:
        feed.close()


def test_poll_opened_predicted_from_two_places_hidden_until_the_decision_then_revealed():
    debate_id = run_debate()
    at = presenter(replay=debate_id)
    assert at.text_area(key="poll_options").value == ""  # nobody has answered yet at the start
    at.selectbox(key="presenter_round").set_value(1).run()
    for _ in range(2):
        at.button(key="presenter_next").click().run()
    at.button(key="poll_fill").click().run()
    assert at.text_area(key="poll_options").value == "Paris"  # the agents agree so far
    at.text_area(key="poll_options").set_value("Paris\nLyon").run()
    at.button(key="poll_open").click().run()
    poll = polls.polls_of(Store(), debate_id)[0]
    assert poll["options"] == ["Paris", "Lyon"] and poll["status"] == "open"
    assert f"/Poll?poll={poll['id']}" in texts(at.get_by_key("poll_link"))

    at.selectbox(key="poll_proxy_option").set_value("Lyon")
    at.text_input(key="poll_proxy_voter").set_value("Ada").run()
    at.button(key="poll_proxy_send").click().run()
    phone = student(poll["id"])
    assert [h.value for h in phone.header] == ["Which answer will the debate decide on?"]
    assert "What is the capital of France?" in texts(phone.get_by_key("poll_debate_question"))
    phone.radio(key="poll_choice").set_value("Paris")
    phone.text_input(key="poll_voter").set_value("Bo").run()
    phone.button(key="poll_predict").click().run()
    assert "Paris" in texts(phone.get_by_key("poll_mine"))
    at.run()
    assert texts(at.get_by_key("poll_count")).startswith("**2** predictions")
    # Must not happen: counts before the reveal, or a reveal before the decision is shown.
    assert "poll_results" not in keys(at) and "poll_results" not in keys(phone)
    assert at.button(key="poll_reveal").disabled
    at.button(key="poll_close").click().run()
    phone.run()
    assert "Predictions are closed" in texts(phone.main) and "poll_predict" not in keys(phone)

    at.selectbox(key="presenter_round").set_value(DECISION).run()
    at.button(key="poll_reveal").click().run()
    results = at.get_by_key("poll_results")  # on the projector: one line in the band beside the decision
    assert "Paris: **1** ✅ the decision · Lyon: **1**" in texts(results)
    assert "Predicted right (1 of 2):** Bo" in texts(results)
    assert "decision_card" in {getattr(node, "key", None) for node in at.get_by_key("presenter_band")}
    phone.run()
    assert "You predicted right" in texts(phone.main)
    assert [dict(r) for r in phone.get_by_key("poll_results").table[0].value.to_dict("records")] == [
        {"answer": "Paris", "predictions": 1, "decision": "✅ the decision"},
        {"answer": "Lyon", "predictions": 1, "decision": ""}]


def test_student_page_without_a_poll_asks_for_the_code_and_names_an_unknown_one():
    at = app(POLL)
    assert "poll_id_input" in keys(at)
    at.text_input(key="poll_id_input").set_value("nope").run()
    assert "there is no poll nope" in texts(at.main)


def test_a_student_who_reloads_the_poll_page_still_sees_their_prediction_and_casts_no_second():
    from madlab_ui.session_memory import TOKEN_PARAM

    debate_id = run_debate()
    poll_id = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"])
    phone = student(poll_id)
    phone.radio(key="poll_choice").set_value("Lyon").run()  # no name: an anonymous guest of this device
    phone.button(key="poll_predict").click().run()
    assert "Lyon" in texts(phone.get_by_key("poll_mine"))
    token = phone.query_params[TOKEN_PARAM]
    reloaded = AppTest.from_file(APP, default_timeout=30)  # a reload is a new session with the same URL
    reloaded.query_params[TOKEN_PARAM] = token[0] if isinstance(token, list) else token
    reloaded.query_params["poll"] = poll_id
    reloaded.run()
    reloaded.switch_page(POLL).run()
    assert not reloaded.exception, reloaded.exception
    assert "Lyon" in texts(reloaded.get_by_key("poll_mine"))
    reloaded.radio(key="poll_choice").set_value("Paris").run()
    reloaded.button(key="poll_predict").click().run()
    # Must not happen: the reloaded device counts as a second voter.
    assert polls.results(Store(), poll_id)["total"] == 1
    assert "Paris" in texts(reloaded.get_by_key("poll_mine"))
