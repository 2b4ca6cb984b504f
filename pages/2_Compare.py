"""Compare: pick stored debates (`compare_ids`), then one of two modes (`compare_mode`):

- "Overview": their decisions side by side (`compare_<id8>`) and their diversity / entropy /
  agreement per round overlaid (`compare_diversity`, `compare_entropy`, `compare_agreement`);
- "Side by side": two of the chosen debates (`side_left`, `side_right`) read in two columns
  (`side_by_side`): their decisions on top (`side_decision_left` / `side_decision_right`), then
  round by round (`side_round_{r}`), row by row (`side_row_{r}_{i}`, laid out by madlab_ui/compare.py:
  by phase, then agent, so a row never pairs two agents) every turn (`side_left_turn_{k}` /
  `side_right_turn_{k}`, k = index in the debate's turns) with its annotations as tag chips in their
  codebook colours, each moderator action where it was taken (`side_left_steer_{j}`, j = index in the
  debate's steering) and each round's ballots in one compact box (`side_left_votes_{r}`, one line a voter).

A fork says whose fork it is everywhere it is listed (picker, columns), with a button that opens
the parent on the Transcripts page (`compare_parent_<id8>`, `side_parent_left` / `side_parent_right`).
What it must not do: render model or user text as HTML (markdown with every label escaped, tag
chips through codebook.chip), or compute metrics itself (plots.py's series).
"""
from __future__ import annotations

import functools

import streamlit as st

from mad_core import figures, handout
from mad_core.store import list_debates
from mad_core.view import DebateView
from madlab_ui import codebook, compare, plots, transcript
from madlab_ui.common import MODERATOR_AVATAR, agent_style, id8, md_escape, model_markdown, open_store, short
from madlab_ui.page import page_setup

OVERVIEW, SIDE_BY_SIDE = "Overview", "Side by side"

page_setup("Compare")
st.title("Compare debates")
store = open_store()
debates = {row["id"]: row for row in list_debates(store)}


def label(debate_id: str) -> str:
    row = debates[debate_id]
    fork = codebook.fork_label(row)
    return (f"{id8(debate_id)} · {short(row['question'], 60)} · {row['protocol']} · {row['status']}"
            + (f" · {fork}" if fork else ""))


chosen = st.multiselect("Debates", list(debates), key="compare_ids", placeholder="pick two or more debates",
                        format_func=label)
if not chosen:  # (no st.stop(): it would throw away a click queued while this run drew, app.py says why)
    st.info("Pick debates to compare their decisions and how their answers evolved, or two annotated "
            "debates to read side by side.")
mode = st.radio("View", [OVERVIEW, SIDE_BY_SIDE], key="compare_mode", horizontal=True,
                help="Side by side: two debates' transcripts in two columns, aligned by round, with their tags"
                ) if chosen else None


def fork_note(debate_id: str, key: str) -> None:
    """The fork's parent link (a caption and a button), nothing for a debate that is no fork."""
    fork = codebook.fork_label(debates[debate_id])
    if fork:
        st.caption(f"↩️ {md_escape(fork)}")
        codebook.parent_button(debates[debate_id], key, switch=True)


def decision_lines(view: DebateView) -> None:
    """The decided answer (short), who won and how; "no decision" otherwise."""
    if view.decision is None:
        st.caption(f"no decision · status {view.status}")
        return
    answer, _ = transcript.decision_texts(view)
    st.markdown(f"**Decision:** {md_escape(short(answer, 200))}" if answer else "**Decision:** (empty answer)")
    notes = " · forced" if view.decision.forced else ""
    notes += " · fallback" if view.decision.fallback else ""
    st.caption(f"round {view.decision.round} · winner {md_escape(handout.winner_words(view) or '-')}{notes}")


def overview(views: dict[str, DebateView]) -> None:
    names = {d: f"{id8(d)} ({debates[d]['protocol']})" for d in views}
    with st.container(key="compare_decisions"):
        for column, (debate_id, view) in zip(st.columns(len(views)), views.items()):
            with column, st.container(border=True, key=f"compare_{id8(debate_id)}"):
                st.markdown(f"**{md_escape(names[debate_id])}**")
                st.caption(md_escape(short(view.config.get("question"), 160)))
                st.caption(f"{md_escape(view.config.get('paradigm'))} · {len(view.agents)} agents · "
                           f"status {view.status}")
                fork_note(debate_id, f"compare_parent_{id8(debate_id)}")
                # the decided answer escaped: "1. Not a number. 2. ..." is text, never a Markdown list
                decision_lines(view)
                transcript.render_usage_line(view)

    for key, title, ytitle, series in (
        ("compare_diversity", "Answer diversity (SBERT)", "diversity", plots.diversity_series),
        ("compare_entropy", "Entropy of answers", "bits", plots.entropy_series),
        ("compare_agreement", "Agreement (share holding the most common answer)", "share", plots.agreement_series),
    ):
        with st.spinner(f"Computing {title.lower()}…"):
            data = {names[d]: series(v) for d, v in views.items()}
        fig = plots.line_figure(data, title, ytitle) if any(data.values()) else None
        plots.chart(key, title, fig)


