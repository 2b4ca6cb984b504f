"""Who owns a running debate: owners, heartbeats, resume claims, and the sweep of dead owners.

A debate row names its `owner` (host:pid:token of the engine that runs it, `new_owner`) and a
`heartbeat_at` that a process-wide thread (`HEARTBEATS`) refreshes every few seconds while the
engine lives. A `running` debate whose owner stopped beating (or whose process is gone:
`owner_gone`) is `interrupted` by `mark_dead_interrupted`, which runs only when a caller asks
(opening a Store never sweeps). A resume takes a debate over with one atomic claim
(`claim_for_resume`), so two resumes of one debate never both run, and a Store that writes for
an owner who lost the claim is refused (`ClaimLost`, mad_core/store/core.py).

The store's listener of a running debate (mad_core/recorder.py) adds its debate to `HEARTBEATS`
when it starts and releases the claim (`release`, or `undo_resume` first) when it ends.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from .core import Store

# A 'running' debate on another host that has written nothing for this long (and keeps no
# heartbeat: rows written before heartbeats existed) is interrupted.
STALE_AFTER_S = 600.0
# Owners refresh their debates' heartbeat this often; a claim not refreshed for
# CLAIM_EXPIRES_S has expired (its owner died, hung or lost the database).
HEARTBEAT_EVERY_S = float(os.environ.get("MADLAB_HEARTBEAT_S") or 5.0)
CLAIM_EXPIRES_S = float(os.environ.get("MADLAB_CLAIM_EXPIRES_S") or 60.0)
# Statuses a debate can be resumed from.
RESUMABLE_STATUSES = ("interrupted", "stopped", "failed")
# What a resumed debate recomputes from its stored turns.
DERIVED_TABLES = ("votes", "decisions", "challenges", "rounds")
# Tables a resume may add rows to (undone when the resume fails before any progress).
RUN_TABLES = ("turns", "votes", "decisions", "challenges", "steering", "errors", "rounds")


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


def new_owner() -> str:
    """A token naming one engine run: host:pid:random."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


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


def owner_gone(row: dict[str, Any], host: str, now: float) -> bool:
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


def mark_dead_interrupted(store: Store) -> list[str]:
    """Mark 'running' debates whose owner is gone as 'interrupted'; return their ids."""
    host, now = socket.gethostname(), time.time()
    sql = "SELECT id, pid, host, owner, updated_at, heartbeat_at FROM debates WHERE status = 'running'"
    if not any(owner_gone(row, host, now) for row in store.db.query(sql)):
        return []
    with store.transaction():  # read again under the write lock: the owner may have beaten meanwhile
        dead = [row["id"] for row in store.db.query(sql) if owner_gone(row, host, now)]
        for debate_id in dead:
            store.db.execute("UPDATE debates SET status = 'interrupted', owner = NULL WHERE id = ?", [debate_id])
    return dead


def heartbeat(store: Store, debate_ids: list[str], owner: str) -> None:
    """Refresh `owner`'s claim on these debates (called by HEARTBEATS)."""
    with store.transaction():
        store.db.conn.executemany("UPDATE debates SET heartbeat_at = ? WHERE id = ? AND owner = ?",
                                  [(time.time(), debate_id, owner) for debate_id in debate_ids])


def check_resumable(store: Store, debate_id: str) -> dict[str, Any]:
    """The debate's row if it can be resumed now; else ResumeRefused saying why (changes nothing)."""
    debate = store.get_debate(debate_id)
    if debate is None:
        raise ResumeRefused(f"no debate with id {debate_id!r}")
    status = debate["status"]
    if status not in RESUMABLE_STATUSES + ("running",):
        raise ResumeRefused(f"debate {debate_id[:8]} is {status}: there is nothing to resume "
                            "(fork it to continue it differently)")
    if status == "running" and not owner_gone(debate, socket.gethostname(), time.time()):
        raise ResumeRefused(f"debate {debate_id[:8]} is still running (process {debate['pid']} on "
                            f"{debate['host']}); it can be resumed once it has ended")
    return debate


def claim_for_resume(store: Store, debate_id: str, owner: str) -> ResumeClaim:
    """Take a stopped, failed or interrupted debate over for `owner`, atomically.

    Votes, decisions, challenges and the answer are forgotten (the resume replays them from
    the stored turns) in the same transaction; the returned claim keeps them, so that
    `undo_resume` can put the debate back exactly as it was. Raises ResumeRefused when the
    debate is finished, unknown, or running under a live owner."""
    with store.transaction():
        debate = check_resumable(store, debate_id)
        derived = {table: store.db.execute_returning_dicts(
            f"SELECT * FROM [{table}] WHERE debate_id = ? ORDER BY id", [debate_id]) for table in DERIVED_TABLES}
        marks = {table: store.db.execute(f"SELECT COALESCE(MAX(id), 0) FROM [{table}] WHERE debate_id = ?",
                                        [debate_id]).fetchone()[0] for table in RUN_TABLES}
        for table in DERIVED_TABLES:
            store.db[table].delete_where("debate_id = ?", [debate_id])
        now = time.time()
        store.update_debate(debate_id, status="running", owner=owner, pid=os.getpid(),
                            host=socket.gethostname(), heartbeat_at=now, updated_at=now, answer=None,
                            reason=None, finished_at=None)
    return ResumeClaim(debate_id, owner, {k: debate[k] for k in ("status", "answer", "reason", "finished_at",
                                                                 "pid", "host", "owner", "heartbeat_at",
                                                                 "updated_at")}, derived, marks)


def undo_resume(store: Store, claim: ResumeClaim) -> bool:
    """Put a debate back as it was before `claim` (rows the resume added go, replayed ones come back).

    Only while `claim.owner` still holds it; returns whether it was undone."""
    with store.transaction():
        current = store.get_debate(claim.debate_id)
        if current is None or current.get("owner") != claim.owner:
            return False
        for table in RUN_TABLES:
            store.db.execute(f"DELETE FROM [{table}] WHERE debate_id = ? AND id > ?",
                            [claim.debate_id, claim.marks[table]])
        for table, rows in claim.derived.items():
            store.db[table].delete_where("debate_id = ?", [claim.debate_id])
            if rows:
                store.db[table].insert_all(rows)
        store.db["debates"].update(claim.debate_id, claim.debate)
    return True


def release(store: Store, debate_id: str, owner: str) -> None:
    """`owner` is done with the debate: nobody holds it now (its status says how it ended)."""
    with store.transaction():
        store.db.execute("UPDATE debates SET owner = NULL WHERE id = ? AND owner = ?", [debate_id, owner])


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
                    heartbeat(stores[path], debate_ids, owner)
                except Exception:  # noqa: BLE001 - a missed beat is retried; a claim left unbeaten expires
                    stores.pop(path, None)


HEARTBEATS = _Heartbeats()
