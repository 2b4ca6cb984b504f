"""A response cache keyed on content: the same request to the same model gets the same reply, uncalled.

What it is for: a sweep rerun (or a debate run again with its seed) makes no model call for a
request it has already made. A request's key is the sha256 of a canonical JSON (``request_key``)
of: the model name as given; the model's identity (a ``local/`` GGUF model: the sha256 of the
file's bytes, computed once per path, size and modification time; any other model: its name);
the messages; the sampling settings that change the reply (``temperature``, ``max_tokens``,
``seed``, ``response_format``, ``extra``); and the occurrence number: how many times the same
request was already made in the same debate (the caller counts; a re-asked vote with the same
messages and seed gets its own entry, not the reply that was re-asked). The value is the reply
text, its prompt and completion tokens, its note and when it was stored.

The entries live in their own SQLite file in the MAD Lab home (``<home>/cache.db``), shared by
every debate and sweep of that home: WAL, a busy timeout, each write a ``BEGIN IMMEDIATE``
transaction of ``INSERT OR IGNORE`` (the first reply stored for a key stays), taken in turn with
the file's other writers on the store's ``write_lock`` (threads and processes woken the moment it
frees), so any number of threads and processes read and write it at once. A ``ResponseCache`` holds one connection,
shared by its threads under a lock (and opened again in a forked child).

Modes (``MODES``): "off" neither reads nor writes, "read" reads and never writes (nor creates
the file), "readwrite" reads and stores.

What it must not do: store a call that did not end "ok" (failed, interrupted) or an empty
reply; break a debate (a database that cannot be read or written is logged and counts as a
miss, or as not stored); know anything about debates beyond the occurrence number it is handed;
call a model. It reaches out of the model layer only for the home directory, its busy timeout
and its writers' lock (``mad_core.store.core``) and for the mode names
(``mad_core.config.CACHE_MODES``); nothing in the model layer imports it (``mad_core.calls`` does).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from sqlite_utils import Database

from mad_core.config import CACHE_MODES
from mad_core.models.calling import CallResult
from mad_core.models.names import is_local, split_name
from mad_core.store.core import BUSY_TIMEOUT_S, madlab_home, retry_locked, use_wal, write_lock

MODES = CACHE_MODES  # "off" | "read" | "readwrite"
CACHE_FILE = "cache.db"
TABLE = "responses"
USES = "uses"  # (key, debate_id): which debates used an entry, so a sweep can take its slice along
KEY_VERSION = 1  # part of every key: a change of what a key holds makes the old entries unreachable
SAMPLING_FIELDS = ("temperature", "max_tokens", "seed", "response_format", "extra")
COLUMNS = {"key": str, "model": str, "text": str, "prompt_tokens": int, "completion_tokens": int, "note": str,
           "created_at": float}

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CachedReply:
    """A stored reply: what a call that ended "ok" gave, and when it was stored."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    note: str | None
    created_at: float


def default_cache_path() -> Path:
    """The cache file of this MAD Lab home: ``<home>/cache.db``."""
    return madlab_home() / CACHE_FILE


# ----- the key -----------------------------------------------------------------------------------
_digests: dict[tuple[str, int, int], str] = {}
_digest_lock = threading.Lock()


def file_digest(path: str | os.PathLike) -> str:
    """The sha256 of a file's bytes, computed once per (real path, size, modification time)."""
    real = os.path.realpath(path)
    info = os.stat(real)
    memo = (real, info.st_size, info.st_mtime_ns)
    with _digest_lock:  # one thread reads a file; the others wait for its digest
        if memo not in _digests:
            with open(real, "rb") as handle:
                _digests[memo] = hashlib.file_digest(handle, "sha256").hexdigest()
        return _digests[memo]


def model_identity(model: str) -> str:
    """What the model is, beyond its name: a ``local/`` GGUF's file digest ("gguf-sha256:..."), else the name."""
    if is_local(model):
        from mad_core.models import local_gguf

        path = local_gguf.resolve(split_name(model)[1])
        if path is not None:
            return f"gguf-sha256:{file_digest(path)}"
    return model


