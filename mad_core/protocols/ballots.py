"""Turn a model's voting reply into a ballot that `counting.tally` accepts, and read the
discriminative judge's verdict (pure).

Each voting rule reads its own ballots (`read_text`, `read_json` in its file: simple_voting.py,
...) with the pieces here (`named_numbers`, `distinct`, `allocation_pairs`, `ok`, `bad`, ...);
`parse_ballot` finds the rule by the protocol's name (`rule.ballot_rule`) and keeps the
contract below for all of them.

Prompts number solutions from 1 ("Solution 1", "Solution 2", ...); ballots use 0-based
indices. The parsers accept the ways real models answer ("I vote for Solution 2.", "**2**",
"1 > 3 > 2", a JSON object inside a code fence, ...) but never guess: a reply that could be
read two ways is an invalid ballot whose `reason` says why.

JSON first: a backend with constrained output answers with the JSON object of
protocols/schemas.py ({"vote": 2}, {"approved": [1, 3]}, {"ranking": [2, 3, 1]}, or the points
mapping {"1": 6, "2": 4}); when the whole reply is such an object (`answers.json_reply`) it
is read and checked as JSON: every number must be a solution number, approvals and rankings
may not repeat one, points must be whole, not negative and sum to at most the budget. Any
other reply is read as text, as below.

Reading rule for numbers: when the reply names solutions explicitly ("Solution 2",
"Solutions 1, 3", "Option 2"), only those mentions count; otherwise every bare number does.
A number of more than 18 digits is never a solution number or a points value.

Judge verdicts (seed 002, MAD): MAD's released code asks its judge for a dictionary
{"Whether there is a preference": "Yes or No", "Supported Side": "Affirmative or Negative",
"Reason": "", "debate_answer": ""} and reads the reply with eval(); the moderator's verdicts
in its released debate logs are single-quoted Python dicts (a final extraction may be JSON:
{"Reason": ..., "Correct Translation": ...}). `read_judge_verdict` reads JSON and
single-quoted dictionaries with a small tokenizer (never eval, never ast.literal_eval, whose
parser recurses and can exhaust the stack or take long on hostile input) and returns a
`Verdict` (decision, answer, side, reason); `parse_judge_verdict` keeps the older
(decision, answer) view.

Contract (a reply is untrusted text, up to any length):
  * never raises: `parse_ballot` returns a `Ballot` for any string (or None) and any
    protocol name, either valid with a value in range or invalid with a short, non-empty
    `reason` (an unknown protocol, a number of more than 18 digits, points beyond 1e18 ...;
    JSON that Python's parser cannot read, nested too deep for instance, is no JSON; and,
    as a last guard, "unreadable reply (<error>)" for any error nobody foresaw).
    `read_judge_verdict` returns Verdict(None, "", None, "") when it cannot read a reply
    (and `parse_judge_verdict`, its (decision, answer), (None, ""));
  * linear time: a reply of n characters is read in O(n). No pattern can backtrack into
    itself (possessive `*+`/`++` where quantifiers meet; no rescans from every position),
    and no loop compares every number with every other. bench/parsers.py times 100,000-
    character hostile replies (well under 50 ms each).
"""
from __future__ import annotations

import itertools
import json
import math
import re
import reprlib
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from ..answers import json_reply, never_raises
from .counting import CUMULATIVE_POINTS
from .rule import Ballot, ballot_protocols, ballot_rule  # Ballot: also imported from here


def ok(value: Any) -> Ballot:
    """A valid ballot of `value` (0-based)."""
    return Ballot(value=value, valid=True, reason=None)


def bad(reason: str) -> Ballot:
    """An invalid ballot, and why."""
    return Ballot(value=None, valid=False, reason=reason)


class _NotABallot(Exception):
    """Raised inside the parsers, deep down, when the reply cannot be a ballot; the message
    is the reason. `parse_ballot` turns it into an invalid ballot."""


_MAX_DIGITS = 18  # longer digit strings are neither solution numbers nor points
_POINTS_LIMIT = 10 ** _MAX_DIGITS
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxlong = _SHORT.maxother = 40


def _short(value: Any) -> str:
    """repr(value), cut to about 40 characters (reasons quote replies of any size)."""
    return _SHORT.repr(value)


def listing(numbers: list[int], most: int = 10) -> str:
    """"1, 3" -- or the first `most` numbers and how many there are in all."""
    shown = ", ".join(str(n) for n in numbers[:most])
    return shown if len(numbers) <= most else f"{shown}, ... ({len(numbers)} in all)"


