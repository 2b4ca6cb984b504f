"""The metrics of issue 9 against the seeds' worked examples and hand-computed cases.

Seeds: 000 (Kaesberg et al., Table 1 SBERT similarity, Table 2 rounds to decision),
001 (Wu et al., App. B outcome metrics, §6.2 process measures), 002 (Liang et al., §4.1
Self-BLEU diversity, §1 DoT disagreement, Table 6 judge bias), 003 (Zhang et al., appendix
entropy / log-likelihood, Eq. 2 path consistency).
"""
import math

import pytest

from mad_core import metrics
from mad_core.metrics import (
    accuracy_smooth,
    accuracy_strict,
    agree_all_share,
    agree_major_share,
    agreement_all,
    agreement_majority,
    answer_changes,
    answer_similarity,
    auc,
    average_disagreement,
    clear_majority,
    disagreement,
    entropy,
    final_state,
    initial_state,
    initial_states_by_player,
    judge_side_agreement,
    log_likelihood,
    majority_prediction,
    model_family,
    outcome_metrics,
    path_consistency,
    rounds_to_decision_distribution,
    rounds_to_decision_summary,
    self_bleu,
    self_bleu_diversity,
    transitions,
)

# --- seed 003 appendix: entropy and log-likelihood worked examples ---------------------------


def test_seed003_entropy_worked_example_terms_and_total():
    # Fixed strategy after one debate round: (A)x8, (B)x1, (C)x1 -> -(-0.2575 - 0.3322 - 0.3322)
    assert round(0.8 * math.log2(0.8), 4) == -0.2575
    assert round(0.1 * math.log2(0.1), 4) == -0.3322
    answers = ["(A)"] * 8 + ["(B)"] + ["(C)"]
    assert round(entropy(answers), 4) == 0.9219
    # Random strategy: (A)x10 -> 0.0
    assert entropy(["(A)"] * 10) == 0.0


def test_seed003_log_likelihood_worked_example():
    # Fixed: (A)x9, (B)x1, truth A, P(y=A) = 0.9 -> -0.152; Random: (A)x10 -> 0.0
    assert round(log_likelihood(["(A)"] * 9 + ["(B)"], "A"), 3) == -0.152
    assert log_likelihood(["(A)"] * 10, "(A)") == 0.0


def test_log_likelihood_edges():
    assert log_likelihood([], "A") is None
    assert log_likelihood(["A"], None) is None
    assert log_likelihood(["B", "C"], "A") == -math.inf
    # an agent without an answer counts as an agent, not as correct: P = 1/2
    assert log_likelihood(["A", None], "A") == pytest.approx(-1.0)


def test_entropy_ties_and_missing_answers():
    assert entropy(["A", "B", "C", "D"]) == pytest.approx(2.0)  # four-way tie: log2 4
    assert entropy(["A", None, "", "A"]) == 0.0  # missing answers are nobody's viewpoint
    assert entropy(None) == 0.0


# --- seed 003 Eq. 2: path consistency -------------------------------------------------------


def test_seed003_path_consistency_is_eq2_divided_by_n_minus_1():
    answers = ["A", "A", "A", "B", "C"]
    # Eq. 2: sum over k != i of 1[V_i = V_k] = 2, 2, 2, 0, 0; we divide by n - 1 = 4
    raw = [sum(1 for k, v in enumerate(answers) if k != i and v == answers[i]) for i in range(5)]
    assert raw == [2, 2, 2, 0, 0]
    assert path_consistency(answers) == [r / 4 for r in raw]
    # Eq. 3 (MaxProb): the answer of the most consistent path
    scores = path_consistency(answers)
    assert answers[scores.index(max(scores))] == "A"
    assert path_consistency([]) == []


# --- seed 001 App. B: per-round agreement indicators -----------------------------------------


