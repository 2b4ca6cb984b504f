"""Turn a model's voting reply into a ballot that `counting.tally` accepts (pure).

Prompts number solutions from 1 ("Solution 1", "Solution 2", ...); ballots use 0-based
indices. The parsers accept the ways real models answer ("I vote for Solution 2.", "**2**",
"1 > 3 > 2", a JSON object inside a code fence, ...) but never guess: a reply that could be
read two ways is an invalid ballot whose `reason` says why.

Reading rule for numbers: when the reply names solutions explicitly ("Solution 2",
"Solutions 1, 3", "Option 2"), only those mentions count; otherwise every bare number does.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .counting import CUMULATIVE_POINTS


@dataclass
class Ballot:
    """A parsed ballot: `value` is what `tally` expects (0-based), or None when invalid."""

    value: Any
    valid: bool
    reason: str | None = None


def _ok(value: Any) -> Ballot:
    return Ballot(value=value, valid=True, reason=None)


def _bad(reason: str) -> Ballot:
    return Ballot(value=None, valid=False, reason=reason)


# --- text clean-up and number extraction -------------------------------------------------

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_MARKDOWN = re.compile(r"[*`]")
_BARE_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.]*\d)")  # not part of a word or decimal
_NAMED = re.compile(
    r"\b(?:solution|option|candidate)s?\s*(?:no\.?|number)?\s*#?\s*"
    r"(\d+(?:\s*(?:,|;|&|>|and|or|then)\s*#?\s*\d+)*)",
    re.I,
)


def _clean(text: str) -> str:
    """Drop reasoning blocks (<think>...</think>) and markdown bold/code characters."""
    return _MARKDOWN.sub("", _THINK.sub("", text or ""))


def _mentioned_numbers(text: str) -> list[int]:
    """Solution numbers in order of mention (see the module's reading rule)."""
    named = _NAMED.findall(text)
    if named:
        return [int(n) for group in named for n in re.findall(r"\d+", group)]
    return [int(n) for n in _BARE_NUMBER.findall(text)]


def _out_of_range(numbers: list[int], n_solutions: int) -> str | None:
    for number in numbers:
        if not 1 <= number <= n_solutions:
            return f"solution {number} does not exist (there are {n_solutions})"
    return None


def _first_seen(numbers: list[int]) -> list[int]:
    return list(dict.fromkeys(numbers))


# --- one parser per ballot kind ----------------------------------------------------------

def _parse_simple(text: str, n_solutions: int, points: int) -> Ballot:
    numbers = _first_seen(_mentioned_numbers(_clean(text)))
    if not numbers:
        return _bad("no solution number found")
    if len(numbers) > 1:
        listed = ", ".join(str(n) for n in numbers)
        return _bad(f"ambiguous vote: the reply names several solutions ({listed})")
    problem = _out_of_range(numbers, n_solutions)
    return _bad(problem) if problem else _ok(numbers[0] - 1)


def _parse_approval(text: str, n_solutions: int, points: int) -> Ballot:
    numbers = _first_seen(_mentioned_numbers(_clean(text)))
    if not numbers:
        return _bad("no solution number found")
    problem = _out_of_range(numbers, n_solutions)
    return _bad(problem) if problem else _ok([n - 1 for n in numbers])


def _parse_ranked(text: str, n_solutions: int, points: int) -> Ballot:
    numbers = _mentioned_numbers(_clean(text))
    if not numbers:
        return _bad("no ranking found")
    repeated = [n for n in _first_seen(numbers) if numbers.count(n) > 1]
    if repeated:
        return _bad(f"solution {repeated[0]} is ranked more than once")
    problem = _out_of_range(numbers, n_solutions)
    return _bad(problem) if problem else _ok([n - 1 for n in numbers])


_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.S)
_POINTS_PAIR = re.compile(
    r"(?:\b(?:solution|option)\s*#?\s*)?[\"']?(\d+)[\"']?\s*(?::|=|->|→|gets|receives)\s*"
    r"(-?\d+(?:\.\d+)?)",
    re.I,
)


def _json_pairs(text: str) -> list[tuple[str, Any]] | None:
    """Key/value pairs of the first JSON object in `text` (duplicates kept), else None."""
    for candidate in _JSON_OBJECT.findall(text):
        try:
            return json.loads(candidate, object_pairs_hook=list)
        except ValueError:
            continue
    return None


