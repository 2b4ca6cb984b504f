"""Parsers never raise: every reader of model text, fed any string, returns a result.

Fuzzes `parse_ballot` (every protocol), `read_judge_verdict` / `parse_judge_verdict` and the
readers of mad_core/answers.py with arbitrary text (lone surrogates and NUL included), with
text built from the words the parsers look for, and with hostile shapes (numbers of
thousands of digits, JSON nested thousands deep, points beyond 1e308, long repetitions,
single-quoted dictionaries that never close); checks that well-formed input is read
exactly (ballots, numbers of any length, the last boxed answer, judge dictionaries of any
content); then pins the failures a hostile probe found. Speed is checked by
bench/parsers.py, not here.

Examples per property: the "madlab" hypothesis profile of tests/conftest.py (1,000).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import Decimal, localcontext
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mad_core import answers
from mad_core.answers import (
    drop_lead_in,
    extracted_answer,
    final_answer,
    json_reply,
    never_raises,
    normalize_answer,
    parse_agreement,
    parse_confidence,
    strip_confidence,
    strip_final_answer,
)
from mad_core.protocols import ballots
from mad_core.protocols.ballots import Ballot, Verdict, parse_ballot, parse_judge_verdict, read_judge_verdict
from mad_core.protocols.counting import CUMULATIVE_POINTS, tally
from mad_core.protocols.simple_voting import SimpleVoting

PROTOCOLS = ("simple_voting", "approval_voting", "ranked_voting", "cumulative_voting", "judge")
N_SOLUTIONS = 3
MAX_REASON = 300  # reasons quote the reply, cut short: they go back into the next prompt

# --- strategies ------------------------------------------------------------------------------

HOSTILE_CHARACTERS = ["\ud800", "\udfff", "\x00", "\ufeff", "\u2028", "ſ", "İ", "٣", "𝟏", "→"]
any_character = st.one_of(
    st.characters(exclude_categories=()),  # every code point: surrogates and NUL included
    st.sampled_from(HOSTILE_CHARACTERS),
)
any_text = st.text(alphabet=any_character)

WORDS = [
    "Solution", "solutions", "Option", "candidate", "no.", "number", "#", "1", "2", "3", "4",
    "0", "07", "10", "3.5", "-2", "1e3", ":", "=", "->", "→", "gets", ",", ";", "&", ">", "and",
    "or", "then", "{", "}", "[", "]", '"', "'", " ", "\n", "\t", "**", "`", "_", "<think>",
    "</think>", "Final answer:", "final answer", "Confidence:", "confidence level", "/10",
    "out of 10", "AGREE", "DISAGREE", "agree", "not", "n't", "Decision", "verdict", "yes", "No",
    "true", "false", "answer", "debate_answer", "preference", "\\boxed{", "(B)", "the answer is",
    "$", "%", "1,000", "42.0", "points", "'Whether there is a preference'", "'Supported Side'",
    "'Yes'", "'Negative'", "\\'", "I agree", "I do not", "but", "scientists", "\\frac{1}{2}", "B. ",
    "E. coli", "1e400", "-", "/", ".", "\n",
]
word_text = st.lists(st.one_of(st.sampled_from(WORDS), any_text.filter(bool)), max_size=40).map("".join)

long_digits = st.integers(19, 6000).map(lambda n: "1" * n)
deep = st.integers(1, 3000)
UNITS = ["1:1,", "{", "[", "Solution 1 ", "Solution ", " ", "1", "1.", "<think>", "final answer",
         "confidence", ":", "decision:", "answer-", '{"}', "\\boxed{", "**", "\ud800", "\x00", "1, ",
         "{'", "{'a", "'a': 'b', ", "{'a': 'b'}", "\\'", "\\boxed{{a}", "AGREE\n", "Confidence: 8/10\n",
         "0", "1.50 ", "side:"]
HOSTILE_TEMPLATES = [
    "{}", "Solution {}", "I vote for {}.", "{} > 2 > 1", '{{"1": {}}}', '{{"{}": 1}}',
    "Solution 1: {}", "{}: 5", "Confidence: {}/10", "Final answer: {}", "Decision: yes\nAnswer: {}",
]
hostile_text = st.one_of(
    st.builds(str.format, st.sampled_from(HOSTILE_TEMPLATES), long_digits),
    deep.map(lambda d: "{" * d + "}" * d),
    deep.map(lambda d: '{"1": ' + "[" * d + "1" + "]" * d + "}"),
    deep.map(lambda d: '{"Decision": "yes", "answer": ' + "[" * d + "]" * d + "}"),
    deep.map(lambda d: "[" * d + "{" * d),
    st.builds(str.format, st.sampled_from(HOSTILE_TEMPLATES),
              st.sampled_from(["1e309", "-1e309", "1e308", "NaN", "Infinity", "-0.0", "1" + "0" * 400,
                               "9" * 4301, "1e-400", "0x10", "1_000"])),
    st.builds(lambda unit, times: unit * times, st.sampled_from(UNITS), st.integers(1, 3000)),
    st.builds(lambda text, times: text * times, word_text, st.integers(1, 200)),
)
text = st.one_of(any_text, word_text, hostile_text)
any_protocol = st.sampled_from(PROTOCOLS)

# --- what every result must look like -------------------------------------------------------


def check_ballot(ballot: Any, protocol: str, n_solutions: int = N_SOLUTIONS,
                 points: int = CUMULATIVE_POINTS) -> None:
    """Valid with a value in range that `tally` accepts, or invalid with a short reason."""
    assert isinstance(ballot, Ballot)
    if not ballot.valid:
        assert ballot.value is None
        assert isinstance(ballot.reason, str) and 0 < len(ballot.reason) <= MAX_REASON
        return
    assert ballot.valid is True and ballot.reason is None
    value = ballot.value
    if protocol in ("simple_voting", "judge"):
        assert type(value) is int and 0 <= value < n_solutions
    elif protocol == "cumulative_voting":
        assert isinstance(value, dict) and value
        assert all(type(k) is int and 0 <= k < n_solutions for k in value)
        assert all(type(v) is int and v >= 0 for v in value.values())
        assert sum(value.values()) <= points
    else:
        assert isinstance(value, list) and value and len(set(value)) == len(value)
        assert all(type(k) is int and 0 <= k < n_solutions for k in value)
    counted = "simple_voting" if protocol == "judge" else protocol
    assert tally(counted, [value], n_solutions).valid == 1


def check_verdict(result: Any, text: str) -> None:
    decision, answer = result
    assert decision in (True, False, None) and isinstance(answer, str)


def check_read_verdict(result: Any, text: str) -> None:
    assert isinstance(result, Verdict)
    assert result.decision in (True, False, None) and isinstance(result.answer, str)
    assert result.side in ("affirmative", "negative", None) and isinstance(result.reason, str)
    assert (result.decision, result.answer) == parse_judge_verdict(text)


def check_final_answer(result: Any, text: str) -> None:
    assert isinstance(result, str) and result in text  # a piece of the reply, never made up


def check_normalized(result: Any, text: str) -> None:
    assert isinstance(result, str) and result == result.strip()


def check_agreement(result: Any, text: str) -> None:
    assert result in (True, False, None)
    assert result is parse_agreement(text[:200])  # only the opening is read


def check_confidence(result: Any, text: str) -> None:
    assert result is None or (type(result) is int and 1 <= result <= 10)


def check_stripped(result: Any, text: str) -> None:
    assert isinstance(result, str) and len(result) <= len(text)


def check_json_reply(result: Any, text: str) -> None:
    assert result is None or (isinstance(result, dict) and (text or "").rstrip().endswith(("}", "```")))


def check_extracted(result: Any, text: str) -> None:
    assert isinstance(result, str) and result == result.strip()


READERS: dict[str, tuple[Callable[[str], Any], Callable[[Any, str], None]]] = {
    "parse_judge_verdict": (parse_judge_verdict, check_verdict),
    "read_judge_verdict": (read_judge_verdict, check_read_verdict),
    "final_answer": (final_answer, check_final_answer),
    "normalize_answer": (normalize_answer, check_normalized),
    "parse_agreement": (parse_agreement, check_agreement),
    "parse_confidence": (parse_confidence, check_confidence),
    "strip_final_answer": (strip_final_answer, check_stripped),
    "strip_confidence": (strip_confidence, check_stripped),
    "json_reply": (json_reply, check_json_reply),
    "extracted_answer": (extracted_answer, check_extracted),
    "drop_lead_in": (drop_lead_in, check_extracted),
}

# --- fuzzing: any text, every parser ------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
@given(reply=text, n_solutions=st.integers(1, 12), points=st.integers(0, 100))
def test_parse_ballot_never_raises(protocol, reply, n_solutions, points):
    check_ballot(parse_ballot(protocol, reply, n_solutions, points), protocol, n_solutions, points)


@pytest.mark.parametrize("name", READERS)
@given(reply=text)
def test_readers_never_raise(name, reply):
    reader, check = READERS[name]
    check(reader(reply), reply)


@pytest.mark.parametrize("name", READERS)
def test_readers_accept_none(name):
    reader, check = READERS[name]
    check(reader(None), "")


@given(lead_in=st.sampled_from(["The answer is: ", "Final answer: ", "Answer: ", "**Final answer:** ",
                                "The correct answer is ", "answer - "]),
       answer=st.from_regex(r"[0-9A-Za-z$][0-9A-Za-z .,$/]{0,30}", fullmatch=True).filter(
           lambda a: "answer" not in a.lower()),
       fenced=st.booleans())
def test_an_extracted_answer_drops_the_lead_in_the_model_wrote(lead_in, answer, fenced):
    # The decision card headed "The answer is: 1111": the extraction's answer is the answer alone.
    reply = json.dumps({"answer": lead_in + answer}, indent=2)
    reply = f"```json\n{reply}\n```" if fenced else reply
    assert extracted_answer(reply) == answer.strip()
    assert extracted_answer(lead_in + answer) == answer.strip()  # a plain-text extraction reply too
    assert extracted_answer(json.dumps({"answer": answer})) == answer.strip()  # no lead-in: unchanged


@given(protocol=st.one_of(st.text(max_size=30), st.none()), reply=word_text)
def test_any_protocol_name_gives_a_ballot(protocol, reply):
    ballot = parse_ballot(protocol, reply, N_SOLUTIONS)
    if protocol in PROTOCOLS:
        check_ballot(ballot, protocol)
    else:
        assert not ballot.valid and "valid names: simple_voting" in ballot.reason


# --- fuzzing: well-formed ballots are read exactly ---------------------------------------------

n_and_choice = st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n)))


@given(n_and_choice, st.sampled_from(["Solution {}", "**Solution {}**", "{}", "I vote for Solution {}."]))
def test_a_single_named_solution_is_that_vote(n_and_choice, template):
    n, k = n_and_choice
    reply = template.format(k)
    assert parse_ballot("simple_voting", reply, n) == parse_ballot("judge", reply, n) == Ballot(k - 1, True)
    assert parse_ballot("approval_voting", reply, n) == parse_ballot("ranked_voting", reply, n) == \
        Ballot([k - 1], True)
    assert parse_ballot("cumulative_voting", reply, n).reason == "no points allocation found"


solutions_and_ranking = st.integers(1, 30).flatmap(
    lambda n: st.tuples(st.just(n), st.permutations(range(1, n + 1)), st.integers(0, n)))


@given(solutions_and_ranking)
def test_json_ballots_in_the_constrained_form_are_read_exactly(solutions_and_ranking):
    """The JSON forms of protocols/schemas.py: {"vote": k}, {"approved": [...]}, {"ranking": [...]}, points."""
    n, ranking, cut = solutions_and_ranking
    assert parse_ballot("simple_voting", json.dumps({"vote": ranking[0]}), n) == Ballot(ranking[0] - 1, True)
    approved = ranking[:max(cut, 1)]
    assert parse_ballot("approval_voting", json.dumps({"approved": approved}), n) == \
        Ballot([k - 1 for k in approved], True)
    assert parse_ballot("ranked_voting", json.dumps({"ranking": ranking}), n) == Ballot([k - 1 for k in ranking], True)
    points = {str(k): (CUMULATIVE_POINTS if k == ranking[0] else 0) for k in range(1, n + 1)}
    assert parse_ballot("cumulative_voting", json.dumps(points), n) == \
        Ballot({k - 1: v for k, v in ((int(k), v) for k, v in points.items())}, True)


orders = st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.permutations(range(1, n + 1))))


@given(orders, st.integers(1, 12), st.sampled_from([" > ", ", ", " then ", "\n"]),
       st.sampled_from(["{}", "Solution {}"]))
def test_rankings_and_approvals_are_read_in_order(order, size, separator, mention):
    n, permutation = order
    chosen = permutation[:size]
    reply = separator.join(mention.format(k) for k in chosen)
    assert parse_ballot("ranked_voting", reply, n) == Ballot([k - 1 for k in chosen], True)
    assert parse_ballot("approval_voting", reply, n) == Ballot([k - 1 for k in chosen], True)


allocations = st.integers(1, 12).flatmap(
    lambda n: st.tuples(st.just(n), st.dictionaries(st.integers(1, n), st.integers(0, 10**6), min_size=1))
)


@given(allocations, st.booleans())
def test_cumulative_allocations_are_read_exactly(allocation, as_json):
    n, given_points = allocation
    if as_json:
        reply = json.dumps({str(k): v for k, v in given_points.items()})
    else:
        reply = ", ".join(f"Solution {k}: {v} points" for k, v in given_points.items())
    budget = sum(given_points.values())
    assert parse_ballot("cumulative_voting", reply, n, points=budget) == \
        Ballot({k - 1: v for k, v in given_points.items()}, True)
    if budget:
        over = parse_ballot("cumulative_voting", reply, n, points=budget - 1)
        assert over.reason == f"points sum to {budget}, more than the {budget - 1} allowed"


@given(any_protocol, long_digits, st.sampled_from(["{}", "Solution {}", "Solutions 1, {}"]))
def test_an_over_long_number_is_no_solution_number(protocol, digits, template):
    ballot = parse_ballot(protocol, template.format(digits), N_SOLUTIONS)
    check_ballot(ballot, protocol)
    assert not ballot.valid
    if protocol != "cumulative_voting":
        assert ballot.reason.endswith("is not a solution number (more than 18 digits)")


# --- fuzzing: answers and verdicts keep their identity -------------------------------------

signs = st.sampled_from(["", "+", "-"])


@given(signs, st.text(alphabet="0123456789", min_size=1, max_size=5000))
def test_an_integer_of_any_length_is_its_canonical_digits(sign, digits):
    """No float: a 5,000-digit integer keeps every digit (and no int(): no 4,300-digit limit)."""
    canonical = digits.lstrip("0") or "0"
    expected = canonical if canonical == "0" or sign != "-" else "-" + canonical
    assert normalize_answer(sign + digits) == expected
    assert normalize_answer(f"**{sign}{digits}.000**") == expected


@given(st.integers(min_value=0, max_value=10**60))
def test_thousands_separators_do_not_change_a_number(number):
    assert normalize_answer(f"{number:,}") == normalize_answer(str(number)) == str(number)


@given(st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**40), max_value=10**40))
def test_equal_numbers_are_one_answer_and_different_numbers_two(number):
    """Any way Decimal writes a number ("1.50", "1.5E+3", "-0E-7") normalises to the plain,
    exact text of its value: equal values meet, different values never do."""
    with localcontext() as context:
        context.prec = 200
        plain = format(number.normalize(), "f")
    plain = "0" if plain in ("0", "-0") else plain
    assert normalize_answer(str(number)) == plain
    assert normalize_answer(format(number, "f")) == plain
    assert Decimal(plain) == number  # exact: nothing rounded


boxed_contents = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="{}\\$", blacklist_categories=("Cs",)), max_size=20),
    st.sampled_from(["\\frac{1}{2}", "\\text{Paris}", "x^{2}", "{a}{b}", "\\sqrt{\\frac{1}{2}}", "50\\%"]),
)


@given(st.lists(boxed_contents, min_size=1, max_size=5), st.text(alphabet=" .,;\n", max_size=3))
def test_the_last_boxed_answer_wins(contents, separator):
    text = separator.join(f"\\boxed{{{content}}}" for content in contents)
    assert normalize_answer(text) == normalize_answer(contents[-1])


@given(any_text, st.sampled_from(["Confidence: 7/10", "**Confidence:** 3/10", "(confidence level: 9 out of 10)",
                                  "AGREE", "[DISAGREE]", "Yes, I agree.", "I fully agree with the current solution."]))
def test_a_confidence_or_agreement_line_is_never_the_answer(reply, line):
    assert final_answer(reply + "\n" + line) == final_answer(reply)


# keys and values of any printable ASCII, but no "{" that could open a dictionary inside a
# string, its closing quote counted (the reader's one rule for strings: ballots._pair_pattern)
OPENING = re.compile(r"\{(?=\s*+(?:['\"}]|[^\s:,{}\[\]'\"][^:,{}\[\]'\"\n]*+:))")
printable = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40).filter(
    lambda text: OPENING.search(text + "'") is None)


@given(st.dictionaries(printable, printable, max_size=6))
def test_a_python_dict_repr_round_trips_through_the_reader(fields):
    """Python's repr (single quotes, or double where a value holds a ' , and \\' escapes)
    is read back key by key, value by value."""
    text = repr(fields)
    spans = ballots._flat_dict_spans(text)
    assert spans == [(0, len(text))]
    assert ballots._dict_pairs(text, spans[0]) == [(key.strip(), value.strip()) for key, value in fields.items()]
    assert ballots._dict_pairs(json.dumps(fields), (0, len(json.dumps(fields)))) == \
        [(key.strip(), value.strip()) for key, value in fields.items()]


@given(st.sampled_from(["Yes", "No", "yes", "NO"]), st.sampled_from(["Affirmative", "Negative", ""]),
       printable, printable, st.booleans(), st.sampled_from(["", "Here is my verdict:\n", "```python\n"]))
def test_a_mad_verdict_is_read_whatever_its_text(preference, side, reason, answer, as_json, before):
    fields = {"Whether there is a preference": preference, "Supported Side": side, "Reason": reason,
              "debate_answer": answer}
    text = before + (json.dumps(fields) if as_json else repr(fields))
    assert read_judge_verdict(text) == Verdict(preference.lower() == "yes", answer.strip(),
                                               side.lower() or None, reason.strip())


# --- the failures a hostile probe found ----------------------------------------------------------

DEEP_BRACES = "{" * 1000 + "}" * 1000
DEEP_JSON = '{"1": ' + "[" * 1000 + "1" + "]" * 1000 + "}"
DEEP_VERDICT = '{"Whether there is a preference": ' + "[" * 1000 + '"Yes"' + "]" * 1000 + "}"


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("digits", [4300, 4301, 10_000])
def test_numbers_beyond_int_conversion_limit(protocol, digits):
    """int() refuses more than 4,300 digits: that was a ValueError out of parse_ballot."""
    number = "1" * digits
    for reply in (number, "Solution " + number, '{"' + number + '": 5}', "Solution " + number + ": 5"):
        ballot = parse_ballot(protocol, reply, N_SOLUTIONS)
        check_ballot(ballot, protocol)
        assert not ballot.valid
        if protocol != "cumulative_voting" or ":" in reply:  # else: no allocation at all
            assert ballot.reason.endswith("is not a solution number (more than 18 digits)")


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("reply", [DEEP_BRACES, DEEP_JSON, DEEP_VERDICT, "[" * 100_000, "{" * 100_000])
def test_deep_nesting(protocol, reply):
    """json.loads recursed into 1,000 nested arrays: that was a RecursionError."""
    check_ballot(parse_ballot(protocol, reply, N_SOLUTIONS), protocol)
    check_verdict(parse_judge_verdict(reply), reply)
    check_read_verdict(read_judge_verdict(reply), reply)


def test_deep_nesting_reasons():
    assert parse_ballot("simple_voting", DEEP_BRACES, 3).reason == "no solution number found"
    assert parse_ballot("cumulative_voting", DEEP_BRACES, 3).valid is False
    assert parse_ballot("cumulative_voting", DEEP_JSON, 3).valid is False
    assert parse_judge_verdict(DEEP_VERDICT) == (None, "")
    assert read_judge_verdict(DEEP_VERDICT) == Verdict(None, "", None, "")
    nested = '{"1": ' + "[" * 50 + "1" + "]" * 50 + "}"  # deep, but within what json reads
    assert parse_ballot("cumulative_voting", nested, 3).reason == \
        "points for solution 1 must be a whole number, got [[[[[[[...]]]]]]]"


@pytest.mark.parametrize(
    "reply, shown",
    [
        ('{"1": 1e309}', "inf"),
        ('{"1": -1e309}', "-inf"),
        ('{"1": 1e300}', "1e+300"),
        ('{"1": 1000000000000000000}', "1000000000000000000"),
        ('{"1": 1' + "0" * 400 + "}", None),
        ("Solution 1: 1" + "0" * 400, None),
        ('{"1": "1' + "0" * 5000 + '"}', None),
    ],
)
def test_huge_cumulative_points(reply, shown):
    """float() of a 400-digit int overflowed: that was an OverflowError."""
    ballot = parse_ballot("cumulative_voting", reply, 3)
    assert not ballot.valid and ballot.reason.startswith("points for solution 1 are too large (")
    if shown is None:  # the number, cut short
        assert "1000000000" in ballot.reason and "..." in ballot.reason and len(ballot.reason) < 100
    else:
        assert ballot.reason == f"points for solution 1 are too large ({shown})"


def test_points_just_below_the_limit_are_counted():
    assert parse_ballot("cumulative_voting", '{"1": 999999999999999999}', 3, points=10**18) == \
        Ballot({0: 999999999999999999}, True)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_surrogates_and_nul(protocol):
    for reply in ("\ud800", "\x00", "Solution 2\ud800\x00", "\x00Solution\x002\udfff"):
        check_ballot(parse_ballot(protocol, reply, N_SOLUTIONS), protocol)
    if protocol != "cumulative_voting":
        assert parse_ballot(protocol, "Solution 2 \ud800\x00", N_SOLUTIONS).valid


@pytest.mark.parametrize("name", READERS)
def test_readers_on_surrogates_nul_and_huge_text(name):
    reader, check = READERS[name]
    for reply in ("\ud800", "\x00", "Final answer: \ud800\x00\nConfidence: 7/10", "x" * 100_000,
                  "final answer" + " " * 100_000 + "x", "confidence" + " " * 100_000,
                  "decision" + ":" * 100_000, "1" * 100_000, "<think>" * 15_000):
        check(reader(reply), reply)


def test_surrogates_and_nul_keep_their_meaning():
    assert final_answer("Final answer: \ud800\x00") == "\ud800\x00"
    assert parse_confidence("\ud800 Confidence: 7/10 \x00") == 7
    assert parse_agreement("\x00AGREE\ud800") is True


def test_judge_decision_in_other_case_forms():
    """re.I lets "yeſ" (long s) match "yes"; the word's .lower() was then a KeyError."""
    assert parse_judge_verdict("Decision: yeſ\nAnswer: 4") == (True, "4")
    assert parse_judge_verdict("Verdict = FALSE") == (False, "")