def test_agreement_all_and_majority_indicators():
    assert agreement_all(["knight", "Knight", "knight."]) is True
    assert agreement_all(["knight", "knave", "knight"]) is False
    assert agreement_all(["knight", None]) is False  # a missing answer breaks unanimity
    assert agreement_all(["x"]) is True
    assert agreement_all([]) is False
    # at least ceil(A/2) agents on one label
    assert agreement_majority(["a", "a", "b"]) is True  # 2 >= 2
    assert agreement_majority(["a", "b", "c"]) is False  # 1 < 2
    assert agreement_majority(["a", "a", "b", "b"]) is True  # tie, but 2 >= ceil(4/2)
    assert agreement_majority(["a", "a", "b", "c", "d"]) is False  # 2 < 3
    assert agreement_majority(["a", None, None]) is False  # A counts silent agents
    assert agreement_majority([]) is False


# --- seed 001 App. B: accuracies and AUC ----------------------------------------------------

TRUTH = {"Rachel": "knight", "Violet": "knight", "Olivia": "knave", "Peter": "spy"}  # seed 001 §3 example
ROUND_1 = {
    "A1": {"Rachel": "knight", "Violet": "knight", "Olivia": "knave", "Peter": "spy"},
    "A2": {"Rachel": "knave", "Violet": "knave", "Olivia": "knight", "Peter": "spy"},
    "A3": {"Rachel": "knight", "Violet": "knave", "Olivia": "spy", "Peter": "knave"},
}
ROUND_2 = {
    "A1": {"Rachel": "knight", "Violet": "knight", "Olivia": "knave", "Peter": "spy"},
    "A2": {"Rachel": "knight", "Violet": "knave", "Olivia": "knave", "Peter": "spy"},
    "A3": {"Rachel": "knight", "Violet": "knight", "Olivia": "knave", "Peter": "knave"},
}
ROUND_3 = {agent: dict(TRUTH) for agent in ("A1", "A2", "A3")}


def test_accuracy_strict_and_smooth_single_answers():
    assert accuracy_strict(TRUTH, TRUTH) == 1.0
    half = {"Rachel": "Knight", "Violet": "knave", "Olivia": "knave", "Peter": None}
    assert accuracy_strict(half, TRUTH) == 0.0
    assert accuracy_smooth(half, TRUTH) == 0.5  # Rachel (case-insensitive) and Olivia
    assert accuracy_smooth({"Rachel": "knight"}, TRUTH) == 0.25  # missing players are wrong
    assert accuracy_smooth({**TRUTH, "Zed": "spy"}, TRUTH) == 1.0  # extra players ignored
    assert accuracy_strict("(B)", "B") == accuracy_smooth("(B)", "B") == 1.0
    assert accuracy_strict("C", "B") == 0.0
    assert accuracy_strict(TRUTH, {}) is None and accuracy_smooth("A", None) is None
    assert accuracy_smooth(None, TRUTH) == 0.0


def test_majority_prediction_per_player_with_tie():
    assert majority_prediction(ROUND_1) == {"Rachel": "knight", "Violet": "knave", "Olivia": None,
                                            "Peter": "spy"}
    assert majority_prediction(["A", "(a)", "B"]) == "a"
    assert majority_prediction([]) is None
    # the initial-state rule (seed 001 §6.1): at least half of ALL agents, unreadable ones counted
    assert majority_prediction(["A", None, None]) is None  # chaos, not "a"
    assert majority_prediction(["A", "a", None]) == "a"
    assert majority_prediction(["A", "B", None, None]) is None


def test_auc_is_the_mean_over_rounds():
    assert auc([0.0, 1.0, 1.0]) == pytest.approx(2 / 3)
    assert auc([True, False]) == 0.5
    assert auc([0.5, None, 1.0]) == 0.75  # a round without a value is left out of T
    assert auc([]) is None and auc([None]) is None


