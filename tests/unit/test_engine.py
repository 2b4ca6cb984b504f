"""The engine end to end with the scripted model through litellm: paradigms, protocols, steering."""
from __future__ import annotations

import threading

import pytest

from mad_core import ConfigError, Controller, DebateConfig, DebateEngine, components
from mad_core.events import (ChallengeResult, DebateFinished, DecisionAttempted, DecisionReached, PersonasAssigned,
                             RoundStarted, SteeringApplied, TokenReceived, TurnFinished, TurnStarted, VoteCast)
from mad_core.prompts import TIT_FOR_TAT
from mad_core.store import Store
from tests.builders import config, of, run, turns


def user_text(turn) -> str:
    return "\n".join(m["content"] for m in turn.prompt if m["role"] != "system")


def test_components_lists_every_name_the_issue_requires():
    got = components()
    assert set(got["paradigm"]) >= {"memory", "relay", "report", "debate", "simultaneous", "collective_refinement",
                                    "one_by_one", "two_sided"}
    assert set(got["protocol"]) >= {"simple_voting", "ranked_voting", "approval_voting", "cumulative_voting",
                                    "majority_consensus", "supermajority_consensus", "unanimity_consensus",
                                    "judge", "solution_counting", "convergence"}
    assert set(got["response_generator"]) == {"simple", "critical", "reasoning"}
    assert set(got["ordering"]) == {"fixed", "random", "madc", "truth_first", "truth_last"}


# ----- voting ---------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol,votes,winner", [
    ("simple_voting", {"Agent 1": "2", "Agent 2": "2", "Agent 3": "1"}, 1),
    ("approval_voting", {"Agent 1": "1, 3", "Agent 2": "3", "Agent 3": "2, 3"}, 2),
    ("ranked_voting", {"Agent 1": "2 1 3", "Agent 2": "2 3 1", "Agent 3": "1 2 3"}, 1),
    ("cumulative_voting", {"Agent 1": '{"1": 2, "3": 8}', "Agent 2": '{"3": 10}', "Agent 3": '{"1": 10}'}, 2),
])
def test_voting_protocols_decide_from_parsed_ballots(script, roles, protocol, votes, winner):
    answers = {"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Nice"}
    model, _ = script(roles(answers, votes))
    events = run(config(model, protocol=protocol, rounds=1, max_rounds=2))
    decision = of(events, DecisionReached)[0]
    assert decision.winner_index == winner
    assert decision.answer == ["Paris", "Lyon", "Nice"][winner]
    assert decision.solutions == ["Paris", "Lyon", "Nice"]  # extracted before voting (seed 000 E.1)
    assert len(turns(events, "extraction")) == 3
    assert events.engine.status == "finished" and of(events, DebateFinished)[-1].status == "finished"


def test_tie_means_another_round_and_a_new_vote(script, roles):
    def votes(agent, rnd, _):
        if rnd == 1:  # 1-1-1 tie in the first vote
            return {"Agent 1": "1", "Agent 2": "2", "Agent 3": "3"}[agent]
        return "2"
    model, _ = script(roles({"Agent 1": "A", "Agent 2": "B", "Agent 3": "C"}, votes))
    events = run(config(model, protocol="simple_voting", rounds=1, max_rounds=3))
    attempts = of(events, DecisionAttempted)
    assert [a.reached for a in attempts] == [False, True]
    assert "tie" in attempts[0].reason
    assert max(t.round for t in turns(events, "discussion")) == 2
    assert of(events, DecisionReached)[0].answer == "B"


def test_invalid_ballot_is_reasked_then_recorded_invalid_not_counted(script, roles):
    votes = {"Agent 1": "I like all of them", "Agent 2": "2", "Agent 3": "2"}
    model, _ = script(roles({"Agent 1": "A", "Agent 2": "B", "Agent 3": "C"}, votes))
    events = run(config(model, protocol="simple_voting", rounds=1, max_rounds=1, vote_retries=2))
    bad = [v for v in of(events, VoteCast) if v.agent == "Agent 1"]
    assert [v.attempt for v in bad] == [1, 2, 3]  # asked once, re-asked twice
    assert all(not v.valid and v.reason for v in bad)
    reasked = [t for t in turns(events, "vote") if t.agent == "Agent 1"][1]
    assert "could not be counted" in user_text(reasked)
    decision = of(events, DecisionReached)[0]
    assert decision.answer == "B" and decision.details["invalid"] == 1


def test_turn_cap_uses_first_agents_solution(script, roles):
    def votes(agent, rnd, _):
        return {"Agent 1": "1", "Agent 2": "2", "Agent 3": "3"}[agent]  # always a tie
    model, _ = script(roles({"Agent 1": "A", "Agent 2": "B", "Agent 3": "C"}, votes))
    events = run(config(model, protocol="simple_voting", rounds=1, max_rounds=2))
    decision = of(events, DecisionReached)[0]
    assert decision.answer == "A" and decision.winner_agent == "Agent 1"
    assert "turn cap" in decision.fallback
    assert max(t.round for t in turns(events, "discussion")) == 2
    assert events.engine.status == "finished"


def test_solution_counting_ties_go_another_round(script, roles):
    calls = {"n": 0}

    def extraction(messages, meta):
        calls["n"] += 1
        if meta["round"] == 1:
            return {"Agent 1": "A", "Agent 2": "B"}[meta["agent"]]
        return "B"
    model, _ = script(roles(extraction=extraction))
    events = run(config(model, n=2, protocol="solution_counting", rounds=1, max_rounds=3))
    attempts = of(events, DecisionAttempted)
    assert [a.reached for a in attempts] == [False, True]
    assert of(events, DecisionReached)[0].answer == "B"
    assert not of(events, VoteCast)  # counting asks nobody to vote


