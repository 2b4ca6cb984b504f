"""Rendering a `DebateView`: status line, chat bubbles by round, votes, decision card, usage.

Keys follow the UI contract: `debate_status`, `round_{r}`, `turn_{k}` (k = index in
`view.turns`), `prompt_{k}`, `votes_{r}`, `steer_{j}` (j = index in `view.steering`),
`decision_card` (holding `decision_answer`, after the reference's reveal `decision_agreement`,
the `decision_full_text` and `decision_solutions` expanders), `reveal_reference` /
`reference_revealed`, `usage`.
Model and user text is rendered with st.markdown / st.text (HTML is never rendered), its single
line breaks kept, its images as words and its dollars literal (`common.model_markdown`: nothing a
model or a user wrote makes the browser fetch anything); labels inside our own markup and table
cells are escaped (`md_escape`). The question is plain text in a box of its own
(`render_question`: at most ~30 % of the window high, scrolling inside). Inside the transcript box
each bubble's header (`turn_head_{k}`: who speaks) sticks to the top of the box while its text
scrolls, so a reader following a long turn keeps the speaker's name in view (`TRANSCRIPT_CSS`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import streamlit as st

from mad_core import handout
from mad_core.metrics.report import estimated_cost, format_dollars
from mad_core.config import PERSON
from mad_core.view import DISCUSSION_KINDS, DebateView, TurnView

from . import access
from .common import MODERATOR_AVATAR, agent_style, md_escape, model_markdown, plain_markdown, short
from .highlight import highlighted
from .steering_words import steering_note  # the controls' steering words (a leaf: no circle)

TurnExtras = Callable[[TurnView, int], None]
Passages = Mapping[str, list[tuple[int, int, str]]]  # turn id -> coded passages (start, end, colour name)
STATUS_ICONS = {"running": "🟢", "paused": "⏸️", "stopping": "⏹️", "finished": "✅", "stopped": "⏹️",
                "failed": "❌", "interrupted": "⚠️"}
# A turn's mark in its bubble header; a streaming turn of a paused debate reads "paused" (its stream
# waits before its next piece), never "streaming".
FROM_PARENT = "↩️ from the parent"  # a fork's copied turn or message (DebateView.from_parent)
_TURN_MARKS = {"streaming": "✍️ streaming", "paused": "⏸️ paused", "failed": "❌ failed",
               "interrupted": "⏹️ interrupted"}
# A seat's turn (TurnView.seat) is marked in its header; the caption under it says the rest (its error/note).
_SEAT_MARKS = {"person": "🧑 typed by a person", "stand-in": "🤖 stand-in (time limit)", "skipped": "⏭️ skipped"}
QUESTION_KEY = "debate_question"  # the question's box on the Debate and Transcripts pages
LONG_QUESTION_CHARS, LONG_QUESTION_LINES = 300, 4  # a longer question gets a bordered box 30 % of the window high
# Our own static stylesheet (no model or user text in it): the question's box is at most ~30 % of the
# window high and scrolls inside; a bubble's header sticks to the top of the transcript box.
TRANSCRIPT_CSS = """<style>
.st-key-debate_question { max-height: 30dvh; overflow-y: auto; flex-shrink: 0; scrollbar-width: thin; }
.st-key-debate_question:has(.st-key-debate_question_long) {
  height: 30dvh; border: 1px solid rgba(49, 51, 63, 0.2); border-radius: 0.5rem; padding: 0.25rem 0.75rem;
}
/* The Debate page's transcript box (sized to the window in app.py) leaves a long question's box its room. */
[data-testid="stMain"]:has(.st-key-debate_question_long) div:has(> .st-key-transcript) {
  --box: max(200px, calc(70dvh - 290px));
}
.st-key-debate_question [data-testid="stMarkdownContainer"] p { overflow-wrap: anywhere; }
/* No invisible stop for the keyboard: Streamlit's "link to heading" anchors show only under the mouse. */
[data-testid="stHeaderActionElements"] a { display: none; }
/* Seen by screen readers only: the words that make a repeated control's name its own ("show prompt of
   turn 3", "Annotate turn 3", a delete icon's "Delete annotation 1 on turn 3 (tag)"). */
