"""How a debate starts: new, resumed or forked (`Origin`), and the history it replays (`Replay`).

Resume and fork replay the debate's schedule over an existing history: a step whose turn is
already in the history reuses it instead of calling a model, so a resumed debate continues
from its last finished turn and a fork continues from the chosen turn. A fork also keeps what
its parent's later prompts depended on (`Inheritance`): the moderator messages sent before the
fork point, delivered at the same place in the replay, and the rounds' speaking orders.

The mode is explicit (`Origin.mode`: "new", "resume" or "fork"); `resume.py` builds the
origins of resumed and forked debates from the store. This module never imports the engine.
"""
from __future__ import annotations

import uuid
from collections import defaultdict, deque
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .events import SteeringApplied, Turn

Mode = Literal["new", "resume", "fork"]


@dataclass(frozen=True)
class Inheritance:
    """What a fork takes from its parent besides the turns it replays.

    `messages`: the moderator messages sent before the fork point, each with the seq of the first
    parent turn that started after it (it is delivered once the inherited turns before that one
    were replayed: see `Replay.deliver`). `orders`: the speaking order of every round that began
    before the fork point (a random order is not drawn again). Personas, votes and decision
    attempts need nothing here: replaying the inherited turns reproduces them."""

    messages: tuple[tuple[int, SteeringApplied], ...] = ()
    orders: dict[int, list[str]] = field(default_factory=dict)

    @classmethod
    def of_parent(cls, store: Any, debate_id: str, turns: list[Turn], upto_seq: int) -> Inheritance:
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
                messages.append((before, SteeringApplied("message", row.get("targets"), row["message"],
                                                              requested_at=row.get("requested_at"), ts=ts)))
        point = next((t for t in by_seq if t.seq == upto_seq), None)
        last_round = point.round if point is not None else max((t.round for t in by_seq if t.seq <= upto_seq),
                                                              default=0)
        orders = {row["round"]: list(row.get("speakers") or []) for row in store.rounds(debate_id)
                  if row["round"] <= last_round and row.get("speakers")}
        return cls(tuple(messages), orders)


@dataclass(frozen=True)
class Origin:
    """How one debate starts. "new": nothing to replay. "resume": the stored debate `debate_id`
    continues from its `history`, under the `claim` a resume took on it. "fork": a new debate
    linked to `parent_id` replays the parent's `history` up to `forked_from_seq` (stored under new
    turn ids) with what it `inherited`."""

    mode: Mode = "new"
    debate_id: str | None = None
    history: tuple[Turn, ...] = ()
    parent_id: str | None = None
    forked_from_seq: int | None = None
    claim: Any = None  # a resume's `store.ResumeClaim`
    inherited: Inheritance = field(default_factory=Inheritance)

    @property
    def resumed(self) -> bool:
        return self.mode == "resume"


class Replay:
    """The history a resumed or forked debate replays, turn by turn, and a fork's inherited messages."""

    def __init__(self, origin: Origin):
        self.origin = origin
        self._reuse: dict[tuple[int, str, str], deque[Turn]] = defaultdict(deque)
        history = sorted(origin.history, key=lambda t: t.seq)
        for turn in history:
            if turn.status == "ok":
                self._reuse[(turn.round, turn.agent, turn.kind)].append(turn)
        self.next_seq = max((t.seq for t in history), default=-1) + 1
        self._unreplayed = {t.seq for t in history if t.status == "ok"}  # history turns not reused yet
        self._messages = deque(sorted(origin.inherited.messages, key=lambda m: m[0]))

    def take(self, rnd: int, agent: str, kind: str) -> Turn | None:
        """The history's next turn of `agent` and `kind` in round `rnd`, or None (a fork's gets a new id)."""
        old = self._reuse.get((rnd, agent, kind))
        if not old:
            return None
        turn = old.popleft()
        self._unreplayed.discard(turn.seq)
        if self.origin.mode == "fork":  # a fork stores its inherited history under new ids
            turn = Turn.from_dict({**turn.to_dict(), "id": uuid.uuid4().hex})
        return turn

    def order(self, rnd: int, order: list[str]) -> list[str]:
        """Round `rnd`'s speaking order: a fork's inherited round keeps its parent's order."""
        inherited = self.origin.inherited.orders.get(rnd)
        if inherited is not None and sorted(inherited) == sorted(order):
            return list(inherited)
        return order

    def deliver(self) -> list[SteeringApplied]:
        """A fork's inherited moderator messages that are due, each where its parent's agents got it:
        at the first step boundary after the inherited turns that came before it were replayed, so
        the same prompts receive it (a replayed turn's prompt takes it too and is discarded). Shown
        and stored with the parent's time, which places it among the inherited turns."""
        due = []
        while self._messages:
            before, message = self._messages[0]
            if any(seq < before for seq in self._unreplayed):
                break
            self._messages.popleft()
            due.append(replace(message))
        return due
