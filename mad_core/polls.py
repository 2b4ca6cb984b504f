"""Prediction polls: before a debate's decision is shown, a class predicts which answer will win.

A teacher opens a poll on a debate (`open_poll`; the options are the agents' current answers
read with the debate's answer type, see `agent_options`, or free text, and "Something else" when
asked), students on their own devices, or the teacher on their behalf, record one prediction each
(`predict`), the teacher closes the poll (`close`) and reveals it (`reveal`). Predictions close by
themselves when the debate decides: a poll is "decided" (closed because the debate decided) as soon
as the store holds a final decision made after the poll was opened (a live debate), or once the
presenter showed the decision of a replayed debate (`close_on_decision`); a prediction sent after
that is refused, whatever page sends it. `results` gives the number of predictions at any time, but
the counts per option and who predicted right only once the poll is revealed: before that they are
not returned at all (`debate_results`, for the handout made after class, has them all).

Who a voter is: a DEVICE, not a name. A student's page sends its device token (`valid_device`), and
a device that predicts again changes its own prediction; the name typed beside it is only a label
(`clean_name`: NFKC, invisible and control characters removed, refused when nothing visible is
left or when it is not valid text), so two devices never overwrite each other, whatever names
they type (the results tell equal names apart: "Ada", "Ada (2)"). Only a prediction the teacher
records on a student's behalf (no device) is known by its name.

Who predicted right (`right_options`): the listed options that name the decided answer (same
normalized answer); when none does, "Something else" (`SOMETHING_ELSE`) is right; the teacher may
mark another option right (`mark_right`), but never "Something else" when the decision is one of
the listed answers.

One poll of a debate takes predictions at a time (`open_poll` refuses a second while one is open), so a
teacher opens one before the debate and one after any round (each poll's `round`). Every poll gets a join
code when it opens (`mad_core.join_codes`, kind "poll": what a student types on /join); the code is retired
when the poll stops taking predictions (closed, decided, revealed; `retire_codes` for polls a live debate's
decision closed in the store), so a closed poll's code admits nobody.

What it must not do: import streamlit, call a model, or write anything when the input is invalid:
every check runs before the write and the error (`PollError`) names the field. Its tables (`polls`,
`predictions`) come with their own migrations (m005, m007, below). Writes go through
the Store's write transaction (`Store.transaction`, BEGIN IMMEDIATE), so predictions from many threads
or processes at once are neither lost nor doubled.
"""
from __future__ import annotations

import json
import re
import time
import unicodedata
import uuid
from typing import Any, Iterable

from sqlite_utils import Database

from . import join_codes
from .answers import decided_answer, normalize_answer
from .metrics.report import AnswerReader
from .shorten import cut_words
from .store.migrations import feature_migrations
from .tasks.answer_types import DebateAnswerType

STATUSES = ("open", "closed", "decided", "revealed")  # decided: closed because the debate decided
CLOSED = ("closed", "decided")
DEFAULT_QUESTION = "Which answer will the debate decide on?"
MAX_OPTIONS = 12
MAX_OPTION_CHARS = 200
MAX_QUESTION_CHARS = 300
MAX_VOTER_CHARS = 80
SOMETHING_ELSE = "Something else"  # the option for a decision none of the listed answers names
DEVICE = re.compile(r"[A-Za-z0-9_-]{16,64}")  # a student's device token (madlab_ui.poll keeps it in the URL)
NAME_DEVICE = "name:"  # the identity of a voter without a device (recorded by the teacher): "name:<name>"
# Removed from names: control (Cc), format (Cf: zero-width space and joiners, bidi marks, soft hyphen)
# and private-use (Co) characters; tabs, line and paragraph separators read as spaces.
_INVISIBLE = frozenset(("Cc", "Cf", "Co"))
_SURROGATE = re.compile("[\ud800-\udfff]")
AGENT_OPTION_CHARS = 60  # a free-text answer as a poll option: a phone shows it on one or two lines
# The polls' tables, recorded with the store's migrations (see mad_core/store/migrations.py).
MIGRATIONS = feature_migrations()


@MIGRATIONS()
def m005_polls(db: Database) -> None:
    """Prediction polls of a debate (mad_core/polls.py): one prediction per voter and poll."""
    db["polls"].create({"id": str, "debate_id": str, "question": str, "options": str, "status": str,
                        "created_at": float}, pk="id", not_null={"debate_id", "question", "options", "status"})
    db["polls"].create_index(["debate_id"])
    db["predictions"].create({"poll_id": str, "voter": str, "option": str, "at": float},
                             pk=("poll_id", "voter"), not_null={"option"})