# --- text clean-up and number extraction -------------------------------------------------

_THINK_OPEN = re.compile(r"<think>", re.I)
_THINK_CLOSE = re.compile(r"</think>", re.I)
_MARKDOWN = re.compile(r"[*`]")
# A leading "(?=[...])" names the characters a match can start with: `re` then skips
# other positions quickly (the expression reads the same without it).
_BARE_NUMBER = re.compile(r"(?=\d)(?<![\w.])\d++(?![\w.]*\d)")  # not part of a word or decimal
_NAMED = re.compile(
    r"(?=[soc])\b(?:solution|option|candidate)s?\s*+(?:no\.?|number)?\s*+#?\s*+"
    r"(\d++(?:\s*+(?:,|;|&|>|and|or|then)\s*+#?\s*+\d++)*+)",
    re.I,
)
_DIGITS = re.compile(r"\d+")


def _without_thinking(text: str) -> str:
    """`text` without its <think>...</think> blocks (what re.sub of "<think>.*?</think>"
    gives, in one pass: an opening tag with no closing tag after it ends the search)."""
    kept, position = [], 0
    while (opening := _THINK_OPEN.search(text, position)) is not None:
        closing = _THINK_CLOSE.search(text, opening.end())
        if closing is None:
            break
        kept.append(text[position:opening.start()])
        position = closing.end()
    kept.append(text[position:])
    return "".join(kept)


def clean(text: str) -> str:
    """Drop reasoning blocks (<think>...</think>) and markdown bold/code characters."""
    return _MARKDOWN.sub("", _without_thinking(text or ""))


def _number(digits: str, written: Any) -> int:
    """The solution number `digits` (as `written` in the reply); over-long is no number."""
    if len(digits) > _MAX_DIGITS:
        raise _NotABallot(
            f"{_short(written)} is not a solution number (more than {_MAX_DIGITS} digits)"
        )
    return int(digits)


def mentioned_numbers(text: str) -> list[int]:
    """Solution numbers in order of mention (see the module's reading rule)."""
    named = _NAMED.findall(text)
    if named:
        tokens = _DIGITS.findall(" ".join(named))
    else:
        tokens = _BARE_NUMBER.findall(text)
    value = {token: _number(token, token) for token in dict.fromkeys(tokens)}  # each once
    return list(map(value.__getitem__, tokens))


def out_of_range(numbers: list[int], n_solutions: int) -> str | None:
    for number in numbers:
        if not 1 <= number <= n_solutions:
            return f"solution {number} does not exist (there are {n_solutions})"
    return None


def first_seen(numbers: list[int]) -> list[int]:
    return list(dict.fromkeys(numbers))


# --- the pieces the rules read their ballots with (simple_voting.py, ...) ---------------------

def _repeated(numbers: list[int]) -> int | None:
    """The first number that `numbers` holds more than once, or None."""
    times = Counter(numbers)
    return next((n for n in first_seen(numbers) if times[n] > 1), None)


def distinct(numbers: list[int], n_solutions: int, none: str, verb: str) -> Ballot:
    """A ballot of solution numbers, each named once, in order (a ranking, JSON approvals);
    `none` is the reason when there are none, `verb` says what a repeated number is."""
    if not numbers:
        return bad(none)
    repeated = _repeated(numbers)
    if repeated is not None:
        return bad(f"solution {repeated} is {verb} more than once")
    problem = out_of_range(numbers, n_solutions)
    return bad(problem) if problem else ok([n - 1 for n in numbers])


def one_solution(value: Any, n_solutions: int) -> Ballot:
    """The ballot of the one solution number `value` writes (2, "2", "Solution 2")."""
    number = as_solution_number(value)
    problem = out_of_range([number], n_solutions)
    return bad(problem) if problem else ok(number - 1)


def named_numbers(text: str) -> list[int]:
    """The solution numbers a reply names, in order of mention, each once (`mentioned_numbers`)."""
    return first_seen(mentioned_numbers(clean(text)))


