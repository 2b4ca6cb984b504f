"""mad_core.experiments.stats: the published figures of a sweep, checked against worked examples and
the closed forms / reference tests of the literature (computed here, independently of the module)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, norm

from mad_core.experiments.stats import (DEFAULT_N_BOOT, Changes, Comparison, Interval, accuracy_interval,
                                        compare_all, comparison_pairs, discussion_changes, holm, item_of,
                                        paired_comparison)

FAST = 400  # bootstrap size where exactness is not the point


def _single_runs(correct: int, n: int) -> dict[str, list[int]]:
    """n items of one run each, the first `correct` of them right."""
    return {f"q{i}": [1 if i < correct else 0] for i in range(n)}


def _wilson_closed_form(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    z = norm.ppf(1 - (1 - level) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def _paired_table(both_right: int, a_only: int, b_only: int, both_wrong: int) -> tuple[dict, dict]:
    """Two configurations over one-run items whose 2×2 table is the one given."""
    a, b = {}, {}
    cells = [(1, 1)] * both_right + [(1, 0)] * a_only + [(0, 1)] * b_only + [(0, 0)] * both_wrong
    for i, (x, y) in enumerate(cells):
        a[(f"q{i}", 0)], b[(f"q{i}", 0)] = x, y
    return a, b


# ----- accuracy: Wilson ----------------------------------------------------------------------------
def test_wilson_for_81_of_263_is_the_closed_form_and_newcombes_figures():
    interval = accuracy_interval(_single_runs(81, 263))
    low, high = _wilson_closed_form(81, 263)
    assert interval.method == "wilson" and interval.n_items == interval.n_runs == 263
    assert interval.estimate == pytest.approx(81 / 263, abs=1e-12)
    assert interval.low == pytest.approx(low, abs=1e-9) and interval.high == pytest.approx(high, abs=1e-9)
    # Newcombe (1998), Table I, method 3 (score interval): 0.2553 to 0.3662
    assert (round(interval.low, 4), round(interval.high, 4)) == (0.2553, 0.3662)
    assert interval.text() == "0.31 [0.26, 0.37]"


@pytest.mark.parametrize("k,n,expected", [(15, 148, (0.0624, 0.1605)), (0, 20, (0.0, 0.1611)),
                                          (1, 29, (0.0061, 0.1718)), (29, 29, (0.8830, 1.0))])
def test_wilson_textbook_cases(k, n, expected):
    """Newcombe (1998) Table I, score method, including the boundary cases 0/n and n/n."""
    interval = accuracy_interval(_single_runs(k, n))
    assert (round(interval.low, 4), round(interval.high, 4)) == pytest.approx(expected, abs=1e-9)
    assert interval.low == pytest.approx(_wilson_closed_form(k, n)[0], abs=1e-9)


def test_wilson_at_another_level_is_the_closed_form_at_that_level():
    interval = accuracy_interval(_single_runs(81, 263), level=0.90)
    assert (interval.low, interval.high) == pytest.approx(_wilson_closed_form(81, 263, 0.90), abs=1e-9)
    assert interval.level == 0.90


# ----- accuracy: cluster bootstrap -----------------------------------------------------------------
def _clustered(n_items: int = 30, runs: int = 5) -> dict[str, list[int]]:
    """Every run of an item agrees (the item is easy or hard): half the items right."""
    return {f"q{i}": [int(i % 2 == 0)] * runs for i in range(n_items)}


def _independent(n_items: int = 30, runs: int = 5, p: float = 0.6, seed: int = 7) -> dict[str, list[int]]:
    rng = np.random.default_rng(seed)
    return {f"q{i}": [int(x) for x in rng.random(runs) < p] for i in range(n_items)}


def _flattened(outcomes: dict[str, list[int]]) -> dict[tuple, list[int]]:
    return {(item, j): [value] for item, values in outcomes.items() for j, value in enumerate(values)}


def test_the_cluster_bootstrap_is_reproducible_and_contains_the_estimate():
    outcomes = _independent()
    first, again = accuracy_interval(outcomes, seed=3), accuracy_interval(outcomes, seed=3)
    assert first == again and first.method == "cluster bootstrap"
    assert (first.n_items, first.n_runs) == (30, 150)
    assert first.estimate == pytest.approx(sum(map(sum, outcomes.values())) / 150)
    assert first.low < first.estimate < first.high
    assert accuracy_interval(outcomes, seed=4) != first  # the seed is what fixes it


def test_the_cluster_bootstrap_is_wider_than_wilson_when_items_are_clustered():
    outcomes = _clustered()
    clustered = accuracy_interval(outcomes, n_boot=1000)
    naive = accuracy_interval(_flattened(outcomes))  # the 150 runs taken as independent: Wilson
    assert naive.method == "wilson" and clustered.estimate == naive.estimate == 0.5
    # 30 independent pieces of evidence, not 150: about √5 wider
    assert clustered.high - clustered.low > 1.6 * (naive.high - naive.low)


def test_the_cluster_bootstrap_is_close_to_wilson_when_runs_are_independent():
    outcomes = _independent(n_items=40)
    clustered = accuracy_interval(outcomes, n_boot=1000)
    naive = accuracy_interval(_flattened(outcomes))
    ratio = (clustered.high - clustered.low) / (naive.high - naive.low)
    assert 0.75 < ratio < 1.25


def test_one_repeated_item_gives_the_estimate_without_an_interval():
    interval = accuracy_interval({"q0": [1, 0, 1, 1]})
    assert interval.estimate == 0.75 and interval.low is None and interval.high is None
    assert interval.n_items == 1 and interval.n_runs == 4 and "no interval" in interval.text()


def test_accuracy_of_empty_or_unjudged_input_never_raises():
    for outcomes in ({}, {"q0": []}, {"q0": [None, None]}):
        interval = accuracy_interval(outcomes)
        assert interval.estimate is None and interval.low is None and interval.n_runs == 0
        assert interval.text().startswith("n/a")


def test_none_values_are_skipped_and_other_values_refused():
    mixed = accuracy_interval({"a": [1, None], "b": [0], "c": [True], "d": [float("nan")]})
    assert (mixed.estimate, mixed.n_items, mixed.n_runs, mixed.method) == (2 / 3, 3, 3, "wilson")
    with pytest.raises(ValueError):
        accuracy_interval({"a": [2]})
    with pytest.raises(ValueError):
        accuracy_interval({"a": ["1"]})
    with pytest.raises(ValueError):
        accuracy_interval({"a": [1]}, level=1.5)


# ----- paired comparison ---------------------------------------------------------------------------
def test_exact_mcnemar_on_b10_c3_is_the_two_sided_binomial_test():
    a, b = _paired_table(both_right=20, a_only=10, b_only=3, both_wrong=7)
    result = paired_comparison(a, b, n_boot=FAST)
    expected = binomtest(3, 13, 0.5).pvalue
    assert expected == pytest.approx(2 * (sum(math.comb(13, k) for k in range(4)) / 2 ** 13), abs=1e-12)
    assert result.p_mcnemar == pytest.approx(expected, abs=1e-12)
    assert (result.a_right_b_wrong, result.a_wrong_b_right, result.both_right, result.both_wrong) == (10, 3, 20, 7)
    assert result.n_pairs == 40 and result.acc_a == 30 / 40 and result.acc_b == 23 / 40
    assert result.diff == pytest.approx(7 / 40) and result.odds_ratio == pytest.approx(10 / 3)


def test_exact_mcnemar_on_the_classic_approval_table():
    """Agresti, Categorical Data Analysis: presidential approval at two surveys, [[794, 150], [86, 570]]."""
    a, b = _paired_table(794, 150, 86, 570)
    result = paired_comparison(a, b, n_boot=50)
    assert result.p_mcnemar == pytest.approx(binomtest(86, 236, 0.5).pvalue, rel=1e-9)
    assert result.p_mcnemar < 1e-4  # the chi-squared statistic is 17.36 on 1 df
    assert result.diff == pytest.approx((150 - 86) / 1600)


def test_cohens_h_is_its_formula_and_signed_a_minus_b():
    a, b = _paired_table(20, 10, 3, 7)
    result = paired_comparison(a, b, n_boot=FAST)
    expected = 2 * math.asin(math.sqrt(0.75)) - 2 * math.asin(math.sqrt(0.575))
    assert result.cohens_h == pytest.approx(expected, abs=1e-12)
    assert paired_comparison(b, a, n_boot=FAST).cohens_h == pytest.approx(-expected, abs=1e-12)


def _clear_case(n_items: int = 40) -> tuple[dict, dict]:
    """a right on 34 of 40 items, b on 14; every a-right item of b is also a-right."""
    a = {(f"q{i}", 0): int(i < 34) for i in range(n_items)}
    b = {(f"q{i}", 0): int(i < 14) for i in range(n_items)}
    return a, b


def test_the_paired_bootstrap_interval_contains_the_difference_and_excludes_zero_in_a_clear_case():
    a, b = _clear_case()
    result = paired_comparison(a, b, n_boot=1000, seed=1)
    assert result.diff == pytest.approx(0.5) and result.n_items == 40
    assert result.diff_low < result.diff < result.diff_high
    assert result.diff_low > 0
    assert result.odds_ratio is None  # b never right where a is wrong: the ratio has no denominator
    assert result == paired_comparison(a, b, n_boot=1000, seed=1)  # reproducible
    assert result.text().startswith("+0.50 [")


def test_the_paired_bootstrap_resamples_whole_items():
    """Seeds of one item always agree: the interval is that of 20 items, wider than of 100 units."""
    a, b = {}, {}
    for i in range(20):
        for seed in range(5):
            a[(f"q{i}", seed)], b[(f"q{i}", seed)] = int(i < 14), int(i < 8)
    clustered = paired_comparison(a, b, n_boot=1000)
    flat = paired_comparison({(k, 0): v for k, v in a.items()}, {(k, 0): v for k, v in b.items()}, n_boot=1000)
    assert item_of(("q3", 2)) == "q3" and item_of(("q3", 2, 0)) == "q3" and item_of("q3") == "q3"
    assert clustered.n_items == 20 and clustered.n_pairs == 100 and flat.n_items == 100
    assert clustered.diff == flat.diff == pytest.approx(0.3)
    assert clustered.diff_high - clustered.diff_low > 1.6 * (flat.diff_high - flat.diff_low)


def test_all_equal_pairs_give_p_one_and_a_zero_difference():
    a = {(f"q{i}", 0): i % 2 for i in range(10)}
    result = paired_comparison(a, dict(a), n_boot=FAST)
    assert result.p_mcnemar == 1.0 and result.diff == 0.0 and result.cohens_h == 0.0
    # Every item gives the difference 0, so every resample does: no interval is claimed (not [0, 0]).
    assert result.odds_ratio is None and (result.diff_low, result.diff_high) == (None, None)
    assert "same way" in result.note
    won = paired_comparison({k: 1 for k in a}, {k: 0 for k in a}, n_boot=FAST)  # a wins every pair
    assert won.diff == 1.0 and (won.diff_low, won.diff_high) == (None, None) and won.p_mcnemar < 0.01


def test_only_shared_judged_keys_are_paired_and_no_pairs_never_raises():
    a = {("q1", 0): 1, ("q2", 0): 1, ("q3", 0): None, ("q4", 0): 0}
    b = {("q1", 0): 0, ("q3", 0): 1, ("q4", 0): 0, ("q5", 0): 1}
    result = paired_comparison(a, b, n_boot=FAST)
    assert result.n_pairs == 2 and (result.a_right_b_wrong, result.both_wrong) == (1, 1)
    for left, right in (({}, {}), (a, {}), ({("x", 0): 1}, {("y", 0): 1}), ({"k": None}, {"k": 1})):
        empty = paired_comparison(left, right)
        assert empty.n_pairs == 0 and empty.p_mcnemar is None and empty.diff is None
        assert empty.note == "no pairs" and empty.text() == "n/a (no pairs)"
    one_item = paired_comparison({("q", 0): 1, ("q", 1): 1}, {("q", 0): 0, ("q", 1): 1}, n_boot=FAST)
    assert one_item.diff == 0.5 and one_item.diff_low is None and one_item.note


# ----- Holm and the sweep --------------------------------------------------------------------------
def test_holm_on_a_known_vector():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-12)


def test_holm_keeps_none_in_place_and_does_not_count_it():
    adjusted = holm([0.01, None, 0.04, 0.03, None, 0.005])
    assert adjusted[1] is None and adjusted[4] is None
    assert [adjusted[i] for i in (0, 2, 3, 5)] == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-12)
    assert holm([]) == [] and holm([None]) == [None] and holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])


def test_the_pairs_of_a_sweep():
    assert comparison_pairs(["x", "y", "z"]) == [("x", "y"), ("x", "z"), ("y", "z")]
    assert comparison_pairs(["x", "y", "z"], baselines=["z"]) == [("x", "z"), ("y", "z")]
    assert comparison_pairs(["w", "x", "y", "z"], baselines=["y", "w"]) == \
        [("x", "y"), ("x", "w"), ("z", "y"), ("z", "w"), ("y", "w")]
    with pytest.raises(ValueError):
        comparison_pairs(["x"], baselines=["nope"])


def test_compare_all_applies_holm_over_every_comparison_and_gives_flat_records():
    a, b = _clear_case()
    per_config = {"good": a, "bad": b, "same": dict(b), "empty": {}}
    results = compare_all(per_config, n_boot=FAST)
    assert [(r.config_a, r.config_b) for r in results] == comparison_pairs(list(per_config))
    assert holm([r.p_mcnemar for r in results]) == [r.p_holm for r in results]
    by_pair = {(r.config_a, r.config_b): r for r in results}
    assert by_pair[("good", "bad")].p_holm == pytest.approx(min(1.0, 3 * by_pair[("good", "bad")].p_mcnemar))
    assert by_pair[("bad", "same")].p_mcnemar == 1.0 and by_pair[("good", "empty")].p_holm is None
    record = by_pair[("good", "bad")].to_record()
    assert list(record)[:12] == ["config_a", "config_b", "n_pairs", "diff", "diff_low", "diff_high", "p_mcnemar",
                                 "p_holm", "cohens_h", "odds_ratio", "a_right_b_wrong", "a_wrong_b_right"]
    assert all(value is None or isinstance(value, (str, int, float)) for value in record.values())
    good_bad = by_pair[("good", "bad")]
    assert f"McNemar p = {good_bad.p_mcnemar:.3f}, Holm p = {good_bad.p_holm:.3f} (" in good_bad.text()
    assert compare_all(per_config, n_boot=FAST) == results  # deterministic
    against = compare_all(per_config, baselines=["bad"], n_boot=FAST)
    assert [(r.config_a, r.config_b) for r in against] == [("good", "bad"), ("same", "bad"), ("empty", "bad")]
    assert compare_all({}) == [] and compare_all({"only": a}) == []


def test_compare_all_records_name_non_text_configurations_as_text():
    a, b = _clear_case(10)
    record = compare_all({("k", 1): a, ("k", 2): b}, n_boot=50)[0].to_record()
    assert record["config_a"] == "('k', 1)" and record["config_b"] == "('k', 2)"


# ----- discussion ----------------------------------------------------------------------------------
def test_discussion_changes_count_each_transition_and_the_net():
    first = {"r1": 1, "r2": 1, "r3": 0, "r4": 0, "r5": 0, "r6": None, "r7": 1}
    final = {"r1": 0, "r2": 1, "r3": 1, "r4": 1, "r5": 0, "r6": 1, "r8": 0}
    changes = discussion_changes(first, final)
    assert changes == Changes(right_to_wrong=1, wrong_to_right=2, stayed_right=1, stayed_wrong=1, skipped=3)
    assert changes.n == 5 and changes.net == 1
    assert changes.to_record() == {"right_to_wrong": 1, "wrong_to_right": 2, "stayed_right": 1, "stayed_wrong": 1,
                                   "skipped": 3, "n": 5, "net": 1}
    assert discussion_changes({}, {}) == Changes(0, 0, 0, 0, 0)


def test_the_defaults_are_the_documented_ones():
    assert DEFAULT_N_BOOT == 2000
    assert Interval(None, None, None, 0, 0, "").level == 0.95
    assert isinstance(paired_comparison({}, {}), Comparison)


def test_opening_a_store_loads_no_statistics_cluster_or_dataset_library():
    # Every Store loads the experiments package (its migrations): scipy, statsmodels, Ray and datasets
    # wait until a sweep's figures, a cluster or a dataset are asked for.
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; from mad_core.store import Store; Store(':memory:'); "
            "print(sorted(m for m in ('scipy', 'statsmodels', 'ray', 'datasets') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip().splitlines()[-1] == "[]"
