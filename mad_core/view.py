"""A debate's state folded from its events: what a transcript, a plot or a live page shows.

`DebateView.apply(event)` is pure bookkeeping (no I/O, no UI); the same fold serves a live
debate (events as they arrive), a stored one (`DebateView.from_store`) and a replay (apply
the stored events one by one). Partially streamed text is kept per turn.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .events import (DISCUSSION_KINDS, ChallengeResult, DebateFinished, DebateStarted, DecisionAttempted, DecisionReached,
                     ErrorOccurred, Event, PersonasAssigned, RoundStarted, SteeringApplied, TokenReceived, Turn,
                     TurnFinished, TurnRetried, TurnStarted, VoteCast)
from .store.rows import stored_events  # rows -> events lives with events -> rows



@dataclass
class TurnView:
    """A turn as shown: text grows while it streams; `status` is 'streaming' until it ends."""

    id: str
    round: int
    agent: str
    kind: str
    model: str
    prompt: list[dict[str, str]]
    text: str = ""
    status: str = "streaming"
    seq: int | None = None
    answer: str | None = None
    agreement: bool | None = None
    confidence: int | None = None
    error: str | None = None
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    started_at: float = 0.0
    seat: str | None = None  # a seat's turn: "person", "stand-in" or "skipped" (Turn.seat); None: a model's


@dataclass
class AgentUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


@dataclass
class DebateView:
    """Everything known about one debate so far."""

    debate_id: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    status: str = "running"
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    personas: dict[str, str] = field(default_factory=dict)
    rounds: dict[int, list[str]] = field(default_factory=dict)  # round -> speaking order
    topics: dict[int, str] = field(default_factory=dict)  # round -> what it is about (RoundStarted.topic)
    round_steps: dict[int, list[list[str]]] = field(default_factory=dict)  # round -> who speaks together
    turns: list[TurnView] = field(default_factory=list)
    votes: list[VoteCast] = field(default_factory=list)
    attempts: list[DecisionAttempted] = field(default_factory=list)
    decision: DecisionReached | None = None  # the debate's decision (the challenge's, when it changed it)
    protocol_decision: DecisionReached | None = None  # the protocol's decision, when the challenge changed it
    challenges: list[ChallengeResult] = field(default_factory=list)
    steering: list[SteeringApplied] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    usage: dict[str, AgentUsage] = field(default_factory=dict)
    finish_reason: str = ""
    timeline: list[tuple[str, Any]] = field(default_factory=list)  # ("turn", id) / ("steer", event) in order
    parent_id: str | None = None  # a fork's parent
    forked_from_seq: int | None = None  # a fork: its turns up to this seq are the parent's

    # ----- folding ----------------------------------------------------------------------
    def apply(self, event: Event) -> "DebateView":
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)
        return self

    def turn(self, turn_id: str) -> TurnView | None:
        """The turn with this id, found in O(1): a token of a 200-turn debate must not scan 200 turns."""
        k = self._positions().get(turn_id)
        return None if k is None else self.turns[k]

    def turn_index(self, turn_id: str) -> int | None:
        """Position of a turn in `turns` (the k of its `turn_{k}` key)."""
        return self._positions().get(turn_id)

    def _positions(self) -> dict[str, int]:
        """turn id -> index in `turns`; kept as turns are appended, rebuilt if `turns` was changed elsewhere.

        Not a dataclass field: `dataclasses.asdict` and `==` do not see it."""
        cached = self.__dict__.get("_turn_positions")
        if cached is None or cached[0] is not self.turns or len(cached[1]) != len(self.turns):
            cached = (self.turns, {t.id: k for k, t in enumerate(self.turns)})
            self.__dict__["_turn_positions"] = cached
        return cached[1]

    # ----- derived ----------------------------------------------------------------------
    def from_parent(self, item: TurnView | SteeringApplied) -> bool:
        """Whether a fork took this turn or moderator action from its parent: a turn up to the fork
        point, a moderator action from before the fork began (it keeps its parent's time)."""
        if self.parent_id is None or self.forked_from_seq is None:
            return False
        if isinstance(item, SteeringApplied):
            return item.ts < self.started_at
        return item.seq is not None and item.seq <= self.forked_from_seq

    @property
    def agents(self) -> list[str]:
        return [a["label"] for a in self.config.get("agents", [])]

    @property
    def running_turns(self) -> list[TurnView]:
        return [t for t in self.turns if t.status == "streaming"]

    @property
    def elapsed_s(self) -> float:
        return (self.finished_at or time.time()) - self.started_at

    def answers_by_round(self) -> list[tuple[int, dict[str, str]]]:
        """(round, {agent: answer}) for every round with finished discussion turns, in order."""
        rounds: dict[int, dict[str, str]] = {}
        for t in self.turns:
            if t.kind in DISCUSSION_KINDS and t.status == "ok":
                rounds.setdefault(t.round, {})[t.agent] = t.answer or t.text
        return sorted(rounds.items())

    def texts_by_round(self) -> list[tuple[int, dict[str, str]]]:
        rounds: dict[int, dict[str, str]] = {}
        for t in self.turns:
            if t.kind in DISCUSSION_KINDS and t.status == "ok":
                rounds.setdefault(t.round, {})[t.agent] = t.text
        return sorted(rounds.items())

    def round_topics(self) -> dict[int, str]:
        """What each round is about, when its paradigm said so as the round began (seed 001's
        per-player debate: the player discussed in it); {} otherwise."""
        return dict(self.topics)

    def round_title(self, rnd: int) -> str:
        """A round's heading, plain text: "Independent drafts" or "Setup" for round 0, else
        "Round N", with what the round is about where its paradigm says (`round_topics`)."""
        if rnd == 0:
            return "Independent drafts" if any(t.kind == "draft" for t in self.turns if t.round == 0) else "Setup"
        topic = self.round_topics().get(rnd)
        return f"Round {rnd}: {topic}" if topic else f"Round {rnd}"

    @property
    def challenge_change(self) -> dict[str, Any] | None:
        """How the challenge step changed the decision (`mad_core.challenge.outcome`'s record: the
        setting, the original and the new answer, who challenged), or None when it did not."""
        details = self.decision.details if self.decision is not None else None
        record = details.get("challenge") if isinstance(details, dict) else None
        return record if isinstance(record, dict) and record.get("changed") else None

    def votes_of_round(self, rnd: int) -> list[VoteCast]:
        """The last ballot of each voter in a round (re-asked ballots replace earlier ones)."""
        latest: dict[str, VoteCast] = {}
        for v in self.votes:
            if v.round == rnd:
                latest[v.agent] = v
        return list(latest.values())

    @classmethod
    def from_store(cls, store, debate_id: str) -> "DebateView":
        """Rebuild a view from what the store holds (for transcripts and replay)."""
        view = cls()
        for event in stored_events(store, debate_id):
            view.apply(event)
        return view


# ----- handlers -------------------------------------------------------------------------
def _started(v: DebateView, e: DebateStarted) -> None:
    v.debate_id, v.config, v.status, v.started_at = e.debate_id, e.config, "running", e.ts
    v.parent_id, v.forked_from_seq = e.parent_id, e.forked_from_seq
    v.finished_at = None


def _personas(v: DebateView, e: PersonasAssigned) -> None:
    v.personas = dict(e.personas)


def _round(v: DebateView, e: RoundStarted) -> None:
    v.rounds[e.round] = list(e.order)
    if e.topic:
        v.topics[e.round] = e.topic
    if e.steps is not None:
        v.round_steps[e.round] = [list(group) for group in e.steps]


def _turn_started(v: DebateView, e: TurnStarted) -> None:
    positions = v._positions()
    if e.turn_id not in positions:
        v.turns.append(TurnView(e.turn_id, e.round, e.agent, e.kind, e.model, e.prompt, started_at=e.ts))
        positions[e.turn_id] = len(v.turns) - 1
        v.timeline.append(("turn", e.turn_id))


def _token(v: DebateView, e: TokenReceived) -> None:
    turn = v.turn(e.turn_id)
    if turn is not None:
        turn.text += e.text


def _retried(v: DebateView, e: TurnRetried) -> None:
    turn = v.turn(e.turn_id)
    if turn is not None:
        turn.text, turn.retries = "", turn.retries + 1


def _turn_finished(v: DebateView, e: TurnFinished) -> None:
    t: Turn = e.turn
    view = v.turn(t.id)
    if view is None:  # a turn inherited by a fork or shown again on resume
        _turn_started(v, TurnStarted(t.id, t.round, t.agent, t.kind, t.model, t.prompt, ts=t.started_at))
        view = v.turn(t.id)
    view.text, view.status, view.seq, view.error = t.content, t.status, t.seq, t.error
    view.model, view.seat = t.model, t.seat  # a seat's stand-in model spoke in the person's place
    view.answer, view.agreement, view.confidence = t.answer, t.agreement, t.confidence
    view.prompt_tokens, view.completion_tokens, view.latency_s = t.prompt_tokens, t.completion_tokens, t.latency_s
    view.retries = max(view.retries, (t.attempts or 1) - 1)  # also when no TurnRetried was seen (stored)
    usage = v.usage.setdefault(t.agent, AgentUsage())
    usage.calls += 1
    usage.prompt_tokens += t.prompt_tokens
    usage.completion_tokens += t.completion_tokens
    usage.seconds += t.latency_s


def _vote(v: DebateView, e: VoteCast) -> None:
    v.votes.append(e)


def _attempt(v: DebateView, e: DecisionAttempted) -> None:
    v.attempts.append(e)


def _decision(v: DebateView, e: DecisionReached) -> None:
    changed = isinstance(e.details, dict) and isinstance(e.details.get("challenge"), dict)
    if changed and v.decision is not None:  # the challenge replaced it: the protocol's stays in the record
        v.protocol_decision = v.protocol_decision or v.decision
    v.decision = e


def _challenge(v: DebateView, e: ChallengeResult) -> None:
    v.challenges.append(e)


def _steer(v: DebateView, e: SteeringApplied) -> None:
    v.steering.append(e)
    v.timeline.append(("steer", e))


def _error(v: DebateView, e: ErrorOccurred) -> None:
    v.errors.append(e.message)


def _finished(v: DebateView, e: DebateFinished) -> None:
    v.status, v.finished_at, v.finish_reason = e.status, e.ts, e.reason
    for turn in v.turns:
        if turn.status == "streaming":
            turn.status = "interrupted"


_HANDLERS = {
    DebateStarted: _started, PersonasAssigned: _personas, RoundStarted: _round, TurnStarted: _turn_started,
    TokenReceived: _token, TurnRetried: _retried, TurnFinished: _turn_finished, VoteCast: _vote,
    DecisionAttempted: _attempt, DecisionReached: _decision, ChallengeResult: _challenge, SteeringApplied: _steer,
    ErrorOccurred: _error, DebateFinished: _finished,
}
