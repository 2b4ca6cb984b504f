"""Debates running in the background of a long-lived process (the Streamlit server).

A `LiveDebate` drives a `DebateEngine` in its own thread and keeps every event, so any number
of viewers (browser tabs, reruns) can render it and reattach to it; closing a tab neither
stops nor duplicates it. Live debates are kept in a process-wide registry keyed by debate id.
Viewers steer through `controller`. No UI code here.

The registry holds every running debate, but only the `MAX_FINISHED` most recently finished
ones: an older finished debate is dropped (a day of class debates would otherwise keep every
event of every debate in the server's memory). Its turns are in the store, where pages read
it as they read any stored debate; a viewer still holding it keeps its own reference until it
lets go. A debate run without a store is gone from this process once dropped.

Watching must cost what changed, not the whole debate: a `LiveDebate` keeps its events in
arrival order, and a `Follower` (one per viewer) holds a cursor into them and its own folded
`DebateView`; `Follower.refresh()` folds only the events since its last call (none: nothing
is folded or copied). `view()` (a full copy) is for one-off readers such as a list of running
debates.

Where a running debate stands (`progress`): the round, the phase the engine publishes on its
controller, the model calls finished and an estimate of the calls left, from the configuration
(`plan_calls`: agents x rounds, the decision's extractions, ballots or judge calls; a paradigm that
plans its own rounds, such as the per-player Knight-Knave-Spy debate, counted step by step from its
plan) and an ETA from the time per call so far, recomputed as calls finish. An estimate, not a
promise: a tie or a missing consensus adds a round, a consensus or a judge's early break removes
some. Once the calls made reach the plan, `Progress.over_plan` says so and no ETA is given (never a
count of calls left that stays put while calls keep coming).
"""
from __future__ import annotations

import copy
import threading
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from . import registry
from .challenge import PREPARED
from .challenge import challenge_setting
from .config import ConfigError, DebateConfig
from .controller import Activity, Controller, phase_of
from .engine import DebateEngine
from .resume import fork_debate, resume_debate
from .events import DebateFinished, ErrorOccurred, Event
from .view import DebateView

_LIVE: dict[str, "LiveDebate"] = {}  # running debates, and the finished ones kept, newest finished last
_LIVE_LOCK = threading.Lock()
MAX_FINISHED = 16  # finished debates kept in the registry (the most recently finished)


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
        self.pinned = False  # its end is known only here (the worker died): never dropped from the registry
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
            _retire(self)

    def _end(self, reason: str) -> None:
        """Show the debate as failed if its worker died before saying how it ended."""
        with self._lock:
            failed = self._view.status == "running"
        if failed:
            self.pinned = True
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


def _retire(debate: LiveDebate) -> None:
    """`debate` has finished: it becomes the newest finished one, and the finished debates beyond the
    newest `MAX_FINISHED` leave the registry (running ones stay, and pinned ones: the store lacks their end)."""
    with _LIVE_LOCK:
        if _LIVE.get(debate.debate_id) is debate:
            _LIVE[debate.debate_id] = _LIVE.pop(debate.debate_id)
        finished = [debate_id for debate_id, kept in _LIVE.items() if kept.done and not kept.pinned]
        for debate_id in finished[:max(0, len(finished) - MAX_FINISHED)]:
            del _LIVE[debate_id]


def get(debate_id: str) -> LiveDebate | None:
    with _LIVE_LOCK:
        return _LIVE.get(debate_id)


def running() -> list[LiveDebate]:
    with _LIVE_LOCK:
        return [live for live in _LIVE.values() if not live.done]


# ----- progress ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CallPlan:
    """The model calls a configuration implies (see `plan_calls`)."""

    setup: int  # persona generation
    per_round: int  # discussion turns (and a summary) per round
    per_attempt: int  # calls of one decision attempt: extractions, ballots, a judge
    first_decision: int  # the first round after which the protocol tries to decide
    max_rounds: int  # no round beyond this one
    after: int  # calls after the decision (challenges)
    round_calls: tuple[int, ...] = ()  # a paradigm that plans its own rounds: the calls of each round
    extra: int = 0  # calls a tie may add at most (the per-player vote's supervisor, re-asked)

    def total(self, decided_after: int) -> int:
        """Calls of a debate decided after round `decided_after` (without a tie's `extra`)."""
        attempts = max(0, decided_after - self.first_decision + 1)
        discussion = sum(self.round_calls[:decided_after]) if self.round_calls else self.per_round * decided_after
        return self.setup + discussion + self.per_attempt * attempts + self.after

    def range(self, rounds: int) -> tuple[int, int]:
        """(fewest, most) calls of a debate of at least `rounds` rounds: decided after them, or after
        the last round with a tie's extra calls."""
        return self.total(rounds), self.total(self.max_rounds) + self.extra


def _planned_rounds(paradigm: Any, labels: list[str], total_rounds: int) -> tuple[int, ...]:
    """The calls of each round of a paradigm that plans its own rounds (`Paradigm.plan`), counted from
    its plan before anything was said (an agreed order is then the puzzle's: the count is the same);
    () when it plans none."""
    start = SimpleNamespace(turns=[], cfg=paradigm.cfg, labels=labels, personas={})
    counts = []
    try:
        for rnd in range(1, total_rounds + 1):
            steps = paradigm.plan(rnd, list(labels), start)
            if steps is None:
                return ()
            counts.append(sum(len(step.agents) for step in steps))
    except (AttributeError, KeyError, IndexError, TypeError, ValueError):  # a plan that needs what was said
        return ()
    return tuple(counts)


