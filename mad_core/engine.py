"""The debate engine: runs one debate, yields typed events, obeys a controller.

`DebateEngine(config, ...).run()` is a generator of events (see `events.py`). The debate
itself runs in a worker thread, so a consumer (CLI, app, test) only drains events; model calls
of agents that speak in the same step run concurrently (bounded by `max_concurrency`; a local
model that serves one request at a time is serialized). When a store is given, the worker
writes every finished turn, vote and decision before the consumer sees it.

A `Controller` steers a running debate from any thread: pause / resume, stop (the turn being
streamed is cut at its next piece, kept and marked interrupted; no further turn starts), a
moderator message to all or some agents (it reaches the next prompt of exactly those agents),
and force-decision-now (the calls under way finish, then the protocol decides). The engine
publishes what it is doing on the controller (`Controller.activity`: the phase, the round, the
calls of the current step and how many of them have finished), so a viewer can say what a
request is waiting for.

Resume and fork replay the debate's schedule over an existing history: a step whose turn is
already in the history reuses it instead of calling a model, so a resumed debate continues
from its last finished turn and a fork continues from the chosen turn. A fork also keeps what its
parent's later prompts depended on (`Inheritance`): the moderator messages sent before the fork
point, delivered at the same place in the replay, and the rounds' speaking orders. A resume checks the
stored configuration (models available) before it changes anything, then claims the debate
atomically (one resume at a time); a resume that ends failed before any new turn succeeded
puts the debate back exactly as it was.

Nothing ends silently: whatever goes wrong (a model, the database, an engine bug), the
consumer gets a `DebateFinished` whose reason names the cause, and the debate's claim is
released so that it never stays 'running' in the database.

The engine never imports streamlit and never renders anything.
"""
from __future__ import annotations

import hashlib
import queue
import random
import re
import sys
import threading
import time
import uuid
from collections import defaultdict, deque
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from . import challenge, prompts, registry
from .answers import decided_answer, extracted_answer, final_answer, json_reply, parse_agreement
from .config import LOCAL_SAMPLING, ConfigError, DebateConfig, challenge_setting, clip, short_repr
from .events import (DISCUSSION_KINDS, ChallengeResult, DebateFinished, DebateStarted, DecisionAttempted, DecisionReached,
                     ErrorOccurred, Event, PersonasAssigned, RoundStarted, SteeringApplied, TokenReceived, Turn,
                     TurnFinished, TurnRetried, TurnStarted, VoteCast)
from .paradigms import Step, visible_authors
from .personas import generate_personas, neutral
from .protocols.ballots import Ballot, parse_ballot
from .protocols.schemas import ReplyFormat, agreement_format, ballot_format, choice_format, extraction_format
from .store import HEARTBEATS, ClaimLost, DebateRecorder, ResumeClaim, clean_text, new_owner

_DONE = object()
SEEN_KINDS = (*DISCUSSION_KINDS, "summary")  # turns an agent may be shown


# The phase a step of model calls belongs to, by the kind of its turns (any other kind: "discussion").
PHASE_OF_KIND = {"vote": "voting", "extraction": "extraction", "judge": "judge", "supervisor": "judge",
                 "persona": "personas", "summary": "summary", "challenge": "challenge"}


def phase_of(kinds) -> str:
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
        with self._lock:
            self._actions.append(action)


class EngineContext:
    """The running debate as a decision protocol sees it (`protocols.decision.DecisionContext`):
    the settings, the round, the agents, and the calls a protocol may ask for. Nothing else of
    the engine is reachable from a protocol."""

    def __init__(self, engine: "DebateEngine"):
        self._engine = engine
        self.cfg = engine.cfg
        self.labels = engine.agent_labels()
        self.judge_extracts = engine.paradigm.judge_extracts
        self.sides = engine.paradigm.judge_sides(engine.cfg)
        self.solutions, self.latest_drafts = engine.solutions, engine.latest_drafts
        self.collect_ballots, self.extract_answer = engine.collect_ballots, engine.extract_answer
        self.judge_extract, self.judge_select = engine.judge_extract, engine.judge_select

    @property
    def round(self) -> int:
        return self._engine.round

    @property
    def turns(self) -> list[Turn]:
        """Every turn so far (any kind, any status), in the order they were planned."""
        return sorted(self._engine.turns, key=lambda t: t.seq)

    @property
    def personas(self) -> dict[str, str]:
        return dict(self._engine.personas)

    def take_moderator(self, agent: str) -> list[str]:
        """The moderator messages waiting for `agent` (handed over once: they reach its next prompt)."""
        return self._engine._pending.pop(agent, [])

    def consult(self, label: str, kind: str, messages: list[dict], model: str,
                reply: ReplyFormat | None = None) -> Turn:
        """One call by a participant other than the agents (a supervisor), recorded as a turn."""
        return self._engine.ask(label, kind, messages, model, reply)

    def record_vote(self, agent: str, protocol: str, raw: str, ballot: Any, valid: bool, reason: str | None,
                    attempt: int = 1) -> None:
        """Record a ballot a protocol read itself (from an agent's reply) as a VoteCast."""
        self._engine._emit(VoteCast(self._engine.round, agent, protocol, raw, ballot, valid, reason, attempt))


