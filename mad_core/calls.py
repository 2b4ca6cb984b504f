"""The model calls of one debate: planning, running, streaming and keeping each turn.

`Calls.ask_many` runs a step's requests concurrently (bounded by `max_concurrency`; a local
model that serves one request at a time is serialized by a lock per model), streams each
call's pieces as transient events, and keeps every finished turn in the debate's state in the
order the turns were planned. A turn already in a resumed or forked debate's history is
reused instead of called (`replay.Replay`). Numbering (seq), the retries' bookkeeping
(`TurnRetried`, the retry policy, Retry-After waits that a stop cuts short) and the sampling
seed of each call (`call_seed`) live here too.

The response cache (`cfg.cache`, `models.response_cache`): in mode "read" or "readwrite" a call is
looked up first. On a hit the model is not called: the stored text comes as one `TokenReceived`
(the path a streamed reply takes, so a watched debate shows it) and the turn gets the stored
tokens and note, `latency_s` 0, `first_token_s` 0 and `attempts` 0 (no model attempt was made:
how a served-from-cache turn reads). On a miss the model is called and, in "readwrite", a reply
that ended "ok" is stored. The occurrence number of the key (how many times this debate already
made the same request, replayed turns included) is counted here, in the order the turns were
planned, so a re-asked identical request gets its own entry on every run.

Streamed or not (`stream`, the engine's option): a debate somebody watches streams each reply
piece by piece; one nobody watches (a sweep, `run --no-stream`) asks for each reply whole
(`call_model(stream=False)`: far less CPU a call), and its text comes as one `TokenReceived`.

Seats (`seats.py`): a turn of an agent a person speaks for (model `config.PERSON`) is never a model
call. It runs on a thread of its own (`_seat_pool`), outside the bounded pool, so waiting for the
person holds no call slot and no per-model lock and the other agents of the step go on; it never
reaches litellm or the response cache. The person's text becomes the turn (`Turn.seat` "person",
latency: the seconds the reply took); at the seat's time limit the turn is skipped ("skipped",
interrupted) or its stand-in model is called in the pool like any model turn ("stand-in"); a stop
(or a decision forced during a discussion turn) cuts it as a model turn is cut. Where a setting
falls back to the first agent's model (the judge, the persona writer, the summarizer, the supervisor)
and that agent is a person, the first agent that is a model serves instead.

It is handed the functions that hand events on (`emit`: recorded, worker thread; `push`:
transient, any thread) and never imports the engine.
"""
from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config import LOCAL_SAMPLING, PERSON, AgentConfig, DebateConfig
from .controller import Controller, phase_of
from .events import (DISCUSSION_KINDS, SEAT_SKIPPED, ErrorOccurred, TokenReceived, Turn, TurnFinished, TurnRetried,
                     TurnStarted)
from .ports import Emit
from .protocols.schemas import ReplyFormat
from .replay import Replay
from .text import clean_text

if TYPE_CHECKING:
    from .models import CallResult
    from .seats import SeatRegistry
    from .models.response_cache import CachedReply, ResponseCache

# (agent, kind, messages, model or None[, reply format or None])
Request = tuple[Any, ...]
OnDone = Callable[[Turn], None]


@dataclass
class DebateState:
    """What one debate has so far, shared by the engine, its calls and its context (written by the
    worker thread). `pending`: moderator messages waiting for each agent's next prompt."""

    personas: dict[str, str]
    order: list[str]
    round: int = 0
    turns: list[Turn] = field(default_factory=list)
    pending: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    status: str = "running"
    answer: str | None = None
    failure: str | None = None  # why the debate failed, in words
    stop_reason: str = "stopped by a person"  # a stopped debate's finish reason (it may name the phase)


