"""Events <-> rows: the one place that knows how a debate's events are stored and read back.

Writing: `EVENT_WRITERS` maps each recorded event type to the function that writes its rows
(run by `Store.record` inside its transaction); `encode` turns a row into what SQLite stores
(JSON columns as text, lone surrogates replaced: `clean_text`). Reading: `decode` and
`turn_from_row` undo that, and `stored_events` re-creates a stored debate's events in their
original order, so folding them gives the view the live events gave
(tests/unit/test_stored_equals_live.py checks it).

Any text can be stored: lone UTF-16 surrogates (which a JSON escape from an API can produce)
are replaced by U+FFFD before writing (`clean_text`); NUL characters are stored as they are.
"""
from __future__ import annotations

import dataclasses
import json
import os
import socket
from functools import partial
from typing import Any, Callable

from ..events import (DISCUSSION_KINDS, ChallengeResult, DebateFinished, DebateStarted, DecisionAttempted,
                      DecisionReached, ErrorOccurred, Event, PersonasAssigned, RoundStarted, SteeringApplied, Turn,
                      TurnFinished, TurnStarted, VoteCast)
from ..text import clean_text

# Columns stored as JSON text, and columns stored as 0/1 that read back as bools.
JSON_COLUMNS: dict[str, tuple[str, ...]] = {
    "debates": ("config",),
    "turns": ("prompt",),
    "votes": ("ballot",),
    "decisions": ("scores", "solutions", "solution_agents", "details"),
    "steering": ("targets",),
    "rounds": ("speakers", "steps"),
}
BOOL_COLUMNS: dict[str, tuple[str, ...]] = {
    "turns": ("agreement",),
    "votes": ("valid",),
    "decisions": ("reached", "final", "forced"),
    "challenges": ("agrees",),
}


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    return value


