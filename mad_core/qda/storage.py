"""Coding projects in the database: their tables (migrations m014, m015), and reading a project back.

What it is for: a coding project (`coding_projects`) holds debates (`coding_project_debates`),
its own codebook (`codes`: a hierarchy through `parent_id`, a colour, a definition, when to
apply a code and when not, an example), its coders (`coders`: people, a model that pre-codes,
the adjudicated "gold" coding), their codings (`codings`: one code on `turn text[start:end]`
with the quoted text) and memos (`memos`: on the project, a code, a debate, a turn or a coding).
Deleting is a mark (`deleted_at`), never a row removed, so every deletion can be undone; every
change is also written to `coding_history` (who, what, before and after) for the lead to read
(`mad_core/qda/coding.py` makes the changes). Each person's review of a model's proposal is a row
of `proposal_reviews` (m016). `load_project` gives a project as
`mad_core.qda.model.Project` (what agreement and REFI-QDA exchange work on).

m015 carries the archive's annotations over, losing nothing: the codebook's tags become the
top-level codes of a project "Annotations before coding projects" holding every annotated
debate, each annotator a coder (nothing is made for a new archive that holds only the starting
tags and no annotation) (annotations without a name: the coder "(no name)"), each
annotation a coding of its whole turn, its note a memo on that coding. The annotation tables
stay as they were.

What it must not do: write outside `Store.transaction`, reach into the store's private parts,
draw anything (no UI library is imported here), or call a model.
"""
from __future__ import annotations

import json
import time
import uuid
from typing import Any

from sqlite_utils import Database

from ..codebook import DEFAULT_TAGS
from ..store import Store
from ..store.migrations import feature_migrations
from .model import Code, Coder, Coding, Memo, Project, Source, new_id, source_of

MIGRATIONS = feature_migrations()
CODER_KINDS = ("person", "model", "gold")
ARCHIVE_PROJECT = "Annotations before coding projects"
NO_NAME = "(no name)"
# The codebook's palette names (mad_core/codebook.py TAG_COLOURS) as REFI-QDA's "#RRGGBB".
PALETTE_HEX = {"blue": "#1F77B4", "green": "#2CA02C", "orange": "#FF7F0E", "red": "#D62728",
               "violet": "#9467BD", "gray": "#7F7F7F", "yellow": "#BCBD22"}


@MIGRATIONS()
def m014_coding_projects(db: Database) -> None:
    """Coding projects: their debates, codebook, coders, codings, memos and history."""
    db.table("coding_projects").create({"id": str, "name": str, "lead": str, "blind": int, "revealed_at": float,
                                  "created_at": float}, pk="id", not_null={"name"})
    db.table("coding_project_debates").create({"project_id": str, "debate_id": str, "added_at": float},
                                        pk=("project_id", "debate_id"))
    db.table("codes").create({"id": str, "project_id": str, "name": str, "parent_id": str, "colour": str,
                        "definition": str, "include_notes": str, "exclude_notes": str, "example": str,
                        "position": int, "created_at": float, "deleted_at": float},
                       pk="id", not_null={"project_id", "name"})
    db.table("codes").create_index(["project_id"])
    db.table("coders").create({"id": str, "project_id": str, "name": str, "kind": str, "session": str,
                               "created_at": float},
                        pk="id", not_null={"project_id", "name"})
    db.execute("CREATE UNIQUE INDEX coders_by_name ON coders (project_id, name COLLATE NOCASE)")
    db.table("codings").create({"id": str, "project_id": str, "debate_id": str, "turn_id": str, "start": int, "end": int,
                          "quote": str, "code_id": str, "coder_id": str, "created_at": float, "deleted_at": float,
                          "proposal_id": str},
                         pk="id", not_null={"project_id", "debate_id", "turn_id", "code_id", "coder_id"})
    db.table("codings").create_index(["project_id", "debate_id"])
    db.table("memos").create({"id": str, "project_id": str, "target": str, "target_id": str, "coder_id": str,
                        "title": str, "text": str, "created_at": float, "updated_at": float, "deleted_at": float},
                       pk="id", not_null={"project_id", "target", "target_id"})
    db.table("memos").create_index(["project_id"])
    db.table("coding_history").create({"id": int, "project_id": str, "actor": str, "action": str, "entity": str,
                                 "entity_id": str, "before": str, "after": str, "at": float},
                                pk="id", not_null={"project_id", "action"})
    db.table("coding_history").create_index(["project_id", "at"])


