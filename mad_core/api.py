"""A compact Python API after seed 004's `debate()`: one call runs a whole debate.

`debate(query, agents, rounds=2, judge=None, ...)` spawns agents from one model (or takes
(label, model) pairs); agents spawned from one model get distinct personas ("three runs of the same
model with different personas", seed 004: by default the Du preset's, `personas=` overrides), lets every agent draft independently and then revise `rounds` times
after seeing the others' drafts (Du et al.), and picks the final answer with the judge or,
without one, the convergence winner. With k agents, R rounds and a judge this makes exactly
k*(R+1)+1 model calls. A model is a litellm name or a Python callable (messages -> text),
which is registered as a litellm provider so it takes the same path as any other model.
Every other engine option is a keyword argument of `DebateConfig`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

from .config import AgentConfig, ConfigError, DebateConfig
from .controller import Controller
from .engine import DebateEngine
from .events import DecisionReached, TurnFinished
from .presets import preset_config

Model = Union[str, Callable[[list[dict]], str]]


@dataclass
class DebateRound:
    """Every agent's draft in one round (round 0 holds the first, independent drafts)."""

    round_index: int
    drafts: dict[str, str]


@dataclass
class DebateResult:
    """What `debate()` returns."""

    final: str
    winner_label: str | None
    rounds: list[DebateRound]
    judgment: str
    debate_id: str = ""
    status: str = ""


# Personas for agents spawned from one model beyond the Du preset's three (our own words, in its style).
MORE_PERSONAS = (
    "You are a careful checker. Recompute every step yourself and trust no number you have not verified.",
    "You are a plain-spoken teacher. Explain the simplest correct route to the answer and name common traps.",
    "You are a devil's advocate. Argue for the most plausible alternative answer before settling on one.",
)


def default_personas(k: int) -> list[str]:
    """k distinct personas for k agents of one model: the Du preset's (seed 004's same-model debate),
    then MORE_PERSONAS; more agents than that need `personas=` (ConfigError naming it)."""
    known = [agent.get("persona", "") for agent in preset_config("du_simultaneous")["agents"]]
    pool = list(dict.fromkeys([p for p in known if p] + list(MORE_PERSONAS)))
    if k > len(pool):
        raise ConfigError("personas", f"{k} agents of one model need {k} distinct personas and MAD Lab has "
                                      f"{len(pool)}: pass personas=[...] (one per agent)")
    return pool[:k]


def _model_name(model: Model) -> str:
    if callable(model):
        from .models.callables import register_callable

        return register_callable(model)
    return model


def debate(query: str, agents: Model | list[tuple[str, Model]], rounds: int = 2, judge: Model | None = None,
           personas: list[str] | None = None, n_agents_if_single: int = 3, *, store: Any = "default",
           controller: Controller | None = None, **options: Any) -> DebateResult:
    """Run a debate and return its result; `options` are any other DebateConfig fields."""
    if isinstance(agents, (list, tuple)):
        pairs = [(label, _model_name(model)) for label, model in agents]
    else:
        name = _model_name(agents)
        pairs = [(f"Agent {i + 1}", name) for i in range(n_agents_if_single)]
        if personas is None:
            personas = default_personas(len(pairs))
    if personas is not None and len(personas) != len(pairs):
        raise ConfigError("personas", f"expected {len(pairs)} personas (one per agent), got {len(personas)}")
    agent_cfgs = [AgentConfig(label=label, model=model, persona=(personas[i] if personas else ""))
                  for i, (label, model) in enumerate(pairs)]
    settings: dict[str, Any] = dict(
        # Round 1 holds the independent drafts (AAD), then `rounds` rounds of revision.
        question=query, agents=agent_cfgs, paradigm="simultaneous", all_agents_drafting=True, rounds=rounds + 1,
        max_rounds=rounds + 1, protocol="judge" if judge is not None else "convergence",
        judge_model=_model_name(judge) if judge is not None else None, judge_adaptive_break=False,
        extract_final_answers=False, vote_retries=0,  # exactly k*(R+1)+1 calls, whatever the judge replies
    )
    settings.update(options)
    config = DebateConfig.from_dict(settings)
    if store == "default":
        from .store import Store

        store = Store()
    engine = DebateEngine(config, controller=controller, store=store)
    drafts: dict[int, dict[str, str]] = {}
    decision: DecisionReached | None = None
    for event in engine.run():
        if isinstance(event, TurnFinished) and event.turn.kind in ("draft", "discussion") and event.turn.status == "ok":
            drafts.setdefault(event.turn.round, {})[event.turn.agent] = event.turn.content
        elif isinstance(event, DecisionReached):
            decision = event
    judgment = ""
    if decision is not None:  # the judge's verbatim verdict, with the fallback said when one was used
        notes = [decision.details.get("judgment") or "", decision.fallback or "",
                 "" if decision.details.get("judgment") else f"scores={decision.scores}"]
        judgment = "\n".join(note for note in notes if note)
    final = decision.answer if decision else ""
    last = drafts.get(max(drafts), {}) if drafts else {}
    if decision is not None and decision.winner_agent in last:
        final = last[decision.winner_agent]  # seed 004: the winning agent's final draft
    return DebateResult(
        final=final,
        winner_label=decision.winner_agent if decision else None,
        rounds=[DebateRound(r - 1, drafts[r]) for r in sorted(drafts)],  # round_index 0: the first drafts
        judgment=judgment,
        debate_id=engine.debate_id,
        status=engine.status,
    )
