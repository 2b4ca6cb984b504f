"""Join codes: the short codes a student types on a phone to reach what the teacher handed out.

Every poll and every seat of a debate gets a code (`issue`) besides its link and QR, and a coding
project its lead's coder invitation ("coding", mad_core/qda/invitations.py): 6 characters from an
alphabet without look-alikes (none of 0 O Q D, 1 I L, 2 Z, 5 S, 8 B, 6 G, U V), so a code read from the
projector is typed right. `resolve` reads what a typed code names (a kind, "poll", "seat" or
"coding", and the target's id) after `normalize` forgave case, spaces and dashes; a character
outside the alphabet is refused, never guessed. A code can be retired (`retire`): the teacher closed
what it named; a retired or unknown code resolves to None and the page says so (`lookup` tells a
retired code from an unknown one). A target that is handed out again after its code was retired (a
coding project's new invitation) gets a new code (`renew`): the retired one stays in the table, still
retired, its target marked `<target>#retired-<code>`, so it never admits anyone nor is drawn again.

What it must not do: import streamlit, write anything when the input is invalid, or hand out a code
twice (the codes are a table's primary key; a clash draws again).
"""
from __future__ import annotations

import secrets
import time
from typing import Any

from sqlite_utils import Database

from .store.migrations import feature_migrations

ALPHABET = "ACEFHJKMNPRTWXY3479"  # 19 characters: 19**6 ≈ 47 million codes
LENGTH = 6
KINDS = ("poll", "seat", "coding")
RETIRED_MARK = "#retired-"  # a renewed target's retired code: its target becomes `<target>#retired-<code>`
_SEPARATORS = " -_.\t"
MIGRATIONS = feature_migrations()


@MIGRATIONS()
def m017_join_codes(db: Database) -> None:
    """Join codes (mad_core/join_codes.py): code -> what it names (kind, target id), when it was
    issued and, once the teacher closed that, when it was retired."""
    db["join_codes"].create({"code": str, "kind": str, "target": str, "issued_at": float, "retired_at": float},
                            pk="code", not_null={"kind", "target", "issued_at"})
    db["join_codes"].create_index(["kind", "target"], unique=True)


class CodeError(ValueError):
    """Refused input; `field` names what was wrong (nothing was written), `message` says why."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def normalize(typed: Any) -> str | None:
    """The code a person typed, upper-cased with spaces and dashes removed, or None when it cannot be
    a code (wrong length, a character outside the alphabet)."""
    if not isinstance(typed, str):
        return None
    code = "".join(ch for ch in typed.upper() if ch not in _SEPARATORS)
    if len(code) != LENGTH or any(ch not in ALPHABET for ch in code):
        return None
    return code


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def _check(kind: Any, target: Any) -> None:
    if kind not in KINDS:
        raise CodeError("kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(target, str) or not target.strip():
        raise CodeError("target", "expected the id of what the code names")


def issue(store, kind: str, target: str) -> str:
    """The code of `target` (a poll id or a seat id): the one it has, or a new one (drawn until it is
    not taken)."""
    _check(kind, target)
    with store.transaction() as db:
        row = next(db.query("SELECT code FROM join_codes WHERE kind = ? AND target = ?", [kind, target]), None)
        if row is not None:
            return str(row["code"])
        while True:
            code = new_code()
            if next(db.query("SELECT 1 FROM join_codes WHERE code = ?", [code]), None) is None:
                break
        db["join_codes"].insert({"code": code, "kind": kind, "target": target, "issued_at": time.time(),
                                 "retired_at": None})
    return code


def code_of(store, kind: str, target: str) -> str | None:
    """The code issued for `target`, retired or not; None when none was issued."""
    rows = store.query("SELECT code FROM join_codes WHERE kind = ? AND target = ?", [kind, target])
    return str(rows[0]["code"]) if rows else None


def resolve(store, typed: Any) -> dict[str, str] | None:
    """{"code", "kind", "target"} for a live code as a person typed it; None when the code is
    malformed, unknown or retired."""
    code = normalize(typed)
    if code is None:
        return None
    rows = store.query("SELECT code, kind, target, retired_at FROM join_codes WHERE code = ?", [code])
    if not rows or rows[0]["retired_at"] is not None:
        return None
    row = rows[0]
    return {"code": row["code"], "kind": row["kind"], "target": row["target"]}


def renew(store, kind: str, target: str) -> str:
    """The live code of `target`: the one it has, or a new one when it has none or its code was retired
    (that code stays retired, moved aside under `<target>#retired-<code>`)."""
    _check(kind, target)
    with store.transaction() as db:  # one write: the retired code moved aside and the new one issued together
        db.execute("UPDATE join_codes SET target = target || ? || code WHERE kind = ? AND target = ? "
                   "AND retired_at IS NOT NULL", [RETIRED_MARK, kind, target])
        return issue(store, kind, target)


def live_code(store, kind: str, target: str) -> str | None:
    """The code of `target` that admits now; None when it has none or it was retired."""
    rows = store.query("SELECT code FROM join_codes WHERE kind = ? AND target = ? AND retired_at IS NULL",
                       [kind, target])
    return str(rows[0]["code"]) if rows else None


def lookup(store, typed: Any) -> dict[str, Any] | None:
    """{"code", "kind", "target", "retired"} for a code as a person typed it, retired or not (the target
    without a renewal's mark); None when it is malformed or unknown."""
    code = normalize(typed)
    rows = store.query("SELECT code, kind, target, retired_at FROM join_codes WHERE code = ?", [code]) if code else []
    if not rows:
        return None
    row = rows[0]
    return {"code": row["code"], "kind": row["kind"], "target": str(row["target"]).split(RETIRED_MARK)[0],
            "retired": row["retired_at"] is not None}


def retire(store, kind: str, target: str) -> None:
    """The code of `target` no longer admits anyone (a no-op when it has none or is retired already)."""
    _check(kind, target)
    with store.transaction() as db:
        db.execute("UPDATE join_codes SET retired_at = ? WHERE kind = ? AND target = ? AND retired_at IS NULL",
                   [time.time(), kind, target])
