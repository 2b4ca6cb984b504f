"""Outcome metrics over rounds: strict/smooth accuracy, agreement, and their AUC.

Source: seed 001 (Wu et al.), Appendix B "Outcome-level Quantitative Metrics".

An answer with parts (a Knight-Knave-Spy assignment, {player: role}) is a dict; a plain
answer (a choice, a number) is one part. Every function here judges ONE instance; the
paper's 1/N sum over instances is the plain mean of these values across debates.
Labels are compared after `normalize_answer`; a missing part is wrong.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ._common import as_list, norm
from .answers import agreement_all, agreement_majority, majority_answer


def _parts(answer: object) -> dict:
    """{part: normalized label or None}; a non-dict answer is the single part None."""
    if isinstance(answer, Mapping):
        return {key: norm(value) for key, value in answer.items()}
    return {None: norm(answer)}


def _scores(pred: object, truth: object) -> list[bool] | None:
    truth_parts = _parts(truth)
    if isinstance(truth, Mapping):
        if not truth_parts:
            return None
    elif truth_parts[None] is None:
        return None
    pred_parts = _parts(pred) if isinstance(pred, Mapping) == isinstance(truth, Mapping) else {}
    return [value is not None and pred_parts.get(key) == value for key, value in truth_parts.items()]


def accuracy_strict(pred: object, truth: object) -> float | None:
    """1.0 when every part of `pred` equals the truth, else 0.0 (seed 001 App. B).

    StrictAccuracy's indicator 1[y_hat_i = y_i] for one instance: for {player: role} dicts,
    all players of `truth` must be assigned correctly (extra players in `pred` are ignored,
    a missing one is wrong). None when there is no truth to judge against.
    """
    scores = _scores(pred, truth)
    if scores is None:
        return None
    return 1.0 if all(scores) else 0.0


def accuracy_smooth(pred: object, truth: object) -> float | None:
    """Share of the parts of `truth` that `pred` gets right (seed 001 App. B).

    SmoothAccuracy's inner term (1/P_i) sum_p 1[y_hat_i,p = y_i,p] for one instance, e.g.
    the share of players whose role is right. A plain answer gives 1.0 or 0.0. None when
    there is no truth to judge against.
    """
    scores = _scores(pred, truth)
    if scores is None:
        return None
    return sum(scores) / len(scores)


def auc(values_per_round: Sequence[float | bool | None]) -> float | None:
    """Area under a per-round curve as seed 001 App. B defines it: (1/T) sum_t value(t).

    Reading taken: the paper's "AUC" is the plain mean over the T rounds (no trapezoid),
    so values in 0..1 give an AUC in 0..1, higher meaning earlier and more sustained.
    Rounds whose value is None (not computable) are left out of T; booleans count as 1/0.
    None when no round has a value.
    """
    values = [float(v) for v in as_list(values_per_round) if isinstance(v, (int, float))]
    if not values:
        return None
    return sum(values) / len(values)


def _agents(answers: object) -> list:
    return as_list(answers)


def majority_prediction(answers: object) -> object:
    """The round-wise majority prediction of seed 001 App. B, part by part.

    `answers` are the agents' answers of one round (a list, or a dict agent -> answer).
    For {player: role} answers the result is {player: majority role or None}, over every
    player any agent named; for plain answers it is the majority answer or None. The majority
    is the initial-state code's clear majority (`process.clear_majority`, seed 001 §6.1): the
    single most common answer held by at least ceil(A/2) of ALL A agents, so an unreadable
    answer counts in A and 1 readable answer of 3 is no majority ("chaos": None). A tie at the
    top gives None too: the paper's supervisor tie-break belongs to the final decision, not to
    the per-round curves (reading taken), so a part without a majority counts as wrong.
    """
    agents = _agents(answers)
    if any(isinstance(a, Mapping) for a in agents):
        players = list(dict.fromkeys(k for a in agents if isinstance(a, Mapping) for k in a))
        return {p: _clear_majority([a.get(p) if isinstance(a, Mapping) else None for a in agents])
                for p in players}
    return _clear_majority(agents)


def _clear_majority(labels: list) -> object:
    top = majority_answer(labels)
    if top is None:
        return None
    held = sum(1 for label in labels if norm(label) == top)
    return top if held >= math.ceil(len(labels) / 2) else None


def _per_part(answers: object, indicator) -> float | None:
    agents = _agents(answers)
    if not agents:
        return None
    if any(isinstance(a, Mapping) for a in agents):
        players = list(dict.fromkeys(k for a in agents if isinstance(a, Mapping) for k in a))
        if not players:
            return None
        hits = [indicator([a.get(p) if isinstance(a, Mapping) else None for a in agents]) for p in players]
        return sum(hits) / len(hits)
    return 1.0 if indicator(agents) else 0.0


def agree_all_share(answers: object) -> float | None:
    """AgreeAll(t) of seed 001 App. B for one instance: (1/P) sum_p 1[all agents agree on p].

    `answers`: the agents' answers of one round ({player: role} dicts, or plain answers,
    where it is 1.0 or 0.0). An agent that left a player out breaks unanimity on it.
    None for no agents.
    """
    return _per_part(answers, agreement_all)


def agree_major_share(answers: object) -> float | None:
    """AgreeMajor(t) of seed 001 App. B for one instance:
    (1/P) sum_p 1[max_l #{a : y_a,p = l} >= ceil(A/2)]. None for no agents."""
    return _per_part(answers, agreement_majority)


def outcome_metrics(rounds: Sequence[object], truth: object = None) -> dict:
    """All of seed 001 App. B's per-round curves and AUCs for one debate.

    `rounds[t]` are the agents' answers at round t (list or dict agent -> answer; answers
    plain or {player: role}). Returns {"strict": [...], "smooth": [...], "agree_all": [...],
    "agree_major": [...]} per round (accuracies from the round-wise majority prediction,
    None without a truth) and "auc_strict", "auc_smooth", "auc_agree_all", "auc_agree_major".
    """
    strict, smooth, agree_all, agree_major = [], [], [], []
    for answers in as_list(rounds):
        prediction = majority_prediction(answers)
        strict.append(accuracy_strict(prediction, truth))
        smooth.append(accuracy_smooth(prediction, truth))
        agree_all.append(agree_all_share(answers))
        agree_major.append(agree_major_share(answers))
    return {
        "strict": strict,
        "smooth": smooth,
        "agree_all": agree_all,
        "agree_major": agree_major,
        "auc_strict": auc(strict),
        "auc_smooth": auc(smooth),
        "auc_agree_all": auc(agree_all),
        "auc_agree_major": auc(agree_major),
    }
