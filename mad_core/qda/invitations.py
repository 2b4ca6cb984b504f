"""Coder invitations: a code that lets a colleague on another machine code one project, and nothing else.

What it is for: the project's lead hands a coder invitation (`invite`) to a colleague, who types it
at /join (madlab_ui/join.py) and is taken to that project's Coding page, as a coder who does not lead
(madlab_ui/access.py says exactly what such a visitor reaches). The code is a join code of kind
"coding" naming the project (mad_core/join_codes.py: 6 characters without look-alikes): one live code
per project at a time. The lead retires it (`retire`): from then on it admits nobody, and whoever it
admitted is refused at their next step; a later `invite` hands out a new code (the retired one stays
retired for good). `admits` reads what a typed code names now: the project, or why not ("retired",
or nothing for an unknown code). Every invitation made or retired is written to the project's history.

What it must not do: import streamlit, let anyone but the lead make or retire a code (PermissionError,
nothing written), or admit with a retired code or one that names no project.
"""
from __future__ import annotations

from typing import Any

from .. import join_codes
from ..store import Store
from . import coding, storage

KIND = "coding"  # the join codes' kind of a coder invitation; its target is the project's id


def _lead(store: Store, project_id: str, coder_id: str, what: str) -> str:
    """The lead's name, or PermissionError (`what` the lead alone may do)."""
    if not coding.is_lead(store, project_id, coder_id):
        raise PermissionError(f"only the project's lead {what}")
    return coding.coder_name(store, project_id, coder_id)


def invite(store: Store, project_id: str, coder_id: str) -> str:
    """The project's live coder invitation, made when it has none (the lead, `coder_id`, only)."""
    lead = _lead(store, project_id, coder_id, "hands out coder invitations")
    live = join_codes.live_code(store, KIND, project_id)
    if live is not None:
        return live
    with store.transaction() as db:
        code = join_codes.renew(store, KIND, project_id)
        storage.record_history(db, project_id, lead, "invite", "invitation", project_id, None, {"code": code})
    return code


def live_code(store: Store, project_id: str) -> str | None:
    """The project's coder invitation that admits now, or None."""
    return join_codes.live_code(store, KIND, project_id)


def retire(store: Store, project_id: str, coder_id: str) -> str | None:
    """Retire the project's invitation (the lead only): it admits nobody from now on. Returns the
    retired code, None when there was no live one (nothing written then)."""
    lead = _lead(store, project_id, coder_id, "retires coder invitations")
    code = join_codes.live_code(store, KIND, project_id)
    if code is None:
        return None
    with store.transaction() as db:
        join_codes.retire(store, KIND, project_id)
        storage.record_history(db, project_id, lead, "retire", "invitation", project_id, {"code": code}, None)
    return code


def admits(store: Store, typed: Any) -> dict[str, Any] | None:
    """What a typed code is as a coder invitation: {"code", "project", "retired"} (retired True: it admits
    nobody any more); None when it is no coder invitation (malformed, unknown, another kind of code,
    or a project no longer in the store)."""
    found = join_codes.lookup(store, typed)
    if found is None or found["kind"] != KIND or storage.project_row(store, found["target"]) is None:
        return None
    return {"code": found["code"], "project": found["target"], "retired": found["retired"]}


def project_of(store: Store, typed: Any) -> str | None:
    """The project a typed code admits to now (a live coder invitation), else None."""
    found = admits(store, typed)
    return found["project"] if found is not None and not found["retired"] else None
