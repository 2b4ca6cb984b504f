"""Reading final answers, agreement and confidence from agent text."""
import pytest

from mad_core.answers import (
    final_answer,
    normalize_answer,
    parse_agreement,
    parse_confidence,
    strip_confidence,
    strip_final_answer,
)

REPLY = """DISAGREE. The speeds must be weighted by time.
Total distance 2d, total time d/1 + d/3 = 4d/3.
**Final answer:** 1.5 m/s
Confidence: 8/10"""


# --- final_answer ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        (REPLY, "1.5 m/s"),
        ("Final answer: B", "B"),
        ("final ANSWER: Paris.", "Paris."),
        ("Final answer: 3\nOn reflection...\nFinal answer: 4", "4"),
        ("**Final Answer**: (C)", "(C)"),
        ("Reasoning...\n**Final answer:**\n\n42\n", "42"),
        ("Some reasoning.\nThe answer is 7\n\n", "The answer is 7"),
        ("", ""),
    ],
)
def test_final_answer(text, expected):
    assert final_answer(text) == expected


# --- normalize_answer ------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("(B)", "b"),
        ("B)", "b"),
        ("answer: b", "b"),
        ("B. Paris", "b"),
        ("**B**", "b"),
        ("Option C", "c"),
        ("The answer is: D", "d"),
        ("42.0", "42"),
        ("42", "42"),
        ("42.", "42"),
        ("1,000", "1000"),
        ("0.50", "0.5"),
        ("\\boxed{12}", "12"),
        ("  Paris!  ", "paris"),
        ("New   York City.", "new york city"),
        ("A dog", "a dog"),  # a leading article is not a choice letter
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_normalize_makes_equal_answers_equal():
    assert normalize_answer("(A)") == normalize_answer("A. 1.5 m/s") == normalize_answer("a")
    assert normalize_answer("1.5 m/s") != normalize_answer("2 m/s")


# --- agreement -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("AGREE. The solution is right.", True),
        ("DISAGREE. It misses a step.", False),
        ("[AGREE] The revised solution works.", True),
        ("[DISAGREE] No.", False),
        ("**Agree** - well argued.", True),
        ("disagree: wrong units", False),
        ("I, as a Research Biologist, AGREE with the current solution.", True),
        ("As the economist I DISAGREE with it.", False),
        ("I DO NOT AGREE with this.", False),
        ("I think the solution is fine.", None),
        ("I agree with the current solution in principle.", None),  # prose, not the marker
        ("", None),
        ("x" * 300 + " AGREE", None),  # too far from the start
    ],
)
def test_parse_agreement(text, expected):
    assert parse_agreement(text) is expected


# --- confidence ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        (REPLY, 8),
        ("Confidence: 10/10", 10),
        ("**Confidence:** 3 / 10", 3),
        ("confidence = 7", 7),
        ("Confidence level: 6 out of 10", 6),
        ("Confidence: 0/10", None),
        ("Confidence: 11/10", None),
        ("Confidence: 7.5/10", None),
        ("I am confident.", None),
    ],
)
def test_parse_confidence(text, expected):
    assert parse_confidence(text) == expected


# --- stripping -------------------------------------------------------------------------------

def test_strip_final_answer_keeps_reasoning_only():
    stripped = strip_final_answer(REPLY)
    assert "1.5 m/s" not in stripped
    assert "Final answer" not in stripped
    assert stripped.startswith("DISAGREE. The speeds")
    assert "Confidence: 8/10" in stripped


def test_strip_final_answer_with_answer_on_next_line():
    text = "Step 1.\nStep 2.\n**Final answer:**\n\n42\n"
    assert strip_final_answer(text) == "Step 1.\nStep 2."


def test_strip_final_answer_inline_keeps_text_before_label():
    assert strip_final_answer("So we get it. Final answer: 9") == "So we get it."


def test_strip_confidence():
    stripped = strip_confidence(REPLY)
    assert "Confidence" not in stripped
    assert stripped.endswith("**Final answer:** 1.5 m/s")
    assert strip_confidence("Final answer: B (Confidence: 9/10)") == "Final answer: B"
