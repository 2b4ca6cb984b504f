"""Seats: a person speaks for an agent of a running debate (issue 23, item 3), and the seat's code.

An agent whose model is `config.PERSON` is a seat. When its turn comes the engine's calls
(`calls.Calls`) hand `SeatRegistry.await_reply` exactly the messages a model in that place would be
sent; the seat is then "waiting" and shows them to its holder (the teacher on the Debate page, or a
student on a phone who typed the seat's code: `madlab_ui.seat`). The calling thread waits for the
holder's `reply` on a thread of its own, never in a model call slot, and gives up at the seat's time
limit ("timed_out": the calls skip the turn or let the stand-in model speak), when the debate is
stopped, or when a decision is forced during a discussion turn (a ballot or an extraction asked for by
the decision itself is still waited for; Stop ends that wait too). While the debate is paused the time
limit does not run, and a reply sent meanwhile is kept and becomes the turn once the debate resumes.

States of a seat: "idle" (not its turn yet), "waiting", "answered", "timed_out", "interrupted"
(stopped or cut by a decision forced now) and "closed" (its debate ended).
One device holds a seat at a time (`claim`): a second device is refused while the first holds it; the
holder or the teacher lets it go (`release`). `reply` is refused with a `SeatError` naming why, and
nothing changes, when the seat is unknown, the device does not hold it, it is not waiting (the time limit
passed: the message says so), the reply answers a turn that is over, or the text is empty or too long.

Codes: `seat_code(store, seat_id)` is the seat's join code (`join_codes`, kind "seat"), issued once.
The migration of this module (m020) adds the `seat` column of the turns (`events.Turn.seat`).

What it must not do: import streamlit, call a model or the network, write anything for a refused
reply or claim, or hold a model call slot (the caller runs `await_reply` on a thread of its own).
"""
from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlite_utils import Database

from . import join_codes
from .events import DISCUSSION_KINDS
from .store.migrations import feature_migrations
from .text import clean_text

MIGRATIONS = feature_migrations()
STATES = ("idle", "waiting", "answered", "timed_out", "interrupted", "closed")
MAX_REPLY_CHARS = 20_000
MAX_NICKNAME_CHARS = 24  # a nickname on a phone: the same bound as /join's (classroom takes it from here)
POLL_S = 0.05  # how often a waiting turn looks at the debate's steering flags and the clock
KEEP_ENDED = 32  # ended debates whose seats stay readable (a late phone is told the debate ended)
# What a short reply must look like, by its phase (`protocols.schemas.ReplyFormat.phase`): shown above the box.
FORMAT_HINTS = {
    "ballot": "Your ballot, in the form the last message asks for: the number of the solution you vote for "
              "(e.g. 2), a ranking such as 2 3 1, or points such as {\"1\": 6, \"2\": 4}.",
    "agreement": "AGREE or DISAGREE with the proposal, then one short reason.",
    "extraction": "Your final answer only, in a few words (no reasoning).",
    "choice": "The label of the participant you choose.",
    "verdict": "Your decision, as the last message asks.",
}
_WHY_NOT_WAITING = {
    "idle": "it is not this seat's turn yet: wait until the box asks for a reply",
    "answered": "this turn was already answered",
    "timed_out": "too late: the seat's time limit passed before the reply came, so the turn went on without it",
    "interrupted": "the turn was cut: the debate was stopped or a decision was forced",
    "closed": "the debate has ended",
}


@MIGRATIONS()
def m020_turn_seats(db: Database) -> None:
    """A seat's turns are marked (Turn.seat: "person", "stand-in" or "skipped"; null for a model's)."""
    turns = db.table("turns")
    if "seat" not in turns.columns_dict:
        turns.add_column("seat", str)


