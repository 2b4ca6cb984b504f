"""Seed 001's per-player Knight-Knave-Spy debate (mad_core/kks_mode.py) on the scripted model.

The turn schedule (round, agent, kind, player) for depth 1 and 2, the exact debate prompt with
confidence visible and hidden (hidden: no other agent's confidence anywhere), the per-player
majority, a tie decided by the supervisor for that player only, the agreed order, an unreadable
assignment as an invalid ballot with its reason, the config errors, stop and force-decision.
"""
from __future__ import annotations

import json
import re
import threading

import pytest

from mad_core import ConfigError, DebateConfig, exports
from mad_core.events import DebateFinished, DecisionReached, TurnFinished, TurnStarted, VoteCast
from mad_core.export_schema import validate_export
from mad_core.kks_mode import borda_order, player_majority, read_assignment, read_order, read_stance
from mad_core.store import Store
from mad_core.view import DebateView
from tests.builders import config, run

NAMES = ["Ann", "Bo", "Cy", "Di"]
TRUTH = {"Ann": "knight", "Bo": "knave", "Cy": "spy", "Di": "knave"}
PUZZLE = "Ann says: Bo is a knave. (...) Hint: exactly one spy."
AGENTS = ["Agent 1", "Agent 2", "Agent 3"]


def kks_config(model: str, names=NAMES, n=3, **settings) -> DebateConfig:
    kks = {"question": PUZZLE, "answer_type": "kks", "answer_options": list(names), "paradigm": "kks_per_player",
           "protocol": "kks_player_vote"}
    return config(model, n, **{**kks, **settings})


def assignment(roles: dict, confidence: dict | None = None, why: str = "because") -> str:
    reply = {"roles": roles, **({"confidence": confidence} if confidence else {}), "explanation": why}
    return json.dumps(reply)


def focus(messages) -> str | None:
    found = re.search(r"Under discussion now: (\w+)\.", messages[-1]["content"])
    return found.group(1) if found else None


def debater(roles_by_agent=None, confidence_by_agent=None, **by_kind):
    """Each agent holds one assignment (default: the truth) in every complete-assignment turn and
    argues its role for the player under discussion; `by_kind` overrides a kind's reply."""
    roles_by_agent = roles_by_agent or {}
    confidence_by_agent = confidence_by_agent or {}

    def reply(messages, info):
        meta = info["metadata"]
        kind, agent = meta["kind"], meta["agent"]
        override = by_kind.get(kind)  # a fixed text, or a function of (messages, metadata)
        if override is not None:
            return override if isinstance(override, str) else override(messages, meta)
        roles = roles_by_agent.get(agent, TRUTH)
        level = confidence_by_agent.get(agent)
        if kind == "debate":
            player = focus(messages)
            stance = {"player": player, "role": roles[player], "agree_with": [], "disagree_with": [],
                      "reasoning": f"{agent} on {player}"}
            return json.dumps({**stance, **({"confidence": level} if level else {})})
        return assignment(roles, {n: level for n in roles} if level else None, f"{agent} reasons")
    return reply


def turns(events, kind=None):
    done = [e.turn for e in events if isinstance(e, TurnFinished)]
    return sorted((t for t in done if kind is None or t.kind == kind), key=lambda t: t.seq)


def schedule(events) -> list[tuple]:
    """(round, agent, kind, player discussed) of every turn, in planned order."""
    view = DebateView()
    for event in events:
        view.apply(event)
    topics = view.round_topics()
    return [(t.round, t.agent, t.kind, topics[t.round] if t.kind in ("debate", "adjustment") else None)
            for t in turns(events)]


def expected_schedule(order, depth, agents=AGENTS):
    rows = [(1, a, "proposal", None) for a in agents]
    for k, player in enumerate(order):
        rnd = k + 2
        rows += [(rnd, a, "debate", player) for _ in range(depth) for a in agents]
        rows += [(rnd, a, "adjustment", player) for a in agents]
    rows += [(len(order) + 2, a, "final", None) for a in agents]
    return rows


# ----- the schedule -----------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [1, 2])
def test_turns_follow_seed_001s_phases_player_by_player(script, depth):
    model, _ = script(debater())
    events = run(kks_config(model, kks_depth=depth))
    assert schedule(events) == expected_schedule(NAMES, depth)
    assert events.engine.status == "finished"
    decision = [e for e in events if isinstance(e, DecisionReached)][0]
    assert decision.round == 6 and decision.answer == "Ann: knight, Bo: knave, Cy: spy, Di: knave"
    assert decision.fallback is None and decision.winner_agent is None
    # The per-round answers (metrics) are the complete assignments: the adjustment ends each player's round.
    view = DebateView()
    for event in events:
        view.apply(event)
    answers = dict(view.answers_by_round())
    assert sorted(answers) == [1, 2, 3, 4, 5, 6]
    assert all(a == decision.answer for by_agent in answers.values() for a in by_agent.values())
    debate = turns(events, "debate")
    assert [t.answer for t in debate[:3]] == ["Ann: knight"] * 3  # a debate turn states the player's role


