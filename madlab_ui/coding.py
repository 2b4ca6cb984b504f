"""The Coding page's parts (issue 22): qualitative coding projects of stored debates, drawn on the
engine in `mad_core.qda` (coding, storage, reports, precode, exchange) and nothing else.

Sections: who codes (a coder name kept per browser like the annotator's), the projects (list, new,
open, add debates), and for the opened project the tabs Code (each turn with the passages the viewer
may see highlighted, their codings, coding a whole turn or a word-bounded passage, memos), Codebook
(the code tree, add / edit / delete with undo, a model's pre-coding in a background thread and its
proposals to accept or reject), Agreement (figures with intervals on "Compute", CSV), Disagreements
(lead: each coder's codes side by side; per code the coders applied to different characters, each
one's passages highlighted in the turn's text, settled into gold as the whole turn, one coder's
passages or "not this code"; the whole turn settled as a set of codes; agreement with gold over the
unit `reports.passage_unit` picks, named), Exchange (QDPX / QDC out, QDC / QDPX in) and History (lead). Blind mode is `coding.visible_coders`: a coder sees only their own codings.
Deleting asks for a confirmation first, then offers Undo. The lead hands out (and retires) the
project's coder invitation (`mad_core.qda.invitations`, shown with the /join address); a visitor
admitted by it (`access.invited_project`) gets who codes and that project only: no project list, no
other debate of the archive, no adding debates, no model pre-coding, no Exchange tab, never the lead.

Keys: `coding_coder`; the `coding_new` expander with `coding_new_name`, `coding_new_debates`, `coding_new_blind`, `coding_create`,
`coding_projects`, `coding_open_<id8>`; `coding_message`, `coding_undo`, `coding_blind`,
`coding_reveal`, `coding_progress`, `coding_invitation` with `coding_invite_create` / `coding_invite_retire`,
`coding_add_debates`, `coding_add`; Code tab `coding_debate`,
`coding_turn_<s>`, `coding_text_<s>`, `coding_codes_<s>`, `coding_scope_<s>`, `coding_span_<s>`,
`coding_preview_<s>`, `coding_apply_<s>` (s = debate id8 _ turn index), `coding_delete_<entity>_<id8>`,
`coding_confirm_<entity>_<id8>`, `coding_cancel_<entity>_<id8>`, `coding_memo_target`, `coding_memo_on`,
`coding_memo_title`, `coding_memo_text`, `coding_memo_add`, `coding_memos`; Codebook tab
`coding_codebook_tree`, `coding_code_<field>` / `coding_code_add`, `coding_edit_code`,
`coding_edit_<field>` / `coding_edit_save`, `coding_precode_model`, `coding_precode`,
`coding_precode_status`, `coding_proposal_<id8>` with `coding_accept_<id8>`, `coding_reject_<id8>`; Agreement tab
`coding_agree_coders`, `coding_agree_unit`, `coding_agree_compute`, `coding_agree_table`,
`coding_agree_csv`; Disagreements tab `coding_dis_coders`, `coding_dis_<i>`, per differing code j
`coding_dis_<i>_code_<j>` with `coding_dis_text_<i>_<j>_<k>` (coder k's passages), `coding_dis_gold_<i>_<j>`,
`coding_settle_whole_<i>_<j>`, `coding_settle_as_<i>_<j>_<k>`, `coding_settle_none_<i>_<j>`; `coding_settle_codes_<i>`,
`coding_settle_<i>`, `coding_gold_agreement`; Exchange tab `coding_qdpx`, `coding_qdc`, `coding_upload`,
`coding_import`; History tab `coding_history`.

What it must not do: render a code name, memo, quote, turn or any user or model text as HTML or as
live Markdown (every such string goes through `md_escape`, `st.text` or a dataframe cell), call a
model in the script run (pre-coding runs in a daemon thread, kept in `_PRECODING`), write the store
but through mad_core.qda, or import mad_core.engine.
"""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

from mad_core import glossary
from mad_core.models import DEFAULT_MODEL
from mad_core.qda import coding, exchange, invitations, precode, reports, storage
from mad_core.qda.agreement import FIGURE_FIELDS
from mad_core.store import Store
from mad_core.store.search import list_debates

from . import access, session_memory
from .highlight import highlighted, named_colour
from .passage_picker import pick_passage
from .poll import JOIN_PAGE, app_link
from .common import ANNOTATOR_KEPT, id8, md_escape, open_store, owner_id, plain_markdown, short, when

CODING_OPEN = "coding_project_open"  # session key: the project opened on this page
CODER = "coding_coder"  # widget key; its value is kept under CODER_KEPT (see `keep_coder`)
CODER_KEPT = "coding_coder_name"  # kept across reloads (session_memory.remember_keys)
MESSAGE = "coding_message_state"  # (kind, text) shown once after an action
PENDING = "coding_pending_delete"  # (entity, id) whose Delete was clicked, awaiting its confirmation
UNDO = "coding_undo_state"  # (entity, id, label, project id, coder id) of the last deletion
AGREEMENT = "coding_agreement_cache"  # {"key": (...), "rows": [...], "records": [...]}
GOLD_AGREEMENT = "coding_gold_cache"  # {"key": (...), "unit": ..., "rows": [(coder id, Agreement), ...]}
REFRESH_S = 1.0
MAX_ROWS = 50  # proposals, disagreements shown at once (each has buttons)
WHOLE, SELECTED, PASSAGE = "Whole turn", "Selected text", "Passage by words"
FIGURE_TITLES = dict(zip(FIGURE_FIELDS, ("percent agreement", "Cohen's κ", "Fleiss' κ", "Krippendorff's α",
                                         "Gwet's AC1")))
CODE_FIELDS = ("definition", "include", "exclude", "example")


def _kept_keys() -> tuple[str, ...]:
    return (CODER_KEPT,)


session_memory.remember_keys(_kept_keys)


# ----- small readers --------------------------------------------------------------------------------
def code_paths(codes: list[dict[str, Any]]) -> dict[str, str]:
    """Code id -> "Parent › Child" (plain text: for option labels and dataframe cells)."""
    by_id = {c["id"]: c for c in codes}
    paths = {}
    for code in codes:
        names, seen, parent = [code["name"]], {code["id"]}, code["parent_id"]
        while parent in by_id and parent not in seen:
            seen.add(parent)
            names.append(by_id[parent]["name"])
            parent = by_id[parent]["parent_id"]
        paths[code["id"]] = " › ".join(reversed(names))
    return paths


