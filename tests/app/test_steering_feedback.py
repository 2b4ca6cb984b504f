"""The Debate page says what steering did, truthfully, and where the debate stands.

A live debate is fed events by hand (`Feed`): Agent 1's turn is streaming. The page is drawn
with AppTest after each steering request, and checked for the words the controller and the
engine's published activity justify: paused (the bubble too, never "streaming"), stopping (the
turn is cut), a decision requested, then "deciding: collecting 3 votes (1/3)"; the progress bar's
numbers for a known configuration; a ballot cut by a stop never reads "interrupted: None"; a
prompt opened turns the transcript's auto-scroll off. Timings are bench/steering.py's.
"""
from __future__ import annotations

import uuid

import pytest
from app_helpers import Feed, app, config, texts

from mad_core.events import (DebateFinished, DebateStarted, PersonasAssigned, RoundStarted, TokenReceived,
                             TurnStarted, VoteCast)
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
    assert bar.proto.text == "Round 1 of max 2 · discussion · 0 calls done, ≈ 9 left · ETA after the first call"
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
    assert "ETA: paused" in at.get_by_key("debate_progress").get("progress")[0].proto.text
    at.button(key="resume").click().run()
    assert "streaming" in texts(at.get_by_key("turn_0")) and "Running" in line(at, "steering_status")


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
