"""The presenter view: a debate on a projector, in big type, one column per agent side by side, the
current speaker highlighted, the controls out of sight and on keys: what to show, the replay speed
and the poll's controls in the sidebar (collapsed at first); the keys' buttons in a slim, faded row
at the bottom of the page (a collapsed sidebar does not mount its widgets, so their keys would be dead).

One screen without page scroll at 1280x720 (`assets/presenter.css`): the question, a band with the
decision once shown and the prediction poll (`madlab_ui.poll`: its QR code, link and count while
open, a few short lines of results after the reveal; once the decision is on the screen the poll
takes no more predictions), then the agents, whose text scrolls inside each column's own box; once the
poll on the stage is revealed, the class's answers as a chart beside what the agents had said at that
poll's round take the agents' place (`madlab_ui.join.render_class_panel`; `presenter_class_toggle`,
key A, switches back and forth).

It shows either this session's live debate (st.session_state[DEBATE_ID], see `mad_core.live`; the
current speakers are the agents whose turns are streaming: several at once in a simultaneous round;
each speaker's column says what it does in true words on its caption line (so the heading stays one
line): about to speak, speaking, voting, writing the personas, paused while the Controller holds
the debate; K pauses and resumes it through the Controller) or a stored debate in replay (chosen
by id, or `?replay=<id>` in the URL; the replay is `madlab_ui.replay`'s position: K plays / pauses,
Right / Left step; the current speaker is the agent of the last turn replayed, and nothing the
replay has not reached is drawn).

Keys: `presenter_source`, `presenter_debate_id`, `presenter_pause` (live), the replay's
`presenter_play` / `presenter_next` / `presenter_prev` / `presenter_round` / `presenter_position`
and `presenter_speed`, `presenter_screen` (everything but the sidebar), `presenter_stage`
(question, band, agents), `presenter_question` (holding `presenter_question_short`, or
`presenter_question_long` in smaller type), `presenter_band`, `presenter_agents`,
`presenter_controls` (the keys' row), `presenter_agent_{i}` (one per agent, in config order),
`presenter_text_{i}` (its text box), `presenter_answer_{i}` (its latest answer),
`presenter_speaking_{i}` (inside agent i's column while it speaks: one per speaker, several in a
simultaneous round), `presenter_other` (speakers who are not agents: the judge).
Read-only for whoever may not steer (`madlab_ui.access`): the pause key only for the debate's owner;
a visitor gets neither the sidebar (no replay by id, no poll controls) nor the key, only the debate in its link.
What it must not do: run or change a debate other than through its Controller, or render model
or user text as HTML: the only HTML injected is the static stylesheet `assets/presenter.css`.
"""
from __future__ import annotations

import streamlit as st

from mad_core import live
from mad_core.events import TurnFinished
from mad_core.tasks.answer_types import shown_answer
from mad_core.view import DISCUSSION_KINDS, DebateView, TurnView

from . import access, join, poll, replay, transcript
from .common import DEBATE_ID, ROOT, agent_style, id8, md_escape, model_markdown, open_store, plain_markdown, short

LIVE_REFRESH_S = 0.5
LONG_QUESTION_CHARS = 160  # a longer question (or one of several lines) is drawn in smaller type
TEXT_BOX_PX = 300  # an agent's text box before the stylesheet sizes it to the window (see _agent)
SOURCE = "presenter_source"
CHOSEN = "presenter_debate_id"
FOLLOWER = "presenter_follower"  # session key: the live.Follower of the debate shown live
SOURCES = {"live": "This session's live debate", "replay": "A stored debate (replay)"}
CSS = ROOT / "assets" / "presenter.css"
HELD = {"paused": "⏸️ paused", "stopping": "⏹️ stopping"}  # a live debate held by its controller
# What an agent does in a turn that is not a discussion turn (the header's mark and the column's line).
ACTIVITIES = {"persona": ("✍️", "writing the panel's personas"), "extraction": ("📝", "stating a final answer"),
              "vote": ("🗳️", "voting"), "judge": ("⚖️", "judging"), "challenge": ("❓", "answering a challenge"),
              "summary": ("🧾", "summarising the round"), "moderator": ("🎙️", "moderating"),
              "supervisor": ("🧭", "supervising"), "order": ("🔀", "choosing who speaks next")}


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


def live_speakers(view: DebateView) -> list[TurnView]:
    """The turns streaming now: one, or several at once (a simultaneous round's drafts), each
    speaker's latest (an agent has one call at a time)."""
    return list({turn.agent: turn for turn in view.running_turns}.values())