# a "{...}" without braces inside that may be a JSON object: "{}" or opening with a key
_JSON_OBJECT = re.compile(r'\{\s*+(?:"[^{}]*+)?\}')
_JSON = json.JSONDecoder(object_pairs_hook=list)
_JSON_TRIES = 100  # candidates that fail to parse before a reply is taken for no JSON
_POINTS_PAIR = re.compile(
    r"(?=[so\"'\d])(?:\b(?:solution|option)\s*+#?\s*+)?[\"']?(?<!\d)(\d++)[\"']?\s*+"
    r"(?::|=|->|→|gets|receives)\s*+(-?\d++(?:\.\d++)?)",
    re.I,
)
_SOLUTION_KEY = re.compile(r"\s*+(?:solution[\s_]*+)?#?\s*+(\d++)\s*+", re.I)


def _json_pairs(text: str) -> list[tuple[str, Any]] | None:
    """Key/value pairs of the first JSON object in `text` (duplicates kept), else None.

    Objects nested in objects are not looked into; arrays nested too deep for the parser
    (RecursionError), like numbers of more than 4,300 digits (ValueError), make a
    candidate no JSON. After `_JSON_TRIES` candidates that are no JSON the search stops
    (each failed try costs microseconds: "{"}" repeated 30,000 times would take 0.3 s).
    """
    for candidate in itertools.islice(_JSON_OBJECT.finditer(text), _JSON_TRIES):
        try:
            return _JSON.decode(candidate.group())
        except (ValueError, RecursionError):
            continue
    return None


def allocation_pairs(text: str) -> list[tuple[str, Any]]:
    """(solution, points) pairs: those of the first JSON object in `text`, else every "2: 4",
    "Solution 1 = 6", ... written in it."""
    pairs = _json_pairs(text)
    if pairs is not None:
        return pairs
    return _POINTS_PAIR.findall(text)


def as_solution_number(key: Any) -> int:
    """The solution number `key` writes ("2", "Solution 2", "#2"); not a ballot when none."""
    found = _SOLUTION_KEY.fullmatch(str(key))
    if found is None:
        raise _NotABallot(f"{_short(key)} is not a solution number")
    return _number(found.group(1), key)


def as_points(number: int, value: Any) -> int:
    """The whole, possibly negative, number of points `value` gives solution `number`."""
    given: int | float | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        given = value
    elif isinstance(value, (float, str)):
        try:
            given = float(value)  # reads digit strings of any length (int() stops at 4,300)
        except ValueError:
            pass
    if given is None or not (isinstance(given, int) or given.is_integer() or math.isinf(given)):
        raise _NotABallot(f"points for solution {number} must be a whole number, got {_short(value)}")
    if abs(given) >= _POINTS_LIMIT:
        raise _NotABallot(f"points for solution {number} are too large ({_short(value)})")
    return int(given)


def json_numbers(value: Any, field: str) -> list[int]:
    """The solution numbers of a JSON list (`field` names it in reasons)."""
    if not isinstance(value, list):
        raise _NotABallot(f'"{field}" must be a list of solution numbers, got {_short(value)}')
    return [as_solution_number(item) for item in value]


# --- reading a ballot ------------------------------------------------------------------------

def _unreadable(error: Exception) -> Ballot:
    return bad(f"unreadable reply ({type(error).__name__})")


@never_raises(_unreadable)
def parse_ballot(
    protocol: str, text: str | None, n_solutions: int, points: int = CUMULATIVE_POINTS
) -> Ballot:
    """Parse a voting reply for `protocol` over `n_solutions` (numbered from 1 in the text).

    `protocol` names a registered protocol that asks for a ballot (a voting rule, or the judge's
    pick of a solution: `rule.ballot_rule`), whose readers read it. `points` is the
    cumulative-voting budget; giving fewer points is allowed ("up to"). The JSON form is read
    first (see the module's docstring), the text as the fallback. Never raises (see the
    module's contract): an unknown protocol is an invalid ballot too.
    """
    rule = ballot_rule(protocol)
    if rule is None:
        return bad(
            f"no ballot format for protocol {_short(protocol)}; valid names: {', '.join(ballot_protocols())}"
        )
    text = text or ""
    try:
        reply = json_reply(text) if rule.json_key is not None else None
        if reply is not None and rule.json_key in reply:
            return rule.read_json(reply[rule.json_key], n_solutions, points)
        return rule.read_text(text, n_solutions, points)
    except _NotABallot as problem:
        return bad(str(problem))


