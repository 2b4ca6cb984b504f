"""The model calls of one debate: planning, running, streaming and keeping each turn.

`Calls.ask_many` runs a step's requests concurrently (bounded by `max_concurrency`; a local
model that serves one request at a time is serialized by a lock per model), streams each
call's pieces as transient events, and keeps every finished turn in the debate's state in the
order the turns were planned. A turn already in a resumed or forked debate's history is
reused instead of called (`replay.Replay`). Numbering (seq), the retries' bookkeeping
(`TurnRetried`, the retry policy, Retry-After waits that a stop cuts short) and the sampling
seed of each call (`call_seed`) live here too.

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
from typing import Any

from .config import LOCAL_SAMPLING, DebateConfig
from .controller import Controller, phase_of
from .events import DISCUSSION_KINDS, ErrorOccurred, TokenReceived, Turn, TurnFinished, TurnRetried, TurnStarted
from .ports import Emit
from .protocols.schemas import ReplyFormat
from .replay import Replay
from .text import clean_text

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
                 emit: Emit, push: Emit, read_turn: Callable[[Turn], None], debate_id: str):
        self.cfg, self.controller, self.state, self.replay = cfg, controller, state, replay
        self._emit, self._push, self._read_turn, self.debate_id = emit, push, read_turn, debate_id
        self._seq = replay.next_seq
        self._seq_lock = threading.Lock()
        self._serial_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._pool = ThreadPoolExecutor(max_workers=cfg.max_concurrency, thread_name_prefix="madlab-call")
        self.new_ok_turns = 0  # turns that succeeded in this run (not reused)

    def close(self) -> None:
        """Wait for the calls under way and let the pool's threads go."""
        self._pool.shutdown(wait=True)

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
        old = self.replay.take(self.state.round, agent, kind)
        if old is not None:
            return old, True
        with self._seq_lock:
            seq, self._seq = self._seq, self._seq + 1
        model = model or next(a for a in self.cfg.agents if a.label == agent).model
        return Turn(id=uuid.uuid4().hex, seq=seq, round=self.state.round, agent=agent, kind=kind, model=model,
                    prompt=messages), False

    def _settings(self, turn: Turn, reply: ReplyFormat | None) -> dict[str, Any]:
        """Generation settings: a short reply (`reply`) gets its phase's token limit
        (`config.PHASE_MAX_TOKENS`) and, where the backend supports constrained output
        (`models.response_format_support`), its JSON schema as `response_format`; a turn in
        which the agent writes freely gets the agent's `max_tokens` and, on a local model,
        `config.LOCAL_SAMPLING` (llama.cpp's repeat penalty)."""
        from .models import RetryPolicy, is_local, response_format_support

        agent = next((a for a in self.cfg.agents if a.label == turn.agent), self.cfg.agents[0])
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

    def _call(self, turn: Turn, reply: ReplyFormat | None = None) -> Turn:
        """One model call (in a pool thread): stream tokens as events, return the finished turn."""
        from .models import call_model, is_serial

        settings = self._settings(turn, reply)
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
                turn.model, turn.prompt, should_stop=should_stop,
                on_token=lambda text: self._push(TokenReceived(turn.id, turn.agent, clean_text(text))),
                on_retry=lambda attempt, error: self._push(TurnRetried(turn.id, turn.agent, attempt, error)),
                sleep=self.controller.sleep, **settings)
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
            self._read_turn(turn)
        return turn

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