def _allocation_pairs(text: str) -> list[tuple[str, Any]]:
    pairs = _json_pairs(text)
    if pairs is not None:
        return pairs
    return _POINTS_PAIR.findall(text)


def _as_solution_number(key: Any) -> int | None:
    found = re.fullmatch(r"\s*(?:solution[\s_]*)?#?\s*(\d+)\s*", str(key), re.I)
    return int(found.group(1)) if found else None


def _as_points(value: Any) -> int | None:
    """Whole, possibly negative, number of points, or None when it is not one."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else None


def _parse_cumulative(text: str, n_solutions: int, points: int) -> Ballot:
    pairs = _allocation_pairs(_clean(text))
    if not pairs:
        return _bad("no points allocation found")
    allocation: dict[int, int] = {}
    for key, value in pairs:
        number, given = _as_solution_number(key), _as_points(value)
        if number is None:
            return _bad(f"{key!r} is not a solution number")
        if given is None:
            return _bad(f"points for solution {number} must be a whole number, got {value!r}")
        if given < 0:
            return _bad(f"solution {number} is given negative points ({given})")
        if number in allocation:
            return _bad(f"solution {number} is given points more than once")
        allocation[number] = given
    problem = _out_of_range(list(allocation), n_solutions)
    if problem:
        return _bad(problem)
    total = sum(allocation.values())
    if total > points:
        return _bad(f"points sum to {total}, more than the {points} allowed")
    return _ok({number - 1: given for number, given in allocation.items()})


_PARSERS: dict[str, Callable[[str, int, int], Ballot]] = {
    "simple_voting": _parse_simple,
    "approval_voting": _parse_approval,
    "ranked_voting": _parse_ranked,
    "cumulative_voting": _parse_cumulative,
    "judge": _parse_simple,  # a judge picking the best solution casts one simple vote
}


def parse_ballot(
    protocol: str, text: str, n_solutions: int, points: int = CUMULATIVE_POINTS
) -> Ballot:
    """Parse a voting reply for `protocol` over `n_solutions` (numbered from 1 in the text).

    `points` is the cumulative-voting budget; giving fewer points is allowed ("up to").
    """
    try:
        parser = _PARSERS[protocol]
    except KeyError:
        raise ValueError(
            f"no ballot format for protocol {protocol!r}; valid names: {', '.join(_PARSERS)}"
        ) from None
    return parser(text or "", n_solutions, points)


# --- discriminative judge (seed 002) -----------------------------------------------------

_YES_NO = {"yes": True, "true": True, "no": False, "false": False}
_DECISION_KEYS = ("decision", "verdict", "preference", "solution obtained")
_ANSWER_KEYS = ("debate_answer", "final answer", "answer")
_DECISION = re.compile(
    r"(?:decision|verdict|solution obtained)\W*?[:=]\W*(yes|no|true|false)\b", re.I
)
_LEADING_DECISION = re.compile(r"^\W*(yes|no)\b", re.I)
_ANSWER = re.compile(r"(?:final answer|answer)\W*?[:=][ \t]*(.+)", re.I)


def _judge_json(text: str) -> tuple[bool | None, str] | None:
    """Verdict from a JSON reply such as the MAD code's judge asks for, else None."""
    pairs = _json_pairs(text)
    if not pairs:
        return None
    fields = {str(key).strip().lower(): value for key, value in pairs}
    decision = next(
        (_YES_NO.get(str(v).strip().lower()) for k, v in fields.items()
         if any(word in k for word in _DECISION_KEYS)),
        None,
    )
    answer = next((str(fields[k]).strip() for k in _ANSWER_KEYS if k in fields), "")
    return decision, answer


def parse_judge_verdict(text: str) -> tuple[bool | None, str]:
    """Read the discriminative judge's verdict: was a correct solution reached?

    Accepts a JSON object (keys like "Whether there is a preference": "Yes" and
    "debate_answer", as in the MAD code), labelled lines ("Decision: YES" / "Answer: ..."),
    or a reply opening with a bare yes/no. Returns (decision, answer): decision is None
    when no verdict can be read; answer is "" when the judge gave none.
    """
    cleaned = _clean(text)
    from_json = _judge_json(cleaned)
    if from_json is not None and from_json[0] is not None:
        return from_json
    found = _DECISION.search(cleaned) or _LEADING_DECISION.search(cleaned)
    decision = None if found is None else _YES_NO[found.group(1).lower()]
    answers = _ANSWER.findall(cleaned)
    return decision, answers[-1].strip() if answers else ""