# ----- prompts: confidence visible or hidden -----------------------------------------------------
PROMPT_HEAD = (
    "The puzzle:\n" + PUZZLE + "\n\nUnder discussion now: Bo.\n\n"
    "Each agent's position on Bo before this discussion:\n"
)


def debate_prompt_of(events, agent="Agent 2", rnd=3):
    turn = next(t for t in turns(events, "debate") if t.agent == agent and t.round == rnd)
    return turn.prompt


def test_debate_prompt_with_visible_confidence(script):
    model, _ = script(debater(confidence_by_agent={"Agent 1": 7, "Agent 2": 5, "Agent 3": 3}))
    events = run(kks_config(model, names=["Ann", "Bo"], confidence=True, confidence_visible=True))
    system, user = debate_prompt_of(events)
    assert system == {"role": "system", "content": (
        "You are Agent 2, one of 3 agents who solve a Knight-Knave-Spy logic puzzle together, player by player. "
        "Every player is a knight, a knave or a spy. A knight's statement is always true, a knave's is always "
        "false, and a spy's may be either. Everything the game manager says is true.")}
    assert user["content"] == PROMPT_HEAD + (
        "- Agent 1: knave\n  Reasoning: Agent 1 reasons\n  Confidence: 7/10\n"
        "- Agent 2 (you): knave\n  Reasoning: Agent 2 reasons\n  Confidence: 5/10\n"
        "- Agent 3: knave\n  Reasoning: Agent 3 reasons\n  Confidence: 3/10\n\n"
        "Players discussed earlier:\n"
        "Round 2, Ann:\n"
        "- Agent 1: knight\n  Reasoning: Agent 1 on Ann\n  Confidence: 7/10\n"
        "- Agent 2 (you): knight\n  Reasoning: Agent 2 on Ann\n  Confidence: 5/10\n"
        "- Agent 3: knight\n  Reasoning: Agent 3 on Ann\n  Confidence: 3/10\n"
        "Majority after the self-adjustment: knight\n\n"
        "The discussion of Bo so far:\n"
        "(nothing yet)\n\n"  # one pass (depth 1): every agent speaks from the same state, no same-pass reply
        "Now discuss Bo's role only. Weigh the other agents' positions on Bo against Bo's statement and its "
        "consistency with the other statements and the hints, say which of the other agents you agree and "
        "disagree with and why, and decide Bo's role (one of knight, knave, spy: no other value).\n\n"
        'Reply with one JSON object only, of this form: {"player": "Bo", "role": "knight|knave|spy", '
        '"agree_with": [<agents>], "disagree_with": [<agents>], "reasoning": "<why, under 100 words>", '
        '"confidence": 1-10}. In agree_with and disagree_with name only other agents (Agent 1, Agent 3), '
        "never yourself.")


def test_a_debate_pass_asks_every_agent_at_once_from_the_same_state(script):
    """Seed 001 App. C.2 / ControlMAD: within a pass each debate call sees the positions before the
    player's debate and the earlier passes, never a reply of its own pass; the calls of a pass run at
    once (a barrier that only all three calls of a pass can pass); the next pass sees the whole pass."""
    gate = threading.Barrier(3, timeout=30)  # broken (the turn fails) if the pass's calls ran one by one

    def debate(messages, meta):
        if meta["round"] == 3:
            gate.wait()
        player = focus(messages)
        return json.dumps({"player": player, "role": TRUTH[player], "agree_with": [], "disagree_with": [],
                           "reasoning": f"{meta['agent']} on {player} pass-mark"})
    model, _ = script(debater(debate=debate))
    events = run(kks_config(model, names=["Ann", "Bo"], kks_depth=2))
    assert events.engine.status == "finished"
    bo = [t for t in turns(events, "debate") if t.round == 3]
    assert [t.status for t in bo] == ["ok"] * 6
    first, second = bo[:3], bo[3:]
    for turn in first:  # must not happen: a reply of the same pass in the prompt
        assert "on Bo pass-mark" not in turn.prompt[1]["content"], turn.agent
    for turn in second:
        so_far = turn.prompt[1]["content"].split("The discussion of Bo so far:\n")[1]
        assert [a for a in AGENTS if f"{a} on Bo pass-mark" in so_far] == AGENTS
        assert so_far.count("on Bo pass-mark") == 3, turn.agent  # the first pass only