class DebateEngine:
    """Runs one debate. Create it, then iterate `run()`; steer it through `controller`."""

    def __init__(self, config: DebateConfig, *, controller: Controller | None = None, store: Any = None,
                 debate_id: str | None = None, history: list[Turn] | None = None, parent_id: str | None = None,
                 forked_from_seq: int | None = None, resumed: bool = False, claim: ResumeClaim | None = None,
                 inherited: "Inheritance | None" = None):
        self.cfg = config.validate()
        self.controller = controller or Controller()
        self.controller.bind([a.label for a in config.agents])
        self.debate_id = debate_id or uuid.uuid4().hex
        self.parent_id, self.forked_from_seq, self.resumed = parent_id, forked_from_seq, resumed
        self.claim = claim  # a resume's hold on the stored debate (see resume_debate)
        self.owner = claim.owner if claim is not None else new_owner()
        self._new_ok_turns = 0  # turns that succeeded in this run (not reused)
        self._failure: str | None = None  # why the debate failed, in words
        self._stop_reason = "stopped by a person"  # a stopped debate's finish reason (it may name the phase)
        path = getattr(store, "path", store)
        # The store listens to the debate's events (written before the consumer sees them).
        self.recorder = DebateRecorder(path, self.debate_id, self.owner, claim) if path is not None else None
        self.paradigm = registry.get("paradigm", config.paradigm)(config)
        self.generator = registry.get("response_generator", config.response_generator)()
        self.protocol = registry.get("protocol", config.protocol)()
        self.rng = random.Random(config.seed)
        self.ordering = registry.get("ordering", config.ordering)(config, self.rng)
        self.tit_for_tat = config.tit_for_tat if config.tit_for_tat is not None else self.paradigm.default_tit_for_tat
        self.personas = {a.label: a.persona for a in config.agents}
        self.turns: list[Turn] = []
        self.round = 0
        self.order: list[str] = self.agent_labels()
        self._reuse: dict[tuple, deque[Turn]] = defaultdict(deque)
        for turn in sorted(history or [], key=lambda t: t.seq):
            if turn.status == "ok":
                self._reuse[(turn.round, turn.agent, turn.kind)].append(turn)
        self._seq = max((t.seq for t in history or []), default=-1) + 1
        # A fork's moderator messages and round orders from before its fork point (see Inheritance).
        self.inherited = inherited or Inheritance()
        self._inherited_messages = deque(sorted(self.inherited.messages, key=lambda m: m[0]))
        self._unreplayed = {t.seq for t in history or [] if t.status == "ok"}  # history turns not reused yet
        self._seq_lock = threading.Lock()
        self._pending: dict[str, list[str]] = defaultdict(list)
        self._last_solutions: tuple[int, list[str], list[str]] | None = None
        self._serial_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._events: queue.Queue = queue.Queue()
        self._pool = ThreadPoolExecutor(max_workers=config.max_concurrency, thread_name_prefix="madlab-call")
        self.status = "running"
        self.answer: str | None = None
        self.context = EngineContext(self)

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

    def agent_labels(self) -> list[str]:
        return [a.label for a in self.cfg.agents]

    # ===== the debate ======================================================================
    def _work(self) -> None:
        try:
            if self.recorder is not None:
                self.recorder.open()
            self._debate()
        except Exception as exc:  # an engine bug or a broken store: end visibly, keep what is on disk
            if _interpreter_exiting():
                return  # the process is going away: the store marks the debate interrupted on next open
            self._fail_visibly(exc)
        finally:
            self._pool.shutdown(wait=True)
            self.controller.publish(phase="ended", expected=0, received=0, deciding=False)
            if self.recorder is not None:
                self.recorder.end(failed=self.status == "failed", progressed=self._new_ok_turns > 0)
            self._events.put(_DONE)

    def _fail_visibly(self, exc: Exception) -> None:
        """End the debate as failed, naming the cause, even when the database cannot be written."""
        self.status = "failed"
        if isinstance(exc, ClaimLost):
            reason = str(exc)
        elif type(exc).__module__.startswith("sqlite3"):
            reason = f"the database could not be written ({type(exc).__name__}: {exc})"
        else:
            reason = f"{type(exc).__name__}: {exc}"
        events = [ErrorOccurred(reason), DebateFinished("failed", None, reason=reason)]
        if self.recorder is not None:
            self.recorder.record_failure(events, claim_lost=isinstance(exc, ClaimLost))
        for event in events:
            self._events.put(event)

    def _debate(self) -> None:
        cfg = self.cfg
        started = time.time()
        if self.recorder is not None:
            self.recorder.begin(cfg.to_dict(), parent_id=self.parent_id, forked_from_seq=self.forked_from_seq,
                                created_at=started, resumed=self.resumed)
        self._emit(DebateStarted(self.debate_id, cfg.to_dict(), resumed=self.resumed, parent_id=self.parent_id,
                                 forked_from_seq=self.forked_from_seq, ts=started))
        if cfg.auto_personas:
            self._generate_personas()
        self._emit(PersonasAssigned(dict(self.personas)))
        outcome, forced = None, False
        first = self.protocol.first_round(cfg)
        last = self.paradigm.total_rounds(cfg) or cfg.max_rounds
        for rnd in range(1, last + 1):
            self._halted()  # apply steering, wait while paused
            if self.controller.stopped or self.status == "failed":
                break
            early = None
            if not self.controller.force_requested:
                # All-Agents Drafting (seed 000 §3.2; MALLM's first-draft flag): round 1 is every
                # agent's independent draft, not an extra round, so AAD and baseline debates have
                # the same number of rounds and calls.
                early = self._run_round(rnd, drafting=cfg.all_agents_drafting and rnd == 1)
            if self.status == "failed" or self.controller.stopped:
                break
            if early is not None:  # the protocol decided during the round (consensus after a turn)
                outcome = early
                self._emit_attempt(outcome)
                break
            forced = self.controller.force_requested
            if forced and not self.latest_drafts()[0]:
                break  # forced before anyone spoke: nothing to decide (see _finish)
            if rnd < first and not forced:
                continue
            self.controller.publish(deciding=True)
            outcome = self.protocol.decide(self.context, forced)
            self._emit_attempt(outcome)
            if outcome.reached:
                break
            if forced or rnd == last:
                why = "decision forced by a person" if forced else f"turn cap reached ({last} rounds)"
                outcome = self.protocol.fallback(self.context, outcome, why)
                break
            self.controller.publish(deciding=False)
            outcome = None
        self._finish(outcome, forced)

    def _halted(self) -> bool:
        self._apply_steering()
        self.controller.wait_while_paused()
        self._apply_steering()
        return self.controller.stopped or self.controller.force_requested or self.status == "failed"

    def _finish(self, outcome, forced: bool) -> None:
        self._apply_steering()  # a stop (or message) that came during the decision is recorded too
        self.controller.publish(deciding=False)
        if self.controller.stopped:
            self.status = "stopped"
            self._emit(DebateFinished("stopped", None, reason=self._stop_reason))
            return
        if forced and outcome is None and self.status != "failed":
            self.status = "stopped"
            self._emit(DebateFinished("stopped", None, reason="a decision was forced before any agent had "
                                                              "spoken: there was nothing to decide"))
            return
        if self.status == "failed" or outcome is None or not outcome.reached:
            self.status = "failed"
            why = self._failure or "no decision could be reached" + (f": {outcome.reason}" if outcome else "")
            self._emit(DebateFinished("failed", None, reason=why))
            return
        self.answer = outcome.answer
        decision = DecisionReached(self.round, self.cfg.protocol, outcome.answer, outcome.winner_agent,
                                   outcome.winner_index, outcome.scores, outcome.solutions, outcome.solution_agents,
                                   forced=forced, fallback=outcome.fallback, details=outcome.details)
        self._emit(decision)
        if challenge_setting(self.cfg.challenge) and not self.controller.stopped:
            self._challenge(decision)
        self.status = "stopped" if self.controller.stopped else "finished"
        self._emit(DebateFinished(self.status, self.answer))

    def _emit_attempt(self, outcome) -> None:
        self._emit(DecisionAttempted(self.round, self.cfg.protocol, outcome.reached, outcome.reason, outcome.scores,
                                     outcome.solutions, outcome.solution_agents))

    # ===== rounds and turns ================================================================
    def _run_round(self, rnd: int, drafting: bool = False):
        """Run one round; returns the protocol's outcome if it decided after one of the turns."""
        self.round = rnd
        self.controller.publish(phase="discussion", round=rnd, expected=0, received=0, deciding=False)
        previous = self._answers_of_round(rnd - 1)
        self.order = self.ordering.order(self.agent_labels(), previous)
        inherited_order = self.inherited.orders.get(rnd)
        if inherited_order is not None and sorted(inherited_order) == sorted(self.order):
            self.order = list(inherited_order)  # a fork's inherited round keeps its parent's order
        self._emit(RoundStarted(rnd, list(self.order)))
        planned = None if drafting else self.paradigm.plan(rnd, list(self.order), self.context)
        if planned is None:  # the engine's own discussion turns
            kind = "draft" if drafting else "discussion"
            agents = [list(self.order)] if drafting else self.paradigm.steps(self.order, self.cfg)
            steps = [Step(tuple(step), kind) for step in agents]
        else:
            steps = planned
        finished: list[Turn] = []
        for step in steps:
            if self._halted():
                break
            requests = [(agent, step.kind, self._discussion_messages(agent, rnd, step.kind) if planned is None
                         else self.paradigm.messages(agent, step, rnd, self.context), None, step.reply_for(agent))
                        for agent in step.agents]
            for turn in self.ask_many(requests):  # in the round's order, whatever finished first
                finished.append(turn)
                self.protocol.observe(turn)
                early = self.protocol.after_turn(self.context) if turn.status == "ok" else None
                if early is not None:
                    return early
        if finished and all(t.status == "failed" for t in finished):
            self.status = "failed"
            causes = "; ".join(dict.fromkeys(f"{t.agent}: {t.error or 'no detail'}" for t in finished))
            self._failure = f"every turn of round {rnd} failed ({causes})"
            self._emit(ErrorOccurred(self._failure))
        elif self.paradigm.summarizes and not self._halted():
            self._summarize()
        return None

    def _summarize(self) -> None:
        """The summarizer condenses everything said so far (simultaneous talk with a summarizer)."""
        said = [self._render(t, "summarizer") for t in sorted(self.turns, key=lambda t: t.seq)
                if t.kind in SEEN_KINDS and t.status == "ok"]
        self.ask("summarizer", "summary", prompts.summary_prompt(self.cfg.question, self.cfg.task, said),
                 self.cfg.summarizer_model or self.cfg.agents[0].model)

    def _seen(self, agent: str, rnd: int) -> list[Turn]:
        """The discussion turns `agent` sees when it speaks in round `rnd` (paradigm, memory window).

        In the order the paradigm shows them (`Paradigm.arrange`): in seq order, the order each turn
        was planned in, for sequential talk; by the order of round `rnd` in simultaneous talk (seed
        003), never the order in which the calls of one simultaneous step happened to finish."""
        history = sorted((t for t in self.turns if t.kind in SEEN_KINDS and t.status == "ok"), key=lambda t: t.seq)
        authors = visible_authors(self.cfg, agent)
        if authors is not None:  # sparse connectivity: only the neighbours' turns (and summaries)
            history = [t for t in history if t.agent in authors or t.kind == "summary"]
        seen = self.paradigm.visible(agent, rnd, history, self.order)
        if self.cfg.memory_window is not None:
            seen = [t for t in seen if t.round >= rnd - self.cfg.memory_window]
        return self.paradigm.arrange(seen, self.order)

    def _discussion_messages(self, agent: str, rnd: int, kind: str) -> list[dict[str, str]]:
        cfg = self.cfg
        seen = [] if kind == "draft" else self._seen(agent, rnd)
        formats = [*self.protocol.turn_instructions(agent, bool(seen)),
                   *([prompts.FINAL_ANSWER_FORMAT] if self.generator.shares_answers else [])]
        if cfg.confidence:
            formats.append(prompts.CONFIDENCE_FORMAT)
        system = prompts.system_prompt(agent, len(cfg.agents), self.personas.get(agent, ""), self.tit_for_tat,
                                       self.paradigm.role(agent, self.order, cfg))
        moderator = self._pending.pop(agent, [])
        instruction = self.generator.instruction
        if self.paradigm.chat_history:
            return self._chat_messages(agent, system, seen, moderator, instruction, formats)
        rendered = [self._render(t, agent) for t in seen]
        return prompts.turn_prompt(system, cfg.question, cfg.task, rendered, moderator, instruction, formats)

    def _render(self, turn: Turn, viewer: str) -> str:
        return self.generator.render(turn, viewer, self.cfg.confidence_visible)

    def _chat_messages(self, agent, system, seen, moderator, instruction, formats) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": prompts.task_block(self.cfg.question, self.cfg.task)}]
        for turn in seen:
            if turn.agent == agent:
                messages.append({"role": "assistant", "content": turn.content})
            else:
                messages.append({"role": "user", "content": self._render(turn, agent)})
        closing = [prompts.moderator_block(moderator)] if moderator else []
        messages.append({"role": "user", "content": "\n\n".join(closing + [" ".join([instruction, *formats])])})
        return messages

    def _answers_of_round(self, rnd: int) -> dict[str, str]:
        return {t.agent: t.answer or "" for t in self.turns
                if t.round == rnd and t.kind in DISCUSSION_KINDS and t.status == "ok"}

    # ===== model calls =====================================================================
    def ask_many(self, requests: list[tuple], on_done=None) -> list[Turn]:
        """Run (agent, kind, messages, model[, reply]) requests concurrently; emit each turn as it finishes.

        `reply` (a `schemas.ReplyFormat`, or None for a turn in which the agent writes freely)
        sets the call's token limit and the JSON schema sent to a backend with constrained
        output (see `_call`). `on_done(turn)` runs in the engine thread right after each turn
        is recorded (votes use it so every ballot appears as soon as it is cast)."""
        planned = [(*self._plan(*r[:4]), r[4] if len(r) > 4 else None) for r in requests]
        calls = [turn for turn, reused, _ in planned if not reused]
        if calls:  # what the step waits for, for a viewer (`Controller.activity`)
            self.controller.publish(phase=phase_of(t.kind for t in calls), round=self.round, expected=len(calls),
                                    received=0)
        futures = {}
        for turn, reused, reply in planned:
            if reused:
                self._finish_turn(turn, reused=True, on_done=on_done)
            else:
                futures[self._pool.submit(self._call, turn, reply)] = turn
        for future in as_completed(futures):
            self.controller.call_finished()
            self._finish_turn(future.result(), on_done=on_done)
        return [turn for turn, _, _ in planned]

    def ask(self, agent: str, kind: str, messages: list[dict], model: str | None = None,
            reply: ReplyFormat | None = None) -> Turn:
        return self.ask_many([(agent, kind, messages, model, reply)])[0]

    def _plan(self, agent: str, kind: str, messages: list[dict], model: str | None) -> tuple[Turn, bool]:
        old = self._reuse.get((self.round, agent, kind))
        if old:
            turn = old.popleft()
            self._unreplayed.discard(turn.seq)
            if self.parent_id is not None:  # a fork stores its inherited history under new ids
                turn = Turn.from_dict({**turn.to_dict(), "id": uuid.uuid4().hex})
            return turn, True
        with self._seq_lock:
            seq, self._seq = self._seq, self._seq + 1
        model = model or self._agent(agent).model
        return Turn(id=uuid.uuid4().hex, seq=seq, round=self.round, agent=agent, kind=kind, model=model,
                    prompt=messages), False

    def _agent(self, label: str):
        return next(a for a in self.cfg.agents if a.label == label)

    def _call(self, turn: Turn, reply: ReplyFormat | None = None) -> Turn:
        """One model call (in a pool thread): stream tokens as events, return the finished turn.

        Generation settings: a short reply (`reply`) gets its phase's token limit
        (`config.PHASE_MAX_TOKENS`) and, where the backend supports constrained output
        (`models.response_format_support`), its JSON schema as `response_format`; a turn in
        which the agent writes freely gets the agent's `max_tokens` and, on a local model,
        `config.LOCAL_SAMPLING` (llama.cpp's repeat penalty)."""
        from .models import RetryPolicy, call_model, is_local, is_serial, response_format_support

        agent = next((a for a in self.cfg.agents if a.label == turn.agent), self.cfg.agents[0])
        if reply is None:
            max_tokens, response_format = agent.max_tokens, None
            extra = dict(LOCAL_SAMPLING) if is_local(turn.model) else None
        else:
            support = response_format_support(turn.model)
            max_tokens, extra = reply.max_tokens(agent.max_tokens, support), None
            response_format = reply.response_format(support)
        serial = self._serial_locks[turn.model] if is_serial(turn.model) else None
        if serial:
            serial.acquire()
        try:
            if self.controller.stopped:
                turn.status, turn.error = "interrupted", "stopped before it began"
                return turn
            turn.started_at = time.time()
            self._push(TurnStarted(turn.id, turn.round, turn.agent, turn.kind, turn.model, turn.prompt,
                                   ts=turn.started_at))

            def should_stop() -> bool:
                self.controller.wait_while_paused()
                return self.controller.stopped

            result = call_model(
                turn.model, turn.prompt, temperature=agent.temperature, max_tokens=max_tokens,
                response_format=response_format, extra=extra, seed=call_seed(self.cfg.seed, turn),
                should_stop=should_stop,
                on_token=lambda text: self._push(TokenReceived(turn.id, turn.agent, clean_text(text))),
                on_retry=lambda attempt, error: self._push(TurnRetried(turn.id, turn.agent, attempt, error)),
                retry=RetryPolicy(max_attempts=self.cfg.retry_attempts, base_delay=self.cfg.retry_base_delay,
                                  max_delay=self.cfg.retry_max_wait_s, timeout=self.cfg.timeout_s),
                metadata={"agent": turn.agent, "round": turn.round, "kind": turn.kind, "debate_id": self.debate_id},
                sleep=self.controller.sleep,
            )
        finally:
            if serial:
                serial.release()
        turn.content, turn.status = clean_text(result.text), result.status
        cause = result.error or result.note  # a kept reply's note ("cut: the model repeated itself ...")
        turn.error = clean_text(cause) if cause else cause
        turn.prompt_tokens, turn.completion_tokens = result.prompt_tokens, result.completion_tokens
        turn.latency_s, turn.first_token_s, turn.attempts = result.latency_s, result.first_token_s, result.attempts
        turn.finished_at = time.time()
        if turn.kind in DISCUSSION_KINDS and turn.content:
            self.paradigm.read_turn(turn, self.cfg, self.generator.shares_answers)
        return turn

    def _finish_turn(self, turn: Turn, reused: bool = False, on_done=None) -> None:
        if not turn.started_at and not reused:
            return  # stopped before it began: nothing was said, nothing to keep
        self.turns.append(turn)
        if not reused and turn.status == "ok":
            self._new_ok_turns += 1
        if reused and self.parent_id is None:
            self._push(TurnFinished(turn))  # already on disk (resume): show it, don't store it twice
        else:
            self._emit(TurnFinished(turn))
        if turn.status == "failed":
            self._emit(ErrorOccurred(f"{turn.agent}'s {turn.kind} turn failed: {turn.error}", turn.agent, turn.id))
        if on_done is not None:
            on_done(turn)

    # ===== services for protocols ==========================================================
    def latest_drafts(self) -> tuple[list[str], list[str]]:
        """Each agent's latest successful draft or discussion reply, in configured agent order."""
        latest: dict[str, str] = {}
        for turn in self.turns:
            if turn.kind in DISCUSSION_KINDS and turn.status == "ok":
                latest[turn.agent] = turn.content
        agents = [label for label in self.agent_labels() if label in latest]
        return agents, [latest[a] for a in agents]

    def solutions(self) -> tuple[list[str], list[str]]:
        """Each agent's final solution this round (seed 000 E.1 extraction when enabled); cached per round."""
        if self._last_solutions and self._last_solutions[0] == self.round:
            return self._last_solutions[1], self._last_solutions[2]
        agents, drafts = self.latest_drafts()
        if not self.generator.shares_answers:  # each agent forms its own solution now
            requests = [(a, "extraction", self._own_solution_messages(a), None) for a in agents]
            pairs = [(t.agent, final_answer(t.content)) for t in self.ask_many(requests)]
        elif self.cfg.extract_final_answers:
            requests = [(a, "extraction", self._extraction_messages(a, d), None, extraction_format())
                        for a, d in zip(agents, drafts)]
            turns = self.ask_many(requests)
            pairs = [(t.agent, extracted_answer(t.content) or final_answer(d)) for t, d in zip(turns, drafts)]
        else:
            pairs = [(a, final_answer(d)) for a, d in zip(agents, drafts)]
        agents, solutions = [a for a, _ in pairs], [s for _, s in pairs]
        self._last_solutions = (self.round, agents, solutions)
        return agents, solutions

    def _own_solution_messages(self, agent: str) -> list[dict[str, str]]:
        seen = self._seen(agent, self.round + 1)  # all the discussion this agent can see
        return prompts.own_solution_prompt(self._plain_system(agent), self.cfg.question, self.cfg.task,
                                           [self._render(t, agent) for t in seen])

    def extract_answer(self, agent: str, text: str, intro: str | None = None) -> str:
        """`agent`'s final solution in `text`: its own last reply, or (with `intro`) other messages."""
        if not self.cfg.extract_final_answers:
            return final_answer(text)
        extracted = self.ask(agent, "extraction", self._extraction_messages(agent, text, intro),
                             reply=extraction_format())
        return extracted_answer(extracted.content) or final_answer(text)

    def _extraction_messages(self, agent: str, draft: str, intro: str | None = None) -> list[dict[str, str]]:
        return prompts.extraction_prompt(self._plain_system(agent), self.cfg.question, self.cfg.task, draft,
                                         *([intro] if intro else []))

    def _plain_system(self, agent: str) -> str:
        return prompts.system_prompt(agent, len(self.cfg.agents), self.personas.get(agent, ""), None)

    def collect_ballots(self, protocol: str, solutions: list[str]) -> list[Ballot]:
        """One ballot per agent; an unparseable one is re-asked up to `vote_retries` times."""
        cfg = self.cfg
        labels = self.agent_labels()
        reply = ballot_format(protocol, len(solutions), cfg.cumulative_points)
        ballots: dict[str, Ballot] = {}
        reasons: dict[str, str | None] = {label: None for label in labels}
        for attempt in range(1, cfg.vote_retries + 2):
            todo = [label for label in labels if label not in ballots or not ballots[label].valid]
            if not todo or self.controller.stopped:
                break
            requests = [(label, "vote", prompts.vote_prompt(self._plain_system(label), protocol, cfg.question,
                                                             cfg.task, solutions, cfg.cumulative_points,
                                                             reasons[label]), None, reply) for label in todo]

            def count(turn: Turn, attempt: int = attempt) -> None:
                if turn.status != "ok":
                    ballot = Ballot(None, False, call_problem(turn, "vote"))
                else:
                    ballot = parse_ballot(protocol, turn.content, len(solutions), points=cfg.cumulative_points)
                ballots[turn.agent], reasons[turn.agent] = ballot, ballot.reason
                self._emit(VoteCast(self.round, turn.agent, protocol, turn.content, ballot.value, ballot.valid,
                                    ballot.reason, attempt))

            self.ask_many(requests, on_done=count)
        return [ballots[label] for label in labels if label in ballots]

    def _transcript(self) -> list[str]:
        return [f"[{t.agent}] (round {t.round}): {t.content.strip()}" for t in self.turns
                if t.kind in DISCUSSION_KINDS and t.status == "ok"]

    def _judge_model(self) -> str:
        return self.cfg.judge_model or self.cfg.agents[0].model

    def judge_extract(self) -> tuple[str, str]:
        messages = prompts.judge_extract_prompt(self.cfg.question, self.cfg.task, self._transcript(), len(self.cfg.agents))
        turn = self.ask("judge", "judge", messages, self._judge_model())
        return final_answer(turn.content) if turn.content else "", turn.content

    def judge_select(self, agents: list[str], drafts: list[str]) -> tuple[Ballot, str]:
        """The judge names the best draft by its agent's label (or its number); re-asked `vote_retries` times."""
        messages = prompts.judge_select_prompt(self.cfg.question, self.cfg.task, agents, drafts, len(self.cfg.agents))
        ballot, raw = Ballot(None, False, "the judge did not answer"), ""
        for attempt in range(1, self.cfg.vote_retries + 2):
            turn = self.ask("judge", "judge", messages, self._judge_model(), choice_format(agents))
            raw = turn.content
            ballot = read_label_choice(raw, agents) if turn.status == "ok" else \
                Ballot(None, False, call_problem(turn, "judge"))
            self._emit(VoteCast(self.round, "judge", "judge", raw, ballot.value, ballot.valid, ballot.reason, attempt))
            if ballot.valid or self.controller.stopped or attempt > self.cfg.vote_retries:
                break
            messages = prompts.judge_select_prompt(self.cfg.question, self.cfg.task, agents, drafts,
                                                   len(self.cfg.agents))
            messages[-1]["content"] += (f"\n\nYour previous reply could not be counted ({ballot.reason}). "
                                        "Answer again in exactly the format asked.")
        return ballot, raw

    # ===== personas and challenge ==========================================================
    def _generate_personas(self) -> None:
        """Seed 000: one task-relevant expert per agent without a persona, asked for one at a time (see
        `personas`); every call is a recorded turn (under the first agent's label). When the model
        cannot give a usable list, those agents become neutral participants and an ErrorOccurred
        says so in the debate's record. A stop while the list is asked for is no such failure: no
        more is asked, and the debate's finish reason says it was stopped during persona generation."""
        model = self.cfg.persona_model or self.cfg.agents[0].model
        labels = self.agent_labels()

        def ask(messages: list[dict], reply: ReplyFormat) -> tuple[str | None, str]:
            turn = self.ask(labels[0], "persona", messages, model, reply)
            return (turn.content, "") if turn.status == "ok" else (None, turn.error or turn.status)

        result = generate_personas(self.cfg.question, self.cfg.task, labels, ask, self.personas,
                                   options=self.cfg.answer_options, stopped=lambda: self.controller.stopped)
        self.personas = result.personas
        if result.stopped:  # a person stopped the debate: no model failure to report, no fallback to give
            self._stop_reason = result.reason  # "stopped by a person during persona generation"
            return
        if not result.ok:
            fallback = [label for label in labels if not self.personas.get(label)]
            for label in fallback:
                self.personas[label] = neutral(labels.index(label))
            self._emit(ErrorOccurred(f"Personas: the model could not suggest usable personas in {result.attempts} "
                                     f"requests ({result.reason}); {', '.join(fallback)} got a neutral persona."))

    def _challenge(self, decision: DecisionReached) -> None:
        """Seed 000 §5 and App. E.3 (the rules: mad_core/challenge.py): every agent accepts or challenges
        the answer its setting puts to it; one that challenges gives its own. When the first agent's
        challenge changes the answer, a DecisionReached with the new answer (its `details["challenge"]`
        naming the original) follows the protocol's, and the debate ends with the new answer."""
        cfg, labels = self.cfg, self.agent_labels()
        setting = challenge_setting(cfg.challenge)
        original = decided_answer(decision.answer, decision.details)
        prepared = ""
        preparation = challenge.preparation_prompt(setting, cfg.question, cfg.task)
        if preparation is not None:
            turn = self.ask(labels[0], "challenge", preparation)
            prepared = turn.content.strip() if turn.status == "ok" else ""
            if not prepared and not self.controller.stopped:
                what = "wrong answer" if setting == "wrong" else "background information"
                why = call_problem(turn, "challenge") if turn.status != "ok" else "the reply was empty"
                self._emit(ErrorOccurred(f"Challenge step ({setting}): the {what} could not be written ({why}); "
                                         "the agents were not asked."))
            if not prepared:
                return
        put = challenge.challenged_answer(setting, original, prepared)

        def messages(label: str, answering: bool) -> list[dict[str, str]]:
            history = [self._render(t, label) for t in self._seen(label, self.round + 1)] if setting == "history" \
                else None
            build = prompts.challenge_answer_prompt if answering else prompts.challenge_prompt
            return build(self._plain_system(label), cfg.question, cfg.task, put, history=history,
                         information=prepared if setting == "information" else "")

        turns = self.ask_many([(label, "challenge", messages(label, False), None, agreement_format())
                               for label in labels])
        stances = {t.agent: parse_agreement(t.content) if t.status == "ok" else None for t in turns}
        dissent = [label for label in labels if stances.get(label) is False]
        follow = self.ask_many([(label, "challenge", messages(label, True), None) for label in dissent]) \
            if dissent else []
        answers = {t.agent: final_answer(t.content) for t in follow if t.status == "ok"}
        for label in labels:
            self._emit(ChallengeResult(label, stances.get(label), answers.get(label)))
        record = challenge.outcome(setting, labels[0], stances, answers, original, put, cfg.to_dict())
        if record.get("changed") and not self.controller.stopped:
            self.answer = record["answer"]
            self._emit(replace(decision, answer=record["answer"], winner_agent=labels[0], winner_index=None,
                               fallback=None, details={"challenge": record}, ts=time.time()))

    # ===== plumbing ========================================================================
    def _apply_steering(self) -> None:
        self._deliver_inherited()
        for action in self.controller.take_actions():
            action.ts = time.time()  # when it took effect (a stored debate replays it there)
            if action.action == "message":
                for label in action.targets or self.agent_labels():
                    self._pending[label].append(action.message)
            self._emit(action)

    def _deliver_inherited(self) -> None:
        """A fork's inherited moderator messages, each delivered where its parent's agents got it:
        at the first step boundary after the inherited turns that came before it were replayed, so
        the same prompts receive it (a replayed turn's prompt takes it too and is discarded). Shown
        and stored with the parent's time, which places it among the inherited turns."""
        labels = self.agent_labels()
        while self._inherited_messages:
            before, message = self._inherited_messages[0]
            if any(seq < before for seq in self._unreplayed):
                return
            self._inherited_messages.popleft()
            for label in message.targets or labels:
                if label in labels:
                    self._pending[label].append(message.message)
            self._emit(replace(message))

    def _emit(self, event: Event) -> None:
        """Hand to the listeners (the store: worker thread only), then to the consumer."""
        if self.recorder is not None:
            self.recorder.record(event)
        self._events.put(event)

    def _push(self, event: Event) -> None:
        """Hand a transient event (tokens, turn start, retry) to the consumer from any thread."""
        self._events.put(event)


