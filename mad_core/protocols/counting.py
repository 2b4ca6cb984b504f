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

Solutions are 0-based indices here. Turning model text into ballots is done in `ballots`. The
points a ballot gives are its voting rule's `score` (one file per rule: simple_voting.py, ...),
a consensus protocol's share its `fraction` (consensus.py); `tally` and `consensus_reached`
find them by the protocol's name through the registry.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import registry
from .rule import VotingRule, voting_rule, voting_rules

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


# --- ballot validation, shared by the rules' `score` -----------------------------------------

def check_index(index: object, n_solutions: int, ballot: object) -> int:
    """`index` as a solution index of `ballot`; ValueError naming the ballot when it is none."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"ballot {ballot!r}: {index!r} is not a solution index (int)")
    if not 0 <= index < n_solutions:
        raise ValueError(
            f"ballot {ballot!r}: solution index {index} is out of range 0..{n_solutions - 1}"
        )
    return index


def check_sequence(ballot: object) -> None:
    """ValueError unless `ballot` is a list (or tuple) of solution indices."""
    if not isinstance(ballot, (list, tuple)):
        raise ValueError(f"ballot {ballot!r}: expected a list of solution indices")


def __getattr__(name: str) -> Any:
    """VOTING_PROTOCOLS / CONSENSUS_PROTOCOLS: the names registered now (voting rules; protocols
    with a consensus `fraction`), in the registry's order."""
    if name == "VOTING_PROTOCOLS":
        return tuple(voting_rules())
    if name == "CONSENSUS_PROTOCOLS":
        return tuple(_consensus_protocols())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _consensus_protocols() -> list[str]:
    return [name for name in registry.names("protocol")
            if isinstance(getattr(registry.get("protocol", name), "fraction", None), float)]


def tally(name: str | VotingRule, ballots: list, n_solutions: int) -> TallyResult:
    """Count `ballots` under voting protocol `name` (a rule's name, or the rule) over `n_solutions` solutions.

    `None` entries are invalid ballots (counted, otherwise ignored). A malformed ballot
    raises ValueError: producing well-formed ballots is the parser's job.
    """
    scorer = voting_rule(name).score
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
    """Whether the agreeing share of `agree` satisfies consensus protocol `name` (its `fraction`).

    The share must be at least the protocol's fraction (or `threshold` when given: MALLM's
    `>=`, see the module docstring); a fraction of 1.0 means every agent must agree. Entries that are not truthy
    (False, None) count as not agreeing. No votes at all is never a consensus.
    """
    valid = _consensus_protocols()
    if name not in valid:
        raise ValueError(f"unknown consensus protocol {name!r}; valid names: {', '.join(valid)}")
    return share_reached(agree, registry.get("protocol", name).fraction, threshold)


def share_reached(agree: list[bool], fraction: float, threshold: float | None = None) -> bool:
    """Whether the agreeing share of `agree` is at least `fraction`, or `threshold` when given
    (see `consensus_reached`)."""
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
