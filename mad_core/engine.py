"""The debate engine: runs one debate, yields typed events, obeys a controller.

`DebateEngine(config, ...).run()` is a generator of events (see `events.py`). The debate
itself runs in a worker thread, so a consumer (CLI, app, test) only drains events; model calls
of agents that speak in the same step run concurrently (`calls.Calls`). When a store is given
(a `Store` or a factory of them, never a path: `recorder.py`), the worker writes every
finished turn, vote and decision before the consumer sees it.

The engine does the debate's lifecycle, the round loop, steering and the fan-out of events,
nothing else. Its collaborators: `controller.Controller` (pause / resume / stop / moderator
messages / force-decision, and what the debate is doing now), `calls.Calls` (every model call),
`discussion.Discussion` (orders, visibility, prompts), `context.DebateContext` (the running
debate as protocols and paradigms see it), `phases` (personas before, the challenge after),
`replay` (how the debate starts: new, resumed or forked, and the history it replays) and
`recorder.Recorder` (the store's listener). `resume.py` builds resumed and forked engines.

Listeners: every event is handed, synchronously and in order, to the store's recorder first
(recorded events only) and then to the `listeners` given, before it is queued for the consumer:
recorded events on the worker thread, transient ones (a turn's start, its tokens, a retry) on
the thread of the call that made them. A listener may steer (a stop at a given turn happens
exactly there); one that raises ends the debate as failed, naming the cause.

Seats: an agent whose model is a person (`config.PERSON`) gets a seat in `seats` (the process's
`seats.REGISTRY` unless another is given) as the engine is made, so its code can be handed out
before its first turn; its turns wait for the seat's reply (`calls.Calls`); the seats close when
the debate ends.

`stream=False` says nobody watches the debate as it happens (a sweep, `run --no-stream`): each
reply is asked for whole (`calls.Calls`), far less CPU a call, and comes as one `TokenReceived`.
Debates in the app keep streaming (the default).

Nothing ends silently: whatever goes wrong (a model, the database, an engine bug), the
consumer gets a `DebateFinished` whose reason names the cause, and the debate's claim is
released so that it never stays 'running' in the database.

The engine never imports streamlit and never renders anything.
"""
from __future__ import annotations

import queue
import random
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator

from . import registry
from .calls import Calls, DebateState
from .challenge import challenge_setting
from .config import DebateConfig
from .context import DebateContext
from .controller import Controller
from .discussion import Discussion
from .events import (DebateFinished, DebateStarted, DecisionAttempted, DecisionReached, ErrorOccurred, Event,
                     PersonasAssigned, RoundStarted, Turn)
from .paradigms import Paradigm, Step
from .phases import assign_personas, run_challenge
from .protocols.decision import Outcome
from .recorder import Recorder, StoreSource
from .replay import Origin, Replay
from .seats import REGISTRY as SEATS, SeatRegistry
from .store import ClaimLost, new_owner

_DONE = object()
Listener = Callable[[Event], None]


