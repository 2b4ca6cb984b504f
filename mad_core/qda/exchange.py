"""REFI-QDA exchange of a stored coding project: export as QDPX / QDC, import a QDC codebook or a
QDPX project's codings onto the same debates (mad_core/qda/refi.py reads and writes the files).

Importing is all or nothing: the file is read and checked completely (`refi`), its codes, coders,
codings and memos are matched to the project's, and everything new is written in one
transaction with one history entry, or nothing is. Matching: a code by its id, else by its name
(any case: a codebook written by another tool keeps its own ids); a coder by id, else by name; a
coding or memo whose id the project holds already is not added twice (importing the same file
again adds nothing; nor does a coding of the same passage, code and coder, or a memo of the same
text on the same target, which the project already holds). Codes keep their hierarchy (a new child under a code matched by name goes
under that code).

What it must not do: parse a file itself (refi does, through defusedxml), import streamlit, or
write anything when the file is refused (`refi.QdaImportError`, a ValueError naming where).
"""
from __future__ import annotations

import time
from typing import Any

from ..store import Store
from . import refi, storage
from .model import Code, new_id

QdaImportError = refi.QdaImportError


def export_qdpx(store: Store, project_id: str) -> bytes:
    """The whole project (debates, codebook, every coder's codings, memos) as a QDPX archive."""
    return refi.qdpx_bytes(storage.load_project(store, project_id))


def export_qdc(store: Store, project_id: str) -> bytes:
    """The project's codebook as a QDC file (ValueError when it has no code: a QDC needs one)."""
    return refi.qdc_bytes(storage.load_project(store, project_id))


def _merge_codes(db: Any, store: Store, project_id: str, codes: list[Code]) -> tuple[dict[str, str], int]:
    """Write the codes the project lacks; returns (the file's code id -> the project's, codes added)."""
    rows = store.query("SELECT id, name FROM codes WHERE project_id = ? AND deleted_at IS NULL", [project_id])
    by_id = {r["id"]: r["id"] for r in rows}
    by_name = {r["name"].lower(): r["id"] for r in rows}
    taken = store.query("SELECT id FROM codes")  # ids are global: a code of another project keeps its own
    other = {r["id"] for r in taken} - set(by_id)
    mapping: dict[str, str] = {}
    added = 0
    position = len(rows)
    for code in codes:  # parents come before their children (refi.read_qdc / read_qdpx order)
        found = by_id.get(code.id) or by_name.get(code.name.lower())
        if found is not None:
            mapping[code.id] = found
            continue
        made = code.id if code.id not in other else new_id()
        mapping[code.id] = by_name[code.name.lower()] = made
        db.table("codes").insert({"id": made, "project_id": project_id, "name": code.name,
                                  "parent_id": mapping.get(code.parent) if code.parent else None,
                                  "colour": code.colour, "definition": code.definition, "include_notes": code.include,
                                  "exclude_notes": code.exclude, "example": code.example, "position": position,
                                  "created_at": time.time()})
        position += 1
        added += 1
    return mapping, added


def import_codebook(store: Store, project_id: str, actor: str, data: bytes) -> int:
    """Add a QDC codebook's codes to the project (those it has already, by id or name, are kept as
    they are); returns how many were added. Refused files raise `QdaImportError`; nothing written."""
    if storage.project_row(store, project_id) is None:
        raise LookupError(f"project: no coding project with id {project_id!r}")
    codes = refi.read_qdc(data)
    with store.transaction() as db:
        _, added = _merge_codes(db, store, project_id, codes)
        storage.record_history(db, project_id, actor, "import", "codebook", project_id, None, {"codes_added": added})
    return added


def import_project(store: Store, project_id: str, actor: str, data: bytes) -> dict[str, int]:
    """Bring a QDPX project's codes, coders, codings and memos onto this project's debates; returns
    how many of each were added. Refused files raise `QdaImportError`; nothing is written then."""
    project = storage.load_project(store, project_id)
    found = refi.read_qdpx(data, project.sources, project_id=project_id)
    counts = {"codes": 0, "coders": 0, "codings": 0, "memos": 0}
    with store.transaction() as db:
        codes, counts["codes"] = _merge_codes(db, store, project_id, found.codes)
        coders = _merge_coders(db, store, project_id, found.coders, counts)
        here, elsewhere = _ids(store, "codings", project_id)
        same = {(r["debate_id"], r["turn_id"], r["start"], r["end"], r["code_id"], r["coder_id"]): r["id"]
                for r in storage.coding_rows(store, project_id)}
        coding_ids: dict[str, str] = {}
        for coded in found.codings:
            twin = same.get((coded.debate_id, coded.turn_id, coded.start, coded.end, codes[coded.code_id],
                             coders[coded.coder_id]))
            if coded.id in here or twin is not None:
                coding_ids[coded.id] = coded.id if coded.id in here else str(twin)
                continue
            coding_ids[coded.id] = made = coded.id if coded.id not in elsewhere else new_id()
            db.table("codings").insert({"id": made, "project_id": project_id, "debate_id": coded.debate_id,
                                        "turn_id": coded.turn_id, "start": coded.start, "end": coded.end,
                                        "quote": coded.quote, "code_id": codes[coded.code_id],
                                        "coder_id": coders[coded.coder_id], "created_at": coded.created_at or time.time()})
            counts["codings"] += 1
        here, elsewhere = _ids(store, "memos", project_id)
        known = {(r["target"], r["target_id"], r["text"]) for r in storage.memo_rows(store, project_id)}
        for memo in found.memos:
            targets = {"code": codes, "coding": coding_ids}.get(memo.target, {})
            if memo.id in here or (memo.target, targets.get(memo.target_id, memo.target_id), memo.text) in known:
                continue
            db.table("memos").insert({"id": memo.id if memo.id not in elsewhere else new_id(), "project_id": project_id,
                                      "target": memo.target, "target_id": targets.get(memo.target_id, memo.target_id),
                                      "coder_id": coders.get(memo.coder_id or ""), "title": memo.title,
                                      "text": memo.text, "created_at": memo.created_at or time.time(),
                                      "updated_at": memo.created_at or time.time()})
            counts["memos"] += 1
        storage.record_history(db, project_id, actor, "import", "project", project_id, None,
                               {**counts, "sources": sorted(set(found.matched.values()))})
    return counts


def _ids(store: Store, table: str, project_id: str) -> tuple[set[str], set[str]]:
    """The ids of `table` in this project, and those other projects hold (ids are unique in a table:
    a file exported from another project of this database gets new ids here)."""
    rows = store.query(f"SELECT id, project_id = ? AS mine FROM {table}", [project_id])
    return {r["id"] for r in rows if r["mine"]}, {r["id"] for r in rows if not r["mine"]}


def _merge_coders(db: Any, store: Store, project_id: str, coders: list[Any], counts: dict[str, int]) -> dict[str, str]:
    rows = storage.coder_rows(store, project_id)
    by_id = {r["id"]: r["id"] for r in rows}
    by_name = {r["name"].lower(): r["id"] for r in rows}
    taken = {r["id"] for r in store.query("SELECT id FROM coders")} - set(by_id)
    mapping: dict[str, str] = {}
    for coder in coders:
        found = by_id.get(coder.id) or by_name.get(coder.name.lower())
        if found is None:
            found = coder.id if coder.id not in taken else new_id()
            db.table("coders").insert({"id": found, "project_id": project_id, "name": coder.name, "kind": "person",
                                       "created_at": time.time()})
            by_name[coder.name.lower()] = found
            counts["coders"] += 1
        mapping[coder.id] = found
    return mapping
