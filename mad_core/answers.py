"""Helpers that read the conventions the engine asks agents to follow (pure).

Agents are asked to
  * end with a line `Final answer: <answer>`,
  * open with `AGREE` or `DISAGREE` when a consensus protocol decides,
  * optionally add a line `Confidence: N/10` (N from 1 to 10).

Models decorate these lines with markdown (`**Final answer:** 42`), so every reader here
tolerates bold/italic markers around the labels.

Reading rules, and where they come from:
  * `final_answer`: the text after the last "Final answer:" label; without one, the last
    non-empty line that is neither a confidence line ("Confidence: 8/10", any decoration) nor
    an agreement-only line ("AGREE", "I agree."): with confidence reporting on, a confidence
    line is never an agent's answer. A confidence label inside the answer line ends it
    ("B (Confidence: 9/10)" -> "B").
  * `normalize_answer` (answer identity for every metric and for solution counting, seed 000
    App. D): see its docstring. Of several `\\boxed{...}` the last wins, as in the released
    evaluation of Du et al. (the paper behind seed 004: gsm/eval_gsm.py takes the last braced
    answer, mmlu/eval_mmlu.py the last "(X)"). Numbers are compared as exact text, never as
    floats (Du et al. compare float()s; that loses digits past 2**53 and turns 1e400 into inf).
  * JSON first (`json_reply`): a backend with constrained output answers short requests
    with one JSON object (protocols/schemas.py); `parse_agreement` and `extracted_answer`
    read that form first and the text conventions above as the fallback. An extracted answer
    (and a decision's, `decided_answer`) is the answer alone: `drop_lead_in` removes the
    "The answer is:" a model writes inside `{"answer": ...}` too.
  * `parse_agreement` (seed 000 §3.2: under consensus, every agent says whether it agrees
    with the current proposal; MALLM reads that stance from the reply with a pattern): see
    its docstring. MALLM's released code tests `"agree" in reply and "disagree" not in
    reply`; we read the stance the prompt asks for at the start of the reply, and count
    only explicit, unqualified agreement.

Contract (agent text is untrusted, up to any length): every reader here
  * never raises: on any string (or None) it returns its result or its "nothing found"
    value (final_answer, normalize_answer and the strip_* functions "", parse_agreement
    and parse_confidence None); `never_raises` is the last guard for errors nobody foresaw;
  * runs in linear time: a text of n characters is read in O(n). Where quantifiers meet
    they are possessive (`*+`), so no pattern backtracks into itself; bench/parsers.py
    times 100,000-character hostile texts (well under 50 ms each).
"""
from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def never_raises(on_error: Callable[[Exception], T]) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator: the reader returns `on_error(error)` instead of raising.

    The last guard of the never-raise contract (here and in protocols/ballots.py): the
    readers are written not to fail (bounded numbers, linear patterns); this turns an
    error nobody foresaw into the reader's "nothing found" value, so that no reply, however
    odd, stops a debate.
    """
    def guard(reader: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(reader)
        def guarded(*args: Any, **kwargs: Any) -> T:
            try:
                return reader(*args, **kwargs)
            except Exception as error:  # noqa: BLE001 - see the docstring
                return on_error(error)
        return guarded
    return guard


def _nothing(error: Exception) -> str:
    return ""


def _no_value(error: Exception) -> None:
    return None


_FINAL = re.compile(r"final\s++answer\s*+[*_]*+\s*+:", re.I)
_CONFIDENCE = re.compile(
    r"confidence(?:\s++(?:level|score))?\s*+[*_]*+\s*+[:=]\s*+[*_]*+\s*+(\d++(?:\.\d++)?)"
    r"\s*+(?:/\s*+10|out\s++of\s++10)?",
    re.I,
)
_DECORATION = " \t*_`#>"
_BEFORE_LABEL = _DECORATION + "([-|,;—–"

# A line that only reports confidence: "Confidence: 8/10", "**Confidence (1-10):** 8",
# "(confidence level 7 out of 10)". Read after _undecorate and opening brackets.
_CONFIDENCE_LINE = re.compile(
    r"(?:(?:my|overall)\s++)?confidence(?:\s++(?:level|score|rating))?(?:\s++(?:is|of))?"
    r"[\s*_]*+(?:[:=(\-–—]|\d)",
    re.I,
)
# A line that only states agreement: "AGREE", "[DISAGREE]", "Yes, I agree.", "I fully agree
# with the current solution." -- words from this list only, one of them a form of "agree".
_AGREEMENT_LINE_WORDS = frozenset(
    "i we yes no ok okay not do don't dont can't cannot fully completely totally strongly "
    "absolutely entirely also with this that it the current proposal solution answer you "
    "your agree agreed agrees disagree disagreed disagrees".split()
)
_AGREE_FORMS = frozenset("agree agreed agrees disagree disagreed disagrees".split())
_LINE_WORD = re.compile(r"[a-z']++|[^\sa-z'\W]")  # words, and any digit (which no such line has)
_LINE_PUNCTUATION = re.compile(r"[^\w\s']++")
_MOST_LINES = 100  # non-empty lines looked at, from the end, for an answer without a label


def _undecorate(text: str) -> str:
    """Strip surrounding whitespace and markdown markers."""
    return text.strip().strip(_DECORATION).strip()


def _is_confidence_line(line: str) -> bool:
    return _CONFIDENCE_LINE.match(line.lstrip(_DECORATION + "([-•")) is not None


def _is_agreement_line(line: str) -> bool:
    if len(line) > 120:
        return False
    words = _LINE_WORD.findall(_LINE_PUNCTUATION.sub(" ", line.lower().replace("\u2019", "'")))
    return (bool(words) and all(word in _AGREEMENT_LINE_WORDS for word in words)
            and any(word in _AGREE_FORMS for word in words))


_INLINE_CONFIDENCE = re.compile(r"(?:\b(?:my|overall)\s++)?" + _CONFIDENCE.pattern, re.I)


def _answer_part(line: str) -> str:
    """The line without decoration and without a confidence report inside it."""
    confidence = _INLINE_CONFIDENCE.search(line)
    if confidence is not None:
        line = line[:confidence.start()].rstrip(_BEFORE_LABEL)
    return _undecorate(line)


def _is_answer(line: str) -> bool:
    return not _is_confidence_line(line) and not _is_agreement_line(line)


@never_raises(_nothing)
def decided_answer(answer: str | None, details: dict | None = None) -> str:
    """A decision's answer as a reader sees it: the final answer a protocol extracted (its
    details' ``final_answer``), else the ``Final answer:`` of its text, else the text itself
    (stripped; "" for none). The decision card, the list, polls and reports all read it so."""
    extracted = str((details or {}).get("final_answer") or "") if isinstance(details, dict) else ""
    answer = (extracted or final_answer(answer) or answer or "").strip()
    return drop_lead_in(answer) or answer


@never_raises(_nothing)
def final_answer(text: str | None) -> str:
    """The answer after the last "Final answer:" label, else the last non-empty line that is
    neither a confidence line nor an agreement-only line ("" when there is none among the
    last 100 non-empty lines).

    When the label ends its line ("**Final answer:**" then the answer below), the next
    non-empty line that is not a confidence line is the answer. A confidence report inside
    the answer line is cut off ("B (Confidence: 9/10)" -> "B").
    """
    text = text or ""
    labels = list(_FINAL.finditer(text))
    if labels:
        rest = text[labels[-1].end():]
        first_line, _, below = rest.partition("\n")
        answer = _answer_part(first_line)
        if answer:
            return answer
        return next((_answer_part(line) for line in below.splitlines()
                     if _undecorate(line) and not _is_confidence_line(_undecorate(line))), "")
    looked_at = 0
    for line in reversed(text.splitlines()):
        bare = _undecorate(line)
        if not bare:
            continue
        answer = _answer_part(line) if _is_answer(bare) else ""
        if answer:
            return answer
        looked_at += 1
        if looked_at >= _MOST_LINES:
            break
    return ""


# --- normalisation ------------------------------------------------------------------------

_BOXED_OPEN = re.compile(r"\\boxed\s*+\{")
_BOXED_DEPTH = 4  # braces nested inside \boxed{...} that are still read


def _braced(depth: int) -> str:
    """A pattern for "{...}" with braces nested up to `depth` levels inside (linear: the
    alternatives start with different characters and every repetition is possessive)."""
    if depth == 0:
        return r"\{[^{}]*+\}"
    return r"\{(?:[^{}]++|" + _braced(depth - 1) + r")*+\}"


_BOXED_GROUP = re.compile(_braced(_BOXED_DEPTH))
_LATEX_FRACTION = re.compile(  # \frac{a}{b}, one level of braces inside each part; \frac12
    r"\\[dt]?frac\s*+\{((?:[^{}]++|\{[^{}]*+\})*+)\}\s*+\{((?:[^{}]++|\{[^{}]*+\})*+)\}|\\[dt]?frac(\d)(\d)"
)
_LATEX_WRAPPER = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|operatorname)\s*+\{([^{}]*+)\}")
_LATEX_SPACING = re.compile(r"\\[,;:! ]|\\left\b|\\right\b")
_LATEX_ESCAPED = re.compile(r"\\([%$])")

_LEAD_IN = re.compile(  # "Answer:", "The answer is", "Final answer -", "The correct answer is:" ...
    r"(?:(?:the\s++)?(?:(?:final|correct|best)\s++)?answer(?:\s*+is\b\s*+:?|\s*+[:\-=])[\s*_]*+)++",
    re.I,
)

# Choice letters (A-J, as in MMLU-Pro). See normalize_answer for the rule.
_CHOICE_NAMED = r"(?:option|choice)\b\s*+[:#]?+\s*+"
_CHOICE_ALONE = re.compile(f"(?:{_CHOICE_NAMED})?+" r"[(\[]?+([a-j])[)\]]?+[.:]?+", re.I)  # fullmatch
_CHOICE_AFTER_NAME = re.compile(_CHOICE_NAMED + r"[(\[]?+([a-j])(?!\w)", re.I)  # match
_CHOICE_BRACKETED = re.compile(r"(?:[(\[]([a-j])[)\]]|([a-j])\))\s", re.I)  # match
_CHOICE_PERIOD = re.compile(  # match, case-sensitive: "B. Paris", not "E. coli" nor "J. S. Bach"
    r"([A-J])[.:]\s++(?![A-Z]\.(?:\s|$))[A-Z0-9$€£+\-−(\[\"'“‘]"
)

# Whole-answer numbers: sign, currency, digits (thousands groups), decimals, exponent, percent.
_NUMBER = re.compile(
    r"(?P<sign>[-+−]?+)(?P<currency>[$€£]?+)(?P<sign2>[-+−]?+)"
    r"(?P<int>[0-9]{1,3}+(?:,[0-9]{3})++|[0-9]*+)(?:\.(?P<frac>[0-9]*+))?+"
    r"(?:[eE](?P<exp_sign>[-+]?+)(?P<exp>[0-9]++))?+\s*+(?P<percent>%?+)"
)
_FRACTION = re.compile(r"(?P<sign>[-+−]?+)(?P<num>[0-9]++)\s*+/\s*+(?P<den>[0-9]++)")
_MAX_EXPANDED_EXPONENT = 100  # "1e100" is written out in full; "1e101" stays scientific
_MAX_EXPONENT_DIGITS = 18

# Words and numbers inside a longer answer (lower-cased first): a number keeps its sign,
# thousands commas, decimal point, "/" of a fraction and "%"; everything else separates words.
_TOKEN = re.compile(
    r"(?<![\w.,/])(?:-(?=[0-9]))?+(?:[0-9]{1,3}+(?:,[0-9]{3})++|[0-9]++)(?:\.[0-9]++)?+"
    r"(?:/[0-9]++)?+%?+(?![\w]|[.,/][0-9])"
    r"|[^\W_]++"
)
_DECIMAL_TRAILING_ZEROS = re.compile(r"(\.[0-9]*[1-9])0++(?![0-9])")
_DECIMAL_ALL_ZEROS = re.compile(r"\.0++(?![0-9])")
_LEADING_ZEROS = re.compile(r"(?<![\w.])(?=[0-9./%]*+(?:\s|$))0+(?=[0-9])")  # in numbers only
_NEGATIVE_ZERO = re.compile(r"-(?=0(?![.0-9]))")


def _last_boxed(text: str) -> str | None:
    """The content of the last complete `\\boxed{...}` (braces nested up to 4 deep inside),
    or None. Each candidate is matched only up to the next `\\boxed{`: a later one that does
    not close cannot be closed by an earlier one, so every character is read once or twice."""
    opens = [found.end() - 1 for found in _BOXED_OPEN.finditer(text)]
    for index in range(len(opens) - 1, -1, -1):
        limit = opens[index + 1] if index + 1 < len(opens) else len(text)
        group = _BOXED_GROUP.match(text, opens[index], limit)
        if group is not None:
            return group.group()[1:-1]
    return None


def _plain_latex(text: str) -> str:
    """A little LaTeX as plain text: \\frac{1}{2} -> 1/2, \\text{m} -> m, \\% -> %, and
    math delimiters `$...$` / `\\(...\\)` dropped."""
    if len(text) > 1 and text[0] == text[-1] == "$" and "$" not in text[1:-1]:
        text = text[1:-1]
    elif text.startswith("\\(") and text.endswith("\\)"):
        text = text[2:-2]
    if "\\" not in text:
        return text
    text = _LATEX_FRACTION.sub(lambda m: f"{m[1] or m[3]}/{m[2] or m[4]}", text)
    text = _LATEX_WRAPPER.sub(r"\1", text)
    text = _LATEX_SPACING.sub("", text)
    return _LATEX_ESCAPED.sub(r"\1", text)


def _digits_text(digits: str, exponent: int) -> str:
    """digits * 10**exponent written out ("15", -1 -> "1.5"); digits has no leading or
    trailing zeros."""
    if exponent >= 0:
        return digits + "0" * exponent
    point = len(digits) + exponent
    if point > 0:
        return f"{digits[:point]}.{digits[point:]}"
    return "0." + "0" * -point + digits


def _canonical_number(text: str) -> str | None:
    """The exact canonical text of a plain number, or None if `text` is not one.

    No float is involved, so identity is kept at any size: "42.0" -> "42", "1,000" ->
    "1000", "0.50" -> "0.5", "$1.20" -> "1.2", "-0" -> "0", "1e3" -> "1000", a 30-digit
    integer stays those 30 digits. "50%" stays "50%" (not 0.5). An exponent beyond +-100 is
    not written out: "1e400" -> "1e400", "10e399" -> "1e400"; an exponent of more than 18
    digits is kept as written (leading zeros dropped).
    """
    found = _NUMBER.fullmatch(text[:-1] if text.endswith(".") and len(text) > 1 else text)
    if found is None or (found["sign"] and found["sign2"]):
        return None
    whole, fraction = found["int"].replace(",", ""), found["frac"] or ""
    if not whole and not fraction:
        return None
    negative = (found["sign"] or found["sign2"]) in ("-", "−")
    percent = found["percent"]
    digits = (whole + fraction).lstrip("0")
    exponent_digits = (found["exp"] or "").lstrip("0")
    exponent_negative = found["exp_sign"] == "-"
    if not digits:
        return "0" + percent
    sign = "-" if negative else ""
    if len(exponent_digits) > _MAX_EXPONENT_DIGITS:
        mantissa = _digits_text(digits.rstrip("0"), len(digits) - len(digits.rstrip("0")) - len(fraction))
        return f"{sign}{mantissa}e{'-' if exponent_negative else ''}{exponent_digits}{percent}"
    written = int(exponent_digits or "0") * (-1 if exponent_negative else 1)
    stripped = digits.rstrip("0")
    exponent = written - len(fraction) + (len(digits) - len(stripped))
    if abs(written) <= _MAX_EXPANDED_EXPONENT:
        return sign + _digits_text(stripped, exponent) + percent
    scientific = stripped[0] + (f".{stripped[1:]}" if len(stripped) > 1 else "")
    return f"{sign}{scientific}e{exponent + len(stripped) - 1}{percent}"


def _canonical_fraction(text: str) -> str | None:
    """"1/2" -> "1/2", "02 / 4" -> "2/4", "-1/2" -> "-1/2": not evaluated, not reduced."""
    found = _FRACTION.fullmatch(text)
    if found is None:
        return None
    numerator = found["num"].lstrip("0") or "0"
    denominator = found["den"].lstrip("0") or "0"
    sign = "-" if found["sign"] in ("-", "−") and numerator != "0" else ""
    return f"{sign}{numerator}/{denominator}"


def _choice_letter(text: str) -> str | None:
    """The choice letter `text` names, lower-cased, or None (see normalize_answer)."""
    found = (_CHOICE_ALONE.fullmatch(text) or _CHOICE_AFTER_NAME.match(text)
             or _CHOICE_BRACKETED.match(text) or _CHOICE_PERIOD.match(text))
    if found is None:
        return None
    return next(letter for letter in found.groups() if letter).lower()


def _words(text: str) -> str:
    """Lower-cased words and numbers, one space apart; numbers in canonical form."""
    joined = " ".join(_TOKEN.findall(text.lower().replace("−", "-")))
    joined = joined.replace(",", "")  # commas are left only inside numbers (thousands)
    joined = _DECIMAL_TRAILING_ZEROS.sub(r"\1", joined)
    joined = _DECIMAL_ALL_ZEROS.sub("", joined)
    joined = _LEADING_ZEROS.sub("", joined)
    return _NEGATIVE_ZERO.sub("", joined)


@never_raises(_nothing)
def normalize_answer(text: str | None) -> str:
    """A canonical form of an answer, for counting equal answers and for entropy.

    In order:
      1. the content of the last complete `\\boxed{...}`, if any (Du et al. read the last
         boxed answer), with a little LaTeX made plain (`\\frac{1}{2}` -> "1/2");
      2. markdown decoration and a lead-in ("Answer:", "The answer is", "Final answer -")
         are dropped;
      3. a plain number becomes its exact canonical text (`_canonical_number`: no float;
         "50%" stays "50%", "$1.20" -> "1.2", "1e400" -> "1e400"); a fraction "1/2" stays a
         fraction, canonical but neither evaluated nor reduced ("2/4" != "1/2" != "0.5");
      4. a choice letter A-J becomes the lower-case letter when the answer really is one:
         the letter alone, bracketed or followed by ".", ")" or ":" ("B", "(B)", "B)", "B.",
         "[B]", any case); after "option"/"choice" ("Option C: Paris"); a bracketed letter
         before text ("(B) Paris", "b) paris"); or an upper-case letter, "." or ":", a space
         and text that starts like an option text: an upper-case letter, a digit, a sign,
         currency, bracket or quote, but not another initial ("B. Paris", "C. 1.5 m/s").
         So "E. coli" (lower case follows) and "J. S. Bach" (another initial follows) stay
         words. "A. Einstein" has the very shape of "B. Paris" and reads as choice "a":
         nothing in the text tells a surname from a one-word option, and in the multiple-
         choice tasks of seed 000 a lost letter would turn right answers wrong;
      5. otherwise lower-cased words and numbers, one space apart: punctuation separates
         words, but a number keeps its sign, decimal point, "/" and "%" and is written
         canonically ("1.50 m/s" -> "1.5 m s", "1,000 km" -> "1000 km").
    """
    text = (text or "").strip()
    boxed = _last_boxed(text)
    if boxed is not None:
        text = boxed
    text = _undecorate(_plain_latex(_undecorate(text)))
    lead_in = _LEAD_IN.match(text)
    if lead_in is not None:
        text = _undecorate(text[lead_in.end():])
    number = _canonical_number(text)
    if number is not None:
        return number
    fraction = _canonical_fraction(text)
    if fraction is not None:
        return fraction
    choice = _choice_letter(text)
    if choice is not None:
        return choice
    return _words(text)


# --- JSON replies (constrained output) -------------------------------------------------------

_THINK_END = re.compile(r"</think>", re.I)
_FENCE_OPEN = re.compile(r"```[ \t]*+(?:json)?+[ \t]*+\n?+", re.I)  # used with .match


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key is given twice")
    return dict(pairs)


_JSON_DECODER = json.JSONDecoder()
_JSON_GAP = re.compile(r"[ \t\r\n]*+")  # JSON whitespace, used with .match


def _complete_pairs(body: str) -> dict[str, Any] | None:
    """The complete top-level "key": value pairs at the start of a JSON object cut off at the end,
    or None when `body` is no such object (a Python dict, an object followed by text).

    `body` opens with "{". Each key and value is read with Python's JSON decoder; reading
    stops at the first one that is unfinished (the token limit fell inside it) or not
    followed by a comma (a number at the cut may be cut too), so a value is never taken
    half-written. A key given twice keeps its first value.
    """
    pairs: dict[str, Any] = {}
    at = _JSON_GAP.match(body, 1).end()
    if at < len(body) and body[at] != '"':
        return None  # not a JSON object's first key: {'single': 'quotes'}, {1: ...}
    while at < len(body) and body[at] == '"':
        try:
            key, at = _JSON_DECODER.raw_decode(body, at)
            at = _JSON_GAP.match(body, at).end()
            if body[at:at + 1] != ":":
                break
            value, at = _JSON_DECODER.raw_decode(body, _JSON_GAP.match(body, at + 1).end())
        except (ValueError, RecursionError):
            break
        at = _JSON_GAP.match(body, at).end()
        if body[at:at + 1] != ",":
            break  # a value at the cut may be unfinished too ("1" of "15"): only a comma closes it
        pairs.setdefault(key, value)
        at = _JSON_GAP.match(body, at + 1).end()
    # Cut off means what follows the last whole pair is the start of one more, unclosed: an
    # object that closes and goes on with other text is not a cut-off reply.
    return None if "}" in body[at:] else pairs


_JSON_DEPTH = 64  # deeper JSON is no reply: the parser's limit would depend on the stack in use
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?+')
_BRACKETS = re.compile(r"[\[\]{}]")


def _nesting(body: str) -> int:
    """How deep the brackets of a JSON text nest (brackets inside strings do not count)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_JSON_STRING.sub("", body)):
        depth = depth + 1 if bracket in "[{" else depth - 1
        deepest = max(deepest, depth)
    return deepest