.st-key-transcript [class*="st-key-unannotate_"] button [data-testid="stMarkdownContainer"],
.st-key-transcript [class*="st-key-annotate_"] button em, .st-key-transcript [class*="st-key-fork_"] button em,
.st-key-transcript [class*="st-key-prompt_"] summary em {
  position: absolute !important; width: 1px !important; height: 1px !important; overflow: hidden;
  clip-path: inset(50%); white-space: nowrap;
}
/* A bubble's header (its own wrapper: the sticky box must be a child of the whole bubble) sticks to the
   top edge of the transcript box, over the box's padding, while the rest of the bubble scrolls under it. */
.st-key-transcript [data-testid="stLayoutWrapper"]:has(> [class*="st-key-turn_head_"]) {
  position: sticky; top: -1rem; z-index: 2; background-color: rgb(255, 255, 255);
  padding-top: 1rem; margin-top: -1rem; box-shadow: 0 0.4rem 0.4rem -0.4rem rgba(0, 0, 0, 0.25);
}
</style>"""


def status_word(view: DebateView, debate=None) -> str:
    """running / paused / stopping / finished / stopped / failed / interrupted: paused and stopping
    (a stop asked for, the debate not yet ended) come from the controller, read now."""
    if debate is not None and not debate.done and view.status == "running":
        if debate.controller.stopped:
            return "stopping"
        if debate.controller.paused:
            return "paused"
    return view.status


def turn_count(view: DebateView) -> str:
    """"2 turns done · 1 replying": the finished turns (the progress bar's "calls done" counts the
    same) and those whose reply is streaming; a turn started but with no text yet is not counted
    (a simultaneous round starts every agent at once: "4 turns" beside "0 calls done" was untrue)."""
    done = sum(1 for t in view.turns if t.status != "streaming")
    replying = sum(1 for t in view.turns if t.status == "streaming" and t.text)
    words = f"{done} turn{'' if done == 1 else 's'} done"
    return words + (f" · {replying} replying" if replying else "")


def round_words(rnd: int, rounds, cap) -> str:
    """"round 1 of 2 (cap 5)": the rounds the teacher set, the cap apart; past them, "round 3 of 2
    (extra round: no decision yet, cap 5)". Never "of max 5" for a debate asked for 2 rounds."""
    try:
        cap = int(cap) if cap else None
        rounds = int(rounds) if rounds else cap
    except (TypeError, ValueError):
        return f"round {rnd}"
    if rounds is None:
        return f"round {rnd}"
    if cap is not None:
        rounds = min(rounds, cap)
    if rnd > rounds:
        return f"round {rnd} of {rounds} (extra round: no decision yet" + (f", cap {cap})" if cap else ")")
    return f"round {rnd} of {rounds}" + (f" (cap {cap})" if cap and cap > rounds else "")


def render_status(view: DebateView, debate=None) -> None:
    word = status_word(view, debate)
    rounds = [t.round for t in view.turns if t.kind in DISCUSSION_KINDS]
    parts = [f"{STATUS_ICONS.get(word, '')} Status: **{word}**"]
    note = steering_note(debate)
    if note:
        parts.append(md_escape(note.removeprefix("stopping: ")))
    if rounds:
        parts.append(round_words(max(rounds), view.config.get("rounds"), view.config.get("max_rounds")))
    parts.append(turn_count(view))
    parts.append(f"{view.elapsed_s:.1f} s")
    if view.finish_reason and word != "running":
        parts.append(md_escape(view.finish_reason))
    with st.container(key="debate_status"):
        st.markdown(" · ".join(parts))
        for error in view.errors[-3:]:
            st.warning(model_markdown(error))  # an error may quote a model's or a user's words


