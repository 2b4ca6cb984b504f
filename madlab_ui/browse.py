"""The Transcripts page's parts: running debates to reattach, the stored-debate list, an opened
debate (transcript with annotations and fork buttons, plots, config, exports, resume) and replay.

Keys: `reattach_<id8>`, `search`, `status_filter`, `protocol_filter`, `debate_list`, `open_<id8>`,
`tag_{k}` / `note_{k}` / `annotate_{k}` / `fork_{k}` per turn, `export_json` / `export_md` /
`export_csv`, `resume`, `replay_speed` / `replay_start` / `replay_stop`, `reveal_reference`.
What it must not do: run a debate in the script (resume and fork go through `mad_core.live`).
"""
from __future__ import annotations

import json
import math
import time

import streamlit as st
import yaml

from mad_core import live, registry
from mad_core.events import DEBATE_STATUSES, TurnFinished, TurnStarted
from mad_core.view import DebateView, TurnView, stored_events

from . import controls, plots, transcript
from .common import (DEBATE_ID, DEBATE_PAGE, FORK_REQUEST, OPEN_DEBATE, id8, md_escape, open_store, owner_id,
                     short, when)

TAGS = ["sycophancy", "new argument", "flip", "error", "hallucination", "good point", "off topic"]
REPLAY = "replay"  # session key: {"id", "t0", "speed"} while a replay plays


# ----- lists ------------------------------------------------------------------------------------
def render_running() -> None:
    """Debates running in this server, first, each with a button to watch it on the Debate page."""
    running = live.running()
    if not running:
        return
    st.subheader("Running now")
    with st.container(key="running_list", border=True):
        for debate in running:
            view = debate.view()
            left, right = st.columns([5, 1])
            mine = " · started in this browser session" if debate.owner == owner_id() else ""
            question = view.config.get("question") or "(starting…)"
            left.markdown(f"**{md_escape(short(question, 100))}**  \n"
                          f"`{id8(debate.debate_id)}` · {transcript.status_word(view, debate)} · "
                          f"{len(view.turns)} turns{mine}")
            if right.button("Reattach", key=f"reattach_{id8(debate.debate_id)}", width="stretch"):
                st.session_state[DEBATE_ID] = debate.debate_id
                st.switch_page(DEBATE_PAGE)


def render_list() -> None:
    """Stored debates, newest first, filtered by status / protocol and full-text search."""
    st.subheader("Debates")
    search_col, status_col, protocol_col = st.columns([3, 1, 1])
    search = search_col.text_input("Search turns, annotations and questions", key="search")
    status = status_col.selectbox("Status", [""] + list(DEBATE_STATUSES), key="status_filter",
                                  format_func=lambda s: s or "(any)")
    protocol = protocol_col.selectbox("Protocol", [""] + registry.names("protocol"), key="protocol_filter",
                                      format_func=lambda p: p or "(any)")
    rows = open_store().list_debates(status=status or None, protocol=protocol or None, search=search or None)
    with st.container(key="debate_list"):
        if not rows:
            st.caption("No debates match." if (search or status or protocol) else "No debates stored yet.")
        for row in rows:
            with st.container(key=f"debate_row_{id8(row['id'])}", border=True):
                left, right = st.columns([6, 1])
                outcome = short(row.get("answer"), 80) if row.get("answer") else "(no decision)"
                left.markdown(f"**{md_escape(short(row['question'], 120))}**  \n"
                              f"`{id8(row['id'])}` · {when(row.get('created_at'))} · {md_escape(row['protocol'])} · "
                              f"{md_escape(row.get('models') or '')} · **{row['status']}** · "
                              f"outcome: {md_escape(outcome)}")
                if right.button("Open", key=f"open_{id8(row['id'])}", width="stretch"):
                    st.session_state[OPEN_DEBATE] = row["id"]
                    st.session_state.pop(REPLAY, None)
                    st.rerun()


# ----- an opened debate --------------------------------------------------------------------------
def render_debate(debate_id: str) -> None:
    store = open_store()
    record = store.get_debate(debate_id)
    if record is None:
        st.warning(f"Debate {id8(debate_id)} is not in the store.")
        st.session_state.pop(OPEN_DEBATE, None)
        return
    view = DebateView.from_store(store, debate_id)
    reveal_key = f"reveal_{debate_id}"
    st.divider()
    st.header(short(record["question"], 160))
    facts = [f"`{debate_id}`", f"**{record['status']}**", when(record.get("created_at")),
             md_escape(record["protocol"]), md_escape(record["paradigm"])]
    if record.get("parent_id"):
        facts.append(f"fork of `{id8(record['parent_id'])}` after seq {record.get('forked_from_seq')}")
    st.markdown(" · ".join(facts))
    _actions(store, record)
    transcript.render_decision(view)
    transcript.render_reference(view, reveal_key)
    _replay_controls(debate_id)
    replay = st.session_state.get(REPLAY)
    if replay and replay["id"] == debate_id:
        _replay(debate_id)
    else:
        notes: dict[str, list[dict]] = {}
        for note in store.annotations(debate_id):
            notes.setdefault(note["turn_id"], []).append(note)
        with st.container(height=700, key="transcript"):
            transcript.render_transcript(view, extras=lambda turn, k: _turn_tools(record, notes, turn, k))
    transcript.render_usage(view)
    plots.render_plots(view)
    with st.expander("Configuration (YAML)"):
        config = dict(record["config"])
        if config.get("reference") and not st.session_state.get(reveal_key):
            config["reference"] = "(hidden until you reveal the reference answer)"
        st.code(_dump(config), language="yaml")


def _dump(config: dict) -> str:
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


