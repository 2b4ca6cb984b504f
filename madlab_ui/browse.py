"""The Transcripts page's parts: running debates to reattach, the stored-debate list, an opened
debate (transcript with annotations and fork buttons, plots, config, exports, resume) and its
replay (madlab_ui/replay.py: while replaying, the decision, reference, plots follow the replay).

The opened debate is kept in the URL (`?open=<id>`, `opened_debate`): a reload or a pasted link opens
it again. (Not `debate=`: every page reads that one as the Debate page's watched debate.) While a
debate is open, the list folds into the `debate_list_box` expander (collapsed by each Open) under a
`back_to_list` button, so the opened debate's title (`debate_title`) is in view at 1280x720.

Keys: `reattach_<id8>`, `search`, `status_filter`, `protocol_filter` (and codebook.py's `tag_filter`,
`model_filter`, `outcome_filter`, `correctness_filter`), `debate_list`, `open_<id8>`, `parent_<id8>`
(a fork's row: open its parent), `open_parent` (the opened fork's),
`match_<id8>` (under a row while searching: what matched), `tag_{k}` (with `new_tag_{k}` once
"➕ New tag…" is picked) / `note_{k}` / `annotate_{k}` / `fork_{k}` per turn, `unannotate_<annotation id>`
(delete one annotation), `debate_actions` (the row of `export_json` /
`export_md` / `export_csv`, `handout_md` / `handout_html`, `resume`), `replay_speed` / `replay_start` /
`replay_stop`, `reveal_reference`.
Only the teacher opens this page (`access.require` on pages/1_Transcripts.py); a running debate another
session started is watched read-only, and its reference is not offered while it runs (`access.may_reveal`).
What it must not do: run a debate in the script (resume and fork go through `mad_core.live`).
"""
from __future__ import annotations

import functools
import json
import os
import re
import time
from typing import Any

import streamlit as st
import yaml

from mad_core import codebook as core_codebook
from mad_core import exports, handout, live, polls, registry
from mad_core.codebook import DEFAULT_TAGS
from mad_core.events import DEBATE_STATUSES
from mad_core.qda import coding as qda_coding
from mad_core.store import list_debates, search_matches
from mad_core.view import DebateView, TurnView

from . import access, codebook, controls, plots, replay, transcript
from .coding import coder_name
from .highlight import literal, named_colour
from .common import (DEBATE_ID, DEBATE_PAGE, FORK_REQUEST, OPEN_DEBATE, id8, md_escape, open_store, owner_id,
                     short, when)

TAGS = list(DEFAULT_TAGS)  # the tags a new codebook starts with (the codebook itself is in the store)
OPEN_PARAM = "open"  # URL parameter: the debate opened on the Transcripts page
LIST_BOX = "debate_list_box"  # the expander the list folds into while a debate is open (its state: open?)
LIST_HEIGHT_PX = 400  # the list's scroll box: about four rows (at 1280x720 the page then scrolls < 320 px)
LIST_ROWS_UNBOXED = 3  # up to this many rows the list is drawn as it is
_DEBATE_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")


# ----- which debate is open ---------------------------------------------------------------------
def opened_debate() -> str | None:
    """The debate opened on the Transcripts page, kept in the URL (`?open=<id>`): a new session (a
    reload, a pasted link) opens the URL's debate; afterwards the session says and the URL follows."""
    state = st.session_state
    if OPEN_DEBATE not in state:
        wanted = st.query_params.get(OPEN_PARAM)
        state[OPEN_DEBATE] = wanted if isinstance(wanted, str) and _DEBATE_ID.fullmatch(wanted) else None
    opened = state.get(OPEN_DEBATE)
    if opened and st.query_params.get(OPEN_PARAM) != opened:
        st.query_params[OPEN_PARAM] = opened
    elif not opened and OPEN_PARAM in st.query_params:
        del st.query_params[OPEN_PARAM]
    return opened


def open_debate(debate_id: str) -> None:
    """Open a debate (a click callback of the list's Open and the Parent buttons): the list folds
    away (its expander collapsed), so the debate's title is drawn near the top. The click's rerun
    keeps the page's scroll position, which the list's own scroll box keeps small (`render_list`)."""
    st.session_state[OPEN_DEBATE] = debate_id
    st.session_state[LIST_BOX] = False
    replay.end()


def _close() -> None:
    st.session_state[OPEN_DEBATE] = None
    replay.end()