@never_raises(_no_value)
def json_reply(text: str | None, partial: bool = False) -> dict[str, Any] | None:
    """The reply as one JSON object, the form a backend with constrained output gives, or None.

    The whole reply must be the object, after a reasoning block (`...</think>`) and inside
    an optional ```json code fence; JSON inside other text is no JSON reply (the text
    readers take it). An object that gives a key twice, nests more than 64 levels deep,
    or holds a number of more than 4,300 digits is None too. Linear time (Python's JSON
    scanner), never raises.

    With `partial`, a reply that opens as a JSON object but was cut off (the token limit
    fell inside it) gives its complete top-level pairs (`_complete_pairs`, possibly {}),
    so that a reader takes what was finished and never a half-written value; anything else
    that is not one whole object is still None.
    """
    body = text or ""
    last_think = None
    for last_think in _THINK_END.finditer(body):
        pass
    if last_think is not None:
        body = body[last_think.end():]
    body = body.strip()
    fence = _FENCE_OPEN.match(body)
    if fence is not None:
        if not body.endswith("```") or len(body) < fence.end() + 3:
            return None
        body = body[fence.end():-3].strip()
    if fence is None and partial and body.startswith("{") and not body.endswith("}"):
        return _complete_pairs(body)
    if not (body.startswith("{") and body.endswith("}")):
        return None
    if _nesting(body) > _JSON_DEPTH:  # decided here, not by how deep the caller's stack already is
        return None
    try:
        return json.loads(body, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError):
        return None