def _attempt_calls(protocol: Any, cfg: DebateConfig, n: int, generator: Any) -> int:
    """Calls of one decision attempt, as the protocol counts them (`calls_per_attempt`); asking for
    the solutions costs one extraction per agent when agents form them only at the end, and one per
    agent a model speaks for when answers are extracted (a person's is read from their text)."""
    models = sum(1 for agent in cfg.agents if not agent.is_person)
    extractions = n if not generator.shares_answers else models if cfg.extract_final_answers else 0
    return protocol.calls_per_attempt(cfg, n, extractions)


def _challenge_calls(cfg: DebateConfig, n: int) -> int:
    """The challenge step's calls: one per agent, and one before them for the settings that prepare
    an answer or background information (`challenge.PREPARED`)."""
    setting = challenge_setting(cfg.challenge)
    return 0 if setting is None else n + (1 if setting in PREPARED else 0)


def plan_calls(config: dict[str, Any]) -> CallPlan:
    """Estimate the calls of a stored configuration: one discussion turn per agent and step of a
    round (the paradigm's steps; a summarizer adds one; a paradigm that plans its own rounds, its
    planned steps round by round), and per decision attempt one extraction per agent (when answers
    are extracted, or agents form them only at the end), one ballot per agent (voting protocols) or
    one judge call; a protocol that may call a supervisor on a tie (`supervisor_calls`) adds up to
    1 + vote_retries calls. A configuration this version cannot read gets agents x rounds."""
    agents = config.get("agents") or []
    n = max(1, len(agents))
    rounds = int(config.get("rounds") or 1)
    max_rounds = max(rounds, int(config.get("max_rounds") or rounds))
    try:
        cfg = DebateConfig.from_dict(config, check_models=False)
        paradigm = registry.get("paradigm", cfg.paradigm)(cfg)
        protocol = registry.get("protocol", cfg.protocol)()
        generator = registry.get("response_generator", cfg.response_generator)()
    except (ConfigError, KeyError, TypeError, ValueError):
        return CallPlan(0, n, 0, rounds, max_rounds, 0)
    labels = [a.label for a in cfg.agents]
    per_round = sum(len(step) for step in paradigm.steps(labels, cfg)) + (1 if paradigm.summarizes else 0)
    total_rounds = paradigm.total_rounds(cfg)
    return CallPlan(setup=n if cfg.auto_personas else 0, per_round=per_round,
                    per_attempt=_attempt_calls(protocol, cfg, n, generator), first_decision=protocol.first_round(cfg),
                    max_rounds=total_rounds or cfg.max_rounds, after=_challenge_calls(cfg, n),
                    round_calls=_planned_rounds(paradigm, labels, total_rounds) if total_rounds else (),
                    extra=(1 + cfg.vote_retries) if getattr(protocol, "supervisor_calls", False) else 0)


@dataclass(frozen=True)
class Progress:
    """Where a debate stands: round of max, phase, calls done and left (estimated), ETA in seconds."""

    round: int
    max_rounds: int
    phase: str
    calls_done: int
    calls_left: int
    eta_s: float | None  # None until a call has finished (no time per call yet), over the plan, or ended
    fraction: float  # of the estimated calls, 0..1
    over_plan: bool = False  # the calls made reached the plan while the debate goes on: no count left, no ETA

    @property
    def calls_total(self) -> int:
        return self.calls_done + self.calls_left


def progress(view: DebateView, plan: CallPlan, activity: Activity | None = None) -> Progress:
    """Where `view`'s debate stands. `activity` (the engine's, on a live debate's controller) names
    the phase and the calls under way; without it the phase is read from the streaming turns."""
    done = sum(1 for t in view.turns if t.status != "streaming")
    rnd = max((t.round for t in view.turns), default=0)
    if activity is not None and activity.phase not in ("starting", "ended"):
        rnd = max(rnd, activity.round)
    if view.status != "running":
        return Progress(rnd, plan.max_rounds, view.status, done, 0, None, 1.0)
    if activity is not None and activity.phase not in ("starting", "ended"):
        phase = activity.phase
    else:
        streaming = view.running_turns
        phase = phase_of([t.kind for t in streaming]) if streaming else "starting"
    decided_after = min(plan.max_rounds, max(plan.first_decision, rnd))
    left = plan.total(decided_after) - done
    if left <= 0:  # more calls than planned (a tie, re-asked ballots): how many more is not known
        return Progress(rnd, plan.max_rounds, phase, done, 0, None, done / (done + 1), over_plan=True)
    if activity is not None:
        left = max(left, activity.expected - activity.received)  # the step under way is not over
    left = max(left, len(view.running_turns))
    per_call = view.elapsed_s / done if done else None  # recomputed at every call: the ETA moves with them
    eta = per_call * left if per_call is not None else None
    total = done + left
    return Progress(rnd, plan.max_rounds, phase, done, left, eta, done / total if total else 0.0)