def test_hidden_confidence_never_reaches_another_agent(script):
    model, _ = script(debater(confidence_by_agent={"Agent 1": 7, "Agent 2": 5, "Agent 3": 3}))
    events = run(kks_config(model, names=["Ann", "Bo"], confidence=True, confidence_visible=False))
    user = debate_prompt_of(events)[1]["content"]
    assert user.startswith(PROMPT_HEAD + (
        "- Agent 1: knave\n  Reasoning: Agent 1 reasons\n"
        "- Agent 2 (you): knave\n  Reasoning: Agent 2 reasons\n  Confidence: 5/10\n"
        "- Agent 3: knave\n  Reasoning: Agent 3 reasons\n\n"))
    # Must not happen: another agent's confidence anywhere in any prompt an agent receives.
    for turn in turns(events):
        text = "\n".join(m["content"] for m in turn.prompt)
        others = {"Agent 1": 7, "Agent 2": 5, "Agent 3": 3}
        others.pop(turn.agent, None)
        assert not any(f"{level}/10" in text for level in others.values()), (turn.agent, turn.kind, turn.round)
    # ... while each agent reports it, and the turns record it (the player just discussed, in an adjustment).
    adjustment = next(t for t in turns(events, "adjustment") if t.agent == "Agent 3")
    assert adjustment.confidence == 3


# ----- the vote -------------------------------------------------------------------------------------
def test_final_vote_is_a_per_player_majority(script):
    wrong_bo = {**TRUTH, "Bo": "spy"}
    wrong_cy = {**TRUTH, "Cy": "knight"}
    model, _ = script(debater({"Agent 2": wrong_bo, "Agent 3": wrong_cy}))
    events = run(kks_config(model))
    decision = [e for e in events if isinstance(e, DecisionReached)][0]
    # Bo: knave 2 - spy 1; Cy: spy 2 - knight 1: the majority of each player, though no agent holds it all.
    assert decision.answer == "Ann: knight, Bo: knave, Cy: spy, Di: knave"
    assert decision.details["votes"]["Bo"] == {"knave": 2, "spy": 1}
    assert decision.scores == [4.0, 3.0, 3.0]
    assert not turns(events, "supervisor")
    votes = [e for e in events if isinstance(e, VoteCast)]
    assert [(v.agent, v.valid) for v in votes] == [(a, True) for a in AGENTS]


def test_a_tie_goes_to_the_supervisor_for_that_player_only(script):
    three_ways = {"Agent 1": TRUTH, "Agent 2": {**TRUTH, "Cy": "knight"}, "Agent 3": {**TRUTH, "Cy": "knave"}}
    supervisor = json.dumps({"roles": {"Cy": "spy"}, "explanation": "Cy's statement cannot be a knight's"})
    agents_model, _ = script(debater(three_ways))
    judge_model, judge = script([supervisor])
    events = run(kks_config(agents_model, supervisor_model=judge_model))
    asked = turns(events, "supervisor")
    assert len(asked) == 1 and asked[0].agent == "supervisor" and asked[0].model == judge_model
    prompt = asked[0].prompt[-1]["content"]
    assert "Tied players (votes per role):\n- Cy: knight 1, knave 1, spy 1\n" in prompt
    assert "- Ann:" not in prompt.split("Tied players")[1]  # only the tied player is put to it
    schema = judge.history[0]["response_format"]
    assert schema is None  # this script declares no constrained output: the prompt carries the shape
    decision = [e for e in events if isinstance(e, DecisionReached)][0]
    assert decision.answer == "Ann: knight, Bo: knave, Cy: spy, Di: knave"
    assert decision.details["supervised"] == {"Cy": "spy"} and decision.details["tied"] == {
        "Cy": ["knight", "knave", "spy"]}
    assert decision.fallback is None
    votes = [e for e in events if isinstance(e, VoteCast)]
    assert votes[-1].agent == "supervisor" and votes[-1].ballot == "Cy: spy" and votes[-1].valid


