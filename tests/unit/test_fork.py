"""Forks keep everything of their parent up to the fork point (scripted model through litellm):
the turns, the moderator messages sent before it (reaching exactly the prompts they reached in
the parent), the rounds' speaking orders and the personas; nothing from after the fork point."""
from __future__ import annotations

import functools
import itertools

from mad_core import DebateEngine, fork_debate
from mad_core.events import PersonasAssigned, RoundStarted, SteeringApplied, TurnStarted
from mad_core.store import Store
from mad_core.view import DebateView
from tests.builders import config, run

FLAMINGO = "Remember the flamingo rule: check the pressure."
PELICAN = "Pelican note: sent after the fork point."


make_config = functools.partial(config, question="At what temperature does water boil?", rounds=2, max_rounds=2)


def user_text(turn) -> str:
    return "\n".join(m["content"] for m in turn.prompt if m["role"] != "system")


def parent_with_messages(script, roles, store, **settings):
    """A finished 3-agent, 2-round debate: FLAMINGO said while Agent 1 speaks in round 1 (it reaches
    the prompts after Agent 1's turn), PELICAN while Agent 2 speaks (after Agent 2's turn, seq 1)."""
    def say(event, engine):  # a listener: as the turn starts, on the worker's thread
        if isinstance(event, TurnStarted) and (event.kind, event.round) == ("discussion", 1):
            said = {"Agent 1": FLAMINGO, "Agent 2": PELICAN}.get(event.agent)
            if said:
                engine.controller.say(said)  # applied at the next step boundary, after this turn

    model, s = script(roles(default_answer="100"))
    return run(make_config(model, **settings), steer=say, store=store).engine.debate_id, s


def discussion(turns):
    return [t for t in turns if t.kind == "discussion"]


def test_a_fork_keeps_the_moderator_message_sent_before_its_fork_point(script, roles, tmp_path):
    store = Store(tmp_path / "f.db")
    parent, s = parent_with_messages(script, roles, store)
    parent_turns = store.turns(parent)
    assert [(t.seq, t.agent, t.round) for t in discussion(parent_turns)][:2] == [(0, "Agent 1", 1), (1, "Agent 2", 1)]
    assert FLAMINGO in user_text(parent_turns[1]) and PELICAN not in user_text(parent_turns[1])

    child = fork_debate(parent, 1, store)  # after Agent 2's round-1 turn: FLAMINGO before, PELICAN after
    calls = s.calls
    list(child.run())
    fork_turns = store.turns(child.debate_id)
    first_new = next(t for t in fork_turns if t.seq > 1)
    assert (first_new.agent, first_new.round, first_new.kind) == ("Agent 3", 1, "discussion")
    # The first new turn's exact prompt: what the parent's Agent 3 got, without the later message.
    parent_agent3 = parent_turns[2]
    expected = [{**m, "content": m["content"].replace(f"\nA human moderator says to you: {PELICAN}", "")}
                for m in parent_agent3.prompt]
    assert PELICAN in user_text(parent_agent3) and expected != parent_agent3.prompt
    assert first_new.prompt == expected
    assert FLAMINGO in user_text(first_new)
    # Agent 1 had not spoken since the message: its round-2 prompt gets it, as in the parent.
    agent1_round2 = next(t for t in discussion(fork_turns) if (t.agent, t.round) == ("Agent 1", 2))
    assert FLAMINGO in user_text(agent1_round2)
    # Each agent receives it once, as in the parent (the replayed Agent 2 turn consumed its copy).
    assert sum(FLAMINGO in user_text(t) for t in fork_turns) == sum(FLAMINGO in user_text(t) for t in parent_turns)
    # Must not happen: the message sent after the fork point reaches the fork.
    assert not any(PELICAN in user_text(t) for t in fork_turns)
    assert [(r["action"], r["message"]) for r in store.steering(child.debate_id)] == [("message", FLAMINGO)]
    assert s.calls - calls == 4 + 3 + 3  # Agent 3 r1, round 2, extractions, votes: nothing inherited re-called


def test_the_forks_transcript_shows_the_inherited_message_in_place_and_marks_what_came_from_the_parent(
        script, roles, tmp_path):
    store = Store(tmp_path / "f.db")
    parent, _ = parent_with_messages(script, roles, store)
    child = fork_debate(parent, 1, store)
    live = DebateView()
    for event in child.run():
        live.apply(event)
    stored = DebateView.from_store(store, child.debate_id)
    for view in (live, stored):
        order = [(kind, item if kind == "turn" else item.message) for kind, item in view.timeline]
        ids = [t.id for t in view.turns]
        assert order[:4] == [("turn", ids[0]), ("steer", FLAMINGO), ("turn", ids[1]), ("turn", ids[2])]
        assert [view.from_parent(t) for t in view.turns[:3]] == [True, True, False]
        assert view.from_parent(view.steering[0])
        # Must not happen: a turn of the fork's own marked as the parent's, or the later message shown.
        assert not any(view.from_parent(t) for t in view.turns[2:])
        assert PELICAN not in [e.message for e in view.steering]
    assert stored.parent_id == parent and stored.forked_from_seq == 1


def test_a_message_just_after_the_fork_point_turn_stays_with_the_parent(script, roles, tmp_path):
    store = Store(tmp_path / "f.db")
    parent, _ = parent_with_messages(script, roles, store)
    child = fork_debate(parent, 0, store)  # right after Agent 1's turn, before FLAMINGO took effect
    list(child.run())
    assert store.steering(child.debate_id) == []
    assert not any(FLAMINGO in user_text(t) for t in store.turns(child.debate_id))


def test_a_fork_keeps_its_parents_speaking_orders_and_personas(script, roles, tmp_path):
    store = Store(tmp_path / "f.db")
    counter = itertools.count()

    def personas(messages, meta):  # a different list on every call: a fork that asked again would differ
        k = next(counter)
        return '{"personas": [%s]}' % ", ".join(f'"Expert {k}-{i}: knows water"' for i in range(5))

    model, _ = script(roles(persona=personas))
    settings = dict(n=5, ordering="random", auto_personas=True)
    events = run(make_config(model, seed=1, **settings), store=store)
    parent = events.engine.debate_id
    parent_orders = [e.order for e in events if isinstance(e, RoundStarted)]
    upto = next(t.seq for t in store.turns(parent) if (t.round, t.kind) == (1, "discussion"))
    # The fork draws orders with another seed: round 1 (begun before the fork point) keeps the parent's.
    child = fork_debate(parent, upto, store, config=make_config(model, seed=2, **settings))
    fork_events = list(child.run())
    fork_orders = [e.order for e in fork_events if isinstance(e, RoundStarted)]
    redrawn = DebateEngine(make_config(model, seed=2, **settings)).context.discussion.round_order(1)
    assert redrawn != parent_orders[0]  # without the inherited order, round 1 would be spoken in another order
    assert fork_orders[0] == parent_orders[0]
    fork_round1 = [t.agent for t in store.turns(child.debate_id) if (t.round, t.kind) == (1, "discussion")]
    assert fork_round1 == parent_orders[0]
    assert [e.personas for e in fork_events if isinstance(e, PersonasAssigned)] == \
        [e.personas for e in events if isinstance(e, PersonasAssigned)]
    assert {a["persona"] for a in store.agents(child.debate_id)} == {a["persona"] for a in store.agents(parent)}
    assert not [e for e in fork_events if isinstance(e, SteeringApplied)]