# ----- consensus ------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol,reached", [
    ("majority_consensus", True),        # proposer + 1 of 3 agree: 2/3 >= 50 %
    ("supermajority_consensus", True),   # 2/3 >= 66 %: two of three suffice (MALLM)
    ("unanimity_consensus", False),      # Agent 3 says neither AGREE nor DISAGREE
])
def test_consensus_thresholds(script, protocol, reached):
    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "extraction":
            return "Paris"
        if meta["agent"] == "Agent 1":
            return "Paris, clearly.\nFinal answer: Paris"
        if meta["agent"] == "Agent 2":
            return "AGREE. Same here.\nFinal answer: Paris"
        return "I have no opinion.\nFinal answer: Paris"  # neither AGREE nor DISAGREE
    model, _ = script(reply)
    events = run(config(model, protocol=protocol, rounds=1, max_rounds=2))
    assert of(events, DecisionAttempted)[0].reached is reached
    decision = of(events, DecisionReached)[0]
    assert decision.answer == "Paris"
    assert (decision.fallback is None) is reached  # unanimity never comes: the turn cap decides
    if not reached:
        assert "turn cap" in decision.fallback


def test_consensus_disagreement_makes_a_new_proposal(script):
    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "extraction":
            return "Lyon" if "Lyon" in messages[-1]["content"] else "Paris"
        if meta["agent"] == "Agent 1":
            return "Paris.\nFinal answer: Paris"
        if meta["agent"] == "Agent 2":
            return "DISAGREE. It is Lyon.\nFinal answer: Lyon"
        return "AGREE with Agent 2.\nFinal answer: Lyon"
    model, _ = script(reply)
    events = run(config(model, protocol="majority_consensus", rounds=1, max_rounds=1))
    decision = of(events, DecisionReached)[0]
    assert decision.winner_agent == "Agent 2" and decision.answer == "Lyon"
    assert decision.details["agree"] == {"Agent 1": False, "Agent 2": True, "Agent 3": True}
    agreement_prompt = [t for t in turns(events, "discussion") if t.agent == "Agent 2"][0]
    assert "AGREE" in user_text(agreement_prompt)  # agents are asked to agree or disagree


def test_consensus_is_checked_after_every_answer_and_the_last_speaker_solves(script):
    """Seed 000 §3.2 / MALLM: A proposes, B agrees: with majority consensus the discussion ends
    there; C never speaks. Agents are shown the proposal they are asked about."""
    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "extraction":
            return "Paris"
        if meta["agent"] == "Agent 1":
            return "It is Paris.\nFinal answer: Paris"
        return "AGREE, that is right.\nFinal answer: Paris"
    model, s = script(reply)
    events = run(config(model, protocol="majority_consensus", rounds=3, max_rounds=5))
    discussion = turns(events, "discussion")
    assert [(t.agent, t.round) for t in discussion] == [("Agent 1", 1), ("Agent 2", 1)]  # Agent 3 never spoke
    assert "The current proposal, from Agent 1: Paris" in user_text(discussion[1])
    assert "AGREE" in user_text(discussion[1]) and "proposal" not in user_text(discussion[0])
    extraction = turns(events, "extraction")
    assert [t.agent for t in extraction] == ["Agent 2"]  # the last speaker solves from the latest messages
    text = user_text(extraction[0])
    assert "The discussion ended with these messages:" in text
    assert text.index("[Agent 1]: It is Paris.") < text.index("[Agent 2]: AGREE, that is right.")
    decision = of(events, DecisionReached)[0]
    assert (decision.answer, decision.winner_agent, decision.round) == ("Paris", "Agent 1", 1)
    assert [a.reached for a in of(events, DecisionAttempted)] == [True]
    assert s.calls == 3


@pytest.mark.parametrize("protocol, speakers", [
    ("majority_consensus", ["Agent 1", "Agent 2"]),  # 2 of 4 agree: >= 50 % (MALLM), it ends there
    ("supermajority_consensus", ["Agent 1", "Agent 2", "Agent 3"]),  # 3 of 4 >= 66 %; 2 of 4 is not
])
def test_four_agents_consensus_ends_at_the_first_turn_that_reaches_the_share(script, protocol, speakers):
    def reply(messages, info):
        if info["metadata"]["kind"] == "extraction":
            return "Paris"
        if info["metadata"]["agent"] == "Agent 1":
            return "It is Paris.\nFinal answer: Paris"
        return "AGREE, that is right.\nFinal answer: Paris"
    model, _ = script(reply)
    events = run(config(model, n=4, protocol=protocol, rounds=1, max_rounds=2))
    assert [t.agent for t in turns(events, "discussion")] == speakers  # nobody after that speaks
    assert of(events, DecisionReached)[0].fallback is None


def test_the_engine_names_no_component():
    """Protocols, paradigms and orderings own their behaviour: the engine (and its collaborators) tests
    none of their names."""
    import importlib
    import inspect

    from mad_core.events import TURN_KINDS
    source = "\n".join(inspect.getsource(importlib.import_module(f"mad_core.{name}"))
                       for name in ("engine", "calls", "context", "controller", "discussion", "phases", "replay",
                                    "resume", "recorder"))
    for names in components().values():
        for name in set(names) - set(TURN_KINDS):  # "judge" is also the kind of a judge's turn
            assert f'"{name}"' not in source and f"'{name}'" not in source, name


# ----- paradigms: who sees what, on the exact prompts ----------------------------------------------
def said(agent: str) -> str:
    return f"UNIQUE-{agent.replace(' ', '')}"


def speaker(text):
    """A scripted reply: "1" for votes and extractions, `text(metadata)` for every other turn."""
    def reply(messages, info):
        meta = info["metadata"]
        return "1" if meta["kind"] in ("vote", "extraction") else text(meta)
    return reply


def paradigm_run(script, paradigm, n=3, rounds=2, **settings):
    model, _ = script(speaker(lambda meta: f"{said(meta['agent'])}-R{meta['round']}\nFinal answer: Paris"))
    events = run(config(model, n=n, paradigm=paradigm, rounds=rounds, max_rounds=rounds, **settings))
    return turns(events, "discussion") + turns(events, "draft"), events


