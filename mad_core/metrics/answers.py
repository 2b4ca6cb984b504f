"""Metrics of one round's answers: spread, agreement, disagreement, path consistency.

Sources:
  * `entropy`, `log_likelihood`: seed 003, Appendix "Entropy / Log-likelihood Calculation
    Example" (Eqs. 4 and 5 with their worked examples, 0.9219 bits and -0.152).
  * `path_consistency`, `madc_order`: seed 003 Eq. 2 and Algorithm 1 (MADC).
  * `agreement_all`, `agreement_majority`: seed 001 Appendix B (AgreeAll / AgreeMajor).
  * `disagreement`, `average_disagreement`: seed 002 §1 / Figure 1 (Degeneration-of-Thought).
  * `agreement`, `majority_answer`: summaries for the charts.

Every function takes extracted answers (see `mad_core.answers.final_answer`) and compares
them after `normalize_answer`. A missing answer (None, or text that normalizes to "") is
nobody's viewpoint: it is dropped from distributions and agrees with nobody.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from ._common import as_list, norm, normalized

# --- viewpoint distribution (seed 003 appendix) ---------------------------------------------


def entropy(answers: Sequence[str | None]) -> float:
    """Shannon entropy, in bits, of the distribution of normalized answers.

    Seed 003 Appendix, Eq. 5: H(X) = -sum_i p_i log2 p_i over the n viewpoints that emerged,
    p_i the share of (answering) agents holding viewpoint i. Worked example: 10 agents with
    (A)x8, (B)x1, (C)x1 give -(-0.2575 - 0.3322 - 0.3322) = 0.9219; (A)x10 gives 0.0.
    0.0 for no answers; never -0.0.
    """
    counts = Counter(normalized(as_list(answers)))
    total = sum(counts.values())
    if not total:
        return 0.0
    h = -sum(c / total * math.log2(c / total) for c in counts.values())
    return float(abs(h))  # abs: a single viewpoint gives -0.0


def log_likelihood(answers: Sequence[str | None], truth: str | None) -> float | None:
    """log2 of the share of agents whose normalized answer equals the truth.

    Seed 003 Appendix, "Log-likelihood Calculation Example": with 10 agents, (A)x9 (B)x1 and
    truth A, P(y_i = A) = 0.9 and LL = -0.152; (A)x10 gives 0.0. That is log2(0.9).
    Reading taken: Eq. 4 as printed, LL = -sum_i t_i log2 P(y_i), would give +1.368 for the
    same example (9 x 0.152) and cannot produce the printed -0.152; we follow the worked
    example, LL = log2 P(y = truth), base 2 and no smoothing, P the share of all agents given
    (an agent without an answer counts, as not correct).
    -inf when no agent is correct; None when there are no agents or no truth.
    """
    items = as_list(answers)
    target = norm(truth)
    if not items or target is None:
        return None
    correct = sum(1 for a in items if norm(a) == target)
    if correct == 0:
        return -math.inf
    return math.log2(correct / len(items))


# --- agreement -------------------------------------------------------------------------------


def agreement(answers: Sequence[str | None]) -> float:
    """Share of answering agents holding the most common normalized answer (0.0 if none)."""
    counts = Counter(normalized(as_list(answers)))
    if not counts:
        return 0.0
    return max(counts.values()) / sum(counts.values())


def majority_answer(answers: Sequence[str | None]) -> str | None:
    """The most common normalized answer; None when there is none or the top is tied."""
    ranked = Counter(normalized(as_list(answers))).most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def agreement_all(answers: Sequence[str | None]) -> bool:
    """True when every agent gives the same normalized answer (seed 001 App. B, AgreeAll).

    One round, one question (or one player of a puzzle): the indicator
    1[all agents agree] inside AgreeAll(t). An agent without an answer breaks unanimity;
    a single answering agent agrees with itself; no agents give False.
    """
    items = as_list(answers)
    values = [norm(a) for a in items]
    return bool(values) and None not in values and len(set(values)) == 1


def agreement_majority(answers: Sequence[str | None]) -> bool:
    """True when some answer is held by at least ceil(A/2) of the A agents (seed 001 App. B).

    AgreeMajor's indicator, 1[max_l #{a : y_a = l} >= ceil(A/2)], "at least half of agents
    agree". A counts every agent given, answering or not, so 2 of 4 is a majority and so
    is a 2-2 split (both halves reach ceil(4/2) = 2: the paper's criterion, not a strict
    majority). No agents give False.
    """
    items = as_list(answers)
    counts = Counter(normalized(items))
    if not counts:
        return False
    return max(counts.values()) >= math.ceil(len(items) / 2)


# --- disagreement (seed 002, Degeneration-of-Thought) ---------------------------------------


def disagreement(answers: Sequence[str | None]) -> float:
    """Share of pairs of answering agents whose normalized answers differ (0.0 .. 1.0).

    Seed 002 §1 (Figure 1): between the two debaters, disagreement is 1 and agreement 0;
    for self-reflection, compare the agent's answers of two adjacent iterations the same way
    (`disagreement([previous, current])`). Reading taken for more than two agents: the share
    of disagreeing pairs, which is exactly the paper's 0/1 for two. Fewer than two answers:
    0.0 (nobody to disagree with).
    """
    values = normalized(as_list(answers))
    n = len(values)
    if n < 2:
        return 0.0
    same = sum(c * (c - 1) // 2 for c in Counter(values).values())
    pairs = n * (n - 1) // 2
    return (pairs - same) / pairs


def average_disagreement(debates: Sequence[Sequence[Sequence[str | None]]]) -> list[float]:
    """Average disagreement in each iteration across debates (seed 002 Figure 1).

    `debates[d][i]` are the answers of debate d at iteration i. Item i of the result is the
    mean of `disagreement` over the debates that reached iteration i, as a fraction (the
    paper plots it as a percentage). Empty input gives [].
    """
    per_iteration: list[list[float]] = []
    for debate in as_list(debates):
        for i, answers in enumerate(as_list(debate)):
            if len(per_iteration) <= i:
                per_iteration.append([])
            per_iteration[i].append(disagreement(answers))
    return [sum(values) / len(values) for values in per_iteration]


# --- path consistency and MADC ordering (seed 003 Eq. 2, Algorithm 1) -----------------------


def path_consistency(answers: Sequence[str | None]) -> list[float]:
    """For each agent, the share of the other agents giving the same normalized answer.

    Seed 003 Eq. 2: Consistency(P_i,j) = sum_{k != i} Pr(V_i,j = V_k,j). With one observed
    answer per agent, Pr(V_i = V_k) is the indicator 1[V_i = V_k]; dividing the sum by n-1
    keeps it in 0..1 (the argmax and the MADC order, which is all the paper uses it for,
    are unchanged). A lone agent has no peers and scores 0.0. An agent without an answer
    agrees with nobody (and nobody with it): two missing answers are not the same viewpoint.
    """
    values = [norm(a) for a in as_list(answers)]
    counts = Counter(v for v in values if v is not None)
    peers = len(values) - 1
    if peers <= 0:
        return [0.0] * len(values)
    return [(counts[v] - 1) / peers if v is not None else 0.0 for v in values]


def madc_order(labels: list[str], answers: list[str]) -> list[str]:
    """Speaking order of seed 003's Algorithm 1: most consistent agent last.

    The others speak before it in ascending consistency. Ties keep the given order, so
    among equally consistent top agents the later one speaks last; the result is a
    stable ascending sort by consistency. Raises ValueError when the lengths differ
    (a caller bug, not odd data).
    """
    if len(labels) != len(answers):
        raise ValueError(f"{len(labels)} labels but {len(answers)} answers")
    scores = path_consistency(answers)
    order = sorted(range(len(labels)), key=lambda i: scores[i])
    return [labels[i] for i in order]
