"""Reading answers per task type (mad_core/tasks/answer_types.py): tricky strings, hostile input."""
from fractions import Fraction

import pytest

from mad_core.tasks.answer_types import Assignment, is_correct, normalize_text, read_answer

FOUR = ["Newton", "Einstein", "Bohr", "Curie"]


def value(kind, text, **kw):
    return read_answer(kind, text, **kw).value


# --- choice -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "B", "(B)", "B)", "b.", "[B]", "Answer: B", "The answer is option B", "**B**", "Option B",
    "Final answer: (B)", "Reasoning first.\nFinal answer: **B**", r"So \boxed{B}.", '{"answer": "B"}',
    "B. Paris", "(B) Paris", "The correct answer is: B", "Reasoning...\nFinal answer: I think it's (B) Paris",
    "Long reasoning here.\nSo the answer is (B).", "The answer is B because it fits.",
    "Final answer: C\nWait, no.\nFinal answer: B",
])
def test_choice_letter_forms(text):
    assert value("choice", text) == "B"


@pytest.mark.parametrize("text", [
    "A farmer has 3 cows.", "The answer is A farmer", "a", "", "No idea.", "answer is a good one",
])
def test_the_article_a_is_no_choice(text):
    if text == "a":  # the letter alone is a choice, in any case
        assert value("choice", text) == "A"
    else:
        assert value("choice", text) is None


def test_choice_with_option_texts():
    assert value("choice", "Einstein", choices=FOUR) == "B"
    assert value("choice", "Final answer: curie", choices=FOUR) == "D"
    assert value("choice", "B. Einstein", choices=FOUR) == "B"
    # "A." before the text of option B is an initial: the text names the option.
    assert value("choice", "A. Einstein", choices=FOUR) == "B"
    # with no option "Einstein", "A. Einstein" keeps the shape of an option label: A.
    assert value("choice", "A. Einstein", choices=["Newton", "Darwin", "Bohr", "Curie"]) == "A"
    assert value("choice", "A. Einstein") == "A"
    # a bracketed or named letter with another option's text contradicts itself
    reading = read_answer("choice", "(A) Einstein", choices=FOUR)
    assert reading.value is None and "option B" in reading.reason
    # letters past the last option
    reading = read_answer("choice", "E", choices=FOUR)
    assert reading.value is None and "past the last option" in reading.reason
    assert value("choice", "E") == "E"
    # an option text that starts with the article
    assert value("choice", "A Tale of Two Cities", choices=["A Tale of Two Cities", "Emma"]) == "A"
    # signed numbers are different options
    degrees = ["0 °F", "32 °F", "-32 °F", "100 °F"]
    assert value("choice", "-32 °F", choices=degrees) == "C"
    assert value("choice", "32 °F", choices=degrees) == "B"


def test_choice_correctness():
    assert is_correct("choice", "The answer is (c).", "C") is True
    assert is_correct("choice", "Bohr", "C", choices=FOUR) is True
    assert is_correct("choice", "(D)", "C") is False
    assert is_correct("choice", "A farmer", "A") is False
    assert is_correct("choice", "B", "not a letter at all") is None


# --- number -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("42", 42), ("1,000", 1000), ("1,000,000.50", Fraction(2000001, 2)), ("$1.20", Fraction(6, 5)),
    ("1.5 m/s", Fraction(3, 2)), ("3/4", Fraction(3, 4)), ("-3", -3), ("−3", -3), ("+7", 7),
    ("50%", Fraction(1, 2)), ("10%", Fraction(1, 10)), ("0.5", Fraction(1, 2)), (".5", Fraction(1, 2)),
    ("1e3", 1000), ("2.5e-1", Fraction(1, 4)), ("1e400", 10 ** 400),
    ("1234567890123456789012345678901234567890", 1234567890123456789012345678901234567890),
    (r"\boxed{\frac{3}{4}}", Fraction(3, 4)), ("Final answer: 10 - 3 = 7", 7),
    ("So in the end she has 121 dollars.", 121), ("Final answer: 12 apples (3 per basket)", 12),
    ("9.8 m/s^2", Fraction(49, 5)), ("The answer is four.", 4), ("1/2.", Fraction(1, 2)), ("5km", 5),
    ("The answer is $-5", -5), ("-0", 0), ("Reasoning 3 + 4.\nFinal answer: **15** km/h", 15),
    ('{"answer": 15}', 15), ("€2,500", 2500),
])
def test_number_values(text, expected):
    assert value("number", text) == expected


