"""Helpers that read the conventions the engine asks agents to follow (pure).

Agents are asked to
  * end with a line `Final answer: <answer>`,
  * open with `AGREE` or `DISAGREE` when a consensus protocol decides,
  * optionally add a line `Confidence: N/10` (N from 1 to 10).

Models decorate these lines with markdown (`**Final answer:** 42`), so every reader here
tolerates bold/italic markers around the labels.

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


def _undecorate(text: str) -> str:
    """Strip surrounding whitespace and markdown markers."""
    return text.strip().strip(_DECORATION).strip()


@never_raises(_nothing)
def final_answer(text: str | None) -> str:
    """The answer after the last "Final answer:" label, else the last non-empty line.

    When the label ends its line ("**Final answer:**" then the answer below), the next
    non-empty line is the answer.
    """
    text = text or ""
    labels = list(_FINAL.finditer(text))
    if labels:
        rest = text[labels[-1].end():]
        first_line, _, below = rest.partition("\n")
        answer = _undecorate(first_line)
        if answer:
            return answer
        return next((_undecorate(line) for line in below.splitlines() if _undecorate(line)), "")
    lines = [line for line in text.splitlines() if line.strip()]
    return _undecorate(lines[-1]) if lines else ""


# --- normalisation ------------------------------------------------------------------------

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_LEAD_IN = re.compile(r"^(?:(?:final\s+)?answer\s*[:\-]|the\s+(?:final\s+)?answer\s+is:?)\s*")
_CHOICE = re.compile(
    r"^(?:option\s+|choice\s+)?[(\[]?([a-j])(?:[)\].:]|$)(?:\s|$)", re.I
)
_NUMBER = re.compile(r"^[-+]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?$")


def _canonical_number(text: str) -> str | None:
    """'42.0' -> '42', '1,000' -> '1000', '0.50' -> '0.5'; None if not a plain number."""
    candidate = text.rstrip(".")
    if not _NUMBER.match(candidate):
        return None
    value = float(candidate.replace("$", "").replace(",", "").rstrip("%"))
    if value.is_integer():
        return str(int(value))
    return repr(value)


@never_raises(_nothing)
def normalize_answer(text: str | None) -> str:
    """A canonical form of an answer, for counting equal answers and for entropy.

    Lowercases, drops markdown, punctuation and extra spaces; multiple-choice answers
    ("(B)", "B)", "answer: b", "B. Paris") become the letter; numbers lose formatting
    ("42.0" -> "42").
    """
    text = (text or "").strip()
    boxed = _BOXED.search(text)
    if boxed:
        text = boxed.group(1)
    text = _LEAD_IN.sub("", _undecorate(text.lower())).strip()
    text = _undecorate(text)
    number = _canonical_number(text)
    if number is not None:
        return number
    choice = _CHOICE.match(text)
    if choice:
        return choice.group(1)
    return " ".join(re.sub(r"[^\w\s]|_", " ", text).split())


# --- agreement and confidence ---------------------------------------------------------------

_AGREEMENT_WINDOW = 200  # characters from the start in which AGREE/DISAGREE is looked for
_SHOUTED = re.compile(r"\b(DISAGREE|AGREE)\b")
_NEGATED = re.compile(r"(?:\bnot|n't|\bnever)\s*$", re.I)
_OPENING = re.compile(r"^\W*(disagree|agree)\b", re.I)


@never_raises(_no_value)
def parse_agreement(text: str | None) -> bool | None:
    """True for AGREE, False for DISAGREE, None when the reply says neither.

    Reads the word the reply opens with (any case, "[AGREE]" and "**Disagree**" included),
    or else the first upper-case AGREE/DISAGREE in its first 200 characters ("I DO NOT
    AGREE" is disagreement). Lower-case "agree" inside prose is not read.
    """
    head = (text or "")[:_AGREEMENT_WINDOW]
    opening = _OPENING.match(head)
    if opening:
        return opening.group(1).lower() == "agree"
    shouted = _SHOUTED.search(head)
    if shouted is None:
        return None
    negated = _NEGATED.search(head[: shouted.start()]) is not None
    return shouted.group(1) == "AGREE" and not negated


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
