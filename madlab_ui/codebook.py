"""The reading room's parts shared by the Transcripts and Compare pages: the codebook of annotation
tags (create, rename, colour, delete when unused, counts), tag chips, the list filters (tag, model,
outcome, correctness), the annotation CSV downloads, who annotates (kept across reloads by
session_memory), and fork links. One annotation is deleted on its turn (browse.py), which frees its tag.
A turn's tag box (browse.py) offers the codebook's tags and `NEW_TAG`; `turn_tag` decides what an
Annotate click stores: a typed prefix never makes a tag, a new one is made only through NEW_TAG.

Keys: the `codebook` expander with `annotator`, `codebook_counts`, `codebook_new` /
`codebook_new_colour` (offered a colour no tag has yet) / `codebook_add`, `codebook_tag` /
`codebook_rename_to` / `codebook_rename`,
`codebook_colour` (shows the picked tag's own colour) / `codebook_set_colour`, `codebook_delete`,
`codebook_message`,
`export_annotations` (the archive) and `export_annotations_open` (the opened debate); the filters
`tag_filter`, `model_filter`, `outcome_filter`, `correctness_filter`.

What it must not do: render a tag name or any user or model text as HTML (chips are Streamlit
markdown badges with the name escaped), write to the store except through mad_core.codebook,
or compute correctness itself (the store's `debate_correctness` reads answers by their type).
"""
from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from mad_core import codebook, exports
from mad_core.codebook import TAG_COLOURS, free_tag_colour, tag_name
from mad_core.store import CORRECTNESS, OUTCOMES, models_used

from .common import ANNOTATOR_KEPT, OPEN_DEBATE, id8, md_escape, open_store

# The emoji that says a palette colour in plain text (the picker, the list of tags).
COLOUR_MARKS = {"blue": "🔵", "green": "🟢", "orange": "🟠", "red": "🔴", "violet": "🟣", "gray": "⚫",
                "yellow": "🟡"}
ANNOTATOR = "annotator"  # widget key; its value is kept under ANNOTATOR_KEPT (see `keep_annotator`)
MESSAGE = "codebook_message_state"  # (kind, text) shown once after a codebook action
COLOUR_SHOWN_FOR = "codebook_colour_for"  # the picked tag whose colour the colour box was last given
NEW_COLOUR_SUGGESTED = "codebook_new_colour_for"  # the free colour the new tag's colour box was last given
# A turn's tag box: the codebook's tags and this one entry, which opens a field for a new tag's name.
# No tag name can be it (tag_name turns NUL into a space), so it never shadows a tag.
NEW_TAG = "\x00new tag"
NEW_TAG_LABEL = "➕ New tag…"
TRANSCRIPTS_PAGE = "pages/1_Transcripts.py"


# ----- chips ---------------------------------------------------------------------------------------
def colour_of(name: str, colours: dict[str, str]) -> str:
    """The palette colour of a tag (gray for a tag the codebook no longer has)."""
    colour = colours.get(name.lower(), "gray")
    return colour if colour in TAG_COLOURS else "gray"


def chip(name: str, colours: dict[str, str]) -> str:
    """A tag as a coloured markdown badge with its colour's emoji; the name is escaped."""
    colour = colour_of(name, colours)
    return f":{colour}-badge[{COLOUR_MARKS[colour]} {md_escape(name)}]"


def colour_map(tags: list[dict[str, Any]] | None = None) -> dict[str, str]:
    """Lower-cased tag name -> colour, from the codebook."""
    tags = codebook.tags(open_store()) if tags is None else tags
    return {t["name"].lower(): t["colour"] for t in tags}


def annotation_line(note: dict[str, Any], colours: dict[str, str]) -> str:
    """One annotation as markdown: its chip, the note and who wrote it (all escaped)."""
    line = chip(note["tag"], colours)
    if note.get("note"):
        line += f" {md_escape(note['note'])}"
    if note.get("annotator"):
        line += f" · _{md_escape(note['annotator'])}_"
    return line


