"""Changing a coding project: projects, coders, codes, codings, memos, blind mode, gold, undo.

What it is for: every change a coder or the lead makes, each in one transaction that also writes
the project's history (`storage.record_history`: who, what, before and after). Rules it keeps:

  * bad input is refused before anything is written, with a ValueError naming the field
    ("start: 12 is past the end of the turn's text (10 characters)"); a LookupError names an
    unknown project, code, coder or turn;
  * a coder changes only their own work: deleting (or undoing the deletion of) another coder's
    coding or memo is refused (PermissionError); only the lead reveals a blind project or
    writes the gold coding (`settle` a set of codes on a passage, `settle_code` one code on a
    turn to given passages); a person cannot take the gold or a model coder's name, nor, when
    admitted by a coder invitation (`join(may_lead=False)`), the lead's;
  * nothing is removed: deleting marks `deleted_at`, and `undo_delete` clears it again;
  * a passage is `turn text[start:end]` of the stored turn, its quote kept beside its offsets.

Blind mode (`visible_coders`): until the lead reveals the project, a coder sees only their own
codings (and the proposals of a model coder); the lead sees everyone's.

What it must not do: import streamlit, call a model, or reach into the store's private parts.
"""
from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

from ..store import Store
from ..text import clean_text
from . import storage
from .model import MEMO_TARGETS, new_id

MAX_NAME_CHARS = 120
MAX_TEXT_CHARS = 20_000
COLOUR = re.compile(r"#[0-9A-Fa-f]{6}\Z")
DEFAULT_COLOURS = ("#1F77B4", "#FF7F0E", "#2CA02C", "#D62728", "#9467BD", "#8C564B", "#E377C2", "#7F7F7F",
                   "#BCBD22", "#17BECF")
GOLD = "gold"


def _name(value: Any, field: str) -> str:
    name = " ".join(clean_text(str(value or "")).replace("\x00", " ").split())
    if not name:
        raise ValueError(f"{field}: a name is needed")
    if len(name) > MAX_NAME_CHARS:
        raise ValueError(f"{field}: at most {MAX_NAME_CHARS} characters (got {len(name)})")
    return name


def _text(value: Any, field: str) -> str:
    text = clean_text(str(value or "")).replace("\x00", "")
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"{field}: at most {MAX_TEXT_CHARS} characters (got {len(text)})")
    return text


def _project(store: Store, project_id: str) -> dict[str, Any]:
    row = storage.project_row(store, project_id)
    if row is None:
        raise LookupError(f"project: no coding project with id {project_id!r}")
    return row


def _coder(store: Store, project_id: str, coder_id: str, field: str = "coder") -> dict[str, Any]:
    rows = store.query("SELECT * FROM coders WHERE id = ? AND project_id = ?", [coder_id, project_id])
    if not rows:
        raise LookupError(f"{field}: {coder_id!r} is not a coder of this project")
    return rows[0]


# ----- projects and coders -------------------------------------------------------------------------------
def create_project(store: Store, name: str, lead: str, *, blind: bool = True,
                   debate_ids: Sequence[str] = (), session: str | None = None) -> str:
    """A new project led by `lead` (who joins it as its first coder, held by `session`: the creating
    browser, see `join`); returns its id."""
    name, lead = _name(name, "name"), _name(lead, "lead")
    missing = [d for d in debate_ids if store.get_debate(d) is None]
    if missing:
        raise LookupError(f"debates: no debate with id {missing[0]!r}")
    project_id, now = new_id(), time.time()
    with store.transaction() as db:
        db.table("coding_projects").insert({"id": project_id, "name": name, "lead": lead, "blind": int(blind),
                                            "revealed_at": None, "created_at": now})
        db.table("coders").insert({"id": new_id(), "project_id": project_id, "name": lead, "kind": "person",
                                   "session": session, "created_at": now})
        for debate_id in dict.fromkeys(debate_ids):
            db.table("coding_project_debates").insert({"project_id": project_id, "debate_id": debate_id, "added_at": now})
        storage.record_history(db, project_id, lead, "create", "project", project_id, None,
                               {"name": name, "blind": bool(blind), "debates": list(dict.fromkeys(debate_ids))})
    return project_id