def style() -> None:
    """The transcript's static stylesheet (`TRANSCRIPT_CSS`)."""
    st.html(TRANSCRIPT_CSS)


def render_question(question: str | None, shown: str | None = None) -> None:
    """The debate's question as plain text (`plain_markdown`: a "# ..." or "---" line of a puzzle is
    text, never a heading or a rule; dollars, images and links are words) in its own box
    (`debate_question`), at most ~30 % of the window high: a long question scrolls inside it and
    never pushes the transcript below out of view. `shown`: the words of it a title already shows
    (the box is drawn only when they are not the whole question). Draws the stylesheet too."""
    style()
    question = str(question or "")
    if shown is not None and " ".join(shown.split()) == question.strip():
        return
    with st.container(key=QUESTION_KEY):
        if long_question(question, LONG_QUESTION_CHARS, LONG_QUESTION_LINES):  # a box of its own, 30 % high
            with st.container(key=f"{QUESTION_KEY}_long"):
                st.markdown(plain_markdown(question))
        else:
            st.markdown(plain_markdown(question))


def long_question(question: str, chars: int, lines: int) -> bool:
    """Is the question more than a few lines of text (over `chars` characters or `lines` lines)?"""
    return len(question) > chars or question.strip().count("\n") >= lines


# ----- transcript ------------------------------------------------------------------------------
def round_status(view: DebateView, rnd: int) -> str:
    """A round's status in words that are true: "in progress", "decided", "no decision yet: ...",
    "done", or for a round a Stop, a failure or a lost worker cut short what happened in it
    ("stopped: 1 of 3 agents finished their turn (Agent 2 cut off)"), never "done"."""
    turns = [t for t in view.turns if t.round == rnd]
    if any(t.status == "streaming" for t in turns):
        return "in progress"
    if view.decision is not None and view.decision.round == rnd:
        return "decided"
    last = max((t.round for t in view.turns), default=rnd)
    ended_here = rnd == last and view.status in ("stopped", "failed", "interrupted")
    cut = [t for t in turns if t.status in ("interrupted", "failed")]
    if ended_here or cut:
        word = view.status if ended_here else "in progress" if view.status == "running" and rnd == last else "done"
        return _cut_round(view, rnd, turns, cut, word)
    attempts = [a for a in view.attempts if a.round == rnd]
    if attempts and not attempts[-1].reached:
        return ("no decision yet: " if view.status == "running" or rnd != last else "no decision: ") + attempts[-1].reason
    if view.status == "running" and rnd == last:
        return "in progress"
    return "done"


def _cut_round(view: DebateView, rnd: int, turns: list[TurnView], cut: list[TurnView], word: str) -> str:
    """"stopped: 1 of 3 agents finished their turn (Agent 2 cut off)": how many of the round's
    speakers finished a turn, and whose turn was cut (interrupted) or failed."""
    speakers = view.rounds.get(rnd) or view.agents  # the round's speaking order (RoundStarted)
    spoke = {t.agent for t in turns if t.status == "ok" and t.kind in DISCUSSION_KINDS}
    done = len(spoke & set(speakers))
    text = f"{word}: {done} of {len(speakers)} agents finished their turn" if speakers else word
    cut_off = [t.agent for t in cut if t.status == "interrupted"]
    failed = [t.agent for t in cut if t.status == "failed"]
    notes = ([f"{', '.join(dict.fromkeys(cut_off))} cut off"] if cut_off else []) + (
        [f"{', '.join(dict.fromkeys(failed))} failed"] if failed else [])
    if not notes and word in ("stopped", "failed", "interrupted") and done >= len(speakers):
        notes.append("no decision")
    return text + (f" ({'; '.join(notes)})" if notes else "")