def request_key(model: str, messages: list[dict], *, occurrence: int = 0, **sampling: Any) -> str:
    """The cache key of one request (see the module docstring); ``sampling``: ``SAMPLING_FIELDS`` only."""
    unknown = sorted(set(sampling) - set(SAMPLING_FIELDS))
    if unknown:
        raise TypeError(f"not a sampling setting of the key: {', '.join(unknown)}")
    fields = {name: sampling.get(name) for name in SAMPLING_FIELDS}
    if fields["temperature"] is not None:
        fields["temperature"] = float(fields["temperature"])  # 1 and 1.0 are one temperature
    payload = {"version": KEY_VERSION, "model": model, "identity": model_identity(model), "messages": messages,
               "sampling": fields, "occurrence": int(occurrence)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ----- the file ------------------------------------------------------------------------------------
_tallies: dict[str, list[int]] = {}  # real path -> [hits, misses] of this process
_shared_guard = threading.Lock()


def _count(path: Path, hit: bool) -> None:
    with _shared_guard:
        _tallies.setdefault(os.path.realpath(path), [0, 0])[0 if hit else 1] += 1


class ResponseCache:
    """The response cache of one file (default: this home's ``cache.db``) in one mode (see the module docstring)."""

    def __init__(self, mode: str = "readwrite", path: str | os.PathLike | None = None):
        if mode not in MODES:
            raise ValueError(f"unknown cache mode {mode!r}; valid choices: {', '.join(MODES)}")
        self.mode = mode
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()  # the connection is shared by this cache's threads
        self._db: Database | None = None
        self._pid, self._ready = 0, False  # the process that opened it; WAL and the table made sure of

    @property
    def readable(self) -> bool:
        return self.mode in ("read", "readwrite")

    @property
    def writable(self) -> bool:
        return self.mode == "readwrite"

    def get(self, key: str, debate_id: str | None = None) -> CachedReply | None:
        """The reply stored for `key`, or None (a miss; always None in mode "off"). A hit is noted as
        used by `debate_id` in mode "readwrite" (`record_use`)."""
        if not self.readable:
            return None
        try:
            with self._lock:
                db = self._database()
                rows = list(db.query(f"SELECT text, prompt_tokens, completion_tokens, note, created_at FROM {TABLE} "
                                     "WHERE key = ?", [key])) if db is not None else []
        except sqlite3.Error as exc:
            _log.warning("response cache %s cannot be read (%s): a miss", self.path, exc)
            rows = []
        _count(self.path, hit=bool(rows))
        if rows and debate_id is not None:
            self.record_use(key, debate_id)
        return CachedReply(**rows[0]) if rows else None

    def put(self, key: str, result: CallResult, model: str = "", debate_id: str | None = None) -> bool:
        """Store a call's reply under `key` (noted as used by `debate_id`); True when a new entry was written.

        Nothing is written in modes "off" and "read", for a call that did not end "ok", for an
        empty reply, or when `key` is already there (the first reply stays)."""
        if not self.writable or result.status != "ok" or not result.text.strip():
            return False
        row = {"key": key, "model": model, "text": result.text, "prompt_tokens": int(result.prompt_tokens),
               "completion_tokens": int(result.completion_tokens), "note": result.note, "created_at": time.time()}
        return self._store_rows([row], debate_id) > 0

    def record_use(self, key: str, debate_id: str) -> None:
        """Note that `debate_id` used the entry `key` (mode "readwrite" only): `entries_for` finds it."""
        if self.writable:
            self._store_rows([], debate_id, uses=[key])

    def entries_for(self, debate_ids: list[str]) -> list[dict[str, Any]]:
        """Every entry the debates `debate_ids` stored or read (a sweep's slice, for its bundle)."""
        with self._lock:
            db = self._database(create=False)
            if db is None or not db[USES].exists() or not debate_ids:
                return []
            found: dict[str, dict[str, Any]] = {}
            for start in range(0, len(debate_ids), 500):
                chunk = debate_ids[start:start + 500]
                sql = (f"SELECT r.* FROM {TABLE} r JOIN {USES} u ON u.key = r.key "
                       f"WHERE u.debate_id IN ({', '.join('?' * len(chunk))})")
                found.update({row["key"]: row for row in db.query(sql, chunk)})
        return [found[key] for key in sorted(found)]

    def import_entries(self, rows: list[dict[str, Any]]) -> int:
        """Add entries exported by `entries_for` (a bundle's slice); those already here stay. Returns
        how many were new. Each row is checked first: a key of 64 hex digits, text, whole token counts."""
        clean = [_entry(row, i) for i, row in enumerate(rows)]
        return self._store_rows(clean, None) if self.writable else 0

    def _store_rows(self, rows: list[dict[str, Any]], debate_id: str | None, uses: list[str] | None = None) -> int:
        """INSERT OR IGNORE `rows` and the uses of `debate_id` in one transaction; how many rows were new."""
        used = [{"key": key, "debate_id": debate_id} for key in (uses or [row["key"] for row in rows])
                if debate_id is not None]
        try:
            with write_lock(self.path), self._lock:
                db = self._database(create=True)
                assert db is not None
                written = 0
                with _immediate(db):
                    for row in rows:
                        before = db.conn.total_changes
                        db[TABLE].insert(row, ignore=True)  # INSERT OR IGNORE
                        written += db.conn.total_changes > before
                    if used:
                        db[USES].insert_all(used, ignore=True)
                return written
        except sqlite3.Error as exc:
            _log.warning("response cache %s cannot be written (%s): nothing stored", self.path, exc)
            return 0

    def stats(self) -> dict[str, Any]:
        """entries, bytes (the file and its WAL), hits and misses of this process, oldest and newest
        entry (Unix times, None when empty), path and mode."""
        entries, oldest, newest = 0, None, None
        with self._lock:
            db = self._database(create=False)
            if db is not None and db[TABLE].exists():
                row = next(db.query(f"SELECT count(*) AS n, min(created_at) AS oldest, max(created_at) AS newest "
                                    f"FROM {TABLE}"))
                entries, oldest, newest = row["n"], row["oldest"], row["newest"]
        with _shared_guard:
            hits, misses = _tallies.get(os.path.realpath(self.path), [0, 0])
        size = sum(os.path.getsize(p) for p in (self.path, Path(f"{self.path}-wal")) if os.path.exists(p))
        return {"path": str(self.path), "mode": self.mode, "entries": entries, "bytes": size, "hits": hits,
                "misses": misses, "oldest": oldest, "newest": newest}

    def clear(self) -> int:
        """Remove every entry (whatever the mode: it is asked for explicitly); returns how many there were."""
        with write_lock(self.path), self._lock:
            db = self._database(create=False)
            if db is None or not db[TABLE].exists():
                return 0
            with _immediate(db):
                removed = db[TABLE].count
                db.execute(f"DELETE FROM {TABLE}")
            try:  # give the space back; another process reading now only delays that
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                db.execute("VACUUM")
            except sqlite3.OperationalError:
                pass
            return removed

    def close(self) -> None:
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db, self._ready = None, False

    def _database(self, create: bool | None = None) -> Database | None:
        """This cache's connection (under ``self._lock``), opened on first use; None when the file does not
        exist and may not be created. `create` (default: when the mode writes) also makes sure of WAL and
        the table."""
        create = self.writable if create is None else create
        if self._db is None or self._pid != os.getpid():  # a forked child opens its own
            if not create and not self.path.exists():
                return None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = Database(sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, check_same_thread=False))
            self._pid, self._ready = os.getpid(), False
        if create and not self._ready:
            db = self._db
            use_wal(db)
            retry_locked(lambda: db[TABLE].create(COLUMNS, pk="key", not_null={"key", "text"}, if_not_exists=True))
            retry_locked(lambda: db[USES].create({"key": str, "debate_id": str}, pk=("key", "debate_id"),
                                                 if_not_exists=True))
            self._ready = True
        return self._db


