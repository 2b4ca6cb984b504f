"""SQLite persistence for debates: turns, votes, decisions, steering, annotations, exports.

What it is for: the engine hands every event to `Store.record` as it happens, and each one
is committed before `record` returns, so a crash never loses a finished turn. The CLI and
the app read debates back, search them (SQLite FTS5), annotate turns and export/import them
(JSON, Markdown, CSV).

What it must not do: store API keys or other secrets (configs are scrubbed of anything
named like a key or a token before they are written), import streamlit, or share one
connection between threads. SQLite connections belong to the thread that opened them, so
every thread opens its own `Store` (the engine's background thread creates its own).

Many writers, one file: any number of threads and processes write one database at once.
Every write transaction starts with `BEGIN IMMEDIATE` (`Store._write`), so a writer waits its
turn (SQLite's busy timeout) instead of failing with "database is locked" the way a deferred
transaction that read first does. Readers never wait (WAL). Within one process the writers of
one file first take a shared lock (`_process_write_lock`): SQLite's busy handler sleeps in
steps of up to 100 ms and is not woken when the lock frees, so dozens of debates in one
process (an experiment, a class) queued there for seconds; a Python lock hands over at once.

Who owns a running debate: a debate row names its `owner` (host:pid:token of the engine that
runs it) and a `heartbeat_at` that a process-wide thread (`HEARTBEATS`) refreshes every few
seconds while the engine lives. A `running` debate whose owner stopped beating (or whose
process is gone) is `interrupted`; a resume takes a debate over with one atomic claim
(`claim_for_resume`), so two resumes of one debate never both run, and a store that writes
for an owner who lost the claim is refused (`ClaimLost`).

Any text can be stored: lone UTF-16 surrogates (which a JSON escape from an API can produce)
are replaced by U+FFFD before writing (`clean_text`); NUL characters are stored as they are.

Built on sqlite-utils: numbered migrations (`m001_initial`, ...) recorded in `_migrations`,
FTS5 tables kept current by triggers, explicit integer primary keys on the searched tables,
and every word of a search quoted (`quote_fts`) so user input can never break the FTS query
syntax, then made a prefix phrase (`prefix_query`: "kettle" finds "kettles"); `search_matches`
says per debate what matched (a snippet with the matched words marked).
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import io
import json
import os
import re
import socket
import sqlite3
import threading
import time
import uuid
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from .events import (
    DEBATE_STATUSES,
    ChallengeResult,
    DebateFinished,
    DebateStarted,
    DecisionAttempted,
    DecisionReached,
    ErrorOccurred,
    Event,
    PersonasAssigned,
    RoundStarted,
    SteeringApplied,
    Turn,
    TurnFinished,
    VoteCast,
)
# The export's shape and checks (CHILD_TABLES, EXPORT_FORMAT, ... are the store's names too).
from .export_schema import (CHILD_TABLES, EXPORT_FORMAT, EXPORT_VERSION, read_export_text, scrub_secrets,
                            validate_export)

# A 'running' debate on another host that has written nothing for this long (and keeps no
# heartbeat: rows written before heartbeats existed) is interrupted.
STALE_AFTER_S = 600.0
# Owners refresh their debates' heartbeat this often; a claim not refreshed for
# CLAIM_EXPIRES_S has expired (its owner died, hung or lost the database).
HEARTBEAT_EVERY_S = float(os.environ.get("MADLAB_HEARTBEAT_S") or 5.0)
CLAIM_EXPIRES_S = float(os.environ.get("MADLAB_CLAIM_EXPIRES_S") or 60.0)
# How long a writer waits for the write lock before giving up (SQLite busy timeout).
BUSY_TIMEOUT_S = 60.0
# Longest search text used (longer queries are cut there) and the largest page of a listing.
MAX_QUERY_CHARS = 1000
MAX_LIST_LIMIT = 10_000

# Columns stored as JSON text, and columns stored as 0/1 that read back as bools.
JSON_COLUMNS: dict[str, tuple[str, ...]] = {
    "debates": ("config",),
    "turns": ("prompt",),
    "votes": ("ballot",),
    "decisions": ("scores", "solutions", "solution_agents", "details"),
    "steering": ("targets",),
    "rounds": ("speakers",),
}
BOOL_COLUMNS: dict[str, tuple[str, ...]] = {
    "turns": ("agreement",),
    "votes": ("valid",),
    "decisions": ("reached", "final", "forced"),
    "challenges": ("agrees",),
}
# Tables a resume may add rows to (undone when the resume fails before any progress).
RUN_TABLES = ("turns", "votes", "decisions", "challenges", "steering", "errors", "rounds")

# The codebook (m006): the tags every archive starts with, the palette a tag's colour comes from
# (colour names Streamlit's markdown knows), and the longest tag name.
DEFAULT_TAGS = ("sycophancy", "new argument", "flip", "error", "hallucination", "good point", "off topic")
TAG_COLOURS = ("blue", "green", "orange", "red", "violet", "gray", "yellow")
MAX_TAG_CHARS = 60


def free_tag_colour(used: Iterable[str]) -> str:
    """The colour a new tag gets: a palette colour no tag has (the first in palette order) while one
    is free; once every colour is taken, the one fewest tags have (ties: palette order). `used`: the
    colours of the codebook's tags."""
    counts = Counter(colour for colour in used if colour in TAG_COLOURS)
    return min(TAG_COLOURS, key=lambda colour: (counts[colour], TAG_COLOURS.index(colour)))


# Outcome filter of `list_debates`: how a debate ended, as SQL on the debates row.
OUTCOMES: dict[str, str] = {
    "decided": "status = 'finished' AND COALESCE(answer, '') != ''",
    "no decision": "status = 'finished' AND COALESCE(answer, '') = ''",
    "stopped": "status = 'stopped'",
    "failed": "status = 'failed'",
    "interrupted": "status = 'interrupted'",
    "running": "status = 'running'",
}
# Correctness filter: what `debate_correctness` says of a debate's decision against its reference.
# A debate still running (not ended) is "not ended yet": its "no decision" would read as final.
CORRECTNESS = ("correct", "incorrect", "no decision", "no reference", "reference unreadable", "not ended yet")
# The annotation export (`annotations_csv`): one row per annotation, its turn (where it stands: round,
# `turn_seq` = its 0-based place in the debate, the N of a fork's "after turn N"; whether a fork copied
# it from its parent) and what came just before it in the transcript (a turn, or a moderator message:
# `previous_kind` "moderator message", `previous_agent` "Moderator", `previous_to` whom it addressed).
ANNOTATION_COLUMNS = ("debate_id", "question", "turn_id", "round", "turn_seq", "agent", "kind", "copied_from_parent",
                      "text", "previous_kind", "previous_agent", "previous_to", "previous_text", "tag", "note",
                      "annotator", "created_at")
MODERATOR_MESSAGE = "moderator message"  # `previous_kind` of a moderator message

# Statuses a debate can be resumed from.
RESUMABLE_STATUSES = ("interrupted", "stopped", "failed")
# What a resumed debate recomputes from its stored turns.
DERIVED_TABLES = ("votes", "decisions", "challenges", "rounds")
# Config keys that may hold a secret: api_key, openai_api_key, apikey, token, hf_token, secret...


def madlab_home() -> Path:
    """MAD Lab's data directory: env MADLAB_HOME, default ~/.madlab (created on demand)."""
    home = Path(os.environ.get("MADLAB_HOME") or Path.home() / ".madlab").expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home


def default_db_path() -> Path:
    return madlab_home() / "madlab.db"


# ----- migrations ---------------------------------------------------------------------------
MIGRATIONS = Migrations("madlab")
MIGRATIONS.migrations_table = "_migrations"


