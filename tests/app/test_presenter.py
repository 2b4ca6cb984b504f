"""The presenter page (agents side by side, the speaker highlighted, controls in the sidebar; live or
in replay) and the prediction poll (teacher controls, the stage, the students' page), as page logic.

AppTest never fires `run_every` fragments: every change below comes from a click or a run."""
from __future__ import annotations

from app_helpers import APP, Feed, app, keys, run_debate, scripted_debate, texts
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


def speaking(at: AppTest) -> dict[int, str]:
    """The highlighted (speaking) columns: agent index -> their text."""
    return {int(k.rsplit("_", 1)[1]): texts(at.get_by_key(k)) for k in keys(at) if k.startswith("presenter_speaking_")}


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
    assert not speaking(at) and "decision_card" not in present
    assert at.session_state["replay"]["playing"] is False  # the presenter starts paused, at the start
    at.button(key="presenter_next").click().run()
    assert "zebrafinch" in texts(at.get_by_key("presenter_agent_0"))
    assert list(speaking(at)) == [0] and "Agent 1" in speaking(at)[0]
    at.button(key="presenter_next").click().run()
    assert list(speaking(at)) == [1] and "Agent 2" in speaking(at)[1]
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
        now = speaking(at)[1]
        assert "Agent 2" in now and "Half a th" in now and "sceptical chemist" in now
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
        speaking_now = speaking(at)[0]
        assert "about to speak" in speaking_now and "thinking" in speaking_now
        assert "has not spoken yet" not in speaking_now and "🎙️ speaking" not in speaking_now

        feed.send(TokenReceived("t1", "Agent 1", "Granite is"))
        at.run()
        speaking_now = speaking(at)[0]
        assert "🎙️ speaking" in speaking_now and "Granite is ▌" in speaking_now

        at.button(key="presenter_pause").click().run()
        assert feed.debate.controller.paused
        speaking_now = speaking(at)[0]
        assert "⏸️ paused" in speaking_now and "Granite is" in speaking_now
        assert "speaking" not in speaking_now and "▌" not in speaking_now
        assert "live: paused" in texts(at.get_by_key("presenter_stage"))
        at.button(key="presenter_pause").click().run()
        assert "🎙️ speaking" in speaking(at)[0]
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
    assert poll["options"] == ["Paris", "Lyon", "Something else"] and poll["status"] == "open"
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
    # On the projector: one short line per answer and one of who predicted right, beside the decision.
    assert [texts(at.get_by_key(f"poll_result_{i}")) for i in range(2)] == [
        "✅ **1** · Paris · the decision", "✗ **1** · Lyon"]  # "Something else": nobody chose it, not right
    assert texts(at.get_by_key("poll_right")) == "**Predicted right: 1 of 2** · Bo"
    assert "poll_result_2" not in keys(at)
    assert "decision_card" in {getattr(node, "key", None) for node in at.get_by_key("presenter_band")}
    phone.run()
    assert "You predicted right" in texts(phone.main)
    assert [dict(r) for r in phone.get_by_key("poll_results").table[0].value.to_dict("records")] == [
        {"answer": "Paris", "predictions": 1, "decision": "✅ the decision"},
        {"answer": "Lyon", "predictions": 1, "decision": "✗ not the decision"},
        {"answer": "Something else", "predictions": 0, "decision": "✗ not the decision"}]


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


def test_a_simultaneous_round_highlights_every_agent_streaming_now_with_one_line_headings():
    """Three drafts written at once: every streaming agent's column is highlighted and says so on its
    caption line. Must not happen: only the last agent to start highlighted while the others' text
    still grows, or the heading carrying the mark (it wrapped to two lines at 1280 px)."""
    feed = Feed("d" * 32)
    config = {"question": "All at once?", "paradigm": "simultaneous",
              "agents": [{"label": f"Agent {i}", "model": "scripted/x"} for i in (1, 2, 3)]}
    feed.send(DebateStarted("d" * 32, config), RoundStarted(1, ["Agent 1", "Agent 2", "Agent 3"]),
              TurnStarted("s1", 1, "Agent 1", "draft", "scripted/x", []),
              TurnStarted("s2", 1, "Agent 2", "draft", "scripted/x", []),
              TurnStarted("s3", 1, "Agent 3", "draft", "scripted/x", []),
              TokenReceived("s1", "Agent 1", "18. 9 is"), TokenReceived("s2", "Agent 2", "91 is not"))
    try:
        at = app()
        at.session_state["debate_id"] = "d" * 32
        at.switch_page(PRESENTER).run()
        assert not at.exception, at.exception
        now = speaking(at)
        assert sorted(now) == [0, 1, 2]
        assert "🎙️ speaking" in now[0] and "18. 9 is ▌" in now[0]
        assert "🎙️ speaking" in now[1] and "about to speak" in now[2]
        for i in range(3):
            heading = at.get_by_key(f"presenter_agent_{i}").markdown[0].value
            assert heading.startswith("### ") and "speaking" not in heading and "·" not in heading, heading
        feed.send(TurnFinished(Turn("s1", 1, 0, "Agent 1", "draft", "scripted/x", [], "18. 9 is odd")))
        at.run()
        assert sorted(speaking(at)) == [1, 2]  # a finished draft is no longer highlighted
    finally:
        feed.close()


