"""The Debate page says what steering did, truthfully, and where the debate stands.

A live debate is fed events by hand (`Feed`): Agent 1's turn is streaming. The page is drawn
with AppTest after each steering request, and checked for the words the controller and the
engine's published activity justify: paused (the bubble too, never "streaming"), stopping (the
turn is cut), a decision requested, then "deciding: collecting 3 votes (1/3)"; the progress bar's
numbers for a known configuration; a ballot cut by a stop never reads "interrupted: None"; a
prompt opened turns the transcript's auto-scroll off; the answer to a message (or its refusal)
shows under the steering line, above the buttons; the usage line of a paused debate says "paused";
a stop during persona generation says so in one sentence. Timings are bench/steering.py's.
"""
from __future__ import annotations

import uuid

import pytest
from app_helpers import Feed, app, config, texts

from mad_core.events import (DebateFinished, DebateStarted, PersonasAssigned, RoundStarted, TokenReceived, Turn,
                             TurnFinished, TurnStarted, VoteCast)
from mad_core.store import Store
from madlab_ui import live_page


@pytest.fixture
def streaming():
    """A live debate (3 agents, simple voting, rounds 1, max 2) whose Agent 1 is speaking."""
    cfg = config()
    debate_id = uuid.uuid4().hex
    feed = Feed(debate_id)
    feed.send(DebateStarted(debate_id, cfg.to_dict()), PersonasAssigned({}), RoundStarted(1, ["Agent 1", "Agent 2", "Agent 3"]),
              TurnStarted("t0", 1, "Agent 1", "discussion", cfg.agents[0].model, [{"role": "user", "content": "Q?"}]),
              TokenReceived("t0", "Agent 1", "Paris is "))
    feed.debate.controller.publish(phase="discussion", round=1, expected=1, received=0)
    yield feed
    feed.send(DebateFinished("stopped", None, reason="test over"))
    feed.close()


def watch(feed: Feed):
    at = app()
    at.session_state["debate_id"] = feed.debate.debate_id
    at.run()
    assert not at.exception, at.exception
    return at


def line(at, key: str) -> str:
    return texts(at.get_by_key(key)).replace("\\", "")


def test_progress_bar_counts_the_calls_of_the_configuration(streaming):
    at = watch(streaming)
    bar = at.get_by_key("debate_progress").get("progress")[0]
    # 3 discussion turns + 3 extractions + 3 ballots when decided after round 1; none finished yet.
    assert bar.proto.text == "Round 1 of 1 (cap 2) · discussion · 0 calls done, ≈ 9 left · ETA after the first call"
    assert bar.value == 0
    assert "Running" in line(at, "steering_status")


def test_pause_says_paused_in_the_status_the_steering_line_and_the_bubble(streaming):
    at = watch(streaming)
    assert "streaming" in texts(at.get_by_key("turn_0"))
    at.button(key="pause").click().run()
    assert streaming.debate.controller.paused
    assert "Status: **paused**" in texts(at.get_by_key("debate_status"))
    assert "Paused: nothing more is generated until Resume" in line(at, "steering_status")
    bubble = texts(at.get_by_key("turn_0"))
    # Must not happen: the bubble of a paused debate says "streaming".
    assert "paused" in bubble and "streaming" not in bubble
    usage = texts(at.get_by_key("usage"))
    # Must not happen either: the usage line under the transcript says the paused call is streaming.
    assert "1 model calls · 1 paused" in usage and "streaming" not in usage
    assert "ETA: paused" in at.get_by_key("debate_progress").get("progress")[0].proto.text
    at.button(key="resume").click().run()
    assert "streaming" in texts(at.get_by_key("turn_0")) and "Running" in line(at, "steering_status")
    assert "1 streaming now" in texts(at.get_by_key("usage"))


def test_a_messages_answer_shows_under_the_steering_line_above_the_buttons(streaming):
    at = watch(streaming)
    at.button(key="say_all_send").click().run()  # nothing typed
    assert "Not sent: the message is empty." in line(at, "steer_notice")
    at.text_input(key="say_all_text").set_value("Check the units.")
    at.button(key="say_all_send").click().run()
    assert line(at, "steer_notice") == "Message for all agents queued: it reaches their next turn."
    order = [node.key for node in at.sidebar if getattr(node, "key", None)]
    # Must not happen: the answer drawn below the buttons and message boxes (below the fold at 1280x720).
    assert order.index("steering_status") < order.index("steer_notice") < order.index("pause")
    assert at.text_input(key="say_all_text").value == ""


def test_stop_says_the_turn_is_cut(streaming):
    at = watch(streaming)
    at.button(key="stop").click().run()
    status = line(at, "debate_status")
    assert "Status: **stopping**" in status and "the current turn is cut, and no further turn starts" in status
    assert "Stopping: the current turn is cut" in line(at, "steering_status")
    assert "finishing the current turn" not in texts(at.sidebar) + texts(at.main)


def test_decide_now_says_what_the_decision_waits_for(streaming):
    at = watch(streaming)
    at.button(key="force_decision").click().run()
    assert "Decision requested: the turn under way finishes, then the protocol decides" in \
        line(at, "steering_status")
    assert at.button(key="force_decision").disabled
    streaming.debate.controller.publish(phase="voting", expected=3, received=1, deciding=True)
    at.run()
    assert "Deciding: collecting 3 votes (1/3)" in line(at, "steering_status")
    assert "deciding: collecting 3 votes (1/3)" in line(at, "debate_status")
    assert "· voting ·" in at.get_by_key("debate_progress").get("progress")[0].proto.text