def render_page() -> None:
    """The Transcripts page below its title: the list (running debates, stored ones) with the codebook,
    or, while a debate is open, a "Back to the list" button, the list folded in an expander, the
    codebook, then the debate."""
    opened = opened_debate()
    if not opened:
        render_running()
        codebook.render_codebook(None)  # the shared tags, who annotates, the annotation CSVs
        render_list()
        return
    st.button("Back to the list", key="back_to_list", icon=":material/arrow_back:", on_click=_close)
    with st.expander("Debates · search, filters, open another", key=LIST_BOX, on_change="rerun"):
        render_running()  # drawn even when folded: the list's search and filters keep their values
        render_list()
    codebook.render_codebook(opened)
    render_debate(opened)


# ----- lists ------------------------------------------------------------------------------------
def render_running(title: str = "Running now", action: str = "Reattach") -> None:
    """Every debate the database says is running, in one compact block (a line each, so the list's
    first row stays in view at 1280x720): this server's first, each with a button (`action`) to watch
    and steer it on the Debate page; then those another process runs (the CLI, an experiment, another
    server: `list_debates` has marked the ones whose process is gone interrupted), with their
    worker and heartbeat, which cannot be steered from here: their button opens them read-only."""
    here = live.running()
    store = open_store()
    ids = {debate.debate_id for debate in here}
    elsewhere = [row for row in list_debates(store, status="running") if row["id"] not in ids]
    if not here and not elsewhere:
        return
    with st.container(key="running_list", border=True, gap="small"):
        st.markdown(f"**{title}**")
        for debate in here:
            view = debate.view()
            mine = (" · started in this browser session" if debate.owner == owner_id()
                    else "" if access.owns(debate) else " · another session steers it: read-only here")
            question = view.config.get("question") or "(starting…)"
            _running_row(debate.debate_id, question, store.get_debate(debate.debate_id),
                         f"{transcript.status_word(view, debate)} · {len(view.turns)} turns{mine}", action,
                         lambda debate_id=debate.debate_id: _watch(debate_id))
        for row in elsewhere:
            who = "not started from the Debate page" if row.get("pid") == os.getpid() else "run by another process"
            _running_row(row["id"], row["question"], row, f"running · {_worker(row)} · "
                         f"{who}: it cannot be steered from here", "View",
                         lambda debate_id=row["id"]: _view(debate_id), help_="Open it read-only here")


def _running_row(debate_id: str, question: str, row: dict | None, facts: str, action: str, on_click,
                 help_: str | None = None) -> None:
    """One line of the running block: question, short id, `facts` (markdown, its data escaped), fork link, and a button
    (`reattach_<id8>`) that calls `on_click()`."""
    left, right = st.columns([6, 1], vertical_alignment="center")
    fork = codebook.fork_label(row)
    left.markdown(f"**{md_escape(short(question, 80))}** · `{id8(debate_id)}` · {facts}"
                  + (f" · ↩️ {md_escape(fork)}" if fork else ""))
    if right.button(action, key=f"reattach_{id8(debate_id)}", width="stretch", help=help_):
        on_click()


def _watch(debate_id: str) -> None:
    """Watch (and steer) a debate of this server on the Debate page."""
    st.session_state[DEBATE_ID] = debate_id
    st.switch_page(DEBATE_PAGE)


def _view(debate_id: str) -> None:
    """Open a debate another process runs on the Transcripts page (read-only: its transcript as stored)."""
    open_debate(debate_id)
    st.switch_page(codebook.TRANSCRIPTS_PAGE)


def _worker(row: dict) -> str:
    """Who runs a debate and when it last said so: "pid 4242 on host-a · heartbeat 3 s ago"."""
    who = f"pid {row['pid']}" if row.get("pid") else "a process"
    where = f" on {md_escape(row['host'])}" if row.get("host") else ""
    beat = row.get("heartbeat_at") or row.get("updated_at")
    ago = f" · heartbeat {max(0, time.time() - beat):.0f} s ago" if beat else ""
    return f"{who}{where}{ago}"