@pytest.mark.parametrize("text, reason", [
    ("3/0", "denominator 0"), ("no numbers here", "no number"), ("", "no number"),
    ("1e99999999", "exponent"), ("9" * 5000, "digits"), (None, "no answer"),
])
def test_number_invalid(text, reason):
    reading = read_answer("number", text)
    assert reading.value is None and reason in reading.reason


@pytest.mark.parametrize("text, expected", [
    # an explicit marker wins over the other numbers of the reply
    (r"0.11 or 0.9? \boxed{0.9}", Fraction(9, 10)), ("Compared 0.11 with 0.9.\nFinal answer: 0.9", Fraction(9, 10)),
    ("The answer is 0.9, not 0.11", Fraction(9, 10)),
    ("I compared them and the answer is 0.9 (not 0.11)", Fraction(9, 10)),
    ("0.9 - 0.11 = 0.79", Fraction(79, 100)), ("50%, i.e. 0.5", Fraction(1, 2)), ("12 and 12 again", 12),
])
def test_number_marker_wins(text, expected):
    assert value("number", text) == expected


@pytest.mark.parametrize("text, reason", [
    ("0.11 is the larger of 0.9", "several numbers: 0.11, 0.9"),
    ("The larger is 0.11, not 0.9", "several numbers: 0.11, 0.9"),
    ("0.9 is larger than 0.11", "several numbers: 0.9, 0.11"),
    ("So after 2 years she has 121 dollars.", "several numbers: 2, 121"),
    ("It is three, or maybe four", "several numbers: three, four"),
])
def test_number_several_unmarked_numbers_are_unreadable(text, reason):
    reading = read_answer("number", text)
    assert reading.value is None and reading.reason == reason  # must not: silently the last (or first) one
    assert is_correct("number", text, "0.9") is False and is_correct("number", text, "0.11") is False


def test_number_identity_is_exact():
    assert value("number", "1/2") == value("number", "0.5") == value("number", "50%")
    assert value("number", "-3") != value("number", "3")
    big = "1234567890123456789012345678901234567890"
    assert value("number", big) != value("number", big[:-1] + "1")
    assert isinstance(value("number", "1e400"), Fraction)  # never a float (1e400 would be inf)


def test_number_correctness_and_tolerances():
    assert is_correct("number", "0.5", "1/2") is True
    assert is_correct("number", "50%", "0.5") is True
    assert is_correct("number", "25", "25%") is True   # a percentage truth accepts its bare number
    assert is_correct("number", "0.25", "25%") is True
    assert is_correct("number", "25", "0.25") is False  # ... but a plain truth does not
    assert is_correct("number", "-3", "3") is False
    assert is_correct("number", "0.33", "1/3") is True   # rounded to the places shown
    assert is_correct("number", "0.667", "2/3") is True
    assert is_correct("number", "33.33%", "1/3") is True
    assert is_correct("number", "0.3", "1/3") is False   # fewer than 2 decimal places
    assert is_correct("number", "0.34", "1/3") is False
    assert is_correct("number", "1.5", "1.49") is False  # a terminating truth is exact
    assert is_correct("number", "0.30000000000000004", "0.3") is True  # a printed float
    big = "1234567890123456789012345678901234567890"
    assert is_correct("number", big, big) is True
    assert is_correct("number", big[:-1] + "1", big) is False  # integers: never a tolerance
    assert is_correct("number", "1e400", "1" + "0" * 400) is True
    assert is_correct("number", "1e400", "1e401") is False
    assert is_correct("number", "15", 15) is True
    assert is_correct("number", "1.5", 1.5) is True
    assert is_correct("number", "1.5", Fraction(3, 2)) is True
    assert is_correct("number", "x", "not a number") is None
    assert is_correct("number", "no number", "3") is False
    assert is_correct("number", "7", ["6", "7"]) is True


