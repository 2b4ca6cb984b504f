"""The debate on the Debate page: drawn once where it is settled, refreshed only where it moves.

Watching must cost what changed, not the whole debate. Each browser session keeps a `LivePage`
for the debate it watches: a `Follower` (a cursor into the live debate's events and its own
folded `DebateView`, see `mad_core.live`) and what the last full run drew.

- A full run draws the settled part once: the decision card, the question, the transcript up to
  the first turn still streaming (finished turns never change), the plots.
- The auto-refreshing fragment draws what moves: the status line, the progress bar with its time
  estimate (`debate_progress`, from `mad_core.live.progress`), the transcript from the first
  streaming turn on, the usage table. (The steering controls are a fragment of their own, see
  `controls`.) A refresh folds the events since the previous one (none:
  nothing is folded, copied or rebuilt) and draws only that tail. It runs every LIVE_REFRESH_S,
  less often as the settled transcript grows (see `refresh_interval`: each run costs the
  browser time in proportion to everything on the page).
- When a new event changes the settled part (a round, vote, decision attempt, decision,
  challenge, personas, the end) or the tail holds `SETTLE_AFTER` items that could settle, the
  fragment asks for one full run. So the plots are redrawn when a round or decision completes,
  not on every tick (the answer timeline of a round still running waits for that run).
- The question is plain text in a box of bounded height (`transcript.render_question`): a long
  puzzle scrolls inside it and never pushes the transcript out of view.
- The transcript box follows the debate (scrolls to the newest text) while the `follow_debate`
  toggle is on; the speaking bubble's header (who speaks) sticks to the top of the box meanwhile
  (`transcript.TRANSCRIPT_CSS`), so a long turn never scrolls the speaker's name out of view.
  Opening a turn's "show prompt" turns it off (a newly opened prompt asks for a full
  run, which draws the box without auto-scroll), so the prompt stays where the reader opened it.

What it must not do: run a debate, compute a protocol, or render model or user text as HTML
(drawing is `transcript`'s).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitInvalidLayoutContextError

from mad_core import live
from mad_core.events import (ErrorOccurred, Event, SteeringApplied, TokenReceived, TurnFinished, TurnRetried,
                             TurnStarted)
from mad_core.view import DebateView

from . import plots, transcript
from .transcript import Walk

LIVE_REFRESH_S = 0.25  # fragment interval: a token waits half of it on average, plus the drawing
# Every script run, a fragment's too, makes Streamlit's frontend revisit every element of the page
# (clearStaleNodes, then React re-renders them): measured here ~1.5 ms of Chromium's main thread
# per settled turn (chat bubble, markdown, prompt expander) on every tick. So the interval grows
# with the settled transcript, keeping Chromium near a fifth of a core instead of all of it
# (200 turns: a tick every ~1.45 s; a short debate stays near LIVE_REFRESH_S).
REFRESH_S_PER_TURN = 0.006
MAX_REFRESH_S = 2.0
SETTLE_AFTER = 8  # items the moving tail may hold, its first one finished, before a full run settles them
SESSION_KEY = "live_page"  # st.session_state[SESSION_KEY]: the LivePage of the watched debate
FOLLOW_KEY = "follow_debate"  # the toggle: the transcript box scrolls to the newest text
TRANSCRIPT_HEIGHT = 640  # px of the transcript box
# Events that change only what moves: the streaming text, a moderator action (appended to the end
# of the timeline), an error (shown in the status line). Turn events too, unless they touch a turn
# already drawn as settled or open a new round (see LivePage.refresh); any other event changes
# the settled part.
_MOVING_ONLY = (TokenReceived, SteeringApplied, ErrorOccurred)
_TURN_EVENTS = (TurnStarted, TurnRetried, TurnFinished)


@dataclass
class Slots:
    """Places the fragment fills that lie outside it: the status line above, the usage table below."""

    status: Any
    usage: Any
    progress: Any = None


class LivePage:
    """One session's view model of the debate it watches (see the module docstring).

    `follower` is None for a debate that runs nowhere in this process (read from the store)."""

    def __init__(self, debate_id: str, view: DebateView | None = None, follower: live.Follower | None = None):
        self.debate_id = debate_id
        self.follower = follower
        self.view: DebateView = follower.view if follower is not None else view
        self.settled = Walk()  # where the settled part drawn by the last full run ends
        self.settled_ids: set[str] = set()  # the turns in it
        self.max_round = max((t.round for t in self.view.turns), default=-1)
        self.changes = 0  # events folded that change the settled part
        self.drawn_changes = 0  # `changes` when the settled part was drawn
        self.in_full_run = False  # the fragment's call inside a full run: already refreshed
        self.ended = False  # the worker had ended when the last refresh began
        self.full_draws = 0  # times the settled part was drawn (tests count them)
        self.open_prompts: set[str] = set()  # the "show prompt" expanders open at the last full run
        self._plan: live.CallPlan | None = None

    @property
    def plan(self) -> live.CallPlan | None:
        """The calls the debate's configuration implies (see `live.plan_calls`); None before it is known."""
        if self._plan is None and self.view.config:
            self._plan = live.plan_calls(self.view.config)
        return self._plan

    @property
    def paused(self) -> bool:
        debate = self.debate
        return debate is not None and not debate.done and debate.controller.paused

    @property
    def debate(self) -> live.LiveDebate | None:
        return self.follower.debate if self.follower is not None else None

    @property
    def running(self) -> bool:
        """Still moving: its worker had not ended at the last refresh and the end is not folded."""
        return self.follower is not None and not self.ended and self.view.status == "running"

    def refresh(self) -> list[Event]:
        """Fold the events since the last refresh; count those that change the settled part."""
        if self.follower is None:
            return []
        ended = self.follower.debate.done  # read first: once it is set, every event is in the log
        events = self.follower.refresh()
        self.ended = self.ended or ended
        for event in events:
            if isinstance(event, _MOVING_ONLY):
                continue
            if not isinstance(event, _TURN_EVENTS) or self._turn_changes_settled(event):
                self.changes += 1
        return events

    def _turn_changes_settled(self, event: Event) -> bool:
        turn_id = event.turn.id if isinstance(event, TurnFinished) else event.turn_id
        turn = self.view.turn(turn_id)
        rnd = turn.round if turn is not None else self.max_round
        if turn_id in self.settled_ids or rnd < self.max_round:
            return True  # a turn drawn as settled (a resume shows it again) or an earlier round's header
        if rnd > self.max_round:
            self.max_round = rnd
            return True  # a new round: the previous round's header and the plots change
        return False

    def stale(self) -> bool:
        """Does the settled part need a full run (it changed, or the tail could settle)?"""
        if self.changes != self.drawn_changes:
            return True
        timeline = self.view.timeline
        if len(timeline) - self.settled.position < SETTLE_AFTER:
            return False
        kind, item = timeline[self.settled.position]
        return kind == "steer" or self.view.turn(item).status != "streaming"

    def settle_point(self) -> int:
        """Timeline position of the first turn still streaming (everything before it is final)."""
        if not self.running:
            return len(self.view.timeline)
        return next((i for i, (kind, item) in enumerate(self.view.timeline)
                     if kind == "turn" and self.view.turn(item).status == "streaming"), len(self.view.timeline))


