"""Stored equals live: folding a debate's stored events gives the view its live events gave.

A debate reopened from the archive must render exactly as it did while it ran: turns (text,
status, errors, retries, usage), votes, decision attempts and the decision, challenges,
steering, errors, each round's speaking order and how the debate ended. Every paradigm runs
with the scripted model; some runs add failures, retries, steering and a challenge step.
"""
from __future__ import annotations

import dataclasses

import pytest

from mad_core import DebateConfig, components, exports
from mad_core.events import TurnFinished, TurnStarted
from mad_core.store import Store
from mad_core.view import DebateView
from tests import builders
from tests.builders import run


def normalised(view: DebateView) -> dict:
    data = dataclasses.asdict(view)
    data["turns"] = sorted(data["turns"], key=lambda t: (t["seq"] is None, t["seq"], t["id"]))
    return data


def live_and_stored(config: DebateConfig, tmp_path, steer=None) -> tuple[dict, dict, list]:
    """The view folded from the events as the consumer got them, and the one reopened from the store.
    `steer(event, engine)` is a listener: it steers at the step boundary where the event happens."""
    store = Store(tmp_path / "debates.db")
    events = run(config, steer=steer, store=store)
    live = DebateView()
    for event in events:
        live.apply(event)
    stored = DebateView.from_store(store, events.engine.debate_id)
    return normalised(live), normalised(stored), events


def assert_same(live: dict, stored: dict) -> None:
    for key in live:
        assert stored[key] == live[key], key


def config_for(paradigm: str, model: str, **settings) -> DebateConfig:
    n = 2 if paradigm == "two_sided" else 3
    extra = {"judge_model": model, "protocol": "judge"} if paradigm == "two_sided" else {}
    if paradigm == "kks_per_player":  # seed 001's mode debates a Knight-Knave-Spy puzzle with its own vote
        extra = {"answer_type": "kks", "answer_options": ["Ann", "Bo"], "protocol": "kks_player_vote"}
    return builders.config(model, n, **{"paradigm": paradigm, "rounds": 2, "max_rounds": 3, "retry_base_delay": 0,
                                        **extra, **settings})


def judge_aware(roles):
    base = roles(answers={"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Paris"})

    def reply(messages, info):
        if info["metadata"]["kind"] == "judge":
            return "Decision: NO\nAnswer:" if info["metadata"]["round"] < 2 else "Decision: YES\nAnswer: Paris"
        return base(messages, info)
    return reply


# The decision each paradigm reaches with `judge_aware` replies: Paris by 3 votes to 0 in round 2 (Agents 1
# and 3 say Paris, every vote is "1"); the judge says YES to Paris in round 2; KKS reads no roles from
# "Paris", so the supervisor's fallback gives each tied player the first role (recorded as round 4).
DECISIONS = {"two_sided": {"round": 2, "answer": "Paris", "winner_agent": "judge"},
             "kks_per_player": {"round": 4, "answer": "Ann: knight, Bo: knight", "winner_agent": None}}


@pytest.mark.parametrize("paradigm", components()["paradigm"])
def test_every_paradigm_reopens_as_it_ran(paradigm, script, roles, tmp_path):
    # A server error on call 1 (retried), a hard failure on call 4 (a failed turn with an error).
    model, _ = script(judge_aware(roles), faults={1: "server_error", 4: "exception"})
    config = config_for(paradigm, model, ordering="random", seed=7, all_agents_drafting=paradigm == "memory")
    live, stored, events = live_and_stored(config, tmp_path)
    assert live["status"] == "finished"
    decided = {k: live["decision"][k] for k in ("round", "answer", "winner_agent")}
    assert decided == DECISIONS.get(paradigm, {"round": 2, "answer": "Paris", "winner_agent": "Agent 1"})
    assert any(t["retries"] == 1 for t in live["turns"])  # the retried call shows as retried both ways
    assert any(t["status"] == "failed" for t in live["turns"]) and live["errors"]
    assert all(order for order in live["rounds"].values())  # every round's order is known, stored too
    assert_same(live, stored)


