"""Compare's side by side (AppTest): rows aligned by phase then agent (never by the order in which
concurrent calls finished), moderator messages in their debate's column at their place, and each
round's ballots as one compact line per voter."""
from __future__ import annotations

from app_helpers import COMPARE, app, keys, texts

from mad_core.events import (DebateFinished, DebateStarted, DecisionReached, PersonasAssigned, RoundStarted,
                             SteeringApplied, Turn, TurnFinished, TurnStarted, VoteCast)
from mad_core import figures
from mad_core.store import Store
from mad_core.view import DebateView
from madlab_ui import plots
from madlab_ui.common import agent_style

AGENTS = ("Agent 1", "Agent 2", "Agent 3")
CONFIG = {"question": "At what temperature does water boil?", "protocol": "simple_voting", "paradigm": "memory",
          "rounds": 1, "max_rounds": 1, "agents": [{"label": a, "model": "scripted/apptest"} for a in AGENTS]}


def recorded(debate_id: str, extraction_order: tuple[str, ...], message_after: str | None = None,
             ballots: tuple[int, ...] = (0, 0, 0)) -> str:
    """A finished one-round debate as the store keeps it: discussion turns by Agent 1, 2, 3, the
    extractions started in `extraction_order` (as concurrent calls may finish), a moderator message
    to all right after `message_after`'s turn, then one ballot per agent (`ballots`: 0 = "1")."""
    store = Store()
    store.create_debate(debate_id, CONFIG)
    clock = iter(range(1000, 2000))
    events = [DebateStarted(debate_id, CONFIG, ts=next(clock)), PersonasAssigned({}),
              RoundStarted(1, list(AGENTS), ts=next(clock))]

    def turn(agent: str, kind: str, text: str) -> list:
        start = float(next(clock))
        done = Turn(id=f"{debate_id[:4]}-{kind}-{agent}", seq=len([e for e in events if isinstance(e, TurnFinished)]),
                    round=1, agent=agent, kind=kind, model="scripted/apptest", prompt=[], content=text,
                    started_at=start, finished_at=start + 0.5)
        return [TurnStarted(done.id, 1, agent, kind, done.model, [], ts=start), TurnFinished(done, ts=start + 0.5)]

    for agent in AGENTS:
        events += turn(agent, "discussion", f"{agent} of {debate_id[:4]} reasons.\nFinal answer: 100")
        if agent == message_after:
            events.append(SteeringApplied("message", None, "Remember the flamingo rule.", ts=next(clock)))
    for agent in extraction_order:
        events += turn(agent, "extraction", f"100 says {agent}")
    for agent, ballot in zip(AGENTS, ballots):
        events += turn(agent, "vote", str(ballot + 1))
        events.append(VoteCast(1, agent, "simple_voting", str(ballot + 1), ballot, True, ts=next(clock)))
    events += [DecisionReached(1, "simple_voting", "100", "Agent 1", 0, [3.0], ["100"], ["Agent 1"], ts=next(clock)),
               DebateFinished("finished", "100", ts=next(clock))]
    for event in events:
        store.record(event, debate_id)
    return debate_id