@MIGRATIONS()
def m015_annotations_to_codes(db: Database) -> None:
    """The archive's annotations as a coding project (see the module docstring); nothing removed."""
    annotations = list(db.query("SELECT a.*, t.content FROM annotations a LEFT JOIN turns t "
                                "ON t.debate_id = a.debate_id AND t.turn_id = a.turn_id ORDER BY a.id"))
    tags = list(db.query("SELECT name, colour, created_at FROM tags ORDER BY id"))
    if not annotations and {t["name"] for t in tags} <= set(DEFAULT_TAGS):
        return  # a new archive (the codebook's starting tags, nothing annotated): nothing to carry
    now = time.time()
    project_id = new_id()
    db.table("coding_projects").insert({"id": project_id, "name": ARCHIVE_PROJECT, "lead": None, "blind": 0,
                                  "revealed_at": now, "created_at": now})
    codes = {}
    for position, tag in enumerate(tags):
        codes[tag["name"].lower()] = code_id = new_id()
        db.table("codes").insert({"id": code_id, "project_id": project_id, "name": tag["name"], "parent_id": None,
                            "colour": PALETTE_HEX.get(tag["colour"], "#4C78A8"), "definition": "",
                            "include_notes": "", "exclude_notes": "", "example": "", "position": position,
                            "created_at": tag["created_at"] or now})
    coders: dict[str, str] = {}
    for row in annotations:
        _carry_annotation(db, project_id, row, codes, coders, now)
    _history(db, project_id, None, "migrate", "project", project_id, None,
             {"codes": len(codes), "codings": len(annotations), "coders": len(coders)})


@MIGRATIONS()
def m016_proposal_reviews(db: Database) -> None:
    """Each person's review of a model's proposal (qda/precode.py): accepted or rejected, by whom, when;
    one row per proposal and person, so one person's review does not decide for the others."""
    db.table("proposal_reviews").create({"proposal_id": str, "coder_id": str, "project_id": str, "review": str,
                                         "coding_id": str, "at": float}, pk=("proposal_id", "coder_id"))
    db.table("proposal_reviews").create_index(["project_id"])


def _carry_annotation(db: Database, project_id: str, row: dict[str, Any], codes: dict[str, str],
                      coders: dict[str, str], now: float) -> None:
    """One annotation as a whole-turn coding (its tag's code, its annotator a coder, its note a memo)."""
    name = " ".join(str(row.get("annotator") or "").split()) or NO_NAME
    if name.lower() not in coders:
        coders[name.lower()] = new_id()
        db.table("coders").insert({"id": coders[name.lower()], "project_id": project_id, "name": name, "kind": "person",
                             "created_at": row.get("created_at") or now})
    if row["tag"].lower() not in codes:  # a tag used but since missing from the codebook
        codes[row["tag"].lower()] = new_id()
        db.table("codes").insert({"id": codes[row["tag"].lower()], "project_id": project_id, "name": row["tag"],
                            "colour": "#4C78A8", "position": len(codes), "created_at": now})
    db.execute("INSERT OR IGNORE INTO coding_project_debates (project_id, debate_id, added_at) VALUES (?, ?, ?)",
               [project_id, row["debate_id"], now])
    text = row.get("content") or ""
    coding_id = new_id()
    db.table("codings").insert({"id": coding_id, "project_id": project_id, "debate_id": row["debate_id"],
                          "turn_id": row["turn_id"], "start": 0, "end": len(text), "quote": text,
                          "code_id": codes[row["tag"].lower()], "coder_id": coders[name.lower()],
                          "created_at": row.get("created_at") or now})
    if (row.get("note") or "").strip():
        db.table("memos").insert({"id": new_id(), "project_id": project_id, "target": "coding", "target_id": coding_id,
                            "coder_id": coders[name.lower()], "title": "note", "text": row["note"],
                            "created_at": row.get("created_at") or now, "updated_at": row.get("created_at") or now})