def activity(turn: TurnView, held: str | None = None) -> str:
    """What the speaker of `turn` is doing, in words that are true now: "⏸️ paused" / "⏹️ stopping"
    while the controller holds the debate, "💭 about to speak" before a discussion turn's first
    word, "🎙️ speaking" after it, and the task of any other turn ("🗳️ voting", "✍️ writing the
    panel's personas", ...)."""
    if held:
        return HELD[held]
    if turn.kind in DISCUSSION_KINDS:
        return "🎙️ speaking" if turn.text or turn.status != "streaming" else "💭 about to speak"
    icon, words = ACTIVITIES.get(turn.kind, ("⚙️", f"working ({turn.kind})"))
    return f"{icon} {words}"


def render_stage(view: DebateView, speakers: list[TurnView], where: str, held: str | None = None) -> None:
    """The status line (`where`; none in replay, whose position line in the keys' row says it) and the
    agents side by side (every speaker's column highlighted, saying what it does: `activity`); `held`
    is "paused" / "stopping" while the live debate's controller holds it."""
    if where:
        st.caption(where)
    if join.class_panel_shown(view.debate_id):  # a revealed poll: the class's answers beside the agents'
        join.render_class_panel(view)
        return
    latest = latest_turns(view)
    agents = view.agents
    speaking = {turn.agent: turn for turn in speakers}
    with st.container(key="presenter_agents"):
        columns = st.columns(max(1, len(agents)), gap="medium")
        for i, (column, agent) in enumerate(zip(columns, agents)):
            with column, st.container(key=f"presenter_agent_{i}", border=True):
                if agent in speaking:
                    with st.container(key=f"presenter_speaking_{i}"):
                        _agent(view, i, latest.get(agent), speaking[agent], held)
                else:
                    _agent(view, i, latest.get(agent), None, held)
    others = [turn for turn in speakers if turn.agent not in agents]
    if others:
        with st.container(key="presenter_other", border=True):
            for turn in others:
                st.markdown(f"### {md_escape(turn.agent)} · {activity(turn, held)}")


def live_where(view: DebateView, word: str) -> str:
    """The live status line: status word and round."""
    rounds = [t.round for t in view.turns if t.kind in DISCUSSION_KINDS]
    return " · ".join([f"{transcript.STATUS_ICONS.get(word, '')} live: {word}"] +
                      ([f"round {max(rounds)}"] if rounds else []))


def _agent(view: DebateView, i: int, turn: TurnView | None, current: TurnView | None, held: str | None) -> None:
    """One agent's column: its name (one line: the heading carries nothing else), persona, a caption
    line with what it does now when it is a speaker (`activity`, in bold) and the round and kind of its
    latest discussion turn, which is in a box that scrolls inside the column (`presenter_text_{i}`:
    the stylesheet sizes it to the window, so a long turn never makes the page taller)."""
    agent = view.agents[i]
    color, avatar, _ = agent_style(agent, view.agents)
    st.markdown(f"### {avatar} :{color}[{md_escape(agent)}]")
    persona = view.personas.get(agent)
    if persona:
        st.caption(md_escape(short(persona, 160)))
    streaming = turn is not None and turn.status == "streaming"
    line = [f"**{activity(current, held)}**"] if current is not None else []
    if turn is not None:
        line += [f"round {turn.round}", md_escape(turn.kind)] + ([held] if streaming and held and current is None else [])
    if line:
        st.caption(" · ".join(line))
    # The newest words stay in view while it streams (autoscroll needs a fixed height: the stylesheet
    # then stretches the box to what the column has left).
    with st.container(height=TEXT_BOX_PX, autoscroll=streaming and not held, border=False,
                      key=f"presenter_text_{i}"):
        if turn is None:  # the speaker's own task before its first discussion turn, else a plain fact
            st.markdown(f"*{activity(current)}{' (paused)' if held == 'paused' else '…'}*" if current is not None
                        else "*(has not spoken yet)*")
        elif turn.text:
            st.markdown(model_markdown(turn.text) + (" ▌" if streaming and not held else ""))
        else:
            st.markdown("*paused before its first word*" if held else "*thinking…*")
    if turn is not None and turn.answer and not streaming:  # at most two lines (the stylesheet)
        with st.container(key=f"presenter_answer_{i}"):
            st.markdown(f"#### Answer: {md_escape(short(shown_answer(turn.text, view.config, turn.answer), 120))}")


def render_question(question: str | None) -> None:
    """The whole question as plain text (`plain_markdown`: a puzzle's "---" lines are text, never a
    rule or a heading) in the question's own scroll box; a long one (over LONG_QUESTION_CHARS or on
    several lines, a Knight-Knave-Spy puzzle) in smaller type (`presenter_question_long`), every line
    of it there: the box scrolls, the agents below keep their place on the screen."""
    text = str(question or "")
    long = transcript.long_question(text, LONG_QUESTION_CHARS, 2)
    with st.container(key="presenter_question_long" if long else "presenter_question_short"):
        st.markdown(plain_markdown(text))


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
        st.error(f"Debate id: {md_escape(str(exc))}")  # it quotes what was typed
        return "replay", None