def read_label_choice(text: str, labels: list[str]) -> Ballot:
    """The judge's choice: {"choice": "<label>"} (its constrained form, `schemas.choice_format`)
    first; else the one agent label its reply names, else a solution number. Never raises."""
    try:
        reply = json_reply(text)
        if reply is not None and "choice" in reply:
            choice = reply["choice"].strip() if isinstance(reply["choice"], str) else None
            if choice in labels:
                return Ballot(labels.index(choice), True)
            named = [i for i, label in enumerate(labels)
                     if choice is not None and choice.casefold() == label.casefold()]
            if len(named) == 1:
                return Ballot(named[0], True)
            return Ballot(None, False, f"{short_repr(reply['choice'], 40)} is not one of the participants "
                                       f"({clip(', '.join(labels), 200)})")
        head = (text or "")[:2000]
        named = [i for i, label in enumerate(labels)
                 if re.search(rf"(?<![\w]){re.escape(label)}(?![\w])", head, re.IGNORECASE)]
        # "Agent 1" inside "Agent 12" is excluded by the word boundaries; several names are ambiguous.
        if len(named) == 1:
            return Ballot(named[0], True)
        if len(named) > 1:
            return Ballot(None, False, f"the reply names several participants ({', '.join(labels[i] for i in named)})")
        return parse_ballot("judge", text, len(labels))
    except Exception as exc:  # noqa: BLE001 - model text never raises
        return Ballot(None, False, f"unreadable reply ({type(exc).__name__})")


