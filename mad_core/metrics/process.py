"""Process measures: where an agent starts, where it ends, and who changed their mind when.

Source: seed 001 (Wu et al.) §6.2 with Figures 4 and 5, and §6.1's "initial chaos".

Initial state of an agent before a debate round (Figure 4: "Ma = majority, Mi = minority,
first C = chaos, second C = correct, and W = wrong"): is the agent's answer held by the
clear majority of the agents, or a minority, or is there no clear majority at all (chaos),
and is the agent's answer correct? The final state after the round is correct or wrong,
which gives Figure 5's 12 transitions (MaC, MaW, MiC, MiW, CC, CW -> C or W).

Granularity (reading taken): the paper debates player by player and "counts for each agent
their initial position before each debate round", so a state is per (agent, player): pass
one player's labels, or use `initial_states_by_player` on whole assignments.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from ._common import as_list, norm

MAJORITY_CORRECT = "majority-correct"
MAJORITY_WRONG = "majority-wrong"
MINORITY_CORRECT = "minority-correct"
MINORITY_WRONG = "minority-wrong"
CHAOS = "chaos"
CHAOS_CORRECT = "chaos-correct"
CHAOS_WRONG = "chaos-wrong"
CORRECT = "correct"
WRONG = "wrong"

INITIAL_STATES: tuple[str, ...] = (MAJORITY_CORRECT, MAJORITY_WRONG, MINORITY_CORRECT, MINORITY_WRONG,
                                   CHAOS_CORRECT, CHAOS_WRONG)
FINAL_STATES: tuple[str, ...] = (CORRECT, WRONG)


def _key(answer: object) -> object:
    """A hashable normalized form: a label, or a sorted tuple of (part, label) for a dict."""
    if isinstance(answer, Mapping):
        items = tuple(sorted(((str(k), norm(v)) for k, v in answer.items()), key=lambda kv: kv[0]))
        return items if any(v is not None for _, v in items) else None
    return norm(answer)


def clear_majority(all_answers: object) -> object:
    """The answer held by a clear majority of the agents, or None (chaos).

    Reading taken of seed 001 §6.1 ("chaotic when no clear majority exists"), with the
    majority criterion of its App. B AgreeMajor: the single most common answer, held by at
    least ceil(A/2) of the A agents given. A tie at the top (a 2-2 split among 4 agents, or
    1-1-1 among 3) is chaos, and so is a plurality short of half (2-1-1-1 among 5).
    Returns the normalized form (a label, or a tuple for a dict answer).
    """
    items = as_list(all_answers)
    counts = Counter(k for k in (_key(a) for a in items) if k is not None)
    ranked = counts.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    top, count = ranked[0]
    return top if count >= math.ceil(len(items) / 2) else None


def final_state(agent_answer: object, truth: object) -> str:
    """"correct" or "wrong" (seed 001 Figure 5's -> C / -> W); no answer or no truth is wrong."""
    mine, target = _key(agent_answer), _key(truth)
    return CORRECT if mine is not None and mine == target else WRONG


def initial_state(agent_answer: object, all_answers: object, truth: object, split_chaos: bool = True) -> str:
    """The agent's state before a debate round (seed 001 §6.2, Figure 4).

    `all_answers` are every agent's answers in that round, this agent's included. Returns
    "majority-correct" / "majority-wrong" when the agent holds the clear majority's answer
    (see `clear_majority`), "minority-correct" / "minority-wrong" when a clear majority
    exists and the agent is not in it, and "chaos-correct" / "chaos-wrong" when there is
    none. The paper splits chaos by correctness (its "CC" state, 12 transitions in
    Figure 5); `split_chaos=False` gives plain "chaos". An agent without an answer is
    wrong and never in the majority; without a truth every answer is wrong.
    """
    correct = final_state(agent_answer, truth) == CORRECT
    majority = clear_majority(all_answers)
    if majority is None:
        if not split_chaos:
            return CHAOS
        return CHAOS_CORRECT if correct else CHAOS_WRONG
    mine = _key(agent_answer)
    if mine is not None and mine == majority:
        return MAJORITY_CORRECT if correct else MAJORITY_WRONG
    return MINORITY_CORRECT if correct else MINORITY_WRONG


def initial_states_by_player(assignments: Mapping, truth: Mapping, split_chaos: bool = True) -> dict:
    """{agent: {player: initial state}} for per-player assignments, seed 001's granularity.

    `assignments` maps agent -> {player: role}; `truth` maps player -> role. Players are
    those of `truth`; an agent that left a player out has no answer for it.
    """
    if not isinstance(assignments, Mapping) or not isinstance(truth, Mapping):
        return {}
    states: dict = {}
    for player, role in truth.items():
        labels = {agent: (a.get(player) if isinstance(a, Mapping) else None) for agent, a in assignments.items()}
        for agent, label in labels.items():
            states.setdefault(agent, {})[player] = initial_state(label, list(labels.values()), role, split_chaos)
    return states


def _final_label(state: object) -> object:
    if isinstance(state, bool):
        return CORRECT if state else WRONG
    return state


def transitions(initial_states: object, final_states: object) -> dict[tuple, int]:
    """Counts of (initial state, final state) pairs (seed 001 §6.2, Figure 5's bars).

    Lists are paired by position (extra items ignored); dicts by key, recursing into nested
    dicts ({agent: {player: state}}), keys present in only one are ignored. A final state
    may be "correct"/"wrong" or a bool (True = correct). Pairs with a None side are skipped.
    Only observed pairs appear; `INITIAL_STATES` x `FINAL_STATES` lists the 12 of the paper.
    """
    counts: Counter = Counter()

    def walk(a: object, b: object) -> None:
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for key in a:
                if key in b:
                    walk(a[key], b[key])
        elif isinstance(a, Mapping) or isinstance(b, Mapping):
            return
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            for x, y in zip(a, b):
                walk(x, y)
        elif a is not None and b is not None and not isinstance(a, (list, tuple)):
            counts[(a, _final_label(b))] += 1

    walk(initial_states, final_states)
    return dict(counts)


def answer_changes(rounds: Sequence[Mapping]) -> list[dict]:
    """Who changed their answer when: [{"agent", "round", "from", "to"}, ...] in round order.

    `rounds[r]` maps agent -> answer at round r. A change compares an agent's normalized
    answer with its last known one, so a round it skipped (or answered with nothing) is not
    a change. Answers that are {player: role} dicts are compared player by player, and each
    change carries a "player" key as well (seed 001's per-player flips). Within a round,
    changes follow the order in which agents first appear.
    """
    rounds = [r if isinstance(r, Mapping) else {} for r in as_list(rounds)]
    labels = list(dict.fromkeys(label for by_agent in rounds for label in by_agent))
    changes: list[dict] = []
    last: dict = {}
    for r, by_agent in enumerate(rounds):
        for label in labels:
            answer = by_agent.get(label)
            if isinstance(answer, Mapping):
                for player, role in answer.items():
                    value = norm(role)
                    key = (label, player)
                    if value is None:
                        continue
                    if key in last and last[key] != value:
                        changes.append({"agent": label, "player": player, "round": r,
                                        "from": last[key], "to": value})
                    last[key] = value
                continue
            value = norm(answer)
            if value is None:
                continue
            if label in last and last[label] != value:
                changes.append({"agent": label, "round": r, "from": last[label], "to": value})
            last[label] = value
    return changes
