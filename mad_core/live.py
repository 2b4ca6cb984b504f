"""Debates running in the background of a long-lived process (the Streamlit server).

A `LiveDebate` drives a `DebateEngine` in its own thread and keeps every event, so any number
of viewers (browser tabs, reruns) can render it and reattach to it; closing a tab neither
stops nor duplicates it. Live debates are kept in a process-wide registry keyed by debate id.
Viewers read `view()`; they steer through `controller`. No UI code here.
"""
from __future__ import annotations

import copy
import threading
from typing import Any

from .config import DebateConfig
from .engine import Controller, DebateEngine, fork_debate, resume_debate
from .events import DebateFinished, ErrorOccurred
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
        self._lock = threading.Lock()
        self.done = False
        self.thread = threading.Thread(target=self._pump, name=f"madlab-live-{debate_id[:8]}", daemon=True)

    def _pump(self) -> None:
        try:
            for event in self._iter:
                with self._lock:
                    self._view.apply(event)
        except Exception as exc:  # noqa: BLE001 - a broken worker must still end visibly
            self._end(f"the debate's worker stopped: {type(exc).__name__}: {exc}")
        finally:
            self._end("the debate's worker stopped without ending the debate")
            self.done = True

    def _end(self, reason: str) -> None:
        """Show the debate as failed if its worker died before saying how it ended."""
        with self._lock:
            if self._view.status == "running":
                self._view.apply(ErrorOccurred(reason))
                self._view.apply(DebateFinished("failed", None, reason=reason))

    def view(self) -> DebateView:
        """A consistent copy of the folded state, safe to render from another thread.

        The state is folded once, as events arrive; a viewer gets a copy (cost: the size of the
        debate, not the number of streamed tokens)."""
        with self._lock:
            return copy.deepcopy(self._view)

    @property
    def status(self) -> str:
        with self._lock:
            return self._view.status


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
