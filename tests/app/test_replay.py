"""Replay on the Transcripts page: a position that pauses, steps, jumps to a round, and shows the
decision, the reference button, the votes and the plots only once the replay has reached them.

AppTest never fires the playing fragment's timer, so a replay started here stands still until a
button moves it: every position below is set by a click, and must be exactly what is shown."""
from __future__ import annotations

import json

from app_helpers import keys, open_debate, run_debate, scripted_debate, texts

from mad_core.store import Store
from mad_core.view import stored_events
from madlab_ui.replay import DECISION, Steps


def two_round_debate() -> str:
    """Three agents, two discussion rounds, then extraction and votes: 13 steps (12 turns, the decision)."""
    return run_debate(rounds=2, max_rounds=2, reference="Paris-ref")


def plot_rounds(at, key: str) -> set:
    """The x values (rounds) of every trace in the plot keyed `key` (empty when no chart is drawn)."""
    charts = at.get_by_key(key).get("plotly_chart")
    if not charts:
        return set()
    return {x for trace in json.loads(charts[0].proto.spec)["data"] for x in trace.get("x") or []}


def test_steps_reveal_turns_in_finishing_order_and_the_decision_last():
    debate_id = two_round_debate()
    steps = Steps.of(stored_events(Store(), debate_id))
    turns = Store().turns(debate_id)
    assert len(steps) == len(turns) + 1 and steps.rounds() == [1, 2, DECISION]
    assert steps.view(0).turns == [] and steps.view(0).decision is None
    middle = steps.view(4)  # round 1's three turns and round 2's first
    assert [t.text for t in middle.turns] == [t.content for t in turns[:4]]
    assert middle.decision is None and middle.votes == [] and middle.status == "running"
    before_verdict = steps.view(len(turns))  # every ballot in, the verdict not yet
    assert len(before_verdict.votes) == 3 and before_verdict.decision is None and before_verdict.attempts == []
    end = steps.view(len(steps))
    assert end.decision is not None and end.status == "finished" and steps.round_at(len(steps)) == DECISION
    assert steps.position_of(2) == 4 and steps.speaker(4) == "Agent 1"


def test_replay_pauses_steps_and_jumps_and_shows_nothing_it_has_not_reached():
    debate_id = two_round_debate()
    n_turns = len(Store().turns(debate_id))
    at = open_debate(debate_id)
    assert "decision_card" in keys(at)  # not replaying: the whole debate
    at.button(key="replay_start").click().run()
    assert at.session_state["replay"] == {**at.session_state["replay"], "pos": 0, "playing": True}
    present = keys(at)
    # Must not happen: the decision, the reference button or a chart before the first turn plays.
    assert "decision_card" not in present and "reveal_reference" not in present and "turn_0" not in present
    assert plot_rounds(at, "plot_entropy") == set() and plot_rounds(at, "plot_votes") == set()

    at.button(key="replay_play").click().run()  # pause
    assert at.session_state["replay"]["playing"] is False
    at.button(key="replay_next").click().run()
    at.button(key="replay_next").click().run()
    assert {"turn_0", "turn_1"} <= keys(at) and "turn_2" not in keys(at)
    assert "zebrafinch" in texts(at.get_by_key("turn_0")) and "quokka" in texts(at.get_by_key("turn_1"))
    assert f"step 2 of {n_turns + 1}" in texts(at.get_by_key("replay_position")) and "paused" in texts(
        at.get_by_key("replay_position"))
    at.button(key="replay_prev").click().run()
    assert "turn_0" in keys(at) and "turn_1" not in keys(at)

    at.selectbox(key="replay_round").set_value(2).run()  # jump: round 2's first turn
    assert at.session_state["replay"]["pos"] == 4
    assert {f"turn_{k}" for k in range(4)} <= keys(at) and "turn_4" not in keys(at)
    assert at.selectbox(key="replay_round").value == 2
    assert "decision_card" not in keys(at) and "votes_2" not in keys(at)
    assert plot_rounds(at, "plot_entropy") == {1}  # round 1 is complete; round 2 is still being replayed

    for _ in range(n_turns - 4):  # every remaining turn: all ballots in, the verdict not yet
        at.button(key="replay_next").click().run()
    assert "votes_2" in keys(at) and "decision_card" not in keys(at) and "reveal_reference" not in keys(at)
    at.button(key="replay_next").click().run()  # the decision step
    assert texts(at.get_by_key("decision_answer")) == "#### Paris"
    assert "reveal_reference" in keys(at) and plot_rounds(at, "plot_entropy") == {1, 2}
    assert at.button(key="replay_next").disabled and at.selectbox(key="replay_round").value == DECISION

    at.button(key="replay_stop").click().run()
    assert "replay" not in at.session_state and "replay_play" not in keys(at)


def test_play_at_the_end_starts_over_and_reopening_a_debate_ends_its_replay():
    debate_id = run_debate()
    at = open_debate(debate_id)
    at.button(key="replay_start").click().run()
    at.selectbox(key="replay_round").set_value(DECISION).run()
    assert at.session_state["replay"]["pos"] == at.session_state["replay"]["pos"] > 0
    assert at.session_state["replay"]["playing"] is False  # the end reached: playing stops
    at.button(key="replay_play").click().run()
    assert at.session_state["replay"]["pos"] == 0 and at.session_state["replay"]["playing"] is True
    at.button(key=f"open_{debate_id[:8]}").click().run()
    assert "replay" not in at.session_state


def test_the_persona_phase_is_called_setup_when_nobody_drafted():
    """Round 0 of a debate with generated personas and no drafting holds only the persona request:
    the picker and the position line call it what the transcript does ("Setup")."""
    personas = json.dumps({"personas": ["Geographer: studies capitals and borders", "Historian: knows how "
                                        "cities grew", "Librarian: checks every source twice"]})
    later = ["Final answer: Paris", "Paris", "1"]  # discussion, extraction, ballot
    agents = [{"label": f"Agent {i}", "model": "scripted/replay_setup"} for i in (1, 2, 3)]
    debate_id = scripted_debate("replay_setup", {"Agent 1": [personas, *later], "Agent 2": later,
                                                 "Agent 3": later},
                                {"question": "What is the capital of France?", "agents": agents, "rounds": 1,
                                 "max_rounds": 1, "auto_personas": True, "protocol": "simple_voting"})
    at = open_debate(debate_id)
    at.button(key="replay_start").click().run()
    picker = at.selectbox(key="replay_round")
    assert picker.options == ["Setup", "Round 1", "Decision"]
    at.button(key="replay_next").click().run()  # the persona request
    position = texts(at.get_by_key("replay_position"))
    assert "Agent 1 · persona · Setup" in position
    # Must not happen: drafting, which was off, named anywhere (the picker, the position line, the transcript).
    assert "Independent drafts" not in " ".join(picker.options) + position + texts(at.main)