_ANSWER_JSON_START = re.compile(r'\s*+(?:```[^\n{]*+\s*+)?+\{\s*+"answer"\s*+:')  # used with .match


@never_raises(_nothing)
def extracted_answer(text: str | None) -> str:
    """The answer of a final-answer extraction (seed 000 E.1): `{"answer": "..."}` (its
    constrained form) first, else the reply as written, stripped.

    A reply that opens like that object but cannot be read (cut off by the token limit)
    gives "", so that the caller falls back on the text the answer was to be taken from.
    """
    reply = json_reply(text)
    answer = None if reply is None else reply.get("answer")
    if isinstance(answer, str):
        return drop_lead_in(answer)
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and math.isfinite(answer):
        return str(answer)  # {"answer": 42}: "42", as the model wrote it
    text = text or ""
    if _ANSWER_JSON_START.match(text):
        return ""
    return drop_lead_in(text)


@never_raises(_nothing)
def drop_lead_in(text: str | None) -> str:
    """`text` stripped, without a lead-in phrase the model wrote before its answer ("The answer
    is: 1111", "**Final answer:** 42", "Answer - Paris" -> "1111", "42", "Paris"); "" when
    nothing follows it. A word that only starts like one ("Answer-driven design") is kept whole."""
    text = (text or "").strip()
    bare = _undecorate(text)
    lead_in = _LEAD_IN.match(bare)
    if lead_in is None:
        return text
    rest = bare[lead_in.end():]
    if lead_in.group().endswith("-") and rest[:1].isalpha():  # "Answer-driven": a word, not a label
        return text
    return _undecorate(rest)


