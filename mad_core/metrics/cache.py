"""The metric cache: stored metric reports (mad_core/metrics/report.py computes them; this only keeps
them) and SBERT embeddings by text hash, in their own tables (migration m003, recorded with the
store's: see mad_core/store/migrations.py).
"""
from __future__ import annotations

import json
import time
from typing import Any

from sqlite_utils import Database

from ..store.migrations import feature_migrations

MIGRATIONS = feature_migrations()


@MIGRATIONS()
def m003_metrics(db: Database) -> None:
    """Cached metric reports (mad_core/metrics/report.py) and SBERT embeddings by text hash."""
    db["metric_reports"].create({"debate_id": str, "stamp": str, "report": str, "computed_at": float},
                                pk="debate_id", not_null={"stamp", "report"})
    db["embeddings"].create({"text_hash": str, "model": str, "vector": bytes, "created_at": float},
                            pk=("text_hash", "model"), not_null={"vector"})


def cached_report(store: Any, debate_id: str, stamp: str) -> dict[str, Any] | None:
    """The stored metric report of a debate if it was computed for `stamp`, else None."""
    rows = store.query("SELECT report FROM metric_reports WHERE debate_id = ? AND stamp = ?", [debate_id, stamp])
    return json.loads(rows[0]["report"]) if rows else None


def save_report(store: Any, debate_id: str, stamp: str, report: dict[str, Any]) -> None:
    with store.transaction() as db:
        db["metric_reports"].upsert({"debate_id": debate_id, "stamp": stamp, "report": json.dumps(report),
                                     "computed_at": time.time()}, pk="debate_id")


def cached_embeddings(store: Any, model: str, hashes: list[str]) -> dict[str, bytes]:
    """text hash -> stored vector (bytes) for the hashes known under `model`."""
    found: dict[str, bytes] = {}
    for start in range(0, len(hashes), 500):  # SQLite's limit on bound parameters
        chunk = hashes[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for row in store.query(f"SELECT text_hash, vector FROM embeddings WHERE model = ? "
                               f"AND text_hash IN ({marks})", [model, *chunk]):
            found[row["text_hash"]] = row["vector"]
    return found


def save_embeddings(store: Any, model: str, vectors: dict[str, bytes]) -> None:
    now = time.time()
    with store.transaction() as db:
        db["embeddings"].upsert_all([{"text_hash": h, "model": model, "vector": v, "created_at": now}
                                     for h, v in vectors.items()], pk=("text_hash", "model"))