def export_files(store, debate_id: str) -> dict[str, tuple[str, str, str, str]]:
    """{button key: (label, data, file name, mime)} for the JSON / Markdown / CSV exports."""
    name = f"debate-{id8(debate_id)}"
    embed = plots.EMBED  # the metrics' embedder (None: SBERT; the report is cached in the database)
    return {
        "export_json": ("Export JSON", json.dumps(store.export_debate(debate_id, embed=embed), indent=2,
                                                  ensure_ascii=False), f"{name}.json", "application/json"),
        "export_md": ("Export Markdown", store.to_markdown(debate_id, embed=embed), f"{name}.md", "text/markdown"),
        "export_csv": ("Export CSV", store.to_csv(debate_id, embed=embed), f"{name}.csv", "text/csv"),
    }


def _actions(store, record: dict) -> None:
    debate_id = record["id"]
    running_here = (lv := live.get(debate_id)) is not None and not lv.done
    cols = st.columns(4)
    for col, (key, (label, data, file_name, mime)) in zip(cols, export_files(store, debate_id).items()):
        col.download_button(label, data, file_name=file_name, mime=mime, key=key, on_click="ignore",
                            width="stretch")
    if not running_here:
        controls.resume_button(store, debate_id, record["status"], cols[3], key="resume")
    else:
        if cols[3].button("Watch live", key=f"watch_{id8(debate_id)}", width="stretch"):
            st.session_state[DEBATE_ID] = debate_id
            st.switch_page(DEBATE_PAGE)


def _annotate(debate_id: str, turn_id: str, k: int) -> None:
    tag = (st.session_state.get(f"tag_{k}") or "").strip()
    if not tag:
        st.session_state["annotate_error"] = (k, "Pick or type a tag first.")
        return
    open_store().annotate(debate_id, turn_id, tag, st.session_state.get(f"note_{k}") or "")
    st.session_state[f"tag_{k}"] = None
    st.session_state[f"note_{k}"] = ""


def _turn_tools(record: dict, notes: dict[str, list[dict]], turn: TurnView, k: int) -> None:
    """Tags on the turn, the annotate row and the fork button."""
    for note in notes.get(turn.id, []):
        text = f" - {md_escape(note['note'])}" if note.get("note") else ""
        st.markdown(f"🏷️ **{md_escape(note['tag'])}**{text}")
    tag_col, note_col, add_col, fork_col = st.columns([2, 3, 1, 1], vertical_alignment="bottom")
    tag_col.selectbox("Tag", TAGS, index=None, key=f"tag_{k}", accept_new_options=True, placeholder="tag…",
                      label_visibility="collapsed")
    note_col.text_input("Note", key=f"note_{k}", placeholder="note (optional)", label_visibility="collapsed")
    add_col.button("Annotate", key=f"annotate_{k}", on_click=_annotate, args=(record["id"], turn.id, k),
                   width="stretch")
    if fork_col.button("Fork", key=f"fork_{k}", width="stretch", disabled=turn.seq is None,
                       help="Start a new debate that keeps the turns up to this one (you may change the settings)."):
        st.session_state[FORK_REQUEST] = {"parent_id": record["id"], "seq": turn.seq, "turn_index": k,
                                          "config": record["config"]}
        st.switch_page(DEBATE_PAGE)
    error = st.session_state.get("annotate_error")
    if error and error[0] == k:
        st.error(error[1])
        del st.session_state["annotate_error"]


# ----- replay ------------------------------------------------------------------------------------
def _replay_controls(debate_id: str) -> None:
    playing = (st.session_state.get(REPLAY) or {}).get("id") == debate_id
    speed_col, start_col, stop_col = st.columns([3, 1, 1], vertical_alignment="bottom")
    speed_col.slider("Replay speed (turns per second)", 0.25, 4.0, 1.0, step=0.25, key="replay_speed")
    if start_col.button("Replay", key="replay_start", icon="▶️", width="stretch"):
        st.session_state[REPLAY] = {"id": debate_id, "t0": time.time(), "speed": st.session_state["replay_speed"]}
        st.rerun()
    if stop_col.button("End replay", key="replay_stop", disabled=not playing, width="stretch"):
        st.session_state.pop(REPLAY, None)
        st.rerun()


def replay_view(events: list, position: float) -> DebateView:
    """The debate as it stood after `position` turns had finished (the next one partly typed)."""
    finishes = [e for e in events if isinstance(e, TurnFinished)]
    done = min(math.floor(position), len(finishes))
    replayed = {e.turn.id for e in finishes[:done]}
    upcoming = finishes[done].turn if done < len(finishes) else None
    view = DebateView()
    for event in events:
        if isinstance(event, TurnStarted):
            if event.turn_id in replayed or (upcoming is not None and event.turn_id == upcoming.id):
                view.apply(event)
            continue
        if isinstance(event, TurnFinished) and event.turn.id not in replayed:
            break  # everything from here on has not happened yet in the replay
        view.apply(event)
    if upcoming is not None and view.turn(upcoming.id) is not None:
        view.turn(upcoming.id).text = upcoming.content[: int(len(upcoming.content) * (position - done))]
    return view


def _count_turns(events: list) -> int:
    return sum(isinstance(e, TurnFinished) for e in events)


def _replay(debate_id: str) -> None:
    events = stored_events(open_store(), debate_id)

    @st.fragment(run_every=0.5)
    def play() -> None:
        state = st.session_state.get(REPLAY)
        if not state:
            return
        position = (time.time() - state["t0"]) * state["speed"]
        total = _count_turns(events)
        with st.container(height=700, key="transcript", autoscroll=True):
            st.caption(f"Replay: {min(int(position), total)} of {total} turns")
            transcript.render_transcript(replay_view(events, min(position, total)))
        if position >= total + 1:
            st.session_state.pop(REPLAY, None)
            st.rerun(scope="app")

    play()
