"""The class in a debate: students who joined by code with a nickname, and what they predicted.

A student types a join code (`mad_core.join_codes`: the teacher shows one per poll, and one per seat)
and a nickname on /join (`enter`). The nickname belongs to the class of the code's debate: cleaned as
a poll voter's name (`polls.clean_name`), at most MAX_NICKNAME_CHARS, and refused when another device
of that debate holds it already ("taken" compares the cleaned, case-folded names). It is kept per
device (`nickname_of`): the device token the poll page keeps in its URL, so a reload, or the next poll
of the same debate, finds it again; typing another free nickname renames the device. What a device may
open afterwards (`admitted`): the target of a code it entered, and for polls every poll of that
debate (the class follows the teacher's polls round after round without a new code). A code admits
only while its target takes part: a poll while it is open (its code is retired when it closes;
`TARGET_DEBATE` says which targets are open and in which debate); a seat while its debate runs here
(`mad_core.seats.REGISTRY`; who may hold it, one device at a time, is the seat's own rule).

The class CSV (`class_rows`, `class_csv`; `python -m mad_core export ID --format class-csv`): one row
per student per poll (debate id, poll id, round, nickname, a short hash of the device, prediction,
the decision, matched yes / no / undecided; "" for a student who did not predict in that poll), every
cell through `exports.records_csv`. `results_figure` is the projector's bar chart of a revealed poll:
the class's counts per answer beside the agents' answers at the poll's round.

What it must not do: import streamlit, write anything when the input is invalid (every check runs
before the write; `ClassroomError` names the field), or let a device's raw token out (the CSV and the
teacher's lists show `short_device`). Its tables (`participants`, `joins`) come with m018 below.
"""
from __future__ import annotations

import hashlib
import sqlite3
import time
from typing import Any, Callable

import plotly.graph_objects as go
from sqlite_utils import Database

from . import exports, join_codes, polls, seats
from .events import DISCUSSION_KINDS
from .figures import CATEGORY_COLORS, NO_ANSWER_COLOR, plot_text, styled
from .polls import PollError
from .store.migrations import feature_migrations
from .view import DebateView

MAX_NICKNAME_CHARS = seats.MAX_NICKNAME_CHARS  # one bound for a joined phone's name and a seat holder's
CSV_COLUMNS = ("debate_id", "poll_id", "round", "nickname", "device", "prediction", "decision", "matched")
CHART_LABEL_CHARS = 28  # an answer under its bar on the projector
RIGHT_COLOR = "#54a24b"  # the decided (right) answer's bar: green, 3:1 on white (figures.CATEGORY_COLORS)
AGENTS_COLOR = CATEGORY_COLORS[0]
MIGRATIONS = feature_migrations()


@MIGRATIONS()
def m018_participants(db: Database) -> None:
    """The class of a debate (mad_core/classroom.py): each device that joined by code, its nickname
    (unique per debate, compared case-folded in `folded`), and which targets it entered a code for."""
    db["participants"].create({"debate_id": str, "device": str, "nickname": str, "folded": str, "joined_at": float},
                              pk=("debate_id", "device"), not_null={"nickname", "folded"})
    db["participants"].create_index(["debate_id", "folded"], unique=True)
    db["joins"].create({"device": str, "kind": str, "target": str, "debate_id": str, "code": str, "at": float},
                       pk=("device", "kind", "target"), not_null={"debate_id"})
    db["joins"].create_index(["debate_id"])


class ClassroomError(ValueError):
    """Refused input; `field` names what was wrong ("code", "nickname", "device"), `message` says why.
    Nothing was written."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _open_poll_debate(store, poll_id: str) -> str | None:
    poll = polls.get_poll(store, poll_id)
    return poll["debate_id"] if poll is not None and poll["status"] == "open" else None


def _seat_debate(store, seat_id: str) -> str | None:
    """A seat's debate while it runs in this process (`seats.REGISTRY`; its code is retired when it ends)."""
    seat = seats.REGISTRY.get(seat_id)
    return seat.debate_id if seat is not None else None


# kind -> (store, target id) -> the debate whose class it admits to, or None when it admits nobody now.
TARGET_DEBATE: dict[str, Callable[[Any, str], str | None]] = {"poll": _open_poll_debate, "seat": _seat_debate}