def seen_markers(turn) -> set[str]:
    text = user_text(turn)
    return {f"{a}-R{r}" for a in ("UNIQUE-Agent1", "UNIQUE-Agent2", "UNIQUE-Agent3") for r in (0, 1, 2) if f"{a}-R{r}" in text}


def find(ts, agent, rnd):
    return next(t for t in ts if t.agent == agent and t.round == rnd)


def test_memory_sees_everything_said_before(script):
    ts, _ = paradigm_run(script, "memory")
    assert seen_markers(find(ts, "Agent 3", 1)) == {"UNIQUE-Agent1-R1", "UNIQUE-Agent2-R1"}
    assert seen_markers(find(ts, "Agent 1", 2)) == {"UNIQUE-Agent1-R1", "UNIQUE-Agent2-R1", "UNIQUE-Agent3-R1"}


def test_memory_window_limits_rounds_seen(script):
    ts, _ = paradigm_run(script, "memory", rounds=2, memory_window=0)
    # window 0: only the current round is visible
    assert seen_markers(find(ts, "Agent 2", 2)) == {"UNIQUE-Agent1-R2"}


def test_relay_sees_only_previous_speaker(script):
    ts, _ = paradigm_run(script, "relay")
    assert seen_markers(find(ts, "Agent 3", 1)) == {"UNIQUE-Agent2-R1"}
    assert seen_markers(find(ts, "Agent 1", 2)) == {"UNIQUE-Agent3-R1"}


def test_report_members_see_only_moderator(script):
    ts, _ = paradigm_run(script, "report")
    assert seen_markers(find(ts, "Agent 2", 1)) == {"UNIQUE-Agent1-R1"}
    assert seen_markers(find(ts, "Agent 3", 2)) == {"UNIQUE-Agent1-R1", "UNIQUE-Agent3-R1", "UNIQUE-Agent1-R2"}
    assert seen_markers(find(ts, "Agent 1", 2)) == {"UNIQUE-Agent1-R1", "UNIQUE-Agent2-R1", "UNIQUE-Agent3-R1"}
    assert "moderator" in find(ts, "Agent 1", 1).prompt[0]["content"]


def test_debate_members_exchange_then_moderator(script):
    ts, _ = paradigm_run(script, "debate", rounds=1, debate_subrounds=2)
    speakers = [t.agent for t in sorted(ts, key=lambda t: t.seq)]
    assert speakers == ["Agent 1", "Agent 2", "Agent 3", "Agent 2", "Agent 3"]
    second_a2 = [t for t in ts if t.agent == "Agent 2"][1]
    assert seen_markers(second_a2) == {"UNIQUE-Agent1-R1", "UNIQUE-Agent2-R1", "UNIQUE-Agent3-R1"}


def test_simultaneous_sees_previous_round_only(script):
    ts, events = paradigm_run(script, "simultaneous")
    assert seen_markers(find(ts, "Agent 1", 1)) == set()
    assert seen_markers(find(ts, "Agent 2", 2)) == {"UNIQUE-Agent1-R1", "UNIQUE-Agent2-R1", "UNIQUE-Agent3-R1"}


def test_collective_improvement_shows_the_previous_rounds_full_responses(script):
    ts, _ = paradigm_run(script, "collective_refinement", rounds=3)
    assert seen_markers(find(ts, "Agent 2", 1)) == set()  # round 1: independent
    for rnd in (2, 3):  # MALLM: the previous round's full responses, the agent's own included
        text = user_text(find(ts, "Agent 2", rnd))
        assert seen_markers(find(ts, "Agent 2", rnd)) == {f"UNIQUE-Agent{i}-R{rnd - 1}" for i in (1, 2, 3)}
        assert f"[Agent 1]: UNIQUE-Agent1-R{rnd - 1}\nFinal answer: Paris" in text


@pytest.mark.parametrize("protocol", ["majority_consensus", "supermajority_consensus", "unanimity_consensus"])
def test_collective_improvement_is_refused_with_consensus_protocols(script, protocol):
    model, _ = script(["x"])
    with pytest.raises(ConfigError) as refused:
        config(model, paradigm="collective_refinement", protocol=protocol)
    assert refused.value.field == "protocol" and "voting protocols" in refused.value.message


def test_simultaneous_talk_with_a_summarizer(script):
    """Seed 003 App. (ChatEval): after every round a summarizer condenses the messages so far; each
    agent then sees the summary and its own replies, not the others' replies."""
    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] in ("vote", "extraction"):
            return "1"
        if meta["kind"] == "summary":
            return f"SUMMARY-R{meta['round']}"
        return f"{said(meta['agent'])}-R{meta['round']}\nFinal answer: Paris"
    model, s = script(reply)
    events = run(config(model, paradigm="simultaneous_summarizer", rounds=2, max_rounds=2))
    summaries = turns(events, "summary")
    assert [(t.agent, t.round) for t in summaries] == [("summarizer", 1), ("summarizer", 2)]
    first = user_text(summaries[0])
    assert all(f"UNIQUE-Agent{i}-R1" in first for i in (1, 2, 3))  # it read every message
    second_round = find(turns(events, "discussion"), "Agent 2", 2)
    assert seen_markers(second_round) == {"UNIQUE-Agent2-R1"} and "SUMMARY-R1" in user_text(second_round)
    assert len(s.history) == 3 * 2 + 2 + 3 + 3  # agents, one summary a round, extractions, votes


