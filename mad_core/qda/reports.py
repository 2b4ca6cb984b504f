"""What a coding project reports, from the database: the agreement table of chosen coders (with
names, ready for a CSV), each coder against gold, and the units where coders differ.

What it is for: joining a stored project (`storage.load_project`) with the figures of
`agreement.agreement_table`, which works on plain data. `disagreements` lists, per turn of the
debates every compared coder coded, each coder's codes side by side with the turn's text and its
passages (quotes), keeping the turns where, for some code, the characters the coders coded with it
differ (`covered`: a whole-turn coding covers every character, so the same code on different
passages is a disagreement too), with the gold codes and passages and whether the lead decided.
`passage_unit` says which agreement unit shows a set of coders' work (character units once one of
their codings is a passage).

What it must not do: write, import streamlit, or hide a coder's work from the lead (callers
choose `coder_ids`; a blind coder's page passes only what `coding.visible_coders` allows).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ..exports import records_csv
from ..store import Store
from . import agreement, storage
from .model import Coding, Project


def _unit_key(debate_id: str, turn_id: str) -> str:
    """A turn's key across debates: turn ids are unique within a debate only (a fork keeps its
    parent's turns under their ids)."""
    return f"{debate_id}\x1f{turn_id}"


def _turn_facts(project: Project) -> tuple[dict[str, int], dict[str, str], list[Coding]]:
    """Turn lengths and debates by `_unit_key`, and the codings keyed the same way."""
    lengths = {_unit_key(source.debate_id, span.turn_id): span.end - span.start
               for source in project.sources for span in source.spans}
    debates = {_unit_key(source.debate_id, span.turn_id): source.debate_id
               for source in project.sources for span in source.spans}
    codings = [replace(c, turn_id=_unit_key(c.debate_id, c.turn_id)) for c in project.codings]
    return lengths, debates, codings


def agreement_rows(store: Store, project_id: str, coder_ids: list[str], unit: str = "turn", *,
                   level: float = agreement.DEFAULT_LEVEL) -> list[agreement.AgreementRow]:
    """The agreement table of `coder_ids` (two or more) over `unit` units (see qda/agreement.py)."""
    project = storage.load_project(store, project_id, coder_ids=coder_ids)
    lengths, debates, codings = _turn_facts(project)
    return agreement.agreement_table(codings, project.codes, coder_ids, lengths, debates, unit, level=level)


def agreement_records(store: Store, project_id: str, rows: list[agreement.AgreementRow]) -> list[dict[str, Any]]:
    """The table's CSV records, coders by name (ids in `coder_ids`)."""
    names = {c["id"]: c["name"] for c in storage.coder_rows(store, project_id)}
    records = agreement.agreement_records(rows)
    for record, row in zip(records, rows):
        record["coder_ids"] = record["coders"]
        record["coders"] = "; ".join(names.get(c, c) for c in row.coders)
    return records


def agreement_csv(records: list[dict[str, Any]]) -> str:
    """Records as CSV, every cell through `csv_safe` (a code named "=SUM(A1)" stays text)."""
    return records_csv(records)


def covered(spans: Iterable[tuple[int, int]], length: int) -> tuple[tuple[int, int], ...]:
    """The characters `spans` cover in a turn of `length` characters, as sorted, merged (start, end)
    runs (clipped to the turn, as the character units of qda/agreement.py are): two coders who coded
    the same characters, in one passage or in several, cover the same runs."""
    runs: list[tuple[int, int]] = []
    for start, end in sorted((max(0, s), min(length, e)) for s, e in spans):
        if start >= end:
            continue
        if runs and start <= runs[-1][1]:
            runs[-1] = (runs[-1][0], max(runs[-1][1], end))
        else:
            runs.append((start, end))
    return tuple(runs)


def _decisions(store: Store, project_id: str) -> tuple[set[tuple[str, str, str]], set[str]]:
    """What the lead decided (the history's settles): (debate, turn, code) settled code by code, and the
    unit keys ("debate:turn:start:end") settled as a set of codes."""
    by_code: set[tuple[str, str, str]] = set()
    units: set[str] = set()
    for row in store.query("SELECT entity, entity_id, after FROM coding_history WHERE project_id = ? "
                           "AND action = 'settle'", [project_id]):
        after = json.loads(row["after"]) if row["after"] else {}
        if row["entity"] == "code":
            by_code.add((str(after.get("debate_id")), str(after.get("turn_id")), str(after.get("code"))))
        else:
            units.add(str(row["entity_id"]))
    return by_code, units