# --- agreement and confidence ---------------------------------------------------------------

_AGREEMENT_WINDOW = 200  # characters from the start in which the stance is looked for
_STANCE_TOKEN = re.compile(r"[A-Za-z]++(?:'[A-Za-z]++)?+|[.!?](?=\s|$)|\n")
_AGREE = {"agree": True, "agreed": True, "agrees": True,
          "disagree": False, "disagreed": False, "disagrees": False}
_AGREEMENT_NOUNS = {"agreement": True, "disagreement": False}  # "I am in (full) agreement"
_SUBJECTS = frozenset("i i'm we we're".split())
# words that may stand between "I"/"we" and the agreement word ("I would not fully agree")
_BETWEEN = frozenset(
    "am are do does did can could would will should must might may have to not never neither "
    "nor cannot dont cant wont couldnt wouldnt doesnt didnt fully completely totally really "
    "strongly absolutely entirely wholly partially partly mostly largely somewhat also still "
    "generally certainly definitely basically actually all both in full complete total broad "
    "general partial so therefore thus hence now".split()
)
# words that may open a sentence before the agreement word ("Yes, fully agreed", "Not agreed")
_INTERJECTIONS = frozenset(
    "yes no not ok okay well so fully completely totally absolutely entirely strongly wholly "
    "partially partly mostly largely somewhat generally".split()
)
_NEGATORS = frozenset("not never neither nor cannot dont cant wont couldnt wouldnt doesnt didnt".split())
_QUALIFIERS = frozenset(
    "but however although though except partially partly somewhat mostly largely reservation "
    "reservations caveat caveats extent".split()
)
_SENTENCE_END = frozenset(".!?\n")
# The opening of the constrained form {"agree": true, "reason": "..."}, read even when the
# token limit cut the rest off (the text reader would take "agree" for agreement).
_AGREE_JSON_START = re.compile(r'\s*+(?:```[^\n{]*+\s*+)?+\{\s*+"agree"\s*+:\s*+(true|false)\b')  # .match