@pytest.mark.parametrize("connectivity, sees", [
    ("ring", {"Agent 1": {2, 4}, "Agent 2": {1, 3}, "Agent 3": {2, 4}, "Agent 4": {1, 3}}),
    ({"Agent 1": ["Agent 3"], "Agent 2": [], "Agent 3": [], "Agent 4": ["Agent 1", "Agent 2"]},
     {"Agent 1": {3}, "Agent 2": set(), "Agent 3": set(), "Agent 4": {1, 2}}),
])
def test_sparse_connectivity_limits_who_sees_whom(script, connectivity, sees):
    model, _ = script(speaker(lambda meta: f"{said(meta['agent'])}-R{meta['round']}\nFinal answer: Paris"))
    events = run(config(model, n=4, paradigm="simultaneous", rounds=2, max_rounds=2,
                                connectivity=connectivity))
    for viewer, others in sees.items():
        text = user_text(find(turns(events, "discussion"), viewer, 2))
        shown = {i for i in range(1, 5) if f"UNIQUE-Agent{i}-R1" in text}
        assert shown == others | {int(viewer[-1])}, viewer  # its own earlier reply, and its neighbours'


def test_connectivity_must_name_agents(script):
    model, _ = script(["x"])
    with pytest.raises(ConfigError) as refused:
        config(model, connectivity={"Agent 9": []})
    assert refused.value.field == "connectivity"
    with pytest.raises(ConfigError) as refused:
        config(model, connectivity="star")
    assert refused.value.field == "connectivity"
    with pytest.raises(ConfigError, match="summarizer shares everyone's messages") as refused:
        config(model, connectivity="ring", paradigm="simultaneous_summarizer")
    assert refused.value.field == "connectivity"


def test_one_by_one_uses_chat_history(script):
    ts, _ = paradigm_run(script, "one_by_one", rounds=2)
    prompt = find(ts, "Agent 1", 2).prompt
    assert any(m["role"] == "assistant" and "UNIQUE-Agent1-R1" in m["content"] for m in prompt)
    assert any(m["role"] == "user" and m["content"].startswith("[Agent 2]") for m in prompt)


def test_aad_makes_round_one_independent_without_adding_a_round(script):
    ts, events = paradigm_run(script, "memory", rounds=2, all_agents_drafting=True)
    drafts = [t for t in ts if t.kind == "draft"]
    assert len(drafts) == 3 and {t.round for t in drafts} == {1} and all(seen_markers(t) == set() for t in drafts)
    assert [e.round for e in of(events, RoundStarted)] == [1, 2]  # the same rounds as without AAD
    assert len([t for t in ts if t.kind == "discussion"]) == 3  # round 2 only: 6 turns in all, as baseline
    assert seen_markers(find(ts, "Agent 1", 2)) == {"UNIQUE-Agent1-R1", "UNIQUE-Agent2-R1", "UNIQUE-Agent3-R1"}


def test_reasoning_generator_hides_others_final_answers(script):
    model, _ = script(speaker(lambda meta: f"Because of {said(meta['agent'])}.\nFinal answer: SECRET-{meta['agent'][-1]}"))
    events = run(config(model, response_generator="reasoning", rounds=1, max_rounds=1))
    third = find(turns(events, "discussion"), "Agent 3", 1)
    text = user_text(third)
    assert "UNIQUE-Agent1" in text and "SECRET-1" not in text and "SECRET-2" not in text


def test_reasoning_generator_shares_reasoning_only_and_each_agent_solves_at_the_end(script):
    """Seed 000 §3.2: no final answers during the discussion; each agent's own solution at the end."""
    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "vote":
            return "1"
        if meta["kind"] == "extraction":
            return f"Final answer: OWN-{meta['agent'][-1]}"
        return f"Because of {said(meta['agent'])}-R{meta['round']}."
    model, s = script(reply)
    events = run(config(model, response_generator="reasoning", rounds=2, max_rounds=2))
    discussion = turns(events, "discussion")
    assert all("Final answer" not in user_text(t) for t in discussion)  # never asked for an answer
    assert all(t.answer is None for t in discussion)
    solving = turns(events, "extraction")
    assert sorted(t.agent for t in solving) == ["Agent 1", "Agent 2", "Agent 3"] and len(s.history) == 6 + 3 + 3
    text = user_text(find(solving, "Agent 3", 2))
    assert "The discussion is over" in text and "UNIQUE-Agent1-R2" in text and "UNIQUE-Agent3-R2" in text
    decision = of(events, DecisionReached)[0]
    assert decision.solutions == ["OWN-1", "OWN-2", "OWN-3"] and decision.answer == "OWN-1"


def test_confidence_visibility_switch(script):
    model, _ = script(speaker(lambda meta: f"{said(meta['agent'])}\nConfidence: 7/10\nFinal answer: Paris"))
    for visible in (True, False):
        events = run(config(model, rounds=1, max_rounds=1, confidence=True, confidence_visible=visible))
        ts = turns(events, "discussion")
        assert ts[0].confidence == 7
        assert "Confidence:" in user_text(ts[0])  # the agent is asked for it
        assert ("Confidence: 7/10" in user_text(find(ts, "Agent 2", 1))) is visible


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_tit_for_tat_level_text_in_prompt(script, roles, level):
    model, _ = script(roles())
    events = run(config(model, rounds=1, max_rounds=1, tit_for_tat=level))
    system = turns(events, "discussion")[0].prompt[0]["content"]
    assert TIT_FOR_TAT[level] in system
    assert all(TIT_FOR_TAT[other] not in system for other in TIT_FOR_TAT if other != level)


def judge_calls(events) -> list[str]:
    return ["extract" if "Decision:" not in t.prompt[-1]["content"] else "verdict" for t in turns(events, "judge")]


@pytest.mark.parametrize("rounds", [3, 2])
def test_two_sided_judge_breaks_when_it_finds_an_answer_the_last_round_included(script, rounds):
    """Seed 002 / MAD: the discriminative judge is asked after every round, the last included."""
    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "judge":
            return "Decision: YES\nAnswer: 42" if meta["round"] == 2 else "Decision: NO\nAnswer:"
        return f"{meta['agent']} argues.\nFinal answer: 42"
    model, _ = script(reply)
    events = run(config(model, n=2, paradigm="two_sided", protocol="judge", judge_model=model,
                                rounds=rounds, max_rounds=rounds))
    ts = turns(events, "discussion")
    assert "affirmative" in ts[0].prompt[0]["content"] and "negative" in ts[1].prompt[0]["content"]
    assert TIT_FOR_TAT[2] in ts[0].prompt[0]["content"]  # the paper's default level
    assert judge_calls(events) == ["verdict", "verdict"]  # no extraction: the round-2 verdict decided
    decision = of(events, DecisionReached)[0]
    assert (decision.answer, decision.round, decision.details["mode"]) == ("42", 2, "discriminative")
    assert max(t.round for t in ts) == 2