def add_debates(store: Store, project_id: str, debate_ids: list[str], actor: str) -> int:
    """Add debates to a project (those already in it are skipped); returns how many were added."""
    _project(store, project_id)
    missing = [d for d in debate_ids if store.get_debate(d) is None]
    if missing:
        raise LookupError(f"debates: no debate with id {missing[0]!r}")
    added = 0
    with store.transaction() as db:
        for debate_id in dict.fromkeys(debate_ids):
            cursor = db.execute("INSERT OR IGNORE INTO coding_project_debates (project_id, debate_id, added_at) "
                                "VALUES (?, ?, ?)", [project_id, debate_id, time.time()])
            added += cursor.rowcount
        storage.record_history(db, project_id, actor, "add", "debates", project_id, None, list(debate_ids))
    return added


def join(store: Store, project_id: str, name: str, kind: str = "person", *, session: str | None = None,
         may_lead: bool = True) -> str:
    """The id of the project's coder called `name` (any case), added when new. `session`: the browser
    session that speaks for this coder (the app passes its session token): a name another session
    holds is refused (ValueError naming "coder"), so nobody codes, or deletes, under another's name.
    `may_lead` False (a colleague admitted by a coder invitation): the lead's name is refused too,
    whoever holds it, so such a coder never leads."""
    name = _name(name, "coder")
    if kind not in storage.CODER_KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(storage.CODER_KINDS)}")
    project = _project(store, project_id)
    if not may_lead and project["lead"] and name.lower() == str(project["lead"]).lower():
        raise ValueError(f"coder: {name!r} is the name of the project's lead; pick your own name")
    with store.transaction() as db:
        rows = store.query("SELECT id, session, kind FROM coders WHERE project_id = ? AND name = ? COLLATE NOCASE",
                           [project_id, name])
        if rows:
            if kind == "person" and rows[0]["kind"] != "person":  # a person never codes as gold or as a model
                raise ValueError(f"coder: {name!r} is the name of the project's {rows[0]['kind']} coder; "
                                 "pick your own name")
            held = rows[0]["session"]
            if session is not None and held is not None and held != session:
                raise ValueError(f"coder: {name!r} is another coder's name in this project (another browser "
                                 "holds it); pick another name")
            if session is not None and held is None:
                db.execute("UPDATE coders SET session = ? WHERE id = ?", [session, rows[0]["id"]])
            return str(rows[0]["id"])
        coder_id = new_id()
        db.table("coders").insert({"id": coder_id, "project_id": project_id, "name": name, "kind": kind,
                                   "session": session, "created_at": time.time()})
        storage.record_history(db, project_id, name, "join", "coder", coder_id, None, {"name": name, "kind": kind})
    return coder_id


def is_lead(store: Store, project_id: str, coder_id: str) -> bool:
    project = _project(store, project_id)
    coder = _coder(store, project_id, coder_id)
    return bool(project["lead"]) and coder["name"].lower() == str(project["lead"]).lower()


def reveal(store: Store, project_id: str, coder_id: str) -> None:
    """End blind mode (the lead only): every coder sees everyone's codings from now on."""
    if not is_lead(store, project_id, coder_id):
        raise PermissionError("only the project's lead reveals the coders' work to each other")
    with store.transaction() as db:
        db.execute("UPDATE coding_projects SET revealed_at = ? WHERE id = ?", [time.time(), project_id])
        storage.record_history(db, project_id, _coder(store, project_id, coder_id)["name"], "reveal", "project",
                               project_id)


def visible_coders(store: Store, project_id: str, viewer_id: str) -> list[str]:
    """Whose codings `viewer_id` may see: everyone's once revealed (or for the lead, or in an open
    project); else their own and those of model coders (their proposals to accept or reject)."""
    project = _project(store, project_id)
    coders = storage.coder_rows(store, project_id)
    if not project["blind"] or project["revealed_at"] or is_lead(store, project_id, viewer_id):
        return [c["id"] for c in coders]
    return [c["id"] for c in coders if c["id"] == viewer_id or c["kind"] == "model"]


def progress(store: Store, project_id: str) -> list[dict[str, Any]]:
    """Per coder: debates coded (of the project's), codings made, and when they last coded."""
    total = len(storage.debate_ids(store, project_id))
    sql = """SELECT c.id, c.name, c.kind, COUNT(g.id) AS codings, COUNT(DISTINCT g.debate_id) AS debates_coded,
                    MAX(g.created_at) AS last_coded
             FROM coders c LEFT JOIN codings g ON g.coder_id = c.id AND g.deleted_at IS NULL
             WHERE c.project_id = ? GROUP BY c.id ORDER BY c.created_at, c.name"""
    return [{**row, "debates": total} for row in store.query(sql, [project_id])]


