"""Reading final answers, agreement and confidence from agent text, and keeping answer identity."""
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
        # with confidence reporting on, the confidence line is never the answer
        ("Some reasoning.\nThe answer is 7\nConfidence: 8/10", "The answer is 7"),
        ("The answer is 7\n**Confidence:** 8/10\n", "The answer is 7"),
        ("42\n(Confidence level: 9 out of 10)", "42"),
        ("42\n- confidence: 9", "42"),
        ("Lyon\nMy confidence is 9/10", "Lyon"),
        ("42\n_Confidence = 7_", "42"),
        ("Confidence: 8/10", ""),
        ("Final answer: B (Confidence: 9/10)", "B"),
        ("Final answer: 42 (my confidence: 8/10)", "42"),
        ("Final answer: 42 - Confidence: 8/10", "42"),
        ("**Final answer:**\nConfidence: 8/10\n42", "42"),
        # nor is a line that only says whether the agent agrees
        ("42\nAGREE", "42"),
        ("Paris\n[DISAGREE]", "Paris"),
        ("Paris\nYes, I agree.", "Paris"),
        ("Paris\nI fully agree with the current solution.", "Paris"),
        ("Paris\nAGREE\nConfidence: 9/10", "Paris"),
        ("AGREE", ""),
        ("No", "No"),  # a yes/no answer is an answer
        ("I agree: 42", "I agree: 42"),  # more than agreement
    ],
)
def test_final_answer(text, expected):
    assert final_answer(text) == expected


def test_final_answer_looks_at_most_100_lines_without_a_label():
    assert final_answer("Paris\n" + "AGREE\n" * 99) == "Paris"
    assert final_answer("Paris\n" + "AGREE\n" * 100) == ""


# --- normalize_answer ------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        # choice letters: the letter alone, bracketed, or followed by . ) :
        ("B", "b"),
        ("b", "b"),
        ("(B)", "b"),
        ("B)", "b"),
        ("B.", "b"),
        ("[B]", "b"),
        ("B:", "b"),
        ("**B**", "b"),
        ("option B", "b"),
        ("Option C", "c"),
        ("Choice (D)", "d"),
        ("Option C: Paris", "c"),
        ("answer: b", "b"),
        ("The answer is: D", "d"),
        ("The correct answer is (C)", "c"),
        ("Final Answer: The answer is **B**", "b"),
        ("(B) Paris", "b"),
        ("B) Paris", "b"),
        ("b) paris", "b"),
        ("B. Paris", "b"),
        ("B: Paris", "b"),
        ("A. 1.5 m/s", "a"),
        ("J. 42", "j"),
        ("C) In an English sentence, enclitics tend to appear next to the main verb.", "c"),
        # ... but not a word that merely starts with a letter
        ("E. coli", "e coli"),  # lower case follows: a species, not option E
        ("J. S. Bach", "j s bach"),  # another initial follows
        ("H. G. Wells", "h g wells"),
        ("A. Einstein", "a"),  # the shape of "B. Paris": read as a choice (see normalize_answer)
        ("B. paris", "b paris"),  # option texts start upper-case
        ("K. Paris", "k paris"),  # K is no choice letter
        ("A dog", "a dog"),  # a leading article is not a choice letter
        ("Optional", "optional"),
        ("B.Paris", "b paris"),
        # numbers: exact, no float
        ("42.0", "42"),
        ("42", "42"),
        ("42.", "42"),
        ("+42", "42"),
        ("007", "7"),
        ("1,000", "1000"),
        ("1,000.50", "1000.5"),
        ("0.50", "0.5"),
        (".5", "0.5"),
        ("-0.5", "-0.5"),
        ("-5", "-5"),
        ("−5", "-5"),  # U+2212 minus
        ("-0", "0"),
        ("-0.0", "0"),
        ("$1.20", "1.2"),
        ("-$1.20", "-1.2"),
        ("€5", "5"),
        ("50%", "50%"),
        ("50.0 %", "50%"),
        ("123456789012345678901234567890", "123456789012345678901234567890"),
        ("123456789012345678901234567890.000", "123456789012345678901234567890"),
        ("9007199254740993", "9007199254740993"),  # 2**53 + 1: float would say ...992
        ("0.1000000000000000055511151231257827", "0.1000000000000000055511151231257827"),
        ("1e3", "1000"),
        ("1.5E-3", "0.0015"),
        ("1e100", "1" + "0" * 100),
        ("1e400", "1e400"),  # never "inf": a large exponent stays scientific
        ("10e399", "1e400"),
        ("-2.50e-400", "-2.5e-400"),
        ("1e" + "9" * 30, "1e" + "9" * 30),
        ("1,00", "1 0"),  # not a thousands group: two numbers, 1 and 00
        # fractions stay fractions, canonical but neither evaluated nor reduced
        ("1/2", "1/2"),
        ("02 / 04", "2/4"),
        ("-1/2", "-1/2"),
        ("2/4", "2/4"),
        # boxed answers (the last one wins) and a little LaTeX
        ("\\boxed{12}", "12"),
        ("First \\boxed{3}, then \\boxed{4}.", "4"),
        ("\\boxed{\\frac{1}{2}}", "1/2"),
        ("\\boxed{\\dfrac{3}{4}} and \\boxed{0.50}", "0.5"),
        ("\\boxed{\\text{Paris}}", "paris"),
        ("\\boxed{50\\%}", "50%"),
        ("\\boxed{1\\,000}", "1000"),
        ("\\boxed{B}", "b"),
        ("\\boxed{7} and \\boxed{8", "7"),  # the last one does not close
        ("\\boxed{\\boxed{5}}", "5"),
        ("$42$", "42"),
        # words
        ("  Paris!  ", "paris"),
        ("New   York City.", "new york city"),
        ("1.5 m/s", "1.5 m s"),
        ("1.50 m/s", "1.5 m s"),
        ("1,000 km", "1000 km"),
        ("Agent 007", "agent 7"),
        ("x -5 y", "x -5 y"),
        ("version 1.2.3", "version 1 2 3"),
        ("H2O", "h2o"),
        ("", ""),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_normalize_makes_equal_answers_equal():
    assert normalize_answer("(A)") == normalize_answer("A. 1.5 m/s") == normalize_answer("a")
    assert normalize_answer("1.5 m/s") != normalize_answer("2 m/s")
    assert normalize_answer("1.5 m/s") != normalize_answer("15 m/s")
    assert normalize_answer("$1.20") == normalize_answer("1.2") == normalize_answer("1.200")
    assert normalize_answer("\\boxed{\\frac{1}{2}}") == normalize_answer("1/2")