def word_spans(text: str) -> list[tuple[int, int]]:
    """The character offsets (start, end) of each word (a run of non-space characters) of `text`."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def passage(text: str, first: int, last: int) -> tuple[int, int]:
    """The character offsets from the start of word `first` to the end of word `last`."""
    words = word_spans(text)
    first, last = sorted((first, last))
    return words[first][0], words[last][1]


def debate_label(question: Any, debate_id: str) -> str:
    return f"{short(question, 70)} · {id8(debate_id)}"


def project_labels(store: Store, ids: list[str]) -> dict[str, str]:
    """Debate id -> "question · id8" for `ids` only (an invited coder sees no other debate of the archive)."""
    return {debate_id: debate_label((store.get_debate(debate_id) or {}).get("question"), debate_id)
            for debate_id in ids}


def debate_labels(store: Store, ids: list[str] | None = None) -> dict[str, str]:
    """Debate id -> "question · id8" for the archive (and for `ids` the list may have missed)."""
    labels = {row["id"]: debate_label(row["question"], row["id"]) for row in list_debates(store, limit=10_000)}
    missed = [debate_id for debate_id in ids or [] if debate_id not in labels]
    return {**labels, **project_labels(store, missed)}


def default_model(store: Store, project_id: str) -> str:
    """The first agent model of the project's first debate, else the app's default model."""
    for debate_id in storage.debate_ids(store, project_id)[:1]:
        agents = ((store.get_debate(debate_id) or {}).get("config") or {}).get("agents") or []
        if agents and isinstance(agents[0], dict) and agents[0].get("model"):
            return str(agents[0]["model"])
    return DEFAULT_MODEL


# ----- messages, deletion and undo ------------------------------------------------------------------
@dataclass(frozen=True)
class Ctx:
    """Who looks at which project: the coder's id and name, whether they lead, whose work they see."""

    project_id: str
    coder_id: str
    name: str
    lead: bool
    lead_name: str
    visible: tuple[str, ...]
    blind: bool  # blind and not yet revealed
    invited: bool = False  # a visitor admitted by the project's coder invitation (access.invited_project)


def _say(kind: str, text: str) -> None:
    st.session_state[MESSAGE] = (kind, text)


def _guarded(action: Callable[[], Any], success: Callable[[Any], str]) -> Any:
    """Run a change; its refusal (ValueError, LookupError, PermissionError) is said, never raised. A
    widget's callback runs before the page's guard: a visitor whose coder invitation was retired
    since the page was drawn changes nothing (and the guard then shows `access.INVITATION_GONE`)."""
    if not access.is_teacher() and access.invited_project() is None:
        _say("error", access.INVITATION_GONE)
        return None
    try:
        result = action()
    except (ValueError, LookupError, PermissionError) as exc:
        _say("error", str(exc))
        return None
    _say("success", success(result))
    return result


def render_message() -> None:
    message = st.session_state.pop(MESSAGE, None)
    if message:
        with st.container(key="coding_message"):
            (st.error if message[0] == "error" else st.success)(md_escape(message[1]))


DELETERS = {"coding": lambda store, ctx, item: coding.delete_coding(store, ctx.project_id, item, ctx.coder_id),
            "memo": lambda store, ctx, item: coding.delete_memo(store, ctx.project_id, item, ctx.coder_id),
            "code": lambda store, ctx, item: coding.delete_code(store, ctx.project_id, item, ctx.name)}


def _confirm_delete(ctx: Ctx, entity: str, item_id: str, label: str) -> None:
    st.session_state.pop(PENDING, None)
    done = _guarded(lambda: DELETERS[entity](open_store(), ctx, item_id) or True, lambda _: f"Deleted {label}.")
    if done:
        st.session_state[UNDO] = (entity, item_id, label, ctx.project_id, ctx.coder_id)


def delete_control(ctx: Ctx, entity: str, item_id: str, label: str, where: Any = st) -> None:
    """Delete → "Confirm delete" / "Cancel" (the first click deletes nothing) → Undo at the top."""
    suffix = f"{entity}_{id8(item_id)}"
    if st.session_state.get(PENDING) == (entity, item_id):
        left, right = where.columns(2)
        left.button("Confirm delete", key=f"coding_confirm_{suffix}", type="primary", on_click=_confirm_delete,
                    args=(ctx, entity, item_id, label))
        right.button("Cancel", key=f"coding_cancel_{suffix}", on_click=st.session_state.pop, args=(PENDING, None))
    else:
        where.button("Delete", key=f"coding_delete_{suffix}", on_click=st.session_state.__setitem__,
                     args=(PENDING, (entity, item_id)))


def _undo() -> None:
    entity, item_id, label, project_id, coder_id = st.session_state.pop(UNDO)
    _guarded(lambda: coding.undo_delete(open_store(), project_id, entity, item_id, coder_id),
             lambda _: f"Brought back {label}.")


def render_undo(project_id: str) -> None:
    undo = st.session_state.get(UNDO)
    if undo and undo[3] == project_id:
        st.button(f"Undo: delete of {md_escape(undo[2])}", key="coding_undo", icon="↩️", on_click=_undo)


# ----- who codes -----------------------------------------------------------------------------------
def keep_coder() -> None:
    """Give the coder field the name kept for this browser (else the annotator's name): Streamlit drops
    a widget's state on a page where it is not drawn, so the name lives under a plain key."""
    st.session_state[CODER] = st.session_state.get(CODER_KEPT, st.session_state.get(ANNOTATOR_KEPT, "")) or ""


def _remember_coder() -> None:
    st.session_state[CODER_KEPT] = st.session_state.get(CODER) or ""


def coder_name() -> str:
    return " ".join(str(st.session_state.get(CODER_KEPT) or "").split())


def render_coder() -> None:
    keep_coder()
    st.text_input("Your coder name (your name on the codings you make in a project)", key=CODER, max_chars=120,
                  placeholder="e.g. rater A", on_change=_remember_coder)


# ----- projects -------------------------------------------------------------------------------------
def _create() -> None:
    name, lead = st.session_state.get("coding_new_name") or "", coder_name()
    if not lead:
        _say("error", "coder: give your coder name first (you lead the project you create)")
        return
    made = _guarded(lambda: coding.create_project(open_store(), name, lead, blind=bool(st.session_state.get(
        "coding_new_blind", True)), debate_ids=list(st.session_state.get("coding_new_debates") or []),
        session=owner_id()),
        lambda _: f"Created the project {' '.join(name.split())!r}, led by {lead!r}.")
    if made:
        st.session_state[CODING_OPEN] = made
        st.session_state["coding_new_name"] = ""
        st.session_state["coding_new_debates"] = []


def render_new(labels: dict[str, str]) -> None:
    with st.expander("New coding project", key="coding_new"):
        st.text_input("Project name", key="coding_new_name", max_chars=120)
        st.multiselect("Debates from the archive", list(labels), key="coding_new_debates",
                       format_func=lambda d: labels.get(d, id8(d)), placeholder="pick debates by their question")
        st.checkbox("Blind (each coder sees only their own codings until the lead reveals them)", value=True,
                    key="coding_new_blind")
        st.caption("You lead the project: your coder name above becomes its lead.")
        st.button("Create project", key="coding_create", type="primary", on_click=_create)


def _open(project_id: str) -> None:
    st.session_state[CODING_OPEN] = project_id
    st.session_state.pop(PENDING, None)


