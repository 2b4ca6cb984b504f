"""mad_core.qda.agreement: agreement between coders, checked against published worked examples
(values hard-coded with their source) and against units worked out by hand."""
from __future__ import annotations

import csv
import io
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.inter_rater import cohens_kappa

from mad_core.qda.agreement import (FIGURE_FIELDS, OVERALL, Agreement, agreement_records, agreement_table,
                                    binary_agreement, coding_units, gold_agreement, nominal_agreement)
from mad_core.qda.model import Code, Coding

N = None

# Gwet (2014), Handbook of Inter-Rater Reliability, 4th ed.: 12 units x 4 raters x 5 categories with
# missing ratings (also Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", nominal
# example, alpha = 0.743). Published figures: alpha 0.743 (Krippendorff 2011); Gwet's R package
# irrCAC README (dataset cac.raw4raters, same units; there the lone rating of unit 12 sits with
# rater 3, which no multi-rater coefficient depends on): Fleiss' kappa 0.76117 (0.424, 1),
# Krippendorff's alpha 0.74342 (0.419, 1), AC1 0.77544 (0.461, 1).
GWET = {
    "a": [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    "b": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    "c": [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    "d": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
}

# Fleiss (1971), as on Wikipedia's "Fleiss' kappa" page: 10 subjects, 14 raters, 5 categories,
# each row the number of raters putting the subject in each category; kappa = 0.210.
FLEISS_COUNTS = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                 [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def _rows(columns: dict[str, list]) -> list[tuple]:
    return list(zip(*columns.values()))


def _cohen_units(both_yes: int, a_only: int, b_only: int, both_no: int) -> list[tuple[int, int]]:
    return [(1, 1)] * both_yes + [(1, 0)] * a_only + [(0, 1)] * b_only + [(0, 0)] * both_no


# ----- published worked examples -------------------------------------------------------------------
def test_gwet_krippendorff_example_multi_valued_with_missing_ratings():
    result = nominal_agreement(_rows(GWET))
    assert result.n_coders == 4 and result.n_units == 11  # unit 12 has one rating: unpairable
    assert result.krippendorff_alpha.value == pytest.approx(0.743, abs=5e-4)  # Krippendorff (2011)
    assert result.krippendorff_alpha.value == pytest.approx(0.74342, abs=1e-5)
    assert result.fleiss_kappa.value == pytest.approx(0.76117, abs=1e-5)
    assert result.gwet_ac1.value == pytest.approx(0.77544, abs=1e-5)
    for figure, low in ((result.fleiss_kappa, 0.424), (result.krippendorff_alpha, 0.419), (result.gwet_ac1, 0.461)):
        assert figure.low == pytest.approx(low, abs=5e-4)
        assert figure.high == 1.0  # irrCAC clips at 1
        assert type(figure.value) is float and type(figure.low) is float and type(figure.high) is float
    assert "missing" in result.fleiss_kappa.note  # statsmodels has no estimate with missing ratings
    assert result.cohen_kappa.value is None and "two coders" in result.cohen_kappa.note
    # percent agreement by hand: units 1, 3, 4, 5, 7, 9, 10, 11 unanimous of the 11 pairable
    assert result.percent_agreement.value == pytest.approx(8 / 11)
    assert "one coder only" in result.note


def test_nominal_figures_do_not_depend_on_labels_or_missing_marker():
    labels = {1: "pain", 2: "fear", 3: "joy", 4: "doubt", 5: "anger"}
    relabelled = [tuple(math.nan if v is None else labels[v] for v in row) for row in _rows(GWET)]
    plain, renamed = nominal_agreement(_rows(GWET)), nominal_agreement(relabelled)
    for name in FIGURE_FIELDS:
        assert getattr(renamed, name).value == getattr(plain, name).value
    # a category nobody used changes only AC1's chance agreement (it counts the categories)
    wider = nominal_agreement(_rows(GWET), categories=[1, 2, 3, 4, 5, 6])
    assert wider.krippendorff_alpha.value == pytest.approx(plain.krippendorff_alpha.value)
    assert wider.gwet_ac1.value != pytest.approx(plain.gwet_ac1.value)


def test_cohen_kappa_textbook_two_by_two():
    # Wikipedia "Cohen's kappa", worked example: 50 proposals, both yes 20, both no 15, A yes B no 5,
    # A no B yes 10: p_o = 0.70, p_e = 0.50, kappa = 0.40.
    result = nominal_agreement(_cohen_units(20, 5, 10, 15))
    assert result.percent_agreement.value == pytest.approx(0.70)
    assert result.cohen_kappa.value == pytest.approx(0.4)
    assert result.cohen_kappa.n_units == 50
    reference = cohens_kappa(np.array([[20, 5], [10, 15]]))  # rows coder A (yes, no), columns coder B
    assert reference.kappa == pytest.approx(0.4)
    assert result.cohen_kappa.low == pytest.approx(float(reference.kappa_low))
    assert result.cohen_kappa.high == pytest.approx(float(reference.kappa_upp))
    # another level: the same normal interval with its own quantile
    ninety = nominal_agreement(_cohen_units(20, 5, 10, 15), level=0.90).cohen_kappa
    half = norm.isf(0.05) * float(reference.std_kappa)
    assert (ninety.low, ninety.high) == pytest.approx((0.4 - half, 0.4 + half))


def test_fleiss_1971_example():
    ratings = [[category for category, count in enumerate(row) for _ in range(count)] for row in FLEISS_COUNTS]
    result = nominal_agreement(ratings)
    assert result.n_coders == 14 and result.n_units == 10
    assert result.fleiss_kappa.value == pytest.approx(0.210, abs=5e-4)  # Fleiss (1971); 0.2099
    assert result.fleiss_kappa.low < result.fleiss_kappa.value < result.fleiss_kappa.high
    assert result.fleiss_kappa.note == ""  # statsmodels' value and irrCAC's agree
    assert result.percent_agreement.value == pytest.approx(0.1)  # only subject 1 is unanimous
    assert result.cohen_kappa.value is None


# ----- units from codings --------------------------------------------------------------------------
TURN_LENGTHS = {"t1": 10, "t2": 6, "t3": 4}
TURN_DEBATE = {"t1": "d1", "t2": "d1", "t3": "d2"}
CODES = [Code("c2", "second"), Code("c1", "first"), Code("c3", "unused")]


def _coding(coder: str, code: str, turn: str, start: int, end: int) -> Coding:
    return Coding(f"{coder}-{code}-{turn}-{start}", TURN_DEBATE[turn], turn, start, end, "", code, coder)


def _codings() -> list[Coding]:
    return [
        _coding("A", "c1", "t1", 0, 5), _coding("A", "c1", "t2", 2, 4), _coding("A", "c2", "t1", 8, 10),
        _coding("B", "c1", "t1", 3, 8), _coding("B", "c2", "t2", 0, 6),
        _coding("A", "c1", "t3", 0, 4),  # debate d2: only A coded it, so its turn must not count
        _coding("C", "c1", "t2", 0, 6),  # a coder not compared
    ]


def test_turn_units_by_hand():
    units = coding_units(_codings(), TURN_LENGTHS, TURN_DEBATE, ["A", "B"], "turn", ["c1", "c2", "c3"])
    assert units.unit == "turn" and units.coders == ("A", "B")
    assert units.debates == ("d1",) and units.turns == ("t1", "t2") and units.n_units == 2
    assert "1 debate(s) coded by only some" in units.note
    assert units.matrices["c1"].tolist() == [[1, 1], [1, 0]]
    assert units.matrices["c2"].tolist() == [[1, 0], [0, 1]]
    assert units.matrices["c3"].tolist() == [[0, 0], [0, 0]]


def test_character_units_by_hand():
    units = coding_units(_codings(), TURN_LENGTHS, TURN_DEBATE, ["A", "B"], "character", ["c1", "c2"])
    assert units.n_units == 16 and units.turns == ("t1", "t2")  # t3's 4 characters left out
    c1, c2 = units.matrices["c1"], units.matrices["c2"]
    assert c1.shape == (16, 2) and c1.dtype == np.int8
    #                     t1: 0 1 2 3 4 5 6 7 8 9 | t2: 0 1 2 3 4 5
    assert c1[:, 0].tolist() == [1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0]
    assert c1[:, 1].tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    assert c2[:, 0].tolist() == [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]
    assert c2[:, 1].tolist() == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]


def test_offsets_are_clipped_and_overlaps_merge():
    codings = [_coding("A", "c1", "t1", 4, 99), _coding("A", "c1", "t1", 2, 6), _coding("B", "c1", "t2", -3, 2),
               _coding("B", "c1", "t1", 5, 5)]  # an empty passage covers no character
    c1 = coding_units(codings, TURN_LENGTHS, TURN_DEBATE, ["A", "B"], "character", ["c1"]).matrices["c1"]
    assert c1[:, 0].tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 1, 1] + [0] * 6
    assert c1[:, 1].tolist() == [0] * 10 + [1, 1, 0, 0, 0, 0]


def test_table_by_hand_turns_and_characters():
    turn = agreement_table(_codings(), CODES, ["A", "B"], TURN_LENGTHS, TURN_DEBATE, "turn")
    assert [row.code for row in turn] == ["second", "first", "unused", OVERALL]
    assert [row.code_id for row in turn] == ["c2", "c1", "c3", None]
    assert all(row.unit == "turn" and row.coders == ("A", "B") for row in turn)
    second, first, unused, overall = turn
    assert first.agreement.percent_agreement.value == pytest.approx(0.5)  # t1 both, t2 A only
    assert second.agreement.percent_agreement.value == pytest.approx(0.0)
    assert overall.n_units == 6 and overall.agreement.percent_agreement.value == pytest.approx(3 / 6)
    assert "pooled as one item" in overall.note and "2 turns x 3 codes = 6 items" in overall.note
    assert unused.agreement.cohen_kappa.value is None and "same value (absent)" in unused.agreement.cohen_kappa.note

    chars = agreement_table(_codings(), CODES, ["A", "B"], TURN_LENGTHS, TURN_DEBATE, "character")
    second, first, _, overall = chars
    assert first.n_units == 16 and overall.n_units == 48
    assert first.agreement.percent_agreement.value == pytest.approx(8 / 16)
    assert second.agreement.percent_agreement.value == pytest.approx(8 / 16)
    # c1 over characters: both 2, A only 5, B only 3, neither 6 -> p_o = 8/16, p_e = (7*5 + 9*11)/256,
    # kappa = (128 - 134) / (256 - 134) = -3/61
    assert first.agreement.cohen_kappa.value == pytest.approx(-3 / 61)
    assert "not independent" in first.note


def test_records_are_flat_numbers_for_csv():
    rows = agreement_table(_codings(), CODES, ["A", "B"], TURN_LENGTHS, TURN_DEBATE, "character")
    records = agreement_records(rows)
    assert len(records) == 4 and records[-1]["code"] == OVERALL
    expected = ["code", "code_id", "unit", "coders", "n_coders", "n_units", "percent_agreement"]
    for name in FIGURE_FIELDS[1:]:
        expected += [name, f"{name}_low", f"{name}_high"]
    assert list(records[0]) == expected + ["level", "note"]
    first = records[1]
    assert first["coders"] == "A; B" and first["unit"] == "character" and first["n_units"] == 16
    for key in expected[6:]:
        assert first[key] is None or type(first[key]) is float
    assert type(first["cohen_kappa"]) is float
    assert "same value" in records[2]["note"]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(records[0]))
    writer.writeheader()
    writer.writerows(records)
    assert out.getvalue().count("\n") == 5


