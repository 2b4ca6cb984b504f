"""Parsing real-looking voting replies into ballots, including the ones that must fail."""
import pytest

from mad_core.protocols.ballots import Ballot, Verdict, parse_ballot, parse_judge_verdict, read_judge_verdict


def valid(value):
    return Ballot(value=value, valid=True, reason=None)


# --- simple voting (and judge) ---------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("I vote for Solution 2.", 1),
        ("2", 1),
        ("**2**", 1),
        ("**Solution 3**", 2),
        ("My vote: 1", 0),
        ("<think>Solution 1 or 3? 3 looks right.</think>Solution 3", 2),
        ("Solution 2, because it adds 3.5 and 4.5 correctly.", 1),
    ],
)
def test_simple_vote(text, expected):
    assert parse_ballot("simple_voting", text, 3) == valid(expected)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("I like Solution 1 and Solution 3", "ambiguous vote: the reply names several solutions (1, 3)"),
        ("1 or 2", "ambiguous vote: the reply names several solutions (1, 2)"),
        ("None of them is right.", "no solution number found"),
        ("", "no solution number found"),
        ("I vote for Solution 5", "solution 5 does not exist (there are 3)"),
        ("0", "solution 0 does not exist (there are 3)"),
    ],
)
def test_simple_vote_invalid(text, reason):
    assert parse_ballot("simple_voting", text, 3) == Ballot(value=None, valid=False, reason=reason)


def test_simple_vote_repeating_the_same_solution_is_not_ambiguous():
    assert parse_ballot("simple_voting", "Solution 2. Yes, Solution 2.", 3) == valid(1)


def test_judge_ballot_reads_like_a_simple_vote():
    assert parse_ballot("judge", "The best is Solution 1.", 2) == valid(0)
    assert parse_ballot("judge", "Solution 1 or 2", 2).valid is False


# --- approval voting -------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("Solutions 1, 3", [0, 2]),
        ("1, 3", [0, 2]),
        ("I approve Solutions 1 and 3.", [0, 2]),
        ("2, 2, 1", [1, 0]),
        ("Solution 3", [2]),
    ],
)
def test_approval_vote(text, expected):
    assert parse_ballot("approval_voting", text, 3) == valid(expected)


def test_approval_vote_invalid():
    assert parse_ballot("approval_voting", "1, 4", 3).reason == "solution 4 does not exist (there are 3)"
    assert parse_ballot("approval_voting", "none", 3).reason == "no solution number found"


# --- ranked voting ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("1 > 3 > 2", [0, 2, 1]),
        ("3 1 2", [2, 0, 1]),
        ("Solution 3 > Solution 1 > Solution 2", [2, 0, 1]),
        ("1. Solution 2\n2. Solution 3\n3. Solution 1", [1, 2, 0]),
        ("2 1", [1, 0]),  # partial ranking: tally gives the rest 0 points
    ],
)
def test_ranked_vote(text, expected):
    assert parse_ballot("ranked_voting", text, 3) == valid(expected)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("1 > 1 > 2", "solution 1 is ranked more than once"),
        ("3 1 3 2", "solution 3 is ranked more than once"),
        ("2 4 1", "solution 4 does not exist (there are 3)"),
        ("I cannot rank these.", "no ranking found"),
    ],
)
def test_ranked_vote_invalid(text, reason):
    assert parse_ballot("ranked_voting", text, 3) == Ballot(value=None, valid=False, reason=reason)