def test_supervisor_must_choose_among_the_tied_roles(script):
    split = {"Agent 1": TRUTH, "Agent 2": {**TRUTH, "Di": "knight"}}
    bad = json.dumps({"roles": {"Di": "spy"}, "explanation": "x"})  # spy is not tied for Di
    model, _ = script(debater(split, supervisor=bad))
    events = run(kks_config(model, n=2, vote_retries=1))
    assert len(turns(events, "supervisor")) == 2  # asked again once, then the fallback
    rejected = [e for e in events if isinstance(e, VoteCast) and e.agent == "supervisor"]
    assert [v.valid for v in rejected] == [False, False]
    assert rejected[0].reason == "Di: spy is not one of the tied roles (knight, knave)"
    decision = [e for e in events if isinstance(e, DecisionReached)][0]
    assert decision.answer.endswith("Di: knave") and "first agent's role" in decision.fallback


def test_an_unreadable_assignment_is_an_invalid_ballot_with_its_reason(script):
    def final(messages, meta):
        return "I am not sure about anyone." if meta["agent"] == "Agent 3" else assignment(TRUTH)
    model, _ = script(debater(final=final))
    events = run(kks_config(model))
    votes = {v.agent: v for v in events if isinstance(v, VoteCast)}
    assert not votes["Agent 3"].valid and votes["Agent 3"].ballot is None
    assert votes["Agent 3"].reason == "no role assignment"
    assert votes["Agent 1"].valid and votes["Agent 1"].ballot == "Ann: knight, Bo: knave, Cy: spy, Di: knave"
    decision = [e for e in events if isinstance(e, DecisionReached)][0]
    assert decision.details["invalid"] == 1 and decision.answer == votes["Agent 1"].ballot
    final_turn = next(t for t in turns(events, "final") if t.agent == "Agent 3")
    assert final_turn.answer is None


# ----- the agreed order -----------------------------------------------------------------------------
def test_agreed_order_is_the_borda_count_of_the_agents_proposals(script):
    proposals = {"Agent 1": ["Cy", "Ann", "Bo", "Di"], "Agent 2": ["Cy", "Bo", "Ann", "Di"],
                 "Agent 3": ["Di", "Ann", "Cy", "Bo"]}
    order = lambda messages, meta: json.dumps({"order": proposals[meta["agent"]], "reason": "hints first"})
    model, _ = script(debater(order=order))
    events = run(kks_config(model, kks_order="agreed"))
    # Borda (3-2-1-0): Cy 3+3+1 = 7, Ann 2+1+2 = 5, Bo 1+2+0 = 3, Di 0+0+3 = 3 -> Bo before Di (puzzle order).
    agreed = ["Cy", "Ann", "Bo", "Di"]
    rows = schedule(events)
    assert rows[:6] == [(1, a, "proposal", None) for a in AGENTS] + [(1, a, "order", None) for a in AGENTS]
    assert rows[6:] == expected_schedule(agreed, 1)[3:]
    order_prompt = next(t for t in turns(events, "order") if t.agent == "Agent 1").prompt[-1]["content"]
    assert "The agents' initial proposals:\n- Agent 1 (you): Ann: knight, Bo: knave" in order_prompt


def test_borda_and_readers_never_raise():
    assert borda_order(NAMES, []) == NAMES
    assert read_order('{"order": ["Bo", "Ann"]}', NAMES) == (None, "the order leaves out Cy, Di")
    assert read_order("Start with di, then Cy, Ann and finally Bo.", NAMES) == (["Di", "Cy", "Ann", "Bo"], "")
    assert read_assignment(None, NAMES).reason == "no role assignment"
    assert read_assignment("Ann is a knight, Bo: knave, Cy (spy), Di - knave", NAMES).roles == TRUTH
    stance = read_stance('{"role": "Spy", "agree_with": ["agent 2", "Agent 9"], "confidence": 11}', "Cy",
                         ["Agent 2", "Agent 3"])
    assert (stance.role, stance.agree, stance.confidence) == ("spy", ("Agent 2",), None)
    assert read_stance("I have no idea", "Cy", []).reason == "no role assignment"
    assert player_majority([None, None], ["Ann"]) == ({}, {"Ann": ["knight", "knave", "spy"]})


# ----- configuration ---------------------------------------------------------------------------------
@pytest.mark.parametrize("change,field", [
    ({"answer_options": None}, "answer_options"),
    ({"answer_type": "text"}, "answer_type"),
    ({"protocol": "simple_voting"}, "protocol"),
    ({"kks_depth": 4}, "kks_depth"),
    ({"kks_order": "random"}, "kks_order"),
    ({"all_agents_drafting": True}, "all_agents_drafting"),
    ({"supervisor_model": ""}, "supervisor_model"),
])
def test_bad_settings_name_their_field_before_anything_runs(script, change, field, tmp_path):
    model, calls = script(debater())
    with pytest.raises(ConfigError) as error:
        kks_config(model, **change)
    assert error.value.field == field
    assert not calls.history