@dataclass
class Walk:
    """How far a transcript has been drawn: the next timeline position, the round being shown,
    and the rounds whose footer (votes, decision attempts) is drawn. A page that draws the
    settled part of a live debate once keeps it, and draws the rest from there on every refresh."""

    position: int = 0
    current: int | None = None
    shown: set[int] = field(default_factory=set)

    def copy(self) -> "Walk":
        return Walk(self.position, self.current, set(self.shown))


def render_transcript(view: DebateView, extras: TurnExtras | None = None, passages: Passages | None = None) -> None:
    """Every turn and moderator action in order, grouped under round headers. `passages`: turn id ->
    coded passages (start, end, colour name) drawn highlighted in that turn's text (shown literally)."""
    if not view.timeline:
        st.caption("Waiting for the first turn…")
        return
    finish_transcript(view, render_timeline(view, Walk(), len(view.timeline), extras, passages=passages))


def render_timeline(view: DebateView, walk: Walk, stop: int, extras: TurnExtras | None = None,
                    paused: bool = False, passages: Passages | None = None) -> Walk:
    """Draw the timeline items from `walk.position` up to `stop` (round headers, bubbles, moderator
    actions, the footers of the rounds left behind); `walk` is advanced and returned. The last
    round's footer is left to `finish_transcript`: more of that round may follow. `paused`: the
    debate is paused (its streaming turns say so)."""
    for kind, item in view.timeline[walk.position:stop]:
        walk.position += 1
        if kind == "steer":
            _steer(item, next(j for j, e in enumerate(view.steering) if e is item), view.from_parent(item))
            continue
        k = view.turn_index(item)
        turn = view.turns[k]
        if turn.round != walk.current:
            if walk.current is not None:
                _round_footer(view, walk.current, walk.shown)
            walk.current = turn.round
            if walk.current not in walk.shown:
                with st.container(key=f"round_{walk.current}"):
                    st.markdown(f"#### {md_escape(view.round_title(walk.current))}")
                    st.caption(md_escape(round_status(view, walk.current)))
        _bubble(view, turn, k, extras, paused, (passages or {}).get(turn.id))
    return walk


def finish_transcript(view: DebateView, walk: Walk) -> None:
    """The footer of the last round drawn."""
    if walk.current is not None:
        _round_footer(view, walk.current, walk.shown)


def _bubble(view: DebateView, turn: TurnView, k: int, extras: TurnExtras | None, paused: bool = False,
            spans: list[tuple[int, int, str]] | None = None) -> None:
    color, avatar, _ = agent_style(turn.agent, view.agents)
    with st.container(key=f"turn_{k}"):
        with st.chat_message(turn.agent, avatar=avatar):
            head = [f":{color}[**{md_escape(turn.agent)}**]", md_escape(turn.kind)]
            if turn.round:
                head.append(f"round {turn.round}")
            head.append(md_escape(turn.model))
            if view.from_parent(turn):
                head.append(FROM_PARENT)
            mark = "paused" if paused and turn.status == "streaming" else turn.status
            if mark in _TURN_MARKS:
                head.append(_TURN_MARKS[mark])
            if turn.seat in _SEAT_MARKS:
                head.append(_SEAT_MARKS[turn.seat])
            if turn.retries:
                head.append(f"retried {turn.retries}×")
            with st.container(key=f"turn_head_{k}"):  # sticks to the top of the box while the text scrolls
                st.markdown(" · ".join(head))
            persona = view.personas.get(turn.agent)
            if persona:
                st.caption(md_escape(persona))
            if turn.text and spans:  # coded passages: the text drawn literally, each passage behind its colour
                st.markdown(highlighted(turn.text, spans))
            elif turn.text:
                st.markdown(model_markdown(turn.text) + (" ▌" if turn.status == "streaming" else ""))
            elif turn.status == "streaming":
                st.caption("paused before its first word" if paused
                           else "waiting for the person in this seat…" if turn.model == PERSON else "thinking…")
            if turn.error:
                st.caption(f"{turn.status}: {md_escape(turn.error)}")
            notes = []
            if turn.answer and turn.kind in DISCUSSION_KINDS:
                notes.append(f"answer: {md_escape(short(turn.answer, 120))}")
            if turn.agreement is not None:
                notes.append("AGREE" if turn.agreement else "DISAGREE")
            if turn.confidence is not None:
                notes.append(f"confidence {turn.confidence}/10")
            if turn.status != "streaming" and turn.completion_tokens:
                notes.append(f"{turn.prompt_tokens}+{turn.completion_tokens} tokens, {turn.latency_s:.1f} s")
            if notes:
                st.caption(" · ".join(notes))
            prompt = st.expander(f"show prompt *of turn {k + 1}*", key=f"prompt_{k}", on_change="rerun")
            if prompt.open:
                with prompt:
                    for message in turn.prompt:
                        st.markdown(f"**{md_escape(message.get('role', ''))}**")
                        st.text(message.get("content", ""))
            if extras is not None:
                extras(turn, k)