def current_page(debate_id: str, debate: live.LiveDebate | None, stored: DebateView | None = None) -> LivePage:
    """This session's LivePage of a live debate (kept across runs, refreshed), or one of a stored view
    (the session then lets go of the live debate it followed: a finished one the registry dropped)."""
    if debate is None:
        st.session_state.pop(SESSION_KEY, None)
        return LivePage(debate_id, stored)
    page = st.session_state.get(SESSION_KEY)
    if not isinstance(page, LivePage) or page.debate_id != debate_id or page.debate is not debate:
        page = LivePage(debate_id, follower=live.Follower(debate))
        st.session_state[SESSION_KEY] = page
    page.refresh()
    if not page.running and not debate.done:
        debate.thread.join(timeout=5)  # its end is folded: let the worker finish so the controls say so
    return page


def draw_settled(page: LivePage) -> None:
    """Full run: the transcript up to the settle point (call inside the transcript container)."""
    stop = page.settle_point()
    page.settled = transcript.render_timeline(page.view, Walk(), stop)
    page.settled_ids = {item for kind, item in page.view.timeline[:stop] if kind == "turn"}
    page.drawn_changes = page.changes
    page.in_full_run = True
    page.full_draws += 1


def refresh_interval(page: LivePage) -> float:
    """Seconds between ticks: LIVE_REFRESH_S, more as the settled transcript (drawn on every tick) grows."""
    return min(MAX_REFRESH_S, LIVE_REFRESH_S + REFRESH_S_PER_TURN * len(page.settled_ids))