def _differing_codes(mine: list[Coding], coder_ids: list[str], gold: list[str], length: int,
                     names: dict[str, str], codes: dict[str, str]) -> list[dict[str, Any]]:
    """The codes on one turn whose coded characters differ between the coders: per code, each coder's
    passages (start, end, quote) and the gold passages."""
    differ = []
    for code_id in dict.fromkeys(c.code_id for c in mine if c.coder_id in coder_ids):
        of_code = [c for c in mine if c.code_id == code_id]
        runs = {covered(((c.start, c.end) for c in of_code if c.coder_id == k), length) for k in coder_ids}
        if len(runs) <= 1:
            continue
        passages = {names[k]: sorted({(c.start, c.end, c.quote) for c in of_code if c.coder_id == k})
                    for k in coder_ids}
        differ.append({"code_id": code_id, "code": codes[code_id], "passages": passages,
                       "gold": sorted({(c.start, c.end, c.quote) for c in of_code if c.coder_id in gold})})
    return differ


def disagreements(store: Store, project_id: str, coder_ids: list[str]) -> list[dict[str, Any]]:
    """Turns where the coders disagree: for some code, the characters of the turn they coded with it
    differ (a whole-turn coding covers every character; the same code on other passages differs).
    Each: debate, turn, header, text, per coder the code names ("codes") and passages (code, start,
    end, quote), the gold codes (None when the turn has no gold coding), and "differ": per differing
    code its id and name, each coder's passages (start, end, quote), the gold passages and "decided"
    (the lead settled it, maybe to "not this code"). Only debates every coder coded count."""
    gold = [c["id"] for c in storage.coder_rows(store, project_id) if c["kind"] == "gold"]
    project = storage.load_project(store, project_id, coder_ids=[*coder_ids, *gold])
    names = {c.id: c.name for c in project.coders}
    codes = {c.id: c.name for c in project.codes}
    coded = {coder: {c.debate_id for c in project.codings if c.coder_id == coder} for coder in coder_ids}
    shared = set.intersection(*coded.values()) if coded else set()
    by_turn: dict[tuple[str, str], list[Coding]] = {}
    for c in project.codings:
        by_turn.setdefault((c.debate_id, c.turn_id), []).append(c)
    by_code, units = _decisions(store, project_id)
    rows = []
    for source in project.sources:
        if source.debate_id not in shared:
            continue
        for span in source.spans:
            mine = by_turn.get((source.debate_id, span.turn_id), [])
            differ = _differing_codes(mine, coder_ids, gold, span.end - span.start, names, codes)
            if not differ:
                continue
            whole = f"{source.debate_id}:{span.turn_id}:0:{span.end - span.start}" in units
            for item in differ:
                item["decided"] = whole or (source.debate_id, span.turn_id, item["code_id"]) in by_code
            settled = sorted({codes[c.code_id] for c in mine if c.coder_id in gold}) if any(
                c.coder_id in gold for c in mine) else None
            rows.append({"debate_id": source.debate_id, "turn_id": span.turn_id,
                         "header": source.text[:span.start].rsplit("\n", 2)[-2] if span.start else "",
                         "text": source.text[span.start:span.end],
                         "codes": {names[k]: sorted({codes[c.code_id] for c in mine if c.coder_id == k})
                                   for k in coder_ids},
                         "passages": {names[k]: [(codes[c.code_id], c.start, c.end, c.quote) for c in mine
                                                 if c.coder_id == k] for k in coder_ids},
                         "gold": settled, "differ": differ})
    return rows


def passage_unit(store: Store, project_id: str, coder_ids: list[str]) -> str:
    """The agreement unit that shows these coders' work: "character" when one of their live codings is
    a passage (not the whole turn: qda/agreement.py's character units then see where in the turn it
    lies), else "turn"."""
    if not coder_ids:
        return "turn"
    marks = ",".join("?" * len(coder_ids))
    found = store.query(f"SELECT 1 FROM codings g JOIN turns t ON t.debate_id = g.debate_id AND t.turn_id = g.turn_id "
                        f"WHERE g.project_id = ? AND g.deleted_at IS NULL AND g.coder_id IN ({marks}) "
                        "AND (g.start > 0 OR g.end < length(t.content)) LIMIT 1", [project_id, *coder_ids])
    return "character" if found else "turn"