def test_the_poll_link_names_the_machines_network_address_when_the_teacher_is_on_localhost(monkeypatch):
    """The teacher's browser is on localhost: students get the address Streamlit calls its Network URL;
    with none to be had, the localhost link stays and a caption says what students need.
    Must not happen: a localhost link shown to students without a word."""
    from streamlit import net_util
    from streamlit.runtime.context import ContextProxy

    from madlab_ui import network

    monkeypatch.setattr(ContextProxy, "url", property(lambda self: "http://localhost:8611/Presenter"))
    monkeypatch.setattr(net_util, "get_internal_ip", lambda: "192.168.1.23")
    debate_id = run_debate()
    poll_id = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"])
    at = presenter(replay=debate_id)
    assert texts(at.get_by_key("poll_link")) == f"http://192.168.1.23:8611/Poll?poll={poll_id}"
    assert "cannot open a localhost link" not in texts(at.get_by_key("poll_stage"))

    monkeypatch.setattr(net_util, "get_internal_ip", lambda: "127.0.0.1")  # no network: Streamlit's own fallback
    at.run()
    assert texts(at.get_by_key("poll_link")) == f"http://localhost:8611/Poll?poll={poll_id}"
    assert "cannot open a localhost link" in texts(at.get_by_key("poll_stage"))
    # The choice itself: loopback hosts only, the same port; a named host is kept as it is.
    monkeypatch.setattr(net_util, "get_internal_ip", lambda: "10.0.0.7")
    assert network.student_netloc("127.0.0.1:8501") == ("10.0.0.7:8501", True)
    assert network.student_netloc("[::1]:8501") == ("10.0.0.7:8501", True)
    assert network.student_netloc("school.example:8501") == ("school.example:8501", True)
    monkeypatch.setattr(network.config, "is_manually_set", lambda name: name == "server.address")
    monkeypatch.setattr(network.config, "get_option", lambda name: "127.0.0.1")  # listening on loopback only
    assert network.student_netloc("localhost:8501") == ("localhost:8501", False)


def test_a_two_line_reply_keeps_its_line_break_in_the_presenters_column():
    name = "apptest_presenter_two_lines"
    data = {"question": "Capital?", "agents": [{"label": f"Agent {i}", "model": f"scripted/{name}"} for i in (1, 2)],
            "rounds": 1, "max_rounds": 1, "protocol": "simple_voting"}
    debate_id = scripted_debate(name, ["first line of it\nsecond line, Paris"] * 4, data)
    at = presenter(replay=debate_id)
    at.button(key="presenter_next").click().run()
    bodies = [m.value for m in at.get_by_key("presenter_agent_0").markdown]
    assert any(b.startswith("first line of it  \nsecond line, Paris") for b in bodies), bodies
    # Must not happen: the two lines handed to Markdown as one paragraph (it joins them).
    assert not any("first line of it\nsecond line" in b for b in bodies)


def yes_no_reply(messages, info) -> str:
    """The trial's yes/no debate: long rambling replies, one of them unreadable as yes or no."""
    kind, agent = info["metadata"].get("kind", "discussion"), info["metadata"].get("agent", "Agent 1")
    if kind == "vote":
        return "1"
    ramble = ("91 is not a prime number but 2*3 = 6 more than 7 so it is composite by 4 other numbers "
              "to get from 5, which is also divisible by both 2 and 3, and so on for a while longer.")
    return {"Agent 1": f"{ramble}\nFinal answer: No", "Agent 2": f"Yes. {ramble}", "Agent 3": ramble}[agent]