def test_the_mad_judge_reads_its_own_dict_format_and_records_the_side_it_supports(script):
    """Seed 002: MAD's judge answers with a single-quoted dictionary; the side it supports is what
    its judge-bias table counts, so it is recorded with who argued it."""
    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "judge":
            return ("{'Whether there is a preference': 'Yes', 'Supported Side': 'Negative', "
                    "'Reason': \"The negative side's sum is right.\", 'debate_answer': '12'}")
        return f"{meta['agent']} argues.\nFinal answer: 12"
    first, _ = script(reply)
    second, _ = script(reply)
    agents = [{"label": "Affirmative", "model": first}, {"label": "Negative", "model": second}]
    cfg = DebateConfig.from_dict({"question": "3 * 4?", "agents": agents, "paradigm": "two_sided",
                                  "protocol": "judge", "judge_model": first, "rounds": 3, "max_rounds": 3})
    events = run(cfg)
    decision = of(events, DecisionReached)[0]
    assert (decision.answer, decision.round) == ("12", 1)
    assert decision.details["side"] == "negative"
    assert (decision.details["side_agent"], decision.details["side_model"]) == ("Negative", second)
    assert decision.details["reason"] == "The negative side's sum is right."
    assert "Supported side" in user_text(turns(events, "judge")[0])  # the judge is asked for it


def test_two_sided_judge_extracts_only_when_no_verdict_was_reached(script):
    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "judge":
            return "Decision: NO\nAnswer:" if "Decision:" in messages[-1]["content"] else "Final answer: 7"
        return "argument\nFinal answer: 6"
    model, _ = script(reply)
    events = run(config(model, n=2, paradigm="two_sided", protocol="judge", rounds=3, max_rounds=3))
    assert judge_calls(events) == ["verdict", "verdict", "verdict", "extract"]
    assert len(turns(events, "discussion")) == 6
    decision = of(events, DecisionReached)[0]
    assert (decision.answer, decision.details["mode"]) == ("7", "extractive")


def test_two_sided_debaters_of_different_models_must_name_the_judge(script, roles):
    first, _ = script(roles())
    second, _ = script(roles())
    agents = [{"label": "Affirmative", "model": first}, {"label": "Negative", "model": second}]
    base = {"question": "q?", "agents": agents, "paradigm": "two_sided", "protocol": "judge"}
    with pytest.raises(ConfigError) as refused:
        DebateConfig.from_dict(base)
    assert refused.value.field == "judge_model"
    assert DebateConfig.from_dict({**base, "judge_model": second}).judge_model == second


def test_two_sided_needs_two_to_four_agents_and_judge(script, roles):
    model, _ = script(roles())
    with pytest.raises(ConfigError) as err:  # seed 002 Table 7 goes up to 4 (tests/unit/test_mad_debaters.py)
        config(model, n=5, paradigm="two_sided", protocol="judge")
    assert err.value.field == "agents"
    with pytest.raises(ConfigError) as err:
        config(model, n=2, paradigm="two_sided", protocol="simple_voting")
    assert err.value.field == "protocol"


# ----- orderings -------------------------------------------------------------------------------
def test_madc_orders_most_consistent_last(script):
    answers = {"Agent 1": "B", "Agent 2": "A", "Agent 3": "A"}
    model, _ = script(lambda m, info: "1" if info["metadata"]["kind"] == "vote" else
                      f"x\nFinal answer: {answers[info['metadata']['agent']]}")
    events = run(config(model, ordering="madc", rounds=2, max_rounds=2, extract_final_answers=False))
    orders = [e.order for e in of(events, RoundStarted)]
    assert orders[0] == ["Agent 1", "Agent 2", "Agent 3"]
    assert orders[1][0] == "Agent 1" and set(orders[1][1:]) == {"Agent 2", "Agent 3"}


def test_truth_last_and_first(script):
    answers = {"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Nice"}
    model, _ = script(lambda m, info: "1" if info["metadata"]["kind"] == "vote" else
                      f"x\nFinal answer: {answers[info['metadata']['agent']]}")
    for ordering, expected in (("truth_last", ["Agent 2", "Agent 3", "Agent 1"]),
                               ("truth_first", ["Agent 1", "Agent 2", "Agent 3"])):
        events = run(config(model, ordering=ordering, reference="Paris", rounds=2, max_rounds=2))
        assert of(events, RoundStarted)[1].order == expected
    with pytest.raises(ConfigError) as err:
        config(model, ordering="truth_last")
    assert err.value.field == "reference"


def test_random_order_is_reproducible_with_a_seed(script, roles):
    model, _ = script(roles())
    orders = []
    for _ in range(2):
        events = run(config(model, n=5, ordering="random", seed=7, rounds=3, max_rounds=3))
        orders.append([e.order for e in of(events, RoundStarted)])
    assert orders[0] == orders[1]
    # Seed 003: roles are allocated at random once, before the debate, then keep their places.
    assert len({tuple(o) for o in orders[0]}) == 1 and len(orders[0]) == 3
    assert orders[0][0] != [f"Agent {i}" for i in range(1, 6)]  # it does shuffle (seed 7)


