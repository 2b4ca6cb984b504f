"""The engine's seams: the store it is handed (a Store or a factory, never a path), its synchronous
listeners, and the collaborators that never reach back into it."""
from __future__ import annotations

import ast
import functools
import threading
from pathlib import Path

import pytest

from mad_core import Controller, DebateEngine
from mad_core.events import (DebateFinished, SteeringApplied, TokenReceived, TurnFinished, TurnRetried, TurnStarted,
                             VoteCast)
from mad_core.store import Store
from tests.builders import config

ROOT = Path(__file__).resolve().parents[2] / "mad_core"
COLLABORATORS = ("calls.py", "context.py", "controller.py", "discussion.py", "phases.py", "ports.py", "recorder.py",
                 "replay.py")


def test_an_in_memory_store_records_every_turn(script, roles):
    """Store(":memory:") is written through, not reopened elsewhere: every turn, vote and the end are in it."""
    model, _ = script(roles())
    store = Store(":memory:")
    engine = DebateEngine(config(model, rounds=2, max_rounds=2), store=store)
    events = list(engine.run())
    finished = [e.turn for e in events if isinstance(e, TurnFinished)]
    assert engine.status == "finished" and len(finished) == 12  # 2 rounds x 3, 3 extractions, 3 votes
    stored = store.turns(engine.debate_id)
    assert [(t.seq, t.id, t.content) for t in stored] == [(t.seq, t.id, t.content)
                                                           for t in sorted(finished, key=lambda t: t.seq)]
    assert len(store.votes(engine.debate_id)) == len([e for e in events if isinstance(e, VoteCast)]) == 3
    debate = store.get_debate(engine.debate_id)
    assert debate["status"] == "finished" and debate["answer"] == events[-1].answer == "Paris"


def test_a_store_factory_is_opened_in_the_worker_and_a_path_is_refused(script, roles, tmp_path):
    model, _ = script(roles())
    opened: list[tuple[str, str | None]] = []

    def factory(**kwargs):
        opened.append((threading.current_thread().name, kwargs.get("owner")))
        return Store(tmp_path / "db.sqlite", **kwargs)

    engine = DebateEngine(config(model, rounds=1, max_rounds=1), store=factory)
    assert [e.status for e in engine.run() if isinstance(e, DebateFinished)] == ["finished"]
    assert opened == [(f"madlab-debate-{engine.debate_id[:8]}", engine.owner)]  # once, by the worker, as owner
    assert len(Store(tmp_path / "db.sqlite").turns(engine.debate_id)) == 9
    engine = DebateEngine(config(model), store=functools.partial(Store, tmp_path / "db.sqlite"))
    assert [e.status for e in engine.run() if isinstance(e, DebateFinished)] == ["finished"]
    with pytest.raises(TypeError, match="a Store or a factory"):
        DebateEngine(config(model), store=tmp_path / "db.sqlite")
    with pytest.raises(TypeError, match="a Store or a factory"):
        DebateEngine(config(model), store=str(tmp_path / "db.sqlite"))


def by_source(events: list) -> dict[str, list]:
    """The events of each source in their order: "recorded" (the worker thread's) and each call's transient
    ones (turn start, retries, tokens) by turn id."""
    split: dict[str, list] = {}
    for event in events:
        key = event.turn_id if isinstance(event, (TokenReceived, TurnRetried, TurnStarted)) else "recorded"
        split.setdefault(key, []).append(event)
    return split


def test_listeners_hear_every_event_before_the_consumer_in_order_recorder_first(script, roles):
    """Recorded events reach the listeners on the worker thread after they are stored; transient ones on
    the call's thread; the consumer sees exactly the events the listeners saw, none before them."""
    model, _ = script(roles(), token_delay=0.001)
    store = Store(":memory:")
    heard: list = []
    stored_when_heard: list[bool] = []
    threads: dict[str, set[str]] = {"recorded": set(), "transient": set()}
    consumed: list = []

    def listener(event):
        heard.append(event)
        transient = isinstance(event, (TokenReceived, TurnStarted))
        threads["transient" if transient else "recorded"].add(threading.current_thread().name)
        if isinstance(event, TurnFinished):
            stored_when_heard.append(any(t.id == event.turn.id for t in store.turns(engine.debate_id)))
        assert event not in consumed  # the consumer never gets it first

    second: list = []
    engine = DebateEngine(config(model, rounds=1, max_rounds=1), store=store, listeners=[listener, second.append])
    for event in engine.run():
        consumed.append(event)
    # Each event source keeps its order for every listener and the consumer: the worker's recorded
    # events, and each call's transient ones. Calls run at once on threads of their own, so two
    # sources' events may interleave differently for each (found pinned to one busy core).
    assert by_source(consumed) == by_source(heard) == by_source(second)
    assert len(consumed) == len(heard) == len(second) and all(stored_when_heard) and len(stored_when_heard) == 9
    assert len(by_source(consumed)) == 1 + 9  # the recorded events, and the transient ones of each of 9 calls
    assert threads["recorded"] == {f"madlab-debate-{engine.debate_id[:8]}"}
    assert threads["transient"] and all(name.startswith("madlab-call") for name in threads["transient"])


def test_a_listener_steers_at_an_exact_step_boundary(script, roles):
    """A stop issued from a listener when Agent 2's first turn is stored takes effect at once: Agent 3
    never speaks, whatever the consumer thread is doing (it is not even draining yet)."""
    model, s = script(roles())
    controller = Controller()

    def stop_after_agent_2(event):
        if isinstance(event, TurnFinished) and event.turn.agent == "Agent 2":
            controller.stop()

    engine = DebateEngine(config(model, rounds=2, max_rounds=2), controller=controller,
                          listeners=[stop_after_agent_2])
    events = list(engine.run())
    assert [e.turn.agent for e in events if isinstance(e, TurnFinished)] == ["Agent 1", "Agent 2"]
    assert [e.action for e in events if isinstance(e, SteeringApplied)] == ["stop"]
    assert engine.status == "stopped" and s.calls == 2


def test_a_listener_that_raises_ends_the_debate_as_failed_naming_it(script, roles):
    model, _ = script(roles())

    def broken(event):
        if isinstance(event, TurnFinished):
            raise RuntimeError("the listener broke")

    events = list(DebateEngine(config(model), listeners=[broken]).run())
    assert isinstance(events[-1], DebateFinished) and events[-1].status == "failed"
    assert "the listener broke" in events[-1].reason


def test_the_collaborators_never_import_the_engine_nor_reach_into_it():
    for name in COLLABORATORS:
        tree = ast.parse((ROOT / name).read_text())
        assert ast.get_docstring(tree), name
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not imported & {"engine", "resume"}, (name, imported)
        reach = [node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                 and isinstance(node.value, ast.Name) and node.value.id == "engine"]
        assert not reach, (name, reach)


def test_the_engine_class_stays_small():
    tree = ast.parse((ROOT / "engine.py").read_text())
    engine = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "DebateEngine")
    methods = [n for n in engine.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    attributes = {t.attr for n in ast.walk(engine) for t in (n.targets if isinstance(n, ast.Assign) else
                                                             [n.target] if isinstance(n, ast.AnnAssign) else [])
                  if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    assert engine.end_lineno - engine.lineno + 1 <= 300
    assert len(methods) <= 20, [m.name for m in methods]
    assert len(attributes) <= 15, sorted(attributes)
