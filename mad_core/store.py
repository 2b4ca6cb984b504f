"""SQLite persistence for debates: turns, votes, decisions, steering, annotations, exports.

What it is for: the engine hands every event to `Store.record` as it happens, and each one
is committed before `record` returns, so a crash never loses a finished turn. The CLI and
the app read debates back, search them (SQLite FTS5), annotate turns and export/import them
(JSON, Markdown, CSV).

What it must not do: store API keys or other secrets (configs are scrubbed of anything
named like a key or a token before they are written), import streamlit, or share one
connection between threads. SQLite connections belong to the thread that opened them, so
every thread opens its own `Store` (the engine's background thread creates its own).

Built on sqlite-utils: numbered migrations (`m001_initial`, ...) recorded in `_migrations`,
FTS5 tables kept current by triggers, explicit integer primary keys on the searched tables,
and `search(q, quote=True)` so user input can never break the FTS query syntax.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import socket
import sqlite3
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any, Callable

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
    SteeringApplied,
    Turn,
    TurnFinished,
    VoteCast,
)

EXPORT_FORMAT = "madlab-debate"
EXPORT_VERSION = 1
# A 'running' debate on another host that has written nothing for this long is interrupted.
STALE_AFTER_S = 600.0

# Columns stored as JSON text, and columns stored as 0/1 that read back as bools.
JSON_COLUMNS: dict[str, tuple[str, ...]] = {
    "debates": ("config",),
    "turns": ("prompt",),
    "votes": ("ballot",),
    "decisions": ("scores", "solutions", "solution_agents", "details"),
    "steering": ("targets",),
}
BOOL_COLUMNS: dict[str, tuple[str, ...]] = {
    "turns": ("agreement",),
    "votes": ("valid",),
    "decisions": ("reached", "final", "forced"),
    "challenges": ("agrees",),
}
# Tables that hang off a debate (besides turns), in export order.
CHILD_TABLES = ("agents", "votes", "decisions", "challenges", "steering", "errors", "annotations")

# What a resumed debate recomputes from its stored turns.
DERIVED_TABLES = ("votes", "decisions", "challenges")
# Config keys that may hold a secret: api_key, openai_api_key, apikey, token, hf_token, secret...
_SECRET_KEY = re.compile(r"(^|_)(api_?key|key|token|secret|password)$", re.IGNORECASE)


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


# ----- helpers ------------------------------------------------------------------------------
def scrub_secrets(value: Any) -> Any:
    """A copy of `value` without any mapping key named like an API key, token or secret."""
    if isinstance(value, dict):
        return {k: scrub_secrets(v) for k, v in value.items() if not _SECRET_KEY.search(str(k))}
    if isinstance(value, (list, tuple)):
        return [scrub_secrets(v) for v in value]
    return value


def _encode(table: str, row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    for column in JSON_COLUMNS.get(table, ()):
        if column in row:
            row[column] = json.dumps(row[column], ensure_ascii=False)
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
    """Search text without NUL characters (which SQLite's FTS parser cannot take)."""
    return (text or "").replace("\x00", " ").strip()


def _snippet(text: str, query: str, width: int = 160) -> str:
    """Up to `width` characters of `text` around the first query term found in it."""
    lowered = text.lower()
    hits = [i for i in (lowered.find(t) for t in re.findall(r"\w+", query.lower())) if i >= 0]
    start = max(0, min(hits) - width // 3) if hits else 0
    piece = text[start:start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")


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
class Store:
    """One SQLite database of debates. One Store per thread: its connection is not shared.

    `record(event)` attaches events to the debate last created (or started) through this
    Store, unless a `debate_id` is passed.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_db_path()
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # timeout: wait for the other thread's write (engine vs. app) rather than fail.
        self.db = Database(sqlite3.connect(str(self.path), timeout=30))
        self.db.enable_wal()
        self._migrate()
        self.current_debate_id: str | None = None
        self._handlers: dict[type[Event], Callable[[Any, str], None]] = {
            DebateStarted: self._on_started,
            PersonasAssigned: self._on_personas,
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
        self.db.execute("BEGIN IMMEDIATE")
        try:
            MIGRATIONS.apply(self.db)
        except BaseException:
            self.db.rollback()
            raise
        self.db.commit()

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
                      forked_from_seq: int | None = None) -> None:
        """Store a new running debate owned by this process, with its agents."""
        config = scrub_secrets(config.to_dict() if hasattr(config, "to_dict") else dict(config))
        if self.get_debate(debate_id) is not None:
            raise ValueError(f"debate {debate_id} already exists")
        agents = config.get("agents") or []
        models = list(dict.fromkeys(a.get("model", "") for a in agents))
        now = time.time()
        with self.db.atomic():
            self._insert("debates", {
                "id": debate_id, "question": config.get("question", ""), "config": config,
                "protocol": config.get("protocol"), "paradigm": config.get("paradigm"),
                "models": ",".join(models), "status": "running", "reference": config.get("reference"),
                "parent_id": parent_id, "forked_from_seq": forked_from_seq,
                "pid": os.getpid(), "host": socket.gethostname(),
                "created_at": now, "updated_at": now,
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
        with self.db.atomic():
            handler(event, debate_id)
            self.db.execute("UPDATE debates SET updated_at = ? WHERE id = ?", [time.time(), debate_id])

    def set_status(self, debate_id: str, status: str) -> None:
        if status not in DEBATE_STATUSES:
            raise ValueError(f"unknown status {status!r}; valid: {', '.join(DEBATE_STATUSES)}")
        self._update_debate(debate_id, status=status, updated_at=time.time())

    def mark_dead_interrupted(self) -> list[str]:
        """Mark 'running' debates whose process is gone as 'interrupted'; return their ids."""
        host, now = socket.gethostname(), time.time()
        dead = [
            row
            for row in self.db.query("SELECT id, pid, host, updated_at FROM debates WHERE status = 'running'")
            if not (_pid_alive(row["pid"]) if row["host"] == host
                    else now - (row["updated_at"] or 0) < STALE_AFTER_S)
        ]
        with self.db.atomic():
            for row in dead:  # unless another process took the debate over meanwhile
                self.db.execute("UPDATE debates SET status = 'interrupted' WHERE id = ? AND status = 'running' "
                                "AND pid IS ? AND host IS ?", [row["id"], row["pid"], row["host"]])
        return [row["id"] for row in dead]

    def reset_derived(self, debate_id: str) -> None:
        """Forget votes, decisions, challenges and the answer before a resume replays them from the turns."""
        with self.db.atomic():
            for table in DERIVED_TABLES:
                self.db[table].delete_where("debate_id = ?", [debate_id])
            self._update_debate(debate_id, answer=None)

    def delete_debate(self, debate_id: str) -> None:
        with self.db.atomic():
            for table in ("turns", *CHILD_TABLES):
                self.db[table].delete_where("debate_id = ?", [debate_id])
            self.db["debates"].delete_where("id = ?", [debate_id])

    def _insert(self, table: str, row: dict[str, Any], **kwargs: Any) -> int | None:
        return self.db[table].insert(_encode(table, row), **kwargs).last_pk

    def _update_debate(self, debate_id: str, **values: Any) -> None:
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
                     search: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
        """Debates newest first; `search` matches turn text, annotations (FTS) and the question."""
        clauses, args = [], []
        if status:
            clauses.append("status = ?")
            args.append(status)
        if protocol:
            clauses.append("protocol = ?")
            args.append(protocol)
        search = _clean_query(search)
        if search:
            matches = ["question LIKE ? ESCAPE '\\'"]
            args.append(f"%{_like_escape(search)}%")
            fts_query = self.db.quote_fts(search)
            if fts_query:
                matches += [
                    "id IN (SELECT debate_id FROM turns WHERE id IN "
                    "(SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?))",
                    "id IN (SELECT debate_id FROM annotations WHERE id IN "
                    "(SELECT rowid FROM annotations_fts WHERE annotations_fts MATCH ?))",
                ]
                args += [fts_query, fts_query]
            clauses.append("(" + " OR ".join(matches) + ")")
        where = " AND ".join(clauses) or "1"
        return self._rows("debates", where, args, order_by="created_at DESC, rowid DESC", limit=limit)

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

    def search_turns(self, query: str, limit: int = 100) -> list[dict[str, Any]]:
        """Turns matching `query` (any text is safe: it is quoted), best first, with a snippet."""
        query = _clean_query(query)
        if not self.db.quote_fts(query):
            return []
        results = []
        for row in self.db["turns"].search(query, quote=True, limit=limit):
            turn = _turn_from_row(row).to_dict()
            turn["turn_id"] = turn.pop("id")
            results.append({"debate_id": row["debate_id"], **turn, "snippet": _snippet(turn["content"], query)})
        return results

    # ----- annotations --------------------------------------------------------------------
    def annotate(self, debate_id: str, turn_id: str, tag: str, note: str = "") -> int:
        if not tag.strip():
            raise ValueError("an annotation needs a tag")
        return self._insert("annotations", {"debate_id": debate_id, "turn_id": turn_id, "tag": tag.strip(),
                                            "note": note, "created_at": time.time()})

    def annotations(self, debate_id: str) -> list[dict[str, Any]]:
        return self._children("annotations", debate_id)

    def delete_annotation(self, annotation_id: int) -> None:
        self.db["annotations"].delete_where("id = ?", [annotation_id])

    # ----- export / import ----------------------------------------------------------------
    def export_debate(self, debate_id: str) -> dict[str, Any]:
        """Everything about one debate as plain JSON-able data (lossless; see import_debate)."""
        debate = self.get_debate(debate_id)
        if debate is None:
            raise LookupError(f"no debate with id {debate_id!r}")
        config = debate.pop("config")
        data: dict[str, Any] = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "debate": debate,
                                "config": config, "turns": [t.to_dict() for t in self.turns(debate_id)]}
        for table in CHILD_TABLES:
            data[table] = [_strip_ids(row) for row in self._children(table, debate_id)]
        return data

    def import_debate(self, data: dict[str, Any], *, new_id: bool = False) -> str:
        """Re-create an exported debate; with `new_id` under a fresh id. Returns the id."""
        if data.get("format") != EXPORT_FORMAT:
            raise ValueError(f"not a MAD Lab debate export (format {data.get('format')!r})")
        if not isinstance(data.get("version"), int) or data["version"] > EXPORT_VERSION:
            raise ValueError(f"unsupported export version {data.get('version')!r}; "
                             f"this MAD Lab reads up to {EXPORT_VERSION}")
        debate_id = uuid.uuid4().hex if new_id else data["debate"]["id"]
        if self.get_debate(debate_id) is not None:
            raise ValueError(f"debate {debate_id} already exists; import it with a new id")
        with self.db.atomic():
            self._insert("debates", {**data["debate"], "id": debate_id, "config": scrub_secrets(data["config"])})
            for turn in data.get("turns", []):
                self._insert_turn(debate_id, Turn.from_dict(turn))
            for table in CHILD_TABLES:
                for row in data.get(table, []):
                    self._insert(table, {**row, "debate_id": debate_id})
        return debate_id

    def to_markdown(self, debate_id: str) -> str:
        """A readable handout. Model text goes in as plain text; no HTML is ever produced."""
        data = self.export_debate(debate_id)
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
        return "\n".join(lines) + "\n"

    def to_csv(self, debate_id: str) -> str:
        """One row per turn, with its annotations joined as 'tag: note; ...'."""
        notes: dict[str, list[str]] = {}
        for note in self.annotations(debate_id):
            notes.setdefault(note["turn_id"], []).append(f"{note['tag']}: {note['note']}")
        columns = ["turn_id", "seq", "round", "agent", "kind", "model", "status", "content", "answer",
                   "prompt_tokens", "completion_tokens", "latency_s", "annotations"]
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for turn in self.turns(debate_id):
            writer.writerow({**turn.to_dict(), "turn_id": turn.id, "annotations": "; ".join(notes.get(turn.id, []))})
        return out.getvalue()