def test_seed001_outcome_metrics_on_a_three_round_debate():
    # Round 1: majority R knight (ok), V knave (wrong), O 1-1-1 tie (wrong), P spy (ok)
    #   strict 0, smooth 2/4; unanimous players 0/4; majority players R, V, P = 3/4
    # Round 2: majority right on every player -> strict 1, smooth 1; unanimous R, O = 2/4; majority 4/4
    # Round 3: everyone right -> 1, 1, 1, 1
    result = outcome_metrics([ROUND_1, ROUND_2, ROUND_3], TRUTH)
    assert result["strict"] == [0.0, 1.0, 1.0]
    assert result["smooth"] == [0.5, 1.0, 1.0]
    assert result["agree_all"] == [0.0, 0.5, 1.0]
    assert result["agree_major"] == [0.75, 1.0, 1.0]
    assert result["auc_strict"] == pytest.approx(2 / 3)
    assert result["auc_smooth"] == pytest.approx(5 / 6)
    assert result["auc_agree_all"] == pytest.approx(0.5)
    assert result["auc_agree_major"] == pytest.approx(11 / 12)
    assert agree_all_share(ROUND_2) == 0.5 and agree_major_share(ROUND_1) == 0.75


def test_an_unreadable_round_scores_zero_in_accuracy_and_agreement_alike():
    result = outcome_metrics([[None, None, None], ["A", "A", "A"]], "A")
    assert result["strict"] == result["agree_all"] == result["agree_major"] == [0.0, 1.0]
    assert result["auc_strict"] == result["auc_agree_all"] == result["auc_agree_major"] == 0.5


def test_outcome_metrics_plain_answers_and_empty():
    result = outcome_metrics([["A", "B", "B"], ["A", "A", "B"]], "A")
    assert result["strict"] == result["smooth"] == [0.0, 1.0]
    assert result["agree_all"] == [0.0, 0.0] and result["agree_major"] == [1.0, 1.0]
    assert result["auc_strict"] == 0.5
    empty = outcome_metrics([], TRUTH)
    assert empty["strict"] == [] and empty["auc_smooth"] is None
    no_truth = outcome_metrics([ROUND_1])
    assert no_truth["strict"] == [None] and no_truth["auc_strict"] is None
    assert no_truth["agree_major"] == [0.75]
    assert agree_all_share([]) is None and agree_major_share({}) is None


# --- seed 001 §6.2: initial states and transitions -------------------------------------------


def test_initial_state_definitions():
    # clear majority (2 of 3) on the right answer
    assert initial_state("A", ["A", "A", "B"], "A") == "majority-correct"
    assert initial_state("B", ["A", "A", "B"], "A") == "minority-wrong"
    # clear majority on a wrong answer
    assert initial_state("B", ["B", "B", "A"], "A") == "majority-wrong"
    assert initial_state("A", ["B", "B", "A"], "A") == "minority-correct"
    # no clear majority: chaos, split by correctness as the paper's CC state
    assert initial_state("A", ["A", "B", "C"], "A") == "chaos-correct"
    assert initial_state("B", ["A", "B", "C"], "A") == "chaos-wrong"
    assert initial_state("B", ["A", "B", "C"], "A", split_chaos=False) == "chaos"
    # a 2-2 tie is chaos; 2-1-1 among 4 is a majority (ceil(4/2) = 2); 2-1-1-1 among 5 is not
    assert initial_state("A", ["A", "A", "B", "B"], "A") == "chaos-correct"
    assert initial_state("A", ["A", "A", "B", "C"], "A") == "majority-correct"
    assert initial_state("A", ["A", "A", "B", "C", "D"], "A") == "chaos-correct"
    # unanimity, odd input
    assert initial_state("(A)", ["A", "a", "A."], "A") == "majority-correct"
    assert initial_state(None, ["A", "A", None], "A") == "minority-wrong"
    assert initial_state("A", [], "A") == "chaos-correct"
    assert initial_state("A", ["A", "A"], None) == "majority-wrong"
    assert clear_majority([]) is None


def test_final_state():
    assert final_state("(B)", "b") == "correct"
    assert final_state("A", "b") == "wrong"
    assert final_state(None, "b") == "wrong"
    assert final_state(TRUTH, dict(TRUTH)) == "correct"  # whole assignments compare as one