@pytest.mark.parametrize("paradigm", ["simultaneous", "collective_refinement"])
def test_simultaneous_prompts_present_the_previous_round_in_the_rounds_order(script, paradigm):
    """Seed 003: in simultaneous talk the order is where each answer stands in the others' prompts;
    the order in which concurrent calls finish must never leak into a prompt."""
    finish_last = threading.Event()

    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] in ("vote", "extraction"):
            return "1"
        if meta["round"] == 1 and meta["agent"] == "Agent 1":  # the first in order finishes last
            assert finish_last.wait(timeout=30)
        return f"{said(meta['agent'])}-R{meta['round']}\nFinal answer: P{meta['agent'][-1]}"
    model, _ = script(reply)
    engine, events, done = DebateEngine(config(model, paradigm=paradigm, rounds=2, max_rounds=2)), [], set()
    for event in engine.run():
        events.append(event)
        if isinstance(event, TurnFinished) and event.turn.round == 1:
            done.add(event.turn.agent)
            if done == {"Agent 2", "Agent 3"}:
                finish_last.set()
    finished = [e.turn.agent for e in of(events, TurnFinished) if e.turn.round == 1 and e.turn.kind == "discussion"]
    assert finished[-1] == "Agent 1"  # it really did finish last
    for viewer in ("Agent 1", "Agent 2", "Agent 3"):
        text = user_text(find(turns(events, "discussion"), viewer, 2))
        positions = [text.index(f"UNIQUE-Agent{i}-R1") for i in (1, 2, 3)]
        assert positions == sorted(positions), (viewer, positions)


def _positions(text: str, agents) -> list[int]:
    return [text.index(f"UNIQUE-{agent.replace(' ', '')}-R1") for agent in agents]


@pytest.mark.parametrize("paradigm", ["simultaneous", "collective_refinement"])
@pytest.mark.parametrize("ordering, answers, expected", [
    ("truth_last", ("Paris", "Lyon", "Lyon"), ["Agent 2", "Agent 3", "Agent 1"]),  # reference holders last
    ("truth_first", ("Lyon", "Lyon", "Paris"), ["Agent 3", "Agent 1", "Agent 2"]),  # reference holders first
    ("madc", ("Lyon", "Lyon", "Paris"), ["Agent 3", "Agent 1", "Agent 2"]),  # least consistent first (Alg. 1)
])
def test_the_order_computed_for_a_round_is_the_order_its_prompts_show(script, paradigm, ordering, answers, expected):
    """Seed 003 (Algorithm 1) and the MADC code: the order computed for round r from round r-1's
    answers is where those answers stand in every round-r prompt, so a 2-round debate (the papers'
    setting) already differs from its fixed-order twin in round 2."""
    answer_of = dict(zip(("Agent 1", "Agent 2", "Agent 3"), answers))

    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] in ("vote", "extraction", "summary"):
            return "1"
        return f"{said(meta['agent'])}-R{meta['round']}\nFinal answer: {answer_of[meta['agent']]}"
    model, _ = script(reply)
    settings = dict(paradigm=paradigm, rounds=2, max_rounds=2, reference="Paris", extract_final_answers=False)
    events = run(config(model, ordering=ordering, **settings))
    order = of(events, RoundStarted)[1].order
    assert order == expected
    fixed = run(config(model, ordering="fixed", **settings))
    for viewer in ("Agent 1", "Agent 2", "Agent 3"):
        prompt = user_text(find(turns(events, "discussion"), viewer, 2))
        shown = [a for a in ("Agent 1", "Agent 2", "Agent 3") if f"UNIQUE-{a.replace(' ', '')}-R1" in prompt]
        positions = _positions(prompt, [a for a in order if a in shown])
        assert positions == sorted(positions), (viewer, order, positions)
        twin = user_text(find(turns(fixed, "discussion"), viewer, 2))
        if order != ["Agent 1", "Agent 2", "Agent 3"] and len(shown) > 1:
            assert prompt != twin, (viewer, "the order changed no prompt")  # must not happen


def test_sequential_paradigms_keep_who_spoke_when(script):
    """In sequential talk the order is who speaks when: a prompt shows earlier turns as they were said."""
    answers = {"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Lyon"}
    model, _ = script(lambda m, info: "1" if info["metadata"]["kind"] in ("vote", "extraction") else
                      f"{said(info['metadata']['agent'])}-R{info['metadata']['round']}\n"
                      f"Final answer: {answers[info['metadata']['agent']]}")
    events = run(config(model, paradigm="memory", ordering="truth_last", reference="Paris", rounds=2,
                                max_rounds=2, extract_final_answers=False))
    assert of(events, RoundStarted)[1].order == ["Agent 2", "Agent 3", "Agent 1"]
    prompt = user_text(find(turns(events, "discussion"), "Agent 2", 2))
    assert _positions(prompt, ["Agent 1", "Agent 2", "Agent 3"]) == sorted(_positions(prompt, ["Agent 1", "Agent 2", "Agent 3"]))


def test_report_moderator_stays_the_first_configured_agent_whatever_the_order(script):
    ts, events = paradigm_run(script, "report", n=4, ordering="random", seed=3)
    orders = [e.order for e in of(events, RoundStarted)]
    assert orders[0][0] != "Agent 1"  # the drawn order does not start with the moderator...
    for rnd in (1, 2):
        first = min((t for t in ts if t.round == rnd), key=lambda t: t.seq)
        assert first.agent == "Agent 1"  # ...yet the moderator speaks first and sees everyone
        assert "moderator" in first.prompt[0]["content"]


def test_each_call_gets_its_own_seed_derived_from_the_debate_seed(script, roles):
    model, s = script(roles())
    run(config(model, rounds=2, max_rounds=2, seed=123))
    seeds = {(c["metadata"]["agent"], c["metadata"]["round"], c["metadata"]["kind"]): c["seed"] for c in s.history}
    assert len(seeds) == len(s.history) == 12 and all(isinstance(v, int) for v in seeds.values())
    assert len(set(seeds.values())) == len(seeds)  # same-model agents do not share their noise
    model2, again = script(roles())
    run(config(model2, rounds=2, max_rounds=2, seed=123))
    assert [c["seed"] for c in again.history if c["metadata"]["kind"] == "discussion"] == \
        [c["seed"] for c in s.history if c["metadata"]["kind"] == "discussion"]  # reproducible
    run(config(model2, rounds=1, max_rounds=1))
    assert again.history[-1]["seed"] is None  # no debate seed: none is sent