class SeatError(ValueError):
    """A refused claim or reply; `field` names what was wrong (nothing changed), `message` says why."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message


@dataclass
class Seat:
    """One seat: who sits in it, and the turn it waits for (a copy when read from the registry).

    `deadline` and `seconds_left` are on the registry's clock; `messages` are exactly what the agent
    would be sent; `expects` is the phase of a short reply (a ballot, an agreement), None for free text."""

    seat_id: str
    debate_id: str
    agent: str
    time_limit_s: float
    state: str = "idle"
    turn_id: str | None = None
    kind: str | None = None
    messages: list[dict[str, str]] = field(default_factory=list)
    expects: str | None = None
    deadline: float | None = None
    paused: bool = False
    holder: str | None = None
    nickname: str | None = None
    version: int = 0  # grows at every change (a page redraws when it moved)
    reply: str | None = None
    question: str = ""  # the debate's question (the messages hold it too, as the agent reads it)

    def seconds_left(self, now: float) -> float | None:
        """Seconds until the time limit (None when not waiting; the full remainder while paused)."""
        if self.state != "waiting" or self.deadline is None:
            return None
        return max(0.0, self.deadline - now)

    @property
    def format_hint(self) -> str | None:
        return FORMAT_HINTS.get(self.expects or ("ballot" if self.kind == "vote" else ""))


@dataclass(frozen=True)
class SeatOutcome:
    """How a wait ended: "answered" (`text` is the reply), "timed_out", "stopped" or "forced"."""

    state: str
    text: str = ""
    nickname: str | None = None
    waited_s: float = 0.0


class SeatRegistry:
    """The seats of the debates running in this process (thread-safe; see the module docstring).

    `clock`: seconds, monotonic (a test hands a fake one and calls `wake` after moving it)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._cond = threading.Condition()
        self._seats: dict[str, Seat] = {}
        self._debates: dict[str, list[str]] = {}  # debate id -> its seat ids, oldest debate first
        self._ended: list[str] = []

    def now(self) -> float:
        return self._clock()

    # ----- the engine's side --------------------------------------------------------------------
    def open_debate(self, debate_id: str, agents: Iterable[tuple[int, str, float]],
                    question: str = "") -> dict[str, str]:
        """Open a seat for each (position, label, time limit) of a debate's person agents; returns
        label -> seat id (`<debate id>.<position>`, the same when the debate is resumed)."""
        opened: dict[str, str] = {}
        with self._cond:
            for position, label, limit in agents:
                seat_id = f"{debate_id}.{position}"
                old = self._seats.get(seat_id)
                seat = Seat(seat_id, debate_id, label, float(limit), question=question)
                if old is not None:  # resumed: whoever held it keeps it
                    seat.holder, seat.nickname, seat.version = old.holder, old.nickname, old.version + 1
                self._seats[seat_id] = seat
                opened[label] = seat_id
            self._debates[debate_id] = list(opened.values())
            if debate_id in self._ended:
                self._ended.remove(debate_id)
            self._cond.notify_all()
        return opened

    def await_reply(self, seat_id: str, turn_id: str, kind: str, messages: list[dict[str, str]], controller: Any,
                    expects: str | None = None) -> SeatOutcome:
        """Publish the seat as waiting with `messages` and block until its reply, its time limit, a stop,
        or (in a discussion turn) a decision forced now. `controller`: the debate's (`stopped`, `paused`,
        `force_requested`). Run it on a thread that holds no model call slot."""
        with self._cond:
            seat = self._seats[seat_id]
            start = self._clock()
            seat.state, seat.turn_id, seat.kind, seat.expects = "waiting", turn_id, kind, expects
            seat.messages = [dict(m) for m in messages]
            seat.deadline, seat.paused, seat.reply = start + seat.time_limit_s, False, None
            self._changed(seat)
            paused_at = start
            while True:
                now = self._clock()
                if controller.stopped:
                    return self._end(seat, "interrupted", SeatOutcome("stopped", waited_s=now - start))
                if controller.force_requested and kind in DISCUSSION_KINDS:
                    return self._end(seat, "interrupted", SeatOutcome("forced", waited_s=now - start))
                if controller.paused and not seat.paused:
                    seat.paused, paused_at = True, now
                    self._changed(seat)
                elif not controller.paused and seat.paused:  # the time limit did not run while paused
                    seat.deadline = (seat.deadline or now) + (now - paused_at)
                    seat.paused = False
                    self._changed(seat)
                if not seat.paused and seat.state == "answered":
                    return SeatOutcome("answered", seat.reply or "", seat.nickname, now - start)
                if not seat.paused and now >= (seat.deadline or now):
                    return self._end(seat, "timed_out", SeatOutcome("timed_out", waited_s=now - start))
                self._cond.wait(POLL_S)

    def _end(self, seat: Seat, state: str, outcome: SeatOutcome) -> SeatOutcome:
        seat.state, seat.paused = state, False
        self._changed(seat)
        return outcome

    def close_debate(self, debate_id: str) -> None:
        """The debate ended: its seats are closed (kept readable for the `KEEP_ENDED` latest ended debates)."""
        with self._cond:
            for seat_id in self._debates.get(debate_id, []):
                seat = self._seats[seat_id]
                seat.state, seat.paused = "closed", False
                self._changed(seat)
            if debate_id in self._debates and debate_id not in self._ended:
                self._ended.append(debate_id)
            while len(self._ended) > KEEP_ENDED:
                for seat_id in self._debates.pop(self._ended.pop(0), []):
                    self._seats.pop(seat_id, None)

    # ----- the people's side --------------------------------------------------------------------
    def get(self, seat_id: str) -> Seat | None:
        with self._cond:
            seat = self._seats.get(seat_id)
            return copy.deepcopy(seat) if seat is not None else None

    def seats_of(self, debate_id: str) -> list[Seat]:
        """A debate's seats, in its agents' order (copies)."""
        with self._cond:
            return [copy.deepcopy(self._seats[s]) for s in self._debates.get(debate_id, []) if s in self._seats]

    def claim(self, seat_id: str, device: str, nickname: str) -> Seat:
        """`device` holds the seat (again: a reload keeps it). Refused while another device holds it."""
        nickname = clean_text(nickname if isinstance(nickname, str) else "").strip()
        if not nickname:
            raise SeatError("nickname", "type a nickname first")
        if len(nickname) > MAX_NICKNAME_CHARS:
            raise SeatError("nickname", f"at most {MAX_NICKNAME_CHARS} characters, got {len(nickname)}")
        with self._cond:
            seat = self._known(seat_id, device)
            if seat.state == "closed":
                raise SeatError("seat", _WHY_NOT_WAITING["closed"])
            if seat.holder is not None and seat.holder != device:
                raise SeatError("seat", f"{seat.nickname or 'someone'} holds this seat: one person at a time "
                                        "(the teacher can free it)")
            seat.holder, seat.nickname = device, nickname
            self._changed(seat)
            return copy.deepcopy(seat)

    def release(self, seat_id: str) -> None:
        """Nobody holds the seat any more (the teacher freed it, or its holder left it)."""
        with self._cond:
            seat = self._seats.get(seat_id)
            if seat is None:
                raise SeatError("seat", "no such seat: its debate ended or the app was restarted")
            seat.holder, seat.nickname = None, None
            self._changed(seat)

    def reply(self, seat_id: str, device: str, text: str, turn_id: str | None = None) -> Seat:
        """Hand `text` to the waiting turn. `turn_id`: the turn the person saw (refused when that turn is
        over). Refused (SeatError, nothing changes) as the module docstring says."""
        with self._cond:
            seat = self._known(seat_id, device)
            if seat.holder != device:
                raise SeatError("device", "this device does not hold the seat: take the seat first"
                                if seat.holder is None else f"{seat.nickname or 'someone'} holds this seat")
            if seat.state == "waiting" and not seat.paused and self._clock() >= (seat.deadline or 0.0):
                raise SeatError("seat", _WHY_NOT_WAITING["timed_out"])
            if seat.state != "waiting" or (turn_id is not None and turn_id != seat.turn_id):
                late = seat.state in ("waiting", "idle") and turn_id is not None
                raise SeatError("seat", _WHY_NOT_WAITING["timed_out" if late else seat.state])
            body = clean_text(text if isinstance(text, str) else "")
            if not body.strip():
                raise SeatError("text", "write the turn before sending it")
            if len(body) > MAX_REPLY_CHARS:
                raise SeatError("text", f"at most {MAX_REPLY_CHARS:,} characters, got {len(body):,}")
            seat.state, seat.reply = "answered", body
            self._changed(seat)
            return copy.deepcopy(seat)

    def wait_for(self, seat_id: str, predicate: Callable[[Seat], bool], timeout: float) -> Seat | None:
        """Block until the seat satisfies `predicate` (a copy of it), or None after `timeout` seconds."""
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                seat = self._seats.get(seat_id)
                if seat is not None and predicate(seat):
                    return copy.deepcopy(seat)
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def wake(self) -> None:
        """Let every wait look at the clock now (a test moved a fake clock)."""
        with self._cond:
            self._cond.notify_all()

    def _known(self, seat_id: str, device: str) -> Seat:
        if not isinstance(device, str) or not device.strip():
            raise SeatError("device", "this browser has no device id: reload the page")
        seat = self._seats.get(seat_id) if isinstance(seat_id, str) else None
        if seat is None:
            raise SeatError("seat", "no such seat: its debate ended or the app was restarted")
        return seat

    def _changed(self, seat: Seat) -> None:
        seat.version += 1
        self._cond.notify_all()


REGISTRY = SeatRegistry()  # the seats of this process's debates (the app's server)


def seat_code(store: Any, seat_id: str) -> str:
    """The seat's join code (issued the first time, the same after)."""
    return join_codes.issue(store, "seat", seat_id)


def retire_codes(store: Any, seat_ids: Iterable[str]) -> None:
    """The codes of these seats admit nobody any more (their debate ended)."""
    for seat_id in seat_ids:
        join_codes.retire(store, "seat", seat_id)