@MIGRATIONS()
def m007_poll_devices(db: Database) -> None:
    """Poll voters are devices (mad_core/polls.py): one prediction per poll and `device` (a token the
    student's page keeps; a name is only its label in `voter`), so two students who type one name
    never overwrite each other. Older rows keep their name as their identity (device "name:<voter>").
    Polls gain the debate round they were opened in and the option the teacher marked right."""
    db.execute("CREATE TABLE predictions_m007 (poll_id TEXT NOT NULL, device TEXT NOT NULL, voter TEXT, "
               "option TEXT NOT NULL, at FLOAT, PRIMARY KEY (poll_id, device))")
    db.execute("INSERT INTO predictions_m007 (poll_id, device, voter, option, at) "
               "SELECT poll_id, 'name:' || voter, voter, option, at FROM predictions")
    db.execute("DROP TABLE predictions")
    db.execute("ALTER TABLE predictions_m007 RENAME TO predictions")
    db["polls"].add_column("round", int)
    db["polls"].add_column("marked_right", str)


class PollError(ValueError):
    """Refused input or action; `field` names what was wrong (nothing was written), `message` why."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _text(value: Any, field: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PollError(field, "must not be empty")
    _check_unicode(value, field)
    text = " ".join(value.split())
    if len(text) > limit:
        raise PollError(field, f"at most {limit} characters (got {len(text)})")
    return text


def _check_unicode(value: str, field: str) -> None:
    """PollError(field) when `value` holds a lone surrogate: no UTF-8 text (nor SQLite) can hold it."""
    broken = _SURROGATE.search(value)
    if broken:
        raise PollError(field, f"is not valid text (a broken character at position {broken.start() + 1}): "
                               "type it again")


def clean_name(value: Any, field: str = "voter") -> str:
    """A voter's name as shown: NFKC-normalised (a full-width "Ａｄａ" is "Ada"), invisible, control
    and private-use characters removed, whitespace folded; PollError(field) when it is not text,
    holds a broken character (a lone surrogate), has nothing visible left, or is too long."""
    if not isinstance(value, str):
        raise PollError(field, "must be text")
    _check_unicode(value, field)
    name = unicodedata.normalize("NFKC", value)
    name = "".join(" " if char.isspace() else char for char in name
                   if char.isspace() or unicodedata.category(char) not in _INVISIBLE)
    name = " ".join(name.split())
    if not name:
        raise PollError(field, "has no visible characters" if value.strip() else "must not be empty")
    if len(name) > MAX_VOTER_CHARS:
        raise PollError(field, f"at most {MAX_VOTER_CHARS} characters (got {len(name)})")
    return name


def valid_device(token: Any) -> bool:
    """Is `token` a device token a student's page may send (letters, digits, _ and -; 16 to 64)?"""
    return isinstance(token, str) and DEVICE.fullmatch(token) is not None


def is_something_else(option: Any) -> bool:
    """Is `option` the poll's "Something else" (compared ignoring case, spaces and end punctuation)?"""
    return isinstance(option, str) and " ".join(option.casefold().split()).strip(" .!?…") == "something else"


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
    found: list[str] = []
    seen: set[str] = set()  # the reader's keys, and the options as `clean_options` compares them
    for key, option in _read_replies(replies, config).values():
        same = {key, normalize_answer(option) or option.lower()}
        if option and not same & seen:
            found.append(option)
        seen |= same
    return found


def agent_answers(replies: dict[str, str], config: dict | None = None) -> dict[str, str]:
    """Each agent's answer as `agent_options` reads it (agent -> "yes", "B", "91"), for the agents whose
    reply the debate's answer type can read. Never raises."""
    return {agent: option for agent, (_, option) in _read_replies(replies, config).items() if option}


def _read_replies(replies: dict[str, str], config: dict | None) -> dict[str, tuple[Any, str]]:
    """agent -> (the reader's key, the answer as an option: cut at a word; "" when unreadable)."""
    kind = DebateAnswerType.of(config)
    reader = AnswerReader(kind.kind, kind.options, None)  # no reference: the poll must not lean on it
    read: dict[str, tuple[Any, str]] = {}
    for agent, text in replies.items():
        try:
            key, display, _ = reader.read(text if isinstance(text, str) else None)
        except Exception:  # noqa: BLE001 - an odd reply is left out, never a broken poll form
            continue
        read[agent] = (key, cut_words(display, AGENT_OPTION_CHARS) if key is not None else "")
    return read


def _poll_row(store, poll_id: Any) -> dict[str, Any]:
    if not isinstance(poll_id, str) or not poll_id.strip():
        raise PollError("poll_id", "must not be empty")
    rows = store.query("SELECT * FROM polls WHERE id = ?", [poll_id.strip()])
    if not rows:
        raise PollError("poll_id", f"no poll {poll_id!r}")
    return _decoded(store, rows[0])


