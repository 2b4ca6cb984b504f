"""What the engine publishes on its controller (`Controller.activity`), what a Stop does to the calls
under way, and the call plan / progress a live page shows (mad_core.live)."""
from __future__ import annotations

import functools
import threading

from mad_core import Controller
from mad_core.calls import call_problem
from mad_core.controller import Activity, phase_of
from mad_core.events import DebateFinished, SteeringApplied, Turn, TurnFinished, TurnStarted, VoteCast
from mad_core.live import CallPlan, plan_calls, progress
from mad_core.view import DebateView
from tests.builders import config, run


make_config = functools.partial(config, question="What is 6 x 7?", rounds=1, max_rounds=2, protocol="simple_voting")


def test_activity_names_the_phase_and_the_calls_of_each_step(script):
    controller = Controller()
    seen: list[tuple[str, Activity]] = []
    lock = threading.Lock()

    def reply(messages, info):
        kind = info["metadata"]["kind"]
        with lock:
            seen.append((kind, controller.activity))
        return {"vote": "1", "extraction": "42"}.get(kind, "Six sevens.\nFinal answer: 42")

    model, _ = script(reply)
    events = run(make_config(model), controller=controller)
    assert events[-1].status == "finished"
    by_kind = {kind: [a for k, a in seen if k == kind] for kind in ("discussion", "extraction", "vote")}
    assert [(a.phase, a.round, a.expected, a.deciding) for a in by_kind["discussion"]] == [("discussion", 1, 1, False)] * 3
    assert {(a.phase, a.expected, a.deciding) for a in by_kind["extraction"]} == {("extraction", 3, True)}
    assert {(a.phase, a.expected, a.deciding) for a in by_kind["vote"]} == {("voting", 3, True)}
    assert all(0 <= a.received < 3 for a in by_kind["vote"])
    assert controller.activity == Activity(phase="ended", round=1, expected=0, received=0, deciding=False)


def test_a_forced_decision_lets_the_turn_finish_then_collects_every_ballot(script):
    controller = Controller()
    votes: list[Activity] = []

    def reply(messages, info):
        kind = info["metadata"]["kind"]
        if kind == "discussion":
            controller.force_decision()  # while Agent 1 speaks
            return "Six sevens.\nFinal answer: 42"
        if kind == "vote":
            votes.append(controller.activity)
            return "1"
        return "42"

    model, _ = script(reply)
    events = run(make_config(model), controller=controller)
    finished = [e.turn for e in events if isinstance(e, TurnFinished)]
    assert [(t.agent, t.kind, t.status) for t in finished if t.kind == "discussion"] == [("Agent 1", "discussion", "ok")]
    assert {(a.phase, a.expected, a.deciding) for a in votes} == {("voting", 3, True)}
    assert events[-1].status == "finished"


def test_stop_cuts_the_votes_under_way_and_names_why_they_were_not_cast(script):
    controller = Controller()
    # All three ballots are under way before the Stop (a gate, not a timing window): each vote call waits at
    # the barrier, one of them stops the debate, and none replies before the Stop was made.
    all_voting = threading.Barrier(3, timeout=30)
    stopped = threading.Event()

    def reply(messages, info):
        if info["metadata"]["kind"] == "vote":
            if all_voting.wait() == 0:
                controller.stop()
                stopped.set()
            assert stopped.wait(30)
            return "I vote for solution 1 " * 20  # cut at its next piece
        return "42" if info["metadata"]["kind"] == "extraction" else "Six sevens.\nFinal answer: 42"

    model, _ = script(reply, token_delay=0.01)
    events = run(make_config(model), controller=controller)
    ballots = [e for e in events if isinstance(e, VoteCast)]
    assert len(ballots) == 3
    assert {(b.valid, b.reason) for b in ballots} == {(False, "the vote call was cut: the debate was stopped")}
    assert not any("None" in (b.reason or "") for b in ballots)
    # Must not happen: a turn starts after the Stop.
    stop_at = next(i for i, e in enumerate(events) if isinstance(e, SteeringApplied) and e.action == "stop")
    assert not [e for e in events[stop_at:] if isinstance(e, TurnStarted)]
    assert isinstance(events[-1], DebateFinished) and events[-1].status == "stopped"


def test_call_problem_words():
    cut = Turn(id="t", seq=0, round=1, agent="Agent 1", kind="vote", model="m", prompt=[], status="interrupted")
    failed = Turn(id="u", seq=1, round=1, agent="Agent 1", kind="vote", model="m", prompt=[], status="failed",
                  error="boom")
    assert call_problem(cut, "vote") == "the vote call was cut: the debate was stopped"
    assert call_problem(failed, "judge") == "the judge call failed: boom"
    assert phase_of(["extraction", "vote"]) == "extraction" and phase_of(["discussion"]) == "discussion"


def test_plan_calls_counts_agents_rounds_and_the_decision():
    agents = [{"label": f"Agent {i}", "model": "scripted/x"} for i in (1, 2, 3)]
    base = {"question": "q", "agents": agents, "rounds": 2, "max_rounds": 3}
    voting = plan_calls({**base, "protocol": "simple_voting"})
    assert voting == CallPlan(setup=0, per_round=3, per_attempt=6, first_decision=2, max_rounds=3, after=0)
    assert voting.total(2) == 3 * 2 + 6  # two rounds, one decision attempt
    assert voting.total(3) == 3 * 3 + 6 * 2  # a tie: a third round and a second attempt
    no_extraction = plan_calls({**base, "protocol": "simple_voting", "extract_final_answers": False})
    assert no_extraction.per_attempt == 3
    assert plan_calls({**base, "protocol": "judge", "judge_adaptive_break": False}).per_attempt == 1
    assert plan_calls({**base, "protocol": "simple_voting", "auto_personas": True, "challenge": True}).setup == 3
    assert plan_calls({"agents": agents, "protocol": "no such protocol", "rounds": 2}).per_round == 3


def _turn(k: int, kind: str = "discussion", status: str = "ok") -> Turn:
    return Turn(id=f"t{k}", seq=k, round=1, agent=f"Agent {k % 3 + 1}", kind=kind, model="m", prompt=[],
                status=status, started_at=100.0 + k, finished_at=101.0 + k)


def test_progress_counts_calls_done_and_left_and_estimates_the_time():
    plan = CallPlan(setup=0, per_round=3, per_attempt=6, first_decision=1, max_rounds=2, after=0)
    view = DebateView(started_at=100.0)
    for k in range(2):
        view.apply(TurnStarted(f"t{k}", 1, f"Agent {k + 1}", "discussion", "m", []))
        view.apply(TurnFinished(_turn(k)))
    view.apply(TurnStarted("t2", 1, "Agent 3", "discussion", "m", []))
    view.finished_at = 110.0  # elapsed: 10 s (2 calls done: 5 s a call)
    view.status = "running"
    now = progress(view, plan, Activity(phase="discussion", round=1, expected=1, received=0))
    assert (now.round, now.max_rounds, now.phase, now.calls_done, now.calls_left) == (1, 2, "discussion", 2, 7)
    assert now.eta_s == 35.0 and abs(now.fraction - 2 / 9) < 1e-9
    voting = progress(view, plan, Activity(phase="voting", round=1, expected=3, received=1, deciding=True))
    assert voting.phase == "voting"
    view.status = "finished"
    assert progress(view, plan).fraction == 1.0 and progress(view, plan).calls_left == 0