def counted(n: int, noun: str) -> str:
    """"1 annotation", "2 annotations", "0 debates"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def tag_count_line(tag: dict[str, Any], colours: dict[str, str]) -> str:
    """A codebook row: the chip, then "1 annotation in 1 debate" (plurals said right)."""
    counts = f"{counted(tag['count'], 'annotation')} in {counted(tag['debates'], 'debate')}"
    return f"{chip(tag['name'], colours)} {counts}"


# ----- a turn's tag ---------------------------------------------------------------------------------
def turn_tag_label(option: str) -> str:
    """How a turn's tag box shows an option (the tags by name; NEW_TAG as "➕ New tag…")."""
    return NEW_TAG_LABEL if option == NEW_TAG else option


def turn_tag(picked: str | None, typed: str | None, names: list[str]) -> tuple[str | None, str | None]:
    """The tag an Annotate click stores: (its name, None), or (None, the reason, naming the field).
    `picked`: the turn's tag box (a codebook tag or NEW_TAG); `typed`: the new tag's name field.
    A new name that the codebook holds in any case or spacing is refused: the box offers that tag,
    and a second spelling would split the counts and the filter."""
    if not picked:
        return None, "tag: pick a tag from the codebook (or ➕ New tag… to make one)"
    if picked != NEW_TAG:
        if picked not in names:  # deleted or renamed since the box was drawn
            return None, f"tag: the codebook no longer has {picked!r}; pick another"
        return picked, None
    try:
        name = tag_name(typed, "new tag")
    except ValueError as exc:
        return None, str(exc)
    same = next((n for n in names if " ".join(n.split()).lower() == name.lower()), None)
    if same is not None:
        return None, f"new tag: the codebook already has {same!r}; pick it in the tag box"
    return name, None


# ----- forks ---------------------------------------------------------------------------------------
def fork_label(row: dict[str, Any] | None) -> str | None:
    """"fork of <id8> after turn k" for a forked debate's row (plain text), else None."""
    if not row or not row.get("parent_id"):
        return None
    seq = row.get("forked_from_seq")
    after = f" after turn {seq}" if seq is not None else ""
    return f"fork of {id8(row['parent_id'])}{after}"


def open_in_transcripts(debate_id: str) -> None:
    """Open a debate on the Transcripts page (a button's callback: the page switch follows)."""
    st.session_state[OPEN_DEBATE] = debate_id


def parent_button(row: dict[str, Any], key: str, container: Any = st, *, switch: bool = False,
                  on_open: Callable[[str], None] | None = None, compact: bool = False) -> None:
    """A button that opens a fork's parent on the Transcripts page (nothing for a debate that is no
    fork): through `on_open(parent id)`, a click callback, when given (the Transcripts page's own);
    else it opens it and reruns (or `switch`es to the Transcripts page). `compact`: labelled
    "Parent" only (a narrow column; the fork's caption names the parent)."""
    if not row.get("parent_id"):
        return
    label = "Parent" if compact else f"Parent {id8(row['parent_id'])}"
    help_ = f"Open debate {id8(row['parent_id'])}, which this one was forked from"
    if on_open is not None:
        container.button(label, key=key, icon="↩️", width="stretch", help=help_, on_click=on_open,
                         args=(row["parent_id"],))
        return
    if container.button(label, key=key, icon="↩️", width="stretch", help=help_):
        open_in_transcripts(row["parent_id"])
        if switch:
            st.switch_page(TRANSCRIPTS_PAGE)
        st.rerun()


# ----- the annotator -------------------------------------------------------------------------------
def keep_annotator() -> None:
    """Give the annotator field the name kept for this session: Streamlit drops a widget's state on a
    page where it is not drawn, so the name lives under a plain key (`_remember_annotator`)."""
    st.session_state[ANNOTATOR] = st.session_state.get(ANNOTATOR_KEPT, "")


def _remember_annotator() -> None:
    st.session_state[ANNOTATOR_KEPT] = st.session_state.get(ANNOTATOR) or ""


def annotator() -> str:
    """The session's annotator name (whitespace collapsed; "" when not given)."""
    return " ".join(str(st.session_state.get(ANNOTATOR_KEPT) or "").split())


# ----- the codebook section ------------------------------------------------------------------------
def _say(kind: str, text: str) -> None:
    st.session_state[MESSAGE] = (kind, text)