def render_projects(store: Store, labels: dict[str, str]) -> None:
    st.subheader("Projects")
    render_new(labels)
    rows = storage.projects(store)
    with st.container(key="coding_projects"):
        if not rows:
            st.caption("No coding projects yet.")
        for row in rows:
            left, right = st.columns([6, 1], vertical_alignment="center")
            mark = "▶ " if row["id"] == st.session_state.get(CODING_OPEN) else ""
            lead = f" · lead {md_escape(row['lead'])}" if row["lead"] else ""
            left.markdown(f"{mark}**{md_escape(short(row['name'], 80))}** · `{id8(row['id'])}` · {when(row['created_at'])}"
                          f"{lead} · {row['debates']} debates · {row['coders']} coders · {row['codings']} codings"
                          + (" · blind" if row["blind"] and not row["revealed_at"] else ""))
            right.button("Open", key=f"coding_open_{id8(row['id'])}", on_click=_open, args=(row["id"],),
                         width="stretch")


def _add_debates(ctx: Ctx) -> None:
    picked = list(st.session_state.get("coding_add_debates") or [])
    if not picked:
        _say("error", "debates: pick the debates to add first")
        return
    if _guarded(lambda: coding.add_debates(open_store(), ctx.project_id, picked, ctx.name),
                lambda added: f"Added {added} debate(s) to the project.") is not None:
        st.session_state["coding_add_debates"] = []


def _reveal(ctx: Ctx) -> None:
    _guarded(lambda: coding.reveal(open_store(), ctx.project_id, ctx.coder_id),
             lambda _: "Revealed: every coder now sees everyone's codings.")


def context(store: Store, project: dict[str, Any], name: str, invited: bool = False) -> Ctx | None:
    """Join the project as `name` (this browser's session holds the name); None, said, when refused.
    An invited visitor holds it under its visitor slot (not the token of a projected address it may
    have copied) and never under the lead's name."""
    session = session_memory.slot(owner_id()) if invited else owner_id()
    try:
        coder_id = coding.join(store, project["id"], name, session=session, may_lead=not invited)
    except (ValueError, LookupError) as exc:
        st.error(md_escape(f"{exc} (field: your coder name)"))
        return None
    return Ctx(project["id"], coder_id, name, coding.is_lead(store, project["id"], coder_id), project["lead"] or "",
               tuple(coding.visible_coders(store, project["id"], coder_id)),
               bool(project["blind"]) and not project["revealed_at"], invited)


def _invite(ctx: Ctx) -> None:
    _guarded(lambda: invitations.invite(open_store(), ctx.project_id, ctx.coder_id),
             lambda code: f"Coder invitation {code}: a colleague types it at /join and codes this project only.")


def _retire_invitation(ctx: Ctx) -> None:
    _guarded(lambda: invitations.retire(open_store(), ctx.project_id, ctx.coder_id),
             lambda code: f"Retired the coder invitation {code}: it admits nobody now." if code
             else "There was no coder invitation to retire.")


def render_invitation(store: Store, ctx: Ctx) -> None:
    """The lead's coder invitation: its code and the /join address, Create or Retire."""
    code = invitations.live_code(store, ctx.project_id)
    with st.container(key="coding_invitation"):
        if code is None:
            st.markdown("**Coder invitation**: none now. Create one for a colleague on another machine: they type "
                        "it at /join and code this project only (no other project, no teacher page).")
            st.button("Create invitation", key="coding_invite_create", on_click=_invite, args=(ctx,))
            return
        st.markdown(f"**Coder invitation** `{code}`: a colleague opens **{md_escape(app_link(JOIN_PAGE)[0])}** "
                    "and types it, then codes this project only (as a coder who does not lead; no other project, "
                    "no teacher page).")  # the code's alphabet: letters and digits only
        st.button("Retire invitation", key="coding_invite_retire", on_click=_retire_invitation, args=(ctx,),
                  help="The code admits nobody from now on; whoever it let in is refused at their next step")


def render_lead_line(store: Store, ctx: Ctx) -> None:
    """Blind mode's line, the lead's Reveal button, per-coder progress and the coder invitation."""
    if ctx.blind:
        with st.container(key="coding_blind"):
            if ctx.lead:
                st.markdown("Blind: each coder sees only their own codings until you reveal them.")
            else:
                st.markdown(f"Blind: you see only your own codings until {md_escape(ctx.lead_name)} reveals them.")
        if ctx.lead:
            st.button("Reveal", key="coding_reveal", on_click=_reveal, args=(ctx,),
                      help="Every coder sees everyone's codings from now on (cannot be undone)")
    if ctx.lead:
        with st.container(key="coding_progress"):
            st.dataframe([{"coder": r["name"], "kind": r["kind"], "debates coded": f"{r['debates_coded']} of "
                           f"{r['debates']}", "codings": r["codings"], "last coded": when(r["last_coded"])}
                          for r in coding.progress(store, ctx.project_id)], hide_index=True)
        render_invitation(store, ctx)


def render_add_debates(store: Store, ctx: Ctx, labels: dict[str, str]) -> None:
    have = set(storage.debate_ids(store, ctx.project_id))
    options = [d for d in labels if d not in have]
    left, right = st.columns([5, 1], vertical_alignment="bottom")
    left.multiselect("Add debates to this project", options, key="coding_add_debates",
                     format_func=lambda d: labels.get(d, id8(d)))
    right.button("Add", key="coding_add", on_click=_add_debates, args=(ctx,), width="stretch")


def render_project(store: Store, project_id: str, labels: dict[str, str], invited: bool = False) -> None:
    """The opened project: who codes, the lead's line, and the tabs this coder sees (an invited visitor:
    Code, Codebook, Agreement only)."""
    project = storage.project_row(store, project_id)
    if project is None:  # deleted from the database meanwhile
        st.session_state.pop(CODING_OPEN, None)
        st.warning(f"Coding project {id8(project_id)} is not in the store.")
        return
    st.header(md_escape(short(project["name"], 120)), divider="gray")
    name = coder_name()
    if not name:
        st.info("coder: give your coder name above to code in this project.")
        return
    ctx = context(store, project, name, invited)
    if ctx is None:
        return
    st.caption(f"You code as **{md_escape(name)}**" + (" (the lead)" if ctx.lead else "")
               + f" · lead: {md_escape(ctx.lead_name or '(none)')}")
    render_undo(project_id)
    render_lead_line(store, ctx)
    if not invited:
        render_add_debates(store, ctx, labels)
    names = ["Code", "Codebook", "Agreement"] + (["Disagreements"] if ctx.lead else []) + (
        [] if invited else ["Exchange"]) + (["History"] if ctx.lead else [])
    # Keyed and tracked (on_change="rerun"): the chosen tab is the session's state, so it stays chosen after an
    # action, even when a run of the page was under way as the person chose it.
    tabs = dict(zip(names, st.tabs(names, key="coding_tabs", on_change="rerun")))
    with tabs["Code"]:
        render_code_tab(store, ctx, labels)
    with tabs["Codebook"]:
        render_codebook_tab(store, ctx)
    with tabs["Agreement"]:
        render_agreement_tab(store, ctx)
    if ctx.lead:
        with tabs["Disagreements"]:
            render_disagreements_tab(store, ctx)
        with tabs["History"]:
            render_history_tab(store, ctx)
    if not invited:
        with tabs["Exchange"]:
            render_exchange_tab(store, ctx)


