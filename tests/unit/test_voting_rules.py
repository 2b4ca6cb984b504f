"""Voting rules and the protocol registry (issue 20, item 3: one voting rule = one file).

A completeness check over everything registered (every voting rule has its instruction, ballot
schema, readers, scoring and unit; every protocol counts its own calls; every name the
configuration accepts resolves; the registry imports nothing of the project), and a toy rule
defined inside a test that registers, runs a scripted debate and decides: adding a rule takes
one file and one test.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from mad_core import DebateConfig, DebateEngine, registry
from mad_core.config import ConfigError
from mad_core.events import DecisionReached, VoteCast
from mad_core.live import plan_calls
from mad_core.metrics import vote_breakdown
from mad_core.prompts import vote_prompt
from mad_core.protocols.ballots import Ballot, bad, named_numbers, one_solution, parse_ballot
from mad_core.protocols.counting import CUMULATIVE_POINTS, check_index, tally
from mad_core.protocols.decision import Protocol, Voting
from mad_core.protocols.rule import VotingRule, ballot_rule, voting_rule, voting_rules
from mad_core.protocols.schemas import ballot_format, closed_object, solution_number

SETTINGS = frozenset(f.name for f in dataclasses.fields(DebateConfig))


def _example(schema: dict[str, Any]) -> Any:
    """The smallest JSON value that matches `schema` (the shapes `schemas` builds)."""
    if "enum" in schema:
        return schema["enum"][-1]
    kind = schema["type"]
    if kind == "object":
        return {key: _example(value) for key, value in schema["properties"].items()}
    if kind == "array":
        items = schema["items"]
        pool = items.get("enum") or [_example(items)]
        return list(reversed(pool))[:max(1, schema.get("minItems", 1))]
    if kind == "integer":
        return schema.get("minimum", 1)
    return {"string": "x", "boolean": True}.get(kind)


# ----- completeness over the registry ------------------------------------------------------------
@pytest.mark.parametrize("name", registry.names("protocol"))
def test_every_protocol_counts_its_own_calls_and_names_real_options(name):
    component = registry.get("protocol", name)
    assert component.name == name
    assert component.calls_per_attempt is not Protocol.calls_per_attempt, f"{name} does not count its calls"
    cfg = DebateConfig(question="q", protocol=name)
    for extract in (True, False):
        calls = component().calls_per_attempt(dataclasses.replace(cfg, extract_final_answers=extract), 3, 3)
        assert isinstance(calls, int) and calls >= 0
    assert set(component.options) <= SETTINGS, f"{name} names options that are no settings"
    check = getattr(component, "check_config", None)
    if check is not None:  # its rule on the rest of the configuration: passes, or names the problem
        try:
            check(cfg)
        except ConfigError as problem:
            assert problem.field in SETTINGS


@pytest.mark.parametrize("name", voting_rules())
def test_every_voting_rule_has_instruction_schema_readers_scoring_and_unit(name):
    rule = voting_rule(name)
    assert isinstance(rule, Voting) and rule.name == name
    assert rule.instruction.strip() and rule.unit.strip() and rule.ballot_name
    assert "{" not in rule.instruction.format(points=CUMULATIVE_POINTS).replace('{"', "")  # no placeholder left
    shape = ballot_format(name, 3, CUMULATIVE_POINTS)
    assert shape.name == rule.ballot_name and shape.schema["type"] == "object"
    assert shape.schema["additionalProperties"] is False
    assert shape.schema["required"] == list(shape.schema["properties"])
    if rule.json_key is not None:  # a key of its JSON form, and a reader of that form
        assert rule.json_key in shape.schema["properties"]
        assert type(rule).read_json is not VotingRule.read_json
    # A reply in the rule's own schema (what constrained output sends) is a valid ballot that `tally` counts.
    reply = json.dumps(_example(shape.schema))
    ballot = parse_ballot(name, reply, 3)
    assert ballot.valid, ballot.reason
    assert tally(name, [ballot.value], 3).valid == 1
    assert vote_breakdown(name, [ballot.value, None], 3)["unit"] == rule.unit
    unreadable = parse_ballot(name, "nothing to read here", 3)
    assert (unreadable.valid, unreadable.value) == (False, None) and unreadable.reason
    asked = vote_prompt("system", name, "q", "", ["a", "b", "c"], CUMULATIVE_POINTS)[1]["content"]
    assert asked.endswith(rule.instruction.format(points=CUMULATIVE_POINTS)) and asked.count("Solution ") == 3


def test_voting_rules_and_ballots_are_named_once():
    names = voting_rules()
    assert names == ["simple_voting", "approval_voting", "ranked_voting", "cumulative_voting"]
    schema_names = [ballot_rule(name).ballot_name for name in [*names, "judge"]]
    assert len(set(schema_names)) == len(schema_names)  # a scripted backend tells ballots apart by schema name
    assert ballot_rule("judge").ballot_name == "vote" and ballot_rule("majority_consensus") is None


@pytest.mark.parametrize("kind", registry.KINDS)
def test_every_name_the_configuration_accepts_resolves(kind):
    for name in registry.names(kind):
        assert registry.get(kind, name) is not None
        problems = DebateConfig.problems({"question": "q", "agents": [{"label": "A", "model": "scripted/x"}],
                                          kind: name}, check_models=False)
        assert not [p for p in problems if "unknown" in str(p) or "valid choices" in str(p)], (name, problems)


def test_the_registry_imports_nothing_of_the_project_and_every_builtin_registers():
    source = Path(registry.__file__).read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and not (node.module or "").startswith("mad_core"), ast.unparse(node)
        if isinstance(node, ast.Import):
            assert not any(alias.name.startswith("mad_core") for alias in node.names), ast.unparse(node)
    modules = {getattr(registry.get(kind, name), "__module__", None)
               for kind, names in registry.components().items() for name in names}
    for module in registry.BUILTIN:
        assert importlib.util.resolve_name(module, "mad_core") in modules, f"{module} registers nothing"


# ----- a toy rule: one class, registered, decides a scripted debate --------------------------------
@pytest.fixture
def own_registry(monkeypatch):
    """Protocols registered in the test are gone after it (the built-ins are loaded first)."""
    registry.names("protocol")
    monkeypatch.setitem(registry._REGISTRY, "protocol", dict(registry._REGISTRY["protocol"]))


def test_a_toy_rule_registers_runs_a_scripted_debate_and_decides(own_registry, script, roles):
    @registry.register("protocol", "veto_voting")
    class VetoVoting(Voting):
        """Each agent vetoes one solution; the solution vetoed least wins."""

        instruction = "Veto the one solution you find worst. Reply with its number only."
        unit = "vetoes spared"
        json_key = "veto"

        def schema(self, n_solutions: int, points: int) -> dict[str, Any]:
            return closed_object(veto=solution_number(n_solutions))

        def read_text(self, text: str, n_solutions: int, points: int) -> Ballot:
            numbers = named_numbers(text)
            return one_solution(numbers[0], n_solutions) if len(numbers) == 1 else bad("name one solution to veto")

        def read_json(self, value: Any, n_solutions: int, points: int) -> Ballot:
            return one_solution(value, n_solutions)

        def score(self, ballot: Any, n_solutions: int) -> list[float]:
            points = [1.0] * n_solutions
            points[check_index(ballot, n_solutions, ballot)] = 0.0
            return points

    vetoes = {"Agent 1": "I veto solution 2.", "Agent 2": "Solution 1", "Agent 3": "2"}
    model, calls = script(roles(answers={"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Nice"}, votes=vetoes))
    data = {"question": "What is the capital of France?", "rounds": 1, "max_rounds": 1, "protocol": "veto_voting",
            "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)]}
    events = list(DebateEngine(DebateConfig.from_dict(data)).run())

    votes = [e for e in events if isinstance(e, VoteCast)]
    assert sorted((v.agent, v.ballot, v.valid) for v in votes) == [("Agent 1", 1, True), ("Agent 2", 0, True),
                                                                   ("Agent 3", 1, True)]
    asked = [c for c in calls.history if c["metadata"]["kind"] == "vote"]
    assert all(VetoVoting.instruction in c["messages"][-1]["content"] for c in asked)
    decision = next(e for e in events if isinstance(e, DecisionReached))
    assert (decision.answer, decision.winner_agent) == ("Nice", "Agent 3")  # vetoed by nobody
    assert plan_calls(data).per_attempt == 6  # extractions and ballots, counted by Voting
    assert vote_breakdown("veto_voting", [v.ballot for v in votes], 3)["counts"] == [2.0, 1.0, 3.0]


def test_a_rule_registered_in_a_test_is_gone_after_it():
    assert "veto_voting" not in registry.names("protocol")
