"""The JSON schemas of the short replies MAD Lab asks for, built in one place (pure).

Ballots (every voting protocol), agreements (a challenge's AGREE / DISAGREE), final-answer
extractions and the judge's verdicts and choices are short replies with a fixed shape. A
backend that supports constrained output (llama.cpp's server, vLLM, a hosted model whose
litellm entry says so, a script that declares it: `models.response_format_support`) is
sent that shape as an OpenAI `response_format` of type json_schema and can only answer
with JSON that matches it. Every other backend reads the same request in words (the
prompts in prompts.py describe each shape) and answers in text. The readers take the JSON
form first and the text as the fallback (`ballots.parse_ballot`, `ballots.read_judge_verdict`,
`answers.parse_agreement`, `answers.extracted_answer`, `engine.read_label_choice`), and they
check what a schema cannot say: a cumulative ballot's sum, and uniqueness where a backend
ignores `uniqueItems`.

The shapes (solutions are numbered from 1, as the prompts show them):

  simple / judge vote   {"vote": 2}                       one of 1..n
  approval              {"approved": [1, 3]}              unique numbers of 1..n, at least one
  ranked                {"ranking": [2, 3, 1]}            each of 1..n once, best first
  cumulative            {"1": 6, "2": 4, "3": 0}          whole points 0..budget for every
                                                          solution; their sum is checked
                                                          after parsing (at most the budget)
  agreement             {"agree": false, "reason": "..."} reason at most 100 characters
  extraction            {"answer": "..."}                 at most 160 characters
  judge verdict         {"decision": "YES", "side": "Agent 2", "answer": "...", "reason": "..."}
                        two-sided: the side by debater label; other paradigms "participant": a
                        label or "none" instead of "side"
  judge choice          {"choice": "Agent 2"}             one of the participants' labels
  persona list          {"personas": ["Geologist: ...", ...]}  one expert per agent still without a
                                                          persona, each at most 160 characters

The per-player Knight-Knave-Spy mode (mad_core/kks_mode.py, seed 001 App. C) asks for
longer structured replies; their schemas are built from the puzzle's player names:

  assignment  {"roles": {"Ann": "knight", ...}, "confidence": {"Ann": 7, ...}, "explanation": "..."}
              (confidence only when agents report it)
  stance      {"player": "Ann", "role": "knave", "agree_with": ["Agent 2"], "disagree_with": [],
               "reasoning": "...", "confidence": 6}
  order       {"order": ["Cid", "Ann", "Bea"], "reason": "..."}   every player once
  supervisor  {"roles": {"Ann": "spy"}, "explanation": "..."}   the tied players, each one of its tied roles

Every object lists all its properties as required and allows no others (what strict modes
ask for). Length, size and range keywords (maxLength, minItems, maxItems, uniqueItems,
minimum, maximum) bound a reply where a grammar enforces them (llama.cpp, vLLM); the
hosted APIs' strict modes refuse some of them, so a "subset" backend gets the schema
without them (`portable`) and the readers check those bounds instead.

Each `ReplyFormat` also names its phase: its token limit is `config.PHASE_MAX_TOKENS`.
Nothing here calls a model or knows a backend.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..config import reply_max_tokens
from .rule import ballot_rule

AGREEMENT_REASON_CHARS = 100
ANSWER_CHARS = 160
VERDICT_REASON_CHARS = 240
JUDGE_DECISIONS = ("YES", "NO")
NO_PARTICIPANT = "none"  # a judge outside two-sided debates names no participant: it gives its own answer

# Keywords a grammar-based backend enforces and a hosted strict mode may refuse.
_BOUNDS = frozenset({"maxLength", "minLength", "minItems", "maxItems", "uniqueItems", "minimum", "maximum"})


@dataclass(frozen=True)
class ReplyFormat:
    """What a short call asks for: its phase (token limit) and the JSON schema of its reply.

    `solutions` is the number of solutions on a ballot (its token limit grows with them).
    `tokens`, when set, is the reply's own token limit, whatever the agent's `max_tokens` (a
    persona list: its size is set by the request, not by how long the agents may write).
    """

    phase: str
    name: str
    schema: dict[str, Any]
    solutions: int = 0
    tokens: int = 0

    def response_format(self, support: str | None) -> dict[str, Any] | None:
        """The OpenAI `response_format` for a backend with this `support` ("full", "subset"
        or None: none is sent)."""
        if support not in ("full", "subset"):
            return None
        schema = self.schema if support == "full" else portable(self.schema)
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": schema, "strict": True}}

    def max_tokens(self, agent_max_tokens: int, support: str | None = None) -> int:
        """The reply's token limit: `config.PHASE_MAX_TOKENS`, never above the agent's own,
        except on a backend whose grammar enforces the whole schema (`support` "full"): its
        reply is bounded by the schema itself, so the limit is raised to the longest reply
        the schema allows (`worst_case_tokens`) and a degenerate reply ("1.1.1.1...") fills a
        string to its maxLength and closes the object instead of being cut off mid-JSON."""
        limit = self.tokens or reply_max_tokens(self.phase, agent_max_tokens, self.solutions)
        if support == "full":
            return max(limit, worst_case_tokens(self.schema))
        return limit


_SEPARATOR_TOKENS = 4  # a grammar lets a bounded run of whitespace stand around each "{", ":", ","


def worst_case_tokens(schema: dict[str, Any]) -> int:
    """An upper bound on the tokens of a reply that matches `schema`, counting one token per
    character of every value (a tokenizer never needs more, but for characters outside
    ASCII) and a few per separator. Used where a grammar enforces the schema's bounds; a
    string without maxLength or an array without maxItems counts as 1,000 characters."""
    if "enum" in schema:
        return max(len(json.dumps(value)) for value in schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return 2 + sum(len(json.dumps(key)) + worst_case_tokens(value) + 2 * _SEPARATOR_TOKENS
                       for key, value in properties.items())
    if kind == "array":
        items = schema.get("maxItems", 1000)
        return 2 + items * (worst_case_tokens(schema.get("items", {})) + _SEPARATOR_TOKENS)
    if kind == "string":
        return 2 + schema.get("maxLength", 1000)
    if kind == "integer":
        return max(len(str(schema.get(bound, -10 ** 18))) for bound in ("minimum", "maximum"))
    return 5  # boolean, null, or a number a grammar spells out briefly


def portable(schema: Any) -> Any:
    """`schema` without the length, size and range keywords hosted strict modes may refuse."""
    if isinstance(schema, dict):
        return {key: portable(value) for key, value in schema.items() if key not in _BOUNDS}
    if isinstance(schema, list):
        return [portable(value) for value in schema]
    return schema


def closed_object(**properties: dict[str, Any]) -> dict[str, Any]:
    """A closed object: every property required, no other allowed."""
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def _text(max_chars: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_chars}


def solution_number(n_solutions: int) -> dict[str, Any]:
    """One solution number, 1..n (as the prompts show them)."""
    return {"type": "integer", "enum": list(range(1, n_solutions + 1))}


def solution_numbers(n_solutions: int, least: int) -> dict[str, Any]:
    """A list of at least `least` different solution numbers."""
    return {"type": "array", "items": solution_number(n_solutions), "minItems": least, "maxItems": n_solutions,
            "uniqueItems": True}


def ballot_format(protocol: str, n_solutions: int, points: int) -> ReplyFormat | None:
    """The ballot of a protocol over `n_solutions`: its rule's `schema` (`rule.ballot_rule`; None
    for a protocol without one). `points` is the cumulative-voting budget."""
    rule = ballot_rule(protocol)
    if rule is None:
        return None
    return ReplyFormat("ballot", rule.ballot_name, rule.schema(n_solutions, points), n_solutions)


def agreement_format() -> ReplyFormat:
    """AGREE / DISAGREE with the answer put to the agent, and why (briefly)."""
    return ReplyFormat("agreement", "agreement",
                       closed_object(agree={"type": "boolean"}, reason=_text(AGREEMENT_REASON_CHARS)))


def extraction_format() -> ReplyFormat:
    """The bare final answer pulled out of a reply (seed 000 E.1)."""
    return ReplyFormat("extraction", "final_answer", closed_object(answer=_text(ANSWER_CHARS)))


def verdict_format(labels: list[str], sided: bool = True) -> ReplyFormat:
    """The discriminative judge's verdict (seed 002): the fields its prompt asks for, and a reason.

    The judge names whom it supports by label: in a two-sided debate (`sided`) the debater whose side
    it supports ("side", one of `labels`; MAD's judge names "Affirmative" or "Negative", which the
    reader still takes for two debaters); in any other paradigm the participant whose answer is
    correct, or "none" ("participant")."""
    if sided:
        named = {"side": {"type": "string", "enum": list(labels)}}
    else:
        named = {"participant": {"type": "string", "enum": [*labels, NO_PARTICIPANT]}}
    return ReplyFormat("verdict", "judge_verdict", closed_object(
        decision={"type": "string", "enum": list(JUDGE_DECISIONS)},
        **named,
        answer=_text(ANSWER_CHARS),
        reason=_text(VERDICT_REASON_CHARS),
    ))


def choice_format(labels: list[str]) -> ReplyFormat:
    """The judge names the participant whose draft is best (seed 004)."""
    return ReplyFormat("choice", "judge_choice", closed_object(choice={"type": "string", "enum": list(labels)}))


PERSONA_CHARS = 160  # one expert description (mad_core/personas.py also bounds its words)
PERSONA_TOKENS = 48  # a description's tokens, with room for its quotes and comma


def persona_list_format(n: int) -> ReplyFormat:
    """Exactly `n` short expert descriptions, one per agent (seed 000's personas, after Kim et al.)."""
    return ReplyFormat("personas", "persona_list", closed_object(personas={
        "type": "array", "items": _text(PERSONA_CHARS), "minItems": n, "maxItems": n}), tokens=16 + PERSONA_TOKENS * n)


# ----- the per-player Knight-Knave-Spy mode (seed 001 App. C) -----------------------------------
KKS_ROLES = ("knight", "knave", "spy")
# A reason's length bounds the reply (a grammar backend gets room for the longest reply its schema
# allows) and so the history every later turn re-reads: with 400 characters the fifth player's
# self-adjustments of a 5-player, 3-agent debate on SmolLM2 passed the local server's shared context.
KKS_REASON_CHARS = 200
CONFIDENCE_SCALE = {"type": "integer", "minimum": 1, "maximum": 10}


def _rolesclosed_object(allowed: dict[str, list[str]]) -> dict[str, Any]:
    return closed_object(**{name: {"type": "string", "enum": list(roles)} for name, roles in allowed.items()})


def kks_assignment_format(names: list[str], confidence: bool) -> ReplyFormat:
    """A complete role assignment (proposal, self-adjustment, final decision), with a
    confidence 1-10 per player when agents report it."""
    fields: dict[str, Any] = {"roles": _rolesclosed_object({name: list(KKS_ROLES) for name in names})}
    if confidence:
        fields["confidence"] = closed_object(**{name: dict(CONFIDENCE_SCALE) for name in names})
    fields["explanation"] = _text(KKS_REASON_CHARS)
    return ReplyFormat("kks_assignment", "kks_assignment", closed_object(**fields))


def kks_stance_format(player: str, others: list[str], confidence: bool) -> ReplyFormat:
    """A debate-phase reply about one player: its role, whom the agent agrees and disagrees with."""
    peers = ({"type": "array", "items": {"type": "string", "enum": list(others)}, "maxItems": len(others),
              "uniqueItems": True} if others else {"type": "array", "items": {"type": "string"}, "maxItems": 0})
    fields: dict[str, Any] = {"player": {"type": "string", "enum": [player]},
                              "role": {"type": "string", "enum": list(KKS_ROLES)},
                              "agree_with": peers, "disagree_with": peers, "reasoning": _text(KKS_REASON_CHARS)}
    if confidence:
        fields["confidence"] = dict(CONFIDENCE_SCALE)
    return ReplyFormat("kks_stance", "kks_stance", closed_object(**fields))


def kks_order_format(names: list[str]) -> ReplyFormat:
    """The order in which an agent proposes to discuss the players: each one exactly once."""
    return ReplyFormat("kks_order", "kks_order", closed_object(
        order={"type": "array", "items": {"type": "string", "enum": list(names)}, "minItems": len(names),
               "maxItems": len(names), "uniqueItems": True},
        reason=_text(VERDICT_REASON_CHARS)))


def kks_supervisor_format(tied: dict[str, list[str]]) -> ReplyFormat:
    """The supervisor's roles for the tied players, each among the roles tied for it."""
    return ReplyFormat("kks_supervisor", "kks_supervisor",
                       closed_object(roles=_rolesclosed_object(tied), explanation=_text(KKS_REASON_CHARS)))