# --- yes / no --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("Yes.", "yes"), ("no,", "no"), ("YES", "yes"), ("Nope", "no"), ("True", "yes"), ("false.", "no"),
    ("I think not.", "no"), ("Probably not, because ...", "no"), ("I don't think so.", "no"),
    ("Not necessarily.", "no"), ("I think so.", "yes"), ("Definitely!", "yes"),
    ("Final answer: **No**", "no"), ("Answer: yes", "yes"), ("Probably the answer is no", "no"),
    ("Let me think.\nThe answer is yes, since ...", "yes"), ('{"answer": true}', "yes"),
    ("Yes, no doubt about it.", "yes"), (r"\boxed{No}", "no"),
])
def test_yes_no_values(text, expected):
    assert value("yes_no", text) == expected


@pytest.mark.parametrize("text", [
    "yes and no", "Yes or no", "Yes/No", "maybe", "It depends.", "unknown", "", "The sky is blue.", "Both.",
])
def test_yes_no_invalid(text):
    assert value("yes_no", text) is None


def test_yes_no_correctness():
    assert is_correct("yes_no", "No, it cannot.", "no") is True
    assert is_correct("yes_no", "yes", False) is False
    assert is_correct("yes_no", "True", True) is True
    assert is_correct("yes_no", "yes and no", "yes") is False


# --- Knight-Knave-Spy -------------------------------------------------------------------------

NAMES = ["Alice", "Bob", "Carol"]
EXPECTED = {"Alice": "knight", "Bob": "knave", "Carol": "spy"}


@pytest.mark.parametrize("text", [
    "Alice: knight, Bob: knave, Carol: spy",
    "alice: Knight\nbob: KNAVE\ncarol: Spy",
    '{"Alice": "knight", "Bob": "knave", "Carol": "spy"}',
    '{"answer": {"alice": "knight", "bob": "knave", "carol": "spy"}}',
    '{"reasoning": "...", "answer": "Alice: knight, Bob: knave, Carol: spy"}',
    "Suppose Alice is a knave: contradiction.\nFinal answer:\n- Alice is a knight\n- Bob is the knave\n- Carol (spy)",
    "Alice - Knight; Bob = liar; Carol -> spy",
    "Alice is a truth-teller, Bob is a knave and Carol is a spy.",
    "Alice: not a knave. Alice: knight, Bob: knave, Carol: spy",
    "**Alice**: knight, **Bob**: knave, **Carol**: spy",
])
def test_kks_assignments(text):
    assert value("kks", text, names=NAMES) == EXPECTED


def test_kks_missing_name_and_generic_names():
    reading = read_answer("kks", "Alice: knight, Bob: knave", names=NAMES)
    assert reading.value is None and "Carol" in reading.reason
    assert read_answer("kks", "Alice is not a knight.", names=["Alice"]).value is None
    assert value("kks", "Alice: knight\nBob: knave\nCarol: spy") == EXPECTED
    assigned = value("kks", "Alice: knight, Bob: knave, Carol: spy", names=NAMES)
    assert isinstance(assigned, Assignment) and hash(assigned) == hash(Assignment(EXPECTED))
    with pytest.raises(AttributeError):
        assigned.extra = 1


def test_kks_correctness():
    assert is_correct("kks", "Final answer: Alice: knight, Bob: knave, Carol: spy", EXPECTED) is True
    assert is_correct("kks", "Alice: knight, Bob: spy, Carol: knave", EXPECTED) is False
    assert is_correct("kks", "Alice: knight", {"Alice": "wizard"}) is None


# --- text ---------------------------------------------------------------------------------------