def test_seed001_states_and_transitions_per_player():
    states = initial_states_by_player(ROUND_1, TRUTH)
    assert states["A1"] == {"Rachel": "majority-correct", "Violet": "minority-correct",
                            "Olivia": "chaos-correct", "Peter": "majority-correct"}
    assert states["A2"] == {"Rachel": "minority-wrong", "Violet": "majority-wrong",
                            "Olivia": "chaos-wrong", "Peter": "majority-correct"}
    assert states["A3"] == {"Rachel": "majority-correct", "Violet": "majority-wrong",
                            "Olivia": "chaos-wrong", "Peter": "minority-wrong"}
    finals = {agent: {p: final_state(role, TRUTH[p]) for p, role in roles.items()} for agent, roles in ROUND_2.items()}
    assert transitions(states, finals) == {
        ("majority-correct", "correct"): 4,
        ("minority-correct", "correct"): 1,
        ("chaos-correct", "correct"): 1,
        ("minority-wrong", "correct"): 1,
        ("majority-wrong", "wrong"): 1,
        ("chaos-wrong", "correct"): 2,
        ("majority-wrong", "correct"): 1,  # MaW -> C: the paper's rare, valuable reversal
        ("minority-wrong", "wrong"): 1,
    }
    assert len(metrics.INITIAL_STATES) * len(metrics.FINAL_STATES) == 12  # Figure 5's x-axis
    assert initial_states_by_player([], TRUTH) == {}


def test_transitions_lists_bools_and_odd_input():
    assert transitions(["majority-wrong", "minority-correct", "chaos-wrong"], [True, True, False]) == {
        ("majority-wrong", "correct"): 1, ("minority-correct", "correct"): 1, ("chaos-wrong", "wrong"): 1}
    assert transitions(["a", "a", "b"], ["correct", "correct"]) == {("a", "correct"): 2}  # extra ignored
    assert transitions({"x": "a", "y": None}, {"x": "wrong", "z": "correct"}) == {("a", "wrong"): 1}
    assert transitions([], []) == {} and transitions(None, None) == {}


def test_answer_changes_who_flipped_when():
    rounds = [{"Ann": "A", "Bob": "B"}, {"Ann": "(a)", "Bob": "A"}, {"Ann": "C", "Bob": None}, {"Bob": "B"}]
    assert answer_changes(rounds) == [
        {"agent": "Bob", "round": 1, "from": "b", "to": "a"},
        {"agent": "Ann", "round": 2, "from": "a", "to": "c"},
        {"agent": "Bob", "round": 3, "from": "a", "to": "b"},  # round 2's silence is no change
    ]
    assert answer_changes([]) == [] and answer_changes([{}, None]) == []


def test_answer_changes_per_player():
    assert answer_changes([ROUND_1, ROUND_2, ROUND_3]) == [
        {"agent": "A2", "player": "Rachel", "round": 1, "from": "knave", "to": "knight"},
        {"agent": "A2", "player": "Olivia", "round": 1, "from": "knight", "to": "knave"},
        {"agent": "A3", "player": "Violet", "round": 1, "from": "knave", "to": "knight"},
        {"agent": "A3", "player": "Olivia", "round": 1, "from": "spy", "to": "knave"},
        {"agent": "A2", "player": "Violet", "round": 2, "from": "knave", "to": "knight"},
        {"agent": "A3", "player": "Peter", "round": 2, "from": "knave", "to": "spy"},
    ]


# --- seed 000 Table 2: rounds to decision ---------------------------------------------------


def test_seed000_table2_majority_row():
    # 600 debates: 80.00 % / 13.67 % / 4.83 % / 1.00 % / 0.50 % at turns 1..5
    rounds = [1] * 480 + [2] * 82 + [3] * 29 + [4] * 6 + [5] * 3
    assert rounds_to_decision_distribution(rounds) == {1: 480, 2: 82, 3: 29, 4: 6, 5: 3}
    summary = rounds_to_decision_summary(rounds, max_rounds=5)
    shares = {r: round(100 * s, 2) for r, s in summary["shares"].items()}
    assert shares == {1: 80.0, 2: 13.67, 3: 4.83, 4: 1.0, 5: 0.5}
    assert summary["mean"] == pytest.approx(770 / 600)
    assert summary["capped"] == pytest.approx(3 / 600)
    assert (summary["n"], summary["decided"], summary["min"], summary["max"]) == (600, 600, 1, 5)


