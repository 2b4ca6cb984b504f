"""Seed 004's one-call API: agents from a model or (label, model) pairs, callables, judge, call count."""
from __future__ import annotations

import pytest

import mad_core
from mad_core.api import default_personas
from mad_core.presets import preset_config
from mad_core.store import Store


class Counter:
    """A Python callable used as a model: counts its calls and answers by agent draft number."""

    def __init__(self, reply):
        self.calls, self.reply = [], reply

    def __call__(self, messages):
        self.calls.append(messages)
        return self.reply(messages, len(self.calls))


@pytest.mark.parametrize("k,rounds", [(3, 2), (2, 1), (4, 0 + 1)])
def test_judge_debate_makes_exactly_k_times_r_plus_1_plus_1_calls(k, rounds):
    agent = Counter(lambda messages, n: f"Draft {n}.\nFinal answer: {n % 2}")
    judge = Counter(lambda messages, n: "2")
    result = mad_core.debate("Is 91 prime?", agents=[(f"M{i}", agent) for i in range(k)], rounds=rounds,
                             judge=judge)
    assert len(agent.calls) + len(judge.calls) == k * (rounds + 1) + 1
    assert len(judge.calls) == 1
    assert result.winner_label == "M1"  # the judge picked solution 2
    assert result.judgment == "2"
    assert [r.round_index for r in result.rounds] == list(range(rounds + 1))  # first drafts included
    assert all(set(r.drafts) == {f"M{i}" for i in range(k)} for r in result.rounds)
    assert result.final == result.rounds[-1].drafts["M1"]


def test_single_model_spawns_n_agents_and_convergence_picks_the_most_similar_draft():
    drafts = {"Agent 1": "the answer is forty two", "Agent 2": "the answer is forty two indeed",
              "Agent 3": "bananas are yellow"}

    def reply(messages, n):
        label = messages[0]["content"].split(",")[0].removeprefix("You are ")
        return drafts[label]
    model = Counter(reply)
    result = mad_core.debate("What is 6 x 7?", agents=model, rounds=1, n_agents_if_single=3)
    assert len(model.calls) == 3 * 2  # no judge: k * (R + 1)
    # Agents 1 and 2 are equally similar to the others (5/12 each), Agent 3 to nobody: the first on the tie.
    assert result.winner_label == "Agent 1"
    assert result.final == drafts["Agent 1"]
    assert result.judgment == f"scores={[5 / 12, 5 / 12, 0.0]}"


def test_personas_and_options_reach_the_prompts(script, roles):
    model, s = script(roles())
    mad_core.debate("q?", agents=[("MATH", model), ("ENG", model)], rounds=1,
                    personas=["a pure mathematician", "a practising engineer"], tit_for_tat=3)
    systems = {call["metadata"]["agent"]: call["messages"][0]["content"] for call in s.history}
    assert "a pure mathematician" in systems["MATH"] and "a practising engineer" in systems["ENG"]
    assert "Contest every single point" in systems["MATH"]


def test_one_model_spawns_agents_with_distinct_personas(script, roles):
    """Seed 004: "three runs of the same model with different personas": by default the Du preset's."""
    du = [agent["persona"] for agent in preset_config("du_simultaneous")["agents"]]
    model, s = script(roles())
    mad_core.debate("q?", agents=model, rounds=1, n_agents_if_single=3)
    systems = {call["metadata"]["agent"]: call["messages"][0]["content"] for call in s.history}
    for i, persona in enumerate(du):
        assert persona in systems[f"Agent {i + 1}"]
        assert all(persona not in systems[f"Agent {j + 1}"] for j in range(3) if j != i)  # distinct
    model, s = script(roles())
    mad_core.debate("q?", agents=model, rounds=1, n_agents_if_single=2, personas=["a poet", "a judge"])
    systems = {call["metadata"]["agent"]: call["messages"][0]["content"] for call in s.history}
    assert "a poet" in systems["Agent 1"] and not any(p in systems["Agent 1"] for p in du)  # overridden
    calls = len(s.history)
    with pytest.raises(mad_core.ConfigError) as err:
        mad_core.debate("q?", agents=model, n_agents_if_single=len(default_personas(6)) + 1)
    assert err.value.field == "personas" and len(s.history) == calls  # refused before any call


def test_debate_is_stored_and_litellm_names_work(script, roles):
    model, _ = script(roles())
    result = mad_core.debate("q?", agents=model, rounds=1, n_agents_if_single=2)
    stored = Store().get_debate(result.debate_id)
    assert stored["status"] == "finished" and result.status == "finished"


def test_wrong_number_of_personas_is_a_config_error(script, roles):
    model, _ = script(roles())
    with pytest.raises(mad_core.ConfigError) as err:
        mad_core.debate("q?", agents=model, personas=["only one"])
    assert err.value.field == "personas"


def test_the_judge_reads_labelled_drafts_and_names_the_winner_by_label():
    agent = Counter(lambda messages, n: f"Draft {n} of my reasoning.\nFinal answer: {n}")
    judge = Counter(lambda messages, n: "CLAUDE has the best draft.")
    result = mad_core.debate("q?", agents=[("OPENAI", agent), ("CLAUDE", agent)], rounds=1, judge=judge)
    shown = judge.calls[0][-1]["content"]
    last = result.rounds[-1].drafts
    assert f"[OPENAI]:\n{last['OPENAI']}" in shown and f"[CLAUDE]:\n{last['CLAUDE']}" in shown  # whole drafts
    assert "one of: OPENAI, CLAUDE" in shown
    assert result.winner_label == "CLAUDE" and result.final == last["CLAUDE"]
    assert result.judgment == "CLAUDE has the best draft."


@pytest.mark.parametrize("verdict,why", [("I cannot decide.", "no solution number found"),
                                         ("Both OPENAI and CLAUDE are good.", "no solution number found"),
                                         ("Solution 9", "solution 9 does not exist (there are 3)")])
def test_an_unreadable_verdict_costs_no_extra_call_and_falls_back_to_the_convergence_winner(verdict, why):
    drafts = {"A": "the answer is forty two", "B": "the answer is forty two indeed", "C": "bananas are yellow"}
    agent = Counter(lambda messages, n: drafts[messages[0]["content"].split(",")[0].removeprefix("You are ")])
    judge = Counter(lambda messages, n: verdict)
    result = mad_core.debate("q?", agents=[(label, agent) for label in drafts], rounds=2, judge=judge)
    assert len(agent.calls) + len(judge.calls) == 3 * (2 + 1) + 1  # whatever the judge replied
    assert result.winner_label == "A"  # the convergence winner: A and B tie as the most similar, A is first
    assert result.final == drafts["A"]
    assert result.judgment == f"{verdict}\nthe judge's choice could not be read ({why}); the convergence winner is used"