def _speaker_stance(words: list[str], index: int, shouted: bool) -> bool | None:
    """The speaker's stance if the agreement word `words[index]` of a sentence states one."""
    prefix, word = words[:index], words[index]
    agrees = _AGREE.get(word)
    if agrees is None:  # "agreement" counts only as "in (full) agreement"
        if "in" not in prefix[-2:]:
            return None
        agrees = _AGREEMENT_NOUNS[word]
    if "or" in (words[index - 1:index] + words[index + 1:index + 2]):
        return None  # "AGREE or DISAGREE": the instruction quoted, no stance
    subject = max((i for i, w in enumerate(prefix) if w in _SUBJECTS), default=None)
    between = prefix if subject is None else prefix[subject + 1:]
    if subject is None:
        states = shouted or all(w in _INTERJECTIONS for w in prefix)
    else:  # "I fully agree", "I, as a biologist, agree" -- not "I think experts agree"
        states = shouted or all(w in _BETWEEN or w.endswith("n't") for w in between) or (
            between[:1] == ["as"] and len(between) <= 5)
    if not states:
        return None  # someone else agrees ("scientists agree that ..."): no stance
    negated = any(w in _NEGATORS or w.endswith("n't") or (subject is None and w == "no")
                  for w in between)
    if negated and words[index + 1:index + 2] == ["more"]:  # "I couldn't agree more"
        negated = False
    if negated:
        agrees = not agrees
    qualified = any(w in _QUALIFIERS for w in words) or any(
        a == "in" and b == "principle" for a, b in zip(words, words[1:]))
    if agrees and qualified:
        return False  # "I agree, but ...", "I partially agree": not an agreement
    return agrees