# --- the last guard ---------------------------------------------------------------------------


def test_an_unforeseen_error_becomes_an_invalid_ballot(monkeypatch):
    def broken(text, n_solutions, points):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(SimpleVoting, "read_text", lambda self, *args: broken(*args))
    assert parse_ballot("simple_voting", "1", 3) == Ballot(None, False, "unreadable reply (RecursionError)")


def test_an_unforeseen_error_gives_the_readers_nothing_found(monkeypatch):
    class Broken:
        def __getattr__(self, name):
            raise MemoryError

    for name in ("_FINAL", "_CONFIDENCE", "_STANCE_TOKEN", "_BOXED_OPEN"):
        monkeypatch.setattr(answers, name, Broken())
    monkeypatch.setattr(ballots, "_THINK_OPEN", Broken())
    assert final_answer("Final answer: 4") == ""
    assert normalize_answer("\\boxed{4}") == ""
    assert parse_agreement("AGREE") is None
    assert parse_confidence("Confidence: 7/10") is None
    assert strip_final_answer("Final answer: 4") == ""
    assert strip_confidence("Confidence: 7/10") == ""
    assert parse_judge_verdict("Decision: yes") == (None, "")
    assert read_judge_verdict("Decision: yes") == Verdict(None, "", None, "")


def test_never_raises_passes_results_through():
    @never_raises(lambda error: type(error).__name__)
    def reader(text: str) -> str:
        return text.upper() if text else text[1]

    assert reader("ok") == "OK"
    assert reader("") == "IndexError"
    assert reader.__name__ == "reader"


def test_deeply_nested_json_reads_the_same_at_any_stack_depth():
    """JSON nested past 64 levels is no JSON reply, however deep the caller's stack already is
    (Python's parser fails by stack depth: one reply once gave two verdicts)."""
    deep = '{"answer": ' + "[" * 300 + "]" * 300 + "}"

    def nested(depth: int) -> Verdict:
        return read_judge_verdict(deep) if depth == 0 else nested(depth - 1)

    assert answers.json_reply(deep) is None
    assert answers.json_reply('{"answer": ' + "[" * 63 + "]" * 63 + "}") is not None  # 64 levels in all
    readings = {nested(depth) for depth in (0, 200, 600, 900)}
    assert len(readings) == 1, readings  # must not happen: the reading changing with the stack


def test_an_extraction_answered_with_a_json_number_reads_as_that_number():
    from mad_core.answers import extracted_answer
    assert [extracted_answer(t) for t in ('{"answer": 42}', '{"answer": 1.01}', '{"answer": -3}')] == ["42", "1.01", "-3"]
    # must not happen: a boolean or an infinite number taken as a number answer
    assert extracted_answer('{"answer": true}') == "" and extracted_answer('{"answer": 1e400}') == ""