def side_turn(view: DebateView, k: int, notes: dict[str, list[dict]], colours: dict[str, str], side: str) -> None:
    """One turn in a side-by-side column: who, what kind, its text and its tags."""
    turn = view.turns[k]
    colour, avatar, _ = agent_style(turn.agent, view.agents)
    with st.container(key=f"side_{side}_turn_{k}", border=True):
        st.markdown(f"{avatar} :{colour}[**{md_escape(turn.agent)}**] · {md_escape(turn.kind)}"
                    + (f" · {transcript.FROM_PARENT}" if view.from_parent(turn) else ""))
        if turn.text:
            st.markdown(model_markdown(turn.text))  # its single line breaks kept
        else:
            st.caption(f"({md_escape(turn.status)}{': ' + md_escape(turn.error) if turn.error else ''})")
        for note in notes.get(turn.id, []):
            st.markdown(codebook.annotation_line(note, colours))


def side_steer(view: DebateView, j: int, side: str) -> None:
    """A moderator action in its debate's column: a message in full, another action in a word."""
    event = view.steering[j]
    with st.container(key=f"side_{side}_steer_{j}", border=True):
        if event.action == "message":
            to = ", ".join(event.targets) if event.targets else "all agents"
            st.markdown(f"{MODERATOR_AVATAR} **Moderator → {md_escape(to)}**"
                        + (f" · {transcript.FROM_PARENT}" if view.from_parent(event) else ""))
            st.markdown(model_markdown(event.message))
        else:
            st.caption(f"{MODERATOR_AVATAR} Moderator: {md_escape(event.action.replace('_', ' '))}")


def side_ballots(view: DebateView, rnd: int, notes: dict[str, list[dict]], colours: dict[str, str],
                 side: str) -> None:
    """The round's ballots in one compact box: one line per voter, in the votes chart's words
    ("Agent 1 → Solution 2 (Agent 2) → no": whom it voted for and what that solution answered)."""
    tally = next((item for item in figures.vote_rounds(view, plots.debate_metrics(view)) if item["round"] == rnd),
                 None)
    describe = functools.partial(compare.ballot_words, tally=tally, describe=transcript.format_ballot)
    with st.container(key=f"side_{side}_votes_{rnd}", border=True):
        st.caption("Ballots")
        for voter, said, turn_ids in compare.ballot_lines(view, rnd, describe, transcript.vote_problem):
            colour, _, _ = agent_style(voter, view.agents)
            st.markdown(f":{colour}[**{md_escape(voter)}**] → {md_escape(short(said, 120))}")
            for note in (n for turn_id in turn_ids for n in notes.get(turn_id, [])):
                st.markdown(codebook.annotation_line(note, colours))


def side_cell(view: DebateView, item: compare.Item, notes: dict[str, list[dict]], colours: dict[str, str],
              side: str) -> None:
    if item.kind == "turn":
        side_turn(view, item.index, notes, colours, side)
    elif item.kind == "steer":
        side_steer(view, item.index, side)
    else:
        side_ballots(view, item.index, notes, colours, side)


def side_by_side() -> None:
    if len(chosen) < 2:
        st.info("Pick two debates above to read them side by side.")
        return
    for key in ("side_left", "side_right"):
        if key in st.session_state and st.session_state[key] not in chosen:  # no longer picked above
            del st.session_state[key]
    pick_left, pick_right = st.columns(2)
    left = pick_left.selectbox("Left", chosen, index=0, key="side_left", format_func=label)
    right = pick_right.selectbox("Right", chosen, index=1, key="side_right", format_func=label)
    pair = {"left": left, "right": right}
    views = {side: DebateView.from_store(store, d) for side, d in pair.items()}
    notes: dict[str, dict[str, list[dict]]] = {side: {} for side in pair}
    for side, debate_id in pair.items():
        for note in store.annotations(debate_id):
            notes[side].setdefault(note["turn_id"], []).append(note)
    colours = codebook.colour_map()
    with st.container(key="side_by_side"):
        for column, (side, debate_id) in zip(st.columns(2), pair.items()):
            with column, st.container(border=True, key=f"side_decision_{side}"):
                st.markdown(f"**{id8(debate_id)}** · {md_escape(debates[debate_id]['protocol'])} · "
                            f"{md_escape(views[side].config.get('paradigm'))}")
                st.caption(md_escape(short(views[side].config.get("question"), 160)))
                fork_note(debate_id, f"side_parent_{side}")
                decision_lines(views[side])
        for rnd, rows in compare.side_rows(views).items():
            with st.container(key=f"side_round_{rnd}"):
                st.markdown(f"#### {'Independent drafts / setup' if rnd == 0 else f'Round {rnd}'}")
                for i, row in enumerate(rows):
                    with st.container(key=f"side_row_{rnd}_{i}"):
                        for column, side in zip(st.columns(2), pair):
                            if side in row:
                                with column:
                                    side_cell(views[side], row[side], notes[side], colours, side)

if mode == SIDE_BY_SIDE:
    side_by_side()
elif chosen:
    overview({d: DebateView.from_store(store, d) for d in chosen})