def _live(debate_id: str, boxes: dict) -> tuple[DebateView, str]:
    """The live debate's agents, refreshed while it runs, and its pause / resume key."""
    debate = live.get(debate_id)
    if debate is None:  # run elsewhere or before this server started: what the store holds
        store = open_store()
        if store.get_debate(debate_id) is None:
            st.warning(f"Debate {id8(debate_id)} is gone.")
            return DebateView(), ""
        view = DebateView.from_store(store, debate_id)
        with boxes["agents"]:
            render_stage(view, [], live_where(view, view.status))
        return view, debate_id
    paused = debate.controller.paused
    active = not debate.done and not debate.controller.stopped
    if access.can_steer(debate):  # the owner's key only
        boxes["keys"].button("Resume" if paused else "Pause", key="presenter_pause", icon="▶️" if paused else "⏸️",
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
        if now != drawn:  # decided, paused, ended: the controls, the decision and the poll's reveal follow
            st.rerun(scope="app")
        render_stage(view, live_speakers(view), live_where(view, now[0]), now[0] if now[0] in HELD else None)

    with boxes["agents"]:
        stage()
    return follower.view, debate_id


def _replay(debate_id: str, boxes: dict) -> DebateView:
    steps = replay.load(debate_id)
    if replay.state(debate_id) is None:
        replay.begin(debate_id, playing=False)
    with st.sidebar:
        speed = st.slider("Replay speed (steps per second)", 0.25, 4.0, 0.5, step=0.25, key="presenter_speed")
    with boxes["keys"]:
        position = replay.render_controls(debate_id, steps, "presenter", speed)
    view = steps.view(position)
    step = steps.step_event(position)
    speaker = view.turn(step.turn.id) if isinstance(step, TurnFinished) else None
    with boxes["agents"]:
        render_stage(view, [speaker] if speaker is not None else [], "")
    return view


def _band(view: DebateView, debate_id: str) -> None:
    """Above the agents, in view on a 1280x720 screen: the decision once shown and the poll (its link
    and count, its results after the reveal), side by side when there are both."""
    decided = view.decision is not None or view.status in ("stopped", "failed", "interrupted")
    polled = poll.current_poll(open_store(), debate_id) is not None
    if decided and polled:
        left, right = st.columns([3, 2], gap="medium")  # the decision's answer gets the room
        with left:
            transcript.render_decision(view)
        with right:
            poll.render_stage(debate_id)
    elif decided:
        transcript.render_decision(view)
    elif polled:
        poll.render_stage(debate_id)


def render() -> None:
    style()
    teacher = access.is_teacher()
    if teacher:
        with st.sidebar:
            st.subheader("Presenter")
            source, debate_id = _choose()
    else:  # a visitor: the debate in its link, nothing to choose
        source, debate_id = "live", st.session_state.get(DEBATE_ID)
        if debate_id is None:
            st.info(access.VISITOR_HOME)
            return
    if debate_id is None:
        st.info("Open the sidebar (top left) to choose what to show: this session's live debate (start one on "
                "the Debate page) or a stored debate to replay, by its id (the Transcripts page lists them)."
                if source == "replay" else "This session has no live debate: start one on the Debate page, or "
                "open the sidebar and choose a stored debate to replay.")
        return
    # One screen, no page scroll (assets/presenter.css): the question, the band (decision, poll), the
    # agents (their text scrolls inside each column), and the keys' buttons in a slim row at the bottom:
    # widgets in a collapsed sidebar are not mounted, so their keyboard shortcuts would not work there.
    with st.container(key="presenter_screen"):
        with st.container(key="presenter_stage"):
            boxes = {"question": st.container(key="presenter_question"), "band": st.container(key="presenter_band"),
                     "agents": st.container()}
        boxes["keys"] = st.container(key="presenter_controls")
    if source == "live":
        view, debate_id = _live(debate_id, boxes)
    else:
        view = _replay(debate_id, boxes)
    if not debate_id:
        return
    with boxes["question"]:
        render_question(view.config.get("question", ""))
    if teacher:
        poll.close_on_decision(debate_id, view)  # the decision is on the screen: no more predictions
    with boxes["band"]:
        _band(view, debate_id)
    if not teacher:
        return
    with boxes["keys"]:
        join.render_class_toggle(debate_id)
    with st.sidebar:
        st.divider()
        poll.render_teacher(debate_id, view)
        join.render_class(debate_id)