def test_the_agents_current_answers_fill_a_yes_no_poll_with_yes_and_no():
    name = "apptest_presenter_yes_no"
    data = {"question": "Is 91 a prime number? Answer yes or no.", "answer_type": "yes_no", "rounds": 1,
            "max_rounds": 1, "protocol": "simple_voting",
            "agents": [{"label": f"Agent {i}", "model": f"scripted/{name}"} for i in (1, 2, 3)]}
    debate_id = scripted_debate(name, yes_no_reply, data)
    at = presenter(replay=debate_id)
    for _ in range(3):
        at.button(key="presenter_next").click().run()
    at.button(key="poll_fill").click().run()
    # Must not happen: whole replies cut mid-sentence as options, or the unreadable one (Agent 3) offered.
    assert at.text_area(key="poll_options").value == "no\nyes"
    at.button(key="poll_open").click().run()
    assert polls.polls_of(Store(), debate_id)[0]["options"] == ["no", "yes", "Something else"]


def test_the_poll_link_is_shown_whole_with_its_qr_code(monkeypatch):
    """The link on one line (never broken inside) and a QR code made of exactly that link."""
    import segno

    given = []
    real = segno.make_qr
    monkeypatch.setattr(segno, "make_qr", lambda content, **kw: given.append(content) or real(content, **kw))
    debate_id = run_debate()
    poll_id = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"])
    at = presenter(replay=debate_id)
    link = at.get_by_key("poll_link").code[0]
    assert link.value == f"/Poll?poll={poll_id}" and link.proto.wrap_lines is False
    assert given and set(given) == {link.value}  # the QR code carries the link, nothing else
    [image] = at.get_by_key("poll_qr").get("image")
    assert len(image.value) == 1 and image.value[0].endswith(".png")
    # Must not happen: a Micro QR symbol (phones' cameras do not read it), which segno.make picks for short data.
    assert not real(link.value, error="m").is_micro and segno.make("/Poll").is_micro


def test_a_vote_sent_after_the_decision_is_shown_is_refused_and_not_counted():
    """The trial: the projector showed the decision beside "1 prediction · open", and a phone that
    voted then was counted. Once the replay shows the decision, the poll says closed everywhere."""
    debate_id = run_debate()
    at = presenter(replay=debate_id)
    at.selectbox(key="presenter_round").set_value(1).run()
    at.text_area(key="poll_options").set_value("Paris\nLyon").run()
    at.button(key="poll_open").click().run()
    poll_id = polls.polls_of(Store(), debate_id)[0]["id"]
    phone = student(poll_id)  # open before the decision: the radio and the send button are there
    phone.radio(key="poll_choice").set_value("Lyon").run()
    at.selectbox(key="presenter_round").set_value(DECISION).run()  # the decision is on the projector
    assert "closed: the debate decided" in texts(at.get_by_key("poll_count"))
    assert "poll_link" not in keys(at) and "poll_qr" not in keys(at)
    assert at.button(key="poll_proxy_send").disabled
    phone.button(key="poll_predict").click().run()
    assert "the debate has decided: predictions are no longer taken" in texts(phone.main)
    assert "The poll is closed: the debate has decided" in texts(phone.main) and "poll_predict" not in keys(phone)
    # Must not happen: the late vote counted.
    assert polls.results(Store(), poll_id)["total"] == 0
    at.run()
    assert texts(at.get_by_key("poll_count")).startswith("**0** predictions")


def test_the_stage_lists_at_most_four_short_lines_of_results_the_decision_always_among_them():
    from madlab_ui.poll import stage_rows

    counts = {"Marseille": 0, "Lyon": 3, "Nice": 1, "Lille": 2, "Paris, the capital and the seat of every government": 0,
              "Brest": 0}
    result = {"counts": counts, "decision": "Paris, the capital and the seat of every government", "total": 6}
    assert stage_rows(result) == ["✗ **3** · Lyon", "✗ **2** · Lille",
                                  "✅ **0** · Paris, the capital and the seat… · the decision",
                                  "✗ **1** · 3 other answers"]
    # Must not happen: the decision left out of the stage because few predicted it, or a paragraph.
    assert stage_rows({**result, "decision": "Toulouse"})[-1] == "✅ The decision is none of these answers."
    assert len(stage_rows({**result, "decision": None})) == 5