# --- cumulative voting -----------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"1": 6, "2": 4}', {0: 6, 1: 4}),
        ('Here is my allocation:\n```json\n{"1": 6, "3": 4}\n```\nThe first is best.', {0: 6, 2: 4}),
        ("Solution 1: 5 points, Solution 2: 5 points", {0: 5, 1: 5}),
        ("{1: 7, 2: 3}", {0: 7, 1: 3}),
        ('{"Solution 2": 10}', {1: 10}),
        ('{"1": 2, "2": 3}', {0: 2, 1: 3}),  # fewer than 10: allowed ("up to")
        ('{"1": 4.0, "2": "6"}', {0: 4, 1: 6}),
    ],
)
def test_cumulative_vote(text, expected):
    assert parse_ballot("cumulative_voting", text, 3) == valid(expected)


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"1": 10, "2": 4}', "points sum to 14, more than the 10 allowed"),
        ('{"1": -2, "2": 12}', "solution 1 is given negative points (-2)"),
        ("Solution 1: 5, Solution 1: 5", "solution 1 is given points more than once"),
        ('{"1": 2.5, "2": 7.5}', "points for solution 1 must be a whole number, got 2.5"),
        ('{"4": 10}', "solution 4 does not exist (there are 3)"),
        ('{"best": 10}', "'best' is not a solution number"),
        ("I give most points to the first one.", "no points allocation found"),
    ],
)
def test_cumulative_vote_invalid(text, reason):
    assert parse_ballot("cumulative_voting", text, 3) == Ballot(value=None, valid=False, reason=reason)


def test_cumulative_budget_is_configurable():
    assert parse_ballot("cumulative_voting", '{"1": 20, "2": 5}', 2, points=25) == valid({0: 20, 1: 5})
    assert parse_ballot("cumulative_voting", '{"1": 20, "2": 5}', 2).valid is False


def test_unknown_protocol_is_an_invalid_ballot_naming_the_valid_ones():
    ballot = parse_ballot("majority_consensus", "1", 3)
    assert ballot.valid is False and ballot.value is None
    assert ballot.reason.startswith("no ballot format for protocol 'majority_consensus'; valid names:")
    for name in ("simple_voting", "approval_voting", "ranked_voting", "cumulative_voting", "judge"):
        assert name in ballot.reason


# --- discriminative judge (seed 002) --------------------------------------------------------

# Verdicts as MAD's released code receives them: Python's single-quoted dict repr.
MAD_YES = ("{'Whether there is a preference': 'Yes', 'Supported Side': 'Negative', "
           "'Reason': 'the negative side's answer uses the total time', 'debate_answer': '1.5 m/s'}")
MAD_NO = ("{'Whether there is a preference': 'No', 'Supported Side': '', 'Reason': 'Both sides have "
          "presented valid arguments.', 'Correct Translation': ''}")