def test_gold_and_coder_subsets():
    codings = _codings() + [_coding("G", "c1", "t1", 0, 10), _coding("G", "c1", "t2", 0, 6),
                            _coding("G", "c2", "t2", 0, 6)]
    gold = gold_agreement(codings, CODES, "B", "G", TURN_LENGTHS, TURN_DEBATE, "turn")
    assert gold[0].coders == ("B", "G")
    assert gold[0].agreement.percent_agreement.value == pytest.approx(1.0)  # c2: B and gold both only on t2
    assert gold[1].agreement.percent_agreement.value == pytest.approx(0.5)  # c1: gold also has t2, B does not
    three = agreement_table(codings, CODES, ["A", "B", "G"], TURN_LENGTHS, TURN_DEBATE, "turn")
    assert three[-1].agreement.n_coders == 3 and three[-1].agreement.cohen_kappa.value is None
    assert three[-1].agreement.fleiss_kappa.value is not None
    with pytest.raises(ValueError, match="gold_id"):
        gold_agreement(codings, CODES, "G", "G", TURN_LENGTHS, TURN_DEBATE)


# ----- odd input -----------------------------------------------------------------------------------
def _assert_undefined(agreement: Agreement, words: str) -> None:
    for figure in agreement.figures()[1:]:
        assert figure.value is None and figure.low is None and figure.high is None
        assert words in figure.note