def render_page() -> None:
    """The whole page: who codes, the projects, the opened project; for a visitor admitted by a coder
    invitation, who codes and that project only (access.invited_project)."""
    store = open_store()
    invited = None if access.is_teacher() else access.invited_project()
    if invited is None and not access.is_teacher():
        access.refuse()  # the page guard lets no other visitor in: nothing is drawn for one regardless
    render_coder()
    render_message()
    if invited is not None:
        st.query_params[access.INVITE_PARAM] = st.session_state[access.INVITED]  # a reload finds it again
        render_project(store, invited, project_labels(store, storage.debate_ids(store, invited)), invited=True)
        return
    labels = debate_labels(store)
    render_projects(store, labels)
    opened = st.session_state.get(CODING_OPEN)
    if opened:
        render_project(store, opened, labels)


# ----- the Code tab -----------------------------------------------------------------------------------
def _apply(ctx: Ctx, debate_id: str, turn_id: str, text: str, suffix: str) -> None:
    code_ids = list(st.session_state.get(f"coding_codes_{suffix}") or [])
    if not code_ids:
        _say("error", "codes: pick at least one code to apply")
        return
    start = end = None
    scope = st.session_state.get(f"coding_scope_{suffix}")
    if scope == SELECTED:
        chosen = st.session_state.get(f"coding_selected_{suffix}")
        if not chosen:
            _say("error", "passage: select the text to code in the turn's box first (drag over it with the mouse)")
            return
        start, end = chosen
    elif scope == PASSAGE and len(word_spans(text)) > 1:
        start, end = passage(text, *st.session_state.get(f"coding_span_{suffix}"))
    store = open_store()
    _guarded(lambda: [coding.apply_code(store, ctx.project_id, ctx.coder_id, debate_id, turn_id, code_id, start, end)
                      for code_id in code_ids],
             lambda made: f"Coded {'the whole turn' if start is None else 'the passage'} with {len(made)} code(s).")


def _preview(suffix: str, text: str, start: int, end: int) -> None:
    with st.container(key=f"coding_preview_{suffix}"):
        st.caption(f"The passage (characters {start}–{end}):")
        st.text(text[start:end])


def render_coding_controls(ctx: Ctx, debate_id: str, turn: dict[str, Any], suffix: str,
                           paths: dict[str, str], spans: list[tuple[int, int, str]]) -> None:
    """Code(s) from the codebook; the whole turn, the text selected with the mouse in the turn's box
    (`passage_picker`), or a passage between two words; the exact quote shown before Apply."""
    text = turn["content"]
    words = word_spans(text)
    left, right = st.columns([3, 2])
    left.multiselect("Codes", list(paths), key=f"coding_codes_{suffix}", format_func=lambda c: paths.get(c, c),
                     placeholder="the codebook is empty" if not paths else "pick codes")
    scope = right.radio("Code", [WHOLE, SELECTED, PASSAGE] if len(words) > 1 else [WHOLE],
                        key=f"coding_scope_{suffix}", horizontal=True)
    if scope == SELECTED:
        st.caption("Select the passage with the mouse in the box below, then Apply.")
        chosen = pick_passage(text, spans, key=f"coding_pick_{suffix}")
        st.session_state[f"coding_selected_{suffix}"] = chosen
        if chosen:
            _preview(suffix, text, *chosen)
    elif scope == PASSAGE:
        first, last = st.select_slider(
            "Passage: from word … to word", list(range(len(words))), value=(0, len(words) - 1),
            key=f"coding_span_{suffix}", format_func=lambda j: f"{j + 1}: {short(text[words[j][0]:words[j][1]], 24)}")
        _preview(suffix, text, *passage(text, first, last))
    st.button("Apply", key=f"coding_apply_{suffix}", on_click=_apply, args=(ctx, debate_id, turn["turn_id"], text,
                                                                             suffix), disabled=not paths)


def render_turn(ctx: Ctx, debate_id: str, index: int, turn: dict[str, Any], mine: list[dict[str, Any]],
                facts: dict[str, Any]) -> None:
    """One turn: its header, its text with the visible passages highlighted, its codings, coding it."""
    suffix = f"{id8(debate_id)}_{index}"
    colours, names, paths = facts["colours"], facts["names"], facts["paths"]
    with st.container(border=True, key=f"coding_turn_{suffix}"):
        st.markdown(f"**{md_escape(storage.turn_header(turn))}**")
        with st.container(key=f"coding_text_{suffix}"):
            st.markdown(highlighted(turn["content"], [(c["start"], c["end"], colours.get(c["code_id"], "gray"))
                                                      for c in mine]))
        for row in mine:
            left, right = st.columns([6, 1], vertical_alignment="center")
            left.markdown(f"{md_escape(names.get(row['coder_id'], '?'))} · "
                          f":{colours.get(row['code_id'], 'gray')}[●] {md_escape(paths.get(row['code_id'], '?'))} · "
                          f"“{md_escape(short(row['quote'], 300))}”")
            if row["coder_id"] == ctx.coder_id:
                label = f"coding {paths.get(row['code_id'], '?')} on {short(row['quote'], 40)!r}"
                delete_control(ctx, "coding", row["id"], label, right)
        render_coding_controls(ctx, debate_id, turn, suffix, paths,
                               [(c["start"], c["end"], facts["hex"].get(c["code_id"], "")) for c in mine])


def render_code_tab(store: Store, ctx: Ctx, labels: dict[str, str]) -> None:
    debates = storage.debate_ids(store, ctx.project_id)
    if not debates:
        st.caption("This project has no debates yet: add some above.")
        return
    if st.session_state.get("coding_debate") not in debates:
        st.session_state["coding_debate"] = debates[0]
    debate_id = st.selectbox("Debate", debates, key="coding_debate", format_func=lambda d: labels.get(d, id8(d)))
    codes = storage.code_rows(store, ctx.project_id)
    facts = {"colours": {c["id"]: named_colour(c["colour"]) for c in codes}, "paths": code_paths(codes),
             "hex": {c["id"]: c["colour"] for c in codes},
             "names": {c["id"]: c["name"] for c in storage.coder_rows(store, ctx.project_id)}}
    if not codes:
        st.caption("The codebook is empty: add codes in the Codebook tab.")
    rows = storage.coding_rows(store, ctx.project_id, debate_id=debate_id, coder_ids=list(ctx.visible))
    live = set(facts["paths"])
    turns = storage.turn_rows(store, debate_id)
    for index, turn in enumerate(turns):
        render_turn(ctx, debate_id, index, turn, [r for r in rows if r["turn_id"] == turn["turn_id"]
                                                  and r["code_id"] in live], facts)
    render_memos(store, ctx, debate_id, turns, [r for r in rows if r["code_id"] in live], facts)


# ----- memos ------------------------------------------------------------------------------------------
def _add_memo(ctx: Ctx, debate_id: str) -> None:
    target = st.session_state.get("coding_memo_target") or "debate"
    target_id = debate_id if target == "debate" else st.session_state.get("coding_memo_on")
    if not target_id:
        _say("error", f"memo on: pick the {target} the memo is about")
        return
    text, title = st.session_state.get("coding_memo_text") or "", st.session_state.get("coding_memo_title") or ""
    if _guarded(lambda: coding.add_memo(open_store(), ctx.project_id, ctx.coder_id, target, target_id, text, title),
                lambda _: f"Added a memo on the {target}.") is not None:
        st.session_state["coding_memo_text"] = ""
        st.session_state["coding_memo_title"] = ""