# ----- the codebook ------------------------------------------------------------------------------------
def _code(store: Store, project_id: str, code_id: str, field: str = "code") -> dict[str, Any]:
    rows = store.query("SELECT * FROM codes WHERE id = ? AND project_id = ? AND deleted_at IS NULL",
                       [code_id, project_id])
    if not rows:
        raise LookupError(f"{field}: {code_id!r} is not a code of this project")
    return rows[0]


def _code_fields(store: Store, project_id: str, fields: dict[str, Any], code_id: str | None) -> dict[str, Any]:
    """The checked columns of a code from `fields` (name, parent, colour, definition, include,
    exclude, example); a name another live code has, or a parent that makes a circle, is refused."""
    out: dict[str, Any] = {}
    if "name" in fields:
        out["name"] = _name(fields["name"], "name")
        clash = store.query("SELECT id FROM codes WHERE project_id = ? AND name = ? COLLATE NOCASE "
                            "AND deleted_at IS NULL AND id IS NOT ?", [project_id, out["name"], code_id])
        if clash:
            raise ValueError(f"name: the codebook already has a code {out['name']!r}")
    if "parent" in fields:
        parent = fields["parent"] or None
        if parent is not None:
            _code(store, project_id, parent, "parent")
            ancestor: str | None = parent
            while ancestor is not None:
                if ancestor == code_id:
                    raise ValueError("parent: a code cannot sit under itself or one of its own children")
                ancestor = _code(store, project_id, ancestor, "parent")["parent_id"]
        out["parent_id"] = parent
    if "colour" in fields:
        if not COLOUR.match(str(fields["colour"] or "")):
            raise ValueError(f"colour: {fields['colour']!r} is not a colour written #RRGGBB")
        out["colour"] = str(fields["colour"]).upper()
    for field, column in (("definition", "definition"), ("include", "include_notes"), ("exclude", "exclude_notes"),
                          ("example", "example")):
        if field in fields:
            out[column] = _text(fields[field], field)
    unknown = set(fields) - {"name", "parent", "colour", "definition", "include", "exclude", "example"}
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: not a field of a code")
    return out


def add_code(store: Store, project_id: str, actor: str, name: str, **fields: Any) -> str:
    """Add a code (fields: parent, colour, definition, include, exclude, example); returns its id."""
    _project(store, project_id)
    values = _code_fields(store, project_id, {"name": name, **fields}, None)
    used = store.query("SELECT COUNT(*) AS n FROM codes WHERE project_id = ?", [project_id])[0]["n"]
    values.setdefault("colour", DEFAULT_COLOURS[used % len(DEFAULT_COLOURS)])
    code_id = new_id()
    row = {"id": code_id, "project_id": project_id, "parent_id": None, "definition": "", "include_notes": "",
           "exclude_notes": "", "example": "", **values, "position": used, "created_at": time.time()}
    with store.transaction() as db:
        db.table("codes").insert(row)
        storage.record_history(db, project_id, actor, "add", "code", code_id, None, row)
    return code_id


def update_code(store: Store, project_id: str, code_id: str, actor: str, **fields: Any) -> None:
    before = _code(store, project_id, code_id)
    values = _code_fields(store, project_id, fields, code_id)
    with store.transaction() as db:
        db.table("codes").update(code_id, values)
        storage.record_history(db, project_id, actor, "edit", "code", code_id, before, {**before, **values})


def delete_code(store: Store, project_id: str, code_id: str, actor: str) -> int:
    """Mark a code deleted (its codings are hidden with it and come back with `undo_delete`); a code
    with live children is refused. Returns how many codings it hides."""
    code = _code(store, project_id, code_id)
    children = store.query("SELECT name FROM codes WHERE parent_id = ? AND deleted_at IS NULL", [code_id])
    if children:
        raise ValueError(f"code: {code['name']!r} has child codes ({', '.join(c['name'] for c in children)}); "
                         "move or delete them first")
    hidden = store.query("SELECT COUNT(*) AS n FROM codings WHERE code_id = ? AND deleted_at IS NULL",
                         [code_id])[0]["n"]
    with store.transaction() as db:
        db.execute("UPDATE codes SET deleted_at = ? WHERE id = ?", [time.time(), code_id])
        storage.record_history(db, project_id, actor, "delete", "code", code_id, code, {"codings_hidden": hidden})
    return hidden