@MIGRATIONS()
def m001_initial(db: Database) -> None:
    db["debates"].create(
        {
            "id": str, "question": str, "config": str, "protocol": str, "paradigm": str, "models": str,
            "status": str, "answer": str, "reference": str, "reason": str, "parent_id": str,
            "forked_from_seq": int, "pid": int, "host": str,
            "created_at": float, "updated_at": float, "finished_at": float,
        },
        pk="id",
        not_null={"question", "config", "status"},
    )
    db["debates"].create_index(["created_at"])
    db["agents"].create(
        {"debate_id": str, "label": str, "model": str, "persona": str, "position": int},
        pk=("debate_id", "label"),
    )
    db["turns"].create(
        {
            "id": int, "turn_id": str, "debate_id": str, "seq": int, "round": int, "agent": str,
            "kind": str, "model": str, "prompt": str, "content": str, "status": str, "error": str,
            "answer": str, "agreement": int, "confidence": int, "prompt_tokens": int,
            "completion_tokens": int, "latency_s": float, "first_token_s": float, "attempts": int,
            "started_at": float, "finished_at": float,
        },
        pk="id",
        not_null={"turn_id", "debate_id"},
    )
    # Turn ids are unique within a debate (a fork may carry its parent's turns).
    db["turns"].create_index(["debate_id", "turn_id"], unique=True)
    db["turns"].create_index(["debate_id", "seq"])
    event_tables: dict[str, dict[str, Any]] = {
        "votes": {"round": int, "agent": str, "protocol": str, "raw": str, "ballot": str, "valid": int,
                  "reason": str, "attempt": int, "ts": float},
        # One row per DecisionAttempted (final=0) and per DecisionReached (final=1, reached=1).
        "decisions": {"round": int, "protocol": str, "reached": int, "final": int, "answer": str, "winner_agent": str,
                      "winner_index": int, "scores": str, "solutions": str, "solution_agents": str,
                      "forced": int, "fallback": str, "reason": str, "details": str, "ts": float},
        "challenges": {"agent": str, "agrees": int, "new_answer": str, "ts": float},
        "steering": {"action": str, "targets": str, "message": str, "ts": float},
        "errors": {"message": str, "agent": str, "turn_id": str, "ts": float},
        "annotations": {"turn_id": str, "tag": str, "note": str, "created_at": float},
    }
    for name, columns in event_tables.items():
        db[name].create({"id": int, "debate_id": str, **columns}, pk="id", not_null={"debate_id"})
        db[name].create_index(["debate_id"])
    db["turns"].enable_fts(["content", "agent"], create_triggers=True)
    db["annotations"].enable_fts(["tag", "note"], create_triggers=True)


@MIGRATIONS()
def m002_owners_and_rounds(db: Database) -> None:
    """Who runs a debate (owner + heartbeat), and each round's speaking order."""
    db["debates"].add_column("owner", str)
    db["debates"].add_column("heartbeat_at", float)
    db["rounds"].create({"id": int, "debate_id": str, "round": int, "speakers": str, "ts": float},
                        pk="id", not_null={"debate_id"})
    db["rounds"].create_index(["debate_id"])


@MIGRATIONS()
def m003_metrics(db: Database) -> None:
    """Cached metric reports (mad_core/metrics/report.py) and SBERT embeddings by text hash."""
    db["metric_reports"].create({"debate_id": str, "stamp": str, "report": str, "computed_at": float},
                                pk="debate_id", not_null={"stamp", "report"})
    db["embeddings"].create({"text_hash": str, "model": str, "vector": bytes, "created_at": float},
                            pk=("text_hash", "model"), not_null={"vector"})


@MIGRATIONS()
def m004_experiments(db: Database) -> None:
    """Experiments (sweeps over task sets, mad_core/experiments) and their planned debates."""
    db["experiments"].create(
        {"id": str, "name": str, "spec": str, "status": str, "total": int, "concurrency": int, "owner": str,
         "pid": int, "host": str, "heartbeat_at": float, "created_at": float, "updated_at": float,
         "finished_at": float, "error": str},
        pk="id", not_null={"name", "spec", "status"},
    )
    db["experiments"].create_index(["created_at"])
    db["experiment_runs"].create(
        {"id": int, "experiment_id": str, "run_index": int, "config_index": int, "config_key": str,
         "item_id": str, "item_index": int, "seed": int, "debate_id": str, "status": str, "attempts": int,
         "wall_s": float, "started_at": float, "finished_at": float, "error": str},
        pk="id", not_null={"experiment_id", "run_index", "status"},
    )
    db["experiment_runs"].create_index(["experiment_id", "run_index"], unique=True)
    db["experiment_runs"].create_index(["debate_id"])


@MIGRATIONS()
def m005_polls(db: Database) -> None:
    """Prediction polls of a debate (mad_core/polls.py): one prediction per voter and poll."""
    db["polls"].create({"id": str, "debate_id": str, "question": str, "options": str, "status": str,
                        "created_at": float}, pk="id", not_null={"debate_id", "question", "options", "status"})
    db["polls"].create_index(["debate_id"])
    db["predictions"].create({"poll_id": str, "voter": str, "option": str, "at": float},
                             pk=("poll_id", "voter"), not_null={"option"})


@MIGRATIONS()
def m006_codebook(db: Database) -> None:
    """The shared codebook of annotation tags (names unique whatever their case, a palette colour),
    filled with the default tags and every tag already used (annotations are rewritten to their
    codebook spelling); who wrote an annotation; moderator messages searchable (steering FTS)."""
    db.execute("CREATE TABLE tags (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE, "
               "colour TEXT NOT NULL, created_at FLOAT)")
    db["annotations"].add_column("annotator", str)
    used = [row["tag"] for row in db.query("SELECT tag FROM annotations GROUP BY tag ORDER BY MIN(id)")]
    now = time.time()
    for name in dict.fromkeys([*DEFAULT_TAGS, *used]):
        count = db.execute("SELECT COUNT(*) FROM tags").fetchone()[0]
        db.execute("INSERT OR IGNORE INTO tags (name, colour, created_at) VALUES (?, ?, ?)",
                   [name, TAG_COLOURS[count % len(TAG_COLOURS)], now])
    db.execute("UPDATE annotations SET tag = (SELECT name FROM tags WHERE tags.name = annotations.tag)")
    db["steering"].enable_fts(["message"], create_triggers=True)


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