VERDICTS = [
    (MAD_YES, Verdict(True, "1.5 m/s", "negative", "the negative side's answer uses the total time")),
    (MAD_NO, Verdict(False, "", None, "Both sides have presented valid arguments.")),
    ("{'Whether there is a preference': 'Yes', 'Supported Side': 'Affirmative', 'Reason': 'It adds up.', "
     "'debate_answer': '42'}", Verdict(True, "42", "affirmative", "It adds up.")),
    # JSON, in a code fence
    ('```json\n{"Whether there is a preference": "Yes", "Supported Side": "Negative", '
     '"Reason": "total distance over total time", "debate_answer": "1.5"}\n```',
     Verdict(True, "1.5", "negative", "total distance over total time")),
    ('{"Whether there is a preference": "No", "debate_answer": ""}', Verdict(False, "", None, "")),
    # MAD's extractive mode: a reason and an answer, no decision
    ('{"Reason": "the negative side\'s translation is more accurate as \'拉\' can mean \'to persuade\'", '
     '"Correct Translation": "He wanted to persuade them."}',
     Verdict(None, "He wanted to persuade them.", None,
             "the negative side's translation is more accurate as '拉' can mean 'to persuade'")),
    # escaped quotes, mixed quotes, LaTeX kept
    ("{'Reason': 'He said \\'no\\'', 'debate_answer': '\\\\frac{1}{2}'}",
     Verdict(None, "\\frac{1}{2}", None, "He said 'no'")),
    ("{'Reason': \"it's \\\"close\\\"\", 'debate_answer': \"O'Neil\"}",
     Verdict(None, "O'Neil", None, 'it\'s "close"')),
    ('{"Whether there is a preference": "Yes", "debate_answer": "\\\\neq 0, line\\nTwo \\u00e9"}',
     Verdict(True, "\\neq 0, line\nTwo é", None, "")),
    # bare words and JSON literals
    ("{Decision: yes, answer: 42}", Verdict(True, "42", None, "")),
    ('{"decision": true, "answer": 42}', Verdict(True, "42", None, "")),
    ("{'Whether there is a preference': True, 'debate_answer': None}", Verdict(True, "None", None, "")),
    # sides
    ("{'Whether there is a preference': 'Yes', 'Supported Side': 'the negative side', 'debate_answer': '3'}",
     Verdict(True, "3", "negative", "")),
    ("{'Whether there is a preference': 'No', 'Supported Side': 'Affirmative or Negative'}",
     Verdict(False, "", None, "")),
    ("{'preference': 'yes', 'supported_side': 'AFFIRMATIVE', 'debate_answer': 'x'}",
     Verdict(True, "x", "affirmative", "")),
    # the format repeated first, then the verdict: the last dictionary with a decision wins
    ('Format: {"Whether there is a preference": "Yes or No", "Supported Side": "Affirmative or Negative"}\n'
     "Verdict: {'Whether there is a preference': 'Yes', 'Supported Side': 'Negative', 'debate_answer': '3'}",
     Verdict(True, "3", "negative", "")),
    ("{'Whether there is a preference': 'No'} then {'Whether there is a preference': 'Yes', 'debate_answer': '2'}",
     Verdict(True, "2", None, "")),
    ("<think>{'Whether there is a preference': 'Yes'}</think>{'Whether there is a preference': 'No'}",
     Verdict(False, "", None, "")),
    ("{'a': 'b'} {'Whether there is a preference': 'Yes', 'debate_answer': 'x, y'} {'c': 'd'}",
     Verdict(True, "x, y", None, "")),
    # labelled lines
    ("Decision: YES\nSupported side: Negative\nReason: total time\nAnswer: 1.5 m/s",
     Verdict(True, "1.5 m/s", "negative", "total time")),
    ("Decision: YES\nAnswer: 1.5 m/s", Verdict(True, "1.5 m/s", None, "")),
    ("**Decision:** no\nThe debate should continue.", Verdict(False, "", None, "")),
    ("Verdict: yes. Final answer: eliminate an enemy division",
     Verdict(True, "eliminate an enemy division", None, "")),
    ("Whether there is a preference: Yes\nSupported Side: Affirmative\ndebate_answer: 4",
     Verdict(True, "4", "affirmative", "")),
    ("Decision:\nYES\nAnswer: 7", Verdict(True, "7", None, "")),
    ("Yes. The negative side is correct.\nAnswer: 1.5", Verdict(True, "1.5", None, "")),
    # a dictionary that lacks a field lets labelled lines give it
    ("{'Whether there is a preference': 'Yes', 'Supported Side': 'Negative'}\nAnswer: 9",
     Verdict(True, "9", "negative", "")),
    # no verdict
    ("The debaters still disagree about the units.", Verdict(None, "", None, "")),
    ("The inside: negative pressure.", Verdict(None, "", None, "")),
    ("", Verdict(None, "", None, "")),
]


@pytest.mark.parametrize("text, expected", VERDICTS)
def test_read_judge_verdict(text, expected):
    assert read_judge_verdict(text) == expected


@pytest.mark.parametrize("text, expected", VERDICTS)
def test_parse_judge_verdict_is_decision_and_answer(text, expected):
    """The engine's older view: `verdict, answer = parse_judge_verdict(text)`."""
    assert parse_judge_verdict(text) == (expected.decision, expected.answer)


def test_verdict_dictionaries_are_never_evaluated():
    """A dictionary is read as text: no eval, no literal_eval; code is just a value."""
    text = "{'Whether there is a preference': 'Yes', 'debate_answer': __import__('os').getcwd()}"
    assert read_judge_verdict(text).decision is True  # not a dictionary: read from the labelled line
    assert read_judge_verdict("{'debate_answer': '__import__(\"os\")'}").answer == '__import__("os")'
