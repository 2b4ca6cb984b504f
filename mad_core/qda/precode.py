"""Machine pre-coding (issue 22, item 6): a model proposes codes for turns from the codebook.

`precode` asks a chosen model, turn by turn, which codes of the project's codebook apply
(`prompts.precode_prompt`: each code's name, definition, when to apply it and when not, and its
example), reads the reply (`read_proposal`), and stores what it proposes as whole-turn codings
of a coder of its own, named after the model (kind "model"): its agreement with the people is
then computed like anyone's (qda/agreement.py). A turn the model already coded is not asked
again (an interrupted pre-coding continues); a call that fails, and a reply that names no code
of the codebook, are recorded in the result with their cause and in the history, never raised.

A person accepts a proposal (`accept`: the same passage and code become their own coding, linked
to the proposal by `proposal_id`) or rejects it (`reject`); each person's review is their own (a row
of `proposal_reviews`: who, what, when; `storage.reviews`), also in the history, so one person's
review decides nothing for another. The proposal itself stays the model's coding either way.

What it must not do: import streamlit, write outside `Store.transaction`, raise on model text.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..models import RetryPolicy, call_model
from ..prompts import precode_prompt
from ..store import Store
from . import coding, storage


@dataclass(frozen=True)
class Proposal:
    """What one reply proposed: the code ids it named (in codebook order), or why it cannot be read."""

    code_ids: tuple[str, ...]
    invalid: str | None = None
    unknown: tuple[str, ...] = ()  # names in the reply that are not codes of the codebook


@dataclass
class PrecodeResult:
    coder_id: str
    asked: int = 0
    skipped: int = 0  # turns this model had coded already
    proposals: int = 0  # codings stored
    failed: list[tuple[str, str]] = field(default_factory=list)  # (turn id, cause)


JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def read_proposal(reply: str, codes: list[dict[str, Any]]) -> Proposal:
    """The codes a reply names: JSON {"codes": [...]} (also inside other text or a code fence), or,
    failing that, one name per line ("- Price"). Names match the codebook's whatever their case;
    never raises."""
    by_name = {str(c["name"]).strip().lower(): c["id"] for c in codes}
    text = str(reply or "").strip()
    if not text:
        return Proposal((), "the reply is empty")
    names: list[str] | None = None
    found = JSON_OBJECT.search(text)
    if found:
        try:
            data = json.loads(found.group(0))
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("codes"), list):
            names = [str(n) for n in data["codes"] if isinstance(n, (str, int, float))]
    if names is None:
        names = [line.strip().lstrip("-*•").strip().strip('"') for line in text.splitlines() if line.strip()]
        if not any(n.lower() in by_name for n in names):
            return Proposal((), "the reply is neither JSON {\"codes\": [...]} nor a list of the codebook's names")
    chosen = [by_name[n.strip().lower()] for n in names if n.strip().lower() in by_name]
    unknown = tuple(n for n in names if n.strip() and n.strip().lower() not in by_name)
    order = [c["id"] for c in codes]
    picked = tuple(sorted(set(chosen), key=order.index))
    if not picked and unknown:
        return Proposal((), f"no code of the codebook named (it named {', '.join(unknown[:3])})", unknown)
    return Proposal(picked, None, unknown)


def _codebook(store: Store, project_id: str) -> list[dict[str, Any]]:
    return [{"id": r["id"], "name": r["name"], "definition": r["definition"] or "", "include": r["include_notes"] or "",
             "exclude": r["exclude_notes"] or "", "example": r["example"] or ""}
            for r in storage.code_rows(store, project_id)]


def precode(store: Store, project_id: str, model: str, *, debate_ids: list[str] | None = None,
            ask: Callable[..., Any] = call_model, retry: RetryPolicy | None = None) -> PrecodeResult:
    """Have `model` propose codes for every turn of the project's debates (or of `debate_ids`)."""
    codes = _codebook(store, project_id)
    if not codes:
        raise ValueError("codebook: the project has no codes for a model to propose")
    coder_id = coding.join(store, project_id, model, kind="model")
    result = PrecodeResult(coder_id)
    done = {(r["debate_id"], r["turn_id"]) for r in storage.coding_rows(store, project_id, coder_ids=[coder_id],
                                                                         deleted=True)}
    done |= {tuple(h["entity_id"].split(":", 1)) for h in storage.history(store, project_id, 100_000)
             if h["action"] == "precode-none" and h["actor"] == model}
    for debate_id in debate_ids or storage.debate_ids(store, project_id):
        question = (store.get_debate(debate_id) or {}).get("question") or ""
        for turn in storage.turn_rows(store, debate_id):
            if (debate_id, turn["turn_id"]) in done:
                result.skipped += 1
                continue
            _one_turn(store, project_id, model, codes, question, debate_id, turn, result, ask, retry)
    return result


