"""Prediction polls: before a debate's decision is shown, a class predicts which answer will win.

A teacher opens a poll on a debate (`open_poll`; the options are the agents' current answers
read with the debate's answer type, see `agent_options`, or free text), students on their own
devices, or the teacher on their behalf, record one prediction each (`predict`: one per voter name
or device token; a second one replaces the first while the poll is open), the teacher closes the
poll (`close`) and reveals it (`reveal`). Predictions close by themselves when the debate decides:
a poll is "decided" (closed because the debate decided) as soon as the store holds a final decision
made after the poll was opened (a live debate), or once the presenter showed the decision of a
replayed debate (`close_on_decision`); a prediction sent after that is refused, whatever page
sends it. `results` gives the number of predictions at any time, but the counts per option and
who predicted right only once the poll is revealed: before that they are not returned at all.

What it must not do: import streamlit, call a model, or write anything when the input is invalid:
every check runs before the write and the error (`PollError`) names the field. Writes go through
the Store's write transaction (`Store._write`, BEGIN IMMEDIATE), so predictions from many threads
or processes at once are neither lost nor doubled.
"""
from __future__ import annotations

import json
import time
import uuid
from typing import Any, Iterable

from .answers import decided_answer, normalize_answer
from .handout import cut_words
from .metrics.report import AnswerReader
from .tasks.answer_types import DebateAnswerType

STATUSES = ("open", "closed", "decided", "revealed")  # decided: closed because the debate decided
CLOSED = ("closed", "decided")
DEFAULT_QUESTION = "Which answer will the debate decide on?"
MAX_OPTIONS = 12
MAX_OPTION_CHARS = 200
MAX_QUESTION_CHARS = 300
MAX_VOTER_CHARS = 80
AGENT_OPTION_CHARS = 60  # a free-text answer as a poll option: a phone shows it on one or two lines


