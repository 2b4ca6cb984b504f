"""Fault injection: 100+ scripted debates where 20 % of model calls fail at random.

Faults: an exception, a timeout, a rate limit with Retry-After, a 503 with Retry-After, an empty
reply, junk. Every debate must end `finished` or `failed` with its cause; no finished turn may be
missing from the database; no call is attempted more often than `retry_attempts`; and a retry
after a rate limit waits at least what the server asked for.
"""
from __future__ import annotations

import random
import time

import pytest

from mad_core import DebateConfig, DebateEngine
from mad_core.events import DebateFinished, TurnFinished
from mad_core.models.scripted import Script
from mad_core.store import Store

FAULT_KINDS = ("exception", "timeout", "rate_limit", "unavailable", "empty", "junk")
PROTOCOLS = ("simple_voting", "ranked_voting", "approval_voting", "cumulative_voting", "majority_consensus",
             "unanimity_consensus", "solution_counting", "judge")
PARADIGMS = ("memory", "relay", "simultaneous", "collective_refinement", "report")
RETRY_AFTER_MS = 40
ATTEMPTS = 3
DEBATES = 104


def reply(messages, info) -> str:
    meta = info["metadata"]
    kind, agent = meta["kind"], meta["agent"]
    answer = {"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Paris"}.get(agent, "Paris")
    if kind == "vote":
        return {"ranked_voting": "1 > 3 > 2", "approval_voting": "Solutions 1 and 3",
                "cumulative_voting": '{"1": 6, "3": 4}'}.get(meta.get("protocol", ""), "Solution 1")
    if kind == "judge":
        return "Solution 1"
    if kind == "extraction":
        return answer
    return f"AGREE. {agent} reasons about it.\nFinal answer: {answer}"


@pytest.fixture
def timed_calls(monkeypatch):
    """Stamp each scripted call with the time it was made (history[i]["at"])."""
    original = Script.next_call

    def next_call(self, request):
        result = original(self, request)
        with self._lock:
            self.history[result[0]]["at"] = time.monotonic()
        return result

    monkeypatch.setattr(Script, "next_call", next_call)


def test_a_hundred_debates_under_twenty_percent_faults_end_cleanly(script, tmp_path, timed_calls):
    rng = random.Random(2024)
    store = Store(tmp_path / "faults.db")
    outcomes, checked_waits = {"finished": 0, "failed": 0}, 0
    for n in range(DEBATES):
        faults = {i: rng.choice(FAULT_KINDS) for i in range(400) if rng.random() < 0.2}
        model, s = script(lambda m, info, p=PROTOCOLS[n % len(PROTOCOLS)]: reply(
            m, {**info, "metadata": {**info["metadata"], "protocol": p}}),
            faults=faults, retry_after_ms=RETRY_AFTER_MS)
        protocol, paradigm = PROTOCOLS[n % len(PROTOCOLS)], PARADIGMS[n % len(PARADIGMS)]
        if paradigm == "collective_refinement" and protocol.endswith("consensus"):
            paradigm = "simultaneous"  # CI works with voting protocols only (seed 000 §5)
        config = DebateConfig.from_dict({
            "question": f"Question {n}: what is the capital of France?",
            "agents": [{"label": f"Agent {i + 1}", "model": model} for i in range(3)],
            "protocol": protocol, "paradigm": paradigm, "rounds": 1, "max_rounds": 2,
            "judge_model": model if protocol == "judge" else None, "retry_attempts": ATTEMPTS,
            "retry_base_delay": 0.001, "retry_max_wait_s": 5, "seed": n})
        engine = DebateEngine(config, store=store)
        events = list(engine.run())

        ends = [e for e in events if isinstance(e, DebateFinished)]
        assert len(ends) == 1 and ends[0].status in ("finished", "failed"), (n, ends)
        end = ends[0]
        outcomes[end.status] += 1
        stored = store.get_debate(engine.debate_id)
        assert (stored["status"], stored["owner"]) == (end.status, None), n
        if end.status == "failed":
            assert end.reason and end.reason == stored["reason"], n
            assert any(word in end.reason for word in ("Error", "fault", "empty", "Timeout", "failed")), end.reason
        else:
            assert stored["answer"] == end.answer and store.decisions(engine.debate_id)[-1]["final"]

        live_turns = {e.turn.id: e.turn for e in events if isinstance(e, TurnFinished)}
        on_disk = {t.id: t for t in store.turns(engine.debate_id)}
        assert on_disk.keys() == live_turns.keys(), n  # no finished turn missing (and none invented)
        for turn_id, turn in live_turns.items():
            assert (on_disk[turn_id].status, on_disk[turn_id].content) == (turn.status, turn.content)
            assert 1 <= turn.attempts <= ATTEMPTS
            if turn.status == "failed":
                assert turn.error, turn

        calls = s.history
        assert len(calls) <= ATTEMPTS * len(live_turns)
        for i, call in enumerate(calls):
            if call["fault"] in ("rate_limit", "unavailable"):
                later = [c for c in calls[i + 1:] if c["metadata"] == call["metadata"]]
                if later:  # the same turn tried again: not before the server's Retry-After
                    assert later[0]["at"] - call["at"] >= RETRY_AFTER_MS / 1000, (n, i)
                    checked_waits += 1
    assert outcomes["finished"] + outcomes["failed"] == DEBATES
    assert outcomes["finished"] > 0 and checked_waits > 20  # the suite really exercised both paths
