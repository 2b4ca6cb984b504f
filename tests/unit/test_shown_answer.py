"""Answers a class can read (issue 18): one reading for every display (`answer_types.shown_answer`),
numbers written as a person writes them, and the form's hint that a reference reads as a number."""
from __future__ import annotations

from fractions import Fraction

import pytest

from mad_core.metrics.report import AnswerReader
from mad_core.tasks.answer_types import NO_READABLE, number_text, reads_as_number, shown_answer

NUMBER = {"answer_type": "number"}
FLOAT_NOISE = ("4.0000000000000001", "40000000000000001/10000000000000000", "0.30000000000000004")


@pytest.mark.parametrize("reply,shown", [
    ("Final answer: 4.0000000000000001", "4"),  # a decided number was shown like this
    (f"Final answer: {0.1 + 0.2}", "0.3"),  # 0.30000000000000004, a float printed in full
    ("Final answer: $0.05", "0.05"),
    ("The ball costs 5 cents.\nFinal answer: 5 cents", "5"),  # the number read, as written: no unit conversion
    ("Final answer: 1/3", "1/3"),  # a fraction only where no decimal writes the value exactly
    ("Final answer: 0.333", "0.333"),
    ("Final answer: 1.50", "1.5"),
    ("Final answer: -2", "-2"),
    ('{"answer": "42"}', "42"),
    ("I am not sure.", NO_READABLE),
    ("", NO_READABLE),
])
def test_a_number_is_shown_as_a_person_writes_it(reply, shown):
    assert shown_answer(reply, NUMBER) == shown
    # must not happen: a float's noise or an unreduced fraction on a screen
    assert not any(noise in shown_answer(reply, NUMBER) for noise in FLOAT_NOISE)


def test_number_text_keeps_integers_and_writes_huge_or_tiny_values_short():
    assert number_text(Fraction(12345678901234567890)) == "12345678901234567890"  # an integer keeps its digits
    assert number_text(Fraction(10) ** 45) == "1e+45"
    assert number_text(Fraction(1, 10 ** 50)) == "1e-50"
    assert number_text(Fraction(3, 2)) == "1.5" and number_text(Fraction(-1, 3)) == "-1/3"
    assert number_text(Fraction(123456789, 1000)) == "123456.789"  # 9 digits: exact, no rounding


def test_every_answer_type_is_shown_by_its_reading_and_unreadable_says_so():
    assert shown_answer("Final answer: (B) Paris", {"answer_type": "choice"}) == "B"
    capitals = {"answer_type": "choice", "answer_options": ["Nice", "Paris"]}
    assert shown_answer("The answer is Paris.", capitals) == "B"  # the option's text read as its letter
    assert shown_answer("Probably not.", {"answer_type": "yes_no"}) == "no"
    assert shown_answer("Final answer: Ann: knight, Bo: knave",
                        {"answer_type": "kks", "answer_options": ["Ann", "Bo"]}) == "Ann: knight, Bo: knave"
    assert shown_answer("Some thoughts.\nFinal answer:   The   Eiffel tower", None) == "The Eiffel tower"
    assert shown_answer("Final answer: maybe", {"answer_type": "yes_no"}) == NO_READABLE
    assert shown_answer(None, NUMBER) == NO_READABLE and shown_answer(12, NUMBER) == "12"


def test_the_metrics_display_is_the_same_reading():
    # The handout's answer lines, the poll's options and the timeline read through AnswerReader: one formatting.
    reader = AnswerReader("number", None, None)
    for reply in ("Final answer: 4.0000000000000001", "Final answer: $0.05", "Final answer: 1/3"):
        assert reader.read(reply)[1] == shown_answer(reply, NUMBER)


@pytest.mark.parametrize("reference", ["0.05", "$0.05", "5 cents", "1/3", "  42 ", "-3.5", "1,000"])
def test_a_numeric_reference_reads_as_a_number(reference):
    assert reads_as_number(reference)


@pytest.mark.parametrize("reference", ["Paris", "", None, "It was built in 1889 by Gustave Eiffel", "B",
                                       "yes", "0.05 or 0.10"])
def test_a_text_reference_does_not_read_as_a_number(reference):
    assert not reads_as_number(reference)


def test_a_per_player_kks_reply_shows_the_one_role_its_paradigm_read():
    kks = {"answer_type": "kks", "answer_options": ["Liam", "Yara", "Hank"]}
    debate_reply = '{"role": "knight", "reasoning": "his statement holds"}'  # names nobody: not a whole assignment
    assert shown_answer(debate_reply, kks) == NO_READABLE
    assert shown_answer(debate_reply, kks, stated="Liam: knight") == "Liam: knight"
    whole = "Final answer: Liam: knight, Yara: knave, Hank: spy"
    assert shown_answer(whole, kks, stated="Liam: knave") == "Liam: knight, Yara: knave, Hank: spy"  # the reply wins
    # must not happen: another type shows the paradigm's raw line instead of its own reading
    assert shown_answer("I am not sure.", NUMBER, stated="I am not sure.") == NO_READABLE