class PollError(ValueError):
    """Refused input or action; `field` names what was wrong (nothing was written)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


def _text(value: Any, field: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PollError(field, "must not be empty")
    text = " ".join(value.split())
    if len(text) > limit:
        raise PollError(field, f"at most {limit} characters (got {len(text)})")
    return text


def clean_options(options: Iterable[Any]) -> list[str]:
    """The options as shown: whitespace collapsed, empty lines dropped, repeats (same normalized
    answer) kept once; refused unless 2..MAX_OPTIONS remain."""
    if isinstance(options, str) or options is None:
        raise PollError("options", "give a list of answers (one per line)")
    kept: dict[str, str] = {}
    for i, option in enumerate(options):
        if isinstance(option, str) and not option.strip():
            continue
        text = _text(option, f"options[{i}]", MAX_OPTION_CHARS)
        kept.setdefault(normalize_answer(text) or text.lower(), text)
    if len(kept) < 2:
        raise PollError("options", "a poll needs at least two different answers")
    if len(kept) > MAX_OPTIONS:
        raise PollError("options", f"at most {MAX_OPTIONS} answers (got {len(kept)})")
    return list(kept.values())


def agent_options(replies: dict[str, str], config: dict | None = None) -> list[str]:
    """The agents' current answers as poll options: each reply read as the metric report reads it
    (`mad_core.metrics.report.AnswerReader` with the debate's answer type: "yes", "no", "B", "91"),
    one option per distinct answer, in the agents' order; a reply the type cannot read is left out;
    a free-text answer is cut at a word to AGENT_OPTION_CHARS. Never raises."""
    kind = DebateAnswerType.of(config)
    reader = AnswerReader(kind.kind, kind.options, None)  # no reference: the poll must not lean on it
    found: list[str] = []
    seen: set[str] = set()  # the reader's keys, and the options as `clean_options` compares them
    for text in replies.values():
        try:
            key, display, _ = reader.read(text if isinstance(text, str) else None)
        except Exception:  # noqa: BLE001 - an odd reply is left out, never a broken poll form
            continue
        option = cut_words(display, AGENT_OPTION_CHARS) if key is not None else ""
        same = {key, normalize_answer(option) or option.lower()}
        if option and not same & seen:
            found.append(option)
        seen |= same
    return found


def _poll_row(store, poll_id: Any) -> dict[str, Any]:
    if not isinstance(poll_id, str) or not poll_id.strip():
        raise PollError("poll_id", "must not be empty")
    rows = list(store.db.query("SELECT * FROM polls WHERE id = ?", [poll_id.strip()]))
    if not rows:
        raise PollError("poll_id", f"no poll {poll_id!r}")
    return _decoded(store, rows[0])


def _decoded(store, row) -> dict[str, Any]:
    """A polls row with its options decoded and its status as it stands: an open poll whose debate
    reached a final decision after the poll was opened is "decided"."""
    row = {**row, "options": json.loads(row["options"])}
    if row["status"] == "open" and list(store.db.query(
            "SELECT 1 FROM decisions WHERE debate_id = ? AND final = 1 AND ts >= ? LIMIT 1",
            [row["debate_id"], row.get("created_at") or 0])):
        row["status"] = "decided"
    return row


def get_poll(store, poll_id: str) -> dict[str, Any] | None:
    """The poll (options decoded), or None when there is none with this id."""
    try:
        return _poll_row(store, poll_id)
    except PollError:
        return None


def polls_of(store, debate_id: str) -> list[dict[str, Any]]:
    """A debate's polls, newest first."""
    rows = store.db.query("SELECT * FROM polls WHERE debate_id = ? ORDER BY created_at DESC, rowid DESC",
                          [debate_id])
    return [_decoded(store, row) for row in rows]


def open_poll(store, debate_id: str, options: Iterable[Any], question: str = DEFAULT_QUESTION) -> str:
    """Open a poll on a stored debate; returns its id (short: it goes into a URL students type)."""
    if not isinstance(debate_id, str) or store.get_debate(debate_id) is None:
        raise PollError("debate_id", f"no debate {debate_id!r}")
    question = _text(question, "question", MAX_QUESTION_CHARS)
    options = clean_options(options)
    poll_id = uuid.uuid4().hex[:10]
    with store._write():
        store.db["polls"].insert({"id": poll_id, "debate_id": debate_id, "question": question,
                                  "options": json.dumps(options, ensure_ascii=False), "status": "open",
                                  "created_at": time.time()})
    return poll_id


def predict(store, poll_id: str, voter: str, option: str) -> None:
    """Record `voter`'s prediction; a voter who predicted before changes their prediction."""
    voter = _text(voter, "voter", MAX_VOTER_CHARS)
    if not isinstance(option, str):
        raise PollError("option", "must be one of the poll's answers")
    with store._write():  # the status is read in the same transaction as the write: a close wins cleanly
        poll = _poll_row(store, poll_id)
        if option not in poll["options"]:
            raise PollError("option", f"{option!r} is not one of the poll's answers")
        if poll["status"] == "decided":
            raise PollError("poll_id", "the debate has decided: predictions are no longer taken")
        if poll["status"] != "open":
            raise PollError("poll_id", f"the poll is {poll['status']}: predictions are no longer taken")
        store.db.execute(
            "INSERT INTO predictions (poll_id, voter, option, at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(poll_id, voter) DO UPDATE SET option = excluded.option, at = excluded.at",
            [poll["id"], voter, option, time.time()])


def prediction_of(store, poll_id: str, voter: str) -> str | None:
    """The option `voter` predicted in this poll, or None."""
    rows = list(store.db.query("SELECT option FROM predictions WHERE poll_id = ? AND voter = ?",
                               [poll_id, " ".join(str(voter or "").split())]))
    return rows[0]["option"] if rows else None


def _set_status(store, poll_id: str, status: str, allowed_from: tuple[str, ...],
                already: tuple[str, ...] = ()) -> None:
    with store._write():
        poll = _poll_row(store, poll_id)
        if poll["status"] in (status, *already):
            return
        if poll["status"] not in allowed_from:
            raise PollError("poll_id", f"the poll is {poll['status']}: it cannot be {status}")
        store.db.execute("UPDATE polls SET status = ? WHERE id = ?", [status, poll["id"]])


def close(store, poll_id: str) -> None:
    """Stop taking predictions (the counts stay hidden)."""
    _set_status(store, poll_id, "closed", ("open",), already=CLOSED)


def close_on_decision(store, poll_id: str) -> None:
    """The decision is shown (a replay reached it): stop taking predictions, as "decided"."""
    _set_status(store, poll_id, "decided", ("open",), already=("closed", "revealed"))


def reveal(store, poll_id: str) -> None:
    """Close the poll if it is open and show its counts and who predicted the decision."""
    _set_status(store, poll_id, "revealed", ("open", *CLOSED))


def decision_answer(store, debate_id: str) -> str | None:
    """The debate's decided answer as the decision card reads it (its final answer), or None."""
    for row in reversed(store.decisions(debate_id)):
        if row.get("final"):
            return decided_answer(row["answer"], row.get("details"))
    return None


def matches(option: str, answer: str | None) -> bool:
    """Does a predicted option name the decided answer (same normalized answer)?"""
    return answer is not None and normalize_answer(option) == normalize_answer(answer)


def results(store, poll_id: str) -> dict[str, Any]:
    """{"poll", "total", "voters"} always; once revealed also "counts" (option -> n, in option
    order), "decision" (None when the debate has none), "predictions" ([{voter, option, right}])
    and "right" (the voters who predicted the decision). Hidden parts are None before the reveal."""
    poll = _poll_row(store, poll_id)
    rows = list(store.db.query("SELECT voter, option, at FROM predictions WHERE poll_id = ? ORDER BY at, voter",
                               [poll["id"]]))
    out: dict[str, Any] = {"poll": poll, "total": len(rows), "voters": sorted(r["voter"] for r in rows),
                           "counts": None, "decision": None, "predictions": None, "right": None}
    if poll["status"] != "revealed":
        return out
    decision = decision_answer(store, poll["debate_id"])
    counts = {option: 0 for option in poll["options"]}
    for row in rows:
        counts[row["option"]] = counts.get(row["option"], 0) + 1
    predictions = [{"voter": r["voter"], "option": r["option"], "right": matches(r["option"], decision)}
                   for r in rows]
    out.update(counts=counts, decision=decision, predictions=predictions,
               right=sorted(p["voter"] for p in predictions if p["right"]))
    return out