def _edit_memo(ctx: Ctx, memo_id: str, edited: str) -> None:
    text = st.session_state.get(edited) or ""
    _guarded(lambda: coding.edit_memo(open_store(), ctx.project_id, memo_id, ctx.coder_id, text),
             lambda _: "Saved the memo.")


def render_memos(store: Store, ctx: Ctx, debate_id: str, turns: list[dict[str, Any]], rows: list[dict[str, Any]],
                 facts: dict[str, Any]) -> None:
    """The memos on this debate, its turns and its visible codings; a new memo on one of them."""
    st.markdown("**Memos**")
    turn_labels = {t["turn_id"]: storage.turn_header(t) for t in turns}
    coding_labels = {r["id"]: f"{facts['paths'].get(r['code_id'], '?')} · {short(r['quote'], 50)}" for r in rows}
    targets = {"debate": {debate_id}, "turn": set(turn_labels), "coding": set(coding_labels)}
    memos = [m for m in storage.memo_rows(store, ctx.project_id)
             if m["target_id"] in targets.get(m["target"], ()) and m["coder_id"] in ctx.visible]
    with st.container(key="coding_memos"):
        if not memos:
            st.caption("No memos here yet.")
        for memo in memos:
            about = {"debate": "the debate", "turn": turn_labels.get(memo["target_id"], ""),
                     "coding": coding_labels.get(memo["target_id"], "")}[memo["target"]]
            left, right = st.columns([6, 1], vertical_alignment="center")
            left.markdown(f"**{md_escape(memo['title'] or 'memo')}** · {md_escape(facts['names'].get(memo['coder_id'], '?'))}"
                          f" · on {md_escape(about)}  \n" + plain_markdown(memo["text"]))
            if memo["coder_id"] == ctx.coder_id:
                delete_control(ctx, "memo", memo["id"], f"memo {short(memo['title'] or memo['text'], 40)!r}", right)
                with left.popover("Edit", key=f"coding_memo_edit_{id8(memo['id'])}"):
                    edited = f"coding_memo_text_{id8(memo['id'])}"
                    st.text_area("Memo", value=memo["text"], key=edited, height=100)
                    st.button("Save", key=f"coding_memo_save_{id8(memo['id'])}", on_click=_edit_memo,
                              args=(ctx, memo["id"], edited))
    target = st.radio("New memo on", ["debate", "turn", "coding"], key="coding_memo_target", horizontal=True)
    if target != "debate":
        options = turn_labels if target == "turn" else coding_labels
        if st.session_state.get("coding_memo_on") not in options:
            st.session_state["coding_memo_on"] = None
        st.selectbox(f"Which {target}", list(options), key="coding_memo_on", index=None,
                     format_func=lambda i: short(options.get(i, i), 90))
    st.text_input("Memo title", key="coding_memo_title", max_chars=120)
    st.text_area("Memo", key="coding_memo_text", height=100)
    st.button("Add memo", key="coding_memo_add", on_click=_add_memo, args=(ctx, debate_id))