def test_odd_input_never_raises():
    empty = agreement_table([], CODES, ["A", "B"], TURN_LENGTHS, TURN_DEBATE, "character")
    assert [row.n_units for row in empty] == [0, 0, 0, 0]
    for row in empty:
        _assert_undefined(row.agreement, "no unit")
        assert row.agreement.percent_agreement.value is None
    assert "has coded no debate" in empty[0].note

    lone = agreement_table(_codings(), CODES, ["A"], TURN_LENGTHS, TURN_DEBATE, "turn")
    for row in lone:
        _assert_undefined(row.agreement, "fewer than two coders")
        assert row.agreement.percent_agreement.value is None

    same = nominal_agreement([("x", "x"), ("x", "x"), ("x", "x")])
    assert same.percent_agreement.value == 1.0
    _assert_undefined(same, "every unit has the same value (x)")
    assert "percent agreement is 1.00" in same.cohen_kappa.note

    no_codes = agreement_table(_codings(), [], ["A", "B"], TURN_LENGTHS, TURN_DEBATE, "turn")
    assert len(no_codes) == 1 and no_codes[0].n_units == 0

    assert nominal_agreement([]).n_units == 0
    assert binary_agreement(np.zeros((0, 2))).n_units == 0
    assert agreement_records([]) == []


