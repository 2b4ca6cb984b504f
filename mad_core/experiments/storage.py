"""Experiments in the database: the `experiments` and `experiment_runs` tables (migration m004).

What it is for: writing an experiment and its planned debates in one transaction, claiming an
experiment for the process that runs it (owner, pid, host, heartbeat, as debates do), updating
each planned debate as it runs, and reading experiments back (lists, one experiment, its runs).

What it must not do: store secrets (the spec is scrubbed like a debate's config), write outside
the Store's write transaction (`Store.transaction`: BEGIN IMMEDIATE; several processes may write
one file), share a Store between threads, or import streamlit. Its tables come with their own
migration (m004, below), recorded with the store's (mad_core/store/migrations.py).
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from typing import Any

from sqlite_utils import Database

from ..export_schema import scrub_secrets
from ..store import Store
from ..store.claims import owner_gone
from ..store.core import like_escape
from ..store.migrations import feature_migrations
from .provenance import provenance
from .spec import ExperimentConfig

# Statuses of an experiment, and of one of its planned debates (a run).
EXPERIMENT_STATUSES = ("pending", "running", "finished", "stopped", "failed", "interrupted")
RUN_STATUSES = ("pending", "running", "finished", "failed", "stopped")
DONE_RUN_STATUSES = ("finished", "failed")  # never run again: a failed debate is a result too
MIGRATIONS = feature_migrations()


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
def m010_experiment_configurations(db: Database) -> None:
    """Each experiment's resolved configurations (its grid's and its baselines', with their keys,
    labels and which baseline each configuration is compared with), as it was planned."""
    db["experiments"].add_column("configurations", str)


@MIGRATIONS()
def m012_experiment_provenance(db: Database) -> None:
    """What each experiment ran with (experiments/provenance.py: git revision, packages, model digests)."""
    db["experiments"].add_column("provenance", str)


@MIGRATIONS()
def m013_run_results(db: Database) -> None:
    """What each ended debate of an experiment measured, kept on its run (JSON: the report's stamp,
    summary, transitions and first-round correctness), so a results table of 10,000 debates is one
    query rather than 10,000 reports read back (results.py `run_result`; the runner writes it)."""
    db["experiment_runs"].add_column("result", str)


class ExperimentBusy(RuntimeError):
    """The experiment is being run by a live process (or is unknown): it cannot be claimed."""


def _decode(row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    for column in ("spec", "configurations", "provenance"):
        if isinstance(row.get(column), str):
            row[column] = json.loads(row[column])
    return row


def configuration_records(experiment: ExperimentConfig) -> list[dict[str, Any]]:
    """The planned configurations as stored: key, label, values, whether a baseline, and the key of
    each baseline a configuration is compared with."""
    return [{"key": c.key, "label": c.label, "values": scrub_secrets(c.values), "baseline": c.baseline_key is not None,
             "compared_with": dict(c.compared_with)} for c in experiment.configurations]


def create_experiment(store: Store, experiment: ExperimentConfig) -> str:
    """Write a validated experiment and one pending row per planned debate; return its id."""
    experiment_id = uuid.uuid4().hex
    now = time.time()
    spec = json.dumps(scrub_secrets(experiment.to_dict()), ensure_ascii=False)
    rows = [{"experiment_id": experiment_id, "run_index": run.index, "config_index": run.configuration.index,
             "config_key": run.configuration.key, "item_id": run.item.id, "item_index": run.item_index,
             "seed": run.seed, "status": "pending", "attempts": 0} for run in experiment.runs()]
    with store.transaction() as db:
        db["experiments"].insert({
            "id": experiment_id, "name": experiment.name, "spec": spec, "status": "pending",
            "total": len(rows), "concurrency": experiment.concurrency, "created_at": now, "updated_at": now,
            "configurations": json.dumps(configuration_records(experiment), ensure_ascii=False),
            "provenance": json.dumps(scrub_secrets(provenance([c.settings for c in experiment.configurations])),
                                     ensure_ascii=False)})
        db["experiment_runs"].insert_all(rows)
    return experiment_id


def get_experiment(store: Store, experiment_id: str) -> dict[str, Any] | None:
    mark_dead_interrupted(store)
    rows = store.query("SELECT * FROM experiments WHERE id = ?", [experiment_id])
    return _decode(rows[0]) if rows else None


def find_experiment_id(store: Store, prefix: str) -> str:
    """The full id of the one experiment whose id starts with `prefix` (LookupError otherwise)."""
    prefix = prefix.strip()
    sql = "SELECT id FROM experiments WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at DESC"
    ids = [row["id"] for row in store.query(sql, [like_escape(prefix) + "%"])] if prefix else []
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
    return [_decode(row) for row in store.query(sql, [max(1, min(int(limit), 10_000))])]


def runs(store: Store, experiment_id: str) -> list[dict[str, Any]]:
    return store.query("SELECT * FROM experiment_runs WHERE experiment_id = ? ORDER BY run_index", [experiment_id])


def experiment_of_debate(store: Store, debate_id: str) -> dict[str, Any] | None:
    """The run (with its experiment's id) that a debate belongs to, if any."""
    rows = store.query("SELECT * FROM experiment_runs WHERE debate_id = ? LIMIT 1", [debate_id])
    return rows[0] if rows else None


def mark_dead_interrupted(store: Store) -> list[str]:
    """'running' experiments whose process is gone (or stopped beating) become 'interrupted'."""
    sql = "SELECT id, pid, host, owner, updated_at, heartbeat_at FROM experiments WHERE status = 'running'"
    host, now = socket.gethostname(), time.time()
    if not any(owner_gone(row, host, now) for row in store.query(sql)):
        return []
    with store.transaction() as db:
        dead = [row["id"] for row in db.query(sql) if owner_gone(row, host, now)]
        for experiment_id in dead:
            db.execute("UPDATE experiments SET status = 'interrupted', owner = NULL WHERE id = ?",
                       [experiment_id])
    return dead


def claim(store: Store, experiment_id: str, owner: str) -> dict[str, Any]:
    """Take the experiment for `owner` (atomically); ExperimentBusy when a live process runs it."""
    with store.transaction() as db:
        rows = list(db["experiments"].rows_where("id = ?", [experiment_id]))
        if not rows:
            raise ExperimentBusy(f"no experiment with id {experiment_id!r}")
        row = rows[0]
        if row["status"] == "running" and not owner_gone(row, socket.gethostname(), time.time()):
            raise ExperimentBusy(f"experiment {experiment_id[:8]} is running (process {row['pid']} on "
                                 f"{row['host']}); it can be resumed once it has stopped")
        now = time.time()
        db["experiments"].update(experiment_id, {
            "status": "running", "owner": owner, "pid": os.getpid(), "host": socket.gethostname(),
            "heartbeat_at": now, "updated_at": now, "finished_at": None, "error": None})
    return _decode(row)


def heartbeat(store: Store, experiment_id: str, owner: str) -> None:
    with store.transaction() as db:
        db.execute("UPDATE experiments SET heartbeat_at = ? WHERE id = ? AND owner = ?",
                   [time.time(), experiment_id, owner])


def release(store: Store, experiment_id: str, owner: str, status: str, error: str | None = None) -> None:
    """`owner` is done: the experiment ends as `status` and nobody holds it."""
    now = time.time()
    with store.transaction() as db:
        db.execute("UPDATE experiments SET status = ?, owner = NULL, updated_at = ?, finished_at = ?, "
                   "error = ? WHERE id = ? AND owner = ?",
                   [status, now, now if status == "finished" else None, error, experiment_id, owner])


def update_run(store: Store, run_id: int, **values: Any) -> None:
    with store.transaction() as db:
        db["experiment_runs"].update(run_id, values)


def save_run_result(store: Store, debate_id: str, result: dict[str, Any]) -> None:
    """Keep what a debate of an experiment measured on its run (see m013)."""
    with store.transaction() as db:
        db.execute("UPDATE experiment_runs SET result = ? WHERE debate_id = ?",
                   [json.dumps(result, ensure_ascii=False), debate_id])


def run_counts(store: Store, experiment_id: str) -> dict[str, Any]:
    """How many planned debates an experiment has, how many are done (finished or failed), failed
    and running, and the mean wall time of the done ones: counted by SQLite, not read row by row."""
    sql = """SELECT COUNT(*) AS total, COALESCE(SUM(status IN ('finished', 'failed')), 0) AS done,
                    COALESCE(SUM(status = 'failed'), 0) AS failed, COALESCE(SUM(status = 'running'), 0) AS running,
                    AVG(CASE WHEN status IN ('finished', 'failed') THEN wall_s END) AS mean_wall
             FROM experiment_runs WHERE experiment_id = ?"""
    return store.query(sql, [experiment_id])[0]


def set_concurrency(store: Store, experiment_id: str, concurrency: int) -> None:
    """How many of the experiment's debates run at once (changed while it runs)."""
    with store.transaction() as db:
        db["experiments"].update(experiment_id, {"concurrency": concurrency})