@never_raises(_no_value)
def parse_agreement(text: str | None) -> bool | None:
    """True for agreement, False for disagreement, None when the reply states neither.

    Only the first 200 characters are read, sentence by sentence; the first agreement word
    ("agree", "agreed", "disagree", ..., "in agreement") that states the speaker's stance
    decides. It does when it
      * opens its sentence, or follows interjections only ("AGREE", "[AGREE]", "**Agree**",
        "Agreed.", "Yes, fully agreed", "Not agreed");
      * is written in capitals (AGREE / DISAGREE, the marker the prompt asks for);
      * follows I or we, with only auxiliaries, adverbs and negations in between ("I agree",
        "Yes, I agree", "I fully agree", "I do not agree", "We are in agreement") or an
        "as ..." apposition ("I, as a biologist, agree").
    Negation turns it ("I don't agree", "I can't agree", "Not agreed" -> False; "I don't
    disagree", "I couldn't agree more" -> True). Agreement qualified in its own sentence
    ("but", "however", "except", "partially", "in principle", "to some extent", ...) is
    False: MALLM's consensus counts explicit agreement only. "agree" said of others
    ("scientists agree that ...") and the instruction quoted ("AGREE or DISAGREE") state no
    stance.

    The constrained form is read first: `{"agree": true, "reason": "..."}` as the whole
    reply, or a reply that opens with `{"agree": true` or `{"agree": false` (the rest cut
    off), within the same first 200 characters.
    """
    head = (text or "")[:_AGREEMENT_WINDOW]
    reply = json_reply(head)
    if reply is not None and isinstance(reply.get("agree"), bool):
        return reply["agree"]
    opening = _AGREE_JSON_START.match(head)
    if opening is not None:
        return opening.group(1) == "true"
    head = head.replace("\u2019", "'")
    sentence: list[str] = []
    candidates: list[tuple[int, bool]] = []
    for token in _STANCE_TOKEN.findall(head) + ["\n"]:
        if token in _SENTENCE_END:
            for index, shouted in candidates:
                stance = _speaker_stance(sentence, index, shouted)
                if stance is not None:
                    return stance
            sentence, candidates = [], []
            continue
        word = token.lower()
        if word in _AGREE or word in _AGREEMENT_NOUNS:
            candidates.append((len(sentence), len(token) > 1 and token.isupper()))
        sentence.append(word)
    return None


