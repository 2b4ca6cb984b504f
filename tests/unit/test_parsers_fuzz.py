"""Parsers never raise: every reader of model text, fed any string, returns a result.

Fuzzes `parse_ballot` (every protocol), `parse_judge_verdict` and the readers of
mad_core/answers.py with arbitrary text (lone surrogates and NUL included), with text built
from the words the parsers look for, and with hostile shapes (numbers of thousands of
digits, JSON nested thousands deep, points beyond 1e308, long repetitions); then pins the
failures a hostile probe found. Speed is checked by bench/parsers.py, not here.

Examples per property: the "madlab" hypothesis profile of tests/conftest.py (1,000).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mad_core import answers
from mad_core.answers import (
    final_answer,
    never_raises,
    normalize_answer,
    parse_agreement,
    parse_confidence,
    strip_confidence,
    strip_final_answer,
)
from mad_core.protocols import ballots
from mad_core.protocols.ballots import Ballot, parse_ballot, parse_judge_verdict
from mad_core.protocols.counting import CUMULATIVE_POINTS, tally

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
    "$", "%", "1,000", "42.0", "points",
]
word_text = st.lists(st.one_of(st.sampled_from(WORDS), any_text.filter(bool)), max_size=40).map("".join)

long_digits = st.integers(19, 6000).map(lambda n: "1" * n)
deep = st.integers(1, 3000)
UNITS = ["1:1,", "{", "[", "Solution 1 ", "Solution ", " ", "1", "1.", "<think>", "final answer",
         "confidence", ":", "decision:", "answer-", '{"}', "\\boxed{", "**", "\ud800", "\x00", "1, "]
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


READERS: dict[str, tuple[Callable[[str], Any], Callable[[Any, str], None]]] = {
    "parse_judge_verdict": (parse_judge_verdict, check_verdict),
    "final_answer": (final_answer, check_final_answer),
    "normalize_answer": (normalize_answer, check_normalized),
    "parse_agreement": (parse_agreement, check_agreement),
    "parse_confidence": (parse_confidence, check_confidence),
    "strip_final_answer": (strip_final_answer, check_stripped),
    "strip_confidence": (strip_confidence, check_stripped),
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


def test_deep_nesting_reasons():
    assert parse_ballot("simple_voting", DEEP_BRACES, 3).reason == "no solution number found"
    assert parse_ballot("cumulative_voting", DEEP_BRACES, 3).valid is False
    assert parse_ballot("cumulative_voting", DEEP_JSON, 3).valid is False
    assert parse_judge_verdict(DEEP_VERDICT) == (None, "")
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

    monkeypatch.setitem(ballots._PARSERS, "simple_voting", broken)
    assert parse_ballot("simple_voting", "1", 3) == Ballot(None, False, "unreadable reply (RecursionError)")


def test_an_unforeseen_error_gives_the_readers_nothing_found(monkeypatch):
    class Broken:
        def __getattr__(self, name):
            raise MemoryError

    for name in ("_FINAL", "_CONFIDENCE", "_OPENING", "_BOXED"):
        monkeypatch.setattr(answers, name, Broken())
    monkeypatch.setattr(ballots, "_THINK_OPEN", Broken())
    assert final_answer("Final answer: 4") == ""
    assert normalize_answer("\\boxed{4}") == ""
    assert parse_agreement("AGREE") is None
    assert parse_confidence("Confidence: 7/10") is None
    assert strip_final_answer("Final answer: 4") == ""
    assert strip_confidence("Confidence: 7/10") == ""
    assert parse_judge_verdict("Decision: yes") == (None, "")


def test_never_raises_passes_results_through():
    @never_raises(lambda error: type(error).__name__)
    def reader(text: str) -> str:
        return text.upper() if text else text[1]

    assert reader("ok") == "OK"
    assert reader("") == "IndexError"
    assert reader.__name__ == "reader"
