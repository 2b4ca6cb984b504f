"""Finding debates: the archive's listing with its filters, full-text search, and why a debate matched.

`list_debates` filters (status, protocol, codebook tag, model, outcome: `OUTCOMES`, correctness:
`CORRECTNESS`) and searches turn text, annotations and moderator messages (SQLite FTS5, kept
current by triggers) and the question. Every word of a search is quoted (`prefix_query`, with
sqlite-utils' `quote_fts`) so user input can never break the FTS query syntax, then made a
prefix phrase ("kettle" finds "kettles"); `search_matches` says per debate what matched (a
snippet with the matched words marked). Search text is cut to MAX_QUERY_CHARS, listings to
MAX_LIST_LIMIT rows.
"""
from __future__ import annotations

import json
import re
from typing import Any

from sqlite_utils import Database

from .claims import mark_dead_interrupted
from .core import like_escape
from ..text import clean_text
from .rows import turn_from_row

# Longest search text used (longer queries are cut there) and the largest page of a listing.
MAX_QUERY_CHARS = 1000
MAX_LIST_LIMIT = 10_000

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


def debate_correctness(debate: dict[str, Any], summary: dict[str, Any] | None = None) -> str:
    """One of CORRECTNESS for a debates row: its decided answer judged against its reference with
    the debate's answer type (`tasks.answer_types.is_correct`: "(B) Paris" is B, 0.5 is 1/2), or,
    when given, the metric report's `summary["correct"]` (free-text answers are grouped there by
    meaning). Never a plain string comparison; never raises."""
    from ..tasks.answer_types import DebateAnswerType, is_correct

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