def render_list() -> None:
    """Stored debates, newest first, filtered by status / protocol, the reading room's filters (tag,
    model, outcome, correctness: `codebook.render_filters`) and full-text search (turns, annotations,
    moderator messages, questions). A fork names its parent, with a button (`parent_<id8>`) to open it."""
    st.subheader("Debates")
    search_col, status_col, protocol_col = st.columns([3, 1, 1])
    search = search_col.text_input("Search turns, annotations, moderator messages and questions", key="search")
    status = status_col.selectbox("Status", [""] + list(DEBATE_STATUSES), key="status_filter",
                                  format_func=lambda s: s or "(any)")
    protocol = protocol_col.selectbox("Protocol", [""] + registry.names("protocol"), key="protocol_filter",
                                      format_func=lambda p: p or "(any)")
    filters = codebook.render_filters()
    store = open_store()
    rows = list_debates(store, status=status or None, protocol=protocol or None, search=search or None, **filters)
    tags = core_codebook.tags_of_debates(store, [row["id"] for row in rows])
    matches = search_matches(store, search, [row["id"] for row in rows]) if search else {}
    colours = codebook.colour_map()
    # The rows scroll in their own box: the page itself stays short, so the page is never scrolled far
    # when Open is clicked, and the opened debate's title (drawn where the list was) is in view.
    height = LIST_HEIGHT_PX if len(rows) > LIST_ROWS_UNBOXED else "content"
    with st.container(key="debate_list", height=height):
        if not rows:
            filtered = search or status or protocol or any(filters.values())
            st.caption("No debates match." if filtered else "No debates stored yet.")
        for row in rows:
            with st.container(key=f"debate_row_{id8(row['id'])}", border=True):
                left, right = st.columns([6, 1])
                outcome = _outcome(store, row)
                fork = codebook.fork_label(row)
                chips = " ".join(codebook.chip(tag, colours) for tag in tags.get(row["id"], []))
                left.markdown(f"**{md_escape(short(row['question'], 120))}**  \n"
                              f"`{id8(row['id'])}` · {when(row.get('created_at'))} · {md_escape(row['protocol'])} · "
                              f"{md_escape(row.get('models') or '')} · **{row['status']}** · "
                              f"outcome: {md_escape(outcome)}" + (f"  \n↩️ {md_escape(fork)}" if fork else "")
                              + (f"  \n{chips}" if chips else ""))
                if row["id"] in matches:
                    with left.container(key=f"match_{id8(row['id'])}"):
                        st.caption(match_line(matches[row["id"]]))
                codebook.parent_button(row, f"parent_{id8(row['id'])}", right, compact=True, on_open=open_debate)
                right.button("Open", key=f"open_{id8(row['id'])}", width="stretch", on_click=open_debate,
                             args=(row["id"],))


def _outcome(store, row: dict) -> str:
    """A listed debate's outcome as its decision card leads with it: the decided answer
    (`polls.decision_answer`, the card's reading), not the whole reply it came from; a debate that
    has not finished reads as its status ("running", "stopped", ...), never "(no decision)"."""
    if row.get("status") != "finished":  # running, stopped, failed, interrupted: never a final-sounding word
        return row.get("status") or "(unknown)"
    if not row.get("answer"):
        return "(no decision)"
    return short(polls.decision_answer(store, row["id"]) or row["answer"], 80)


def match_line(match: dict) -> str:
    """Why a debate is listed under a search, as markdown: where it matched, whose turn or which tag,
    and the snippet with the matched words in bold (all text escaped)."""
    where = match["where"] + (f" · {match['label']}" if match.get("label") else "")
    snippet = "".join(f"**{md_escape(text)}**" if hit else md_escape(text) for text, hit in match["parts"])
    more = f" (+{match['more']} more)" if match.get("more") else ""
    return f"🔎 {md_escape(where)}: {snippet}{more}"


# ----- an opened debate --------------------------------------------------------------------------
def render_debate(debate_id: str) -> None:
    store = open_store()
    record = store.get_debate(debate_id)
    if record is None:
        st.warning(f"Debate {id8(debate_id)} is not in the store.")
        _close()
        return
    view = DebateView.from_store(store, debate_id)
    reveal_key = f"reveal_{debate_id}"
    st.divider()
    title = short(record["question"], 160)
    with st.container(key="debate_title"):
        st.header(md_escape(title))  # a title: escaped, never markup (nothing in it is fetched)
    transcript.render_question(record["question"], shown=title)  # the whole question when the title cuts it
    facts = [f"`{debate_id}`", f"**{record['status']}**", when(record.get("created_at")),
             md_escape(record["protocol"]), md_escape(record["paradigm"])]
    if record.get("parent_id"):
        facts.append(f"↩️ {md_escape(codebook.fork_label(record))}")
    st.markdown(" · ".join(facts))
    codebook.parent_button(record, "open_parent", on_open=open_debate)
    _actions(store, record)
    shown = replay.render(debate_id, view)  # while replaying: the replayed part only (no spoilers)
    transcript.render_decision(shown)
    if shown is view or shown.status != "running":  # a replay reveals the reference once it has ended
        transcript.render_reference(shown, reveal_key)
    notes: dict[str, list[dict]] = {}
    for note in store.annotations(debate_id):
        notes.setdefault(note["turn_id"], []).append(note)
    tags = core_codebook.tags(store)  # the codebook: the annotate pickers' tags and the chips' colours
    passages = coded_passages(store, debate_id)
    with st.container(height=700, key="transcript", autoscroll=shown is not view):
        transcript.render_transcript(shown, extras=lambda turn, k: _turn_tools(record, notes, turn, k, tags),
                                     passages=passages)
    transcript.render_usage(shown)
    plots.render_plots(shown)
    with st.expander("Configuration (YAML)"):
        config = dict(record["config"])
        if config.get("reference") and not st.session_state.get(reveal_key):
            config["reference"] = "(hidden until you reveal the reference answer)"
        st.code(_dump(config), language="yaml")


