"""Reading and comparing answers per task type, so that metrics compare like with like.

What it is for: turning an agent's reply (or a task's written answer) into one normalised,
hashable value per task type, and judging it against the truth:

  * ``read_answer(kind, text, *, choices=None, names=None) -> Reading``: ``.value`` (hashable)
    or ``.value is None`` with ``.reason``;
  * ``is_correct(kind, answer_text, truth, **kw) -> bool | None``: None when the *truth* cannot
    be read (a fault of the task), False when the *answer* cannot be read.

What it must not do: raise on any input (every public function is guarded by
``answers.never_raises``), take more than linear time on hostile text (every pattern is either
anchored on a literal word or uses possessive quantifiers, as in mad_core/answers.py), turn a
number into a float (numbers are ``fractions.Fraction``: a 40-digit integer keeps its digits,
"1e400" is not inf), call a model, or import streamlit.

Where the answer is taken from (all kinds), as mad_core/answers.py does, the clearly marked
answer first:
  1. a reply that is one JSON object ``{"answer": ...}`` (constrained output);
  2. else the content of the last complete ``\\boxed{...}``;
  3. else the text after the last "Final answer:" label (``answers.final_answer``; for "kks" the
     whole rest of the reply after the label, since an assignment may span several lines);
  4. else the last non-empty line that is not a confidence or agreement line (unmarked).
Then a lead-in ("Answer:", "The answer is") is dropped. Kind by kind:

``choice`` -> "A".."J" (upper case). Forms of ``answers.normalize_answer``: "B", "(B)", "B)",
  "b.", "[B]", "Option B", "Answer: B", "The answer is option B", "**B**", "(B) Paris",
  "B. Paris". The article "A" is never a choice on its own: "A farmer has..." has no marker.
  Without a letter of that shape, the last *marked* letter is looked for: "answer is (C)",
  "the correct option is C", "option C"; inside the answer segment also a bracketed "(C)"; in
  unmarked whole replies only "answer is/answer:/option is" marks count (reasoning quotes
  options). An unbracketed letter after "answer is" must be upper case and not be followed by
  a lower-case word ("The answer is A farmer" is no choice; "The answer is A because" is).
  With ``choices`` (the option texts, in letter order):
    - letters past the last option are refused ("E" with four options);
    - an answer that is exactly one option's text (``option_key``: words lower-cased, numbers
      canonical with their sign, articles dropped) is that option's letter;
    - "X. text" where text is exactly option Y's text and Y != X reads as Y: the "X." is then
      an initial ("A. Einstein" with option B "Einstein" is B); "(X) text" / "option X: text"
      naming another option is contradictory and invalid;
    - "X. text" where text is no option at all reads as X (models paraphrase option texts;
      nothing tells an initial from an option label there, so "A. Einstein" with no option
      "Einstein" is A, as ``normalize_answer`` reads it).

``number`` -> ``fractions.Fraction`` (exact). "1,000" = 1000 ("," is only a thousands
  separator: "1,5" is not 1.5), "$1.20" = 1.2, "1.5 m/s" = 3/2 (units dropped), "3/4" = 3/4
  ("3/0" is invalid), "-3" and "−3" = -3, "1e400" = 10**400 exactly, "\\frac{1}{2}" = 1/2,
  number words "zero".."twenty", "thirty".."ninety" when the answer has no digits.
  Percent: "50%" is read as 50/100 = 1/2, so "50%", "0.5" and "1/2" are one value.
  Which number: an explicit marker wins (\\boxed{}, "Final answer: X", a JSON answer, "the
  answer is X" / "Answer: X" anywhere in the line): after its last "=" the first number, else
  its first number ("12 apples (3 per basket)" -> 12, "The answer is 5, not 7" -> 5). An
  unmarked line must give one number ("so she ends up with 121" -> 121; "50%, i.e. 0.5" is one
  value) or end in "= X" with one number after the "=" ("10 - 3 = 7" -> 7); a line with several
  different numbers and no marker is unreadable, reason "several numbers: 0.11, 0.9" ("The
  larger is 0.11, not 0.9" and "0.9 is larger than 0.11" are never read as either). A number right after a letter, "^", "/", "." or "," is no answer (the "2" of "m/s^2" or
  "cm2"); a unit right after a number is fine ("5km" = 5). Mixed numbers ("1 1/2") are not read
  as one number.
  Numbers of more than 4,000 digits, or exponents above 10,000, are invalid (no huge ints).
  ``is_correct``: exact equality of Fractions, with two documented tolerances only for answers
  written with a decimal point: (a) when the truth has no finite decimal expansion (1/3, 2/3),
  a decimal with at least 2 places that is the truth rounded to those places is right
  ("0.33", "0.667", "33.33%"); (b) a decimal of 15 or more significant digits (a float printed
  in full, "0.30000000000000004") is right within a relative 1e-12. Integers are never
  compared with a tolerance. A truth written as a percentage ("25%") also accepts the bare
  percentage number ("25"), since "what percent ..." is often answered without "%".

``yes_no`` -> "yes" / "no". The first word decides: yes, yeah, yep, yup, true, correct,
  affirmative -> "yes"; no, nope, nah, not, false, incorrect, negative -> "no" ("True"/"False"
  answer a statement question the way "yes"/"no" answer a question). A hedge states a stance
  and is read as it when it is the whole first clause: "I think not", "probably not", "I don't
  think so", "not necessarily", "unlikely" -> "no"; "I think so", "probably", "definitely", "of
  course" -> "yes" ("Probably the answer is no" is no hedge: its "answer is no" decides). Both
  at once ("yes and no", "yes/no", "yes or no") and non-answers ("maybe", "it depends",
  "unknown", "both", "neither", "no answer", "none") are invalid. Failing that, the last "answer is yes/no" mark.

``kks`` -> ``Assignment`` (an immutable, hashable mapping name -> "knight"/"knave"/"spy";
  equal to the plain dict). Read from a JSON object ({"Alice": "knight", ...}, or one key
  holding such an object or such a string) or from statements "Alice: knight", "Alice -
  Knave", "Alice = spy", "Alice (knight)", "Alice is a knight", one per name, the last one for
  each name winning; "Alice is not a knight" states nothing. "truth-teller" = knight and
  "liar" = knave; so are the island words of reasoning-gym's knights_knaves puzzles (hero,
  saint, angel, altruist, sage, pioneer = knight; villain, sinner, devil, egoist, fool,
  laggard = knave), whose items are scored with this reader. With ``names`` every name must get a role (names matched case-insensitively,
  given back spelled as in ``names``); without, capitalised names in "Name: role" form.

``text`` -> str, SQuAD normalisation: casefold, punctuation removed, the articles a/an/the
  removed, whitespace collapsed; empty is invalid. (Agreement by embedding clusters is done
  elsewhere.)

Shown to people (``shown_answer(text, config)``, ``shown_value(kind, value, source)``): the one
reading every display uses (the Presenter's answer line, the poll's "current answers", the
handout's answer lines, the decision card, the timeline cells): the letter, yes/no, "Name: role,
...", the answer text (whitespace folded), or ``NO_READABLE``. A number is the value read, written
as a person writes it (``number_text``): integers in full, a decimal as its digits ("0.05", "1.5"),
rounded to 12 significant digits when it was written with 15 or more (a float printed in full:
"4.0000000000000001" -> "4", "0.30000000000000004" -> "0.3"), "n/d" only for a value no decimal
writes exactly (1/3); never a float's repr nor an unreduced "40000000000000001/10000000000000000".
"""
from __future__ import annotations

