"""SQLite persistence for debates (the package's face; see each module for its part).

- `core`: `Store`, one database opened per thread: its `transaction()` (BEGIN IMMEDIATE), the
  debate rows written as events arrive (`record`) and read back (`get_debate`, `turns`, ...).
- `rows`: events <-> rows, both directions (`EVENT_WRITERS`, `stored_events`).
- `migrations`: the numbered schema steps, the store's and (loaded by name) each feature's.
- `claims`: who owns a running debate, heartbeats, resume claims, the sweep of dead owners.
- `search`: the archive's listing, its filters and full-text search.

Features keep their own tables and code outside the package and write through
`Store.transaction()`: exports (mad_core/exports.py), the codebook (mad_core/codebook.py), the
metric cache (mad_core/metrics/cache.py), polls (mad_core/polls.py) and experiments
(mad_core/experiments/storage.py). Their names that used to be imported from here still are,
from their new homes (`__getattr__`, on first use).
"""
from __future__ import annotations

import importlib
from typing import Any

from ..export_schema import CHILD_TABLES, EXPORT_FORMAT, EXPORT_VERSION, scrub_secrets
from .claims import (CLAIM_EXPIRES_S, DERIVED_TABLES, HEARTBEAT_EVERY_S, HEARTBEATS, RESUMABLE_STATUSES, RUN_TABLES,
                     STALE_AFTER_S, ResumeClaim, ResumeRefused, check_resumable, claim_for_resume,
                     heartbeat, mark_dead_interrupted, new_owner, owner_gone, release, undo_resume)
from .core import BUSY_TIMEOUT_S, ClaimLost, Store, default_db_path, like_escape, madlab_home
from .migrations import MIGRATIONS
from ..text import clean_text
from .rows import BOOL_COLUMNS, JSON_COLUMNS, stored_events
from .search import (CORRECTNESS, MAX_LIST_LIMIT, MAX_QUERY_CHARS, OUTCOMES, debate_correctness, list_debates,
                     models_used, prefix_query, search_matches, search_turns, stored_correctness)

# Names that moved out of the store with their features: name -> the module that has it now.
_MOVED = {
    **dict.fromkeys(("ANNOTATION_COLUMNS", "MODERATOR_MESSAGE", "STANCES", "csv_safe", "md_safe", "format_time",
                     "describe_ballot"), "mad_core.exports"),
    **dict.fromkeys(("DEFAULT_TAGS", "TAG_COLOURS", "MAX_TAG_CHARS", "free_tag_colour", "tag_name"),
                    "mad_core.codebook"),
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BOOL_COLUMNS", "BUSY_TIMEOUT_S", "CHILD_TABLES", "CLAIM_EXPIRES_S", "CORRECTNESS", "DERIVED_TABLES",
    "EXPORT_FORMAT", "EXPORT_VERSION", "HEARTBEATS", "HEARTBEAT_EVERY_S", "JSON_COLUMNS", "MAX_LIST_LIMIT",
    "MAX_QUERY_CHARS", "MIGRATIONS", "OUTCOMES", "RESUMABLE_STATUSES", "RUN_TABLES", "STALE_AFTER_S", "ClaimLost",
    "ResumeClaim", "ResumeRefused", "Store", "check_resumable", "claim_for_resume", "clean_text",
    "debate_correctness", "default_db_path", "heartbeat", "like_escape", "list_debates", "madlab_home",
    "mark_dead_interrupted", "models_used", "new_owner", "owner_gone", "prefix_query", "release", "scrub_secrets",
    "search_matches", "search_turns", "stored_correctness", "stored_events", "undo_resume",
]