def _decoded(store, row) -> dict[str, Any]:
    """A polls row with its options decoded and its status as it stands: an open poll whose debate
    reached a final decision after the poll was opened is "decided"."""
    row = {**row, "options": json.loads(row["options"])}
    if row["status"] == "open" and store.query(
            "SELECT 1 FROM decisions WHERE debate_id = ? AND final = 1 AND ts >= ? LIMIT 1",
            [row["debate_id"], row.get("created_at") or 0]):
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
    rows = store.query("SELECT * FROM polls WHERE debate_id = ? ORDER BY created_at DESC, rowid DESC",
                       [debate_id])
    return [_decoded(store, row) for row in rows]


def open_poll(store, debate_id: str, options: Iterable[Any], question: str = DEFAULT_QUESTION, *,
              something_else: bool = False, round: int | None = None) -> str:
    """Open a poll on a stored debate; returns its id (short: it goes into a URL students type).

    `something_else`: "Something else" is offered after the listed options (unless one of them is
    it already); `round`: the debate round on the screen when it was opened (the handout says so)."""
    if not isinstance(debate_id, str) or store.get_debate(debate_id) is None:
        raise PollError("debate_id", f"no debate {debate_id!r}")
    question = _text(question, "question", MAX_QUESTION_CHARS)
    options = clean_options(options)
    if something_else and not any(is_something_else(option) for option in options):
        options.append(SOMETHING_ELSE)
    if round is not None and (isinstance(round, bool) or not isinstance(round, int) or round < 0):
        raise PollError("round", f"expected a round number, got {round!r}")
    poll_id = uuid.uuid4().hex[:10]
    with store.transaction() as db:  # the check and the write in one transaction: two clicks open one poll
        still_open = [poll for poll in polls_of(store, debate_id) if poll["status"] == "open"]
        if still_open:
            raise PollError("debate_id", f"poll {still_open[0]['id']} of this debate is still open: close it "
                                         "before opening another")
        db["polls"].insert({"id": poll_id, "debate_id": debate_id, "question": question,
                            "options": json.dumps(options, ensure_ascii=False), "status": "open",
                            "created_at": time.time(), "round": round})
        join_codes.issue(store, "poll", poll_id)  # a savepoint of this transaction: a poll never lacks its code
    return poll_id


def predict(store, poll_id: str, voter: str, option: str, *, device: str | None = None) -> None:
    """Record a prediction: `device`'s (a student's page; `voter` is only its name, `clean_name`),
    or, without a device, the voter named `voter`'s (the teacher recording on a student's behalf).
    A device (or a named voter) that predicted before changes its prediction and its name."""
    voter = clean_name(voter)
    if device is not None and not valid_device(device):
        raise PollError("device", "not a device token of this poll page: reload the page")
    if not isinstance(option, str):
        raise PollError("option", "must be one of the poll's answers")
    with store.transaction() as db:  # the status is read in the same transaction as the write: a close wins cleanly
        poll = _poll_row(store, poll_id)
        if option not in poll["options"]:
            raise PollError("option", f"{option!r} is not one of the poll's answers")
        if poll["status"] == "decided":
            raise PollError("poll_id", "the debate has decided: predictions are no longer taken")
        if poll["status"] != "open":
            raise PollError("poll_id", f"the poll is {poll['status']}: predictions are no longer taken")
        db.execute(
            "INSERT INTO predictions (poll_id, device, voter, option, at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(poll_id, device) DO UPDATE SET voter = excluded.voter, option = excluded.option, "
            "at = excluded.at", [poll["id"], device or NAME_DEVICE + voter, voter, option, time.time()])


def _predictions(store, poll_id: str) -> list[dict[str, Any]]:
    """The poll's predictions in the order their devices first predicted, each with its `label`: its
    name, or "name (2)", "name (3)" for later devices that gave the same name (compared ignoring case)."""
    rows = store.query(
        "SELECT device, voter, option, at FROM predictions WHERE poll_id = ? ORDER BY rowid", [poll_id])
    seen: dict[str, int] = {}
    for row in rows:
        name = str(row["voter"] or "?")
        key = name.casefold()
        seen[key] = seen.get(key, 0) + 1
        row["label"] = name if seen[key] == 1 else f"{name} ({seen[key]})"
    return rows


def predictions_of(store, poll_id: str) -> list[dict[str, Any]]:
    """The poll's predictions, whatever its status (the class CSV, the teacher's list of who predicted):
    [{"device", "voter", "label", "option", "at"}] in the order their devices first predicted."""
    return _predictions(store, poll_id)


