"""Debate metrics against the papers' worked examples and hand-computed cases."""
import itertools
import math
import os
import threading

import pytest

from mad_core import metrics
from mad_core.metrics import (
    agreement,
    answer_diversity,
    answer_similarity,
    answer_timeline,
    convergence_winner,
    entropy,
    log_likelihood,
    madc_order,
    majority_answer,
    path_consistency,
    self_bleu_diversity,
    token_overlap,
    vote_breakdown,
)

# --- entropy and log-likelihood (seed 003 appendix worked examples) ---------------------------


def test_entropy_worked_example():
    answers = ["(A)"] * 8 + ["(B)", "(C)"]
    assert entropy(answers) == pytest.approx(0.9219, abs=1e-4)


def test_entropy_of_full_agreement_is_zero():
    assert entropy(["(A)"] * 10) == 0.0
    assert math.copysign(1.0, entropy(["A"] * 3)) == 1.0  # not -0.0


def test_entropy_counts_normalized_answers():
    assert entropy(["A", "(a)", "a."]) == 0.0
    assert entropy(["A", "B"]) == pytest.approx(1.0)
    assert entropy([]) == 0.0


def test_log_likelihood_worked_example():
    assert log_likelihood(["(A)"] * 9 + ["(B)"], "A") == pytest.approx(-0.152, abs=1e-3)
    assert log_likelihood(["(A)"] * 10, "A") == 0.0


def test_log_likelihood_none_correct():
    assert log_likelihood(["B", "C"], "A") == -math.inf


# --- agreement -------------------------------------------------------------------------------


def test_agreement_and_majority():
    assert agreement(["B", "(b)", "C", "b"]) == 0.75
    assert majority_answer(["B", "(b)", "C", "b"]) == "b"
    assert majority_answer(["B", "C"]) is None
    assert majority_answer([]) is None
    assert agreement([]) == 0.0


# --- path consistency and MADC ---------------------------------------------------------------


def test_path_consistency():
    assert path_consistency(["B", "A", "a", "C", "(A)"]) == [0.0, 0.5, 0.5, 0.0, 0.5]
    assert path_consistency(["x", "x"]) == [1.0, 1.0]
    assert path_consistency(["x"]) == [0.0]


def test_madc_order_most_consistent_last():
    labels = ["Ann", "Bob", "Cat", "Dan"]
    answers = ["B", "A", "C", "A"]  # Bob and Dan agree (1/3 each); Ann and Cat are alone (0)
    assert madc_order(labels, answers) == ["Ann", "Cat", "Bob", "Dan"]


def test_madc_order_ascending_with_a_single_leader():
    labels = ["A1", "A2", "A3", "A4", "A5", "A6"]
    answers = ["x", "y", "x", "z", "x", "y"]  # x: 2/5, y: 1/5, z: 0
    assert madc_order(labels, answers) == ["A4", "A2", "A6", "A1", "A3", "A5"]


def test_madc_order_is_stable_for_ties():
    assert madc_order(["p", "q", "r"], ["1", "2", "3"]) == ["p", "q", "r"]


def test_madc_order_length_mismatch():
    with pytest.raises(ValueError):
        madc_order(["a", "b"], ["1"])


# --- token overlap and the convergence winner -------------------------------------------------


def test_token_overlap():
    assert token_overlap("The cat sat", "the CAT ran") == pytest.approx(2 / 4)
    assert token_overlap("a b", "a b") == 1.0
    assert token_overlap("a", "b") == 0.0
    assert token_overlap("", "") == 0.0


def test_convergence_winner_picks_the_most_central_draft():
    drafts = ["red blue", "red blue green", "green yellow"]
    # overlaps: 0-1 = 2/3, 0-2 = 0, 1-2 = 1/4
    winner, scores = convergence_winner(drafts)
    assert winner == 1
    assert scores == pytest.approx([1 / 3, (2 / 3 + 1 / 4) / 2, 1 / 8])


def test_convergence_winner_ties_and_single_draft():
    assert convergence_winner(["a b", "a b"]) == (0, [1.0, 1.0])
    assert convergence_winner(["only one"]) == (0, [1.0])
    with pytest.raises(ValueError):
        convergence_winner([])


# --- SBERT similarity ------------------------------------------------------------------------


def fake_embed(texts):
    table = {"x": [1.0, 0.0], "y": [0.0, 1.0], "xy": [1.0, 1.0]}
    return [table[t] for t in texts]