def _guarded(action: Callable[[], Any], success: Callable[[Any], str]) -> None:
    """Run a codebook change; its refusal (ValueError / LookupError) is shown, never raised; on success
    `success(result)` is the message."""
    try:
        result = action()
    except (ValueError, LookupError) as exc:
        _say("error", str(exc))
        return
    _say("success", success(result))


def _add() -> None:
    name, colour = st.session_state.get("codebook_new") or "", st.session_state.get("codebook_new_colour")
    before = {t["name"].lower() for t in codebook.tags(open_store())}
    if " ".join(name.split()).lower() in before:
        _say("error", f"new tag: the codebook already has {' '.join(name.split())!r}")
        return
    _guarded(lambda: codebook.add_tag(open_store(), name, colour), lambda added: f"Added {added!r} to the codebook.")
    if st.session_state[MESSAGE][0] == "success":
        st.session_state["codebook_new"] = ""
        st.session_state.pop("codebook_new_colour", None)  # the next new tag is offered the next free colour


def _rename() -> None:
    old, new = st.session_state.get("codebook_tag"), st.session_state.get("codebook_rename_to") or ""
    if not old:
        _say("error", "tag: pick the tag to rename")
        return
    # The message names only the new name: after a rename the old one is shown nowhere.
    _guarded(lambda: codebook.rename_tag(open_store(), old, new),
             lambda renamed: f"Renamed the tag to {renamed!r} everywhere.")
    if st.session_state[MESSAGE][0] == "success":
        renamed = " ".join(new.split())
        st.session_state["codebook_tag"] = renamed
        st.session_state["codebook_rename_to"] = ""
        if (st.session_state.get("tag_filter") or "").lower() == old.lower():  # the list filter follows
            st.session_state["tag_filter"] = renamed


def _recolour() -> None:
    name, colour = st.session_state.get("codebook_tag"), st.session_state.get("codebook_colour")
    if not name:
        _say("error", "tag: pick the tag to colour")
        return
    if not colour:
        _say("error", "colour: pick the colour to give it")
        return
    _guarded(lambda: codebook.set_tag_colour(open_store(), name, colour), lambda _: f"{name!r} is now {colour}.")


def _delete() -> None:
    name = st.session_state.get("codebook_tag")
    if not name:
        _say("error", "tag: pick the tag to delete")
        return
    _guarded(lambda: codebook.delete_tag(open_store(), name), lambda _: f"Deleted {name!r} from the codebook.")
    if st.session_state[MESSAGE][0] == "success":
        st.session_state["codebook_tag"] = None
    elif " annotation" in st.session_state[MESSAGE][1]:  # where those annotations can be deleted
        _say("error", st.session_state[MESSAGE][1] + " (each annotation has a delete button on its turn: "
                      "filter the list by this tag to find them)")


def _colour_label(colour: str) -> str:
    return f"{COLOUR_MARKS[colour]} {colour}"


def _show_picked_colour(colours: dict[str, str]) -> None:
    """Give the colour box the picked tag's own colour whenever another tag is picked (by the user, a
    rename or a delete); a colour chosen in the box stays until the pick changes. No tag: no colour."""
    picked = st.session_state.get("codebook_tag")
    if st.session_state.get(COLOUR_SHOWN_FOR, "") != picked or "codebook_colour" not in st.session_state:
        st.session_state["codebook_colour"] = colour_of(picked, colours) if picked else None
        st.session_state[COLOUR_SHOWN_FOR] = picked


def _suggest_new_colour(tags: list[dict[str, Any]]) -> None:
    """Offer a new tag the colour no tag has yet (`free_tag_colour`), following the codebook as it
    changes (a tag made on a turn takes that colour); a colour the user chose stays."""
    free = free_tag_colour(t["colour"] for t in tags)
    chosen = st.session_state.get("codebook_new_colour")
    if chosen is None or chosen == st.session_state.get(NEW_COLOUR_SUGGESTED):
        st.session_state["codebook_new_colour"] = st.session_state[NEW_COLOUR_SUGGESTED] = free