def _steer(event, j: int, from_parent: bool = False) -> None:
    with st.container(key=f"steer_{j}"):
        if event.action == "message":
            to = ", ".join(event.targets) if event.targets else "all agents"
            with st.chat_message("moderator", avatar=MODERATOR_AVATAR):
                st.markdown(f"**Moderator → {md_escape(to)}**" + (f" · {FROM_PARENT}" if from_parent else ""))
                st.markdown(model_markdown(event.message))
        else:
            words = {"pause": "paused the debate", "resume": "resumed the debate", "stop": "stopped the debate",
                     "force_decision": "asked for a decision now"}
            st.caption(f"{MODERATOR_AVATAR} Moderator {words.get(event.action, md_escape(event.action))}")


def format_ballot(value: Any) -> str:
    """A ballot as people read it (solutions numbered from 1)."""
    if isinstance(value, bool) or value is None:
        return "-"
    if isinstance(value, int):
        return f"solution {value + 1}"
    if isinstance(value, list):
        return " > ".join(str(v + 1) for v in value) if value else "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{int(k) + 1}: {v}" for k, v in sorted(value.items(), key=lambda kv: int(kv[0])))
    return json.dumps(value)


def vote_problem(reason: str | None) -> str:
    """Why a ballot was not counted, in words. A cut call (the debate was stopped) was not cast
    rather than invalid; debates stored before the engine named that cause read "interrupted: None"."""
    reason = reason or "unreadable"
    if reason.endswith(" interrupted: None"):
        reason = reason.removesuffix(" interrupted: None") + " was cut: the debate was stopped"
    reason = reason.removesuffix(": None")
    return f"not cast ({reason})" if " was cut" in reason else f"invalid ballot ({reason})"


def _round_footer(view: DebateView, rnd: int, shown: set[int]) -> None:
    if rnd in shown:
        return
    shown.add(rnd)
    votes = view.votes_of_round(rnd)
    if votes:
        with st.container(key=f"votes_{rnd}", border=True):
            st.markdown(f"**Votes, round {rnd}** ({md_escape(votes[0].protocol)})")
            for vote in votes:
                line = f"- {md_escape(vote.agent)}: {md_escape(format_ballot(vote.ballot))}"
                if not vote.valid:
                    line = f"- {md_escape(vote.agent)}: {md_escape(vote_problem(vote.reason))}"
                if vote.attempt > 1:
                    line += f" (attempt {vote.attempt})"
                st.markdown(line)
    for attempt in (a for a in view.attempts if a.round == rnd):
        verdict = "decision reached" if attempt.reached else "no decision"
        st.caption(f"Decision attempt ({md_escape(attempt.protocol)}): {verdict}: {md_escape(attempt.reason)}")


# ----- decision, reference, usage ---------------------------------------------------------------
def decision_texts(view: DebateView) -> tuple[str, str]:
    """(the decided answer, short; the full text it was decided from) for the decision card
    (`mad_core.handout.decision_texts`, which the handout uses too)."""
    return handout.decision_texts(view)