def test_rounds_to_decision_odd_input():
    assert rounds_to_decision_distribution([3, 1, None, "x", True, -1, 3.0, 2.5]) == {1: 1, 3: 2}
    summary = rounds_to_decision_summary([2, None, 4], max_rounds=4)
    assert summary["mean"] == 3.0 and summary["undecided"] == 1
    assert summary["shares"] == {2: 1 / 3, 4: 1 / 3}
    assert summary["capped"] == pytest.approx(2 / 3)  # one at the cap, one undecided
    empty = rounds_to_decision_summary([])
    assert empty["mean"] is None and empty["shares"] == {} and empty["distribution"] == {}
    assert "capped" not in empty and rounds_to_decision_summary([], max_rounds=3)["capped"] is None


# --- seed 002 Table 6: judge bias -----------------------------------------------------------


def _table6_records():
    rows = [  # (judge, affirmative, negative, aff wins, neg wins, ties) as printed
        ("Turbo", "Turbo", "Turbo", 87, 104, 9),
        ("GPT-4", "GPT-4", "GPT-4", 67, 124, 9),
        ("GPT-4", "Turbo", "GPT-4", 52, 136, 12),
        ("GPT-4", "GPT-4", "Turbo", 120, 77, 3),
    ]
    records = []
    for judge, aff, neg, a, n, t in rows:
        records += [("affirmative", aff, neg, judge)] * a + [("negative", aff, neg, judge)] * n
        records += [{"winner": None, "affirmative": aff, "negative": neg, "judge": judge}] * t
    return records


def test_seed002_table6_judge_prefers_its_own_model():
    table = judge_side_agreement(_table6_records())
    rows = table["rows"]
    assert [(r["aff"], r["neg"], r["tie"], r["n"]) for r in rows] == [
        (87, 104, 9, 200), (67, 124, 9, 200), (52, 136, 12, 200), (120, 77, 3, 200)]
    assert [r["same_family_side"] for r in rows] == [None, None, "negative", "affirmative"]
    assert rows[0]["same_family_share"] is None
    assert rows[2]["same_family_share"] == pytest.approx(0.68)
    assert rows[3]["same_family_share"] == pytest.approx(0.60)
    assert table["mixed_debates"] == 400 and table["same_family_verdicts"] == 256
    assert table["same_family_share"] == pytest.approx(0.64)


def test_judge_side_agreement_families_and_odd_input():
    records = [
        {"side": "aff", "affirmative": "openai/gpt-4o", "negative": "llama3", "judge": "GPT-4o"},
        ("tie", "openai/gpt-4o", "llama3", "GPT-4o"),
        ("neg", "openai/gpt-4o", "llama3", "GPT-4o"),
        "garbage",
        ("too", "short"),
    ]
    table = judge_side_agreement(records)
    assert table["same_family_share"] == pytest.approx(1 / 3)
    coarse = judge_side_agreement([("negative", "gpt-4o", "gpt-4o-mini", "gpt-4")],
                                  family=lambda m: str(m).split("-")[0])
    assert coarse["rows"][0]["same_family_side"] is None  # both sides share the judge's family
    assert model_family("OpenAI/GPT-4") == "gpt-4" and model_family(None) == ""
    empty = judge_side_agreement([])
    assert empty == {"rows": [], "mixed_debates": 0, "same_family_verdicts": 0, "same_family_share": None}


# --- seed 002 §1: Degeneration-of-Thought disagreement --------------------------------------


def test_disagreement_between_two_debaters_is_zero_or_one():
    assert disagreement(["3", "4"]) == 1.0
    assert disagreement(["(B)", "b"]) == 0.0
    assert disagreement(["x"]) == 0.0 and disagreement([]) == 0.0 and disagreement(["x", None]) == 0.0
    # more agents: share of disagreeing pairs; A A B -> pairs AA (same), AB, AB -> 2/3
    assert disagreement(["A", "A", "B"]) == pytest.approx(2 / 3)
    assert disagreement(["A", "B", "C"]) == 1.0