def render_codebook(opened: str | None = None) -> None:
    """The Codebook expander: who annotates, every tag with its counts, the changes, the CSV downloads."""
    keep_annotator()
    store = open_store()
    tags = codebook.tags(store)
    colours = colour_map(tags)
    names = [t["name"] for t in tags]
    if st.session_state.get("codebook_tag") not in names:
        st.session_state["codebook_tag"] = None
    with st.expander(f"Codebook · {len(tags)} tags · annotation export", key="codebook"):
        st.text_input("Annotator (your name on the annotations you add)", key=ANNOTATOR, max_chars=80,
                      placeholder="e.g. rater A", on_change=_remember_annotator)
        with st.container(key="codebook_counts"):
            if tags:
                st.markdown("  \n".join(tag_count_line(t, colours) for t in tags))
            else:
                st.caption(f"The codebook is empty: add a tag here, or with {NEW_TAG_LABEL} on a turn.")
        new_col, colour_col, add_col = st.columns([3, 2, 1], vertical_alignment="bottom")
        new_col.text_input("New tag", key="codebook_new", max_chars=60, placeholder="tag name")
        _suggest_new_colour(tags)
        colour_col.selectbox("Colour", TAG_COLOURS, key="codebook_new_colour", format_func=_colour_label)
        add_col.button("Add", key="codebook_add", on_click=_add, width="stretch")
        tag_col, to_col, rename_col = st.columns([3, 2, 1], vertical_alignment="bottom")
        tag_col.selectbox("Tag", names, index=None, key="codebook_tag", placeholder="pick a tag to change")
        to_col.text_input("New name", key="codebook_rename_to", max_chars=60)
        rename_col.button("Rename", key="codebook_rename", on_click=_rename, width="stretch",
                          help="Renames the tag on every annotation that uses it")
        recolour_col, set_col, delete_col = st.columns([3, 2, 1], vertical_alignment="bottom")
        _show_picked_colour(colours)
        recolour_col.selectbox("Colour of the picked tag", TAG_COLOURS, index=None, key="codebook_colour",
                               format_func=_colour_label, placeholder="pick a tag first",
                               disabled=not st.session_state.get("codebook_tag"))
        set_col.button("Set colour", key="codebook_set_colour", on_click=_recolour, width="stretch")
        delete_col.button("Delete", key="codebook_delete", on_click=_delete, width="stretch",
                          help="Only a tag no annotation uses can be deleted")
        message = st.session_state.pop(MESSAGE, None)
        if message:
            with st.container(key="codebook_message"):
                (st.error if message[0] == "error" else st.success)(md_escape(message[1]))
        render_downloads(opened)


def render_downloads(opened: str | None) -> None:
    """The annotation CSVs: the whole archive, and the opened debate's (formula-safe cells)."""
    store = open_store()
    archive_col, open_col = st.columns(2)
    archive_col.download_button("Annotations of the archive (CSV)", exports.annotations_csv(store),
                                file_name="annotations.csv", mime="text/csv", key="export_annotations",
                                on_click="ignore", width="stretch")
    if opened and store.get_debate(opened) is not None:
        open_col.download_button(f"Annotations of debate {id8(opened)} (CSV)", exports.annotations_csv(store, opened),
                                 file_name=f"annotations-{id8(opened)}.csv", mime="text/csv",
                                 key="export_annotations_open", on_click="ignore", width="stretch")


# ----- filters ---------------------------------------------------------------------------------------
def render_filters() -> dict[str, str | None]:
    """The reading room's filters of the debate list: {tag, model, outcome, correctness} (None: any)."""
    store = open_store()
    tags, models = [t["name"] for t in codebook.tags(store)], models_used(store)
    for key, options in (("tag_filter", tags), ("model_filter", models)):
        if st.session_state.get(key) not in options:  # renamed or deleted meanwhile
            st.session_state[key] = None
    tag_col, model_col, outcome_col, correct_col = st.columns(4)
    any_ = "(any)"
    tag = tag_col.selectbox("Tag", tags, index=None, key="tag_filter", placeholder=any_)
    model = model_col.selectbox("Model", models, index=None, key="model_filter", placeholder=any_)
    outcome = outcome_col.selectbox("Outcome", list(OUTCOMES), index=None, key="outcome_filter", placeholder=any_)
    correctness = correct_col.selectbox("Correctness", list(CORRECTNESS), index=None, key="correctness_filter",
                                        placeholder=any_, help="The decision against the reference answer, read "
                                                               "with the debate's answer type")
    return {"tag": tag, "model": model, "outcome": outcome, "correctness": correctness}