import re
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from mad_core.answers import (
    _LEAD_IN,
    _choice_letter,
    _last_boxed,
    _plain_latex,
    _undecorate,
    _words,
    final_answer,
    json_reply,
    never_raises,
    normalize_answer,
)

KINDS = ("choice", "number", "yes_no", "kks", "text")
NO_READABLE = "no readable answer"  # what a display shows for a reply that holds no answer of the debate's type
ROLES = ("knight", "knave", "spy")
LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True)
class DebateAnswerType:
    """How a debate's answers are read, from its config: ``answer_type`` (else "text") and its
    ``answer_options`` (the options of a choice, the names of a Knight-Knave-Spy puzzle)."""

    kind: str = "text"
    options: list[str] | None = None

    @classmethod
    def of(cls, config: Mapping | None) -> "DebateAnswerType":
        config = config if isinstance(config, Mapping) else {}
        kind = config.get("answer_type") if config.get("answer_type") in KINDS else "text"
        options = config.get("answer_options")
        return cls(kind, [str(o) for o in options] if isinstance(options, list) and options else None)

    @property
    def keywords(self) -> dict[str, Any]:
        """The keywords `read_answer` and `is_correct` take for this type."""
        if self.kind == "choice":
            return {"choices": self.options}
        if self.kind == "kks":
            return {"names": self.options}
        return {}


@dataclass(frozen=True)
class Reading:
    """An answer as read: ``value`` (normalised, hashable) or None with ``reason``.

    ``source`` is the piece of text the value was read from (for display and debugging).
    """

    value: Hashable | None = None
    reason: str = ""
    source: str = ""

    @property
    def valid(self) -> bool:
        return self.value is not None


def _invalid(reason: str, source: str = "") -> Reading:
    return Reading(None, reason, source)