def test_text_squad_normalisation():
    assert normalize_text("The Eiffel  Tower!") == "eiffel tower"
    assert value("text", "Final answer: an apple.") == "apple"
    assert value("text", "Answer: The Beatles") == "beatles"
    assert read_answer("text", "...").value is None
    assert is_correct("text", "the eiffel tower", "Eiffel Tower") is True
    assert is_correct("text", "Paris", ["Paris, France", "Paris"]) is True
    assert is_correct("text", "Lyon", "Paris") is False


# --- never raises, linear time ------------------------------------------------------------------

N = 100_000
HOSTILE = [
    "1" * N, "1," * (N // 2), "-" * N, "$" * N, "." * N, "1." * (N // 2), "1/" * (N // 2), "1e" * (N // 2),
    "(A" * (N // 2), "answer is " * (N // 10), "option " * (N // 7), "\\boxed{" * (N // 7), "{" * N,
    "Alice " * (N // 6), "Alice: " * (N // 7), "Final answer:" * (N // 13), "yes " * (N // 4), " " * N + "B",
    "a" * N, '{"answer": "' + "x" * N, "A. " * (N // 3), "%" * N, "=1" * (N // 2), "^1" * (N // 2),
    "is not " * (N // 7), "[(" * (N // 2), "\n" * N, "é" * N,
]


@pytest.mark.parametrize("kind", ["choice", "number", "yes_no", "kks", "text"])
def test_hostile_inputs_never_raise(kind):
    # bench-style timing lives elsewhere; here: a result, of the right type, for each input
    for text in HOSTILE:
        reading = read_answer(kind, text, choices=FOUR if kind == "choice" else None,
                              names=NAMES if kind == "kks" else None)
        assert reading.value is not None or reading.reason
    assert value("number", "1" * N) is None  # more than 4,000 digits
    assert value("choice", " " * N + "B") == "B"


@pytest.mark.parametrize("odd", [None, 42, 1.5, b"bytes", object(), ["B"], {"answer": "B"}])
def test_odd_inputs(odd):
    for kind in ("choice", "number", "yes_no", "kks", "text", "unknown"):
        reading = read_answer(kind, odd)
        assert reading.value is None or reading.reason == ""
        assert is_correct(kind, odd, odd) in (True, False, None)


@pytest.mark.parametrize("text, expected", [
    ("Riley is an altruist, and Daniel is an egoist.", {"Riley": "knight", "Daniel": "knave"}),
    ("Final answer: Riley: hero, Daniel: villain", {"Riley": "knight", "Daniel": "knave"}),
    ("Riley is a sage and Daniel is a fool", {"Riley": "knight", "Daniel": "knave"}),
    ("Riley is a saint, Daniel is a devil", {"Riley": "knight", "Daniel": "knave"}),
    ("Riley - pioneer; Daniel - laggard", {"Riley": "knight", "Daniel": "knave"}),
    ("Riley is an angel, Daniel is not a sinner", None),  # a negation states nothing: no role for Daniel
])
def test_kks_reads_reasoning_gym_island_words(text, expected):
    reading = read_answer("kks", text, names=["Riley", "Daniel"])
    assert (reading.value if reading.valid else None) == expected


def test_a_debates_answer_type_comes_from_its_config_with_the_keywords_its_reader_needs():
    from mad_core.tasks.answer_types import DebateAnswerType

    choice = DebateAnswerType.of({"answer_type": "choice", "answer_options": ["Paris", "Rome"]})
    assert (choice.kind, choice.keywords) == ("choice", {"choices": ["Paris", "Rome"]})
    assert is_correct(choice.kind, "(A) Paris", "A", **choice.keywords)
    kks = DebateAnswerType.of({"answer_type": "kks", "answer_options": ["Ann", "Bob"]})
    assert kks.keywords == {"names": ["Ann", "Bob"]}
    # Must not happen: an unknown type, or options that are not a list, reach a reader.
    assert DebateAnswerType.of({"answer_type": "essay", "answer_options": "A,B"}) == DebateAnswerType("text", None)
    assert DebateAnswerType.of(None).keywords == {}