# ----- helpers ------------------------------------------------------------------------------
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` as valid Unicode: surrogate pairs joined, lone surrogates replaced by U+FFFD."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    return value


def _encode(table: str, row: dict[str, Any]) -> dict[str, Any]:
    row = {key: _clean_value(value) for key, value in row.items()}
    for column in JSON_COLUMNS.get(table, ()):
        if column in row:
            row[column] = clean_text(json.dumps(row[column], ensure_ascii=False))
    return row


def _decode(table: str, row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    for column in JSON_COLUMNS.get(table, ()):
        if row.get(column) is not None:
            row[column] = json.loads(row[column])
    for column in BOOL_COLUMNS.get(table, ()):
        if row.get(column) is not None:
            row[column] = bool(row[column])
    return row


def _turn_from_row(row: dict[str, Any]) -> Turn:
    row = _decode("turns", row)
    row["id"] = row.pop("turn_id")
    return Turn.from_dict(row)


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    if pid == os.getpid():
        return True
    if os.name == "nt":  # signal 0 is not a probe on Windows; assume alive
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def _like_escape(text: str) -> str:
    """`text` with LIKE's wildcards escaped (use with ESCAPE '\\')."""
    return re.sub(r"([\\%_])", r"\\\1", text)


def _clean_query(text: str | None) -> str:
    """Search text cut to MAX_QUERY_CHARS, without NULs (SQLite's FTS parser cannot take them)."""
    return clean_text(str(text or "")[:MAX_QUERY_CHARS]).replace("\x00", " ").strip()


def prefix_query(db: Database, text: str) -> str:
    """An FTS5 query that finds every word of `text` as a word's start ("kettle" finds "kettles"):
    each word or "quoted phrase" quoted (sqlite-utils' `quote_fts`, so no input is FTS syntax:
    OR, NOT, NEAR(, a lone quote are plain words) and made a prefix phrase (`"word"*`). "" when
    `text` has no word."""
    return " ".join(f"{phrase}*" for phrase in re.findall(r'"[^"]*"', db.quote_fts(text)) if phrase != '""')


MATCH_OPEN, MATCH_CLOSE = "\x02", "\x03"  # around a matched word in an FTS snippet (split by `_marked_parts`)


def _marked_parts(snippet: str) -> list[tuple[str, bool]]:
    """An FTS snippet as (text, matched) parts; newlines become spaces. Never raises."""
    parts: list[tuple[str, bool]] = []
    for i, piece in enumerate(re.split(f"{MATCH_OPEN}|{MATCH_CLOSE}", " ".join(str(snippet or "").split()))):
        if piece:
            parts.append((piece, i % 2 == 1))
    return parts


def _question_parts(question: str, search: str, width: int = 120) -> list[tuple[str, bool]]:
    """The question around the (case-insensitive) search text, as (text, matched) parts."""
    found = question.lower().find(search.lower())
    if found < 0:
        return [(question if len(question) <= width else question[:width - 1] + "…", False)]
    start = max(0, found - width // 3)
    end = min(len(question), max(found + len(search), start + width))
    parts = [("…" if start else "") + question[start:found], question[found:found + len(search)],
             question[found + len(search):end] + ("…" if end < len(question) else "")]
    return [(part, i == 1) for i, part in enumerate(parts) if part]


def _match_label(where: str, label: Any) -> str:
    """Whose turn, which tag, or to whom a moderator message went ("to all" without targets)."""
    if where != "moderator message":
        return str(label or "")
    try:
        targets = json.loads(label) if isinstance(label, str) else label
    except ValueError:
        targets = label
    if isinstance(targets, list):
        targets = ", ".join(str(t) for t in targets)
    return f"to {targets or 'all'}"


def _bounded_limit(limit: Any) -> int:
    """A listing size SQLite can take: 1 .. MAX_LIST_LIMIT."""
    try:
        return max(1, min(int(limit), MAX_LIST_LIMIT))
    except (TypeError, ValueError, OverflowError):
        return MAX_LIST_LIMIT


def tag_name(text: Any, field: str = "tag") -> str:
    """A codebook tag name: whitespace collapsed, 1..MAX_TAG_CHARS characters; else ValueError naming
    `field` ("tag" on an annotation, "new tag" when adding one, "new name" when renaming)."""
    name = " ".join(clean_text(str(text or "")).replace("\x00", " ").split())
    if not name:
        if field == "tag":
            raise ValueError("tag: an annotation needs a tag (pick one from the codebook or type a new one)")
        raise ValueError(f"{field}: a tag needs a name")
    if len(name) > MAX_TAG_CHARS:
        raise ValueError(f"{field}: at most {MAX_TAG_CHARS} characters (got {len(name)})")
    return name


def debate_correctness(debate: dict[str, Any], summary: dict[str, Any] | None = None) -> str:
    """One of CORRECTNESS for a debates row: its decided answer judged against its reference with
    the debate's answer type (`tasks.answer_types.is_correct`: "(B) Paris" is B, 0.5 is 1/2), or,
    when given, the metric report's `summary["correct"]` (free-text answers are grouped there by
    meaning). Never a plain string comparison; never raises."""
    from .tasks.answer_types import DebateAnswerType, is_correct

    reference = debate.get("reference")
    if not (isinstance(reference, str) and reference.strip()):
        return "no reference"
    if debate.get("status") == "running":
        return "not ended yet"
    answer = debate.get("answer")
    if not (isinstance(answer, str) and answer.strip()):
        return "no decision"
    if summary and isinstance(summary.get("correct"), bool):
        return "correct" if summary["correct"] else "incorrect"
    config = debate.get("config") if isinstance(debate.get("config"), dict) else {}
    answer_type = DebateAnswerType.of(config)
    verdict = is_correct(answer_type.kind, answer, reference, **answer_type.keywords)
    if verdict is None:
        return "reference unreadable"
    return "correct" if verdict else "incorrect"


def _iso_time(ts: Any) -> str:
    """A timestamp as ISO 8601 UTC to the second ("" when missing): sortable across time zones."""
    if not isinstance(ts, (int, float)) or isinstance(ts, bool):
        return ""
    try:
        return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return ""


def new_owner() -> str:
    """A token naming one engine run: host:pid:random."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class ClaimLost(RuntimeError):
    """This process no longer owns the debate it tried to write (another process took it over)."""


class ResumeRefused(ValueError):
    """A debate that cannot be resumed now (finished, running elsewhere, unknown)."""


@dataclasses.dataclass
class ResumeClaim:
    """What a resume took over: the rows as they were, to put back if the resume makes no progress."""

    debate_id: str
    owner: str
    debate: dict[str, Any]
    derived: dict[str, list[dict[str, Any]]]
    marks: dict[str, int]  # table -> highest row id of this debate when the claim was taken


def _snippet(text: str, query: str, width: int = 160) -> str:
    """Up to `width` characters of `text` around the first query term found in it."""
    lowered = text.lower()
    hits = [i for i in (lowered.find(t) for t in re.findall(r"\w+", query.lower())) if i >= 0]
    start = max(0, min(hits) - width // 3) if hits else 0
    piece = text[start:start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")


_SCRIPT_URL = re.compile(r"(?i)\b(javascript|vbscript)(\s*):")
# A cell a spreadsheet would run: a formula character (= + - @) after any whitespace (space, tab,
# newline, CR, no-break and other Unicode spaces) or invisible format characters (zero-width
# space and joiners, word joiner, byte-order mark), or a cell starting with a tab or a CR.
_FORMULA = re.compile(r"[\s\u200b-\u200f\u2060-\u2064\ufeff]*[=+\-@]")
_CONTROL_START = ("\t", "\r")


def md_safe(text: Any) -> Any:
    """Text that renders literally in Markdown: HTML escaped, link brackets escaped, script URLs broken.

    Non-strings are returned unchanged."""
    if not isinstance(text, str):
        return text
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("[", "\\[").replace("]", "\\]")
    return _SCRIPT_URL.sub(r"\1\2&#58;", text)


def csv_safe(value: Any) -> Any:
    """A CSV cell no spreadsheet runs as a formula (the one rule of every CSV MAD Lab writes): text
    starting with = + - @ tab or CR, or with = + - @ after any whitespace or invisible characters
    (" =1+1", "\\n=1+1", a no-break space), gets a leading apostrophe (OWASP's advice). Text that
    merely looks like a negative number ("-3") is text starting with "-" and gets one too; numbers
    (int, float) are written as they are: -3 stays -3. Non-strings are returned unchanged."""
    if isinstance(value, str) and (value.startswith(_CONTROL_START) or _FORMULA.match(value)):
        return "'" + value
    return value


def _deep_map(value: Any, fn: Callable[[Any], Any]) -> Any:
    """`fn` applied to every leaf of nested dicts and lists (keys kept)."""
    if isinstance(value, dict):
        return {key: _deep_map(item, fn) for key, item in value.items()}
    if isinstance(value, list):
        return [_deep_map(item, fn) for item in value]
    return fn(value)


def format_time(ts: float | None) -> str:
    """Local time as YYYY-MM-DD HH:MM, or "-"."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


# How a ChallengeResult's `agrees` reads.
STANCES = {True: "agrees", False: "challenges", None: "takes no clear stance"}


def describe_ballot(ballot: Any) -> str:
    """A ballot for people: a single 0-based index reads "solution N" (1-based), others as JSON."""
    if isinstance(ballot, int) and not isinstance(ballot, bool):
        return f"solution {ballot + 1}"
    return json.dumps(ballot, ensure_ascii=False)


def _strip_ids(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("id", "debate_id")}


# ----- the store ----------------------------------------------------------------------------
_WRITE_LOCKS: dict[str, threading.Lock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _process_write_lock(path: Path) -> threading.Lock:
    """The lock this process's writers of `path` share (a private one for ":memory:")."""
    if str(path) == ":memory:":
        return threading.Lock()
    key = os.path.realpath(path)
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(key, threading.Lock())


class Store:
    """One SQLite database of debates. One Store per thread: its connection is not shared.

    `record(event)` attaches events to the debate last created (or started) through this
    Store, unless a `debate_id` is passed. A Store with an `owner` writes only to debates that
    owner holds (see the module docstring).
    """

    def __init__(self, path: str | Path | None = None, *, owner: str | None = None):
        self.path = Path(path) if path is not None else default_db_path()
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.owner = owner
        self._write_lock = _process_write_lock(self.path)
        # timeout: a writer waits for another's transaction rather than fail (see _write).
        self.db = Database(sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S))
        with self._retry_locked():
            self.db.enable_wal()
        self._migrate()
        self.current_debate_id: str | None = None
        self._handlers: dict[type[Event], Callable[[Any, str], None]] = {
            DebateStarted: self._on_started,
            PersonasAssigned: self._on_personas,
            RoundStarted: self._on_round,
            TurnFinished: self._on_turn,
            VoteCast: partial(self._insert_event, "votes"),
            DecisionAttempted: partial(self._insert_event, "decisions", final=False),
            DecisionReached: self._on_decision_reached,
            ChallengeResult: partial(self._insert_event, "challenges"),
            SteeringApplied: partial(self._insert_event, "steering"),
            ErrorOccurred: partial(self._insert_event, "errors"),
            DebateFinished: self._on_finished,
        }
        self.mark_dead_interrupted()

    def _migrate(self) -> None:
        if not MIGRATIONS.pending(self.db):
            return
        # BEGIN IMMEDIATE serialises two Stores opening a fresh file at once; each migration
        # then runs in its own savepoint, recorded in _migrations with it.
        with self._write():
            MIGRATIONS.apply(self.db)

    @contextlib.contextmanager
    def _retry_locked(self, tries: int = 3):
        """Run the block again when SQLite still reports a lock after its busy timeout."""
        for attempt in range(tries):
            try:
                yield
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or attempt == tries - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))

    @contextlib.contextmanager
    def _write(self):
        """One write transaction, begun IMMEDIATE: it waits for the write lock instead of failing.

        This process's other writers of the file are waited for on `_write_lock` first (woken
        the moment it is free), other processes' by SQLite's busy timeout. Nested inside
        another write it is a savepoint of that one."""
        conn = self.db.conn
        if conn.in_transaction:
            with self.db.atomic():
                yield
            return
        with self._write_lock:
            for attempt in range(3):
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) and "busy" not in str(exc) or attempt == 2:
                        raise
            try:
                yield
            except BaseException:
                self.db.rollback()
                raise
            try:
                conn.execute("COMMIT")
            except BaseException:
                self.db.rollback()
                raise

    def applied_migrations(self) -> list[str]:
        return [m.name for m in MIGRATIONS.applied(self.db)]

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ----- writing ------------------------------------------------------------------------
    def create_debate(self, debate_id: str, config: Any, *, parent_id: str | None = None,
                      forked_from_seq: int | None = None, created_at: float | None = None) -> None:
        """Store a new running debate owned by this process, with its agents."""
        config = scrub_secrets(config.to_dict() if hasattr(config, "to_dict") else dict(config))
        agents = config.get("agents") or []
        models = list(dict.fromkeys(a.get("model", "") for a in agents))
        now = created_at or time.time()
        with self._write():
            if self.get_debate(debate_id) is not None:
                raise ValueError(f"debate {debate_id} already exists")
            self._insert("debates", {
                "id": debate_id, "question": config.get("question", ""), "config": config,
                "protocol": config.get("protocol"), "paradigm": config.get("paradigm"),
                "models": ",".join(models), "status": "running", "reference": config.get("reference"),
                "parent_id": parent_id, "forked_from_seq": forked_from_seq,
                "pid": os.getpid(), "host": socket.gethostname(), "owner": self.owner,
                "created_at": now, "updated_at": now, "heartbeat_at": now,
            })
            for position, agent in enumerate(agents):
                self._insert("agents", {"debate_id": debate_id, "label": agent.get("label"),
                                        "model": agent.get("model"), "persona": agent.get("persona", ""),
                                        "position": position})
        self.current_debate_id = debate_id

    def record(self, event: Event, debate_id: str | None = None) -> None:
        """Write one event (committed before returning). Streaming-only events are ignored."""
        handler = self._handlers.get(type(event))
        if handler is None:
            return
        debate_id = debate_id or getattr(event, "debate_id", None) or self.current_debate_id
        if debate_id is None:
            raise ValueError("record() needs a debate: call create_debate first or pass debate_id")
        with self._write():
            handler(event, debate_id)
            now = time.time()
            if self.owner is None:
                self.db.execute("UPDATE debates SET updated_at = ? WHERE id = ?", [now, debate_id])
            else:  # written only while this owner holds the debate; else undone
                cursor = self.db.execute("UPDATE debates SET updated_at = ?, heartbeat_at = ? WHERE id = ? "
                                         "AND owner = ?", [now, now, debate_id, self.owner])
                if cursor.rowcount != 1:
                    raise ClaimLost(f"debate {debate_id[:8]} is no longer run by this process "
                                    "(another process took it over)")

    def set_status(self, debate_id: str, status: str) -> None:
        if status not in DEBATE_STATUSES:
            raise ValueError(f"unknown status {status!r}; valid: {', '.join(DEBATE_STATUSES)}")
        with self._write():
            self._update_debate(debate_id, status=status, updated_at=time.time())

    def _is_dead(self, row: dict[str, Any], host: str, now: float) -> bool:
        """Whether a 'running' row's owner is gone: no heartbeat for CLAIM_EXPIRES_S, or its process died.

        A debate this very process runs (its owner's claim held in HEARTBEATS) is never gone here: on a
        busy machine the heartbeat thread may lag a minute behind, and this process's own reader (a
        page, an export) would then interrupt its live debates, which fail at their next write."""
        if row.get("pid") == os.getpid() and row.get("host") == host and row.get("owner") in HEARTBEATS.held().values():
            return False
        beat = row.get("heartbeat_at")
        if beat is not None and now - max(beat, row.get("updated_at") or 0) > CLAIM_EXPIRES_S:
            return True
        if row["host"] == host:
            return not _pid_alive(row["pid"])
        return beat is None and now - (row.get("updated_at") or 0) >= STALE_AFTER_S

    def mark_dead_interrupted(self) -> list[str]:
        """Mark 'running' debates whose owner is gone as 'interrupted'; return their ids."""
        host, now = socket.gethostname(), time.time()
        sql = "SELECT id, pid, host, owner, updated_at, heartbeat_at FROM debates WHERE status = 'running'"
        if not any(self._is_dead(row, host, now) for row in self.db.query(sql)):
            return []
        with self._write():  # read again under the write lock: the owner may have beaten meanwhile
            dead = [row["id"] for row in self.db.query(sql) if self._is_dead(row, host, now)]
            for debate_id in dead:
                self.db.execute("UPDATE debates SET status = 'interrupted', owner = NULL WHERE id = ?", [debate_id])
        return dead

    # ----- owners and resume --------------------------------------------------------------
    def heartbeat(self, debate_ids: list[str], owner: str) -> None:
        """Refresh `owner`'s claim on these debates (called by HEARTBEATS)."""
        with self._write():
            self.db.conn.executemany("UPDATE debates SET heartbeat_at = ? WHERE id = ? AND owner = ?",
                                     [(time.time(), debate_id, owner) for debate_id in debate_ids])

    def check_resumable(self, debate_id: str) -> dict[str, Any]:
        """The debate's row if it can be resumed now; else ResumeRefused saying why (changes nothing)."""
        debate = self.get_debate(debate_id)
        if debate is None:
            raise ResumeRefused(f"no debate with id {debate_id!r}")
        status = debate["status"]
        if status not in RESUMABLE_STATUSES + ("running",):
            raise ResumeRefused(f"debate {debate_id[:8]} is {status}: there is nothing to resume "
                                "(fork it to continue it differently)")
        if status == "running" and not self._is_dead(debate, socket.gethostname(), time.time()):
            raise ResumeRefused(f"debate {debate_id[:8]} is still running (process {debate['pid']} on "
                                f"{debate['host']}); it can be resumed once it has ended")
        return debate

    def claim_for_resume(self, debate_id: str, owner: str) -> ResumeClaim:
        """Take a stopped, failed or interrupted debate over for `owner`, atomically.

        Votes, decisions, challenges and the answer are forgotten (the resume replays them from
        the stored turns) in the same transaction; the returned claim keeps them, so that
        `undo_resume` can put the debate back exactly as it was. Raises ResumeRefused when the
        debate is finished, unknown, or running under a live owner."""
        with self._write():
            debate = self.check_resumable(debate_id)
            derived = {table: self.db.execute_returning_dicts(
                f"SELECT * FROM [{table}] WHERE debate_id = ? ORDER BY id", [debate_id]) for table in DERIVED_TABLES}
            marks = {table: self.db.execute(f"SELECT COALESCE(MAX(id), 0) FROM [{table}] WHERE debate_id = ?",
                                            [debate_id]).fetchone()[0] for table in RUN_TABLES}
            for table in DERIVED_TABLES:
                self.db[table].delete_where("debate_id = ?", [debate_id])
            now = time.time()
            self._update_debate(debate_id, status="running", owner=owner, pid=os.getpid(),
                                host=socket.gethostname(), heartbeat_at=now, updated_at=now, answer=None,
                                reason=None, finished_at=None)
        return ResumeClaim(debate_id, owner, {k: debate[k] for k in ("status", "answer", "reason", "finished_at",
                                                                     "pid", "host", "owner", "heartbeat_at",
                                                                     "updated_at")}, derived, marks)

    def undo_resume(self, claim: ResumeClaim) -> bool:
        """Put a debate back as it was before `claim` (rows the resume added go, replayed ones come back).

        Only while `claim.owner` still holds it; returns whether it was undone."""
        with self._write():
            current = self.get_debate(claim.debate_id)
            if current is None or current.get("owner") != claim.owner:
                return False
            for table in RUN_TABLES:
                self.db.execute(f"DELETE FROM [{table}] WHERE debate_id = ? AND id > ?",
                                [claim.debate_id, claim.marks[table]])
            for table, rows in claim.derived.items():
                self.db[table].delete_where("debate_id = ?", [claim.debate_id])
                if rows:
                    self.db[table].insert_all(rows)
            self.db["debates"].update(claim.debate_id, claim.debate)
        return True

    def release(self, debate_id: str, owner: str) -> None:
        """`owner` is done with the debate: nobody holds it now (its status says how it ended)."""
        with self._write():
            self.db.execute("UPDATE debates SET owner = NULL WHERE id = ? AND owner = ?", [debate_id, owner])

    def delete_debate(self, debate_id: str) -> None:
        with self._write():
            for table in ("turns", *CHILD_TABLES, "metric_reports"):
                self.db[table].delete_where("debate_id = ?", [debate_id])
            # its prediction polls (mad_core/polls.py) and their predictions go with it
            self.db["predictions"].delete_where("poll_id IN (SELECT id FROM polls WHERE debate_id = ?)", [debate_id])
            self.db["polls"].delete_where("debate_id = ?", [debate_id])
            self.db["debates"].delete_where("id = ?", [debate_id])

    def _insert(self, table: str, row: dict[str, Any], **kwargs: Any) -> int | None:
        with self._write():
            return self.db[table].insert(_encode(table, row), **kwargs).last_pk

    def _update_debate(self, debate_id: str, **values: Any) -> None:
        with self._write():
            self.db["debates"].update(debate_id, _encode("debates", values))

    def _insert_turn(self, debate_id: str, turn: Turn) -> None:
        row = turn.to_dict()
        row["turn_id"] = row.pop("id")
        # A turn recorded again (e.g. re-run after an interruption) replaces the old row.
        self._insert("turns", {**row, "debate_id": debate_id}, replace=True)

    # Event handlers: each runs inside record()'s transaction.
    def _on_started(self, event: DebateStarted, debate_id: str) -> None:
        if self.get_debate(debate_id) is None:
            self.create_debate(debate_id, event.config, parent_id=event.parent_id)
        elif event.resumed:
            self._update_debate(debate_id, status="running", pid=os.getpid(), host=socket.gethostname(),
                                finished_at=None)
        self.current_debate_id = debate_id

    def _on_round(self, event: RoundStarted, debate_id: str) -> None:
        self._insert("rounds", {"debate_id": debate_id, "round": event.round, "speakers": list(event.order),
                                "ts": event.ts})

    def _on_personas(self, event: PersonasAssigned, debate_id: str) -> None:
        for label, persona in event.personas.items():
            self.db["agents"].upsert({"debate_id": debate_id, "label": label, "persona": persona},
                                     pk=("debate_id", "label"))

    def _on_turn(self, event: TurnFinished, debate_id: str) -> None:
        self._insert_turn(debate_id, event.turn)

    def _insert_event(self, table: str, event: Event, debate_id: str, **extra: Any) -> None:
        self._insert(table, {**dataclasses.asdict(event), **extra, "debate_id": debate_id})

    def _on_decision_reached(self, event: DecisionReached, debate_id: str) -> None:
        self._insert_event("decisions", event, debate_id, reached=True, final=True)
        self._update_debate(debate_id, answer=event.answer)

    def _on_finished(self, event: DebateFinished, debate_id: str) -> None:
        values: dict[str, Any] = {"status": event.status, "reason": event.reason, "finished_at": event.ts}
        if event.answer is not None:
            values["answer"] = event.answer
        self._update_debate(debate_id, **values)

    # ----- reading ------------------------------------------------------------------------
    def _rows(self, table: str, where: str, args: list[Any], order_by: str = "id",
              limit: int | None = None) -> list[dict[str, Any]]:
        rows = self.db[table].rows_where(where, args, order_by=order_by, limit=limit)
        return [_decode(table, row) for row in rows]

    def get_debate(self, debate_id: str) -> dict[str, Any] | None:
        rows = self._rows("debates", "id = ?", [debate_id])
        return rows[0] if rows else None

    def find_debate_id(self, prefix: str) -> str:
        """The full id of the one debate whose id starts with `prefix` (LookupError otherwise)."""
        prefix = prefix.strip()
        if not prefix:
            raise LookupError("no debate id given")
        sql = "SELECT id FROM debates WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at DESC"
        ids = [row["id"] for row in self.db.query(sql, [_like_escape(prefix) + "%"])]
        if prefix in ids:
            return prefix
        if not ids:
            raise LookupError(f"no debate with id {prefix!r}")
        if len(ids) > 1:
            raise LookupError(f"id prefix {prefix!r} is ambiguous: it matches {', '.join(i[:12] for i in ids)}")
        return ids[0]

    def list_debates(self, *, status: str | None = None, protocol: str | None = None,
                     search: str | None = None, limit: int = 200, tag: str | None = None,
                     model: str | None = None, outcome: str | None = None,
                     correctness: str | None = None) -> list[dict[str, Any]]:
        """Debates newest first; `search` matches turn text, annotations, moderator messages (FTS,
        each word as a word's start: `prefix_query`) and the question (the text anywhere in it). The filters combine (AND): `tag` (a codebook tag on any of its turns),
        `model` (an agent's or the judge's), `outcome` (OUTCOMES), `correctness` (CORRECTNESS,
        `debate_correctness`); an unknown outcome or correctness is a ValueError naming it.

        Running debates whose owner is gone are marked interrupted first. `search` is cut to
        MAX_QUERY_CHARS and `limit` kept within 1..MAX_LIST_LIMIT."""
        if outcome and outcome not in OUTCOMES:
            raise ValueError(f"outcome: unknown {outcome!r}; valid: {', '.join(OUTCOMES)}")
        if correctness and correctness not in CORRECTNESS:
            raise ValueError(f"correctness: unknown {correctness!r}; valid: {', '.join(CORRECTNESS)}")
        self.mark_dead_interrupted()
        limit = _bounded_limit(limit)
        clauses, args = [], []
        if status:
            clauses.append("status = ?")
            args.append(status)
        if protocol:
            clauses.append("protocol = ?")
            args.append(protocol)
        if tag:
            clauses.append("id IN (SELECT debate_id FROM annotations WHERE tag = ? COLLATE NOCASE)")
            args.append(tag)
        if model:
            clauses.append("(id IN (SELECT debate_id FROM agents WHERE model = ?) "
                           "OR json_extract(config, '$.judge_model') = ?)")
            args += [model, model]
        if outcome:
            clauses.append(f"({OUTCOMES[outcome]})")
        search = _clean_query(search)
        if search:
            matches = ["question LIKE ? ESCAPE '\\'"]
            args.append(f"%{_like_escape(search)}%")
            fts_query = prefix_query(self.db, search)
            if fts_query:
                matches += [
                    "id IN (SELECT debate_id FROM turns WHERE id IN "
                    "(SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?))",
                    "id IN (SELECT debate_id FROM annotations WHERE id IN "
                    "(SELECT rowid FROM annotations_fts WHERE annotations_fts MATCH ?))",
                    "id IN (SELECT debate_id FROM steering WHERE id IN "
                    "(SELECT rowid FROM steering_fts WHERE steering_fts MATCH ?))",
                ]
                args += [fts_query, fts_query, fts_query]
            clauses.append("(" + " OR ".join(matches) + ")")
        where = " AND ".join(clauses) or "1"
        order = "created_at DESC, rowid DESC"
        if not correctness:
            return self._rows("debates", where, args, order_by=order, limit=limit)
        rows = self._rows("debates", where, args, order_by=order)
        return [row for row in rows if self.correctness(row) == correctness][:limit]

    def correctness(self, debate: dict[str, Any]) -> str:
        """`debate_correctness` of a debates row, using its stored metric report when that report
        was computed for the debate as it is now (any embedder)."""
        from .metrics.report import report_stamp

        prefix = report_stamp(debate, "")
        summary = None
        for row in self.db.query("SELECT stamp, report FROM metric_reports WHERE debate_id = ?", [debate["id"]]):
            if row["stamp"].startswith(prefix):
                summary = (json.loads(row["report"]) or {}).get("summary")
        return debate_correctness(debate, summary)

    def models_used(self) -> list[str]:
        """Every agent or judge model of the stored debates, sorted (for the model filter)."""
        sql = ("SELECT model FROM agents WHERE COALESCE(model, '') != '' UNION "
               "SELECT json_extract(config, '$.judge_model') FROM debates "
               "WHERE COALESCE(json_extract(config, '$.judge_model'), '') != ''")
        return sorted({row[0] for row in self.db.execute(sql).fetchall() if isinstance(row[0], str)})

    def turns(self, debate_id: str) -> list[Turn]:
        return [_turn_from_row(row)
                for row in self.db["turns"].rows_where("debate_id = ?", [debate_id], order_by="seq, id")]

    def _children(self, table: str, debate_id: str) -> list[dict[str, Any]]:
        order = "position" if table == "agents" else "id"
        return self._rows(table, "debate_id = ?", [debate_id], order_by=order)

    def agents(self, debate_id: str) -> list[dict[str, Any]]:
        return self._children("agents", debate_id)

    def votes(self, debate_id: str) -> list[dict[str, Any]]:
        rows = self._children("votes", debate_id)
        for row in rows:  # JSON object keys are strings; cumulative ballots map solution index -> points
            if isinstance(row.get("ballot"), dict):
                row["ballot"] = {int(k): v for k, v in row["ballot"].items()}
        return rows

    def decisions(self, debate_id: str) -> list[dict[str, Any]]:
        return self._children("decisions", debate_id)

    def challenges(self, debate_id: str) -> list[dict[str, Any]]:
        return self._children("challenges", debate_id)

    def steering(self, debate_id: str) -> list[dict[str, Any]]:
        return self._children("steering", debate_id)

    def errors(self, debate_id: str) -> list[dict[str, Any]]:
        return self._children("errors", debate_id)

    def rounds(self, debate_id: str) -> list[dict[str, Any]]:
        """Each round's speaking order as it was announced (RoundStarted), in order."""
        return self._children("rounds", debate_id)

    def search_turns(self, query: str, limit: int = 100) -> list[dict[str, Any]]:
        """Turns matching `query` (any text is safe: it is quoted; each word matches a word's start),
        best first, with a snippet."""
        query, limit = _clean_query(query), _bounded_limit(limit)
        fts_query = prefix_query(self.db, query)
        if not fts_query:
            return []
        results = []
        for row in self.db["turns"].search(fts_query, limit=limit):
            turn = _turn_from_row(row).to_dict()
            turn["turn_id"] = turn.pop("id")
            results.append({"debate_id": row["debate_id"], **turn, "snippet": _snippet(turn["content"], query)})
        return results

    # (FTS table, row table, where a match is, SQL for a label of the matched row)
    _MATCH_SOURCES = (
        ("turns_fts", "turns", "turn", "r.agent || ' · round ' || r.round", "r.seq, r.id"),
        ("annotations_fts", "annotations", "annotation", "'tag ' || r.tag", "r.id"),
        ("steering_fts", "steering", "moderator message", "r.targets", "r.id"),
    )

    def search_matches(self, search: str | None, debate_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Why each of `debate_ids` matches `search` (as `list_debates` matches it): debate id ->
        {"where": "turn" / "annotation" / "moderator message" / "question", "label" (whose turn,
        which tag), "parts": [(text, matched)] (a short snippet, the matched words marked),
        "more": how many other matches it has}. The first match in that order of places is shown.
        Debates without a match are left out; never raises on odd input."""
        search = _clean_query(search)
        ids = list(dict.fromkeys(debate_ids))[:MAX_LIST_LIMIT]
        if not search or not ids:
            return {}
        fts_query = prefix_query(self.db, search)
        found: dict[str, dict[str, Any]] = {}
        counts: dict[str, int] = {}
        for start in range(0, len(ids), 500):  # SQLite's limit on bound parameters
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for fts, table, where, label, order in self._MATCH_SOURCES if fts_query else ():
                first = list(self.db.query(
                    f"SELECT debate_id, id, label, n FROM (SELECT r.debate_id, r.id, {label} AS label, "
                    f"ROW_NUMBER() OVER (PARTITION BY r.debate_id ORDER BY {order}) AS k, "
                    f"COUNT(*) OVER (PARTITION BY r.debate_id) AS n FROM {fts} JOIN {table} r ON r.id = {fts}.rowid "
                    f"WHERE {fts} MATCH ? AND r.debate_id IN ({marks})) WHERE k = 1", [fts_query, *chunk]))
                snippets = {row["rowid"]: row["s"] for row in self.db.query(
                    f"SELECT rowid, snippet({fts}, -1, ?, ?, '…', 12) AS s FROM {fts} WHERE {fts} MATCH ? "
                    f"AND rowid IN ({','.join('?' * len(first))})",
                    [MATCH_OPEN, MATCH_CLOSE, fts_query, *[row["id"] for row in first]])} if first else {}
                for row in first:
                    counts[row["debate_id"]] = counts.get(row["debate_id"], 0) + row["n"]
                    found.setdefault(row["debate_id"], {"where": where, "label": _match_label(where, row["label"]),
                                                        "parts": _marked_parts(snippets.get(row["id"], ""))})
            for row in self.db.query(f"SELECT id, question FROM debates WHERE id IN ({marks}) "
                                     "AND question LIKE ? ESCAPE '\\'", [*chunk, f"%{_like_escape(search)}%"]):
                counts[row["id"]] = counts.get(row["id"], 0) + 1
                found.setdefault(row["id"], {"where": "question", "label": "",
                                             "parts": _question_parts(row["question"] or "", search)})
        for debate_id, match in found.items():
            match["more"] = counts[debate_id] - 1
        return found

    # ----- annotations --------------------------------------------------------------------
    def annotate(self, debate_id: str, turn_id: str, tag: str, note: str = "", annotator: str = "") -> int:
        """Tag a turn (with a note, and who tagged it). A tag the codebook lacks is added to it; one
        it holds in another case is written in the codebook's spelling."""
        tag = tag_name(tag)
        with self._write():
            tag = self._ensure_tag(tag)
            return self._insert("annotations", {"debate_id": debate_id, "turn_id": turn_id, "tag": tag,
                                                "note": note, "annotator": " ".join(str(annotator or "").split())
                                                or None, "created_at": time.time()})

    def annotations(self, debate_id: str) -> list[dict[str, Any]]:
        return self._children("annotations", debate_id)

    def delete_annotation(self, annotation_id: int, *, turn_id: str | None = None) -> bool:
        """Delete one annotation by its id (only when it is on `turn_id`, if given: a button drawn for
        an annotation since deleted never removes another). True when one was deleted."""
        where, args = ("id = ?", [annotation_id]) if turn_id is None else ("id = ? AND turn_id = ?",
                                                                          [annotation_id, turn_id])
        with self._write():
            return self.db.execute(f"DELETE FROM annotations WHERE {where}", args).rowcount > 0

    def annotations_csv(self, debate_id: str | None = None) -> str:
        """Annotations for inter-rater work, as CSV (ANNOTATION_COLUMNS; every cell `csv_safe`): one
        row per annotation of the debate (of the whole archive when `debate_id` is None), with its
        turn's text and place, and as context what the transcript shows just before it: the turn
        before it, or the moderator message in between (pause / resume / stop are skipped: they say
        nothing to the agents)."""
        where, args = ("WHERE a.debate_id = ?", [debate_id]) if debate_id else ("", [])
        sql = ("SELECT a.*, d.question, d.created_at AS debate_created FROM annotations a "
               f"LEFT JOIN debates d ON d.id = a.debate_id {where} ORDER BY d.created_at, a.debate_id, a.id")
        notes = list(self.db.query(sql, args))
        places: dict[str, dict[str, dict[str, Any]]] = {}
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=ANNOTATION_COLUMNS)
        writer.writeheader()
        for note in notes:
            if note["debate_id"] not in places:
                places[note["debate_id"]] = self._turn_places(note["debate_id"])
            place = places[note["debate_id"]].get(note["turn_id"], {})
            row = {"debate_id": note["debate_id"], "question": note["question"], "turn_id": note["turn_id"],
                   **place,
                   "tag": note["tag"], "note": note["note"] or "", "annotator": note.get("annotator") or "",
                   "created_at": _iso_time(note["created_at"])}
            writer.writerow({key: csv_safe(row.get(key, "")) for key in ANNOTATION_COLUMNS})
        return out.getvalue()

    def _turn_places(self, debate_id: str) -> dict[str, dict[str, Any]]:
        """turn id -> its annotation-CSV columns (turn and context), in the transcript's own order
        (`DebateView.timeline`, the order the Transcripts page draws: turns and moderator messages)."""
        from .view import DebateView  # here: view.py reads the store's rows (no import cycle at load)

        if self.get_debate(debate_id) is None:
            return {}
        view = DebateView.from_store(self, debate_id)
        places: dict[str, dict[str, Any]] = {}
        before: dict[str, Any] = {}
        for kind, item in view.timeline:
            if kind == "steer":
                if item.action == "message":
                    before = {"previous_kind": MODERATOR_MESSAGE, "previous_agent": "Moderator",
                              "previous_to": ", ".join(item.targets) if item.targets else "all agents",
                              "previous_text": item.message or ""}
                continue
            turn = view.turns[view.turn_index(item)]
            places[turn.id] = {"round": turn.round, "turn_seq": "" if turn.seq is None else turn.seq,
                               "agent": turn.agent, "kind": turn.kind, "text": turn.text,
                               "copied_from_parent": "yes" if view.from_parent(turn) else "no", **before}
            before = {"previous_kind": turn.kind, "previous_agent": turn.agent, "previous_to": "",
                      "previous_text": turn.text}
        return places

    def tags_of_debates(self, debate_ids: list[str]) -> dict[str, list[str]]:
        """debate id -> the distinct tags on its turns, by name (debates without any are left out)."""
        found: dict[str, set[str]] = {}
        for start in range(0, len(debate_ids), 500):  # SQLite's limit on bound parameters
            chunk = list(debate_ids[start:start + 500])
            marks = ",".join("?" * len(chunk))
            for row in self.db.query(f"SELECT DISTINCT debate_id, tag FROM annotations WHERE debate_id IN ({marks})",
                                     chunk):
                found.setdefault(row["debate_id"], set()).add(row["tag"])
        return {key: sorted(tags, key=str.lower) for key, tags in found.items()}

    # ----- the codebook: annotation tags shared by the whole archive ----------------------------
    def tags(self) -> list[dict[str, Any]]:
        """The codebook by name: each tag's id, name, colour, annotations using it (`count`) and
        debates they are in (`debates`)."""
        sql = ("SELECT t.id, t.name, t.colour, t.created_at, COUNT(a.id) AS count, "
               "COUNT(DISTINCT a.debate_id) AS debates FROM tags t LEFT JOIN annotations a ON a.tag = t.name "
               "GROUP BY t.id ORDER BY t.name COLLATE NOCASE")
        return list(self.db.query(sql))

    def tag(self, name: str) -> dict[str, Any] | None:
        """The codebook entry named `name` (any case), or None."""
        rows = list(self.db.query("SELECT id, name, colour, created_at FROM tags WHERE name = ?", [str(name)]))
        return rows[0] if rows else None

    def _ensure_tag(self, name: str, colour: str | None = None) -> str:
        """The codebook's spelling of `name`, adding it (`free_tag_colour` unless `colour` is given) when
        missing. Runs in a write."""
        found = self.tag(name)
        if found is not None:
            return found["name"]
        colour = colour or free_tag_colour(row[0] for row in self.db.execute("SELECT colour FROM tags"))
        self.db.execute("INSERT INTO tags (name, colour, created_at) VALUES (?, ?, ?)", [name, colour, time.time()])
        return name

    @staticmethod
    def _check_colour(colour: Any) -> None:
        if colour not in TAG_COLOURS:
            raise ValueError(f"colour: {colour!r} is not in the palette ({', '.join(TAG_COLOURS)})")

    def add_tag(self, name: str, colour: str | None = None) -> str:
        """Add a tag to the codebook (a name it holds in any case is not added twice, whatever the
        threads or processes); returns the codebook's spelling."""
        name = tag_name(name, "new tag")
        if colour is not None:
            self._check_colour(colour)
        with self._write():
            return self._ensure_tag(name, colour)

    def _tag_or_fail(self, name: str) -> dict[str, Any]:
        found = self.tag(name)
        if found is None:
            raise LookupError(f"tag: the codebook has no tag {name!r}")
        return found

    def rename_tag(self, old: str, new: str) -> str:
        """Rename a tag and every annotation that uses it, in one transaction. Refused (ValueError)
        when another tag already has the new name. Returns the new name."""
        new = tag_name(new, "new name")
        with self._write():
            found = self._tag_or_fail(old)
            clash = self.tag(new)
            if clash is not None and clash["id"] != found["id"]:
                raise ValueError(f"new name: the codebook already has {clash['name']!r}; pick another name")
            self.db.execute("UPDATE tags SET name = ? WHERE id = ?", [new, found["id"]])
            self.db.execute("UPDATE annotations SET tag = ? WHERE tag = ?", [new, found["name"]])
        return new

    def set_tag_colour(self, name: str, colour: str) -> None:
        self._check_colour(colour)
        with self._write():
            self.db.execute("UPDATE tags SET colour = ? WHERE id = ?", [colour, self._tag_or_fail(name)["id"]])

    def delete_tag(self, name: str) -> None:
        """Remove an unused tag from the codebook; a tag still on annotations is refused (ValueError)."""
        with self._write():
            found = self._tag_or_fail(name)
            used = self.db.execute("SELECT COUNT(*) FROM annotations WHERE tag = ?", [found["name"]]).fetchone()[0]
            if used:
                raise ValueError(f"tag: {found['name']!r} is on {used} annotation{'s' if used != 1 else ''}; "
                                 f"delete {'those' if used != 1 else 'it'} or rename the tag instead")
            self.db.execute("DELETE FROM tags WHERE id = ?", [found["id"]])

    # ----- metric cache (mad_core/metrics/report.py computes; this only keeps) -----------------
    def cached_report(self, debate_id: str, stamp: str) -> dict[str, Any] | None:
        """The stored metric report of a debate if it was computed for `stamp`, else None."""
        rows = list(self.db.query("SELECT report FROM metric_reports WHERE debate_id = ? AND stamp = ?",
                                  [debate_id, stamp]))
        return json.loads(rows[0]["report"]) if rows else None

    def save_report(self, debate_id: str, stamp: str, report: dict[str, Any]) -> None:
        with self._write():
            self.db["metric_reports"].upsert({"debate_id": debate_id, "stamp": stamp, "report": json.dumps(report),
                                              "computed_at": time.time()}, pk="debate_id")

    def cached_embeddings(self, model: str, hashes: list[str]) -> dict[str, bytes]:
        """text hash -> stored vector (bytes) for the hashes known under `model`."""
        found: dict[str, bytes] = {}
        for start in range(0, len(hashes), 500):  # SQLite's limit on bound parameters
            chunk = hashes[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.db.query(f"SELECT text_hash, vector FROM embeddings WHERE model = ? "
                                     f"AND text_hash IN ({marks})", [model, *chunk]):
                found[row["text_hash"]] = row["vector"]
        return found

    def save_embeddings(self, model: str, vectors: dict[str, bytes]) -> None:
        now = time.time()
        with self._write():
            self.db["embeddings"].upsert_all([{"text_hash": h, "model": model, "vector": v, "created_at": now}
                                              for h, v in vectors.items()], pk=("text_hash", "model"))

    # ----- export / import ----------------------------------------------------------------
    def export_debate(self, debate_id: str, *, embed: Any = None) -> dict[str, Any]:
        """Everything about one debate as plain JSON-able data (lossless; see import_debate), with
        its metric report under "metrics" (`metrics_report`; an import recomputes it)."""
        debate = self.get_debate(debate_id)
        if debate is None:
            raise LookupError(f"no debate with id {debate_id!r}")
        config = debate.pop("config")
        data: dict[str, Any] = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "debate": debate,
                                "config": config, "turns": [t.to_dict() for t in self.turns(debate_id)]}
        for table in CHILD_TABLES:
            data[table] = [_strip_ids(row) for row in self._children(table, debate_id)]
        data["metrics"] = self.metrics_report(debate_id, embed=embed)
        return data

    def metrics_report(self, debate_id: str, *, embed: Any = None) -> dict[str, Any]:
        """The debate's metric report (mad_core/metrics/report.py), cached in this database.
        `embed` replaces the bundled SBERT model (tests)."""
        from .metrics.report import debate_report

        return debate_report(self, debate_id, embed=embed)

    def import_debate(self, data: Any, *, new_id: bool = False) -> str:
        """Re-create an exported debate (what `json.load` read from an export, or its JSON text);
        with `new_id` under a fresh id. Returns the id.

        The export is checked completely first (`export_schema.validate_export`: ExportError
        naming the field, and nothing written), its depth and size before anything walks it
        ("nested deeper than 64 levels", "larger than 200 MB"); then secrets are scrubbed from its
        configuration; the imported debate belongs to nobody (never 'running')."""
        data = validate_export(read_export_text(data) if isinstance(data, (str, bytes, bytearray)) else data)
        data = {**data, "config": scrub_secrets(data["config"])}
        debate_id = uuid.uuid4().hex if new_id else data["debate"]["id"]
        with self._write():
            if self.get_debate(debate_id) is not None:
                raise ValueError(f"debate {debate_id} already exists; import it with a new id")
            self._insert("debates", {**data["debate"], "id": debate_id, "config": data["config"], "owner": None})
            for turn in data.get("turns", []):
                self._insert_turn(debate_id, Turn.from_dict(turn))
            for table in CHILD_TABLES:
                for row in data.get(table, []):
                    if table == "annotations":  # its tag joins the codebook (in the codebook's spelling)
                        row = {**row, "tag": self._ensure_tag(" ".join(row["tag"].split()) or row["tag"])}
                    self._insert(table, {**row, "debate_id": debate_id})
        return debate_id

    def to_markdown(self, debate_id: str, *, embed: Any = None) -> str:
        """A readable handout, safe to render: every stored text is escaped (`md_safe`), so model
        or user text can produce no HTML, no link and no image; no HTML of our own is produced.
        It ends with a short metrics section (`metrics.report.markdown_lines`)."""
        from .metrics.report import markdown_lines

        data = _deep_map(self.export_debate(debate_id, embed=embed), md_safe)
        debate, config = data["debate"], data["config"]
        notes: dict[str, list[dict[str, Any]]] = {}
        for note in data["annotations"]:
            notes.setdefault(note["turn_id"], []).append(note)
        lines = [f"# {debate['question']}", ""]
        if config.get("task"):
            lines += [config["task"], ""]
        lines += [
            f"- **Debate:** `{debate['id']}` · {debate['status']} · started {format_time(debate['created_at'])}",
            f"- **Protocol:** {debate['protocol']} · **Paradigm:** {debate['paradigm']} · "
            f"**Responses:** {config.get('response_generator', '-')} · **Ordering:** {config.get('ordering', '-')} · "
            f"**Rounds:** {config.get('rounds', '-')} (max {config.get('max_rounds', '-')})",
        ]
        for agent in data["agents"]:
            persona = f" — {agent['persona']}" if agent.get("persona") else ""
            lines.append(f"- **{agent['label']}:** {agent['model']}{persona}")
        if config.get("judge_model"):
            lines.append(f"- **Judge:** {config['judge_model']}")
        if debate.get("reference"):
            lines.append(f"- **Reference answer:** {debate['reference']}")
        lines.append(f"- **Final answer:** {debate.get('answer') or '(none)'}")
        rounds = sorted({row["round"] for table in ("turns", "votes", "decisions") for row in data[table]})
        for number in rounds:
            lines += ["", f"## Round {number}"]
            for turn in (t for t in data["turns"] if t["round"] == number):
                lines += ["", f"### {turn['agent']} · {turn['kind']} ({turn['model']})", ""]
                if turn["status"] != "ok":
                    lines += [f"*{turn['status']}: {turn.get('error') or 'no detail'}*", ""]
                lines.append(turn["content"] or "(no text)")
                if turn.get("answer"):
                    lines += ["", f"**Answer:** {turn['answer']}"]
                lines += [f"> **{n['tag']}**: {n['note']}" for n in notes.get(turn["id"], [])]
            votes = [v for v in data["votes"] if v["round"] == number]
            if votes:
                lines += ["", "**Votes**", ""]
                lines += [f"- {v['agent']}: " + (describe_ballot(v["ballot"]) if v["valid"]
                                                 else f"invalid ({v.get('reason') or 'unparseable'})") for v in votes]
            for d in (d for d in data["decisions"] if d["round"] == number):
                if d["final"]:
                    winner = f" — {d['winner_agent']}" if d.get("winner_agent") else ""
                    how = " (forced)" if d.get("forced") else ""
                    lines += ["", f"**Decision ({d['protocol']}){how}:** {d['answer']}{winner}"]
                    if d.get("fallback"):
                        lines.append(f"Fallback: {d['fallback']}")
                elif not d["reached"]:
                    lines += ["", f"**No decision ({d['protocol']}):** {d.get('reason') or ''}"]
        if data["challenges"]:
            lines += ["", "## Challenges", ""]
            lines += [f"- {c['agent']} {STANCES[c['agrees']]}"
                      + (f" — proposes {c['new_answer']}" if c.get("new_answer") else "") for c in data["challenges"]]
        if data["steering"]:
            lines += ["", "## Steering", ""]
            lines += [f"- {format_time(s['ts'])} {s['action']}"
                      + (f" → {', '.join(s['targets'])}" if s.get("targets") else "")
                      + (f": {s['message']}" if s.get("message") else "") for s in data["steering"]]
        lines += markdown_lines(data["metrics"])
        return "\n".join(lines) + "\n"

    def to_csv(self, debate_id: str, *, embed: Any = None) -> str:
        """One row per turn, with its annotations joined as 'tag: note; ...'; each discussion turn
        also has its answer as the metrics read it and its round's metrics (`round_*` columns,
        the same numbers on every turn of a round: filter on kind to count rounds once)."""
        from .metrics.report import csv_columns

        notes: dict[str, list[str]] = {}
        for note in self.annotations(debate_id):
            notes.setdefault(note["turn_id"], []).append(f"{note['tag']}: {note['note']}")
        report = self.metrics_report(debate_id, embed=embed)
        columns = ["turn_id", "seq", "round", "agent", "kind", "model", "status", "content", "answer",
                   "prompt_tokens", "completion_tokens", "latency_s", "annotations",
                   *csv_columns(report, "discussion", 0, "")]
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for turn in self.turns(debate_id):
            row = {**turn.to_dict(), "turn_id": turn.id, "annotations": "; ".join(notes.get(turn.id, [])),
                   **csv_columns(report, turn.kind, turn.round, turn.agent)}
            writer.writerow({key: csv_safe(value) for key, value in row.items()})
        return out.getvalue()


# ----- the store as a listener of a running debate -----------------------------------------------
class DebateRecorder:
    """The store's side of one running debate: a listener the engine hands every event to.

    It opens its own Store in the engine's thread (`open`), creates the debate (or finds the
    resumed one) and keeps its claim alive (`begin`), writes each event before the consumer
    sees it (`record`), and lets go at the end (`end`): a resume that failed before any new turn
    succeeded is undone, and the claim is released. The engine knows nothing of SQL."""

    def __init__(self, path: str | Path, debate_id: str, owner: str, claim: ResumeClaim | None = None):
        self.path, self.debate_id, self.owner, self.claim = path, debate_id, owner, claim
        self.store: Store | None = None
        self.broken = False  # the database refused a write: nothing more is attempted

    def open(self) -> None:
        self.store = Store(self.path, owner=self.owner)

    def begin(self, config: dict[str, Any], *, parent_id: str | None, forked_from_seq: int | None,
              created_at: float, resumed: bool) -> None:
        if not resumed:
            self.store.create_debate(self.debate_id, config, parent_id=parent_id, forked_from_seq=forked_from_seq,
                                     created_at=created_at)
        HEARTBEATS.add(self.path, self.debate_id, self.owner)

    def record(self, event: Event) -> None:
        """Write one event (raises what the database raised: the engine then ends the debate)."""
        self.store.record(event, self.debate_id)

    def record_failure(self, events: list[Event], claim_lost: bool) -> None:
        """Best effort: the failure's events, unless the claim was lost or the database refuses."""
        if self.store is None or claim_lost:
            return
        try:
            for event in events:
                self.store.record(event, self.debate_id)
        except Exception:  # noqa: BLE001 - the consumer still hears it; the claim expires
            self.broken = True

    def end(self, failed: bool, progressed: bool) -> None:
        """Stop beating and let go of the debate (a resume that got nowhere is put back as it was)."""
        HEARTBEATS.remove(self.path, self.debate_id)
        if self.store is None:
            return
        try:
            if self.claim is not None and failed and not progressed:
                self.store.undo_resume(self.claim)
            self.store.release(self.debate_id, self.owner)
        except Exception:  # noqa: BLE001 - an unreleased claim expires on its own
            pass


# ----- heartbeats -------------------------------------------------------------------------------
class _Heartbeats:
    """One daemon thread per process that keeps the claims of this process's debates fresh.

    An engine adds its debate when it starts (or claims it for a resume) and removes it when it
    ends, however it ends; a claim nobody refreshes expires after CLAIM_EXPIRES_S."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims: dict[tuple[str, str], str] = {}  # (database path, debate id) -> owner
        self._thread: threading.Thread | None = None

    def add(self, path: str | Path, debate_id: str, owner: str) -> None:
        with self._lock:
            self._claims[(str(path), debate_id)] = owner
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="madlab-heartbeat", daemon=True)
                self._thread.start()

    def remove(self, path: str | Path, debate_id: str) -> None:
        with self._lock:
            self._claims.pop((str(path), debate_id), None)

    def held(self) -> dict[tuple[str, str], str]:
        with self._lock:
            return dict(self._claims)

    def _run(self) -> None:
        stores: dict[str, Store] = {}
        while True:
            time.sleep(HEARTBEAT_EVERY_S)
            by_store: dict[tuple[str, str], list[str]] = {}
            for (path, debate_id), owner in self.held().items():
                by_store.setdefault((path, owner), []).append(debate_id)
            for (path, owner), debate_ids in by_store.items():
                try:
                    if path not in stores:
                        stores[path] = Store(path)
                    stores[path].heartbeat(debate_ids, owner)
                except Exception:  # noqa: BLE001 - a missed beat is retried; a claim left unbeaten expires
                    stores.pop(path, None)


HEARTBEATS = _Heartbeats()
