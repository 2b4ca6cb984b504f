"""Replay of a stored debate as a position: the number of steps shown, kept in session state.

A step is a finished turn, or the decision (the first decision event after the last finished
turn, so a class can pause between the last ballot and the verdict). Position p shows the
debate as it stood after p steps: `Steps.view(p)` folds only the events before step p + 1,
so the decision card, the votes of later rounds, the metrics and the plots drawn from that view
show nothing the replay has not reached (no spoilers). Playing advances the position one step
every 1/speed seconds (a small `run_every` fragment that asks for a full run); pausing leaves
the position where it is, and Next / Previous / the round picker move it by hand.

Keys (with the page's prefix, `replay` on the Transcripts page, `presenter` on the presenter
page): `{p}_play` (Play / Pause, shortcut K), `{p}_next` (shortcut Right), `{p}_prev`
(shortcut Left), `{p}_round` (jump to a round or to the decision), `{p}_position` (where the
replay is). The Transcripts page adds `replay_speed`, `replay_start` and `replay_stop`.
Session state: st.session_state[REPLAY] = {"id", "pos", "playing", "due"}.
What it must not do: run or change a debate, or render model text as HTML.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import streamlit as st

from mad_core.events import DecisionAttempted, DecisionReached, Event, TurnFinished, TurnStarted
from mad_core.view import DebateView, stored_events

from .common import md_escape, open_store

REPLAY = "replay"  # session key: {"id", "pos", "playing", "due"} while a debate is replayed
SPEED = "replay_speed"  # steps per second (the Transcripts page's slider; the presenter has its own)
DECISION = -1  # the round picker's value for the decision step
SHORTCUTS = {"play": "K", "next": "Right", "prev": "Left"}


@dataclass
class Steps:
    """A stored debate's events cut into replay steps (see the module docstring)."""

    events: list[Event]
    starts: list[int] = field(default_factory=list)  # index in `events` where each step begins
    _whole: DebateView | None = field(default=None, repr=False, compare=False)  # every event folded

    @classmethod
    def of(cls, events: list[Event]) -> "Steps":
        starts: list[int] = []
        decided = False  # a decision step has begun since the last finished turn
        for i, event in enumerate(events):
            if isinstance(event, TurnFinished):
                starts.append(i)
                decided = False
            elif isinstance(event, DecisionReached) or (isinstance(event, DecisionAttempted) and event.reached):
                if not decided:
                    starts.append(i)
                    decided = True
        return cls(events, starts)

    def __len__(self) -> int:
        return len(self.starts)

    def clamp(self, position: int) -> int:
        return max(0, min(int(position), len(self.starts)))

    def view(self, position: int) -> DebateView:
        """The debate after `position` steps: only the events before the next step are folded; a turn
        appears once it has finished (concurrent turns started earlier stay unseen until then)."""
        position = self.clamp(position)
        shown = self.events[: self.starts[position]] if position < len(self.starts) else self.events
        finished = {e.turn.id for e in shown if isinstance(e, TurnFinished)}
        view = DebateView()
        for event in shown:
            if isinstance(event, TurnStarted) and event.turn_id not in finished:
                continue
            view.apply(event)
        return view

    def step_event(self, position: int) -> Event | None:
        """The event that the `position`-th step (1-based) revealed; None at the start."""
        position = self.clamp(position)
        return self.events[self.starts[position - 1]] if position else None

    def speaker(self, position: int) -> str | None:
        """The agent of the last turn replayed (the presenter highlights it)."""
        event = self.step_event(position)
        return event.turn.agent if isinstance(event, TurnFinished) else None

    def round_at(self, position: int) -> int | None:
        """The round the replay stands in: the last step's round, DECISION once the decision is shown."""
        event = self.step_event(position)
        if event is None:
            return None
        return event.turn.round if isinstance(event, TurnFinished) else DECISION

    def rounds(self) -> list[int]:
        """The rounds with turns, in order, then DECISION if the debate reached one."""
        found: list[int] = []
        for start in self.starts:
            event = self.events[start]
            rnd = event.turn.round if isinstance(event, TurnFinished) else DECISION
            if rnd not in found:
                found.append(rnd)
        return [r for r in found if r != DECISION] + ([DECISION] if DECISION in found else [])

    def position_of(self, rnd: int) -> int:
        """The position that shows round `rnd`'s first turn (or the decision)."""
        for k in range(1, len(self.starts) + 1):
            if self.round_at(k) == rnd:
                return k
        return 0

    def label(self, position: int) -> str:
        """Where the replay stands, in words (agent labels escaped for markdown)."""
        position = self.clamp(position)
        event = self.step_event(position)
        where = f"step {position} of {len(self.starts)}"
        if event is None:
            return f"Replay: {where} · nothing shown yet"
        if isinstance(event, TurnFinished):
            turn = event.turn
            return (f"Replay: {where} · {md_escape(turn.agent)} · {md_escape(turn.kind)} · "
                    f"{md_escape(self.round_name(turn.round))}")
        return f"Replay: {where} · the decision"

    def round_name(self, rnd: int | None) -> str:
        """A round's name for the picker and the position line: "Decision", else the transcript's
        heading (`DebateView.round_title`: round 0 is "Setup" when nobody drafted in it, the persona
        phase of a debate without drafting). Read from the whole debate: whether round 0 holds
        drafts, and a round's topic, are the configuration's, not a spoiler."""
        if rnd == DECISION:
            return "Decision"
        if self._whole is None:
            self._whole = self.view(len(self.starts))
        return self._whole.round_title(rnd)