def coded_passages(store, debate_id: str) -> dict[str, list[tuple[int, int, str]]]:
    """The debate's coded passages this browser may see (its coder name, as kept by the Coding page;
    blind projects show only that coder's own), with a switch and a legend of the codes; turn id ->
    (start, end, colour name) for the transcript. Nothing (no switch) when there are none."""
    found = qda_coding.passages_of_debate(store, debate_id, coder_name() or None, owner_id())
    if not found:
        return {}
    if not st.toggle("Highlight coded passages", value=True, key="show_coded_passages",
                     help="Passages coded in the coding projects that hold this debate (Coding page); in a blind "
                          "project only yours, until its lead reveals them."):
        return {}
    legend = sorted({(p["project"], p["code"], named_colour(p["colour"])) for ps in found.values() for p in ps})
    st.caption("Coded: " + " · ".join(f":{colour}-background[{literal(code)}] ({literal(project)})"
                                       for project, code, colour in legend))
    return {turn: [(p["start"], p["end"], named_colour(p["colour"])) for p in ps] for turn, ps in found.items()}


def _dump(config: dict) -> str:
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


def export_files(store, debate_id: str) -> dict[str, tuple[str, Any, str, str]]:
    """{button key: (label, data, file name, mime)} for the JSON / Markdown / CSV exports and the
    handouts (`handout_md`, `handout_html`: built only when clicked, charts drawn by Chromium)."""
    name = f"debate-{id8(debate_id)}"
    embed = plots.EMBED  # the metrics' embedder (None: SBERT; the report is cached in the database)
    handout_of = functools.partial(handout.handout_file, store.path, debate_id, embed=embed)
    return {
        "export_json": ("Export JSON", json.dumps(exports.export_debate(store, debate_id, embed=embed), indent=2,
                                                  ensure_ascii=False), f"{name}.json", "application/json"),
        "export_md": ("Export Markdown", exports.to_markdown(store, debate_id, embed=embed), f"{name}.md",
                      "text/markdown"),
        "export_csv": ("Export CSV", exports.to_csv(store, debate_id, embed=embed), f"{name}.csv", "text/csv"),
        "handout_md": ("Handout · Markdown", functools.partial(handout_of, "md"), f"{name}-handout.md",
                       "text/markdown"),
        "handout_html": ("Handout · print", functools.partial(handout_of, "html"), f"{name}-handout.html",
                         "text/html"),
    }


def _actions(store, record: dict) -> None:
    debate_id = record["id"]
    running_here = (lv := live.get(debate_id)) is not None and not lv.done
    files = export_files(store, debate_id)
    # One row of buttons as wide as their labels, wrapping when the page is narrow (equal columns cut
    # the labels at 1280x720 and left the resume's column empty for a finished debate).
    row = st.container(horizontal=True, key="debate_actions", gap="small")
    for key, (label, data, file_name, mime) in files.items():
        help_ = "A printable HTML page (print it to PDF from the browser)" if key == "handout_html" else None
        row.download_button(label, data, file_name=file_name, mime=mime, key=key, on_click="ignore",
                            width="content", help=help_)
    if not running_here:
        controls.resume_button(store, debate_id, record["status"], row, key="resume")
    else:
        if row.button("Watch live", key=f"watch_{id8(debate_id)}", width="content"):
            st.session_state[DEBATE_ID] = debate_id
            st.switch_page(DEBATE_PAGE)