def call_problem(turn: Turn, what: str) -> str:
    """Why a `what` call ("vote", "judge") gave nothing to count, in words: a cut call has no error
    of its own (the debate was stopped), a failed one names its error."""
    if turn.status == "interrupted":
        return f"the {what} call was cut: {turn.error or 'the debate was stopped'}"
    return f"the {what} call {turn.status}: {turn.error or 'no detail'}"


def call_seed(seed: int | None, turn: Turn) -> int | None:
    """The sampling seed of one call, derived from the debate seed, the agent, the round and the kind.

    One seed for every call would give same-model agents the same sampling noise, and seed 004
    relies on that noise to make agents disagree; deriving it keeps a seeded debate reproducible
    (the same across processes: no Python hash randomisation)."""
    if seed is None:
        return None
    key = f"{seed}\x1f{turn.agent}\x1f{turn.round}\x1f{turn.kind}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF


def _interpreter_exiting() -> bool:
    import concurrent.futures.thread as pool_module

    return bool(getattr(pool_module, "_shutdown", False)) or sys.is_finalizing()


def run_debate(config: DebateConfig, **kwargs: Any) -> Iterator[Event]:
    """Shorthand: `DebateEngine(config, **kwargs).run()`."""
    return DebateEngine(config, **kwargs).run()