def _one_turn(store: Store, project_id: str, model: str, codes: list[dict[str, Any]], question: str, debate_id: str,
              turn: dict[str, Any], result: PrecodeResult, ask: Callable[..., Any], retry: RetryPolicy | None) -> None:
    messages = precode_prompt(codes, question, storage.turn_header(turn), turn["content"])
    result.asked += 1
    answer = ask(model, messages, temperature=0.0, stream=False, retry=retry,
                 metadata={"kind": "precode", "agent": model, "debate_id": debate_id})
    if answer.status != "ok":
        _note(store, project_id, model, "precode-failed", debate_id, turn, answer.error or answer.status, result)
        return
    proposal = read_proposal(answer.text, codes)
    if proposal.invalid is not None:
        _note(store, project_id, model, "precode-failed", debate_id, turn, proposal.invalid, result)
        return
    if not proposal.code_ids:  # read, and nothing applies: remembered, so it is not asked again
        _note(store, project_id, model, "precode-none", debate_id, turn, None, result)
        return
    for code_id in proposal.code_ids:
        coding.apply_code(store, project_id, result.coder_id, debate_id, turn["turn_id"], code_id)
        result.proposals += 1


def _note(store: Store, project_id: str, model: str, action: str, debate_id: str, turn: dict[str, Any],
          cause: str | None, result: PrecodeResult) -> None:
    if cause is not None:
        result.failed.append((turn["turn_id"], cause))
    with store.transaction() as db:
        storage.record_history(db, project_id, model, action, "turn", f"{debate_id}:{turn['turn_id']}", None,
                               {"cause": cause} if cause else None)


def _proposal(store: Store, project_id: str, proposal_id: str) -> dict[str, Any]:
    rows = store.query("SELECT g.*, c.kind FROM codings g JOIN coders c ON c.id = g.coder_id "
                       "WHERE g.id = ? AND g.project_id = ? AND g.deleted_at IS NULL", [proposal_id, project_id])
    if not rows or rows[0]["kind"] != "model":
        raise LookupError(f"proposal: {proposal_id!r} is not a model's proposal in this project")
    return rows[0]


def accept(store: Store, project_id: str, proposal_id: str, coder_id: str) -> str:
    """`coder_id` takes a model's proposal as their own coding; returns that coding's id (the one
    made earlier when they had accepted it already)."""
    proposal = _proposal(store, project_id, proposal_id)
    earlier = _reviewed(store, proposal_id, coder_id)
    if earlier is not None and earlier["review"] == "accepted":
        return str(earlier["coding_id"])
    with store.transaction() as db:
        made = coding.apply_code(store, project_id, coder_id, proposal["debate_id"], proposal["turn_id"],
                                 proposal["code_id"], proposal["start"], proposal["end"], proposal_id=proposal_id)
        _review(db, store, project_id, proposal_id, coder_id, "accepted", made)
    return made


def reject(store: Store, project_id: str, proposal_id: str, coder_id: str) -> None:
    """`coder_id` rejects a model's proposal (it stays the model's coding; a coding they had made by
    accepting it earlier is marked deleted, undoable like any)."""
    _proposal(store, project_id, proposal_id)
    earlier = _reviewed(store, proposal_id, coder_id)
    with store.transaction() as db:
        if earlier is not None and earlier["coding_id"]:
            coding.delete_coding(store, project_id, earlier["coding_id"], coder_id)
        _review(db, store, project_id, proposal_id, coder_id, "rejected", None)


def _reviewed(store: Store, proposal_id: str, coder_id: str) -> dict[str, Any] | None:
    rows = store.query("SELECT * FROM proposal_reviews WHERE proposal_id = ? AND coder_id = ?", [proposal_id, coder_id])
    return rows[0] if rows else None


def _review(db: Any, store: Store, project_id: str, proposal_id: str, coder_id: str, review: str,
            made: str | None) -> None:
    """One person's review of a proposal (m016: theirs alone), and the history entry."""
    name = coding.coder_name(store, project_id, coder_id)
    db.table("proposal_reviews").upsert({"proposal_id": proposal_id, "coder_id": coder_id, "project_id": project_id,
                                         "review": review, "coding_id": made, "at": time.time()},
                                        pk=("proposal_id", "coder_id"))
    storage.record_history(db, project_id, name, review[:-2] if review.endswith("ed") else review, "proposal",
                           proposal_id, None, {"review": review, "coding": made})
