"""Shared builders for the tests that run debates: `config(model, **changes)` and `run(cfg, steer=...)`.

    from tests.builders import config, of, run, turns

    events = run(config(model, rounds=1, max_rounds=1))
    assert events.engine.status == "finished"

Steering goes through a listener (`steer`), called synchronously at each event, before the consumer
sees it: never from the consumer thread against a worker that does not wait for it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mad_core import DebateConfig, DebateEngine
from mad_core.events import Event, TurnFinished

QUESTION = "What is the capital of France?"


def config(model: str, n: int = 3, **changes: Any) -> DebateConfig:
    """A debate about QUESTION between `n` agents, "Agent 1" to "Agent n", all on `model`; `changes`
    set any other field of the configuration (`question=`, `agents=` and the like replace the defaults)."""
    agents = [{"label": f"Agent {i + 1}", "model": model} for i in range(n)]
    return DebateConfig.from_dict({"question": QUESTION, "agents": agents, **changes})


class Events(list):
    """A debate's events in the order the consumer got them, and `engine`, the engine that ran it."""

    engine: DebateEngine


Steer = Callable[[Event, DebateEngine], None]


def run(cfg: DebateConfig, steer: Steer | None = None, store: Any = None, **engine_options: Any) -> Events:
    """Run `cfg` to its end through a `DebateEngine` and return its events (with `.engine`).

    steer(event, engine): a listener, handed every event synchronously at the step boundary where it
    happens (recorded events on the worker thread after the store has them, tokens and turn starts on
    the call's thread), before the consumer sees it; it steers through `engine.controller`.
    store: a Store (or a factory) that records the debate. engine_options: `controller=`, `origin=`,
    `listeners=` (heard before `steer`), as DebateEngine takes them."""
    listeners = list(engine_options.pop("listeners", ()))
    if steer is not None:
        listeners.append(lambda event: steer(event, engine))
    engine = DebateEngine(cfg, store=store, listeners=listeners, **engine_options)
    events = Events(engine.run())
    events.engine = engine
    return events


def of(events: Iterable[Event], cls: type) -> list:
    """The events of one class, in order."""
    return [e for e in events if isinstance(e, cls)]


def turns(events: Iterable[Event], kind: str | None = None) -> list:
    """The finished turns (of one kind, or all), in the order they finished."""
    return [e.turn for e in of(events, TurnFinished) if kind is None or e.turn.kind == kind]
