"""The presenter view: a debate on a projector, in big type, one column per agent side by side, the
current speaker highlighted, the controls out of sight and on keys: what to show, the replay speed
and the poll's controls in the sidebar (collapsed at first); the keys' buttons in a slim, faded row
at the bottom of the page (a collapsed sidebar does not mount its widgets, so their keys would be dead).

It shows either this session's live debate (st.session_state[DEBATE_ID], see `mad_core.live`; the
current speaker is the agent whose turn is streaming; K pauses and resumes it through the
Controller) or a stored debate in replay (chosen by id, or `?replay=<id>` in the URL; the replay
is `madlab_ui.replay`'s position: K plays / pauses, Right / Left step; the current speaker is the
agent of the last turn replayed, and nothing the replay has not reached is drawn). The decision
leads the stage once it is shown; the prediction poll (`madlab_ui.poll`) follows the agents.

Keys: `presenter_source`, `presenter_debate_id`, `presenter_pause` (live), the replay's
`presenter_play` / `presenter_next` / `presenter_prev` / `presenter_round` / `presenter_position`
and `presenter_speed`, `presenter_stage`, `presenter_question`, `presenter_controls` (the keys' row), `presenter_agent_{i}` (one per
agent, in config order), `presenter_speaking` (inside the speaker's column), `presenter_other`
(a speaker who is not an agent: the judge).
What it must not do: run or change a debate other than through its Controller, or render model
or user text as HTML: the only HTML injected is the static stylesheet `assets/presenter.css`.
"""
from __future__ import annotations

import streamlit as st

from mad_core import live
from mad_core.view import DISCUSSION_KINDS, DebateView, TurnView

from . import poll, replay, transcript
from .common import DEBATE_ID, ROOT, agent_style, id8, md_escape, open_store, short

LIVE_REFRESH_S = 0.5
LONG_TEXT_CHARS = 450  # a reply longer than this scrolls in a box LONG_TEXT_PX high
LONG_TEXT_PX = 300
SOURCE = "presenter_source"
CHOSEN = "presenter_debate_id"
FOLLOWER = "presenter_follower"  # session key: the live.Follower of the debate shown live
SOURCES = {"live": "This session's live debate", "replay": "A stored debate (replay)"}
CSS = ROOT / "assets" / "presenter.css"


def style() -> None:
    """Our own static stylesheet (no model or user text in it)."""
    st.html(f"<style>{CSS.read_text(encoding='utf-8')}</style>")


# ----- what is shown -----------------------------------------------------------------------------
def latest_turns(view: DebateView) -> dict[str, TurnView]:
    """Each speaker's latest discussion turn (streaming ones included)."""
    latest: dict[str, TurnView] = {}
    for turn in view.turns:
        if turn.kind in DISCUSSION_KINDS:
            latest[turn.agent] = turn
    return latest


def live_speaker(view: DebateView) -> str | None:
    """The agent whose turn is streaming now (the last one started, when several are)."""
    streaming = view.running_turns
    return streaming[-1].agent if streaming else None


def render_stage(view: DebateView, speaker: str | None, where: str) -> None:
    """The question, the decision once shown, the agents side by side (the speaker highlighted)."""
    with st.container(key="presenter_stage"):
        with st.container(key="presenter_question"):
            st.markdown(f"## {md_escape(short(view.config.get('question', ''), 400))}")
        st.caption(where)
        transcript.render_decision(view)  # once shown, the decision leads
        latest = latest_turns(view)
        agents = view.agents
        columns = st.columns(max(1, len(agents)), gap="medium")
        for i, (column, agent) in enumerate(zip(columns, agents)):
            with column, st.container(key=f"presenter_agent_{i}", border=True):
                if agent == speaker:
                    with st.container(key="presenter_speaking"):
                        _agent(view, agent, latest.get(agent), speaking=True)
                else:
                    _agent(view, agent, latest.get(agent), speaking=False)
        if speaker is not None and speaker not in agents:
            with st.container(key="presenter_other", border=True):
                st.markdown(f"### 🎙️ {md_escape(speaker)} is speaking")


def live_where(view: DebateView, word: str) -> str:
    """The live status line: status word and round."""
    rounds = [t.round for t in view.turns if t.kind in DISCUSSION_KINDS]
    return " · ".join([f"{transcript.STATUS_ICONS.get(word, '')} live: {word}"] +
                      ([f"round {max(rounds)}"] if rounds else []))


def _agent(view: DebateView, agent: str, turn: TurnView | None, speaking: bool) -> None:
    color, avatar, _ = agent_style(agent, view.agents)
    mark = " · 🎙️ speaking" if speaking else ""
    st.markdown(f"### {avatar} :{color}[{md_escape(agent)}]{mark}")
    persona = view.personas.get(agent)
    if persona:
        st.caption(md_escape(short(persona, 160)))
    if turn is None:
        st.markdown("*(has not spoken yet)*")
        return
    st.caption(f"round {turn.round} · {md_escape(turn.kind)}")
    # A long reply scrolls inside its column (the newest words in view while it streams); a short one
    # takes only its own room, so the decision and the poll stay on a 1280x720 screen.
    box = st.container(height=LONG_TEXT_PX, autoscroll=turn.status == "streaming", border=False) \
        if len(turn.text) > LONG_TEXT_CHARS else st.container()
    with box:
        if turn.text:
            st.markdown(turn.text + (" ▌" if turn.status == "streaming" else ""))
        else:
            st.markdown("*thinking…*")
    if turn.answer and turn.status != "streaming":
        st.markdown(f"#### Answer: {md_escape(short(turn.answer, 120))}")