def prepare_resume(debate_id: str, store: Any, controller: Controller | None = None) -> DebateEngine:
    """An engine that continues a stopped, failed or interrupted debate from its last finished turn.

    Checks come first and change nothing: the debate exists and is not finished or running
    (ResumeRefused), and its stored configuration still runs here, models included
    (ConfigError naming the field). Then the debate is claimed for this engine in one atomic
    step, so of two resumes started together exactly one gets it (the other: ResumeRefused)."""
    record = store.check_resumable(debate_id)
    config = DebateConfig.from_dict(record["config"])  # ConfigError when a model is gone
    claim = store.claim_for_resume(debate_id, new_owner())  # checks again, atomically
    try:
        engine = DebateEngine(config, controller=controller, store=store, debate_id=debate_id,
                              history=store.turns(debate_id), resumed=True, claim=claim)
    except BaseException:
        store.undo_resume(claim)
        raise
    HEARTBEATS.add(store.path, debate_id, claim.owner)  # until the engine's recorder takes over
    return engine


def resume_debate(debate_id: str, store: Any, controller: Controller | None = None) -> Iterator[Event]:
    """Continue a stopped, failed or interrupted debate (see `prepare_resume`); yields its events."""
    return prepare_resume(debate_id, store, controller).run()


@dataclass(frozen=True)
class Inheritance:
    """What a fork takes from its parent besides the turns it replays.

    `messages`: the moderator messages sent before the fork point, each with the seq of the first
    parent turn that started after it (it is delivered once the inherited turns before that one
    were replayed: see `DebateEngine._deliver_inherited`). `orders`: the speaking order of every
    round that began before the fork point (a random order is not drawn again). Personas, votes
    and decision attempts need nothing here: replaying the inherited turns reproduces them."""

    messages: tuple[tuple[int, SteeringApplied], ...] = ()
    orders: dict[int, list[str]] = field(default_factory=dict)

    @classmethod
    def of_parent(cls, store: Any, debate_id: str, turns: list[Turn], upto_seq: int) -> "Inheritance":
        """Read from the store what came before turn `upto_seq` of the debate whose turns are `turns`.

        A message belongs before the fork point when a turn up to `upto_seq` started after it; one
        sent after the fork-point turn began (or after the last turn) stays with the parent."""
        by_seq = sorted(turns, key=lambda t: t.seq)
        messages = []
        for row in store.steering(debate_id):
            if row["action"] != "message" or not row.get("message"):
                continue
            ts = row.get("ts") or 0.0
            before = next((t.seq for t in by_seq if (t.started_at or 0.0) > ts), None)
            if before is not None and before <= upto_seq:
                messages.append((before, SteeringApplied("message", row.get("targets"), row["message"], ts=ts)))
        point = next((t for t in by_seq if t.seq == upto_seq), None)
        last_round = point.round if point is not None else max((t.round for t in by_seq if t.seq <= upto_seq),
                                                              default=0)
        orders = {row["round"]: list(row.get("speakers") or []) for row in store.rounds(debate_id)
                  if row["round"] <= last_round and row.get("speakers")}
        return cls(tuple(messages), orders)


def fork_debate(debate_id: str, upto_seq: int, store: Any, config: DebateConfig | None = None,
                controller: Controller | None = None) -> DebateEngine:
    """A new debate, linked to its parent, that keeps everything of the parent up to turn `upto_seq`:
    its turns (replayed, not called again), the moderator messages sent before that turn (they reach
    the fork's later prompts exactly as they reached the parent's), the rounds' speaking orders, and
    what replaying reproduces (personas, votes, decision attempts). Nothing after the fork point."""
    record = store.get_debate(debate_id)
    if record is None:
        raise KeyError(f"no debate {debate_id!r}")
    turns = store.turns(debate_id)
    history = [t for t in turns if t.seq <= upto_seq]
    config = config or DebateConfig.from_dict(record["config"])
    return DebateEngine(config, controller=controller, store=store, history=history, parent_id=debate_id,
                        forked_from_seq=upto_seq, inherited=Inheritance.of_parent(store, debate_id, turns, upto_seq))

