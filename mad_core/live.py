"""Debates running in the background of a long-lived process (the Streamlit server).

A `LiveDebate` drives a `DebateEngine` in its own thread and keeps every event, so any number
of viewers (browser tabs, reruns) can render it and reattach to it; closing a tab neither
stops nor duplicates it. Live debates are kept in a process-wide registry keyed by debate id.
Viewers steer through `controller`. No UI code here.

Watching must cost what changed, not the whole debate: a `LiveDebate` keeps its events in
arrival order, and a `Follower` (one per viewer) holds a cursor into them and its own folded
`DebateView`; `Follower.refresh()` folds only the events since its last call (none: nothing
is folded or copied). `view()` (a full copy) is for one-off readers such as a list of running
debates.
"""
from __future__ import annotations

import copy
import threading
from typing import Any

from .config import DebateConfig
from .engine import Controller, DebateEngine, fork_debate, resume_debate
from .events import DebateFinished, ErrorOccurred, Event
from .view import DebateView

_LIVE: dict[str, "LiveDebate"] = {}
_LIVE_LOCK = threading.Lock()


class LiveDebate:
    """A debate running in a background thread; its state is folded as events arrive."""

    def __init__(self, debate_id: str, events_iter, controller: Controller, owner: str | None = None):
        self.debate_id = debate_id
        self.controller = controller
        self.owner = owner  # the browser session that started it (others may still watch)
        self._iter = events_iter
        self._view = DebateView()
        self._events: list[Event] = []  # every event, in the order folded into `_view`
        self._lock = threading.Lock()
        self.done = False
        self.thread = threading.Thread(target=self._pump, name=f"madlab-live-{debate_id[:8]}", daemon=True)

    def _pump(self) -> None:
        try:
            for event in self._iter:
                self._add(event)
        except Exception as exc:  # noqa: BLE001 - a broken worker must still end visibly
            self._end(f"the debate's worker stopped: {type(exc).__name__}: {exc}")
        finally:
            self._end("the debate's worker stopped without ending the debate")
            self.done = True

    def _end(self, reason: str) -> None:
        """Show the debate as failed if its worker died before saying how it ended."""
        with self._lock:
            failed = self._view.status == "running"
        if failed:
            self._add(ErrorOccurred(reason))
            self._add(DebateFinished("failed", None, reason=reason))

    def _add(self, event: Event) -> None:
        with self._lock:
            self._view.apply(event)
            self._events.append(event)

    def view(self) -> DebateView:
        """A consistent copy of the folded state, safe to render from another thread.

        Costs the size of the debate: a page that refreshes uses a `Follower` instead."""
        with self._lock:
            return copy.deepcopy(self._view)

    def snapshot(self) -> tuple[DebateView, int]:
        """(a copy of the folded state, how many events it holds): where a new follower starts."""
        with self._lock:
            return copy.deepcopy(self._view), len(self._events)

    def events_since(self, cursor: int) -> tuple[list[Event], int]:
        """The events after the first `cursor` ones, and the new cursor (the number of events now)."""
        with self._lock:
            return self._events[cursor:], len(self._events)

    @property
    def status(self) -> str:
        with self._lock:
            return self._view.status


class Follower:
    """One viewer's incremental copy of a live debate: a cursor into its events and a view folded from them.

    The first copy costs the size of the debate (`snapshot`); after that, `refresh()` costs the
    events since the previous call. The view is the follower's own: render it without locks."""

    def __init__(self, debate: LiveDebate):
        self.debate = debate
        self.view, self.cursor = debate.snapshot()
        self.snapshots = 1  # full copies taken (one, at creation)
        self.folded = 0  # events folded since

    def refresh(self) -> list[Event]:
        """Fold the events that arrived since the last call into `view`; return them."""
        events, self.cursor = self.debate.events_since(self.cursor)
        for event in events:
            self.view.apply(event)
        self.folded += len(events)
        return events


def _register(live: LiveDebate) -> LiveDebate:
    with _LIVE_LOCK:
        _LIVE[live.debate_id] = live
    live.thread.start()
    return live


def start(config: DebateConfig, *, store: Any = None, owner: str | None = None, **engine_kwargs: Any) -> LiveDebate:
    """Validate, then start a debate in the background and register it."""
    controller = Controller()
    engine = DebateEngine(config, controller=controller, store=store, **engine_kwargs)
    return _register(LiveDebate(engine.debate_id, engine.run(), controller, owner))


def start_fork(debate_id: str, upto_seq: int, store: Any, config: DebateConfig | None = None,
               owner: str | None = None) -> LiveDebate:
    controller = Controller()
    engine = fork_debate(debate_id, upto_seq, store, config=config, controller=controller)
    return _register(LiveDebate(engine.debate_id, engine.run(), controller, owner))


def start_resume(debate_id: str, store: Any, owner: str | None = None) -> LiveDebate:
    """Resume a debate in the background. Raises ResumeRefused / ConfigError (nothing changed)
    when it cannot be resumed: finished, running elsewhere, or its models are gone."""
    controller = Controller()
    return _register(LiveDebate(debate_id, resume_debate(debate_id, store, controller), controller, owner))


def get(debate_id: str) -> LiveDebate | None:
    with _LIVE_LOCK:
        return _LIVE.get(debate_id)


def running() -> list[LiveDebate]:
    with _LIVE_LOCK:
        return [live for live in _LIVE.values() if not live.done]
