"""The store's core: one SQLite database of debates, opened by `Store`.

What it is for: the engine hands every event to `Store.record` as it happens, and each one
is committed before `record` returns, so a crash of MAD Lab never loses a finished turn (a power
cut may lose the last ones: see `use_wal`). Readers get the
debate rows back (`get_debate`, `turns`, `votes`, ...); features (polls, experiments, the
codebook, exports, the metric cache) write their own tables inside `transaction()` and read
them with `query()`.

What it must not do: store API keys or other secrets (configs are scrubbed of anything
named like a key or a token before they are written), import streamlit, or share one
connection between threads. SQLite connections belong to the thread that opened them, so
every thread opens its own `Store` (the engine's background thread creates its own).

Opening changes nothing but the schema: a new file gets WAL mode and every pending migration
(`migrations.MIGRATIONS`); debates whose owner died are swept only when a caller asks
(`claims.mark_dead_interrupted`).

Many writers, one file: any number of threads and processes write one database at once.
Every write transaction starts with `BEGIN IMMEDIATE` (`Store.transaction`), so a writer waits
its turn (SQLite's busy timeout) instead of failing with "database is locked" the way a
deferred transaction that read first does. Readers never wait (WAL). Before that, the writers
of one file take turns on a `WriteLock` (`write_lock`, writelock.py): a Python lock
between this process's threads, a file lock between processes, both handed over the moment they
are free. SQLite's busy handler sleeps in steps of up to 100 ms and is not woken when the lock
frees: dozens of debates in one process queued there for seconds, and a second worker process
of a sweep hardly got a turn.
"""
from __future__ import annotations

import contextlib
import os
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Iterator, TypeVar

from sqlite_utils import Database

from ..events import DEBATE_STATUSES, Event, Turn
from ..export_schema import CHILD_TABLES, scrub_secrets
from .migrations import MIGRATIONS
from .inserts import RowInserter
from .rows import EVENT_WRITERS, decode, encode, turn_from_row
from .writelock import WriteLock

T = TypeVar("T")

# How long a writer waits for the write lock before giving up (SQLite busy timeout).
BUSY_TIMEOUT_S = 60.0
# Tables of other features whose rows name a debate (`delete_debate` removes them with it).
FEATURE_DEBATE_TABLES = ("metric_reports", "participants", "joins")  # joins, participants: mad_core/classroom.py


def madlab_home() -> Path:
    """MAD Lab's data directory: env MADLAB_HOME, default ~/.madlab (created on demand)."""
    home = Path(os.environ.get("MADLAB_HOME") or Path.home() / ".madlab").expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home


def default_db_path() -> Path:
    return madlab_home() / "madlab.db"


def like_escape(text: str) -> str:
    """`text` with LIKE's wildcards escaped (use with ESCAPE '\\')."""
    return re.sub(r"([\\%_])", r"\\\1", text)


class ClaimLost(RuntimeError):
    """This process no longer owns the debate it tried to write (another process took it over)."""