def _annotate(debate_id: str, turn_id: str, k: int) -> None:
    """Store the turn's annotation under the session's annotator: a codebook tag picked, or (with
    codebook.NEW_TAG picked) the new tag named in `new_tag_{k}`, which joins the codebook in a colour
    no tag has yet; a new name the codebook already holds is refused (`codebook.turn_tag`)."""
    names = [t["name"] for t in core_codebook.tags(open_store())]
    tag, problem = codebook.turn_tag(st.session_state.get(f"tag_{k}"), st.session_state.get(f"new_tag_{k}"), names)
    if problem:
        st.session_state["annotate_error"] = (k, problem)
        return
    try:
        core_codebook.annotate(open_store(), debate_id, turn_id, tag, st.session_state.get(f"note_{k}") or "",
                              annotator=codebook.annotator())
    except ValueError as exc:  # a tag name the codebook refuses (too long)
        st.session_state["annotate_error"] = (k, str(exc))
        return
    st.session_state[f"tag_{k}"] = None
    st.session_state[f"note_{k}"] = ""
    st.session_state[f"new_tag_{k}"] = ""


def _unannotate(turn_id: str, annotation_id: int) -> None:
    """Delete one annotation (a button's callback: the codebook's counts, drawn after, follow)."""
    core_codebook.delete_annotation(open_store(), annotation_id, turn_id=turn_id)


def _turn_tools(record: dict, notes: dict[str, list[dict]], turn: TurnView, k: int,
                tags: list[dict] | None = None) -> None:
    """Tags on the turn (chips in their codebook colour, each with a button that deletes that one
    annotation), the annotate row (a codebook tag, or "➕ New tag…" and its name: it joins the codebook) and
    the fork button."""
    tags = core_codebook.tags(open_store()) if tags is None else tags
    colours = codebook.colour_map(tags)
    # Each control's name is its own (transcript.TRANSCRIPT_CSS hides the words that make it so from the
    # eye, never from a screen reader): "Delete annotation 2 on turn 3 (tag)", "Annotate turn 3".
    for i, note in enumerate(notes.get(turn.id, []), 1):
        line_col, delete_col = st.columns([12, 1], vertical_alignment="center")
        line_col.markdown(codebook.annotation_line(note, colours))
        delete_col.button(f"Delete annotation {i} on turn {k + 1} ({md_escape(short(note['tag'], 40))})",
                          key=f"unannotate_{note['id']}", icon=":material/delete:", width="stretch",
                          on_click=_unannotate, args=(turn.id, note["id"]),
                          help=f"Delete this annotation ({md_escape(short(note['tag'], 60))}"  # help is markdown
                               + (f": {md_escape(short(note['note'], 60))}" if note.get("note") else "") + ")")
    tag_col, note_col, add_col, fork_col = st.columns([2, 3, 1, 1], vertical_alignment="bottom")
    # No accept_new_options: with it, Enter stored the typed prefix ("=SUM") as a new tag beside the
    # highlighted "=SUM(A1)". Enter picks the highlighted tag; a new one is made only via NEW_TAG.
    picked = tag_col.selectbox(f"Tag for turn {k + 1}", [codebook.NEW_TAG, *(t["name"] for t in tags)], index=None, key=f"tag_{k}",
                               format_func=codebook.turn_tag_label, placeholder="tag…", label_visibility="collapsed")
    if picked == codebook.NEW_TAG:
        tag_col.text_input(f"New tag for turn {k + 1}", key=f"new_tag_{k}", max_chars=60, placeholder="new tag's name",
                           label_visibility="collapsed", help="Joins the codebook when you press Annotate")
    note_col.text_input(f"Note on turn {k + 1}", key=f"note_{k}", placeholder="note (optional)", label_visibility="collapsed")
    add_col.button(f"Annotate *turn {k + 1}*", key=f"annotate_{k}", on_click=_annotate, args=(record["id"], turn.id, k),
                   width="stretch")
    if fork_col.button(f"Fork *at turn {k + 1}*", key=f"fork_{k}", width="stretch", disabled=turn.seq is None,
                       help="Start a new debate that keeps the turns up to this one (you may change the settings)."):
        st.session_state[FORK_REQUEST] = {"parent_id": record["id"], "seq": turn.seq, "turn_index": k,
                                          "config": record["config"]}
        st.switch_page(DEBATE_PAGE)
    error = st.session_state.get("annotate_error")
    if error and error[0] == k:
        st.error(md_escape(error[1]))  # it may quote a tag name
        del st.session_state["annotate_error"]
