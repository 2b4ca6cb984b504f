"""Decision protocols: how a debate reaches its final answer.

The interface is `decision` (`Protocol`, `Outcome`, `DecisionContext`, `Voting`) and `rule`
(`VotingRule`: what a voting rule holds); each protocol is one file here that registers itself
(simple_voting.py, approval_voting.py, ranked_voting.py, cumulative_voting.py, consensus.py,
solution_counting.py, convergence.py, judge.py), listed once in `registry.BUILTIN`. Counting
(`tally`, `consensus_reached`) lives in `counting`; the pieces that turn model text into
ballots, and `parse_ballot`, in `ballots`; the JSON schemas of short replies in `schemas`.
"""
from .counting import TallyResult, consensus_reached, tally  # noqa: F401
