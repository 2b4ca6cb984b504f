"""The preset note and the progress bar count the calls a protocol really makes (issue 18): the per-player
Knight-Knave-Spy preset planned as 21 calls made 36; past the plan the bar says so instead of a frozen
"≈ 3 left", and the ETA follows the time per call as calls finish."""
from __future__ import annotations

import copy

from mad_core import DebateConfig, DebateEngine
from mad_core.controller import Activity
from mad_core.events import Turn, TurnFinished, TurnStarted
from mad_core.live import CallPlan, plan_calls, progress
from mad_core.presets import load_presets
from mad_core.view import DebateView
from madlab_ui.live_page import format_progress

KKS = load_presets()["wu_kks_per_player"]["config"]
NAMES = KKS["answer_options"]


def kks_replies(tie: bool):
    """Every agent proposes and keeps the preset's solution; with `tie`, the final assignments split
    three ways on the first player, so the supervisor is asked."""
    roles = dict(part.split(": ") for part in KKS["reference"].split(", "))

    def reply(messages, info):
        meta = info["metadata"]
        kind, agent = meta["kind"], meta["agent"]
        if kind == "debate":
            return '{"role": "knight", "reasoning": "its statement holds"}'
        if kind == "supervisor":
            return f"Final answer: {NAMES[0]}: knight"
        mine = dict(roles)
        if tie and kind == "final":
            mine[NAMES[0]] = {"Agent 1": "knight", "Agent 2": "knave", "Agent 3": "spy"}[agent]
        return "Final answer: " + ", ".join(f"{name}: {mine[name]}" for name in NAMES)

    return reply


def run_kks(script, tie: bool) -> tuple[int, int, list]:
    model, played = script(kks_replies(tie))
    data = copy.deepcopy(KKS)
    for agent in data["agents"]:
        agent["model"] = model
    events = list(DebateEngine(DebateConfig.from_dict(data)).run())
    turns = [e.turn for e in events if isinstance(e, TurnFinished)]
    return len(played.history), len(turns), turns


def test_the_kks_preset_plans_exactly_the_calls_it_makes(script):
    plan = plan_calls(KKS)
    fewest, most = plan.range(KKS["rounds"])
    # 3 proposals + 5 players x (1 debate pass + 1 self-adjustment) x 3 agents + 3 final assignments
    assert fewest == 3 + 5 * 2 * 3 + 3 == 36
    assert most == fewest + 1 + KKS.get("vote_retries", 2)  # a tie: the supervisor, re-asked at most vote_retries
    calls, turns, _ = run_kks(script, tie=False)
    assert calls == turns == fewest  # must not happen: the 21 of agents x rounds


def test_a_tie_adds_the_supervisor_call_inside_the_planned_range(script):
    plan = plan_calls(KKS)
    fewest, most = plan.range(KKS["rounds"])
    calls, _, turns = run_kks(script, tie=True)
    assert [t.kind for t in turns].count("supervisor") == 1
    assert calls == fewest + 1 and fewest < calls <= most


def _view(done: int, elapsed: float) -> DebateView:
    view = DebateView(started_at=100.0)
    for k in range(done + 1):
        view.apply(TurnStarted(f"t{k}", 1, f"Agent {k % 3 + 1}", "discussion", "m", []))
        if k < done:
            view.apply(TurnFinished(Turn(id=f"t{k}", seq=k, round=1, agent=f"Agent {k % 3 + 1}", kind="discussion",
                                         model="m", prompt=[], status="ok", started_at=100.0 + k,
                                         finished_at=101.0 + k)))
    view.finished_at = 100.0 + elapsed
    view.status = "running"
    return view


def test_the_eta_moves_as_calls_finish_and_past_the_plan_it_says_so():
    plan = CallPlan(setup=0, per_round=3, per_attempt=0, first_decision=3, max_rounds=3, after=0)  # 9 calls
    activity = Activity(phase="discussion", round=1, expected=3, received=0)
    early, later = progress(_view(2, 10.0), plan, activity), progress(_view(3, 24.0), plan, activity)
    assert (early.calls_left, early.eta_s) == (7, 35.0)  # 5 s a call so far
    assert (later.calls_left, later.eta_s) == (6, 48.0)  # 8 s a call now: the ETA follows
    over = progress(_view(10, 50.0), plan, Activity(phase="discussion", round=3, expected=3, received=1))
    assert over.over_plan and over.eta_s is None and over.calls_done == 10 and 0 < over.fraction < 1
    words = format_progress(over)
    assert "10 calls done, more calls than planned" in words and "ETA: not yet known" in words
    # must not happen: a count of calls left or an ETA that stays put while calls keep coming
    assert "left" not in words and "ETA ≈" not in words
    assert "≈ 7 left · ETA ≈ 35 s" in format_progress(early)


def test_the_challenge_settings_plan_exactly_the_calls_they_make(script, roles):
    """One call per agent for every challenge setting, and one before them for the settings that
    prepare an answer ("wrong") or background information ("information")."""
    for setting, extra in (("solution", 0), ("history", 0), ("irrelevant", 0), ("wrong", 1), ("information", 1)):
        model, s = script(roles())
        data = {"question": "What is the capital of France?", "rounds": 1, "max_rounds": 1,
                "protocol": "solution_counting", "extract_final_answers": False, "challenge": setting,
                "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)]}
        list(DebateEngine(DebateConfig.from_dict(data)).run())
        plan = plan_calls(data)
        assert plan.after == 3 + extra, setting
        made = [c for c in s.history if c["metadata"]["kind"] not in ("discussion",)]
        assert len(made) == plan.after, (setting, [c["metadata"]["kind"] for c in made])