class Assignment(Mapping):
    """An immutable, hashable name -> role mapping (a KKS answer); equal to the same dict."""

    __slots__ = ("_roles",)

    def __init__(self, pairs: Mapping[str, str] | Sequence[tuple[str, str]] = ()) -> None:
        object.__setattr__(self, "_roles", dict(pairs))

    def __getitem__(self, name: str) -> str:
        return self._roles[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._roles)

    def __len__(self) -> int:
        return len(self._roles)

    def __hash__(self) -> int:
        return hash(frozenset(self._roles.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._roles == dict(other.items())
        return NotImplemented

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Assignment is immutable")

    def __repr__(self) -> str:
        return f"Assignment({self._roles!r})"


# --- where the answer is -------------------------------------------------------------------

_FINAL_LABEL = re.compile(r"final\s++answer\s*+[*_]*+\s*+:", re.I)
_ANSWER_MARK = re.compile(r"\banswer\s*+(?:is\b|[:=])[\s*_:]*+", re.I)


def _json_answer(text: str) -> Any:
    reply = json_reply(text)
    if reply is not None and "answer" in reply:
        return reply["answer"]
    return None


def _answer_part(text: str) -> tuple[str, bool]:
    """(the answer segment, whether it was clearly marked). See the module docstring."""
    answer = _json_answer(text)
    if isinstance(answer, bool):
        return ("yes" if answer else "no"), True
    if isinstance(answer, (str, int)):
        return str(answer), True
    boxed = _last_boxed(text)
    if boxed is not None:
        return _plain_latex(boxed), True
    marked = _FINAL_LABEL.search(text) is not None
    return final_answer(text), marked


def _without_lead_in(part: str) -> str:
    part = _undecorate(_plain_latex(_undecorate(part)))
    lead_in = _LEAD_IN.match(part)
    if lead_in is not None:
        part = _undecorate(part[lead_in.end():])
    return part


def _last_mark(text: str) -> str | None:
    """The text after the last "answer is" / "answer:" in `text` (to the end of its line)."""
    last = None
    for last in _ANSWER_MARK.finditer(text):
        pass
    if last is None:
        return None
    return text[last.end():].partition("\n")[0]


# --- text (SQuAD) -----------------------------------------------------------------------------

_PUNCTUATION = re.compile(r"[^\w\s]++|_++")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalize_text(text: str) -> str:
    """SQuAD normalisation: casefold, punctuation and the articles a/an/the removed, spaces collapsed."""
    text = _PUNCTUATION.sub(" ", text.casefold())
    return " ".join(_ARTICLES.sub(" ", text).split())


def option_key(text: str) -> str:
    """How an option's text is compared (kind "choice"): lower-cased words and canonical numbers
    (``answers._words``: "-32 °F" and "32 °F" stay apart, "1,000" = "1000"), articles dropped."""
    return " ".join(word for word in _words(text).split() if word not in ("a", "an", "the"))


def _read_text(text: str) -> Reading:
    part, _ = _answer_part(text)
    part = _without_lead_in(part)
    value = normalize_text(part)
    if not value:
        return _invalid("no answer text", part)
    return Reading(value, "", part)


# --- choice ---------------------------------------------------------------------------------------

_LETTER_HEAD = re.compile(  # the letter marker at the start of a choice answer, to find the text after it
    r"(?:(?:option|choice)\b\s*+[:#]?+\s*+)?+[(\[]?+[a-j][)\]]?+[.:]?+\s*+", re.I)
_NAMED_LETTER = r"(?:option|choice)\s*+[:#]?+\s*+[(\[]?+(?P<named>[A-Ja-j])(?![\w'])"
_MARKED_LETTER = (
    r"(?:answer|option|choice)\s*+(?:is\b|[:=])[\s*_:]*+"
    r"(?:[(\[](?P<bracketed>[A-Ja-j])[)\]]"
    r"|(?P<bare>[A-J]|[b-j])(?![\w'])(?!\s++(?!(?:because|since|as|and|but|with|which)\b)[a-z]))"
)
_BRACKETED_LETTER = r"[(\[](?P<alone>[A-Ja-j])[)\]]"
_SEGMENT_LETTERS = re.compile(f"{_MARKED_LETTER}|{_NAMED_LETTER}|{_BRACKETED_LETTER}", re.I)
_REPLY_LETTERS = re.compile(_MARKED_LETTER, re.I)


def _last_letter(pattern: re.Pattern, text: str) -> str | None:
    last = None
    for last in pattern.finditer(text):
        pass
    if last is None:
        return None
    letter = next(group for group in last.groups() if group)
    # the "bare" alternative is case-sensitive in intent: re.I would let "a" through
    if last.groupdict().get("bare") and letter == "a":
        return None
    return letter.upper()


def _choice_in(bare: str, choices: Sequence[str] | None) -> Reading | None:
    """The choice `bare` (a whole answer segment) names, an invalid Reading, or None."""
    options = [option_key(str(option)) for option in choices] if choices else []
    letter = _choice_letter(bare)
    if letter is not None:
        letter = letter.upper()
        head = _LETTER_HEAD.match(bare)
        rest = bare[head.end():] if head is not None else ""
        named = [LETTERS[i] for i, option in enumerate(options) if option and option == option_key(rest)]
        if len(named) == 1 and rest and named[0] != letter:
            initial = len(bare) > 1 and bare[0] in LETTERS and bare[1] in ".:"
            if not initial:
                return _invalid(f"letter {letter} but the text of option {named[0]}", bare)
            letter = named[0]
        return _checked_letter(letter, choices, bare)
    if options:
        wanted = option_key(bare)
        named = [LETTERS[i] for i, option in enumerate(options) if option and option == wanted]
        if len(named) == 1:
            return Reading(named[0], "", bare)
    return None


def _checked_letter(letter: str, choices: Sequence[str] | None, source: str) -> Reading:
    if choices and LETTERS.index(letter) >= len(choices):
        return _invalid(f"letter {letter} past the last option {LETTERS[len(choices) - 1]}", source)
    return Reading(letter, "", source)


def _read_choice(text: str, choices: Sequence[str] | None) -> Reading:
    if choices is not None and len(choices) > len(LETTERS):
        return _invalid(f"more than {len(LETTERS)} choices")
    part, marked = _answer_part(text)
    bare = _without_lead_in(part)
    found = _choice_in(bare, choices)
    if found is not None:
        return found
    letter = _last_letter(_SEGMENT_LETTERS, part) if (marked or len(part) <= 200) else None
    if letter is None and not marked:
        letter = _last_letter(_REPLY_LETTERS, text)
    if letter is None:
        return _invalid("no choice letter", bare)
    return _checked_letter(letter, choices, bare)


# --- number ---------------------------------------------------------------------------------------

_NUMBER_TOKEN = re.compile(
    r"(?<![\w.^/,])(?P<sign>[-+−]?+)(?P<currency>[$€£]?+)(?P<sign2>[-−]?+)"
    r"(?:(?P<int>[0-9]{1,3}+(?:,[0-9]{3})++(?![0-9])|[0-9]++)(?:\.(?P<frac>[0-9]++))?+|\.(?P<frac_only>[0-9]++))"
    r"(?:[eE](?P<exp_sign>[-+]?+)(?P<exp>[0-9]++))?+"
    r"(?:\s*+/\s*+(?P<den>[0-9]++)(?![\w^]|\.[0-9]))?+"
    r"(?P<percent>\s*+%)?+"
    r"(?!\^)"
)
_EQUALS = re.compile(r"=|≈")
_MAX_DIGITS = 4000
_MAX_EXPONENT = 10000
_NUMBER_WORDS = {
    word: value for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split())
}
_NUMBER_WORDS.update({word: 10 * tens for tens, word in enumerate(
    "thirty forty fifty sixty seventy eighty ninety".split(), start=3)})
_WORD = re.compile(r"[a-z]++")


@dataclass(frozen=True)
class _Number:
    value: Fraction
    places: int = 0          # decimal places of `value` as written (percent adds 2), decimals only
    decimal: bool = False    # written with a decimal point or an exponent
    significant: int = 0     # significant digits written
    percent: Fraction | None = None  # for "25%": 25, the bare percentage number


def _number_from(found: re.Match) -> _Number | str:
    """A _Number from a _NUMBER_TOKEN match, or the reason it is none."""
    if found["sign"] and found["sign2"]:
        return "two signs"
    whole = (found["int"] or "").replace(",", "")
    fraction = found["frac"] or found["frac_only"] or ""
    if len(whole) + len(fraction) > _MAX_DIGITS:
        return f"more than {_MAX_DIGITS} digits"
    exponent = 0
    if found["exp"] is not None:
        digits = found["exp"].lstrip("0") or "0"
        if len(digits) > 6 or int(digits) > _MAX_EXPONENT:
            return f"exponent beyond {_MAX_EXPONENT}"
        exponent = int(digits) * (-1 if found["exp_sign"] == "-" else 1)
    value = Fraction(int(whole or "0") * 10 ** len(fraction) + int(fraction or "0"), 10 ** len(fraction))
    value *= Fraction(10) ** exponent
    decimal = bool(fraction) or found["exp"] is not None
    if found["den"] is not None:
        if decimal:
            return "a fraction of decimals"
        denominator = int(found["den"]) if len(found["den"]) <= _MAX_DIGITS else 0
        if denominator == 0:
            return "a fraction with denominator 0"
        value /= denominator
    if (found["sign"] or found["sign2"]) in ("-", "−"):
        value = -value
    significant = len((whole + fraction).lstrip("0"))
    places = max(len(fraction) - exponent, 0)
    if found["percent"]:
        return _Number(value / 100, places + 2, decimal, significant, value)
    return _Number(value, places, decimal, significant)


def _several(found: list[_Number | str], written: list[str]) -> str | None:
    """The reason an unmarked segment is unreadable ("several numbers: 0.11, 0.9"), or None when
    its numbers are all one value (so "50%, i.e. 0.5" is 1/2)."""
    values = {number.value for number in found if not isinstance(number, str)}
    if len(values) < 2:
        return None
    shown = list(dict.fromkeys(written))
    return "several numbers: " + ", ".join(shown[:6]) + (", …" if len(shown) > 6 else "")


def _pick_number(segment: str, first: bool) -> _Number | str:
    """The number `segment` gives. Marked (`first`): after the last "=" the first number, else
    the first. Unmarked: the only number (several of one value count as one); "= X" ending the
    segment with one number after it marks X; several different numbers are unreadable, never
    silently the last one ("The larger is 0.11, not 0.9")."""
    equals = None
    for equals in _EQUALS.finditer(segment):
        pass
    if equals is not None and _NUMBER_TOKEN.search(segment, equals.end()) is not None:
        after = segment[equals.end():]
        tokens = list(_NUMBER_TOKEN.finditer(after))
        if first or _several([_number_from(t) for t in tokens], [t.group().strip() for t in tokens]) is None:
            segment, first = after, True
    tokens = list(_NUMBER_TOKEN.finditer(segment))
    if tokens:
        if first:
            return _number_from(tokens[0])
        numbers = [_number_from(t) for t in tokens]
        several = _several(numbers, [t.group().strip() for t in tokens])
        return several if several is not None else numbers[-1]
    if not any(character.isdigit() for character in segment):
        words = _WORD.findall(segment.lower())
        spoken = [word for word in words if word in _NUMBER_WORDS]
        if spoken:
            if not first:
                several = _several([_Number(Fraction(_NUMBER_WORDS[w])) for w in spoken], spoken)
                if several is not None:
                    return several
            return _Number(Fraction(_NUMBER_WORDS[spoken[0] if first else spoken[-1]]))
    return "no number"


def _read_number_detail(text: str) -> tuple[_Number | str, str]:
    part, marked = _answer_part(text)
    lead_in = _LEAD_IN.match(_undecorate(_plain_latex(_undecorate(part))))
    marked = marked or lead_in is not None  # "The answer is 5, not 7" is marked
    bare = _without_lead_in(part)
    if not marked:
        after_mark = _last_mark(bare)
        if after_mark is not None and _NUMBER_TOKEN.search(after_mark):
            bare, marked = after_mark, True
    number = _pick_number(bare, first=marked)
    if isinstance(number, str) and number == "no number" and not marked:
        after_mark = _last_mark(text)
        if after_mark is not None:
            bare = after_mark
            number = _pick_number(after_mark, first=True)
    return number, bare


def _read_number(text: str) -> Reading:
    number, source = _read_number_detail(text)
    if isinstance(number, str):
        return _invalid(number, source)
    return Reading(number.value, "", source)


def _truth_number(truth: Any) -> _Number | str:
    if isinstance(truth, bool):
        return "a bool is no number"
    if isinstance(truth, int):
        return _Number(Fraction(truth))
    if isinstance(truth, Fraction):
        return _Number(truth)
    if isinstance(truth, (float, Decimal)):
        truth = str(truth)
        if truth.lower() in ("inf", "-inf", "nan", "infinity", "-infinity"):
            return "not a finite number"
    return _read_number_detail(str(truth))[0]


def _terminates(value: Fraction) -> bool:
    denominator = value.denominator
    for factor in (2, 5):
        while denominator % factor == 0:
            denominator //= factor
    return denominator == 1


def _numbers_match(answer: _Number, truth: _Number) -> bool:
    targets = [truth.value]
    if truth.percent is not None and answer.percent is None:
        targets.append(truth.percent)
    for target in targets:
        if answer.value == target:
            return True
        if not answer.decimal:
            continue
        if (answer.places >= 2 and not _terminates(target)
                and abs(answer.value - target) <= Fraction(1, 2 * 10 ** answer.places)):
            return True
        if (answer.significant >= 15 and target != 0
                and abs(answer.value - target) <= abs(target) * Fraction(1, 10 ** 12)):
            return True
    return False


# --- yes / no -------------------------------------------------------------------------------------

_YES = frozenset("yes yeah yep yup yea true correct affirmative".split())
_NO = frozenset("no nope nah not false incorrect negative".split())
_YES_PHRASES = frozenset((
    "i think so", "i believe so", "i guess so", "probably", "probably yes", "likely", "very likely",
    "most likely", "definitely", "certainly", "absolutely", "of course", "indeed", "sure",
))
_NO_PHRASES = frozenset((
    "i think not", "i believe not", "i guess not", "i don't think so", "i do not think so",
    "i dont think so", "probably not", "likely not", "most likely not", "unlikely", "very unlikely",
    "definitely not", "certainly not", "absolutely not", "of course not", "not really", "not at all",
    "not necessarily", "no way",
))
_NEITHER = frozenset(("maybe", "perhaps", "it depends", "depends", "unknown", "unclear",
                      "cannot be determined", "can't be determined", "cannot say", "can't say",
                      "not sure", "i don't know", "i do not know", "uncertain", "both", "neither",
                      "no answer", "no idea", "no comment", "none", "n a"))
_YES_NO_WORD = re.compile(r"[a-z]++(?:'[a-z]++)?+")
_CLAUSE = re.compile(r"[^.,;:!?\n()\u2014\u2013]*+")  # .match: the first clause
_BOTH_SLASHED = re.compile(r"\W*+(?:yes|no|true|false)\s*+/\s*+(?:yes|no|true|false)\b", re.I)
_YES_NO_MARK = re.compile(r"\banswer\s*+(?:is\b|[:=])[\s*_:\"'“]*+(yes|no|true|false)\b", re.I)


def _yes_no_of(segment: str) -> str | None:
    """ "yes", "no", "" (both or neither: invalid), or None (nothing said)."""
    segment = segment[:400].casefold().replace("\u2019", "'")
    if _BOTH_SLASHED.match(segment):
        return ""  # "yes/no"
    clause = " ".join(_YES_NO_WORD.findall(_CLAUSE.match(segment).group()))
    if clause in _NEITHER:
        return ""
    if clause in _NO_PHRASES:
        return "no"
    if clause in _YES_PHRASES:
        return "yes"
    words = _YES_NO_WORD.findall(segment)
    if not words:
        return None
    stance = "yes" if words[0] in _YES else "no" if words[0] in _NO else None
    if stance is None:
        return None
    opposite = _NO if stance == "yes" else _YES
    if len(words) >= 3 and words[1] in ("and", "or") and words[2] in opposite:
        return ""  # "yes and no", "yes or no"
    return stance


def _read_yes_no(text: str) -> Reading:
    part, marked = _answer_part(text)
    bare = _without_lead_in(part)
    stance = _yes_no_of(bare)
    if stance is None:
        found = None
        for found in _YES_NO_MARK.finditer(part if marked else text):
            pass
        if found is not None:
            stance = _yes_no_of(found.group(1))
    if stance == "":
        return _invalid("neither clearly yes nor no", bare)
    if stance is None:
        return _invalid("no yes/no answer", bare)
    return Reading(stance, "", bare)


# --- Knight-Knave-Spy -----------------------------------------------------------------------------

# The truth-teller / liar pairs of reasoning-gym's knights_knaves (KNIGHT_KNAVE_PAIRS there).
_KNIGHT_SYNONYMS = ("hero", "saint", "angel", "altruist", "sage", "pioneer")
_KNAVE_SYNONYMS = ("villain", "sinner", "devil", "egoist", "fool", "laggard")
_ROLE_WORD = (r"(?P<role>knights?+|knaves?+|spy|spies|truth[- ]?+tellers?+|liars?+|(?:"
              + "|".join(_KNIGHT_SYNONYMS + _KNAVE_SYNONYMS) + r")(?:e?s)?+)(?![\w])")
_STATEMENT_TAIL = (
    r"(?![\w])[\s*_\"'`]*+"
    r"(?:(?:is|was|must\s++be|would\s++be|->|→|=|:|-|–|—|\()[\s*_\"'`]*+)?+"
    r"(?P<negation>not\s++)?+(?:(?:an?|the)\s++)?+" + _ROLE_WORD
)
_GENERIC_STATEMENT = re.compile(
    r"(?<![\w])(?P<name>[A-Z][\w'-]*+)[\s*_\"'`]*+(?:->|→|[:=\-–—(])[\s*_\"'`]*+"
    r"(?P<negation>(?i:not)\s++)?+(?i:(?:(?:an?|the)\s++)?+" + _ROLE_WORD + ")"
)
_NOT_NAMES = frozenset("answer final role roles the a an if so then thus therefore note".split())


def _role(word: str) -> str | None:
    word = word.lower().replace(" ", "").replace("-", "")
    if word.startswith(("knight", "truthteller") + _KNIGHT_SYNONYMS):
        return "knight"
    if word.startswith(("knave", "liar") + _KNAVE_SYNONYMS):
        return "knave"
    if word in ("spy", "spies"):
        return "spy"
    return None


def _names_pattern(names: Sequence[str]) -> re.Pattern:
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return re.compile(r"(?<![\w])(?P<name>" + alternatives + ")" + _STATEMENT_TAIL, re.I)


def _assignment_from_mapping(data: Mapping, names: Sequence[str] | None) -> dict[str, str] | None:
    """name -> role from a JSON object, or None if it holds no such mapping."""
    spelled = {name.casefold(): name for name in names} if names else None
    roles: dict[str, str] = {}
    for key, value in data.items():
        if not isinstance(key, str) or not isinstance(value, str):
            continue
        role = _role(value.strip())
        if role is None:
            continue
        if spelled is not None:
            if key.strip().casefold() in spelled:
                roles[spelled[key.strip().casefold()]] = role
        else:
            roles[key.strip()] = role
    if roles:
        return roles
    for value in data.values():  # {"answer": {...}} / {"assignment": "Alice: knight, ..."}
        if isinstance(value, Mapping):
            inner = _assignment_from_mapping(value, names)
            if inner:
                return inner
    return None


def _assignment_from_text(segment: str, names: Sequence[str] | None) -> dict[str, str]:
    roles: dict[str, str] = {}
    if names:
        spelled = {name.casefold(): name for name in names}
        statements = _names_pattern(names).finditer(segment)
    else:
        spelled = None
        statements = _GENERIC_STATEMENT.finditer(segment)
    for statement in statements:
        if statement["negation"]:
            continue
        name = statement["name"]
        if spelled is not None:
            name = spelled[name.casefold()]
        elif name.casefold() in _NOT_NAMES:
            continue
        role = _role(statement["role"])
        if role is not None:
            roles.pop(name, None)
            roles[name] = role
    return roles


def _kks_segment(text: str) -> tuple[str | Mapping, bool]:
    reply = json_reply(text)
    if reply is not None:
        return reply, True
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed, True
    last = None
    for last in _FINAL_LABEL.finditer(text):
        pass
    if last is not None:
        rest = text[last.end():]
        inner = json_reply(rest.strip())
        return (inner if inner is not None else rest), True
    return text, False


def _read_kks(text: str, names: Sequence[str] | None) -> Reading:
    if names is not None:
        names = [str(name) for name in names]
        if not names or any(not name.strip() for name in names):
            return _invalid("names must be non-empty")
    segment, _ = _kks_segment(text)
    if isinstance(segment, Mapping):
        roles = _assignment_from_mapping(segment, names)
        if roles is None:
            inner = segment.get("answer")
            if not isinstance(inner, str):
                inner = next((value for value in segment.values() if isinstance(value, str)), "")
            roles = _assignment_from_text(inner, names)
        source = str(segment)[:200]
    else:
        roles = _assignment_from_text(segment, names)
        source = segment.strip()[:200]
    if not roles:
        return _invalid("no role assignment", source)
    if names:
        missing = [name for name in names if name not in roles]
        if missing:
            return _invalid(f"no role for {', '.join(missing)}", source)
        return Reading(Assignment((name, roles[name]) for name in names), "", source)
    return Reading(Assignment(roles), "", source)


def _truth_kks(truth: Any, names: Sequence[str] | None) -> tuple[Reading, Sequence[str] | None]:
    if isinstance(truth, Mapping):
        roles = {str(name): _role(str(role)) for name, role in truth.items()}
        if not roles or any(role is None for role in roles.values()):
            return _invalid("a role is not knight, knave or spy"), names
        wanted = list(names) if names else list(roles)
        by_fold = {name.casefold(): role for name, role in roles.items()}
        if any(name.casefold() not in by_fold for name in wanted):
            return _invalid("the truth lacks a name"), names
        return Reading(Assignment((name, by_fold[name.casefold()]) for name in wanted)), wanted
    return _read_kks(str(truth), names), names


# --- public API -----------------------------------------------------------------------------------

def _read_failed(error: Exception) -> Reading:
    return _invalid(f"unreadable ({type(error).__name__})")


@never_raises(_read_failed)
def read_answer(kind: str, text: Any, *, choices: Sequence[str] | None = None,
                names: Sequence[str] | None = None) -> Reading:
    """The normalised answer of kind `kind` in `text` (a reply or a written answer).

    Never raises; linear time in len(text). See the module docstring for the rules.
    """
    if kind not in KINDS:
        return _invalid(f"unknown answer kind {kind!r} (one of {', '.join(KINDS)})")
    if text is None:
        return _invalid("no answer")
    if isinstance(text, bool) and kind == "yes_no":
        text = "yes" if text else "no"
    if isinstance(text, Mapping) and kind == "kks":
        return _truth_kks(text, names)[0]
    text = str(text)
    if kind == "choice":
        return _read_choice(text, choices)
    if kind == "number":
        return _read_number(text)
    if kind == "yes_no":
        return _read_yes_no(text)
    if kind == "kks":
        return _read_kks(text, names)
    return _read_text(text)


def _truths(truth: Any) -> list[Any]:
    if isinstance(truth, (list, tuple, set, frozenset)):
        return list(truth)
    return [truth]


def _no_judgement(error: Exception) -> None:
    return None


@never_raises(_no_judgement)
def is_correct(kind: str, answer_text: Any, truth: Any, **kw: Any) -> bool | None:
    """Whether the answer in `answer_text` equals `truth` (a written answer, or a list of
    acceptable ones); None when no truth can be read, False when the answer cannot be read.

    Keywords: ``choices`` (kind "choice"), ``names`` (kind "kks"; defaults to the truth's
    names when the truth is a mapping). Numbers: see the module docstring for the tolerances.
    """
    choices, names = kw.get("choices"), kw.get("names")
    if kind not in KINDS:
        return None
    judged: list[bool] = []
    for one in _truths(truth):
        if kind == "number":
            target = _truth_number(one)
            if isinstance(target, str):
                continue
            answer, _ = _read_number_detail("" if answer_text is None else str(answer_text))
            judged.append(not isinstance(answer, str) and _numbers_match(answer, target))
            continue
        if kind == "kks":
            target_reading, wanted = _truth_kks(one, names)
        else:
            target_reading, wanted = read_answer(kind, one, choices=choices, names=names), names
        if not target_reading.valid:
            continue
        reading = read_answer(kind, answer_text, choices=choices, names=wanted)
        judged.append(reading.valid and reading.value == target_reading.value)
    if not judged:
        return None
    return any(judged)


# --- shown to people ------------------------------------------------------------------------------

SHOWN_DIGITS = 12  # significant digits a long decimal is shown with (a float's noise is past the 15th)
_NOISY_DIGITS = 15  # a decimal written with this many significant digits or more is a float printed in full
_WHOLE_DIGITS = 40  # a longer integer is shown in scientific form


def number_text(value: Fraction) -> str:
    """`value` as a person writes it: "4", "0.05", "-1.5", "1/3" (only when no decimal writes it
    exactly), a decimal of 15 or more significant digits rounded to 12 ("4.0000000000000001" ->
    "4"), an integer of more than 40 digits or a tiny decimal in scientific form ("1e+400")."""
    value = Fraction(value)
    if value.denominator == 1 and len(str(abs(value.numerator))) <= _WHOLE_DIGITS:
        return str(value.numerator)
    if value.denominator != 1 and not _terminates(value):
        return f"{value.numerator}/{value.denominator}"
    with localcontext() as context:  # exact: the decimal terminates
        context.prec = len(str(abs(value.numerator))) + len(str(value.denominator)) + 2
        exact = (Decimal(value.numerator) / Decimal(value.denominator)).normalize()
    digits = len(exact.as_tuple().digits)
    if digits >= _NOISY_DIGITS or abs(exact.adjusted()) > _WHOLE_DIGITS:
        with localcontext() as context:
            context.prec = SHOWN_DIGITS
            exact = (+exact).normalize()
    if abs(exact.adjusted()) > _WHOLE_DIGITS:
        return f"{exact:e}"
    return f"{exact:f}"


def shown_value(kind: str, value: Any, source: str = "") -> str:
    """How a read answer (`Reading.value` of kind `kind`, read from `source`) is shown: the letter,
    yes/no, "Name: role, ...", the number (`number_text`), the answer text as written (whitespace
    folded, whole: each display cuts it to its room, the decision card keeps the whole one a click
    away). The metric report's answers (timeline, votes, exports) are these too."""
    if kind == "kks" and isinstance(value, Mapping):
        return ", ".join(f"{name}: {role}" for name, role in value.items())
    if kind == "number" and isinstance(value, Fraction):
        return number_text(value)
    if kind == "text":
        return " ".join(str(source).split()) or str(value)
    return str(value)


def _not_shown(error: Exception) -> str:
    return NO_READABLE


@never_raises(_not_shown)
def shown_answer(text: Any, config: Mapping | None = None, stated: str | None = None) -> str:
    """The answer in `text` (a reply, or a decided answer) as every display shows it, read with the
    debate's answer type (`config`'s ``answer_type`` and ``answer_options``; free text without
    one): `shown_value` of the reading, or NO_READABLE when the reply holds none. Never raises.

    `stated` (a turn's own answer, as its paradigm read it) counts only for a Knight-Knave-Spy
    reply that is not a whole assignment: a per-player debate reply states one player's role
    ("Liam: knight"), shown as that part of the assignment."""
    answer_type = DebateAnswerType.of(config)
    reading = read_answer(answer_type.kind, text, **answer_type.keywords) if str(text or "").strip() else None
    if (reading is None or not reading.valid) and answer_type.kind == "kks" and stated:
        part = read_answer("kks", stated, names=[name for name in answer_type.options or []
                                                if name.casefold() in stated.casefold()] or None)
        reading = part if part.valid else reading
    if reading is None or not reading.valid:
        return NO_READABLE
    return shown_value(answer_type.kind, reading.value, reading.source)


_WORDS = re.compile(r"[^\W\d_]++")
_NUMBER_REFERENCE_WORDS = 2  # "5 cents", "$1.5 million": a number and a unit or two, not a sentence


@never_raises(lambda error: False)
def reads_as_number(text: Any) -> bool:
    """Whether a written answer (a reference) is a number: it reads as one (kind "number") and holds
    at most two words besides it ("0.05", "$0.05", "5 cents", "1/3"; not "Paris", nor "It was built
    in 1889"). The form uses it to suggest the number answer type; never raises."""
    text = str(text if text is not None else "")
    return (len(text) <= 200 and read_answer("number", text).valid
            and len(_WORDS.findall(text)) <= _NUMBER_REFERENCE_WORDS)


@never_raises(_no_judgement)
def answer_key(kind: str, text: Any, options: Sequence[str] | None = None) -> str | None:
    """An answer as a debate of answer type `kind` reads it, as a key that equal answers share
    ("18 apples" and "18" for a number, "Yes, it is." and "yes" for yes/no, "(B) Paris" and "b" for a
    choice); None when `text` holds no answer of that type. The orderings and solution counting
    compare answers by it, as the metrics do. Free text ("text"): `normalize_answer`'s form, the rule
    text debates always had. Never raises."""
    if kind == "text" or kind not in KINDS:
        return normalize_answer(str(text or "")) or None
    answer_type = DebateAnswerType(kind, list(options) if options else None)
    reading = read_answer(kind, text, **answer_type.keywords)
    if not reading.valid:
        return None
    value = reading.value
    return repr(sorted(value.items())) if isinstance(value, Mapping) else repr(value)