def format_progress(progress: live.Progress, paused: bool = False, rounds: int | None = None) -> str:
    """The progress bar's words: round of the rounds set (`rounds`, the config's; the cap apart, see
    `transcript.round_words`), phase, calls done and left, ETA in seconds."""
    if paused:
        eta = "ETA: paused"
    elif progress.over_plan:  # more calls than planned: no count left, no ETA (live.progress)
        eta = "ETA: not yet known"
    elif progress.eta_s is None:
        eta = "ETA after the first call"
    else:
        eta = f"ETA ≈ {progress.eta_s:.0f} s"
    where = transcript.round_words(progress.round, rounds, progress.max_rounds)
    return (f"{where[:1].upper()}{where[1:]} · {progress.phase} · "
            f"{progress.calls_done} calls done, "
            f"{'more calls than planned' if progress.over_plan else f'≈ {progress.calls_left} left'} · {eta}")


def render_progress(page: LivePage) -> None:
    """The `debate_progress` bar of a running debate (nothing once it has ended)."""
    if not page.running or page.plan is None:
        return
    debate = page.debate
    progress = live.progress(page.view, page.plan, debate.controller.activity if debate is not None else None)
    with st.container(key="debate_progress"):
        st.progress(progress.fraction, text=format_progress(progress, page.paused, page.view.config.get("rounds")))


def opened_prompts() -> set[str]:
    """The "show prompt" expanders (`prompt_{k}`) open now in this session."""
    return {key for key, value in st.session_state.items() if key.startswith("prompt_") and value is True}


def draw_moving(page: LivePage, slots: Slots) -> None:
    """What moves: the status and steering lines, the progress bar, the transcript after the settled
    part, the usage table."""
    view = page.view
    with slots.status:
        transcript.render_status(view, page.debate)
    if slots.progress is not None:
        slots.progress.empty()  # written on every run: a fragment may only fill a slot the full run wrote
        with slots.progress:
            render_progress(page)
    if view.timeline:
        walk = transcript.render_timeline(view, page.settled.copy(), len(view.timeline), paused=page.paused)
        transcript.finish_transcript(view, walk)
    else:
        st.caption("Waiting for the first turn…")
    with slots.usage:
        transcript.render_usage(view, page.paused)


def tick(page: LivePage, slots: Slots) -> None:
    """The fragment's body: refresh, ask for a full run when the settled part changed or a prompt was
    opened (the transcript box stops following), draw the rest."""
    if page.in_full_run:
        page.in_full_run = False
    else:
        page.refresh()
        opened = opened_prompts()
        page.open_prompts &= opened  # a prompt closed since: opening it again counts as new
        if page.stale() or opened - page.open_prompts:
            st.rerun(scope="app")
    try:
        draw_moving(page, slots)
    except StreamlitInvalidLayoutContextError:
        # The slots outside the fragment belong to a full run that did not reach this fragment
        # (seen rarely while a second fragment, the steering line, refreshes itself): draw anew.
        st.rerun(scope="app")


def follow_toggle(page: LivePage) -> bool:
    """The `follow_debate` toggle (on by default); a prompt opened since the last full run turns it off."""
    opened = opened_prompts()
    if opened - page.open_prompts:
        st.session_state[FOLLOW_KEY] = False
    page.open_prompts = opened
    st.session_state.setdefault(FOLLOW_KEY, True)
    return st.toggle("Follow the debate", key=FOLLOW_KEY,
                     help="Scroll the transcript to the newest text. Opening a prompt turns this off, so the "
                          "prompt stays where you opened it.")


def watch(page: LivePage, state_key: str) -> None:
    """Draw the watched debate: settled parts now, moving parts in an auto-refreshing fragment."""
    view, running = page.view, page.running
    status = st.empty()
    progress = st.empty()
    transcript.render_decision(view)
    if view.status != "running":
        transcript.render_reference(view, state_key)
    transcript.render_question(view.config.get("question", ""))  # plain text in a box of bounded height
    follow = follow_toggle(page) if running else False
    box = st.container(height=TRANSCRIPT_HEIGHT, autoscroll=follow, key="transcript")
    slots = Slots(status, st.empty(), progress)
    plots.render_plots(view)
    with box:
        draw_settled(page)
        if running:
            st.fragment(run_every=refresh_interval(page))(tick)(page, slots)
        else:
            page.in_full_run = False
            draw_moving(page, slots)