def clean_nickname(value: Any) -> str:
    """The nickname as shown (`polls.clean_name`); ClassroomError("nickname") when empty, without a visible
    character, not valid text, or longer than MAX_NICKNAME_CHARS."""
    try:
        name = polls.clean_name(value, "nickname")
    except PollError as exc:
        raise ClassroomError("nickname", exc.message) from None
    if len(name) > MAX_NICKNAME_CHARS:
        raise ClassroomError("nickname", f"at most {MAX_NICKNAME_CHARS} characters (got {len(name)})")
    return name


def short_device(device: str) -> str:
    """A device as the teacher's lists and the CSV show it: 8 hex digits of a hash, never the token
    ("" for a voter the teacher recorded by name, who has no device)."""
    if not device or device.startswith(polls.NAME_DEVICE):
        return ""
    return hashlib.sha256(f"madlab-class-device:{device}".encode()).hexdigest()[:8]


def nickname_of(store, debate_id: str, device: str) -> str | None:
    """The nickname `device` joined `debate_id`'s class under, or None."""
    rows = store.query("SELECT nickname FROM participants WHERE debate_id = ? AND device = ?", [debate_id, device])
    return str(rows[0]["nickname"]) if rows else None


def participants(store, debate_id: str) -> list[dict[str, Any]]:
    """The class of a debate in the order they joined: [{"nickname", "device" (short), "joined_at"}]."""
    rows = store.query("SELECT nickname, device, joined_at FROM participants WHERE debate_id = ? "
                       "ORDER BY joined_at, rowid", [debate_id])
    return [{**row, "device": short_device(row["device"])} for row in rows]


def _check_code(typed: Any) -> str:
    code = join_codes.normalize(typed)
    if code is None:
        raise ClassroomError("code", f"a code is {join_codes.LENGTH} letters and digits, as on the screen "
                                     "(for example K7M-3PX)")
    return code


def enter(store, typed_code: Any, nickname: Any, device: Any) -> dict[str, str]:
    """`device` joins what `typed_code` names under `nickname`: {"kind", "target", "debate_id", "nickname",
    "code"}. ClassroomError, with nothing written, for a malformed, unknown or retired code (or one whose
    poll no longer takes predictions), a refused nickname, or one another device of the debate holds."""
    if not polls.valid_device(device):
        raise ClassroomError("device", "this page lost its device token: reload the page")
    code = _check_code(typed_code)
    name = clean_nickname(nickname)
    try:
        with store.transaction() as db:  # read and write under the write lock: two phones never share a name
            found = join_codes.resolve(store, code)
            debate_of = TARGET_DEBATE.get(found["kind"]) if found else None
            debate_id = debate_of(store, found["target"]) if found and debate_of else None
            if found is None or debate_id is None:
                raise ClassroomError("code", f"no open poll or seat has the code {code}: check it on the screen "
                                             "(the code of a closed poll no longer works)")
            _claim(store, db, debate_id, device, name)
            db["joins"].upsert({"device": device, "kind": found["kind"], "target": found["target"],
                                "debate_id": debate_id, "code": code, "at": time.time()},
                               pk=("device", "kind", "target"))
    except sqlite3.IntegrityError:  # the unique index, should another writer have slipped past the check
        raise ClassroomError("nickname", f"“{name}” is taken in this class: choose another nickname") from None
    return {"kind": found["kind"], "target": found["target"], "debate_id": debate_id, "nickname": name,
            "code": code}


def _claim(store, db: Database, debate_id: str, device: str, name: str) -> None:
    """`device`'s nickname in the debate's class: refused when another device holds it (case-folded)."""
    folded = name.casefold()
    if store.query("SELECT 1 FROM participants WHERE debate_id = ? AND folded = ? AND device != ?",
                   [debate_id, folded, device]):
        raise ClassroomError("nickname", f"“{name}” is taken in this class: choose another nickname")
    db.execute("INSERT INTO participants (debate_id, device, nickname, folded, joined_at) VALUES (?, ?, ?, ?, ?) "
               "ON CONFLICT(debate_id, device) DO UPDATE SET nickname = excluded.nickname, folded = excluded.folded",
               [debate_id, device, name, folded, time.time()])


def admitted(store, device: Any, kind: str, target: Any) -> dict[str, str] | None:
    """{"debate_id", "nickname"} when `device` may open `target` (it entered that target's code, or, for a
    poll, it joined the class of the poll's debate), else None. Closed targets stay open to those who
    joined them (a student sees the poll close and its results)."""
    if not polls.valid_device(device) or not isinstance(target, str) or not target:
        return None
    if kind == "poll":
        poll = polls.get_poll(store, target)
        debate_id = poll["debate_id"] if poll is not None else None
    else:
        rows = store.query("SELECT debate_id FROM joins WHERE device = ? AND kind = ? AND target = ?",
                           [device, kind, target])
        debate_id = rows[0]["debate_id"] if rows else None
    nickname = nickname_of(store, debate_id, device) if debate_id else None
    return {"debate_id": debate_id, "nickname": nickname} if debate_id and nickname else None