def _history(db: Database, project_id: str, actor: str | None, action: str, entity: str, entity_id: str,
             before: Any, after: Any) -> None:
    db.table("coding_history").insert({"project_id": project_id, "actor": actor, "action": action, "entity": entity,
                                 "entity_id": entity_id, "at": time.time(),
                                 "before": None if before is None else json.dumps(before, ensure_ascii=False),
                                 "after": None if after is None else json.dumps(after, ensure_ascii=False)})


def record_history(db: Database, project_id: str, actor: str | None, action: str, entity: str, entity_id: str,
                   before: Any = None, after: Any = None) -> None:
    """Write one change to the project's history (inside the caller's transaction)."""
    _history(db, project_id, actor, action, entity, entity_id, before, after)


# ----- reading ----------------------------------------------------------------------------------------
def projects(store: Store) -> list[dict[str, Any]]:
    """Every coding project, newest first, with how many debates, coders and codings it has."""
    sql = """SELECT p.*, (SELECT COUNT(*) FROM coding_project_debates d WHERE d.project_id = p.id) AS debates,
                    (SELECT COUNT(*) FROM coders c WHERE c.project_id = p.id) AS coders,
                    (SELECT COUNT(*) FROM codings g WHERE g.project_id = p.id AND g.deleted_at IS NULL) AS codings
             FROM coding_projects p ORDER BY p.created_at DESC"""
    return store.query(sql)


def project_row(store: Store, project_id: str) -> dict[str, Any] | None:
    rows = store.query("SELECT * FROM coding_projects WHERE id = ?", [project_id])
    return rows[0] if rows else None


def debate_ids(store: Store, project_id: str) -> list[str]:
    return [row["debate_id"] for row in store.query(
        "SELECT debate_id FROM coding_project_debates WHERE project_id = ? ORDER BY added_at, rowid",
        [project_id])]


def code_rows(store: Store, project_id: str, *, deleted: bool = False) -> list[dict[str, Any]]:
    """The project's codes in codebook order (parents before their children, then by position)."""
    rows = store.query("SELECT * FROM codes WHERE project_id = ? AND (deleted_at IS NULL OR ?) "
                       "ORDER BY position, created_at", [project_id, int(deleted)])
    return tree_order(rows)


def tree_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Codes ordered as a tree is read: each code followed by its children (orphans at the top)."""
    ids = {row["id"] for row in rows}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for row in rows:
        children.setdefault(row["parent_id"] if row["parent_id"] in ids else None, []).append(row)
    ordered: list[dict[str, Any]] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        row = stack.pop()
        ordered.append(row)
        stack.extend(reversed(children.get(row["id"], [])))
    return ordered


def coder_rows(store: Store, project_id: str) -> list[dict[str, Any]]:
    return store.query("SELECT * FROM coders WHERE project_id = ? ORDER BY created_at, name", [project_id])


def coding_rows(store: Store, project_id: str, *, debate_id: str | None = None, coder_ids: list[str] | None = None,
                deleted: bool = False) -> list[dict[str, Any]]:
    """Codings of the project (of one debate, of some coders), oldest first."""
    where, args = ["project_id = ?"], [project_id]
    if not deleted:
        where.append("deleted_at IS NULL")
    if debate_id is not None:
        where.append("debate_id = ?")
        args.append(debate_id)
    if coder_ids is not None:
        where.append(f"coder_id IN ({','.join('?' * len(coder_ids))})" if coder_ids else "0")
        args.extend(coder_ids)
    return store.query(f"SELECT * FROM codings WHERE {' AND '.join(where)} ORDER BY created_at, id", args)


def memo_rows(store: Store, project_id: str, *, deleted: bool = False) -> list[dict[str, Any]]:
    return store.query("SELECT * FROM memos WHERE project_id = ? AND (deleted_at IS NULL OR ?) ORDER BY created_at",
                       [project_id, int(deleted)])


def reviews(store: Store, project_id: str, coder_id: str) -> dict[str, str]:
    """proposal id -> "accepted" / "rejected" for the proposals `coder_id` has reviewed."""
    return {r["proposal_id"]: r["review"] for r in store.query(
        "SELECT proposal_id, review FROM proposal_reviews WHERE project_id = ? AND coder_id = ?", [project_id, coder_id])}


def history(store: Store, project_id: str, limit: int = 500) -> list[dict[str, Any]]:
    """The project's changes, newest first (`before`/`after` decoded)."""
    rows = store.query("SELECT * FROM coding_history WHERE project_id = ? ORDER BY at DESC, id DESC LIMIT ?",
                       [project_id, max(1, min(int(limit), 100_000))])
    for row in rows:
        for key in ("before", "after"):
            row[key] = json.loads(row[key]) if row[key] else None
    return rows