def prediction_of(store, poll_id: str, device: str) -> dict[str, str] | None:
    """This device's prediction, {"voter": the name it is shown under, "option"}, or None."""
    if not valid_device(device) or get_poll(store, poll_id) is None:
        return None
    for row in _predictions(store, poll_id.strip()):
        if row["device"] == device:
            return {"voter": row["label"], "option": row["option"]}
    return None


def mark_right(store, poll_id: str, option: str | None) -> None:
    """The teacher counts `option` as the right prediction (None: as the debate decided). Refused
    for "Something else" while the decision is one of the listed answers."""
    with store.transaction() as db:
        poll = _poll_row(store, poll_id)
        if option is not None and option not in poll["options"]:
            raise PollError("option", f"{option!r} is not one of the poll's answers")
        decision = decision_answer(store, poll["debate_id"])
        listed = [o for o in poll["options"] if not is_something_else(o) and matches(o, decision)]
        if is_something_else(option) and listed:
            raise PollError("option", f"the debate decided {listed[0]!r}, one of the listed answers: "
                                      f"{option!r} cannot be right")
        db.execute("UPDATE polls SET marked_right = ? WHERE id = ?", [option, poll["id"]])


def _set_status(store, poll_id: str, status: str, allowed_from: tuple[str, ...],
                already: tuple[str, ...] = ()) -> None:
    with store.transaction() as db:
        poll = _poll_row(store, poll_id)
        if poll["status"] in (status, *already):
            return
        if poll["status"] not in allowed_from:
            raise PollError("poll_id", f"the poll is {poll['status']}: it cannot be {status}")
        db.execute("UPDATE polls SET status = ? WHERE id = ?", [status, poll["id"]])
        join_codes.retire(store, "poll", poll["id"])  # no longer open: its code admits nobody


def retire_codes(store, debate_id: str) -> None:
    """Retire the join codes of the debate's polls that take no more predictions (a live debate's
    decision closes its poll in the store without a write: see `_decoded`)."""
    for poll in polls_of(store, debate_id):
        if poll["status"] != "open":
            join_codes.retire(store, "poll", poll["id"])


def poll_code(store, poll: dict[str, Any]) -> str | None:
    """The join code students type for `poll` while it takes predictions (issued now for a poll opened
    before polls had codes); None once it is not open."""
    if poll["status"] != "open":
        return None
    return join_codes.code_of(store, "poll", poll["id"]) or join_codes.issue(store, "poll", poll["id"])


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


def right_options(options: list[str], decision: str | None, marked: str | None = None) -> list[str]:
    """The options counted as the right prediction: those that name the decided answer; when none
    does (and there is a decision), "Something else"; the teacher's `marked` option instead, but
    never "Something else" while a listed option names the decision."""
    named = [o for o in options if not is_something_else(o) and matches(o, decision)]
    if marked in options and not (named and is_something_else(marked)):
        return [marked]
    if named or decision is None:
        return named
    return [o for o in options if is_something_else(o)]


def _tally(store, poll: dict[str, Any]) -> dict[str, Any]:
    """Everything `results` gives once revealed, whatever the poll's status."""
    rows = _predictions(store, poll["id"])
    decision = decision_answer(store, poll["debate_id"])
    right = right_options(poll["options"], decision, poll.get("marked_right"))
    counts = {option: 0 for option in poll["options"]}
    for row in rows:
        counts[row["option"]] = counts.get(row["option"], 0) + 1
    predictions = [{"voter": r["label"], "option": r["option"], "right": r["option"] in right} for r in rows]
    return {"poll": poll, "total": len(rows), "voters": sorted(r["label"] for r in rows), "counts": counts,
            "decision": decision, "predictions": predictions, "right_options": right,
            "right": sorted(p["voter"] for p in predictions if p["right"])}


HIDDEN = ("counts", "decision", "predictions", "right_options", "right")  # None until the reveal


def results(store, poll_id: str) -> dict[str, Any]:
    """{"poll", "total", "voters"} always (voters: their names, equal names told apart); once revealed
    also "counts" (option -> n, in option order), "decision" (None when the debate has none),
    "predictions" ([{voter, option, right}]), "right_options" (`right_options`) and "right" (the
    voters who predicted right). Hidden parts are None before the reveal."""
    poll = _poll_row(store, poll_id)
    out = _tally(store, poll)
    if poll["status"] != "revealed":
        out.update(dict.fromkeys(HIDDEN))
    return out


def debate_results(store, debate_id: str) -> list[dict[str, Any]]:
    """Every poll of a debate, oldest first, with all its results whatever its status (the handout,
    read after class: it holds the decision anyway)."""
    return [_tally(store, poll) for poll in reversed(polls_of(store, debate_id))]