def reveal_key(view: DebateView) -> str:
    """The session key that says the reference of this debate was revealed (pages use this name)."""
    return f"reveal_{view.debate_id}"


def no_decision_sentence(view: DebateView) -> str:
    """One sentence for a debate that ended without a decision, its finish reason folded in:
    "No decision: the debate was stopped by a person." (never "stopped. stopped by a person")."""
    reason = view.finish_reason.strip().rstrip(".")
    verb = "failed" if view.status == "failed" else f"was {view.status}"
    if view.status == "stopped" and reason.startswith("stopped "):  # "stopped by a person (during ...)"
        return f"No decision: the debate was {reason}."
    return f"No decision: the debate {verb}" + (f" ({reason})." if reason else ".")


def render_decision(view: DebateView, revealed: bool | None = None) -> None:
    """The decision card: the extracted answer first (cut to handout.ANSWER_CHARS), then (only
    once the reference is revealed: `revealed`, by default the session's `reveal_{debate id}`
    flag) whether it agrees with the reference, read with the debate's answer type
    (`decision_agreement`); the whole answer (when cut) and the full winning text one click
    away (plain text, `decision_full_text`); protocol, round, winner, forced / fallback notes;
    the solutions and their scores folded away (`decision_solutions`)."""
    decision = view.decision
    if decision is None:
        if view.status in ("stopped", "failed", "interrupted"):
            st.info(md_escape(no_decision_sentence(view)))
        return
    if revealed is None:
        revealed = bool(st.session_state.get(reveal_key(view)))
    answer, full = decision_texts(view)
    with st.container(key="decision_card", border=True):
        st.markdown("### Decision")
        headline = handout.headline_answer(answer)  # at most handout.ANSWER_CHARS characters
        cut = headline != " ".join(answer.split())
        with st.container(key="decision_answer"):
            st.markdown(f"#### {md_escape(headline)}" if answer else "(empty answer)")
        if revealed and view.config.get("reference"):
            with st.container(key="decision_agreement"):
                _agreement(view)
        if cut or (full and full != answer):  # the whole answer and the text it came from: one click away
            who = f" ({md_escape(decision.winner_agent)})" if decision.winner_agent else ""
            winning = bool(full) and full != answer
            label = (("Whole answer and winning text" if winning else "Whole answer") if cut
                     else "Full winning text") + (who if winning else "")
            with st.expander(label, key="decision_full_text"):
                if cut:
                    st.text(answer)
                if winning:
                    if cut:
                        st.caption("winning text")
                    st.text(full)
        facts = [f"protocol **{md_escape(decision.protocol)}**", f"round {decision.round}"]
        if decision.winner_agent:
            facts.append(f"winner **{md_escape(handout.winner_words(view))}**")  # "Agent 1's final answer"
        st.markdown(" · ".join(facts))
        change = view.challenge_change  # the challenge step replaced the protocol's answer (mad_core/challenge.py)
        if change:
            st.container(key="decision_challenge").markdown(
                f"Changed by the challenge: {md_escape(short(str(change.get('original_answer')), 100))} → "
                f"{md_escape(short(str(change.get('answer')), 100))} ({md_escape(str(change.get('decider')))}, "
                f"setting {md_escape(str(change.get('setting')))})")
        if decision.forced:
            st.warning("Forced: a person asked for a decision before the protocol reached one.")
        if decision.fallback:
            st.warning(f"Fallback rule: {decision.fallback}")
        if decision.solutions or decision.scores:
            with st.expander("Solutions and scores", key="decision_solutions"):
                if decision.solutions:
                    st.table([{"solution": i + 1,  # st.table reads its cells as Markdown: escaped
                               "agent": md_escape(decision.solution_agents[i]) if i < len(decision.solution_agents)
                               else "",
                               "answer": md_escape(short(text, 100)),
                               "score": f"{decision.scores[i]:g}" if i < len(decision.scores) else "-"}
                              for i, text in enumerate(decision.solutions)])
                else:
                    st.markdown("Scores: " + ", ".join(f"{s:g}" for s in decision.scores))
        for challenge in view.challenges:
            stance = {True: "accepts", False: "challenges", None: "gives no clear stance on"}[challenge.agrees]
            extra = f" and proposes: {md_escape(challenge.new_answer)}" if challenge.new_answer else ""
            st.caption(f"{md_escape(challenge.agent)} {stance} the answer{extra}")