def test_answer_similarity_with_injected_embedder():
    # pairs: x-y 0, x-xy 1/sqrt2, y-xy 1/sqrt2
    expected = (0 + 2 / math.sqrt(2)) / 3
    assert answer_similarity(["x", "y", "xy"], embed=fake_embed) == pytest.approx(expected)
    assert answer_diversity(["x", "y", "xy"], embed=fake_embed) == pytest.approx(1 - expected)
    assert answer_similarity(["x", "x"], embed=fake_embed) == pytest.approx(1.0)
    assert answer_diversity(["x", "x"], embed=fake_embed) == pytest.approx(0.0)


def test_answer_similarity_is_the_same_to_the_last_digit_in_any_order_of_the_answers():
    """Agents answering at once finish in any order; a plain sum of the pairs' cosines moved the last
    digit with it (these vectors: ...187 or ...188), and a sweep reproduced from its archive then
    differed from the original (bundle.TABLES must match byte for byte)."""
    vectors = {"a": [0.8, 0.3, 0.5], "b": [0.3, 0.3, 0.7], "c": [0.4, 0.0, 0.6]}
    embed = lambda texts: [vectors[t] for t in texts]  # noqa: E731
    values = {answer_similarity(list(order), embed=embed) for order in itertools.permutations("abc")}
    assert len(values) == 1
    assert values.pop() == pytest.approx(0.8741869608471187, abs=1e-15)


def test_answer_similarity_needs_two_texts():
    assert answer_similarity(["x"], embed=fake_embed) is None
    assert answer_diversity([], embed=fake_embed) is None


def test_default_sbert_model_sees_paraphrases_as_similar():
    paraphrases = ["The cat is sleeping on the sofa.", "A cat naps on the couch."]
    unrelated = ["The cat is sleeping on the sofa.", "Interest rates rose sharply in March."]
    assert answer_similarity(paraphrases) > answer_similarity(unrelated) + 0.2


class _ThreadRecordingModel:
    """A stand-in SBERT model that records torch's thread count during each encode."""

    def __init__(self):
        self.threads = []

    def encode(self, texts, convert_to_numpy=True):
        import torch

        self.threads.append(torch.get_num_threads())
        return [[1.0, 0.0] for _ in texts]


@pytest.mark.parametrize("setting, expected", [(None, 1), ("1", 1), ("3", 3)])
def test_sbert_computes_with_madlab_sbert_threads_and_puts_torchs_count_back(monkeypatch, setting, expected):
    """One thread by default: torch's threads wait for each other, so on busy cores (the local model's
    server, a class's browsers) two threads took 700-900 ms for what one did in 55 ms."""
    import torch

    if setting is None:
        monkeypatch.delenv("MADLAB_SBERT_THREADS", raising=False)
    else:
        monkeypatch.setenv("MADLAB_SBERT_THREADS", setting)
    model = _ThreadRecordingModel()
    monkeypatch.setattr(metrics, "_load_default_model", lambda: model)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert len(metrics.default_embed(["a", "b"])) == 2
        assert model.threads == [expected]
        assert torch.get_num_threads() == 2  # the process's count is back for an in-process hf/ model
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("setting", ["0", "two", "-1", "1.5"])
def test_a_bad_madlab_sbert_threads_is_refused_naming_it_before_any_embedding(monkeypatch, setting):
    monkeypatch.setenv("MADLAB_SBERT_THREADS", setting)
    model = _ThreadRecordingModel()
    monkeypatch.setattr(metrics, "_load_default_model", lambda: model)
    with pytest.raises(ValueError, match="MADLAB_SBERT_THREADS must be a whole number of at least 1"):
        metrics.default_embed(["a"])
    assert model.threads == []


def test_two_threads_embedding_at_once_take_turns(monkeypatch):
    """The second embedding waits for the first (a fast tokenizer shared by threads can fail with
    "Already borrowed"; two thread settings would overwrite each other)."""
    from mad_core.metrics import similarity

    inside, release = threading.Event(), threading.Event()
    active, most = [0], [0]

    class Held:
        def encode(self, texts, convert_to_numpy=True):
            active[0] += 1
            most[0] = max(most[0], active[0])
            if texts == ["first"]:
                inside.set()
                release.wait(timeout=30)
            active[0] -= 1
            return [[1.0] for _ in texts]

    real = threading.Lock()
    second_waits = threading.Event()

    class WatchedLock:  # the module's lock, telling when the second caller has reached it
        def __enter__(self):
            if inside.is_set():
                second_waits.set()
            return real.__enter__()

        def __exit__(self, *exc):
            return real.__exit__(*exc)

    monkeypatch.setattr(similarity, "_encode_lock", WatchedLock())
    monkeypatch.setattr(metrics, "_load_default_model", lambda: Held())
    first = threading.Thread(target=metrics.default_embed, args=(["first"],))
    first.start()
    assert inside.wait(timeout=30)
    second = threading.Thread(target=metrics.default_embed, args=(["second"],))
    second.start()
    assert second_waits.wait(timeout=30)  # at the lock while the first is still inside encode
    release.set()
    first.join(timeout=30)
    second.join(timeout=30)
    assert not first.is_alive() and not second.is_alive()
    assert most[0] == 1


