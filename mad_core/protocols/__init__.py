"""Decision protocols: how a debate reaches its final answer.

Counting (`tally`, `consensus_reached`) is pure and lives in `counting`; turning model text
into ballots lives in `ballots`; the protocol classes that ask agents and apply the rules
live in `decision`.
"""
from .counting import TallyResult, consensus_reached, tally  # noqa: F401