def _agreement(view: DebateView) -> None:
    """The decision against the reference answer, judged with the debate's answer type."""
    verdict, sentence = handout.reference_agreement(view)
    icon = {True: "✅", False: "❌", None: "❔"}[verdict]
    st.markdown(f"{icon} {md_escape(sentence)}")


def render_reference(view: DebateView, state_key: str) -> None:
    """The reference answer stays hidden until the `reveal_reference` button is pressed; then it
    shows with the decision's agreement (nothing before the reveal says whether it matches)."""
    reference = view.config.get("reference")
    if not reference or not access.may_reveal(view):  # never a visitor's; while it runs, its owner's only
        return
    if not st.session_state.get(state_key):
        if st.button("Reveal reference answer", key="reveal_reference"):
            st.session_state[state_key] = True
            st.rerun()
        return
    with st.container(key="reference_revealed", border=True):
        st.markdown("**Reference answer**")
        st.text(reference)
        if view.decision is not None:
            _agreement(view)


def agent_costs(view: DebateView) -> dict[str, float | None]:
    """Estimated US dollars per agent so far (litellm's local price map; 0 for models run here;
    None when a model's price is unknown)."""
    costs: dict[str, float | None] = {}
    for turn in view.turns:
        if turn.status == "streaming":
            continue
        cost = estimated_cost(turn.model, turn.prompt_tokens, turn.completion_tokens)
        known = costs.get(turn.agent, 0.0)
        costs[turn.agent] = None if cost is None or known is None else known + cost
    return costs


def render_usage(view: DebateView, paused: bool = False) -> None:
    """Tokens, seconds and estimated cost per agent and in total, and the elapsed time (`paused`:
    the debate is paused, see `render_usage_line`)."""
    with st.container(key="usage", border=True):
        st.markdown("**Cost and progress**")
        costs = agent_costs(view)
        rows = [{"agent": md_escape(agent), "calls": u.calls, "prompt tokens": u.prompt_tokens,  # cells: Markdown
                 "completion tokens": u.completion_tokens, "seconds": u.seconds, "cost": costs.get(agent, 0.0)}
                for agent, u in view.usage.items()]
        if rows:
            rows.append({"agent": "total", "calls": sum(r["calls"] for r in rows),
                         "prompt tokens": sum(r["prompt tokens"] for r in rows),
                         "completion tokens": sum(r["completion tokens"] for r in rows),
                         "seconds": sum(r["seconds"] for r in rows),
                         "cost": None if any(r["cost"] is None for r in rows) else sum(r["cost"] for r in rows)})
            st.table([{**row, "seconds": f"{row['seconds']:.1f}", "cost": format_dollars(row["cost"], "unknown")}
                      for row in rows])
        render_usage_line(view, paused)


def render_usage_line(view: DebateView, paused: bool = False) -> None:
    """Totals in one line: tokens, model seconds, elapsed time, and the calls under way: "streaming
    now", or "paused" while the debate is paused (its streams wait before their next piece)."""
    tokens = sum(u.prompt_tokens + u.completion_tokens for u in view.usage.values())
    seconds = sum(u.seconds for u in view.usage.values())
    open_calls = len(view.running_turns)
    under_way = f" · {open_calls} {'paused' if paused else 'streaming now'}" if open_calls else ""
    st.caption(f"{tokens} tokens · {seconds:.1f} s in model calls · elapsed {view.elapsed_s:.1f} s · "
               f"{len(view.turns)} model calls" + under_way)