def test_the_vote_needs_the_per_player_paradigm(script):
    model, _ = script(debater())
    with pytest.raises(ConfigError) as error:
        DebateConfig.from_dict({"question": PUZZLE, "answer_type": "kks", "answer_options": NAMES,
                                "protocol": "kks_player_vote", "agents": [{"model": model}]})
    assert error.value.field == "paradigm"


# ----- steering -------------------------------------------------------------------------------------
def test_stop_after_the_first_self_adjustment_ends_the_debate(script, tmp_path):
    model, _ = script(debater())
    store = Store(tmp_path / "s.db")

    def stop(event, engine):  # at the step boundary after the first self-adjustment
        if isinstance(event, TurnFinished) and event.turn.kind == "adjustment":
            engine.controller.stop()

    events = run(kks_config(model), steer=stop, store=store)
    assert events.engine.status == "stopped"
    started = [e for e in events if isinstance(e, TurnStarted)]
    assert max(e.round for e in started) == 2  # must not happen: a turn of a later round
    assert [e.kind for e in started].count("debate") == 3
    assert not [e for e in events if isinstance(e, DecisionReached)]
    assert [e.status for e in events if isinstance(e, DebateFinished)] == ["stopped"]


def test_force_decision_votes_on_the_latest_assignments_at_once(script):
    model, _ = script(debater({"Agent 3": {**TRUTH, "Ann": "spy"}}))

    def force(event, engine):
        if isinstance(event, TurnFinished) and event.turn.kind == "adjustment" and event.turn.round == 3:
            engine.controller.force_decision()

    events = run(kks_config(model), steer=force)
    decision = [e for e in events if isinstance(e, DecisionReached)][0]
    assert decision.forced and decision.round == 3
    assert decision.answer == "Ann: knight, Bo: knave, Cy: spy, Di: knave"
    assert max(t.round for t in turns(events)) == 3 and not turns(events, "final")


def test_resume_reuses_every_finished_turn(script, tmp_path):
    model, calls = script(debater())
    store = Store(tmp_path / "s.db")

    def stop(event, engine):
        if isinstance(event, TurnFinished) and event.turn.kind == "debate" and event.turn.round == 3:
            engine.controller.stop()

    engine = run(kks_config(model, kks_order="agreed"), steer=stop, store=store).engine
    made = len(calls.history)
    before = [t for t in store.turns(engine.debate_id) if t.status == "ok"]
    from mad_core.resume import resume_debate
    events = list(resume_debate(engine.debate_id, store))
    assert [e.status for e in events if isinstance(e, DebateFinished)] == ["finished"]
    stored = sorted((t for t in store.turns(engine.debate_id) if t.status == "ok"), key=lambda t: t.seq)
    expected = [(1, a, "proposal") for a in AGENTS] + [(1, a, "order") for a in AGENTS] + \
        [(r, a, k) for r, a, k, _ in expected_schedule(NAMES, 1)[3:]]
    got = [(t.round, t.agent, t.kind) for t in stored]
    # The calls of one debate pass run at once: a pass cut by the stop may finish in any agent order
    # on resume, but every turn is there once and the rounds and phases come in order.
    assert sorted(got) == sorted(expected)
    assert [(r, k) for r, _, k in got] == [(r, k) for r, _, k in expected]
    assert len(calls.history) - made == len(stored) - len(before)  # nothing finished is asked again
    validate_export(exports.export_debate(store, engine.debate_id))  # its text ballots export and import


def test_a_backend_with_constrained_output_gets_each_phases_schema(script):
    model, calls = script(debater(), json_schema=True)
    run(kks_config(model, names=["Ann", "Bo"], confidence=True))
    sent = {}
    for call in calls.history:  # each kind's first call by Agent 1 (a debate pass asks all agents at once)
        if call["metadata"]["agent"] == "Agent 1":
            sent.setdefault(call["metadata"]["kind"], call["response_format"]["json_schema"]["schema"])
    proposal = sent["proposal"]["properties"]
    assert proposal["roles"]["properties"]["Bo"] == {"type": "string", "enum": ["knight", "knave", "spy"]}
    assert proposal["confidence"]["properties"]["Ann"] == {"type": "integer", "minimum": 1, "maximum": 10}
    debate = sent["debate"]["properties"]
    assert debate["player"] == {"type": "string", "enum": ["Ann"]}
    assert debate["agree_with"]["items"]["enum"] == ["Agent 2", "Agent 3"]  # Agent 1's own format: not itself
    assert set(sent) == {"proposal", "debate", "adjustment", "final"}