@never_raises(_no_value)
def parse_confidence(text: str | None) -> int | None:
    """The N of the last "Confidence: N/10", if it is a whole number from 1 to 10."""
    found = list(_CONFIDENCE.finditer(text or ""))
    if not found:
        return None
    value = float(found[-1].group(1))
    if not value.is_integer() or not 1 <= value <= 10:
        return None
    return int(value)


# --- removing labelled lines ----------------------------------------------------------------

def _cut_labels(text: str, label: re.Pattern, answer_may_follow: bool) -> str:
    """Remove every labelled part of `text`, from the label to the end of its line.

    With `answer_may_follow`, a label that ends its line also takes the next non-empty
    line (the value written below it).
    """
    kept: list[str] = []
    take_next = False
    for line in (text or "").splitlines():
        if take_next:
            if line.strip():
                take_next = False
            continue
        found = label.search(line)
        if found is None:
            kept.append(line)
            continue
        take_next = answer_may_follow and not _undecorate(line[found.end():])
        before = line[:found.start()].rstrip(_DECORATION + "([-|,;")
        if before.strip():
            kept.append(before)
    return "\n".join(kept).strip()


@never_raises(_nothing)
def strip_final_answer(text: str | None) -> str:
    """The text without its final-answer line(s): the reasoning only."""
    return _cut_labels(text, _FINAL, answer_may_follow=True)


@never_raises(_nothing)
def strip_confidence(text: str | None) -> str:
    """The text without its confidence line."""
    return _cut_labels(text, _CONFIDENCE, answer_may_follow=False)