class DebateEngine:
    """Runs one debate. Create it, then iterate `run()`; steer it through `controller`."""

    def __init__(self, config: DebateConfig, *, controller: Controller | None = None, store: StoreSource | None = None,
                 origin: Origin | None = None, listeners: Iterable[Listener] = (), stream: bool = True,
                 seats: SeatRegistry | None = None):
        self.cfg = config.validate()
        # The settings as stored, for the record, the start event and the paradigm's round topics:
        # computed once (``dataclasses.asdict`` walks every field; it was 5 calls a debate).
        self.settings = self.cfg.to_dict()
        self.controller = controller or Controller()
        self.controller.bind([a.label for a in config.agents])
        self.origin = origin or Origin()
        self.debate_id = self.origin.debate_id or uuid.uuid4().hex
        claim = self.origin.claim  # a resume's hold on the stored debate (see resume.prepare_resume)
        self.owner = claim.owner if claim is not None else new_owner()
        # The store listens to the debate's events first (written before the consumer sees them).
        self._recorder = Recorder(store, self.debate_id, self.owner, claim) if store is not None else None
        self._listeners = list(listeners)
        self._events: queue.Queue = queue.Queue()
        self.paradigm: Paradigm = registry.get("paradigm", config.paradigm)(config)
        generator = registry.get("response_generator", config.response_generator)()
        self.protocol = registry.get("protocol", config.protocol)()
        ordering = registry.get("ordering", config.ordering)(config, random.Random(config.seed))
        self._replay = Replay(self.origin)
        self.state = DebateState(personas={a.label: a.persona for a in config.agents}, order=self.agent_labels())
        seats = seats if seats is not None else SEATS
        people = [(i, a.label, a.time_limit_s) for i, a in enumerate(self.cfg.agents) if a.is_person]
        seat_ids = seats.open_debate(self.debate_id, people, config.question) if people else {}  # label -> seat id
        self.calls = Calls(self.cfg, self.controller, self.state, self._replay, emit=self._emit, push=self._push,
                           read_turn=lambda turn: self.paradigm.read_turn(turn, self.cfg, generator.shares_answers),
                           debate_id=self.debate_id, stream=stream, seats=seats, seat_ids=seat_ids)
        discussion = Discussion(self.cfg, self.state, self.paradigm, generator, self.protocol, ordering, self._replay)
        self.context = DebateContext(self.cfg, self.state, self.calls, discussion, self._emit)

    # ===== public =========================================================================
    def run(self) -> Iterator[Event]:
        """Run the debate in a worker thread and yield its events as they happen."""
        worker = threading.Thread(target=self._work, name=f"madlab-debate-{self.debate_id[:8]}", daemon=True)
        worker.start()
        try:
            while True:
                item = self._events.get()
                if item is _DONE:
                    break
                yield item
        finally:
            if worker.is_alive():  # the consumer went away: stop the debate gracefully
                self.controller.stop()
                worker.join()

    @property
    def seat_ids(self) -> dict[str, str]:
        """Agent label -> its seat id, for the agents a person speaks for."""
        return self.calls.seat_ids

    def agent_labels(self) -> list[str]:
        return [a.label for a in self.cfg.agents]

    @property
    def round(self) -> int:
        return self.state.round

    @property
    def status(self) -> str:
        """running, then finished, stopped or failed."""
        return self.state.status

    @property
    def answer(self) -> str | None:
        return self.state.answer

    # ===== lifecycle ======================================================================
    def _work(self) -> None:
        try:
            if self._recorder is not None:
                self._recorder.open()
            self._debate()
        except Exception as exc:  # an engine bug or a broken store: end visibly, keep what is on disk
            if _interpreter_exiting():
                return  # the process is going away: the store marks the debate interrupted on next open
            self._fail_visibly(exc)
        finally:
            self.calls.close()  # the seats of the debate's people close with it
            self.controller.publish(phase="ended", expected=0, received=0, deciding=False)
            if self._recorder is not None:
                self._recorder.end(failed=self.state.status == "failed", progressed=self.calls.new_ok_turns > 0)
            self._events.put(_DONE)

    def _fail_visibly(self, exc: Exception) -> None:
        """End the debate as failed, naming the cause, even when the database cannot be written."""
        self.state.status = "failed"
        if isinstance(exc, ClaimLost):
            reason = str(exc)
        elif type(exc).__module__.startswith("sqlite3"):
            reason = f"the database could not be written ({type(exc).__name__}: {exc})"
        else:
            reason = f"{type(exc).__name__}: {exc}"
        events = [ErrorOccurred(reason), DebateFinished("failed", None, reason=reason)]
        if self._recorder is not None:
            self._recorder.record_failure(events, claim_lost=isinstance(exc, ClaimLost))
        for event in events:
            for listener in self._listeners:
                try:
                    listener(event)
                except Exception:  # noqa: BLE001 - the consumer still hears how it ended
                    pass
            self._events.put(event)

    # ===== the debate ======================================================================
    def _debate(self) -> None:
        cfg, origin = self.cfg, self.origin
        started = time.time()
        if self._recorder is not None:
            self._recorder.begin(self.settings, parent_id=origin.parent_id, forked_from_seq=origin.forked_from_seq,
                                 created_at=started, resumed=origin.resumed)
        self._emit(DebateStarted(self.debate_id, self.settings, resumed=origin.resumed, parent_id=origin.parent_id,
                                 forked_from_seq=origin.forked_from_seq, ts=started))
        if cfg.auto_personas:
            stopped = assign_personas(self.context)
            if stopped is not None:  # "stopped by a person during persona generation"
                self.state.stop_reason = stopped
        self._emit(PersonasAssigned(dict(self.state.personas)))
        self._finish(*self._rounds())

    def _rounds(self) -> tuple[Outcome | None, bool]:
        """The round loop: discuss, then let the protocol decide; returns (its outcome, forced)."""
        cfg, state, controller = self.cfg, self.state, self.controller
        outcome, forced = None, False
        first = self.protocol.first_round(cfg)
        last = self.paradigm.total_rounds(cfg) or cfg.max_rounds
        for rnd in range(1, last + 1):
            self._halted()  # apply steering, wait while paused
            if controller.stopped or state.status == "failed":
                break
            early = None
            if not controller.force_requested:
                # All-Agents Drafting (seed 000 §3.2; MALLM's first-draft flag): round 1 is every
                # agent's independent draft, not an extra round, so AAD and baseline debates have
                # the same number of rounds and calls.
                early = self._run_round(rnd, drafting=cfg.all_agents_drafting and rnd == 1)
            if state.status == "failed" or controller.stopped:
                break
            if early is not None:  # the protocol decided during the round (consensus after a turn)
                self._emit_attempt(early)
                return early, False
            forced = controller.force_requested
            if forced and not self.context.latest_drafts()[0]:
                break  # forced before anyone spoke: nothing to decide (see _finish)
            if rnd < first and not forced:
                continue
            controller.publish(deciding=True)
            outcome = self.protocol.decide(self.context, forced)
            self._emit_attempt(outcome)
            if outcome.reached:
                break
            if forced or rnd == last:
                why = "decision forced by a person" if forced else f"turn cap reached ({last} rounds)"
                outcome = self.protocol.fallback(self.context, outcome, why)
                break
            controller.publish(deciding=False)
            outcome = None
        return outcome, forced

    def _halted(self) -> bool:
        self._apply_steering()
        self.controller.wait_while_paused()
        self._apply_steering()
        return self.controller.stopped or self.controller.force_requested or self.state.status == "failed"

    def _finish(self, outcome: Outcome | None, forced: bool) -> None:
        state = self.state
        self._apply_steering()  # a stop (or message) that came during the decision is recorded too
        self.controller.publish(deciding=False)
        if self.controller.stopped:
            state.status = "stopped"
            self._emit(DebateFinished("stopped", None, reason=state.stop_reason))
            return
        if forced and outcome is None and state.status != "failed":
            state.status = "stopped"
            self._emit(DebateFinished("stopped", None, reason="a decision was forced before any agent had "
                                                              "spoken: there was nothing to decide"))
            return
        if state.status == "failed" or outcome is None or not outcome.reached:
            state.status = "failed"
            why = state.failure or "no decision could be reached" + (f": {outcome.reason}" if outcome else "")
            self._emit(DebateFinished("failed", None, reason=why))
            return
        state.answer = outcome.answer
        decision = DecisionReached(state.round, self.cfg.protocol, outcome.answer, outcome.winner_agent,
                                   outcome.winner_index, outcome.scores, outcome.solutions, outcome.solution_agents,
                                   forced=forced, fallback=outcome.fallback, details=outcome.details)
        self._emit(decision)
        setting = challenge_setting(self.cfg.challenge)
        if setting and not self.controller.stopped:
            changed = run_challenge(self.context, decision, setting)  # a challenge that changed the answer
            if changed is not None:
                state.answer = changed
        state.status = "stopped" if self.controller.stopped else "finished"
        self._emit(DebateFinished(state.status, state.answer))

    def _emit_attempt(self, outcome: Outcome) -> None:
        self._emit(DecisionAttempted(self.state.round, self.cfg.protocol, outcome.reached, outcome.reason,
                                     outcome.scores, outcome.solutions, outcome.solution_agents))

    def _run_round(self, rnd: int, drafting: bool = False) -> Outcome | None:
        """Run one round; returns the protocol's outcome if it decided after one of the turns."""
        state, discussion = self.state, self.context.discussion
        state.round = rnd
        self.controller.publish(phase="discussion", round=rnd, expected=0, received=0, deciding=False)
        state.order = discussion.round_order(rnd)
        planned = None if drafting else self.paradigm.plan(rnd, list(state.order), self.context)
        agents = None
        if planned is None:  # the engine's own discussion turns
            kind = "draft" if drafting else "discussion"
            agents = [list(state.order)] if drafting else self.paradigm.steps(state.order, self.cfg)
            steps = [Step(tuple(step), kind) for step in agents]
        else:
            steps = planned
        topic = self.paradigm.round_topics(self.settings, self.context.turns).get(rnd)
        self._emit(RoundStarted(rnd, list(state.order), topic=topic, steps=agents))
        finished: list[Turn] = []
        for step in steps:
            if self._halted():
                break
            requests = [(agent, step.kind, discussion.messages(agent, rnd, step.kind) if planned is None
                         else self.paradigm.messages(agent, step, rnd, self.context), None, step.reply_for(agent))
                        for agent in step.agents]
            for turn in self.calls.ask_many(requests):  # in the round's order, whatever finished first
                finished.append(turn)
                self.protocol.observe(turn)
                early = self.protocol.after_turn(self.context) if turn.status == "ok" else None
                if early is not None:
                    return early
        if finished and all(t.status == "failed" for t in finished):
            state.status = "failed"
            causes = "; ".join(dict.fromkeys(f"{t.agent}: {t.error or 'no detail'}" for t in finished))
            state.failure = f"every turn of round {rnd} failed ({causes})"
            self._emit(ErrorOccurred(state.failure))
        elif self.paradigm.summarizes and not self._halted():  # the summarizer condenses everything said so far
            self.calls.ask("summarizer", "summary", discussion.summary_messages(),
                           self.cfg.summarizer_model or self.cfg.agents[0].model)
        return None

    # ===== steering and the fan-out of events ==============================================
    def _apply_steering(self) -> None:
        labels = self.agent_labels()
        for message in self._replay.deliver():  # a fork's inherited messages (see replay.Replay.deliver)
            for label in message.targets or labels:
                if label in labels:
                    self.state.pending[label].append(message.message or "")
            self._emit(message)
        for action in self.controller.take_actions():
            action.ts = time.time()  # when it took effect (a stored debate replays it there)
            if action.action == "message":
                for label in action.targets or labels:
                    self.state.pending[label].append(action.message or "")
            self._emit(action)

    def _emit(self, event: Event) -> None:
        """Hand a recorded event to the recorder (the store), then to the listeners in order (worker
        thread only), then to the consumer."""
        if self._recorder is not None:
            self._recorder.record(event)
        for listener in self._listeners:
            listener(event)
        self._events.put(event)

    def _push(self, event: Event) -> None:
        """Hand a transient event (tokens, turn start, retry) to the listeners on the calling thread,
        then to the consumer. Each thread's events keep their order everywhere; events of calls running
        at once may interleave differently for each listener and the consumer."""
        for listener in self._listeners:
            listener(event)
        self._events.put(event)


def _interpreter_exiting() -> bool:
    import concurrent.futures.thread as pool_module

    return bool(getattr(pool_module, "_shutdown", False)) or sys.is_finalizing()
