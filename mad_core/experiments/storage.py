"""Experiments in the database: the `experiments` and `experiment_runs` tables (migration m004).

What it is for: writing an experiment and its planned debates in one transaction, claiming an
experiment for the process that runs it (owner, pid, host, heartbeat, as debates do), updating
each planned debate as it runs, and reading experiments back (lists, one experiment, its runs).

What it must not do: store secrets (the spec is scrubbed like a debate's config), write outside
the Store's write transaction (`Store._write`: BEGIN IMMEDIATE; several processes may write
one file), share a Store between threads, or import streamlit.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from typing import Any

from ..store import Store, _like_escape, scrub_secrets
from .spec import ExperimentConfig

# Statuses of an experiment, and of one of its planned debates (a run).
EXPERIMENT_STATUSES = ("pending", "running", "finished", "stopped", "failed", "interrupted")
RUN_STATUSES = ("pending", "running", "finished", "failed", "stopped")
DONE_RUN_STATUSES = ("finished", "failed")  # never run again: a failed debate is a result too


class ExperimentBusy(RuntimeError):
    """The experiment is being run by a live process (or is unknown): it cannot be claimed."""


def _decode(row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    if isinstance(row.get("spec"), str):
        row["spec"] = json.loads(row["spec"])
    return row


def create_experiment(store: Store, experiment: ExperimentConfig) -> str:
    """Write a validated experiment and one pending row per planned debate; return its id."""
    experiment_id = uuid.uuid4().hex
    now = time.time()
    spec = json.dumps(scrub_secrets(experiment.to_dict()), ensure_ascii=False)
    rows = [{"experiment_id": experiment_id, "run_index": run.index, "config_index": run.configuration.index,
             "config_key": run.configuration.key, "item_id": run.item.id, "item_index": run.item_index,
             "seed": run.seed, "status": "pending", "attempts": 0} for run in experiment.runs()]
    with store._write():
        store.db["experiments"].insert({
            "id": experiment_id, "name": experiment.name, "spec": spec, "status": "pending",
            "total": len(rows), "concurrency": experiment.concurrency, "created_at": now, "updated_at": now})
        store.db["experiment_runs"].insert_all(rows)
    return experiment_id


def get_experiment(store: Store, experiment_id: str) -> dict[str, Any] | None:
    mark_dead_interrupted(store)
    rows = list(store.db["experiments"].rows_where("id = ?", [experiment_id]))
    return _decode(rows[0]) if rows else None


def find_experiment_id(store: Store, prefix: str) -> str:
    """The full id of the one experiment whose id starts with `prefix` (LookupError otherwise)."""
    prefix = prefix.strip()
    sql = "SELECT id FROM experiments WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at DESC"
    ids = [row["id"] for row in store.db.query(sql, [_like_escape(prefix) + "%"])] if prefix else []
    if prefix in ids:
        return prefix
    if len(ids) != 1:
        what = "ambiguous" if ids else "unknown"
        raise LookupError(f"experiment id {prefix!r} is {what}" + (f": {', '.join(i[:12] for i in ids)}" if ids else ""))
    return ids[0]


def list_experiments(store: Store, limit: int = 200) -> list[dict[str, Any]]:
    """Experiments newest first, each with `done`, `failed` and `running` counts of its debates."""
    mark_dead_interrupted(store)
    sql = """SELECT e.*, COALESCE(SUM(r.status IN ('finished', 'failed')), 0) AS done,
                    COALESCE(SUM(r.status = 'failed'), 0) AS failed, COALESCE(SUM(r.status = 'running'), 0) AS running
             FROM experiments e LEFT JOIN experiment_runs r ON r.experiment_id = e.id
             GROUP BY e.id ORDER BY e.created_at DESC LIMIT ?"""
    return [_decode(row) for row in store.db.query(sql, [max(1, min(int(limit), 10_000))])]


def runs(store: Store, experiment_id: str) -> list[dict[str, Any]]:
    return list(store.db["experiment_runs"].rows_where("experiment_id = ?", [experiment_id], order_by="run_index"))


def experiment_of_debate(store: Store, debate_id: str) -> dict[str, Any] | None:
    """The run (with its experiment's id) that a debate belongs to, if any."""
    rows = list(store.db["experiment_runs"].rows_where("debate_id = ?", [debate_id], limit=1))
    return rows[0] if rows else None


def mark_dead_interrupted(store: Store) -> list[str]:
    """'running' experiments whose process is gone (or stopped beating) become 'interrupted'."""
    sql = "SELECT id, pid, host, owner, updated_at, heartbeat_at FROM experiments WHERE status = 'running'"
    host, now = socket.gethostname(), time.time()
    if not any(store._is_dead(row, host, now) for row in store.db.query(sql)):
        return []
    with store._write():
        dead = [row["id"] for row in store.db.query(sql) if store._is_dead(row, host, now)]
        for experiment_id in dead:
            store.db.execute("UPDATE experiments SET status = 'interrupted', owner = NULL WHERE id = ?",
                             [experiment_id])
    return dead


def claim(store: Store, experiment_id: str, owner: str) -> dict[str, Any]:
    """Take the experiment for `owner` (atomically); ExperimentBusy when a live process runs it."""
    with store._write():
        rows = list(store.db["experiments"].rows_where("id = ?", [experiment_id]))
        if not rows:
            raise ExperimentBusy(f"no experiment with id {experiment_id!r}")
        row = rows[0]
        if row["status"] == "running" and not store._is_dead(row, socket.gethostname(), time.time()):
            raise ExperimentBusy(f"experiment {experiment_id[:8]} is running (process {row['pid']} on "
                                 f"{row['host']}); it can be resumed once it has stopped")
        now = time.time()
        store.db["experiments"].update(experiment_id, {
            "status": "running", "owner": owner, "pid": os.getpid(), "host": socket.gethostname(),
            "heartbeat_at": now, "updated_at": now, "finished_at": None, "error": None})
    return _decode(row)


def heartbeat(store: Store, experiment_id: str, owner: str) -> None:
    with store._write():
        store.db.execute("UPDATE experiments SET heartbeat_at = ? WHERE id = ? AND owner = ?",
                         [time.time(), experiment_id, owner])


def release(store: Store, experiment_id: str, owner: str, status: str, error: str | None = None) -> None:
    """`owner` is done: the experiment ends as `status` and nobody holds it."""
    now = time.time()
    with store._write():
        store.db.execute("UPDATE experiments SET status = ?, owner = NULL, updated_at = ?, finished_at = ?, "
                         "error = ? WHERE id = ? AND owner = ?",
                         [status, now, now if status == "finished" else None, error, experiment_id, owner])


def update_run(store: Store, run_id: int, **values: Any) -> None:
    with store._write():
        store.db["experiment_runs"].update(run_id, values)