def test_normalize_keeps_different_answers_apart():
    assert normalize_answer("E. coli") != normalize_answer("E")
    assert normalize_answer("50%") != normalize_answer("0.5")
    assert normalize_answer("1/2") != normalize_answer("0.5")
    assert normalize_answer("-5") != normalize_answer("5")
    assert normalize_answer("1e400") != normalize_answer("inf")
    assert normalize_answer("9007199254740993") != normalize_answer("9007199254740992")


# --- agreement -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        # agreement
        ("AGREE", True),
        ("AGREE. The solution is right.", True),
        ("[AGREE] The revised solution works.", True),
        ("**Agree** - well argued.", True),
        ("Agree with Agent 2.", True),
        ("Agreed.", True),
        ("Yes, agreed.", True),
        ("I agree", True),
        ("I agree with the current solution.", True),
        ("I fully agree", True),
        ("Yes, I agree", True),
        ("No, I agree with you.", True),
        ("We are in full agreement.", True),
        ("I, as a Research Biologist, AGREE with the current solution.", True),
        ("I, as a biologist, agree.", True),
        ("I don't disagree.", True),
        ("I couldn't agree more!", True),
        ("I would have to agree.", True),
        ("The speeds add up. I agree.", True),  # a later sentence of the opening
        ("AGREE. The solution is right, but could be clearer.", True),  # the "but" is another sentence
        # disagreement
        ("DISAGREE", False),
        ("DISAGREE. It misses a step.", False),
        ("[DISAGREE] No.", False),
        ("disagree: wrong units", False),
        ("I disagree", False),
        ("I do not agree", False),
        ("I don't agree", False),
        ("I don’t agree", False),  # typographic apostrophe
        ("I can't agree", False),
        ("I cannot agree with this.", False),
        ("Not agreed", False),
        ("As the economist I DISAGREE with it.", False),
        ("I DO NOT AGREE with this.", False),
        ("Most scientists agree. I DISAGREE.", False),
        # qualified agreement is not agreement (MALLM counts explicit agreement only)
        ("I partially agree but the units are wrong.", False),
        ("I agree, but the units are wrong.", False),
        ("Agreed, with reservations.", False),
        ("I agree with the current solution in principle.", False),
        ("I agree to some extent.", False),
        ("I mostly agree.", False),
        ("I agree with everything except the units.", False),
        # no stance
        ("I think the solution is fine.", None),
        ("Scientists agree that the earth is round.", None),
        ("I think most experts agree that it is 42.", None),
        ("You asked for AGREE or DISAGREE. The solution is fine.", None),
        ("The agreement between the sources is poor.", None),
        ("", None),
        ("x" * 300 + " AGREE", None),  # too far from the start
        ("The solution adds the speeds. " * 7 + "I agree.", None),  # after the first 200 characters
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


def test_a_decisions_answer_is_the_extracted_one_else_its_final_answer_line_else_its_text():
    from mad_core.answers import decided_answer

    assert decided_answer("I think so.\nFinal answer: 56", {"final_answer": " 56 "}) == "56"
    assert decided_answer("Long reasoning.\nFinal answer: Amazon", {}) == "Amazon"
    assert decided_answer("  Paris  ", None) == "Paris"
    # Must not happen: a crash on a missing answer or on details that are not a mapping.
    assert decided_answer(None, "junk") == "" and decided_answer("", {"final_answer": None}) == ""