def test_side_by_side_aligns_rows_by_phase_and_agent_and_places_the_message_in_its_column():
    left = recorded("a" * 32, ("Agent 2", "Agent 1", "Agent 3"))
    right = recorded("b" * 32, ("Agent 1", "Agent 3", "Agent 2"), message_after="Agent 1")
    at = app(COMPARE)
    at.multiselect(key="compare_ids").set_value([left, right]).run()
    at.radio(key="compare_mode").set_value("Side by side").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="side_left").value == left and at.selectbox(key="side_right").value == right

    rows = sorted((k for k in keys(at) if k.startswith("side_row_1_")), key=lambda k: int(k.rsplit("_", 1)[1]))
    cells = []
    for row in rows:
        inside = {n.key for n in at.get_by_key(row) if getattr(n, "key", None)}
        cells.append({side: sorted(k for k in inside if k.startswith(f"side_{side}_")) for side in ("left", "right")})
    agents_of = {side: [t.agent for t in Store().turns(d)] for side, d in (("left", left), ("right", right))}
    kinds_of = {side: [t.kind for t in Store().turns(d)] for side, d in (("left", left), ("right", right))}

    def who(side: str, cell: list[str]) -> tuple[str, str] | str:
        name = cell[0]
        if "_turn_" in name:
            k = int(name.rsplit("_", 1)[1])
            return kinds_of[side][k], agents_of[side][k]
        return name.split("_")[2]  # "steer" or "votes"

    laid_out = [{side: who(side, cell[side]) for side in cell if cell[side]} for cell in cells]
    assert laid_out == [
        {"left": ("discussion", "Agent 1"), "right": ("discussion", "Agent 1")},
        {"right": "steer"},  # the message, in the right column only, before the turns it reached
        {"left": ("discussion", "Agent 2"), "right": ("discussion", "Agent 2")},
        {"left": ("discussion", "Agent 3"), "right": ("discussion", "Agent 3")},
        {"left": ("extraction", "Agent 1"), "right": ("extraction", "Agent 1")},
        {"left": ("extraction", "Agent 2"), "right": ("extraction", "Agent 2")},
        {"left": ("extraction", "Agent 3"), "right": ("extraction", "Agent 3")},
        {"left": "votes", "right": "votes"},
    ]
    # Must not happen: two different agents (or phases) in one row.
    for row in laid_out:
        turns_in_row = [cell for cell in row.values() if isinstance(cell, tuple)]
        assert len(set(turns_in_row)) <= 1, row
    assert "Remember the flamingo rule." in texts(at.get_by_key("side_right_steer_0"))
    assert "side_left_steer_0" not in keys(at)
    ballots = texts(at.get_by_key("side_left_votes_1"))
    assert [line for line in ballots.splitlines() if "→" in line] == [
        f":{agent_style(agent, list(AGENTS))[0]}[**{agent}**] → Solution 1 \\(Agent 1\\) → 100 says Agent 1"
        for agent in AGENTS]
    # Compact: the bare ballot replies are not shown as turns of their own.
    shown = [int(k.rsplit("_", 1)[1]) for k in keys(at) if k.startswith("side_left_turn_")]
    assert shown and not [k for k in shown if kinds_of["left"][k] == "vote"]


def test_a_ballot_names_the_solution_and_its_answer_in_the_votes_charts_words():
    left = recorded("c" * 32, AGENTS, ballots=(0, 1, 0))
    right = recorded("d" * 32, AGENTS)
    at = app(COMPARE)
    at.multiselect(key="compare_ids").set_value([left, right]).run()
    at.radio(key="compare_mode").set_value("Side by side").run()
    assert not at.exception, at.exception
    lines = [line for line in texts(at.get_by_key("side_left_votes_1")).splitlines() if "→" in line]
    colour = {agent: agent_style(agent, list(AGENTS))[0] for agent in AGENTS}
    assert lines == [f":{colour['Agent 1']}[**Agent 1**] → Solution 1 \\(Agent 1\\) → 100 says Agent 1",
                     f":{colour['Agent 2']}[**Agent 2**] → Solution 2 \\(Agent 2\\) → 100 says Agent 2",
                     f":{colour['Agent 3']}[**Agent 3**] → Solution 1 \\(Agent 1\\) → 100 says Agent 1"]
    # The same words as the votes chart's bars (label, then the answer it read).
    view = DebateView.from_store(Store(), left)
    chart = figures.vote_rounds(view, plots.debate_metrics(view))[0]
    assert (chart["labels"][1], chart["answers"][1]) == ("Solution 2 (Agent 2)", "100 says Agent 2")
    # Must not happen: a ballot that gives only the solution's number.
    assert not [line for line in lines if line.endswith(("solution 1", "solution 2", "(Agent 2\\)"))]