def test_a_ballot_cut_by_a_stop_never_reads_interrupted_none(streaming):
    streaming.send(VoteCast(1, "Agent 2", "simple_voting", "I vote", None, False,
                            "the vote call interrupted: None"),  # as debates stored before this version read
                   VoteCast(1, "Agent 3", "simple_voting", "", None, False,
                            "the vote call was cut: the debate was stopped"))
    at = watch(streaming)
    votes = line(at, "votes_1")
    assert votes.count("not cast (the vote call was cut: the debate was stopped)") == 2
    assert "None" not in votes


def test_opening_a_prompt_stops_following_the_debate(streaming):
    at = watch(streaming)
    assert at.toggle(key=live_page.FOLLOW_KEY).value is True
    at.session_state["prompt_0"] = True  # the reader opens Agent 1's prompt
    at.run()
    assert at.toggle(key=live_page.FOLLOW_KEY).value is False
    at.toggle(key=live_page.FOLLOW_KEY).set_value(True).run()  # the reader may follow again
    assert at.toggle(key=live_page.FOLLOW_KEY).value is True
    assert Store().get_debate(streaming.debate.debate_id) is None  # a fed debate: nothing was written


def test_a_stop_during_persona_generation_says_so_in_one_sentence(script):
    """Stopped while the personas were asked for (the persona call waits for its first piece):
    the page says the debate was stopped then, in one sentence."""
    import threading

    from mad_core import DebateEngine
    from mad_core.config import DebateConfig

    model, s = script(["{}"], faults={0: "hang"})
    agents = [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)]
    engine = DebateEngine(DebateConfig.from_dict({"question": "Is 91 a prime number?", "agents": agents,
                                                  "auto_personas": True, "rounds": 1, "max_rounds": 1}),
                          store=Store())

    def stop_while_asked() -> None:
        assert s.hanging.wait(10)
        engine.controller.stop()
        s.release()

    stopper = threading.Thread(target=stop_while_asked)
    stopper.start()
    list(engine.run())
    stopper.join()
    at = app()
    at.session_state["debate_id"] = engine.debate_id
    at.run()
    assert not at.exception, at.exception
    page = texts(at.main).replace("\\", "")  # markdown escapes
    assert "No decision: the debate was stopped by a person during persona generation." in page
    # Must not happen: the stop reported as the model's failure, or the card's words doubled.
    assert "could not suggest" not in page and "stopped. stopped" not in page


def test_the_status_counts_only_turns_with_a_reply_like_the_progress_bar(streaming):
    """A simultaneous round starts every agent at once: the status counts the turns done (as the
    progress bar's "calls done") and those replying, not the turns merely started."""
    cfg = config()
    streaming.send(TurnStarted("t1", 1, "Agent 2", "discussion", cfg.agents[1].model, []),
                   TurnStarted("t2", 1, "Agent 3", "discussion", cfg.agents[2].model, []))
    at = watch(streaming)
    status = line(at, "debate_status")
    assert "0 turns done · 1 replying" in status  # Agent 1 streams; Agents 2 and 3 wait for their first token
    assert "0 calls done" in at.get_by_key("debate_progress").get("progress")[0].proto.text
    # Must not happen: "3 turns" beside "0 calls done".
    assert "3 turns" not in status
    streaming.send(TurnFinished(Turn("t0", 0, 1, "Agent 1", "discussion", cfg.agents[0].model, [],
                                     content="Paris is it.")))
    at.run()
    assert "1 turn done" in line(at, "debate_status")
    assert "1 calls done" in at.get_by_key("debate_progress").get("progress")[0].proto.text


def test_state_changing_buttons_explain_themselves_in_a_caption_not_a_tooltip(streaming):
    """A clicked Stop or Decide now is disabled at once: the browser never sends mouse-leave, so a hover
    tooltip would stay over the Pause | Resume row. Their explanation is a caption under the row."""
    at = watch(streaming)
    for key in ("pause", "resume", "stop", "force_decision"):
        # Must not happen: a steering button with a hover tooltip.
        assert not at.button(key=key).help, key
    assert "Stop: end now (the turn under way is kept, cut)" in texts(at.sidebar)
    assert "Decide now: skip the remaining rounds" in texts(at.sidebar)


def test_the_first_run_draws_the_whole_row_and_a_click_right_away_takes_effect(streaming):
    """A fresh session's first run of a debate under way draws the whole row (Pause, Resume, Stop,
    Decide now) with the steering line, and a click on Pause in the next run pauses the debate; the
    line and the buttons say so in that same run (one fragment draws them from one reading)."""
    at = watch(streaming)
    keys = [node.key for node in at.sidebar if getattr(node, "key", None)]
    # Must not happen: the row drawn without Pause and Resume.
    assert {"pause", "resume", "stop", "force_decision", "steering_status"} <= set(keys), keys
    assert not at.button(key="pause").disabled and at.button(key="resume").disabled
    at.button(key="pause").click().run()
    assert streaming.debate.controller.paused
    assert "Paused" in line(at, "steering_status")
    assert at.button(key="pause").disabled and not at.button(key="resume").disabled