def _entry(row: Any, index: int) -> dict[str, Any]:
    """A bundle's cache entry, checked (ValueError naming the entry); only the known columns kept."""
    if not isinstance(row, dict):
        raise ValueError(f"cache entry {index}: expected a mapping")
    key, text = row.get("key"), row.get("text")
    if not isinstance(key, str) or len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"cache entry {index}: key is not a sha256 hex digest")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"cache entry {index}: text must be non-empty text")
    for column in ("prompt_tokens", "completion_tokens"):
        if isinstance(row.get(column), bool) or not isinstance(row.get(column), int) or row[column] < 0:
            raise ValueError(f"cache entry {index}: {column} must be a whole number")
    note, created = row.get("note"), row.get("created_at")
    return {"key": key, "model": str(row.get("model") or ""), "text": text, "prompt_tokens": row["prompt_tokens"],
            "completion_tokens": row["completion_tokens"], "note": note if isinstance(note, str) else None,
            "created_at": float(created) if isinstance(created, (int, float)) and not isinstance(created, bool) else 0.0}


@contextlib.contextmanager
def _immediate(db: Database) -> Iterator[Database]:
    """One write transaction begun IMMEDIATE (it waits for the write lock instead of failing later);
    committed when the block ends, rolled back when it raises."""
    retry_locked(lambda: db.conn.execute("BEGIN IMMEDIATE"))
    try:
        yield db
        db.conn.execute("COMMIT")
    except BaseException:
        db.rollback()
        raise