# ----- codings -----------------------------------------------------------------------------------------
def _turn_text(store: Store, project_id: str, debate_id: str, turn_id: str) -> str:
    if debate_id not in storage.debate_ids(store, project_id):
        raise LookupError(f"debate: {debate_id!r} is not in this project")
    rows = store.query("SELECT content FROM turns WHERE debate_id = ? AND turn_id = ?", [debate_id, turn_id])
    if not rows:
        raise LookupError(f"turn: debate {debate_id[:8]} has no turn {turn_id!r}")
    return rows[0]["content"] or ""


def check_passage(text: str, start: Any, end: Any) -> tuple[int, int]:
    """Offsets of a passage of `text` (whole numbers, 0 <= start < end <= len(text)), else ValueError."""
    for field, value in (("start", start), ("end", end)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{field}: must be a whole number of characters, got {value!r}")
    if start < 0:
        raise ValueError(f"start: {start} is before the turn's text")
    if end > len(text):
        raise ValueError(f"end: {end} is past the end of the turn's text ({len(text)} characters)")
    if start >= end:
        raise ValueError(f"end: {end} must come after start ({start}): a passage has at least one character")
    return start, end


def apply_code(store: Store, project_id: str, coder_id: str, debate_id: str, turn_id: str, code_id: str,
               start: int | None = None, end: int | None = None, *, proposal_id: str | None = None) -> str:
    """`coder_id` codes `turn text[start:end]` with `code_id` (the whole turn when both are None);
    returns the coding's id."""
    coder = _coder(store, project_id, coder_id)
    _code(store, project_id, code_id)
    text = _turn_text(store, project_id, debate_id, turn_id)
    start, end = check_passage(text, 0 if start is None else start, len(text) if end is None else end)
    coding_id = new_id()
    row: dict[str, Any] = {"id": coding_id, "project_id": project_id, "debate_id": debate_id, "turn_id": turn_id,
           "start": start,
           "end": end, "quote": text[start:end], "code_id": code_id, "coder_id": coder_id,
           "created_at": time.time(), "proposal_id": proposal_id}
    with store.transaction() as db:
        db.table("codings").insert(row)
        storage.record_history(db, project_id, coder["name"], "code", "coding", coding_id, None, row)
    return coding_id


def _own(store: Store, project_id: str, table: str, row_id: str, coder_id: str, what: str) -> dict[str, Any]:
    rows = store.query(f"SELECT * FROM {table} WHERE id = ? AND project_id = ?", [row_id, project_id])
    if not rows:
        raise LookupError(f"{what}: no {what} {row_id!r} in this project")
    if rows[0]["coder_id"] != coder_id:
        raise PermissionError(f"this {what} is another coder's work: only they can change it")
    return rows[0]


def _delete_own(store: Store, project_id: str, what: str, row_id: str, coder_id: str) -> None:
    """Mark one of `coder_id`'s own codings or memos deleted (undone by `undo_delete`)."""
    table = {"coding": "codings", "memo": "memos"}[what]
    row = _own(store, project_id, table, row_id, coder_id, what)
    with store.transaction() as db:
        db.execute(f"UPDATE {table} SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL", [time.time(), row_id])
        storage.record_history(db, project_id, _coder(store, project_id, coder_id)["name"], "delete", what, row_id,
                               row)


def delete_coding(store: Store, project_id: str, coding_id: str, coder_id: str) -> None:
    """Mark one of `coder_id`'s own codings deleted (undone by `undo_delete`)."""
    _delete_own(store, project_id, "coding", coding_id, coder_id)


def undo_delete(store: Store, project_id: str, entity: str, entity_id: str, coder_id: str) -> None:
    """Bring back a deleted coding or memo (its coder only) or code (whoever may edit the codebook)."""
    table = {"coding": "codings", "memo": "memos", "code": "codes"}.get(entity)
    if table is None:
        raise ValueError(f"entity: {entity!r} cannot be undone (coding, memo or code)")
    if table == "codes":
        rows = store.query("SELECT * FROM codes WHERE id = ? AND project_id = ?", [entity_id, project_id])
        if not rows:
            raise LookupError(f"code: no code {entity_id!r} in this project")
    else:
        _own(store, project_id, table, entity_id, coder_id, entity)
    with store.transaction() as db:
        db.execute(f"UPDATE {table} SET deleted_at = NULL WHERE id = ?", [entity_id])
        storage.record_history(db, project_id, _coder(store, project_id, coder_id)["name"], "undo", entity,
                               entity_id)


# ----- memos -------------------------------------------------------------------------------------------
def add_memo(store: Store, project_id: str, coder_id: str, target: str, target_id: str, text: str,
             title: str = "") -> str:
    """A memo by `coder_id` on the project, a code, a debate, a turn or a coding; returns its id."""
    if target not in MEMO_TARGETS:
        raise ValueError(f"target: {target!r} is not one of {', '.join(MEMO_TARGETS)}")
    coder = _coder(store, project_id, coder_id)
    body = _text(text, "text")
    if not body.strip():
        raise ValueError("text: a memo needs some text")
    _memo_target(store, project_id, target, target_id)
    now = time.time()
    memo_id = new_id()
    row: dict[str, Any] = {"id": memo_id, "project_id": project_id, "target": target, "target_id": target_id,
           "coder_id": coder_id,
           "title": _text(title, "title")[:MAX_NAME_CHARS], "text": body, "created_at": now, "updated_at": now}
    with store.transaction() as db:
        db.table("memos").insert(row)
        storage.record_history(db, project_id, coder["name"], "add", "memo", memo_id, None, row)
    return memo_id


def _memo_target(store: Store, project_id: str, target: str, target_id: str) -> None:
    if target == "project":
        if target_id != project_id:
            raise ValueError("target_id: a project memo is on this project")
    elif target == "code":
        _code(store, project_id, target_id, "target_id")
    elif target == "debate":
        if target_id not in storage.debate_ids(store, project_id):
            raise LookupError(f"target_id: debate {target_id!r} is not in this project")
    elif target == "turn":
        found = store.query("SELECT debate_id FROM turns WHERE turn_id = ?", [target_id])
        if not any(r["debate_id"] in storage.debate_ids(store, project_id) for r in found):
            raise LookupError(f"target_id: turn {target_id!r} is not in this project's debates")
    elif not store.query("SELECT 1 FROM codings WHERE id = ? AND project_id = ?", [target_id, project_id]):
        raise LookupError(f"target_id: coding {target_id!r} is not in this project")


def edit_memo(store: Store, project_id: str, memo_id: str, coder_id: str, text: str, title: str | None = None) -> None:
    """Change one of `coder_id`'s own memos (the history keeps what it said before)."""
    row = _own(store, project_id, "memos", memo_id, coder_id, "memo")
    body = _text(text, "text")
    if not body.strip():
        raise ValueError("text: a memo needs some text")
    values = {"text": body, "updated_at": time.time()}
    if title is not None:
        values["title"] = _text(title, "title")[:MAX_NAME_CHARS]
    with store.transaction() as db:
        db.table("memos").update(memo_id, values)
        storage.record_history(db, project_id, _coder(store, project_id, coder_id)["name"], "edit", "memo", memo_id,
                               row, {**row, **values})


def delete_memo(store: Store, project_id: str, memo_id: str, coder_id: str) -> None:
    """Mark one of `coder_id`'s own memos deleted (undone by `undo_delete`)."""
    _delete_own(store, project_id, "memo", memo_id, coder_id)


# ----- adjudication --------------------------------------------------------------------------------------
def gold_coder(store: Store, project_id: str) -> str:
    """The project's gold coder (the adjudicated coding), added when missing."""
    return join(store, project_id, GOLD, kind="gold")


def settle(store: Store, project_id: str, coder_id: str, debate_id: str, turn_id: str, code_ids: list[str],
           start: int | None = None, end: int | None = None) -> list[str]:
    """The lead (`coder_id`) settles one unit: the gold coding of `turn text[start:end]` becomes
    exactly `code_ids` (earlier gold codings of that passage are marked deleted); returns the new
    gold codings' ids. The history records who decided."""
    if not is_lead(store, project_id, coder_id):
        raise PermissionError("only the project's lead settles disagreements into the gold coding")
    gold = gold_coder(store, project_id)
    text = _turn_text(store, project_id, debate_id, turn_id)
    start, end = check_passage(text, 0 if start is None else start, len(text) if end is None else end)
    for code_id in code_ids:
        _code(store, project_id, code_id)
    lead = _coder(store, project_id, coder_id)["name"]
    with store.transaction() as db:
        db.execute("UPDATE codings SET deleted_at = ? WHERE coder_id = ? AND turn_id = ? AND debate_id = ? "
                   "AND start = ? AND end = ? AND deleted_at IS NULL", [time.time(), gold, turn_id, debate_id,
                                                                        start, end])
        made = [apply_code(store, project_id, gold, debate_id, turn_id, code_id, start, end) for code_id in code_ids]
        storage.record_history(db, project_id, lead, "settle", "unit", f"{debate_id}:{turn_id}:{start}:{end}", None,
                               {"codes": list(code_ids), "decided_by": lead})
    return made


def settle_code(store: Store, project_id: str, coder_id: str, debate_id: str, turn_id: str, code_id: str,
                spans: Sequence[tuple[int, int]]) -> list[str]:
    """The lead (`coder_id`) settles one code on one turn: the gold codings of `code_id` on the turn
    become exactly `spans` ((start, end) passages of the turn's text: the whole turn, one coder's
    passages, or none for "not this code"); every earlier gold coding of that code on that turn is
    marked deleted. Returns the new gold codings' ids (each keeps its passage's quote); the history
    records who decided. A non-lead is refused (PermissionError), bad offsets or an unknown code or
    turn too (ValueError, LookupError), before anything is written."""
    if not is_lead(store, project_id, coder_id):
        raise PermissionError("only the project's lead settles disagreements into the gold coding")
    text = _turn_text(store, project_id, debate_id, turn_id)
    _code(store, project_id, code_id)
    checked = sorted(dict.fromkeys(check_passage(text, *span) for span in spans))
    gold = gold_coder(store, project_id)
    lead = _coder(store, project_id, coder_id)["name"]
    with store.transaction() as db:
        db.execute("UPDATE codings SET deleted_at = ? WHERE coder_id = ? AND debate_id = ? AND turn_id = ? "
                   "AND code_id = ? AND deleted_at IS NULL", [time.time(), gold, debate_id, turn_id, code_id])
        made = [apply_code(store, project_id, gold, debate_id, turn_id, code_id, start, end) for start, end in checked]
        storage.record_history(db, project_id, lead, "settle", "code", code_id, None,
                               {"debate_id": debate_id, "turn_id": turn_id, "code": code_id,
                                "spans": [list(span) for span in checked], "decided_by": lead})
    return made


def coder_name(store: Store, project_id: str, coder_id: str) -> str:
    """A coder's name (LookupError naming the coder when it is not one of the project's)."""
    return str(_coder(store, project_id, coder_id)["name"])


def passages_of_debate(store: Store, debate_id: str, viewer: str | None = None,
                       session: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """turn id -> the coded passages of `debate_id` that `viewer` may see, over every project that
    holds the debate (for drawing them wherever the turn is shown; reads only, joins nobody).

    Blind mode holds here too: in a blind project not yet revealed, a viewer sees only their own
    codings (and a model coder's proposals), and only when they are that project's coder `viewer`
    AND `session` is the browser session holding that name (or the name is held by none); the
    lead sees all; anyone else sees nothing of that project. Each passage: start, end, quote, the
    code's name and colour, the coder's name and the project's name; deleted ones left out."""
    projects = store.query("SELECT p.* FROM coding_projects p JOIN coding_project_debates d ON d.project_id = p.id "
                           "WHERE d.debate_id = ? ORDER BY p.created_at", [debate_id])
    passages: dict[str, list[dict[str, Any]]] = {}
    for project in projects:
        coders = {c["id"]: c for c in storage.coder_rows(store, project["id"])}
        me = next((c for c in coders.values() if viewer and c["name"].lower() == viewer.strip().lower()
                   and c["session"] in (None, session)), None)
        if not project["blind"] or project["revealed_at"]:
            visible = set(coders)
        elif me is not None:
            visible = set(visible_coders(store, project["id"], me["id"]))
        else:
            continue
        codes = {c["id"]: c for c in storage.code_rows(store, project["id"])}
        for row in storage.coding_rows(store, project["id"], debate_id=debate_id, coder_ids=sorted(visible)):
            code = codes.get(row["code_id"])
            if code is None:  # a deleted code's codings stand down with it
                continue
            passages.setdefault(row["turn_id"], []).append({
                "start": row["start"], "end": row["end"], "quote": row["quote"], "code": code["name"],
                "colour": code.get("colour"), "coder": coders[row["coder_id"]]["name"], "project": project["name"]})
    return passages
