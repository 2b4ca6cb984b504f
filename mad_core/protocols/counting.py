"""Counting rules of the decision protocols (pure: no model, no I/O).

Voting protocols (seed 000 §3.2 and Appendix F) turn a list of ballots into scores per
solution; the solution with the single highest score wins. When two or more solutions share
the top score there is no winner: the debate runs another round and votes again.

Consensus protocols count how many agents agree with the current solution; consensus is
reached when the share of agreeing agents is at least the protocol's fraction (unanimity:
every agent agrees). Seed 000 contradicts itself here: §3.2 says "more than 50 %" / "more
than 66 %", its Appendix C "requires 50 %" / "66 % of the agents to agree"; we follow its
authors' code (MALLM's ThresholdConsensus: agreeing / agents >= 0.5, 0.66, 1.0), so 2 of 4
agents are a majority and 2 of 3 a supermajority.

Solutions are 0-based indices here. Turning model text into ballots is done in `ballots`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

VOTING_PROTOCOLS: tuple[str, ...] = (
    "simple_voting",
    "approval_voting",
    "ranked_voting",
    "cumulative_voting",
)
CONSENSUS_PROTOCOLS: tuple[str, ...] = (
    "majority_consensus",
    "supermajority_consensus",
    "unanimity_consensus",
)

# Points each agent may spread in cumulative voting. Seed 000's prompt (Appendix E.2,
# Figure 18) asks for 10 points; the prose of its §3.2 and Appendix F says 25. We follow
# the prompt, which is what the agents actually saw.
CUMULATIVE_POINTS = 10


@dataclass
class TallyResult:
    """Outcome of counting one round of ballots."""

    winner: int | None  # 0-based index; None on a tie or when no ballot was valid
    scores: list[float]  # one score per solution
    tied: list[int] = field(default_factory=list)  # indices sharing the top score, if tied
    valid: int = 0
    invalid: int = 0


# --- ballot validation -------------------------------------------------------------------

def _check_index(index: object, n_solutions: int, ballot: object) -> int:
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"ballot {ballot!r}: {index!r} is not a solution index (int)")
    if not 0 <= index < n_solutions:
        raise ValueError(
            f"ballot {ballot!r}: solution index {index} is out of range 0..{n_solutions - 1}"
        )
    return index


def _check_sequence(ballot: object) -> None:
    if not isinstance(ballot, (list, tuple)):
        raise ValueError(f"ballot {ballot!r}: expected a list of solution indices")


# --- one scoring function per voting protocol: ballot -> points per solution -------------

def _simple_points(ballot: object, n_solutions: int) -> list[float]:
    points = [0.0] * n_solutions
    points[_check_index(ballot, n_solutions, ballot)] = 1.0
    return points


def _approval_points(ballot: object, n_solutions: int) -> list[float]:
    _check_sequence(ballot)
    points = [0.0] * n_solutions
    for index in ballot:  # a repeated approval still counts once
        points[_check_index(index, n_solutions, ballot)] = 1.0
    return points


RANKED_DEPTH = 5  # seed 000 App. E.2 asks for "up to 5 rankings"; MALLM scores min(5, solutions) - position


def _ranked_points(ballot: object, n_solutions: int) -> list[float]:
    """MALLM's ranked count: the solution at position p (0 = best) earns min(5, n_solutions) - p points,
    unranked solutions nothing, positions past the fifth nothing (a partial ranking counts as given).

    Seed 000 App. C says only "adding the ranking indices ... best cumulative rank", which leaves
    partial rankings open; we follow MALLM's `RankedVoting.process_results` (the authors' code). So
    the ballots [1, 2, 3] and [3] (1-based) give solution 1 three points and solution 3 one plus three: 3 wins."""
    _check_sequence(ballot)
    if len(set(ballot)) != len(ballot):
        raise ValueError(f"ballot {ballot!r}: a solution is ranked more than once")
    points = [0.0] * n_solutions
    for position, index in enumerate(ballot):
        points[_check_index(index, n_solutions, ballot)] = float(max(0, min(RANKED_DEPTH, n_solutions) - position))
    return points


def _cumulative_points(ballot: object, n_solutions: int) -> list[float]:
    if not isinstance(ballot, dict):
        raise ValueError(f"ballot {ballot!r}: expected a dict of solution index -> points")
    points = [0.0] * n_solutions
    for index, given in ballot.items():
        _check_index(index, n_solutions, ballot)
        if isinstance(given, bool) or not isinstance(given, int) or given < 0:
            raise ValueError(f"ballot {ballot!r}: points must be non-negative ints, got {given!r}")
        points[index] += given
    return points


_SCORERS: dict[str, Callable[[object, int], list[float]]] = {
    "simple_voting": _simple_points,
    "approval_voting": _approval_points,
    "ranked_voting": _ranked_points,
    "cumulative_voting": _cumulative_points,
}

_CONSENSUS_FRACTIONS: dict[str, float] = {
    "majority_consensus": 0.5,
    # 0.66, not 2/3: as in the paper and MALLM, 2 of 3 agents (0.6667) is a supermajority.
    "supermajority_consensus": 0.66,
    "unanimity_consensus": 1.0,
}


def _lookup(registry: dict, name: str, kind: str):
    try:
        return registry[name]
    except KeyError:
        raise ValueError(
            f"unknown {kind} protocol {name!r}; valid names: {', '.join(registry)}"
        ) from None


def tally(name: str, ballots: list, n_solutions: int) -> TallyResult:
    """Count `ballots` under voting protocol `name` over `n_solutions` solutions.

    `None` entries are invalid ballots (counted, otherwise ignored). A malformed ballot
    raises ValueError: producing well-formed ballots is the parser's job.
    """
    scorer = _lookup(_SCORERS, name, "voting")
    if n_solutions < 1:
        raise ValueError(f"n_solutions must be at least 1, got {n_solutions}")
    scores = [0.0] * n_solutions
    valid = invalid = 0
    for ballot in ballots:
        if ballot is None:
            invalid += 1
            continue
        for index, points in enumerate(scorer(ballot, n_solutions)):
            scores[index] += points
        valid += 1
    if valid == 0:
        return TallyResult(winner=None, scores=scores, tied=[], valid=0, invalid=invalid)
    top = max(scores)
    leaders = [i for i, score in enumerate(scores) if score == top]
    if len(leaders) > 1:
        return TallyResult(winner=None, scores=scores, tied=leaders, valid=valid, invalid=invalid)
    return TallyResult(winner=leaders[0], scores=scores, tied=[], valid=valid, invalid=invalid)


def consensus_reached(name: str, agree: list[bool], threshold: float | None = None) -> bool:
    """Whether the agreeing share of `agree` satisfies consensus protocol `name`.

    The share must be at least the protocol's fraction (or `threshold` when given: MALLM's
    `>=`, see the module docstring); a fraction of 1.0 means every agent must agree. Entries that are not truthy
    (False, None) count as not agreeing. No votes at all is never a consensus.
    """
    fraction = _lookup(_CONSENSUS_FRACTIONS, name, "consensus")
    if threshold is not None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must lie in 0..1, got {threshold}")
        fraction = threshold
    if not agree:
        return False
    agreeing = sum(1 for a in agree if a)
    if fraction >= 1.0:
        return agreeing == len(agree)
    return agreeing / len(agree) >= fraction