# ----- personas, challenge, failures --------------------------------------------------------------
def test_generated_personas_are_asked_one_at_a_time_and_a_repeated_expert_is_re_asked(script, roles):
    replies = iter(['{"personas": ["Geographer: knows capitals"]}', '{"personas": ["Geographer: knows capitals"]}',
                    '{"personas": ["Historian: knows France"]}', '{"personas": ["Linguist: knows names"]}'])
    model, _ = script(roles(persona=lambda m, meta: next(replies)))
    events = run(config(model, rounds=1, max_rounds=1, auto_personas=True))
    assigned = of(events, PersonasAssigned)[0].personas
    assert assigned == {"Agent 1": "Geographer: knows capitals", "Agent 2": "Historian: knows France",
                        "Agent 3": "Linguist: knows names"}
    asked = turns(events, "persona")
    assert len(asked) == 4  # one request a persona, the repeated expert re-asked once
    assert "Experts already on the panel:\n- Geographer: knows capitals" in asked[1].prompt[-1]["content"]
    assert "the same expert as a persona already on the panel" in asked[2].prompt[-1]["content"]
    assert "Geographer" in turns(events, "discussion")[0].prompt[0]["content"]


def test_challenge_step_is_recorded(script, roles):
    model, _ = script(roles(challenge=lambda m, meta: "DISAGREE" if meta["agent"] == "Agent 2" and
                            "Give the answer" not in m[-1]["content"] else "It is Lyon.\nFinal answer: Lyon"))
    events = run(config(model, rounds=1, max_rounds=1, challenge=True))
    results = {c.agent: c for c in of(events, ChallengeResult)}
    # Agent 2 disagrees and gives Lyon; the others' reply says neither AGREE nor DISAGREE: unknown, no change.
    assert {agent: (c.agrees, c.new_answer) for agent, c in results.items()} == \
        {"Agent 1": (None, None), "Agent 2": (False, "Lyon"), "Agent 3": (None, None)}


def test_failed_model_is_retried_then_recorded_failed(script, roles):
    model, s = script(roles(), faults={0: "rate_limit", 2: "exception"})  # the retry is call 1
    events = run(config(model, rounds=1, max_rounds=1, retry_base_delay=0.0))
    first, second = turns(events, "discussion")[:2]
    assert first.status == "ok" and first.attempts == 2  # rate limit retried
    assert second.status == "failed" and "RuntimeError" in second.error  # not transient: failed at once
    assert events.engine.status == "finished"  # the debate goes on without the failed turn
    assert "Agent 2" not in of(events, DecisionReached)[0].solution_agents


# ----- steering ------------------------------------------------------------------------------
def test_stop_mid_turn_keeps_partial_turn_and_nobody_speaks_after(script, tmp_path):
    long = " ".join(f"word{i}" for i in range(200)) + "\nFinal answer: Paris"
    model, _ = script([long], token_delay=0.01)
    store = Store(tmp_path / "s.db")

    def stop(event, engine):  # on the streaming call's thread, before the piece is queued
        if isinstance(event, TokenReceived) and event.agent == "Agent 2" and "word5" in event.text:
            engine.controller.stop()

    events = run(config(model, rounds=1, max_rounds=1), steer=stop, store=store)
    engine = events.engine
    assert engine.status == "stopped"
    started = [e.agent for e in of(events, TurnStarted)]
    assert "Agent 3" not in started  # must not happen: the next agent never speaks
    partial = turns(events)[-1]
    assert partial.agent == "Agent 2" and partial.status == "interrupted"
    assert "word5" in partial.content and "Final answer" not in partial.content
    stored = store.turns(engine.debate_id)
    assert [t.status for t in stored] == ["ok", "interrupted"]
    assert store.get_debate(engine.debate_id)["status"] == "stopped"


def test_message_to_one_agent_reaches_only_that_agents_next_prompt(script, roles):
    model, _ = script(roles())

    def say(event, engine):  # at the step boundary after Agent 1's first turn
        if isinstance(event, TurnFinished) and event.turn.agent == "Agent 1" and event.turn.round == 1:
            engine.controller.say("Consider Marseille too", targets=["Agent 3"])

    events = run(config(model, rounds=2, max_rounds=2), steer=say)
    steer = of(events, SteeringApplied)
    assert steer[0].targets == ["Agent 3"] and steer[0].message == "Consider Marseille too"
    with_msg = [t for t in turns(events) if "Consider Marseille too" in user_text(t)]
    assert [(t.agent, t.round) for t in with_msg] == [("Agent 3", 1)]


def test_message_to_all_and_unknown_target(script, roles):
    controller = Controller()
    model, _ = script(roles())
    engine = DebateEngine(config(model, rounds=1, max_rounds=1), controller=controller)
    with pytest.raises(ValueError):
        controller.say("hi", targets=["Agent 9"])
    controller.say("Be brief")
    events = list(engine.run())
    assert all("Be brief" in user_text(t) for t in turns(events, "discussion"))


def test_force_decision_now(script, roles):
    model, _ = script(roles(), token_delay=0.005)

    def force(event, engine):
        if isinstance(event, TurnStarted) and event.agent == "Agent 2" and event.round == 1:
            engine.controller.force_decision()  # while Agent 2 speaks: its turn ends, then the vote

    events = run(config(model, rounds=3, max_rounds=5), steer=force)
    decision = of(events, DecisionReached)[0]
    assert decision.forced and decision.round == 1
    assert [t.agent for t in turns(events, "discussion")] == ["Agent 1", "Agent 2"]  # Agent 3 never spoke
    assert events.engine.status == "finished"