def test_average_disagreement_per_iteration_across_debates():
    debates = [
        [["A", "B"], ["A", "A"], ["A", "A"]],
        [["A", "B"], ["A", "B"]],
        [["C", "C"]],
    ]
    assert average_disagreement(debates) == [pytest.approx(2 / 3), 0.5, 0.0]
    assert average_disagreement([]) == []


# --- seed 002 §4.1: Self-BLEU diversity -----------------------------------------------------


def test_seed002_self_bleu_hand_computed():
    c1, c2 = "the cat sat on the mat", "the cat sat on a mat"
    # BLEU(c1 | c2): clipped precisions 5/6, 3/5, 2/4, 1/3 (the: min(2, 1)); equal lengths, BP 1.
    # BLEU(c2 | c1) has the same precisions; Self-BLEU = mean = (1/12) ** (1/4).
    expected = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert self_bleu([c1, c2]) == pytest.approx(expected)
    assert self_bleu_diversity([c1, c2]) == pytest.approx(100 - expected)
    assert round(self_bleu_diversity([c1, c2]), 2) == 46.27


def test_self_bleu_smoothing_for_orders_without_match():
    # "a b c d" vs "a b d c": 4/4, 1/3, then no 3- or 4-gram match -> 0.1/2 and 0.1/1 (nltk method1)
    expected = 100 * (1 * 1 / 3 * 0.05 * 0.1) ** 0.25
    assert self_bleu(["a b c d", "a b d c"]) == pytest.approx(expected)


def test_self_bleu_brevity_short_texts_and_edges():
    # hypothesis shorter than its reference: BP = exp(1 - 6/4) for "the cat sat on" vs c1
    c1 = "the cat sat on the mat"
    short = "the cat sat on"
    bleu_short = math.exp(1 - 6 / 4) * 1.0  # all its n-grams match
    bleu_long = (4 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25  # 'the' clipped to 1, BP 1 (longer)
    assert self_bleu([short, c1]) == pytest.approx(100 * (bleu_short + bleu_long) / 2)
    assert self_bleu_diversity(["hi there", "hi there"]) == pytest.approx(0.0)  # short identical texts
    assert self_bleu_diversity(["", "words"]) == pytest.approx(100.0)
    assert self_bleu_diversity([None, "x"]) == pytest.approx(100.0)
    assert self_bleu([]) is None and self_bleu_diversity(["one"]) is None
    # three texts: each against the other two
    assert self_bleu_diversity(["a b c d", "a b c d", "w x y z"]) == pytest.approx(100 - 200 / 3)


# --- seed 000 Table 1: SBERT similarity of final answers ------------------------------------


def test_seed000_answer_similarity_is_mean_pairwise_cosine():
    table = {"p": [3.0, 4.0], "q": [4.0, 3.0], "r": [0.0, 0.0]}
    # cosines: p-q 24/25, p-r 0 (zero vector), q-r 0 -> mean 0.32
    assert answer_similarity(["p", "q", "r"], embed=lambda texts: [table[t] for t in texts]) == pytest.approx(0.32)
    assert answer_similarity([], embed=lambda texts: []) is None


def test_default_embed_is_patchable_on_the_package(monkeypatch):
    monkeypatch.setattr(metrics, "default_embed", lambda texts: [[1.0, 0.0] for _ in texts])
    assert metrics.answer_similarity(["a", "b"]) == pytest.approx(1.0)


def test_load_default_model_is_patchable_on_the_package(monkeypatch):
    class Fake:
        def encode(self, texts, convert_to_numpy=True):
            return [[1.0, float(i)] for i, _ in enumerate(texts)]

    monkeypatch.setattr(metrics, "_load_default_model", lambda: Fake())
    assert metrics.answer_similarity(["a", "b"]) == pytest.approx(1 / math.sqrt(2))