def turn_rows(store: Store, debate_id: str) -> list[dict[str, Any]]:
    """A debate's turns that have text, in order (what can be coded)."""
    return store.query("SELECT turn_id, seq, round, agent, kind, content FROM turns WHERE debate_id = ? "
                       "AND content IS NOT NULL AND content != '' ORDER BY seq, id", [debate_id])


def turn_header(turn: dict[str, Any]) -> str:
    """How a turn is introduced in its debate's source text."""
    return f"{turn['agent']} · round {int(turn['round'] or 0) + 1} · {turn['kind']}"


def source(store: Store, debate_id: str) -> Source | None:
    """A stored debate as one plain-text source (`model.source_of`); its id derived from the
    debate's, so that every export of it names the same source."""
    rows = store.query("SELECT question FROM debates WHERE id = ?", [debate_id])
    if not rows:
        return None
    turns = [(t["turn_id"], turn_header(t), t["content"]) for t in turn_rows(store, debate_id)]
    name = " ".join(str(rows[0]["question"] or "").split())[:80] or debate_id[:8]
    return source_of(debate_id, name, turns, source_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"madlab:debate:{debate_id}")))


def load_project(store: Store, project_id: str, *, coder_ids: list[str] | None = None) -> Project:
    """A stored project as plain data (only the codings of `coder_ids`, when given; nothing deleted,
    nor the codings of a deleted code or of a debate no longer in the archive, nor memos on what is
    left out). A model's proposals are its codings, whatever a person
    made of them (accepting one copies it to that person)."""
    row = project_row(store, project_id)
    if row is None:
        raise LookupError(f"no coding project with id {project_id!r}")
    code_list = code_rows(store, project_id)
    live = {r["id"] for r in code_list}
    codes = [Code(r["id"], r["name"], r["parent_id"] if r["parent_id"] in live else None, r["colour"] or "#4C78A8",
                  r["definition"] or "", r["include_notes"] or "", r["exclude_notes"] or "", r["example"] or "")
             for r in code_list]
    coders = [Coder(r["id"], r["name"]) for r in coder_rows(store, project_id)]
    sources = [s for s in (source(store, d) for d in debate_ids(store, project_id)) if s is not None]
    turns = {(s.debate_id, span.turn_id) for s in sources for span in s.spans}
    # Only what still stands: a coding of a deleted code, or of a debate deleted from the archive since,
    # is left out (it stays in the database, and comes back with an undone code).
    codings = [Coding(r["id"], r["debate_id"], r["turn_id"], r["start"], r["end"], r["quote"] or "", r["code_id"],
                      r["coder_id"], r["created_at"] or 0.0)
               for r in coding_rows(store, project_id, coder_ids=coder_ids)
               if r["code_id"] in live and (r["debate_id"], r["turn_id"]) in turns]
    targets = {"project": {project_id}, "code": live, "debate": {s.debate_id for s in sources},
               "turn": {turn for _, turn in turns}, "coding": {c.id for c in codings}}
    memos = [Memo(r["id"], r["target"], r["target_id"], r["coder_id"], r["title"] or "", r["text"] or "",
                  r["created_at"] or 0.0) for r in memo_rows(store, project_id)
             if r["target_id"] in targets.get(r["target"], set())]
    return Project(row["id"], row["name"], codes, coders, sources, codings, memos, row["created_at"] or 0.0)