# ----- the Codebook tab ---------------------------------------------------------------------------------
def _depth(code: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> int:
    depth, parent, seen = 0, code["parent_id"], {code["id"]}
    while parent in by_id and parent not in seen:
        seen.add(parent)
        depth, parent = depth + 1, by_id[parent]["parent_id"]
    return depth


def code_line(code: dict[str, Any], depth: int) -> str:
    """A code of the tree as Markdown: indented, its colour's dot and hex, its name (escaped)."""
    indent = "\u2003" * depth + ("↳ " if depth else "")
    line = f"{indent}:{named_colour(code['colour'])}[●] **{md_escape(code['name'])}** `{code['colour']}`"
    notes = [f"_{field}:_ {md_escape(short(code[column], 300))}" for field, column in
             zip(CODE_FIELDS, ("definition", "include_notes", "exclude_notes", "example")) if code[column]]
    return line + ("  \n" + "\u2003" * (depth + 1) + " · ".join(notes) if notes else "")


def _fields(prefix: str) -> dict[str, Any]:
    state = st.session_state
    return {"parent": state.get(f"{prefix}parent"), "colour": state.get(f"{prefix}colour"),
            **{field: state.get(f"{prefix}{field}") or "" for field in CODE_FIELDS}}


def code_fields(prefix: str, paths: dict[str, str], exclude: str | None = None) -> None:
    """The fields of a code (name, parent, colour, definition, include, exclude, example) under `prefix`."""
    parents = [None] + [c for c in paths if c != exclude]
    if st.session_state.get(f"{prefix}parent") not in parents:
        st.session_state[f"{prefix}parent"] = None
    top = st.columns([3, 3, 1], vertical_alignment="bottom")
    top[0].text_input("Name", key=f"{prefix}name", max_chars=coding.MAX_NAME_CHARS)
    top[1].selectbox("Parent", parents, key=f"{prefix}parent",
                     format_func=lambda c: "(top level)" if c is None else paths.get(c, c))
    top[2].color_picker("Colour", key=f"{prefix}colour")
    rows = st.columns(2)
    for i, field in enumerate(CODE_FIELDS):
        rows[i % 2].text_area(field.capitalize(), key=f"{prefix}{field}", height=80)


def _add_code(ctx: Ctx) -> None:
    name = st.session_state.get("coding_code_name") or ""
    if _guarded(lambda: coding.add_code(open_store(), ctx.project_id, ctx.name, name, **_fields("coding_code_")),
                lambda _: f"Added the code {' '.join(name.split())!r}.") is not None:
        for field in ("name", *CODE_FIELDS):
            st.session_state[f"coding_code_{field}"] = ""


def _save_code(ctx: Ctx) -> None:
    code_id = st.session_state.get("coding_edit_code")
    if not code_id:
        _say("error", "code: pick the code to edit")
        return
    fields = {"name": st.session_state.get("coding_edit_name") or "", **_fields("coding_edit_")}
    _guarded(lambda: coding.update_code(open_store(), ctx.project_id, code_id, ctx.name, **fields),
             lambda _: f"Saved the code {' '.join(fields['name'].split())!r}.")


def _load_edit(codes: dict[str, dict[str, Any]]) -> None:
    """Fill the edit fields with the picked code whenever another code is picked."""
    picked = st.session_state.get("coding_edit_code")
    if picked not in codes:
        picked = st.session_state["coding_edit_code"] = None
    if st.session_state.get("coding_edit_loaded", "") == picked:
        return
    st.session_state["coding_edit_loaded"] = picked
    code = codes.get(picked) or {}
    for field, column in (("name", "name"), ("definition", "definition"), ("include", "include_notes"),
                          ("exclude", "exclude_notes"), ("example", "example")):
        st.session_state[f"coding_edit_{field}"] = code.get(column) or ""
    st.session_state["coding_edit_parent"] = code.get("parent_id")
    st.session_state["coding_edit_colour"] = code.get("colour") or "#4C78A8"


def render_code_editing(ctx: Ctx, codes: list[dict[str, Any]], paths: dict[str, str]) -> None:
    with st.expander("Add a code"):
        if "coding_code_colour" not in st.session_state:
            st.session_state["coding_code_colour"] = coding.DEFAULT_COLOURS[len(codes) % len(coding.DEFAULT_COLOURS)]
        code_fields("coding_code_", paths)
        st.button("Add code", key="coding_code_add", type="primary", on_click=_add_code, args=(ctx,))
    with st.expander("Edit or delete a code"):
        _load_edit({c["id"]: c for c in codes})
        st.selectbox("Code", list(paths), key="coding_edit_code", format_func=lambda c: paths.get(c, c),
                     index=None, placeholder="pick a code")
        picked = st.session_state.get("coding_edit_code")
        if picked:
            code_fields("coding_edit_", paths, exclude=picked)
            st.button("Save code", key="coding_edit_save", on_click=_save_code, args=(ctx,))
            delete_control(ctx, "code", picked, f"code {paths.get(picked, '?')!r}")


def render_codebook_tab(store: Store, ctx: Ctx) -> None:
    codes = storage.code_rows(store, ctx.project_id)
    paths = code_paths(codes)
    by_id = {c["id"]: c for c in codes}
    with st.container(key="coding_codebook_tree"):
        if not codes:
            st.caption("The codebook is empty: add a code below, or import a QDC codebook (Exchange tab).")
        for code in codes:
            st.markdown(code_line(code, _depth(code, by_id)))
    render_code_editing(ctx, codes, paths)
    if not ctx.invited:  # an invited visitor starts no model (it would run on this machine's keys)
        render_precoding(store, ctx, bool(codes))
    render_proposals(store, ctx, paths)


# ----- pre-coding by a model ------------------------------------------------------------------------------
@dataclass
class PrecodeJob:
    """One pre-coding run in a daemon thread of the server (never in the script run)."""

    model: str
    thread: threading.Thread | None = None
    result: precode.PrecodeResult | None = None
    error: str | None = None

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def summary(self) -> str:
        if self.running:
            return f"pre-coding with {self.model} … running"
        if self.error:
            return f"pre-coding with {self.model} stopped: {self.error}"
        found = self.result or precode.PrecodeResult("")
        return (f"pre-coding with {self.model} … {found.asked} turns asked, {found.proposals} proposals, "
                f"{found.skipped} turns coded before, {len(found.failed)} failed")


_PRECODING: dict[str, PrecodeJob] = {}  # project id -> its latest pre-coding run in this process
_PRECODING_LOCK = threading.Lock()


def start_precode(db_path: Any, project_id: str, model: str) -> PrecodeJob:
    """Start `precode.precode` for the project in a daemon thread (ValueError when one runs already)."""
    with _PRECODING_LOCK:
        running = _PRECODING.get(project_id)
        if running is not None and running.running:
            raise ValueError(f"model: {running.model} is pre-coding this project already")
        job = _PRECODING[project_id] = PrecodeJob(model)

    def work() -> None:
        try:
            job.result = precode.precode(Store(db_path), project_id, model)
        except Exception as exc:  # noqa: BLE001 - said on the page, never raised in a server thread
            job.error = f"{type(exc).__name__}: {exc}"

    job.thread = threading.Thread(target=work, name=f"madlab-precode-{project_id[:8]}", daemon=True)
    job.thread.start()
    return job


def precode_job(project_id: str) -> PrecodeJob | None:
    with _PRECODING_LOCK:
        return _PRECODING.get(project_id)


def _precode(ctx: Ctx, has_codes: bool) -> None:
    model = " ".join(str(st.session_state.get("coding_precode_model") or "").split())
    if not model:
        _say("error", "model: name the model that proposes codes")
    elif not has_codes:
        _say("error", "codebook: the project has no codes for a model to propose")
    else:
        _guarded(lambda: start_precode(open_store().path, ctx.project_id, model),
                 lambda _: f"Pre-coding with {model} started.")


def render_precoding(store: Store, ctx: Ctx, has_codes: bool) -> None:
    st.markdown("**Model pre-coding**")
    if "coding_precode_model" not in st.session_state:
        st.session_state["coding_precode_model"] = default_model(store, ctx.project_id)
    left, right = st.columns([4, 1], vertical_alignment="bottom")
    left.text_input("Model that proposes codes", key="coding_precode_model",
                    help="Any litellm name; it proposes codes of this codebook for each turn (whole turns)")
    job = precode_job(ctx.project_id)
    right.button("Propose codes", key="coding_precode", on_click=_precode, args=(ctx, has_codes),
                 disabled=job is not None and job.running, width="stretch")
    if job is None:
        return
    was_running = job.running

    @st.fragment(run_every=REFRESH_S if was_running else None)
    def status() -> None:
        if was_running and not job.running:  # it ended meanwhile: draw the proposals too
            st.rerun(scope="app")
        with st.container(key="coding_precode_status"):
            (st.error if job.error else st.caption)(md_escape(job.summary()))

    status()


def _review(ctx: Ctx, proposal_id: str, accept: bool) -> None:
    store = open_store()
    if accept:
        _guarded(lambda: precode.accept(store, ctx.project_id, proposal_id, ctx.coder_id), lambda _: "Accepted.")
    else:
        _guarded(lambda: precode.reject(store, ctx.project_id, proposal_id, ctx.coder_id), lambda _: "Rejected.")


def render_proposals(store: Store, ctx: Ctx, paths: dict[str, str]) -> None:
    """A model's proposals this coder has not reviewed yet, each with Accept / Reject (another
    person's review is theirs: it takes nothing off this list)."""
    models = {c["id"]: c["name"] for c in storage.coder_rows(store, ctx.project_id) if c["kind"] == "model"}
    if not models:
        return
    done = storage.reviews(store, ctx.project_id, ctx.coder_id)
    rows = [r for r in storage.coding_rows(store, ctx.project_id, coder_ids=list(models))
            if r["id"] not in done and r["code_id"] in paths]
    st.markdown(f"**Proposals to review** ({len(rows)})")
    for row in rows[:MAX_ROWS]:
        with st.container(border=True, key=f"coding_proposal_{id8(row['id'])}"):
            st.markdown(f"{md_escape(models[row['coder_id']])} proposes **{md_escape(paths[row['code_id']])}** for "
                        f"“{md_escape(short(row['quote'], 200))}” · debate {id8(row['debate_id'])}")
            left, right = st.columns(2)
            left.button("Accept", key=f"coding_accept_{id8(row['id'])}", on_click=_review, args=(ctx, row["id"], True))
            right.button("Reject", key=f"coding_reject_{id8(row['id'])}", on_click=_review,
                         args=(ctx, row["id"], False))
    if len(rows) > MAX_ROWS:
        st.caption(f"The first {MAX_ROWS} of {len(rows)} proposals.")


# ----- the Agreement tab ----------------------------------------------------------------------------------
def agreement_table(rows: list[Any]) -> list[dict[str, Any]]:
    """The figures of `reports.agreement_rows` as plain cells: "0.62 [0.41, 0.83]", n units, notes."""
    table = []
    for row in rows:
        found = row.agreement
        notes = [row.note, found.note] + [f"{f.method}: {f.note}" for f in found.figures() if f.note and f.value is not None]
        table.append({"code": row.code, "n units": row.n_units,
                      **{FIGURE_TITLES[name]: getattr(found, name).text() for name in FIGURE_FIELDS},
                      "notes": "; ".join(dict.fromkeys(filter(None, notes)))})
    return table


def _latest_change(store: Store, project_id: str) -> Any:
    latest = storage.history(store, project_id, 1)
    return latest[0]["id"] if latest else None


def _agreement_key(store: Store, ctx: Ctx) -> tuple[Any, ...]:
    coders = tuple(st.session_state.get("coding_agree_coders") or ())
    return (ctx.project_id, coders, st.session_state.get("coding_agree_unit") or "turn",
            _latest_change(store, ctx.project_id))


def _compute_agreement(ctx: Ctx) -> None:
    store = open_store()
    key = _agreement_key(store, ctx)
    if len(key[1]) < 2:
        _say("error", "coders: pick two or more coders to compare")
        return
    rows = _guarded(lambda: reports.agreement_rows(store, ctx.project_id, list(key[1]), key[2]),
                    lambda rows: f"Computed the agreement of {len(key[1])} coders over {key[2]} units.")
    if rows is not None:
        st.session_state[AGREEMENT] = {"key": key, "rows": agreement_table(rows),
                                       "records": reports.agreement_records(store, ctx.project_id, rows)}


def render_agreement_tab(store: Store, ctx: Ctx) -> None:
    if ctx.blind and not ctx.lead:
        st.markdown(f"The agreement table appears after {md_escape(ctx.lead_name)} reveals the coders' work.")
        return
    coders = {c["id"]: c["name"] + ("" if c["kind"] == "person" else f" ({c['kind']})")
              for c in storage.coder_rows(store, ctx.project_id)}
    if [c for c in st.session_state.get("coding_agree_coders") or [] if c not in coders]:
        st.session_state["coding_agree_coders"] = []
    left, right = st.columns([4, 2], vertical_alignment="bottom")
    left.multiselect("Coders to compare (two or more)", list(coders), key="coding_agree_coders",
                     format_func=lambda c: coders.get(c, c))
    unit = right.radio("Unit", ["turn", "character"], key="coding_agree_unit", horizontal=True,
                       help="turn: a code applied anywhere in the turn; character: each character of a turn's text")
    st.button("Compute", key="coding_agree_compute", on_click=_compute_agreement, args=(ctx,),
              help="Character units can take many seconds on a large project")
    cached = st.session_state.get(AGREEMENT)
    if not cached or cached["key"] != _agreement_key(store, ctx):
        st.caption("Pick the coders and the unit, then Compute (again after any change to the codings).")
        return
    with st.container(key="coding_agree_table"):
        st.caption(f"Agreement of {md_escape(', '.join(coders.get(c, c) for c in cached['key'][1]))} · unit: {unit} · "
                   "95 % intervals in brackets; over the debates every compared coder coded.")
        st.dataframe(cached["rows"], hide_index=True, column_config={  # each figure explained on hover
            title: st.column_config.TextColumn(title, help=glossary.help_for(title))
            for title in ("n units", *FIGURE_TITLES.values())})
    st.download_button("Agreement (CSV)", lambda: reports.agreement_csv(cached["records"]),
                       file_name=f"agreement-{id8(ctx.project_id)}-{unit}.csv", mime="text/csv",
                       key="coding_agree_csv", on_click="ignore")


# ----- the Disagreements tab (the lead's) ----------------------------------------------------------------
def _settle(ctx: Ctx, row: dict[str, Any], index: int) -> None:
    code_ids = list(st.session_state.get(f"coding_settle_codes_{index}") or [])
    _guarded(lambda: coding.settle(open_store(), ctx.project_id, ctx.coder_id, row["debate_id"], row["turn_id"],
                                   code_ids), lambda made: f"Settled the turn with {len(made)} code(s).")


def _settle_code(ctx: Ctx, row: dict[str, Any], code_id: str, spans: list[tuple[int, int]], label: str) -> None:
    _guarded(lambda: coding.settle_code(open_store(), ctx.project_id, ctx.coder_id, row["debate_id"], row["turn_id"],
                                        code_id, spans),
             lambda made: f"Settled {label}: {len(made)} gold coding(s).")


def span_words(spans: list[tuple[int, int, str]], length: int) -> str:
    """The characters passages cover, as a reader names them (`reports.covered`): "whole turn",
    "characters 4–19; 30–41", or "—" for none."""
    runs = reports.covered(((s, e) for s, e, _ in spans), length)
    if runs == ((0, length),):
        return "whole turn"
    return "characters " + "; ".join(f"{s}–{e}" for s, e in runs) if runs else "—"


def _passages_column(where: Any, key: str, title: str, text: str, spans: list[tuple[int, int, str]],
                     colour: str) -> None:
    """One coder's (or gold's) passages of a code: who, which characters, and the turn's text drawn
    literally with those passages behind the code's colour (as the Code tab draws them)."""
    with where.container(key=key):
        st.markdown(f"**{md_escape(title)}** · {span_words(spans, len(text))}")
        st.markdown(highlighted(text, [(s, e, colour) for s, e, _ in spans]))


def render_code_disagreement(ctx: Ctx, index: int, j: int, row: dict[str, Any], item: dict[str, Any],
                             colour: str) -> None:
    """One code the coders applied to different characters of the turn: each coder's passages and
    gold's side by side, and the lead's choices: the whole turn, one coder's passages, or not this code."""
    text, code, holders = row["text"], item["code"], list(item["passages"].items())
    with st.container(border=True, key=f"coding_dis_{index}_code_{j}"):
        st.markdown(f":{colour}[●] **{md_escape(code)}**: the coders coded different characters with it")
        columns = st.columns(len(holders) + 1)
        for k, (name, spans) in enumerate(holders):
            _passages_column(columns[k], f"coding_dis_text_{index}_{j}_{k}", name, text, spans, colour)
        gold = item["gold"]
        title = "gold" + ("" if gold else " · not this code" if item["decided"] else " · not settled")
        _passages_column(columns[-1], f"coding_dis_gold_{index}_{j}", title, text, gold, colour)
        settle = (ctx, row, item["code_id"])
        buttons = st.columns(len(holders) + 2)
        buttons[0].button("Whole turn", key=f"coding_settle_whole_{index}_{j}", on_click=_settle_code,
                          args=(*settle, [(0, len(text))], f"{code} on the whole turn"))
        for k, (name, spans) in enumerate(holders):
            buttons[k + 1].button(f"As {md_escape(name)}", key=f"coding_settle_as_{index}_{j}_{k}",
                                  disabled=not spans, on_click=_settle_code,
                                  args=(*settle, [(s, e) for s, e, _ in spans], f"{code} as {name}'s passages"),
                                  help="Gold takes this coder's passages of the code (same offsets and quotes)")
        buttons[-1].button("Not this code", key=f"coding_settle_none_{index}_{j}", on_click=_settle_code,
                           args=(*settle, [], f"{code}: not this code"))


def render_disagreement(ctx: Ctx, index: int, row: dict[str, Any], paths: dict[str, str],
                        colours: dict[str, str]) -> None:
    with st.container(border=True, key=f"coding_dis_{index}"):
        st.markdown(f"**{md_escape(row['header'])}** · debate {id8(row['debate_id'])}")
        columns = st.columns(len(row["codes"]) + 1)
        for column, (name, names) in zip(columns, row["codes"].items()):
            column.markdown(f"**{md_escape(name)}**  \n" + ("  \n".join(md_escape(n) for n in names) or "—"))
        columns[-1].markdown("**gold**  \n" + ("not settled" if row["gold"] is None else
                                               "  \n".join(md_escape(n) for n in row["gold"]) or "—"))
        for j, item in enumerate(row["differ"]):
            render_code_disagreement(ctx, index, j, row, item, colours.get(item["code_id"], "gray"))
        left, right = st.columns([4, 1], vertical_alignment="bottom")
        left.multiselect("Settle the whole turn as", list(paths), key=f"coding_settle_codes_{index}",
                         format_func=lambda c: paths.get(c, c))
        right.button("Settle", key=f"coding_settle_{index}", on_click=_settle, args=(ctx, row, index),
                     help="The gold coding of this whole turn becomes these codes (the history records you decided)")


def gold_figures(store: Store, ctx: Ctx, chosen: list[str], gold: str) -> tuple[str, list[tuple[str, Any]]]:
    """Each chosen coder against gold: the unit (`reports.passage_unit`: characters once a coding of
    theirs or gold's is a passage) and per coder the overall agreement, kept per session until the
    project changes (character units take a while on a large project)."""
    key = (ctx.project_id, tuple(chosen), _latest_change(store, ctx.project_id))
    cached = st.session_state.get(GOLD_AGREEMENT)
    if not cached or cached["key"] != key:
        unit = reports.passage_unit(store, ctx.project_id, [*chosen, gold])
        cached = st.session_state[GOLD_AGREEMENT] = {"key": key, "unit": unit, "rows": [
            (coder, reports.agreement_rows(store, ctx.project_id, [coder, gold], unit)[-1].agreement)
            for coder in chosen]}
    return cached["unit"], cached["rows"]


def render_gold_agreement(store: Store, ctx: Ctx, chosen: list[str], coders: dict[str, dict[str, Any]]) -> None:
    gold = next((c for c, row in coders.items() if row["kind"] == "gold"), None)
    if gold is None:
        return
    unit, rows = gold_figures(store, ctx, chosen, gold)
    lines = [f"{md_escape(coders[coder]['name'])} vs gold: Cohen's κ {md_escape(overall.cohen_kappa.text())}"
             f" · percent agreement {md_escape(overall.percent_agreement.text())} · {overall.n_units} units"
             for coder, overall in rows]
    with st.container(key="coding_gold_agreement"):
        st.markdown(f"**Agreement with gold** ({unit} units, overall)  \n" + "  \n".join(lines))
        if unit == "character":
            st.caption("Character units: each character of a turn is one decision, so passages count where they "
                       "lie (intervals over characters are too narrow: read them as descriptive).")


def render_disagreements_tab(store: Store, ctx: Ctx) -> None:
    coders = {c["id"]: c for c in storage.coder_rows(store, ctx.project_id)}
    people = [c for c, row in coders.items() if row["kind"] != "gold"]
    if "coding_dis_coders" not in st.session_state or any(
            c not in people for c in st.session_state["coding_dis_coders"]):
        st.session_state["coding_dis_coders"] = people[:2]
    chosen = st.multiselect("Coders", people, key="coding_dis_coders", format_func=lambda c: coders[c]["name"])
    if len(chosen) < 2:
        st.caption("Pick two or more coders.")
        return
    codes = storage.code_rows(store, ctx.project_id)
    paths, colours = code_paths(codes), {c["id"]: named_colour(c["colour"]) for c in codes}
    rows = reports.disagreements(store, ctx.project_id, chosen)
    st.caption(f"{len(rows)} turns where their codings differ: a code on one coder's side only, or on different "
               "passages (over the debates all of them coded).")
    for index, row in enumerate(rows[:MAX_ROWS]):
        render_disagreement(ctx, index, row, paths, colours)
    if len(rows) > MAX_ROWS:
        st.caption(f"The first {MAX_ROWS} of {len(rows)} turns.")
    render_gold_agreement(store, ctx, chosen, coders)


# ----- the Exchange and History tabs ---------------------------------------------------------------------
def _import(ctx: Ctx) -> None:
    upload = st.session_state.get("coding_upload")
    if upload is None:
        _say("error", "file: choose a .qdc or .qdpx file first")
        return
    store, data, name = open_store(), upload.getvalue(), upload.name.lower()
    try:
        if name.endswith(".qdc"):
            added = exchange.import_codebook(store, ctx.project_id, ctx.name, data)
            _say("success", f"Imported the codebook: {added} code(s) added.")
        else:
            counts = exchange.import_project(store, ctx.project_id, ctx.name, data)
            _say("success", "Imported: " + ", ".join(f"{n} {what}" for what, n in counts.items()) + " added.")
    except exchange.QdaImportError as exc:
        _say("error", f"The file was refused at {exc.where}: {exc.message}. Nothing was imported.")
    except (ValueError, LookupError) as exc:
        _say("error", f"file: {exc}. Nothing was imported.")


def render_exchange_tab(store: Store, ctx: Ctx) -> None:
    pid, name = ctx.project_id, f"coding-{id8(ctx.project_id)}"
    left, right = st.columns(2)
    left.download_button("Project (QDPX)", lambda: exchange.export_qdpx(open_store(), pid), file_name=f"{name}.qdpx",
                         mime="application/zip", key="coding_qdpx", on_click="ignore")
    has_codes = bool(storage.code_rows(store, pid))
    right.download_button("Codebook (QDC)", lambda: exchange.export_qdc(open_store(), pid), file_name=f"{name}.qdc",
                          mime="application/xml", key="coding_qdc", on_click="ignore", disabled=not has_codes)
    if not has_codes:
        right.caption("A QDC file needs at least one code: the codebook is empty.")
    st.caption("REFI-QDA files open in ATLAS.ti, MAXQDA, NVivo, QDA Miner and others; a QDPX import brings "
               "codes, coders, codings and memos onto this project's debates (all or nothing).")
    st.file_uploader("Import a codebook (.qdc) or a project (.qdpx)", type=["qdc", "qdpx"], key="coding_upload")
    st.button("Import", key="coding_import", on_click=_import, args=(ctx,))


def _what(row: dict[str, Any]) -> str:
    after = row["after"]
    detail = "" if after is None else short(json.dumps(after, ensure_ascii=False, default=str), 120)
    return f"{row['entity']} {id8(str(row['entity_id'] or ''))} {detail}".strip()


def render_history_tab(store: Store, ctx: Ctx) -> None:
    rows = storage.history(store, ctx.project_id, 500)
    with st.container(key="coding_history"):
        st.caption(f"The project's last {len(rows)} changes, newest first.")
        st.dataframe([{"when": when(r["at"]), "who": r["actor"] or "", "action": r["action"], "what": _what(r)}
                      for r in rows], hide_index=True)