def _snippet(text: str, query: str, width: int = 160) -> str:
    """Up to `width` characters of `text` around the first query term found in it."""
    lowered = text.lower()
    hits = [i for i in (lowered.find(t) for t in re.findall(r"\w+", query.lower())) if i >= 0]
    start = max(0, min(hits) - width // 3) if hits else 0
    piece = text[start:start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")


def list_debates(store: Any, *, status: str | None = None, protocol: str | None = None,
                 search: str | None = None, limit: int = 200, tag: str | None = None,
                 model: str | None = None, outcome: str | None = None,
                 correctness: str | None = None) -> list[dict[str, Any]]:
    """Debates newest first; `search` matches turn text, annotations, moderator messages (FTS,
    each word as a word's start: `prefix_query`) and the question (the text anywhere in it). The
    filters combine (AND): `tag` (a codebook tag on any of its turns), `model` (an agent's or the
    judge's), `outcome` (OUTCOMES), `correctness` (CORRECTNESS, `debate_correctness`); an unknown
    outcome or correctness is a ValueError naming it.

    Running debates whose owner is gone are marked interrupted first. `search` is cut to
    MAX_QUERY_CHARS and `limit` kept within 1..MAX_LIST_LIMIT."""
    if outcome and outcome not in OUTCOMES:
        raise ValueError(f"outcome: unknown {outcome!r}; valid: {', '.join(OUTCOMES)}")
    if correctness and correctness not in CORRECTNESS:
        raise ValueError(f"correctness: unknown {correctness!r}; valid: {', '.join(CORRECTNESS)}")
    mark_dead_interrupted(store)
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
        args.append(f"%{like_escape(search)}%")
        fts_query = prefix_query(store.db, search)
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
        return store.rows("debates", where, args, order_by=order, limit=limit)
    rows = store.rows("debates", where, args, order_by=order)
    return [row for row in rows if stored_correctness(store, row) == correctness][:limit]


def stored_correctness(store: Any, debate: dict[str, Any]) -> str:
    """`debate_correctness` of a debates row, using its stored metric report when that report
    was computed for the debate as it is now (any embedder)."""
    from ..metrics.report import report_stamp

    prefix = report_stamp(debate, "")
    summary = None
    for row in store.db.query("SELECT stamp, report FROM metric_reports WHERE debate_id = ?", [debate["id"]]):
        if row["stamp"].startswith(prefix):
            summary = (json.loads(row["report"]) or {}).get("summary")
    return debate_correctness(debate, summary)


def models_used(store: Any) -> list[str]:
    """Every agent or judge model of the stored debates, sorted (for the model filter)."""
    sql = ("SELECT model FROM agents WHERE COALESCE(model, '') != '' UNION "
           "SELECT json_extract(config, '$.judge_model') FROM debates "
           "WHERE COALESCE(json_extract(config, '$.judge_model'), '') != ''")
    return sorted({row[0] for row in store.db.execute(sql).fetchall() if isinstance(row[0], str)})


def search_turns(store: Any, query: str, limit: int = 100) -> list[dict[str, Any]]:
    """Turns matching `query` (any text is safe: it is quoted; each word matches a word's start),
    best first, with a snippet."""
    query, limit = _clean_query(query), _bounded_limit(limit)
    fts_query = prefix_query(store.db, query)
    if not fts_query:
        return []
    results = []
    for row in store.db["turns"].search(fts_query, limit=limit):
        turn = turn_from_row(row).to_dict()
        turn["turn_id"] = turn.pop("id")
        results.append({"debate_id": row["debate_id"], **turn, "snippet": _snippet(turn["content"], query)})
    return results


# (FTS table, row table, where a match is, SQL for a label of the matched row)
_MATCH_SOURCES = (
    ("turns_fts", "turns", "turn", "r.agent || ' · round ' || r.round", "r.seq, r.id"),
    ("annotations_fts", "annotations", "annotation", "'tag ' || r.tag", "r.id"),
    ("steering_fts", "steering", "moderator message", "r.targets", "r.id"),
)


def search_matches(store: Any, search: str | None, debate_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Why each of `debate_ids` matches `search` (as `list_debates` matches it): debate id ->
    {"where": "turn" / "annotation" / "moderator message" / "question", "label" (whose turn,
    which tag), "parts": [(text, matched)] (a short snippet, the matched words marked),
    "more": how many other matches it has}. The first match in that order of places is shown.
    Debates without a match are left out; never raises on odd input."""
    search = _clean_query(search)
    ids = list(dict.fromkeys(debate_ids))[:MAX_LIST_LIMIT]
    if not search or not ids:
        return {}
    fts_query = prefix_query(store.db, search)
    found: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    for start in range(0, len(ids), 500):  # SQLite's limit on bound parameters
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for fts, table, where, label, order in _MATCH_SOURCES if fts_query else ():
            first = list(store.db.query(
                f"SELECT debate_id, id, label, n FROM (SELECT r.debate_id, r.id, {label} AS label, "
                f"ROW_NUMBER() OVER (PARTITION BY r.debate_id ORDER BY {order}) AS k, "
                f"COUNT(*) OVER (PARTITION BY r.debate_id) AS n FROM {fts} JOIN {table} r ON r.id = {fts}.rowid "
                f"WHERE {fts} MATCH ? AND r.debate_id IN ({marks})) WHERE k = 1", [fts_query, *chunk]))
            snippets = {row["rowid"]: row["s"] for row in store.db.query(
                f"SELECT rowid, snippet({fts}, -1, ?, ?, '…', 12) AS s FROM {fts} WHERE {fts} MATCH ? "
                f"AND rowid IN ({','.join('?' * len(first))})",
                [MATCH_OPEN, MATCH_CLOSE, fts_query, *[row["id"] for row in first]])} if first else {}
            for row in first:
                counts[row["debate_id"]] = counts.get(row["debate_id"], 0) + row["n"]
                found.setdefault(row["debate_id"], {"where": where, "label": _match_label(where, row["label"]),
                                                    "parts": _marked_parts(snippets.get(row["id"], ""))})
        for row in store.db.query(f"SELECT id, question FROM debates WHERE id IN ({marks}) "
                                 "AND question LIKE ? ESCAPE '\\'", [*chunk, f"%{like_escape(search)}%"]):
            counts[row["id"]] = counts.get(row["id"], 0) + 1
            found.setdefault(row["id"], {"where": "question", "label": "",
                                         "parts": _question_parts(row["question"] or "", search)})
    for debate_id, match in found.items():
        match["more"] = counts[debate_id] - 1
    return found