def encode(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row as stored: text cleaned (`clean_text`), JSON columns as JSON text."""
    row = {key: _clean_value(value) for key, value in row.items()}
    for column in JSON_COLUMNS.get(table, ()):
        if column in row:
            row[column] = clean_text(json.dumps(row[column], ensure_ascii=False))
    return row


def decode(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """A stored row as read: JSON columns parsed, 0/1 columns as bools."""
    row = dict(row)
    for column in JSON_COLUMNS.get(table, ()):
        if row.get(column) is not None:
            row[column] = json.loads(row[column])
    for column in BOOL_COLUMNS.get(table, ()):
        if row.get(column) is not None:
            row[column] = bool(row[column])
    return row


def turn_from_row(row: dict[str, Any]) -> Turn:
    row = decode("turns", row)
    row["id"] = row.pop("turn_id")
    return Turn.from_dict(row)


def fields_of(obj: Any) -> dict[str, Any]:
    """A dataclass's fields as a row, shallow: unlike `dataclasses.asdict` the lists and dicts are
    not deep-copied, since they are only encoded (a turn's prompt is every message it was sent);
    a nested dataclass becomes a dict."""
    row = {}
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        row[field.name] = (dataclasses.asdict(value) if dataclasses.is_dataclass(value) and not isinstance(value, type)
                           else value)
    return row


def insert_turn(store: Any, debate_id: str, turn: Turn) -> None:
    """Store one turn; a turn recorded again (e.g. re-run after an interruption) replaces the old row."""
    row = fields_of(turn)
    row["turn_id"] = row.pop("id")
    store.insert("turns", {**row, "debate_id": debate_id}, replace=True)


# ----- event -> rows (each runs inside Store.record's transaction) ----------------------------
def _on_started(store: Any, event: DebateStarted, debate_id: str) -> None:
    if store.get_debate(debate_id) is None:
        store.create_debate(debate_id, event.config, parent_id=event.parent_id)
    elif event.resumed:
        store.update_debate(debate_id, status="running", pid=os.getpid(), host=socket.gethostname(), finished_at=None)
    store.current_debate_id = debate_id


def _on_round(store: Any, event: RoundStarted, debate_id: str) -> None:
    store.insert("rounds", {"debate_id": debate_id, "round": event.round, "speakers": list(event.order),
                            "topic": event.topic, "steps": event.steps, "ts": event.ts})


def _on_personas(store: Any, event: PersonasAssigned, debate_id: str) -> None:
    for label, persona in event.personas.items():
        store.db["agents"].upsert({"debate_id": debate_id, "label": label, "persona": persona},
                                  pk=("debate_id", "label"))


def _on_turn(store: Any, event: TurnFinished, debate_id: str) -> None:
    insert_turn(store, debate_id, event.turn)


def _insert_event(table: str, store: Any, event: Event, debate_id: str, **extra: Any) -> None:
    store.insert(table, {**fields_of(event), **extra, "debate_id": debate_id})


def _on_decision_reached(store: Any, event: DecisionReached, debate_id: str) -> None:
    _insert_event("decisions", store, event, debate_id, reached=True, final=True)
    store.update_debate(debate_id, answer=event.answer)


def _on_finished(store: Any, event: DebateFinished, debate_id: str) -> None:
    values: dict[str, Any] = {"status": event.status, "reason": event.reason, "finished_at": event.ts}
    if event.answer is not None:
        values["answer"] = event.answer
    store.update_debate(debate_id, **values)


EVENT_WRITERS: dict[type[Event], Callable[..., None]] = {
    DebateStarted: _on_started,
    PersonasAssigned: _on_personas,
    RoundStarted: _on_round,
    TurnFinished: _on_turn,
    VoteCast: partial(_insert_event, "votes"),
    DecisionAttempted: partial(_insert_event, "decisions", final=False),
    DecisionReached: _on_decision_reached,
    ChallengeResult: partial(_insert_event, "challenges"),
    SteeringApplied: partial(_insert_event, "steering"),
    ErrorOccurred: partial(_insert_event, "errors"),
    DebateFinished: _on_finished,
}


# ----- rows -> events ------------------------------------------------------------------------
def stored_events(store: Any, debate_id: str) -> list[Event]:
    """The events of a stored debate, re-created from its rows in their original order.

    Folding them gives the view the live events gave (turns, votes, decisions, errors,
    steering, round orders, how it ended); tests/unit/test_stored_equals_live.py checks it."""
    record = store.get_debate(debate_id)
    if record is None:
        raise KeyError(f"no debate {debate_id!r}")
    events: list[Event] = [DebateStarted(debate_id, record["config"], parent_id=record.get("parent_id"),
                                         forked_from_seq=record.get("forked_from_seq"),
                                         ts=record.get("created_at") or 0.0)]
    personas = {a["label"]: a.get("persona") or "" for a in store.agents(debate_id)}
    events.append(PersonasAssigned(personas, ts=events[0].ts))
    timed: list[Event] = [RoundStarted(row["round"], row.get("speakers") or [], topic=row.get("topic"),
                                       steps=row.get("steps"), ts=row.get("ts") or 0.0)
                          for row in store.rounds(debate_id)]
    seen_rounds = {event.round for event in timed}
    for turn in store.turns(debate_id):
        if turn.round not in seen_rounds and turn.kind in DISCUSSION_KINDS:  # stored before orders were
            seen_rounds.add(turn.round)
            timed.append(RoundStarted(turn.round, [], ts=turn.started_at - 1e-6))
        timed.append(TurnStarted(turn.id, turn.round, turn.agent, turn.kind, turn.model, turn.prompt,
                                 ts=turn.started_at))
        timed.append(TurnFinished(turn, ts=turn.finished_at))
    for row in store.votes(debate_id):
        timed.append(VoteCast(row["round"], row["agent"], row["protocol"], row["raw"], row.get("ballot"),
                              bool(row["valid"]), row.get("reason"), row.get("attempt") or 1, ts=row.get("ts") or 0.0))
    for row in store.decisions(debate_id):
        common = dict(round=row["round"], protocol=row["protocol"], scores=row.get("scores") or [],
                      solutions=row.get("solutions") or [], solution_agents=row.get("solution_agents") or [],
                      ts=row.get("ts") or 0.0)
        if row.get("final"):  # the debate's decision; other rows are attempts
            timed.append(DecisionReached(answer=row["answer"], winner_agent=row.get("winner_agent"),
                                         winner_index=row.get("winner_index"), forced=bool(row.get("forced")),
                                         fallback=row.get("fallback"), details=row.get("details") or {}, **common))
        else:
            timed.append(DecisionAttempted(reached=bool(row.get("reached")), reason=row.get("reason") or "", **common))
    for row in store.steering(debate_id):
        timed.append(SteeringApplied(row["action"], row.get("targets"), row.get("message"),
                                     requested_at=row.get("requested_at"), ts=row.get("ts") or 0.0))
    for row in store.challenges(debate_id):
        timed.append(ChallengeResult(row["agent"], row.get("agrees"), row.get("new_answer"), ts=row.get("ts") or 0.0))
    for row in store.errors(debate_id):
        timed.append(ErrorOccurred(row["message"], row.get("agent"), row.get("turn_id"), ts=row.get("ts") or 0.0))
    timed.sort(key=lambda e: e.ts)
    events.extend(timed)
    if record.get("status") != "running":
        events.append(DebateFinished(record["status"], record.get("answer"), record.get("reason") or "",
                                     ts=record.get("finished_at") or (timed[-1].ts if timed else events[0].ts)))
    return events
