"""Baselines a reviewer asks for beside a debate, as configurations of the same sweep.

Each baseline is derived from each configuration of the sweep (its model, its agents, its
protocol); derivations that come out the same run once. They run on the same items and seeds as
the debates, and every configuration is compared with its own baseline of each kind:

  * `single`: one agent (the configuration's first agent: its model, temperature and token
    limit, no persona) answers once, asked to reason step by step (`STEP_BY_STEP` is added to
    the item's instruction). Its answer is the decision.
  * `self_consistency`: k independent answers of that same agent, each asked to reason step by
    step (simultaneous, one round: nobody sees another answer; each sample gets its own sampling
    seed, `calls.call_seed`), decided by the majority of the answers as the task's answer type
    reads them (the `solution_counting` protocol; a tie goes to the first sample among the tied).
    k is matched to the configuration's call budget by default (`match: calls`: the model calls
    the debate makes when it decides after its set rounds, `live.plan_calls`), or given (`k: 5`).
    A token budget cannot be matched before the debates ran (their token use is known only
    afterwards), so `match: tokens` is refused with that reason.
  * `independent_vote`: the configuration's own agents (personas included) answer once,
    independently (simultaneous, one round, no drafts, no challenge), and its own protocol decides
    with no discussion.

In a spec::

    baselines: [single, self_consistency, independent_vote]
    baselines: [single, {name: self_consistency, k: 5}]

A baseline's configuration has the values {"baseline": name} (and "k" for self-consistency), a
key "b1", "b2", ... and no grid choice. Nothing here runs, writes or calls a model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, DebateConfig, short_repr
from ..live import plan_calls

STEP_BY_STEP = "Reason step by step, then give your final answer."
NAMES = ("single", "self_consistency", "independent_vote")
MATCHES = ("calls",)
MAX_K = 32  # the most agents a debate may have (config.MAX_AGENTS)
# Settings a baseline with agents of its own keeps from the configuration: how calls are made.
_CALL_SETTINGS = ("max_concurrency", "retry_attempts", "retry_base_delay", "retry_max_wait_s", "timeout_s", "cache")
_ONE_ROUND = {"paradigm": "simultaneous", "rounds": 1, "max_rounds": 1, "all_agents_drafting": False,
              "challenge": False}


@dataclass(frozen=True)
class BaselineSpec:
    """One entry of `baselines`: its name and, for self-consistency, k or how k is matched."""

    name: str
    k: int | None = None
    match: str = "calls"


def read_baselines(value: Any) -> list[BaselineSpec]:
    """The `baselines` list of a spec, checked; every problem names its entry (`baselines[1].k`)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError("baselines", f"expected a list of baseline names, got {short_repr(value)}")
    found = []
    for i, entry in enumerate(value):
        where = f"baselines[{i}]"
        spec = _one(entry, where)
        if spec in found:
            raise ConfigError(where, f"{spec.name} is given twice")
        found.append(spec)
    return found


def _one(entry: Any, where: str) -> BaselineSpec:
    if isinstance(entry, str):
        entry = {"name": entry}
    if not isinstance(entry, dict):
        raise ConfigError(where, f"expected a baseline name or a mapping with `name`, got {short_repr(entry)}")
    unknown = sorted(set(entry) - {"name", "k", "match"})
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}", "unknown key; a baseline takes name, k and match")
    name = entry.get("name")
    if name not in NAMES:
        raise ConfigError(f"{where}.name" if len(entry) > 1 else where,
                          f"unknown baseline {short_repr(name)}; baselines: {', '.join(NAMES)}")
    if name != "self_consistency" and ("k" in entry or "match" in entry):
        raise ConfigError(f"{where}.{'k' if 'k' in entry else 'match'}", "only self_consistency takes k or match")
    k, match = entry.get("k"), entry.get("match", "calls")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= MAX_K):
        raise ConfigError(f"{where}.k", f"expected a whole number of samples from 2 to {MAX_K}, got {short_repr(k)}")
    if k is not None and "match" in entry:
        raise ConfigError(f"{where}.match", "give k or match, not both")
    if match == "tokens":
        raise ConfigError(f"{where}.match", "a token budget cannot be matched before the debates ran (their token "
                                            "use is known only afterwards): give k, or match: calls")
    if match not in MATCHES:
        raise ConfigError(f"{where}.match", f"expected one of {', '.join(MATCHES)}, got {short_repr(match)}")
    return BaselineSpec(name, k, match)


def _first_agent(settings: dict[str, Any]) -> dict[str, Any]:
    """The configuration's first agent as a baseline keeps it: model, temperature, token limit."""
    defaults = DebateConfig(question="-").to_dict()["agents"]
    first = (settings.get("agents") or defaults)[0]
    first = first if isinstance(first, dict) else {}
    return {key: first.get(key, defaults[0][key]) for key in ("model", "temperature", "max_tokens")}


def _samples(settings: dict[str, Any], k: int) -> dict[str, Any]:
    """k answers of the configuration's first agent, counted by the answer type (no discussion)."""
    agent = _first_agent(settings)
    agents = [{"label": "Agent 1" if k == 1 else f"Sample {i + 1}", **agent} for i in range(k)]
    return {**{key: settings[key] for key in _CALL_SETTINGS if key in settings}, **_ONE_ROUND,
            "agents": agents, "protocol": "solution_counting", "extract_final_answers": False}


def independent_vote(settings: dict[str, Any]) -> dict[str, Any]:
    """The configuration's agents answer once each, independently; its protocol decides."""
    return {**settings, **_ONE_ROUND, "memory_window": None, "connectivity": "full"}


def call_budget(settings: dict[str, Any], probe: dict[str, Any]) -> int:
    """The model calls of a configuration's debate decided after its set rounds (`live.plan_calls`);
    `probe` adds one item's settings (question, answer type) so the config reads."""
    config = {**settings, **probe}
    plan = plan_calls(config)
    return plan.total(max(1, int(config.get("rounds") or DebateConfig(question="-").rounds)))


@dataclass(frozen=True)
class Derived:
    """A baseline derived from one configuration: its values, its debate settings, whether the
    item's instruction asks for step-by-step reasoning."""

    values: dict[str, Any]
    settings: dict[str, Any]
    step_by_step: bool

    @property
    def identity(self) -> str:
        return json.dumps([self.values, self.settings, self.step_by_step], sort_keys=True, default=str)


def derive(spec: BaselineSpec, settings: dict[str, Any], probe: dict[str, Any], where: str) -> Derived:
    """`spec`'s baseline for one configuration's settings; an impossible match names `where`."""
    if spec.name == "single":
        return Derived({"baseline": "single"}, _samples(settings, 1), True)
    if spec.name == "independent_vote":
        return Derived({"baseline": "independent_vote"}, independent_vote(settings), False)
    k = spec.k if spec.k is not None else call_budget(settings, probe)
    if not 2 <= k <= MAX_K:
        raise ConfigError(where, f"matching the call budget gives k = {k} samples; self-consistency needs 2 to "
                                 f"{MAX_K}: give k")
    return Derived({"baseline": "self_consistency", "k": k}, _samples(settings, k), True)
