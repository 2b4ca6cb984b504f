"""Typed events the engine yields while a debate runs, and the `Turn` record they carry.

Consumers (the store, the CLI, the app, tests) only read these; none of them computes a
protocol. Every event is a small dataclass with a one-line docstring and a timestamp.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

# Turn kinds: what a model call was for. The per-player Knight-Knave-Spy mode (seed 001 §4.1,
# kks_mode.py) has its phases' own: an initial "proposal" (full assignment), an "order" proposal
# (agreed debate order), "debate" about one player, a self-"adjustment" (full assignment), the
# "final" assignment, and the "supervisor" breaking ties of the final vote.
KKS_KINDS = ("proposal", "order", "debate", "adjustment", "final", "supervisor")
TURN_KINDS = ("persona", "draft", "discussion", "moderator", "extraction", "vote", "judge", "challenge", "summary",
              *KKS_KINDS)
# Turns that are part of the discussion itself. A round's answer of an agent is its last one of
# the round: in the KKS mode the self-adjustment (full assignment) follows the debate replies
# (whose answer is one player's role) in every player's round.
DISCUSSION_KINDS = ("draft", "discussion", "proposal", "debate", "adjustment", "final")
# Statuses of a turn and of a debate.
TURN_STATUSES = ("ok", "failed", "interrupted")
DEBATE_STATUSES = ("running", "finished", "stopped", "failed", "interrupted")
SEAT_SKIPPED = "skipped"  # Turn.seat of a seat's turn whose time limit passed with nobody speaking
SEAT_MARKS = ("person", "stand-in", SEAT_SKIPPED)  # Turn.seat
PERSON = "person"  # the model name of an agent a person speaks for (config.PERSON; its seat: mad_core/seats.py)


@dataclass
class Turn:
    """One model call of a debate, with the exact messages it received."""

    id: str
    seq: int  # position in the debate, 0-based
    round: int  # 0 = independent drafts (AAD), 1.. = discussion rounds
    agent: str  # agent label, or "judge"
    kind: str  # one of TURN_KINDS
    model: str
    prompt: list[dict[str, str]]
    content: str = ""
    status: str = "ok"
    error: str | None = None
    answer: str | None = None  # the turn's final answer, when it states one
    agreement: bool | None = None  # AGREE / DISAGREE with the current proposal
    confidence: int | None = None  # 1-10 when agents report confidence
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    first_token_s: float | None = None
    attempts: int = 1
    started_at: float = 0.0
    finished_at: float = 0.0
    # A seat's turn (an agent a person speaks for, mad_core/seats.py): "person" (the seat's holder
    # typed it), "stand-in" (the seat's time limit passed and its stand-in model spoke for it) or
    # "skipped" (the time limit passed, nobody spoke); None: a model agent's turn.
    seat: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Turn":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class Event:
    """Base of all events."""

    ts: float = field(default_factory=time.time, kw_only=True)

    @property
    def type(self) -> str:
        return type(self).__name__

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **dataclasses.asdict(self)}


@dataclass
class DebateStarted(Event):
    """A debate began (or resumed) with this configuration."""

    debate_id: str
    config: dict[str, Any]
    resumed: bool = False
    parent_id: str | None = None
    forked_from_seq: int | None = None  # a fork: its turns up to this seq are its parent's


@dataclass
class PersonasAssigned(Event):
    """Personas are fixed for every agent (typed by hand or generated)."""

    personas: dict[str, str]


@dataclass
class RoundStarted(Event):
    """A round begins; `order` is the speaking order for it. `topic`: what the round is about where
    its paradigm says (seed 001's per-player debate: the player discussed), else None. `steps`: who
    speaks together in it (agents of one step speak at the same time and never see each other's
    replies of the round), None for a round the paradigm plans itself. Recorded with the round, so
    a view and the metric report read them without the paradigm that made them."""

    round: int
    order: list[str]
    topic: str | None = None
    steps: list[list[str]] | None = None


@dataclass
class TurnStarted(Event):
    """A model call begins; the prompt is already final."""

    turn_id: str
    round: int
    agent: str
    kind: str
    model: str
    prompt: list[dict[str, str]]


@dataclass
class TokenReceived(Event):
    """A piece of streamed text for a running turn."""

    turn_id: str
    agent: str
    text: str


@dataclass
class TurnRetried(Event):
    """A transient failure: the turn's text so far is discarded and the call is tried again."""

    turn_id: str
    agent: str
    attempt: int
    error: str


@dataclass
class TurnFinished(Event):
    """A turn ended (ok, failed or interrupted) and is already on disk when a store is attached."""

    turn: Turn


@dataclass
class VoteCast(Event):
    """An agent's ballot: the raw text, the parsed ballot (0-based) and whether it counts."""

    round: int
    agent: str
    protocol: str
    raw: str
    ballot: Any
    valid: bool
    reason: str | None = None
    attempt: int = 1


@dataclass
class DecisionAttempted(Event):
    """The protocol tried to decide; `reached` False means another round (tie, no consensus)."""

    round: int
    protocol: str
    reached: bool
    reason: str
    scores: list[float] = field(default_factory=list)
    solutions: list[str] = field(default_factory=list)
    solution_agents: list[str] = field(default_factory=list)


@dataclass
class DecisionReached(Event):
    """The debate's final answer and how it was reached."""

    round: int
    protocol: str
    answer: str
    winner_agent: str | None
    winner_index: int | None
    scores: list[float] = field(default_factory=list)
    solutions: list[str] = field(default_factory=list)
    solution_agents: list[str] = field(default_factory=list)
    forced: bool = False
    fallback: str | None = None  # why a fallback rule chose the answer, if one did
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class ChallengeResult(Event):
    """An agent accepted or challenged the final answer (seed 000 E.3)."""

    agent: str
    agrees: bool | None
    new_answer: str | None = None


@dataclass
class SteeringApplied(Event):
    """A person steered the debate: pause, resume, stop, message or force_decision.

    `requested_at`: when the person acted (the `Controller` stamps it as the command arrives);
    `ts`: when the engine applied it, at the next step boundary (a pause asked for while a turn
    runs takes effect once the turn's step is over). None for actions stored before it was kept."""

    action: str
    targets: list[str] | None = None  # None = all agents
    message: str | None = None
    requested_at: float | None = None


@dataclass
class ErrorOccurred(Event):
    """Something went wrong that the debate survived (a failed turn) or did not."""

    message: str
    agent: str | None = None
    turn_id: str | None = None


@dataclass
class DebateFinished(Event):
    """The debate ended: finished, stopped or failed."""

    status: str
    answer: str | None = None
    reason: str = ""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.__name__: cls
    for cls in (DebateStarted, PersonasAssigned, RoundStarted, TurnStarted, TokenReceived, TurnRetried,
                TurnFinished, VoteCast, DecisionAttempted, DecisionReached, ChallengeResult, SteeringApplied,
                ErrorOccurred, DebateFinished)
}


def event_from_dict(data: dict[str, Any]) -> Event:
    """Inverse of `Event.to_dict` (used by imports and by the app's event queue)."""
    data = dict(data)
    cls = EVENT_TYPES[data.pop("type")]
    if cls is TurnFinished:
        data["turn"] = Turn.from_dict(data["turn"])
    return cls(**data)