def newest_poll(store, debate_id: str) -> dict[str, Any] | None:
    """The poll the class follows now: the debate's newest."""
    found = polls.polls_of(store, debate_id)
    return found[0] if found else None


# ----- the class CSV ---------------------------------------------------------------------------------
def _matched(option: str, right: list[str], decision: str | None, marked: str | None) -> str:
    if not option:
        return ""
    if decision is None and marked is None:
        return "undecided"
    return "yes" if option in right else "no"


def class_rows(store, debate_id: str) -> list[dict[str, Any]]:
    """One row per student per poll (oldest poll first): every prediction (a joined device under its
    nickname, any other under the name it gave), then every member of the class who did not predict in
    that poll (prediction and matched ""). Columns: CSV_COLUMNS."""
    members = {row["device"]: row["nickname"] for row in store.query(
        "SELECT device, nickname FROM participants WHERE debate_id = ? ORDER BY joined_at, rowid", [debate_id])}
    rows: list[dict[str, Any]] = []
    for result in polls.debate_results(store, debate_id):
        poll, decision = result["poll"], result["decision"]
        base = {"debate_id": debate_id, "poll_id": poll["id"], "round": "" if poll.get("round") is None else poll["round"]}
        predicted = polls.predictions_of(store, poll["id"])
        entries = [(p["device"], members.get(p["device"]) or p["label"], p["option"]) for p in predicted]
        done = {p["device"] for p in predicted}
        entries += [(device, nickname, "") for device, nickname in members.items() if device not in done]
        for device, nickname, option in entries:
            rows.append({**base, "nickname": nickname, "device": short_device(device), "prediction": option,
                         "decision": decision or "",
                         "matched": _matched(option, result["right_options"], decision, poll.get("marked_right"))})
    return rows


def class_csv(store, debate_id: str) -> str:
    """`class_rows` as CSV (header always; every cell through `exports.records_csv`'s formula guard)."""
    rows = class_rows(store, debate_id)
    return exports.records_csv(rows) if rows else ",".join(CSV_COLUMNS) + "\r\n"


# ----- the projector's chart of a revealed poll ------------------------------------------------------
def agents_at_round(view: DebateView, rnd: int | None) -> dict[str, str]:
    """What each agent had answered when a poll of round `rnd` was opened (its latest finished discussion
    reply up to that round, read with the debate's answer type: `polls.agent_answers`); {} before any round."""
    if rnd is None:
        return {}
    replies = {turn.agent: turn.text for turn in view.turns
               if turn.kind in DISCUSSION_KINDS and turn.status == "ok" and turn.text and turn.round <= rnd}
    return polls.agent_answers(replies, view.config)


def results_figure(result: dict[str, Any], agents: dict[str, str]) -> go.Figure:
    """A revealed poll as bars: the class's count per answer (the right answers green and marked ✅, the
    others grey), beside it how many agents gave each answer at the poll's round (`agents_at_round`)."""
    options = list(result["counts"])
    right = set(result.get("right_options") or [])
    labels = [("✅ " if option in right else "") + plot_text(option, CHART_LABEL_CHARS) for option in options]
    counts = [result["counts"][option] for option in options]
    traces = [go.Bar(x=labels, y=counts, name="Class", text=counts, textposition="auto",
                     marker=dict(color=[RIGHT_COLOR if option in right else NO_ANSWER_COLOR for option in options]))]
    if agents:
        said = [sum(polls.matches(option, answer) for answer in agents.values()) for option in options]
        traces.append(go.Bar(x=labels, y=said, name="Agents", text=said, textposition="auto",
                             marker=dict(color=AGENTS_COLOR)))
    base = {"barmode": "group", "showlegend": bool(agents), "bargap": 0.25, "yaxis": {"dtick": 1, "rangemode": "tozero"}}
    fig = styled(traces, base, "The class's predictions", "", xtitle="", height=230)
    fig.layout.margin.update(l=10, r=10, t=36, b=10)
    fig.layout.legend.update(orientation="h", y=1.12, x=1, xanchor="right")
    return fig