# ----- sources ---------------------------------------------------------------------------------
def _follower(debate: live.LiveDebate) -> live.Follower:
    follower = st.session_state.get(FOLLOWER)
    if not isinstance(follower, live.Follower) or follower.debate is not debate:
        follower = live.Follower(debate)
        st.session_state[FOLLOWER] = follower
    return follower


def _choose() -> tuple[str, str | None]:
    """(source, debate id or None), chosen in the sidebar; `?replay=<id>` in the URL picks a replay."""
    asked = st.query_params.get("replay")
    if asked and CHOSEN not in st.session_state:
        st.session_state[CHOSEN] = asked
        st.session_state[SOURCE] = "replay"
    default = "live" if st.session_state.get(DEBATE_ID) else "replay"
    st.session_state.setdefault(SOURCE, default)
    st.radio("Show", list(SOURCES), key=SOURCE, format_func=SOURCES.get)
    if st.session_state[SOURCE] == "live":
        return "live", st.session_state.get(DEBATE_ID)
    typed = st.text_input("Debate id (or its first characters)", key=CHOSEN).strip()
    if not typed:
        return "replay", None
    try:
        return "replay", open_store().find_debate_id(typed)
    except LookupError as exc:
        st.error(f"Debate id: {exc}")
        return "replay", None


def _live(debate_id: str, stage_box, keys_box) -> tuple[DebateView, str]:
    """The live debate's stage, refreshed while it runs, and its pause / resume key."""
    debate = live.get(debate_id)
    if debate is None:  # run elsewhere or before this server started: what the store holds
        store = open_store()
        if store.get_debate(debate_id) is None:
            st.warning(f"Debate {id8(debate_id)} is gone.")
            return DebateView(), ""
        view = DebateView.from_store(store, debate_id)
        with stage_box:
            render_stage(view, None, live_where(view, view.status))
        return view, debate_id
    paused = debate.controller.paused
    active = not debate.done and not debate.controller.stopped
    keys_box.button("Resume" if paused else "Pause", key="presenter_pause", icon="▶️" if paused else "⏸️",
                    shortcut="K", disabled=not active, type="tertiary",
                    on_click=debate.controller.resume if paused else debate.controller.pause,
                    help="Pause or resume the debate (key K).")
    follower = _follower(debate)
    follower.refresh()
    drawn = (transcript.status_word(follower.view, debate), follower.view.decision is not None)

    @st.fragment(run_every=LIVE_REFRESH_S if active else None)
    def stage() -> None:
        follower.refresh()
        view = follower.view
        now = (transcript.status_word(view, debate), view.decision is not None)
        if now != drawn:  # decided, paused, ended: the controls (pause, the poll's reveal) follow
            st.rerun(scope="app")
        render_stage(view, live_speaker(view), live_where(view, now[0]))

    with stage_box:
        stage()
    return follower.view, debate_id


def _replay(debate_id: str, stage_box, keys_box) -> DebateView:
    steps = replay.load(debate_id)
    if replay.state(debate_id) is None:
        replay.begin(debate_id, playing=False)
    with st.sidebar:
        speed = st.slider("Replay speed (steps per second)", 0.25, 4.0, 0.5, step=0.25, key="presenter_speed")
    with keys_box:
        position = replay.render_controls(debate_id, steps, "presenter", speed)
    view = steps.view(position)
    with stage_box:
        render_stage(view, steps.speaker(position), steps.label(position))
    return view


def render() -> None:
    style()
    with st.sidebar:
        st.subheader("Presenter")
        source, debate_id = _choose()
    if debate_id is None:
        st.info("Open the sidebar (top left) to choose what to show: this session's live debate (start one on "
                "the Debate page) or a stored debate to replay, by its id (the Transcripts page lists them)."
                if source == "replay" else "This session has no live debate: start one on the Debate page, or "
                "open the sidebar and choose a stored debate to replay.")
        return
    # The stage on top, the poll below it, the keys' buttons in a slim row at the bottom: widgets in a
    # collapsed sidebar are not mounted, so their keyboard shortcuts would not work there.
    stage_box, poll_box = st.container(), st.container()
    keys_box = st.container(key="presenter_controls")
    if source == "live":
        view, debate_id = _live(debate_id, stage_box, keys_box)
    else:
        view = _replay(debate_id, stage_box, keys_box)
    if not debate_id:
        return
    with poll_box:
        poll.render_stage(debate_id)
    with st.sidebar:
        st.divider()
        poll.render_teacher(debate_id, view)