def test_pause_blocks_until_resume(script, roles):
    import queue as queue_module
    controller = Controller()
    at_gate = threading.Event()  # the worker has reached the pause gate and waits there
    wait = controller.wait_while_paused

    def gate():
        if controller.paused:
            at_gate.set()
        wait()
    controller.wait_while_paused = gate

    def pause(event, engine):  # a listener on the streaming thread, before Agent 1's first piece is queued
        if isinstance(event, TokenReceived) and event.agent == "Agent 1" and not controller.paused and not at_gate.is_set():
            controller.pause()
    model, s = script(roles())
    engine = DebateEngine(config(model, rounds=1, max_rounds=1), controller=controller,
                          listeners=[lambda event: pause(event, engine)])
    events = []
    for event in engine.run():
        events.append(event)
        if isinstance(event, TokenReceived) and event.agent == "Agent 1" and controller.paused:
            assert at_gate.wait(timeout=30)
            calls = s.calls
            queued = []  # everything the worker emitted before it stopped at the gate
            with pytest.raises(queue_module.Empty):
                while True:
                    queued.append(engine._events.get_nowait())
            # must not happen: progress while paused (the reply finishing, another agent starting)
            assert all(isinstance(e, TokenReceived) and e.agent == "Agent 1" for e in queued)
            assert s.calls == calls == 1
            events.extend(queued)
            controller.resume()
    actions = [e.action for e in of(events, SteeringApplied)]
    assert actions == ["pause", "resume"]
    assert engine.status == "finished" and turns(events, "discussion")[0].status == "ok"
    assert [t.agent for t in turns(events, "discussion")] == ["Agent 1", "Agent 2", "Agent 3"]


# ----- persistence, resume, fork ------------------------------------------------------------------
def test_every_turn_on_disk_and_resume_continues(script, roles, tmp_path):
    store = Store(tmp_path / "r.db")
    model, s = script(roles(), token_delay=0.005)

    def stop(event, engine):
        if isinstance(event, TokenReceived) and engine.round == 2 and event.agent == "Agent 2":
            engine.controller.stop()

    debate_id = run(config(model, rounds=2, max_rounds=2), steer=stop, store=store).engine.debate_id
    assert [t.status for t in store.turns(debate_id)] == ["ok"] * 4 + ["interrupted"]
    store.set_status(debate_id, "interrupted")  # as if the process had died
    calls_before = s.calls

    from mad_core import resume_debate
    events = list(resume_debate(debate_id, store))
    new_calls = s.calls - calls_before
    assert of(events, DecisionReached)
    # only Agent 2 and 3 of round 2 plus 3 extractions and 3 votes were new model calls
    assert new_calls == 2 + 3 + 3
    stored = store.turns(debate_id)
    assert len([t for t in stored if t.kind == "discussion" and t.status == "ok"]) == 6
    assert [t.agent for t in stored if t.status == "interrupted"] == ["Agent 2"]  # the cut turn is kept
    assert store.get_debate(debate_id)["status"] == "finished"


def test_fork_inherits_history_and_links_parent(script, roles, tmp_path):
    from mad_core import fork_debate
    store = Store(tmp_path / "f.db")
    model, s = script(roles())
    parent = run(config(model, rounds=2, max_rounds=2), store=store).engine.debate_id
    upto = store.turns(parent)[3].seq  # Agent 1, round 2
    child = fork_debate(parent, upto, store)
    calls_before = s.calls
    list(child.run())
    record = store.get_debate(child.debate_id)
    assert record["parent_id"] == parent and record["forked_from_seq"] == upto
    child_turns = store.turns(child.debate_id)
    assert [t.content for t in child_turns[:4]] == [t.content for t in store.turns(parent)[:4]]
    assert s.calls - calls_before == 2 + 3 + 3  # only what came after the fork point


# ----- config errors --------------------------------------------------------------------------
@pytest.mark.parametrize("change,field", [
    ({"protocol": "telepathy"}, "protocol"),
    ({"paradigm": "chaos"}, "paradigm"),
    ({"ordering": "alphabetical"}, "ordering"),
    ({"rounds": 0}, "rounds"),
    ({"rounds": -2}, "rounds"),
    ({"max_rounds": 1, "rounds": 3}, "max_rounds"),
    ({"consensus_threshold": 1.5}, "consensus_threshold"),
    ({"tit_for_tat": 4}, "tit_for_tat"),
    ({"agents": []}, "agents"),
    ({"agents": [{"label": "A", "model": "nosuchprovider/x"}]}, "agents[0].model"),
    ({"agents": [{"label": "A", "model": "scripted/never-registered"}]}, "agents[0].model"),
    ({"agents": [{"label": "A", "max_tokens": 0}]}, "agents[0].max_tokens"),
    ({"surprise": 1}, "surprise"),
])
def test_bad_config_names_the_field_before_anything_runs(change, field, tmp_path):
    with pytest.raises(ConfigError) as err:
        DebateConfig.from_dict({"question": "q", **change})
    assert err.value.field == field
    if field in ("protocol", "paradigm", "ordering"):
        assert "valid choices" in str(err.value)


def test_malformed_yaml_is_a_config_error(tmp_path):
    from mad_core import load_config
    bad = tmp_path / "bad.yaml"
    bad.write_text("question: [unclosed\n")
    with pytest.raises(ConfigError) as err:
        load_config(bad)
    assert err.value.field == "config"


def test_engine_never_imports_streamlit():
    import subprocess
    import sys
    code = ("import sys, mad_core, mad_core.engine, mad_core.live, mad_core.view, mad_core.store, mad_core.metrics, "
            "mad_core.cli; assert 'streamlit' not in sys.modules, 'streamlit imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.timeout(60)
def test_stop_during_a_retry_wait_ends_the_wait(script, roles):
    model, s = script(roles(), faults={0: "rate_limit"}, retry_after=600)  # the server asks for 10 minutes
    from mad_core.events import TurnRetried

    def stop(event, engine):
        if isinstance(event, TurnRetried):
            engine.controller.stop()  # as the call begins to wait out Retry-After

    events = run(config(model, retry_max_wait_s=3600), steer=stop)
    assert of(events, DebateFinished)[-1].status == "stopped"
    assert s.calls == 1  # the rate-limited call was not tried again after the stop
