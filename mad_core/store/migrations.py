"""The database's schema, as numbered migrations recorded in `_migrations` (set "madlab").

The store owns the debates' tables (`m001_initial`, `m002_owners_and_rounds`, `m008_round_plans`,
`m011_steering_requested_at` here); each feature keeps the migrations of its own tables beside its
code (`feature_migrations()` makes its set):
the metric cache (m003, mad_core/metrics/cache.py), experiments (m004,
mad_core/experiments/storage.py), polls (m005, m007, mad_core/polls.py) and the codebook (m006,
mad_core/codebook.py), the round plans of older debates (m009, mad_core/round_plans.py) and coding
projects (m014, m015, mad_core/qda/storage.py), join codes (m017, mad_core/join_codes.py) and the
class of a debate (m018, mad_core/classroom.py). `MIGRATIONS` is all of them in their numbered order, the features' sets
loaded by name (`FEATURE_SETS`) the first time it is used, so opening a database creates every
table, in the order the steps were written.

Every set records its steps under the one set name "madlab", the name all of them were recorded
under when they lived in one list: a database made before the split opens without re-running
anything, and step names stay unique across sets (their number says the order).
"""
from __future__ import annotations

import importlib
from typing import Any

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

SET_NAME, TABLE = "madlab", "_migrations"
# Each feature's migration set: (module, attribute), imported by name when first needed.
FEATURE_SETS = (("mad_core.metrics.cache", "MIGRATIONS"), ("mad_core.experiments.storage", "MIGRATIONS"),
                ("mad_core.polls", "MIGRATIONS"), ("mad_core.codebook", "MIGRATIONS"),
                ("mad_core.round_plans", "MIGRATIONS"), ("mad_core.qda.storage", "MIGRATIONS"),
                ("mad_core.join_codes", "MIGRATIONS"), ("mad_core.classroom", "MIGRATIONS"),
                ("mad_core.seats", "MIGRATIONS"))


def feature_migrations() -> Migrations:
    """A feature's own migration set, recorded where the store's are (see the module docstring)."""
    migrations = Migrations(SET_NAME)
    migrations.migrations_table = TABLE
    return migrations


CORE_MIGRATIONS = feature_migrations()


class _AllMigrations(Migrations):
    """The store's steps and every feature's, in their numbered order (loaded on first use)."""

    def __init__(self) -> None:
        super().__init__(SET_NAME)
        self.migrations_table = TABLE
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        sets = [CORE_MIGRATIONS] + [getattr(importlib.import_module(module), name) for module, name in FEATURE_SETS]
        self._migrations = sorted((step for s in sets for step in s._migrations), key=lambda step: step.name)
        self._loaded = True

    def pending(self, db: Database) -> list[Any]:
        self._load()
        return super().pending(db)

    def apply(self, db: Database, **kwargs: Any) -> None:
        self._load()
        super().apply(db, **kwargs)


@CORE_MIGRATIONS()
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


@CORE_MIGRATIONS()
def m002_owners_and_rounds(db: Database) -> None:
    """Who runs a debate (owner + heartbeat), and each round's speaking order."""
    db["debates"].add_column("owner", str)
    db["debates"].add_column("heartbeat_at", float)
    db["rounds"].create({"id": int, "debate_id": str, "round": int, "speakers": str, "ts": float},
                        pk="id", not_null={"debate_id"})
    db["rounds"].create_index(["debate_id"])


@CORE_MIGRATIONS()
def m008_round_plans(db: Database) -> None:
    """Each round's topic and step plan (RoundStarted.topic/steps); mad_core/round_plans.py's m009
    fills them in for rounds stored before."""
    db["rounds"].add_column("topic", str)
    db["rounds"].add_column("steps", str)


@CORE_MIGRATIONS()
def m011_steering_requested_at(db: Database) -> None:
    """When the person asked for each steering action (SteeringApplied.requested_at), beside its `ts`
    (when the engine applied it). Rows stored before read it as null."""
    if "requested_at" not in db["steering"].columns_dict:
        db["steering"].add_column("requested_at", float)


MIGRATIONS = _AllMigrations()