def load(debate_id: str) -> Steps:
    return Steps.of(stored_events(open_store(), debate_id))


# ----- state -------------------------------------------------------------------------------------
def state(debate_id: str) -> dict | None:
    """This session's replay of `debate_id`, or None when it is not being replayed."""
    current = st.session_state.get(REPLAY)
    return current if current and current.get("id") == debate_id else None


def begin(debate_id: str, playing: bool = True, speed: float | None = None) -> None:
    """Replay `debate_id` from its start (the first step comes one interval later)."""
    speed = st.session_state.get(SPEED, 1.0) if speed is None else speed
    st.session_state[REPLAY] = {"id": debate_id, "pos": 0, "playing": playing,
                                "due": time.monotonic() + _interval(speed)}


def end() -> None:
    st.session_state.pop(REPLAY, None)


def _interval(speed: float) -> float:
    return 1.0 / max(0.05, float(speed or 1.0))


def _move(debate_id: str, steps: Steps, position: int, speed: float) -> None:
    """Set the position; reaching the end stops playing."""
    current = state(debate_id)
    if current is None:
        return
    current["pos"] = steps.clamp(position)
    current["due"] = time.monotonic() + _interval(speed)
    if current["pos"] >= len(steps):
        current["playing"] = False


def _step(debate_id: str, steps: Steps, delta: int, speed: float) -> None:
    """One step on or back from where the replay stands now (not from where the button was drawn:
    two quick presses of a key make two steps)."""
    current = state(debate_id)
    if current is not None:
        _move(debate_id, steps, current["pos"] + delta, speed)


def _toggle(debate_id: str, steps: Steps, speed: float) -> None:
    current = state(debate_id)
    if current is None:
        return
    if not current["playing"] and current["pos"] >= len(steps):
        current["pos"] = 0  # Play at the end starts over
    current["playing"] = not current["playing"]
    current["due"] = time.monotonic() + _interval(speed)


def _jump(debate_id: str, steps: Steps, key: str, speed: float) -> None:
    chosen = st.session_state.get(key)
    if chosen is not None:
        _move(debate_id, steps, steps.position_of(chosen), speed)


# ----- controls ----------------------------------------------------------------------------------
def render_controls(debate_id: str, steps: Steps, prefix: str, speed: float) -> int:
    """Play / Pause, Previous, Next, the round picker and the position line; returns the position.

    The round picker shows the round the replay stands in (set before the widget is drawn)."""
    current = state(debate_id)
    position = steps.clamp(current["pos"])
    playing = current["playing"]
    round_key = f"{prefix}_round"
    st.session_state[round_key] = steps.round_at(position)
    play_col, prev_col, next_col, round_col = st.columns([1, 1, 1, 2], vertical_alignment="bottom")
    play_col.button("Pause" if playing else "Play", key=f"{prefix}_play", icon="⏸️" if playing else "▶️",
                    shortcut=SHORTCUTS["play"], width="stretch", on_click=_toggle, args=(debate_id, steps, speed),
                    help="Pause or resume the replay (key K).")
    prev_col.button("Previous", key=f"{prefix}_prev", icon="⏮️", shortcut=SHORTCUTS["prev"], width="stretch",
                    disabled=position <= 0, on_click=_step, args=(debate_id, steps, -1, speed),
                    help="One step back (Left arrow).")
    next_col.button("Next", key=f"{prefix}_next", icon="⏭️", shortcut=SHORTCUTS["next"], width="stretch",
                    disabled=position >= len(steps), on_click=_step, args=(debate_id, steps, 1, speed),
                    help="One step on: the next turn, or the decision (Right arrow).")
    round_col.selectbox("Jump to", steps.rounds(), key=round_key, format_func=steps.round_name,
                        placeholder="(start)", on_change=_jump, args=(debate_id, steps, round_key, speed))
    with st.container(key=f"{prefix}_position"):
        mode = "playing" if playing else "at the end" if position >= len(steps) else "paused"
        st.caption(f"{steps.label(position)} · {mode}")
    if playing:
        _ticker(debate_id, steps, speed)
    return position


def _ticker(debate_id: str, steps: Steps, speed: float) -> None:
    """While playing: one step every 1/speed seconds, then a full run (the decision card and the
    plots outside this fragment follow the position)."""
    interval = _interval(speed)

    @st.fragment(run_every=interval)
    def tick() -> None:
        current = state(debate_id)
        if current is None or not current["playing"] or time.monotonic() < current["due"] - 0.05:
            return  # paused, or this run is the full run that drew the last step
        _step(debate_id, steps, 1, speed)
        st.rerun(scope="app")

    tick()


def render(debate_id: str, view: DebateView) -> DebateView:
    """The Transcripts page's replay: speed, Replay / End replay and, while replaying, the controls.

    Returns the view to draw: the replayed prefix while this debate is replayed, else `view`."""
    replaying = state(debate_id) is not None
    speed_col, start_col, stop_col = st.columns([3, 1, 1], vertical_alignment="bottom")
    speed = speed_col.slider("Replay speed (steps per second)", 0.25, 4.0, 1.0, step=0.25, key=SPEED)
    start_col.button("Replay", key="replay_start", icon="▶️", width="stretch", on_click=begin, args=(debate_id,),
                     help="Replay from the first turn; the decision and the plots appear when the replay reaches them.")
    stop_col.button("End replay", key="replay_stop", disabled=not replaying, width="stretch", on_click=end)
    if state(debate_id) is None:
        return view
    steps = load(debate_id)
    return steps.view(render_controls(debate_id, steps, "replay", speed))
