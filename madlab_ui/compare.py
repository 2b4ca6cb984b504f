"""Compare's side by side, as data: which items of two debates share a row (used only by pages/2_Compare.py).

`side_rows(views)` lays two debates' transcripts out round by round. Within a round, rows follow
the phase (setup, discussion, summary, extraction, voting, judge, challenge), then the agent (its
position in its debate's configuration, then its label), then how many times that agent already
spoke in that phase: never the order in which concurrent calls happened to finish. So a row holds
the same agent's turn of the same phase in both columns, or one side only; never two agents.
A round's ballots make one compact row (`ballot_lines`: one line per voter, a single-choice ballot
in the votes chart's words, `ballot_words`: "Solution 2 (Agent 2) → no"). A moderator action
sits in its debate's column just before the turn that followed it (the first turn it could reach),
or at the end of the last round when nothing followed.

Pure: no streamlit here, nothing rendered, nothing computed about the debates' content.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mad_core.controller import phase_of
from mad_core.view import DebateView

PHASES = ("personas", "discussion", "summary", "extraction", "voting", "judge", "challenge")
NOT_AN_AGENT = 10_000  # the judge, the summarizer: after every agent


@dataclass(frozen=True)
class Item:
    """One cell: a turn (`index` into `view.turns`), a moderator action (`index` into
    `view.steering`), or the round's ballots (`index` = the round)."""

    kind: str  # "turn", "steer" or "ballots"
    index: int


def _phase_rank(kind: str) -> int:
    phase = phase_of([kind])
    return PHASES.index(phase) if phase in PHASES else len(PHASES)


def _turn_keys(view: DebateView) -> list[tuple]:
    """Each turn's place in its round: (round, phase, agent position, label, occurrence, 1).
    All ballots of a round share one place (their compact row)."""
    agents = {label: i for i, label in enumerate(view.agents)}
    seen: dict[tuple, int] = {}
    keys = []
    for turn in view.turns:
        phase = _phase_rank(turn.kind)
        if phase_of([turn.kind]) == "voting":
            keys.append((turn.round, phase, 0, "", 0, 1))
            continue
        who = (turn.round, phase, agents.get(turn.agent, NOT_AN_AGENT), turn.agent)
        seen[who] = seen.get(who, -1) + 1
        keys.append((*who, seen[who], 1))
    return keys


def _cells(view: DebateView) -> dict[tuple, Item]:
    """Every cell of one debate by its row key (see the module docstring)."""
    keys = _turn_keys(view)
    cells: dict[tuple, Item] = {}
    for k, key in enumerate(keys):
        if phase_of([view.turns[k].kind]) == "voting":
            cells.setdefault(key, Item("ballots", key[0]))
        else:
            cells[key] = Item("turn", k)
    last_round = max((key[0] for key in keys), default=0)
    pending: list[int] = []  # moderator actions waiting for the turn that follows them
    waiting = 0
    for kind, entry in view.timeline:
        if kind == "steer":
            pending.append(next(j for j, e in enumerate(view.steering) if e is entry))
            continue
        k = view.turn_index(entry)
        for j in pending:
            cells[(*keys[k][:5], 0, waiting)] = Item("steer", j)
            waiting += 1
        pending = []
    for j in pending:
        cells[(last_round, len(PHASES) + 1, 0, "", 0, 0, waiting)] = Item("steer", j)
        waiting += 1
    return cells


def side_rows(views: dict[str, DebateView]) -> dict[int, list[dict[str, Item]]]:
    """Round -> its rows, in order; a row maps a side ("left" / "right") to its cell (a side
    without one is absent from the row)."""
    cells = {side: _cells(view) for side, view in views.items()}
    keys = sorted({key for side_cells in cells.values() for key in side_cells})
    rows: dict[int, list[dict[str, Item]]] = {}
    for key in keys:
        rows.setdefault(key[0], []).append({side: side_cells[key] for side, side_cells in cells.items()
                                            if key in side_cells})
    return rows


def ballot_words(ballot: Any, tally: dict[str, Any] | None, describe: Any) -> str:
    """A valid ballot as the votes chart words its bar: a single choice is the chart's label and the
    answer it read ("Solution 2 (Agent 2) → no"; `tally`: the round's `figures.vote_rounds` item);
    a ranking, points, or a round the chart lacks: `describe(ballot)` (the transcript's wording)."""
    labels = (tally or {}).get("labels") or []
    if isinstance(ballot, bool) or not isinstance(ballot, int) or not 0 <= ballot < len(labels):
        return describe(ballot)
    answers = tally.get("answers") or []
    answer = answers[ballot] if ballot < len(answers) else None
    return f"{labels[ballot]} → {answer}" if answer else str(labels[ballot])


def ballot_lines(view: DebateView, rnd: int, describe: Any, problem: Any) -> list[tuple[str, str, list[str]]]:
    """The round's ballots, one per voter that was asked (configured order): (voter, what its
    ballot says, the ids of its vote turns, for their annotations). `describe(ballot)` and
    `problem(reason)` word a valid ballot and an uncounted one (transcript's own wording)."""
    turns = [t for t in view.turns if t.round == rnd and phase_of([t.kind]) == "voting"]
    votes = {v.agent: v for v in view.votes_of_round(rnd)}
    order = {label: i for i, label in enumerate(view.agents)}
    voters = sorted(dict.fromkeys(t.agent for t in turns), key=lambda a: (order.get(a, NOT_AN_AGENT), a))
    lines = []
    for voter in voters:
        vote = votes.get(voter)
        mine = [t for t in turns if t.agent == voter]
        if vote is not None:
            said = describe(vote.ballot) if vote.valid else problem(vote.reason)
        else:  # a ballot call with no recorded vote (cut or failed): what the call left
            said = (mine[-1].text.strip().splitlines() or [mine[-1].status])[0]
        lines.append((voter, said, [t.id for t in mine]))
    return lines