def test_degenerate_intervals_are_left_out():
    perfect = binary_agreement(np.array([[1, 1], [0, 0], [1, 1], [0, 0]]))
    for figure in perfect.figures()[1:]:
        assert figure.value == pytest.approx(1.0)
        assert figure.low is None and "no spread" in figure.note
    single = nominal_agreement([(1, 2)], categories=[1, 2])
    assert single.cohen_kappa.low is None and "one unit" in single.cohen_kappa.note


def test_programming_errors_raise_value_error_naming_the_argument():
    with pytest.raises(ValueError, match="unit"):
        coding_units([], TURN_LENGTHS, TURN_DEBATE, ["A", "B"], "sentence")
    with pytest.raises(ValueError, match="unit"):
        agreement_table([], CODES, ["A", "B"], TURN_LENGTHS, TURN_DEBATE, "paragraph")
    with pytest.raises(ValueError, match="coder_ids"):
        coding_units([], TURN_LENGTHS, TURN_DEBATE, ["A", "A"])
    with pytest.raises(ValueError, match="coder_ids"):
        coding_units([], TURN_LENGTHS, TURN_DEBATE, "AB")
    with pytest.raises(ValueError, match="level"):
        nominal_agreement([(1, 1)], level=0.5)
    with pytest.raises(ValueError, match="categories"):
        nominal_agreement([(1, 2)], categories=[1])
    with pytest.raises(ValueError, match="ratings"):
        nominal_agreement([(1, 2), (1,)])


def test_import_is_cheap():
    code = ("import sys, mad_core.qda.agreement; "
            "print([m for m in ('sklearn', 'statsmodels', 'irrCAC', 'krippendorff') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