class Calls:
    """Runs the model calls of one debate (see the module docstring)."""

    def __init__(self, cfg: DebateConfig, controller: Controller, state: DebateState, replay: Replay, *,
                 emit: Emit, push: Emit, read_turn: Callable[[Turn], None], debate_id: str, stream: bool = True,
                 seats: SeatRegistry | None = None, seat_ids: dict[str, str] | None = None):
        self.cfg, self.controller, self.state, self.replay = cfg, controller, state, replay
        self.stream = stream  # False: ask for each reply whole (nobody watches it come)
        self._emit, self._push, self._read_turn, self.debate_id = emit, push, read_turn, debate_id
        self._seq = replay.next_seq
        self._seq_lock = threading.Lock()
        self._serial_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._pool = ThreadPoolExecutor(max_workers=cfg.max_concurrency, thread_name_prefix="madlab-call")
        self.new_ok_turns = 0  # turns that succeeded in this run (not reused)
        self._cache = _open_cache(cfg.cache)
        self._occurrences: dict[str, int] = defaultdict(int)  # a request's occurrence-0 key -> times made
        self._occurrence_lock = threading.Lock()
        self.seats, self.seat_ids = seats, dict(seat_ids or {})  # person agent label -> its seat id
        self._seat_pool = ThreadPoolExecutor(max_workers=max(1, len(self.seat_ids)), thread_name_prefix="madlab-seat") \
            if self.seat_ids else None

    def close(self) -> None:
        """Wait for the calls under way and let the pool's threads go (and the cache's connection); the
        debate's seats close."""
        if self._seat_pool is not None:
            self._seat_pool.shutdown(wait=True)
        if self.seat_ids and self.seats is not None:
            self.seats.close_debate(self.debate_id)
        self._pool.shutdown(wait=True)
        if self._cache is not None:
            self._cache.close()

    def ask_many(self, requests: Sequence[Request], on_done: OnDone | None = None) -> list[Turn]:
        """Run (agent, kind, messages, model[, reply]) requests concurrently; emit each turn as it finishes.

        `reply` (a `schemas.ReplyFormat`, or None for a turn in which the agent writes freely)
        sets the call's token limit and the JSON schema sent to a backend with constrained
        output (see `_call`). `on_done(turn)` runs in the engine thread right after each turn
        is recorded (votes use it so every ballot appears as soon as it is cast)."""
        planned = [(*self._plan(*r[:4]), r[4] if len(r) > 4 else None) for r in requests]
        calls = [turn for turn, reused, _ in planned if not reused]
        if calls:  # what the step waits for, for a viewer (`Controller.activity`)
            self.controller.publish(phase=phase_of(t.kind for t in calls), round=self.state.round,
                                    expected=len(calls), received=0)
        futures: dict[Future[Turn], Turn] = {}
        for turn, reused, reply in planned:
            seat = self._is_seat(turn)
            key = None if seat else self._cache_key(turn, reply)  # counted in plan order, reused turns too
            if reused:
                self._finish_turn(turn, reused=True, on_done=on_done)
            elif seat and self._seat_pool is not None:  # a thread of its own: no model call slot is held
                futures[self._seat_pool.submit(self._take_seat, turn, reply)] = turn
            else:
                futures[self._pool.submit(self._call, turn, reply, key)] = turn
        for future in as_completed(futures):
            self.controller.call_finished()
            self._finish_turn(future.result(), on_done=on_done)
        return [turn for turn, _, _ in planned]

    def ask(self, agent: str, kind: str, messages: list[dict], model: str | None = None,
            reply: ReplyFormat | None = None) -> Turn:
        return self.ask_many([(agent, kind, messages, model, reply)])[0]

    def _plan(self, agent: str, kind: str, messages: list[dict], model: str | None) -> tuple[Turn, bool]:
        old = self.replay.take(self.state.round, agent, kind)
        if old is not None:
            return old, True
        with self._seq_lock:
            seq, self._seq = self._seq, self._seq + 1
        model = model or next(a for a in self.cfg.agents if a.label == agent).model
        if model == PERSON and agent not in self.seat_ids:  # a fallback to the first agent's model
            model = next(a.model for a in self.cfg.agents if a.model != PERSON)
        return Turn(id=uuid.uuid4().hex, seq=seq, round=self.state.round, agent=agent, kind=kind, model=model,
                    prompt=messages), False

    def _settings(self, turn: Turn, reply: ReplyFormat | None) -> dict[str, Any]:
        """Generation settings: a short reply (`reply`) gets its phase's token limit
        (`config.PHASE_MAX_TOKENS`) and, where the backend supports constrained output
        (`models.response_format_support`), its JSON schema as `response_format`; a turn in
        which the agent writes freely gets the agent's `max_tokens` and, on a local model,
        `config.LOCAL_SAMPLING` (llama.cpp's repeat penalty)."""
        from .models import RetryPolicy, is_local, response_format_support

        agent = self._agent(turn.agent)
        if reply is None:
            max_tokens, response_format = agent.max_tokens, None
            extra = dict(LOCAL_SAMPLING) if is_local(turn.model) else None
        else:
            support = response_format_support(turn.model)
            max_tokens, extra = reply.max_tokens(agent.max_tokens, support), None
            response_format = reply.response_format(support)
        cfg = self.cfg
        return dict(temperature=agent.temperature, max_tokens=max_tokens, response_format=response_format,
                    extra=extra, seed=call_seed(cfg.seed, turn),
                    retry=RetryPolicy(max_attempts=cfg.retry_attempts, base_delay=cfg.retry_base_delay,
                                      max_delay=cfg.retry_max_wait_s, timeout=cfg.timeout_s),
                    metadata={"agent": turn.agent, "round": turn.round, "kind": turn.kind,
                              "debate_id": self.debate_id})

    def _cache_key(self, turn: Turn, reply: ReplyFormat | None) -> str | None:
        """The response cache's key of this call, its occurrence counted (None: the cache is off)."""
        if self._cache is None:
            return None
        from .models.response_cache import SAMPLING_FIELDS, request_key

        settings = self._settings(turn, reply)
        sampling = {name: settings[name] for name in SAMPLING_FIELDS}
        first = request_key(turn.model, turn.prompt, **sampling)
        with self._occurrence_lock:
            occurrence = self._occurrences[first]
            self._occurrences[first] = occurrence + 1
        return first if occurrence == 0 else request_key(turn.model, turn.prompt, occurrence=occurrence, **sampling)

    def _call(self, turn: Turn, reply: ReplyFormat | None = None, key: str | None = None) -> Turn:
        """One model call (in a pool thread): stream tokens as events, return the finished turn.
        `key`: the call's response cache key (`_cache_key`), None when the cache is off."""
        from .models import call_model, is_serial

        settings = self._settings(turn, reply)
        cached = self._cache.get(key, self.debate_id) if self._cache is not None and key is not None else None
        serial = self._serial_locks[turn.model] if is_serial(turn.model) and cached is None else None
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

            def on_token(text: str) -> None:
                self._push(TokenReceived(turn.id, turn.agent, clean_text(text)))

            if cached is not None:
                result = _cached_result(cached, on_token, should_stop)
            else:
                result = call_model(
                    turn.model, turn.prompt, should_stop=should_stop, on_token=on_token,
                    on_retry=lambda attempt, error: self._push(TurnRetried(turn.id, turn.agent, attempt, error)),
                    sleep=self.controller.sleep, stream=self.stream, **settings)
        finally:
            if serial:
                serial.release()
        if cached is None and self._cache is not None and key is not None:
            # stores only what ended "ok" (and only in "readwrite"), noted as used by this debate
            self._cache.put(key, result, turn.model, self.debate_id)
        self._keep(turn, result)
        return turn

    def _is_seat(self, turn: Turn) -> bool:
        return turn.model == PERSON and turn.agent in self.seat_ids and self.seats is not None

    def _take_seat(self, turn: Turn, reply: ReplyFormat | None) -> Turn:
        """A person's turn (on a seat thread): wait for the seat's reply, then keep it as the turn; at the
        time limit skip it or let the stand-in speak; a stop (or a forced decision) cuts it."""
        from .models import CallResult

        if self.controller.stopped:
            turn.status, turn.error = "interrupted", "stopped before it began"
            return turn
        agent = self._agent(turn.agent)
        turn.started_at = time.time()
        self._push(TurnStarted(turn.id, turn.round, turn.agent, turn.kind, turn.model, turn.prompt,
                               ts=turn.started_at))
        assert self.seats is not None
        outcome = self.seats.await_reply(self.seat_ids[turn.agent], turn.id, turn.kind, turn.prompt, self.controller,
                                         expects=reply.phase if reply is not None else None)
        if outcome.state == "answered":
            turn.seat = "person"
            self._push(TokenReceived(turn.id, turn.agent, outcome.text))
            self._keep(turn, CallResult(outcome.text, "ok", None, 0, 0, outcome.waited_s, outcome.waited_s, 1))
        elif outcome.state == "timed_out" and agent.at_time_limit == "model" and agent.stand_in_model:
            turn.model, turn.seat = agent.stand_in_model, "stand-in"
            self._pool.submit(self._call, turn, reply, None).result()  # a model call: in the bounded pool
            note = f"{agent.stand_in_model} spoke for {turn.agent} (time limit, {agent.time_limit_s:g} s)"
            turn.error = f"{note}; {turn.error}" if turn.error else note
        else:
            turn.status, turn.finished_at = "interrupted", time.time()
            turn.latency_s = outcome.waited_s
            if outcome.state == "timed_out":
                turn.seat = SEAT_SKIPPED
                turn.error = f"skipped: {turn.agent} did not reply within the time limit ({agent.time_limit_s:g} s)"
            else:
                turn.error = ("stopped before the person replied" if outcome.state == "stopped"
                              else "a decision was forced before the person replied")
        return turn

    def _agent(self, label: str) -> AgentConfig:
        return next((a for a in self.cfg.agents if a.label == label), self.cfg.agents[0])

    def _keep(self, turn: Turn, result: CallResult) -> None:
        """Fill `turn` from a call's `CallResult`."""
        turn.content, turn.status = clean_text(result.text), result.status
        cause = result.error or result.note  # a kept reply's note ("cut: the model repeated itself ...")
        turn.error = clean_text(cause) if cause else cause
        turn.prompt_tokens, turn.completion_tokens = result.prompt_tokens, result.completion_tokens
        turn.latency_s, turn.first_token_s, turn.attempts = result.latency_s, result.first_token_s, result.attempts
        turn.finished_at = time.time()
        if turn.kind in DISCUSSION_KINDS and turn.content:
            self._read_turn(turn)

    def _finish_turn(self, turn: Turn, reused: bool = False, on_done: OnDone | None = None) -> None:
        if not turn.started_at and not reused:
            return  # stopped before it began: nothing was said, nothing to keep
        self.state.turns.append(turn)
        if not reused and turn.status == "ok":
            self.new_ok_turns += 1
        if reused and self.replay.origin.mode != "fork":
            self._push(TurnFinished(turn))  # already on disk (resume): show it, don't store it twice
        else:
            self._emit(TurnFinished(turn))
        if turn.status == "failed":
            self._emit(ErrorOccurred(f"{turn.agent}'s {turn.kind} turn failed: {turn.error}", turn.agent, turn.id))
        if on_done is not None:
            on_done(turn)


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


def _open_cache(mode: str) -> ResponseCache | None:
    """The debate's `ResponseCache` in `mode`, or None for "off" (nothing is opened)."""
    if mode == "off":
        return None
    from .models.response_cache import ResponseCache

    return ResponseCache(mode)


def _cached_result(cached: CachedReply, on_token: Callable[[str], None],
                   should_stop: Callable[[], bool]) -> CallResult:
    """A stored reply as a call's `CallResult`: its text handed to `on_token` in one piece, unless the
    debate was stopped first (then "interrupted", nothing said). No model attempt: `attempts` 0."""
    from .models import CallResult

    if should_stop():  # waits while the debate is paused, as a streamed piece does
        return CallResult("", "interrupted", None, 0, 0, 0.0, None, 0)
    on_token(cached.text)
    return CallResult(cached.text, "ok", None, cached.prompt_tokens, cached.completion_tokens, 0.0, 0.0, 0,
                      note=cached.note)