def test_default_model_is_loaded_once_across_threads():
    loaded = []
    threads = [threading.Thread(target=lambda: loaded.append(metrics._load_default_model())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loaded) == 4 and all(model is loaded[0] for model in loaded)


def test_the_bundled_model_loads_with_no_network_and_leaves_the_environment_alone(monkeypatch):
    """The SBERT model is read from its package's files (no request to the hub), and loading it does
    not write HF_HUB_OFFLINE into the process: a teacher's download on the Models page comes later."""
    import socket

    from mad_core.metrics import similarity

    def refuse(self, address, *args):
        raise AssertionError(f"a connection was attempted: {address}")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(similarity, "_default_model", None)
    assert similarity.default_embed(["a river", "a city"]).shape == (2, 384)
    assert "HF_HUB_OFFLINE" not in os.environ


# --- Self-BLEU -------------------------------------------------------------------------------


def test_self_bleu_diversity():
    same = "the average speed is one and a half metres per second"
    assert self_bleu_diversity([same, same]) == pytest.approx(0.0)
    assert self_bleu_diversity(["alpha beta gamma delta", "one two three four"]) == pytest.approx(100.0)
    partial = self_bleu_diversity([same, "the average speed is two metres per second"])
    assert 0.0 < partial < 100.0
    assert self_bleu_diversity([same]) is None


def test_self_bleu_grows_with_difference():
    base = "eliminate an enemy division in the battle"
    close = self_bleu_diversity([base, "eliminate an enemy division in battle"])
    far = self_bleu_diversity([base, "eat up an enemy division"])
    assert close < far


# --- answer timeline -------------------------------------------------------------------------


def test_answer_timeline_records_changes_of_mind():
    rounds = [
        {"Ann": "(A)", "Bob": "B"},
        {"Ann": "A", "Bob": "(A)", "Cat": "C"},
        {"Ann": "B", "Cat": "C"},
        {"Ann": "B", "Bob": "A", "Cat": "a"},
    ]
    timeline = answer_timeline(rounds)
    assert timeline["labels"] == ["Ann", "Bob", "Cat"]
    assert timeline["rounds"] == [0, 1, 2, 3]
    assert timeline["answers"] == {
        "Ann": ["a", "a", "b", "b"],
        "Bob": ["b", "a", None, "a"],
        "Cat": [None, "c", "c", "a"],
    }
    assert timeline["changes"] == [
        {"agent": "Bob", "round": 1, "from": "b", "to": "a"},
        {"agent": "Ann", "round": 2, "from": "a", "to": "b"},
        {"agent": "Cat", "round": 3, "from": "c", "to": "a"},
    ]


def test_answer_timeline_empty():
    assert answer_timeline([]) == {"labels": [], "rounds": [], "answers": {}, "changes": []}


# --- vote breakdown --------------------------------------------------------------------------


def test_vote_breakdown_simple():
    chart = vote_breakdown("simple_voting", [0, 1, 1, None], 3)
    assert chart["counts"] == [1, 2, 0]
    assert chart["labels"] == ["Solution 1", "Solution 2", "Solution 3"]
    assert (chart["unit"], chart["winner"], chart["valid"], chart["invalid"]) == ("votes", 1, 3, 1)


def test_vote_breakdown_approval_and_cumulative():
    assert vote_breakdown("approval_voting", [[0, 1], [1]], 2)["counts"] == [1, 2]
    chart = vote_breakdown("cumulative_voting", [{0: 4, 1: 6}, {0: 6, 1: 4}], 2)
    assert (chart["unit"], chart["counts"], chart["winner"], chart["tied"]) == ("points", [10, 10], None, [0, 1])


def test_vote_breakdown_ranked_has_rank_counts():
    chart = vote_breakdown("ranked_voting", [[0, 1, 2], [1, 0, 2], [1, 2], None], 3)
    assert chart["unit"] == "rank points (MALLM: min(5, n) − position)"
    assert chart["counts"] == [5, 8, 4]
    assert chart["rank_counts"] == [[1, 1, 0], [2, 1, 0], [0, 1, 2]]
    assert chart["invalid"] == 1


def test_agents_without_an_answer_agree_with_nobody():
    # Seed 003 Eq. 2 compares viewpoints; two missing answers are not a shared viewpoint.
    assert path_consistency(["", "", "A", "A"]) == [0.0, 0.0, 1 / 3, 1 / 3]
    assert madc_order(["X", "Y", "Z"], ["", "", "B"]) == ["X", "Y", "Z"]
