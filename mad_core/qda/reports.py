"""What a coding project reports, from the database: the agreement table of chosen coders (with
names, ready for a CSV), each coder against gold, and the units where coders differ.

What it is for: joining a stored project (`storage.load_project`) with the figures of
`agreement.agreement_table`, which works on plain data. `disagreements` lists, per turn of the
debates every compared coder coded, each coder's codes side by side with the turn's text and its
passages (quotes), keeping the turns where their codes differ, with the gold codes when settled.

What it must not do: write, import streamlit, or hide a coder's work from the lead (callers
choose `coder_ids`; a blind coder's page passes only what `coding.visible_coders` allows).
"""
from __future__ import annotations

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


def disagreements(store: Store, project_id: str, coder_ids: list[str]) -> list[dict[str, Any]]:
    """Turns where the coders' codes differ: debate, turn, header, text, per coder the code names and
    passages, and the gold codes (None when not settled). Only debates every coder coded count."""
    gold = [c["id"] for c in storage.coder_rows(store, project_id) if c["kind"] == "gold"]
    project = storage.load_project(store, project_id, coder_ids=[*coder_ids, *gold])
    names = {c.id: c.name for c in project.coders}
    codes = {c.id: c.name for c in project.codes}
    coded = {coder: {c.debate_id for c in project.codings if c.coder_id == coder} for coder in coder_ids}
    shared = set.intersection(*coded.values()) if coded else set()
    rows = []
    for source in project.sources:
        if source.debate_id not in shared:
            continue
        for span in source.spans:
            mine = [c for c in project.codings if c.turn_id == span.turn_id and c.debate_id == source.debate_id]
            by_coder = {names[k]: sorted({codes[c.code_id] for c in mine if c.coder_id == k}) for k in coder_ids}
            if len({tuple(v) for v in by_coder.values()}) <= 1:
                continue
            passages = {names[k]: [(codes[c.code_id], c.start, c.end, c.quote) for c in mine if c.coder_id == k]
                        for k in coder_ids}
            settled = sorted({codes[c.code_id] for c in mine if c.coder_id in gold}) if any(
                c.coder_id in gold for c in mine) else None
            rows.append({"debate_id": source.debate_id, "turn_id": span.turn_id,
                         "header": source.text[:span.start].rsplit("\n", 2)[-2] if span.start else "",
                         "text": source.text[span.start:span.end], "codes": by_coder, "passages": passages,
                         "gold": settled})
    return rows
