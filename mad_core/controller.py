"""Steering a running debate from any thread, and what it is doing now (`Controller`, `Activity`).

A `Controller` holds thread-safe flags and messages for one running debate: pause / resume,
stop (the turn being streamed is cut at its next piece, kept and marked interrupted; no
further turn starts), a moderator message to all or some agents (it reaches the next prompt of
exactly those agents), and force-decision-now (the calls under way finish, then the protocol
decides). The engine takes the queued actions at each step boundary and publishes what it is
doing (`Controller.activity`: the phase, the round, the calls of the current step and how
many of them have finished), so a viewer can say what a request is waiting for.

It never imports the engine: the engine, the calls and the UI import it.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .config import ConfigError
from .events import SteeringApplied
from .text import clean_text


# The phase a step of model calls belongs to, by the kind of its turns (any other kind: "discussion").
PHASE_OF_KIND = {"vote": "voting", "extraction": "extraction", "judge": "judge", "supervisor": "judge",
                 "persona": "personas", "summary": "summary", "challenge": "challenge"}


def phase_of(kinds: Iterable[str]) -> str:
    """The phase of a step whose turns are of these kinds (the first kind that names one)."""
    return next((PHASE_OF_KIND[k] for k in kinds if k in PHASE_OF_KIND), "discussion")


@dataclass(frozen=True)
class Activity:
    """What a running debate is doing now, as its engine publishes it (a snapshot, any thread may read it).

    `phase`: starting, personas, discussion, summary, extraction, voting, judge, challenge or
    ended. `expected` / `received`: the model calls of the current step (the turns of a round's
    step, the ballots of one voting attempt) and how many of them have finished. `deciding`: the
    calls belong to a decision attempt (the protocol is deciding)."""

    phase: str = "starting"
    round: int = 0
    expected: int = 0
    received: int = 0
    deciding: bool = False


class Controller:
    """Thread-safe steering flags and messages for one running debate, and what it is doing now."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._force = threading.Event()
        self._lock = threading.Lock()
        self._actions: deque[SteeringApplied] = deque()
        self._activity = Activity()
        self.labels: list[str] | None = None  # set by the engine: valid message targets

    # -- commands (any thread) ------------------------------------------------------------
    def pause(self) -> None:
        if self._running.is_set() and not self.stopped:
            self._running.clear()
            self._log(SteeringApplied("pause"))

    def resume(self) -> None:
        if not self._running.is_set():
            self._running.set()
            self._log(SteeringApplied("resume"))

    def stop(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._running.set()  # wake a paused debate so it can end
            self._log(SteeringApplied("stop"))

    def say(self, message: str, targets: list[str] | None = None) -> None:
        """Send a moderator message to all agents (targets=None) or to the named agents."""
        message = clean_text(str(message or "")).strip()
        if not message:
            raise ValueError("the message is empty")
        if targets is not None:
            targets = [str(t) for t in targets]
            problem = self._target_problem(targets, self.labels)
            if problem:
                raise ValueError(problem)
        self._log(SteeringApplied("message", targets=targets, message=message))

    @staticmethod
    def _target_problem(targets: list[str], labels: list[str] | None) -> str | None:
        unknown = [t for t in targets if labels is not None and t not in labels]
        if unknown or not targets:
            return f"unknown agent(s) {unknown or targets}; agents are {labels}"
        return None

    def bind(self, labels: list[str]) -> None:
        """Attach to a debate with these agents; messages queued for other agents are refused."""
        with self._lock:
            for action in self._actions:
                if action.action == "message" and action.targets is not None:
                    problem = self._target_problem(action.targets, labels)
                    if problem:
                        raise ConfigError("targets", f"a message was addressed to {problem}")
            self.labels = list(labels)

    def force_decision(self) -> None:
        if not self._force.is_set() and not self.stopped:
            self._force.set()
            self._log(SteeringApplied("force_decision"))

    # -- state ----------------------------------------------------------------------------
    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def force_requested(self) -> bool:
        return self._force.is_set()

    def wait_while_paused(self) -> None:
        self._running.wait()

    def sleep(self, seconds: float) -> None:
        """Wait `seconds` (a retry's backoff or Retry-After), or less when the debate is stopped."""
        self._stop.wait(seconds)

    @property
    def activity(self) -> Activity:
        """What the engine is doing now (see `Activity`)."""
        with self._lock:
            return self._activity

    # -- published by the engine ----------------------------------------------------------
    def publish(self, **changes: Any) -> None:
        """Set fields of the activity (engine thread)."""
        with self._lock:
            self._activity = replace(self._activity, **changes)

    def call_finished(self) -> None:
        """One call of the current step finished (engine thread)."""
        with self._lock:
            self._activity = replace(self._activity, received=self._activity.received + 1)

    def take_actions(self) -> list[SteeringApplied]:
        with self._lock:
            actions = list(self._actions)
            self._actions.clear()
        return actions

    def _log(self, action: SteeringApplied) -> None:
        """Queue `action` for the engine, stamped with when the person asked (`requested_at`; the
        engine sets its `ts` when it applies it at the next step boundary)."""
        action.requested_at = time.time()
        with self._lock:
            self._actions.append(action)