def test_steering_challenges_and_votes_reopen_as_they_ran(script, roles, tmp_path):
    model, _ = script(roles(answers={"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Paris"},
                            votes={"Agent 1": "1", "Agent 2": "maybe", "Agent 3": "Solution 1"},
                            challenge="DISAGREE, it is Lyon.\nFinal answer: Lyon"))
    config = config_for("memory", model, protocol="cumulative_voting", challenge=True, vote_retries=1)

    def steer(event, engine):
        if isinstance(event, TurnFinished) and event.turn.seq == 0:
            engine.controller.say("Think about Lyon.", ["Agent 2"])
            engine.controller.pause()
            engine.controller.resume()
    live, stored, _ = live_and_stored(config, tmp_path, steer)
    assert [s["action"] for s in live["steering"]] == ["message", "pause", "resume"]
    assert sorted((c["agent"], c["agrees"], c["new_answer"]) for c in live["challenges"]) == \
        [(agent, False, "Lyon") for agent in ("Agent 1", "Agent 2", "Agent 3")]  # every agent disagrees
    # No ballot reads as a cumulative vote: each agent's, retried once, in rounds 2 and 3 (both undecided).
    assert sorted((v["round"], v["agent"], v["valid"]) for v in live["votes"]) == \
        [(r, agent, False) for r in (2, 3) for agent in ("Agent 1", "Agent 2", "Agent 3") for _ in range(2)]
    assert_same(live, stored)


def cheap_embed(texts):
    """A stand-in for SBERT in the exports' metric report (loading the model takes seconds)."""
    return [[1.0, float(len(text))] for text in texts]


def test_a_pause_asked_for_during_a_turn_is_applied_at_the_next_step_boundary(script, roles, tmp_path):
    """A steering action keeps when the person acted (`requested_at`, stamped by the Controller as the
    command arrives) and when the engine applied it (`ts`, at the step boundary after the running turn);
    both are stored, read back and exported."""
    model, _ = script(roles(answers={"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Paris"}))
    asked: list[str] = []

    def steer(event, engine):
        if isinstance(event, TurnStarted) and event.kind == "discussion" and not asked:
            asked.append(event.turn_id)
            engine.controller.pause()  # while the turn runs (on its call's thread)
            engine.controller.resume()  # so that its stream does not wait: both are applied at the boundary
    live, stored, events = live_and_stored(config_for("memory", model), tmp_path, steer)
    assert_same(live, stored)
    turn = next(t for t in builders.turns(events) if t.id == asked[0])
    pause, resume = live["steering"]
    assert (pause["action"], resume["action"]) == ("pause", "resume")
    assert turn.started_at <= pause["requested_at"] <= resume["requested_at"] < turn.finished_at
    assert turn.finished_at <= pause["ts"] <= resume["ts"]  # applied once the turn's step was over
    with Store(tmp_path / "debates.db") as store:
        exported = exports.export_debate(store, events.engine.debate_id, embed=cheap_embed)
        markdown = exports.to_markdown(store, events.engine.debate_id, embed=cheap_embed)
    assert [(row["action"], row["requested_at"], row["ts"]) for row in exported["steering"]] == \
        [(row["action"], row["requested_at"], row["ts"]) for row in live["steering"]]
    assert f"- {exports.steering_times(exported['steering'][0])} pause" in markdown
    assert exports.clock_time(pause["requested_at"]) in markdown and "(requested " in markdown


def test_a_failed_debate_reopens_with_its_cause(script, roles, tmp_path):
    model, _ = script(roles(), faults={i: "exception" for i in range(50)})
    live, stored, _ = live_and_stored(config_for("simultaneous", model), tmp_path)
    assert live["status"] == "failed" and "every turn of round 1 failed" in live["finish_reason"]
    assert "RuntimeError: scripted fault: exception" in live["finish_reason"]
    assert_same(live, stored)


@pytest.mark.parametrize("paradigm", ["kks_per_player", "simultaneous", "memory"])
def test_a_debate_stored_before_rounds_carried_their_plan_reopens_as_it_ran(paradigm, script, roles, tmp_path):
    # Rounds stored before m008 had no topic and no step plan; m009 (mad_core/round_plans.py) fills them in
    # from the stored config and turns, so headings and the report's "said just before" read as they did.
    from sqlite_utils import Database

    model, _ = script(judge_aware(roles))
    config = config_for(paradigm, model, ordering="random", seed=7, all_agents_drafting=paradigm == "memory",
                        **({"kks_order": "agreed"} if paradigm == "kks_per_player" else {}))
    live, stored, events = live_and_stored(config, tmp_path)
    assert live["topics"] if paradigm == "kks_per_player" else live["round_steps"]  # something to lose
    path = tmp_path / "debates.db"
    old = Database(path)
    old["rounds"].transform(drop={"topic", "steps"})  # the rounds table as it was before m008
    old.execute("DELETE FROM _migrations WHERE name IN ('m008_round_plans', 'm009_round_plans')")
    old.conn.commit()
    old.close()
    with Store(path) as reopened:
        assert reopened.applied_migrations()[-2:] == ["m008_round_plans", "m009_round_plans"]
        upgraded = normalised(DebateView.from_store(reopened, events.engine.debate_id))
    assert (upgraded["topics"], upgraded["round_steps"]) == (live["topics"], live["round_steps"])
    assert_same(live, upgraded)