# --- discriminative judge (seed 002) -----------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    """What the discriminative judge said (seed 002, MAD).

    decision: True when the judge holds that a correct solution is reached (MAD's "Whether
    there is a preference": "Yes"), False when not, None when no verdict can be read;
    answer: the judge's answer ("" when none); side: "affirmative", "negative" or None (the
    side the judge supports, when it names one of MAD's two sides); reason: the judge's reason ("" when
    none); agent: the debater or participant the judge names, by its label (read only when the
    labels are given; None when it names none, or more than one).
    """

    decision: bool | None
    answer: str
    side: str | None
    reason: str
    agent: str | None = None


_NO_VERDICT = Verdict(None, "", None, "")
_VERDICT_FIELDS = ("decision", "answer", "side", "reason")
_YES_NO = {"yes": True, "true": True, "no": False, "false": False}
_DECISION_KEYS = ("decision", "verdict", "preference", "solution obtained")
_ANSWER_KEYS = ("debate answer", "final answer", "answer", "correct answer", "correct translation",
                "final translation")
_REASON_KEYS = ("reason", "reasons", "reasoning", "explanation")

# A flat dictionary as judges write it: JSON or Python's single-quoted repr, as in MAD's
# released logs ({'Whether there is a preference': 'Yes', 'Supported Side': 'Negative', ...}).
# A string ends at its quote only where a ",", ":" or "}" follows (spaces between allowed),
# so apostrophes inside values ('the negative side's answer') stay in them; a backslash
# escapes the next character. Keys may also be bare words, values bare words (true, None,
# 42). Every repetition is possessive and the alternatives start with different characters,
# so one attempt reads each character once; and no string may hold a "{" that could open a
# dictionary (_DICT_OPENING), so an attempt never reads past where the next one starts: the
# attempts together read a reply about once.
_BARE_KEY = r"[^\s:,{}\[\]'\"][^:,{}\[\]'\"\n]*+"
_DICT_OPENING = r"\{(?=\s*+(?:['\"}]|" + _BARE_KEY + ":))"


def _pair_pattern(group: str) -> str:
    """key : value, each a single-quoted string, a double-quoted string or a bare word;
    `group` "(" captures the three ways of writing each (six groups), "(?:" captures none."""
    quoted = [f"{q}{group}(?:[^{q}\\\\{{]++|\\\\.|{q}(?!\\s*+[,:}}])|(?!{_DICT_OPENING})\\{{)*+){q}"
              for q in "'\""]
    key = "|".join(quoted + [group + _BARE_KEY + ")"])
    value = "|".join(quoted + [group + r"[^,{}\[\]'\"\n]*+)"])
    return f"(?:{key})\\s*+:\\s*+(?:{value})"


_DICT_PAIR = re.compile(r"\s*+" + _pair_pattern("(") + r"\s*+,?+", re.S)
_FLAT_DICT = re.compile(
    r"\{\s*+(?:" + _pair_pattern("(?:") + r"(?:\s*+,\s*+" + _pair_pattern("(?:") + r")*+)?+\s*+,?+\s*+\}",
    re.S,
)
_DICT_START = re.compile(_DICT_OPENING)
_VERDICT_WORDS = re.compile(
    r"decision|verdict|preference|obtained|answer|side|reason|translation|explanation", re.I
)
_DICT_TRIES = 1000  # dictionaries read before the rest of a reply is left
_DICT_MISSES = 1000  # and openings "{" that turn out to open none
_DICT_READS = 100  # dictionaries naming verdict words whose pairs are read, from the last
_JSON_KEYS = 100  # keys of a JSON verdict that are read, from the first
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[nt](?![a-z])|[\"'\\/])")
_ESCAPED = {"n": "\n", "t": "\t"}


def _unescape(text: str) -> str:
    """\\" \\' \\\\ \\/ \\uXXXX, and \\n \\t unless a letter follows (LaTeX: \\neq, \\times)."""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(
        lambda m: chr(int(m[1][1:], 16)) if len(m[1]) == 5 else _ESCAPED.get(m[1], m[1]), text)


def _flat_dict_spans(text: str) -> list[tuple[int, int]]:
    """Where the flat dictionaries of `text` are, in order (the first `_DICT_TRIES`; the
    search stops after `_DICT_MISSES` openings that open none: a list inside, a string that
    never ends, ...). A dictionary is read once and the search goes on after it."""
    spans: list[tuple[int, int]] = []
    position = misses = 0
    while len(spans) < _DICT_TRIES and misses < _DICT_MISSES:
        start = _DICT_START.search(text, position)
        if start is None:
            break
        whole = _FLAT_DICT.match(text, start.start())
        if whole is None:
            misses += 1
            position = start.end()
        else:
            spans.append(whole.span())
            position = whole.end()
    return spans


def _dict_pairs(text: str, span: tuple[int, int]) -> list[tuple[str, str]]:
    """The (key, value) pairs of the dictionary at `span`, unescaped and stripped."""
    pairs = []
    for pair in _DICT_PAIR.finditer(text, span[0] + 1, span[1]):
        key = next(part for part in pair.group(1, 2, 3) if part is not None)
        value = next((part for part in pair.group(4, 5, 6) if part is not None), "")
        pairs.append((_unescape(key).strip(), _unescape(value).strip()))
    return pairs


def _key(key: str) -> str:
    return " ".join(key.replace("_", " ").replace("-", " ").lower().split())


def _yes_no(value: str) -> bool | None:
    """ "Yes", "no.", "True" -> True/False; anything else ("Yes or No") -> None."""
    return _YES_NO.get(value.strip().strip(".!").strip().lower())


_SIDE_WORD = re.compile(r"\b(affirmative|negative)\b", re.I)


def _side(value: str) -> str | None:
    """ "Negative", "the affirmative side" -> the side; both or neither named -> None."""
    named = {word.lower() for word in _SIDE_WORD.findall(value[:200])}
    return named.pop() if len(named) == 1 else None


def _from_dict(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """The verdict's fields this dictionary gives (a decision only when it reads as one)."""
    fields = {_key(key): value for key, value in pairs}
    given: dict[str, Any] = {}
    decision = next((_yes_no(value) for key, value in fields.items()
                     if any(word in key for word in _DECISION_KEYS)), None)
    if decision is not None:
        given["decision"] = decision
    for name, keys in (("answer", _ANSWER_KEYS), ("reason", _REASON_KEYS)):
        key = next((key for key in keys if key in fields), None)
        if key is not None:
            given[name] = fields[key]
    side = next((key for key in fields if _NAMING_KEYS.intersection(key.split())), None)
    if side is not None:
        given["side"] = _side(fields[side])
        given["named"] = fields[side]
    return given


def _json_text(value: Any) -> str:
    """A JSON value as the dictionary reader sees values: text (true -> "true"; null, a
    list or an object -> "")."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, (int, float)) else ""


# Labelled lines: "Decision: YES", "Answer: ...", "Supported side: Negative", "Reason: ...".
# "[^\w:=]*+[:=]" reads like "\W*?[:=]" without trying every colon of a long run; at most
# ten non-word characters may stand between the colon and the value.
_DECISION = re.compile(
    r"(?=[dvsp])(?:decision|verdict|solution obtained|preference)[^\w:=]*+[:=]\W{0,10}+"
    r"(yes|no|true|false)\b",
    re.I,
)
_LEADING_DECISION = re.compile(r"\W*+(yes|no)\b", re.I)  # used with .match
_ANSWER = re.compile(r"(?=[fa])(?:final answer|answer)\W*?[:=][ \t]*(.+)", re.I)
_SIDE = re.compile(
    r"(?=[spw])\b(?:(?:supported|preferred|winning)[ \t]++)?side[^\w:=\n]*+[:=]\W{0,10}+"
    r"(affirmative|negative)\b",
    re.I,
)
_REASON = re.compile(r"(?=r)\breason(?:s|ing)?+[^\w:=\n]*+[:=][ \t]*+([^\n]+)", re.I)
# Whom a verdict names: "Supported side: Agent 3", "Chosen participant: none", "Debater: 2".
_NAMING_KEYS = frozenset({"side", "participant", "debater"})
_NAMED_LINE = re.compile(r"(?=[spcdw])\b(?:(?:supported|preferred|winning|chosen)[ \t]++)?(?:side|participant|debater)"
                    r"[^\w:=\n]*+[:=][ \t]*+([^\n]{0,200})", re.I)
_NAMED_NUMBER = re.compile(r"(?:(?:debater|participant|agent|side)[ \t]*+)?#?(\d{1,2})", re.I)
_NOBODY = frozenset({"none", "null", "nobody", "neither", "n/a", "no one", "own answer"})


def _from_lines(text: str) -> Verdict:
    found = _DECISION.search(text) or _LEADING_DECISION.match(text)
    decision = None if found is None else _YES_NO[found.group(1).casefold()]  # "yeſ" too
    answers = _ANSWER.findall(text)
    side = _SIDE.search(text)
    reason = _REASON.search(text)
    return Verdict(decision, answers[-1].strip() if answers else "",
                   side.group(1).lower() if side else None, reason.group(1).strip() if reason else "")


def _named_agent(value: str, labels: list[str]) -> str | None:
    """The label a verdict's side / participant value names: the label itself (case, spaces and
    marks around it ignored), the only label it contains as a whole word ("Agent 3 (third
    debater)"), or a number 1..n ("3", "Debater 3"); None for none, several, or anything else."""
    text = " ".join(_MARKDOWN.sub("", value[:200]).split()).strip(" .,;:!\"'[]()").casefold()
    if not text or text in _NOBODY:
        return None
    folded = [label.casefold() for label in labels]
    if text in folded:
        return labels[folded.index(text)]
    inside = [label for label, low in zip(labels, folded)
              if low and re.search(r"(?<!\w)" + re.escape(low) + r"(?!\w)", text)]
    if len(inside) == 1:
        return inside[0]
    number = _NAMED_NUMBER.fullmatch(text)
    if number and not inside and 1 <= int(number.group(1)) <= len(labels):
        return labels[int(number.group(1)) - 1]
    return None


@never_raises(lambda error: _NO_VERDICT)
def read_judge_verdict(text: str | None, labels: list[str] | None = None) -> Verdict:
    """Read the discriminative judge's verdict (seed 002): was a correct solution reached,
    which answer, which side, and why?

    Accepts a flat dictionary as MAD's released code asks for, in JSON or in Python's
    single-quoted form (as the moderator writes it in MAD's released logs), read by a
    small tokenizer, never by eval or ast.literal_eval: keys like "Whether there is a
    preference" (decision), "Supported Side" (side), "Reason", "debate_answer" / "Correct
    Translation" (answer). The last dictionary that holds a decision wins (a judge may first
    repeat the format it was given); else the last that holds any of these keys. What it
    lacks is read from labelled lines ("Decision: YES", "Answer: ...", "Supported side:
    Negative", "Reason: ...") or a reply opening with a bare yes/no. Sides are
    "affirmative" / "negative"; a value naming both or neither ("Affirmative or Negative")
    is None. Never raises; an unreadable reply is Verdict(None, "", None, "").

    A reply that is one JSON object (`answers.json_reply`: the constrained form
    {"decision": "YES", "side": "Negative", "answer": ..., "reason": ...} of
    protocols/schemas.py, or MAD's dictionary in JSON) is read with Python's JSON parser,
    by the same keys (its first 100), before any of the above; so is one cut off by the
    token limit (`json_reply(..., partial=True)`: its finished fields only).

    With `labels` (the debaters or participants, in order) it also reads whom the judge names
    (`Verdict.agent`): the value of a "side" / "participant" / "debater" key or labelled line
    ("Supported side: Agent 3", "Chosen participant: none"), read by `_named_agent`. An
    "Affirmative" / "Negative" value stays a `side` (the judge protocol maps it to the debater
    who argued that side).
    """
    raw = _without_thinking(text or "")
    reply = json_reply(raw, partial=True)
    chosen: dict[str, Any] = {} if reply is None else _from_dict(
        [(str(key), _json_text(value)) for key, value in itertools.islice(reply.items(), _JSON_KEYS)])
    read = 0
    for span in reversed([] if chosen else _flat_dict_spans(raw)):
        if read >= _DICT_READS:
            break
        if _VERDICT_WORDS.search(raw, *span) is None:
            continue
        read += 1
        given = _from_dict(_dict_pairs(raw, span))
        if "decision" in given:
            chosen = given
            break
        chosen = chosen or given
    # A JSON reply is read as JSON only: one cut off by the token limit gives its finished
    # fields, never a half-written value read back as a labelled line ('"answer": "1.5 m').
    plain = _MARKDOWN.sub("", raw) if reply is None else ""
    lines = _from_lines(plain) if reply is None else Verdict(None, "", None, "")
    verdict = Verdict(**{name: chosen.get(name, getattr(lines, name)) for name in _VERDICT_FIELDS})
    if not labels:
        return verdict
    named = chosen.get("named")
    if named is None:
        found = _NAMED_LINE.search(plain)
        named = found.group(1) if found else ""
    return replace(verdict, agent=_named_agent(str(named), list(labels)))


def parse_judge_verdict(text: str | None) -> tuple[bool | None, str]:
    """(decision, answer) of `read_judge_verdict` -- the engine's older view of it."""
    verdict = read_judge_verdict(text)
    return verdict.decision, verdict.answer