_WRITE_LOCKS: dict[str, WriteLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def write_lock(path: Path) -> WriteLock:
    """The lock every writer of the SQLite file `path` takes around its write transaction, the
    store's and the response cache's (writelock.py; a private one for ":memory:")."""
    if str(path) == ":memory:":
        return WriteLock(None)
    key = os.path.realpath(path)
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(key, WriteLock(Path(key)))


def retry_locked(action: Callable[[], T], tries: int = 5, pause: Callable[[float], None] = time.sleep) -> T:
    """`action()`, again when SQLite reports a lock its busy timeout did not wait for.

    Switching a database to WAL needs it to itself and fails at once, without the busy timeout,
    while another connection writes to it: Stores opened by several threads at once on a new file
    meet that (10 debates in 10 threads, pinned to one busy core). Any other error, and the lock
    after the last try, propagate."""
    for attempt in range(1, tries):
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            pause(0.05 * attempt)
    return action()


def use_wal(db: Database) -> None:
    """Put the file in WAL mode (once per file) and this connection's commits at synchronous=NORMAL.

    NORMAL: a commit goes to the WAL without waiting for the disk; the WAL is synced at each
    checkpoint. No committed transaction is lost when MAD Lab crashes or is killed (kill -9
    included); a power cut or an operating-system crash may lose the last commits, never the
    database's consistency (SQLite's documentation of `synchronous`). FULL, SQLite's default,
    synced the WAL at every commit, about 2 ms a turn held under the write lock every debate of
    the file waits for: bench/throughput.py's two workers took 12.9 s instead of 5.3 s."""
    retry_locked(db.enable_wal)
    db.execute("PRAGMA synchronous=NORMAL")


class Store:
    """One SQLite database of debates. One Store per thread: its connection is not shared.

    `record(event)` attaches events to the debate last created (or started) through this
    Store, unless a `debate_id` is passed. A Store with an `owner` writes only to debates that
    owner holds (see mad_core/store/claims.py).
    """

    def __init__(self, path: str | Path | None = None, *, owner: str | None = None):
        self.path = Path(path) if path is not None else default_db_path()
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.owner = owner
        self._write_lock = write_lock(self.path)
        # timeout: a writer waits for another's transaction rather than fail (see transaction).
        # An in-memory database lives only in this connection: an engine's worker thread writes through it too.
        self.db = Database(sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S,
                                           check_same_thread=str(self.path) != ":memory:"))
        use_wal(self.db)
        self._migrate()
        self._inserter = RowInserter(self.db)
        self.current_debate_id: str | None = None

    def _migrate(self) -> None:
        if not MIGRATIONS.pending(self.db):
            return
        # BEGIN IMMEDIATE serialises two Stores opening a fresh file at once; each migration
        # then runs in its own savepoint, recorded in _migrations with it.
        with self.transaction():
            MIGRATIONS.apply(self.db)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Database]:
        """One write transaction, begun IMMEDIATE: it waits for the write lock instead of failing.
        Yields the database (sqlite-utils) to write with; committed when the block ends, rolled
        back when it raises.

        The file's other writers, in this process and in others, are waited for on `_write_lock`
        first (woken the moment it is free; SQLite's busy timeout only for writers that do not
        take it). Nested inside another transaction it is a savepoint of that one."""
        conn = self.db.conn
        if conn.in_transaction:
            with self.db.atomic():
                yield self.db
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
                yield self.db
            except BaseException:
                self.db.rollback()
                raise
            try:
                conn.execute("COMMIT")
            except BaseException:
                self.db.rollback()
                raise

    def query(self, sql: str, params: Any = None) -> list[dict[str, Any]]:
        """The rows a read-only SQL statement returns, as dicts."""
        return list(self.db.query(sql, params or []))

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
        with self.transaction():
            if self.get_debate(debate_id) is not None:
                raise ValueError(f"debate {debate_id} already exists")
            self.insert("debates", {
                "id": debate_id, "question": config.get("question", ""), "config": config,
                "protocol": config.get("protocol"), "paradigm": config.get("paradigm"),
                "models": ",".join(models), "status": "running", "reference": config.get("reference"),
                "parent_id": parent_id, "forked_from_seq": forked_from_seq,
                "pid": os.getpid(), "host": socket.gethostname(), "owner": self.owner,
                "created_at": now, "updated_at": now, "heartbeat_at": now,
            })
            for position, agent in enumerate(agents):
                self.insert("agents", {"debate_id": debate_id, "label": agent.get("label"),
                                       "model": agent.get("model"), "persona": agent.get("persona", ""),
                                       "position": position})
        self.current_debate_id = debate_id

    def record(self, event: Event, debate_id: str | None = None) -> None:
        """Write one event (committed before returning). Streaming-only events are ignored."""
        writer = EVENT_WRITERS.get(type(event))
        if writer is None:
            return
        debate_id = debate_id or getattr(event, "debate_id", None) or self.current_debate_id
        if debate_id is None:
            raise ValueError("record() needs a debate: call create_debate first or pass debate_id")
        with self.transaction():
            writer(self, event, debate_id)
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
        self.update_debate(debate_id, status=status, updated_at=time.time())

    def delete_debate(self, debate_id: str) -> None:
        with self.transaction():
            for table in ("turns", *CHILD_TABLES, *FEATURE_DEBATE_TABLES):
                self.db[table].delete_where("debate_id = ?", [debate_id])
            # its prediction polls (mad_core/polls.py) and their predictions go with it
            self.db["predictions"].delete_where("poll_id IN (SELECT id FROM polls WHERE debate_id = ?)", [debate_id])
            self.db["polls"].delete_where("debate_id = ?", [debate_id])
            self.db["debates"].delete_where("id = ?", [debate_id])

    def insert(self, table: str, row: dict[str, Any], *, replace: bool = False) -> int | None:
        """Insert one row of a debate table (JSON columns encoded, text cleaned); returns its rowid.
        `replace`: a row with the same unique key is replaced. Inside a transaction the one
        statement is atomic by itself (no savepoint of its own)."""
        row = encode(table, row)
        if self.db.conn.in_transaction:
            return self._inserter.insert(table, row, replace=replace)
        with self.transaction():
            return self._inserter.insert(table, row, replace=replace)

    def update_debate(self, debate_id: str, **values: Any) -> None:
        with self.transaction():
            self.db["debates"].update(debate_id, encode("debates", values))

    # ----- reading ------------------------------------------------------------------------
    def rows(self, table: str, where: str, args: list[Any], order_by: str = "id",
             limit: int | None = None) -> list[dict[str, Any]]:
        """Rows of a debate table, decoded (JSON columns parsed, 0/1 columns as bools)."""
        return [decode(table, row) for row in self.db[table].rows_where(where, args, order_by=order_by, limit=limit)]

    def get_debate(self, debate_id: str) -> dict[str, Any] | None:
        rows = self.rows("debates", "id = ?", [debate_id])
        return rows[0] if rows else None

    def find_debate_id(self, prefix: str) -> str:
        """The full id of the one debate whose id starts with `prefix` (LookupError otherwise)."""
        prefix = prefix.strip()
        if not prefix:
            raise LookupError("no debate id given")
        sql = "SELECT id FROM debates WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at DESC"
        ids = [row["id"] for row in self.db.query(sql, [like_escape(prefix) + "%"])]
        if prefix in ids:
            return prefix
        if not ids:
            raise LookupError(f"no debate with id {prefix!r}")
        if len(ids) > 1:
            raise LookupError(f"id prefix {prefix!r} is ambiguous: it matches {', '.join(i[:12] for i in ids)}")
        return ids[0]

    def turns(self, debate_id: str) -> list[Turn]:
        return [turn_from_row(row)
                for row in self.db["turns"].rows_where("debate_id = ?", [debate_id], order_by="seq, id")]

    def children(self, table: str, debate_id: str) -> list[dict[str, Any]]:
        """A debate's rows of one of CHILD_TABLES, in their order (agents by position)."""
        order = "position" if table == "agents" else "id"
        return self.rows(table, "debate_id = ?", [debate_id], order_by=order)

    def agents(self, debate_id: str) -> list[dict[str, Any]]:
        return self.children("agents", debate_id)

    def votes(self, debate_id: str) -> list[dict[str, Any]]:
        rows = self.children("votes", debate_id)
        for row in rows:  # JSON object keys are strings; cumulative ballots map solution index -> points
            if isinstance(row.get("ballot"), dict):
                row["ballot"] = {int(k): v for k, v in row["ballot"].items()}
        return rows

    def decisions(self, debate_id: str) -> list[dict[str, Any]]:
        return self.children("decisions", debate_id)

    def challenges(self, debate_id: str) -> list[dict[str, Any]]:
        return self.children("challenges", debate_id)

    def steering(self, debate_id: str) -> list[dict[str, Any]]:
        return self.children("steering", debate_id)

    def errors(self, debate_id: str) -> list[dict[str, Any]]:
        return self.children("errors", debate_id)

    def rounds(self, debate_id: str) -> list[dict[str, Any]]:
        """Each round's speaking order as it was announced (RoundStarted), in order."""
        return self.children("rounds", debate_id)

    def annotations(self, debate_id: str) -> list[dict[str, Any]]:
        return self.children("annotations", debate_id)
