"""What a voting rule is: how its ballot is asked for, read and counted (`VotingRule`).

A voting rule is one class in one file of this package (simple_voting.py, approval_voting.py,
ranked_voting.py, cumulative_voting.py): a subclass of `decision.Voting`, which is both a
decision protocol and a `VotingRule`, registered under its name with `@register("protocol",
name)`. Everything the rest of MAD Lab needs from a rule is here, and is looked up by the
protocol's name through the registry:

- `instruction`: what a voter is asked (`prompts.vote_prompt`; "{points}" is the cumulative
  budget, literal braces are doubled);
- `schema(n_solutions, points)`: the JSON schema of a ballot (`schemas.ballot_format`), named
  `ballot_name`;
- `read_text(text, n_solutions, points)`, and `read_json(value, ...)` for the value under
  `json_key` of a reply in the JSON form: the readers (`ballots.parse_ballot`), which return a
  `Ballot` (valid with a 0-based value, or invalid with its reason);
- `score(ballot, n_solutions)`: the points a valid ballot gives each solution (`counting.tally`),
  raising ValueError for a malformed ballot;
- `unit`: what the counted points are (charts: `metrics.vote_breakdown`), and `chart(ballots,
  n_solutions)` for what a chart shows besides them (ranked voting: positions).

This module imports only the registry, so the readers, the counting and the prompts can look a
rule up without importing the rules.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from .. import registry


@dataclass
class Ballot:
    """A parsed ballot: `value` is what `tally` expects (0-based), or None when invalid."""

    value: Any
    valid: bool
    reason: str | None = None


class VotingRule(ABC):
    """How one kind of ballot is asked for, read and counted (see the module docstring)."""

    name = ""  # the protocol's name (set by the registry)
    instruction = ""  # what a voter is asked; "{points}" is the cumulative budget
    unit = ""  # what the counted points of a solution are, for charts ("votes")
    json_key: str | None = None  # the ballot's key in the JSON form; None: `read_text` reads that form too

    @property
    def ballot_name(self) -> str:
        """The name of the ballot's JSON schema ("simple_voting" -> "simple_ballot")."""
        return self.name.replace("_voting", "_ballot")

    @abstractmethod
    def schema(self, n_solutions: int, points: int) -> dict[str, Any]:
        """The JSON schema of a ballot over `n_solutions` (numbered from 1); `points`: the budget."""

    @abstractmethod
    def read_text(self, text: str, n_solutions: int, points: int) -> Ballot:
        """The ballot in a reply that is not in the JSON form."""

    def read_json(self, value: Any, n_solutions: int, points: int) -> Ballot:
        """The ballot in the value of `json_key` of a reply in the JSON form (asked only when
        `json_key` is set)."""
        raise NotImplementedError(f"{type(self).__name__} names a json_key but reads no JSON value")

    @abstractmethod
    def score(self, ballot: Any, n_solutions: int) -> list[float]:
        """Points per solution of one valid ballot; ValueError naming the ballot when malformed."""

    def chart(self, ballots: list, n_solutions: int) -> dict[str, Any]:
        """What a chart of one vote shows besides the points (`metrics.vote_breakdown`)."""
        return {}


def _component(name: Any) -> Any:
    """The protocol registered as `name`, or None."""
    if not isinstance(name, str):
        return None
    try:
        return registry.get("protocol", name)
    except registry.UnknownComponent:
        return None


def _is_rule(component: Any) -> bool:
    return isinstance(component, type) and issubclass(component, VotingRule)


def voting_rule(name: str | VotingRule) -> VotingRule:
    """The voting rule registered as protocol `name` (a rule is returned as it is); ValueError
    naming the voting protocols when `name` is none."""
    if isinstance(name, VotingRule):
        return name
    component = _component(name)
    if not _is_rule(component):
        raise ValueError(f"unknown voting protocol {name!r}; valid names: {', '.join(voting_rules())}")
    return component()


def ballot_rule(name: Any) -> VotingRule | None:
    """The rule of the ballots protocol `name` asks for (its `ballot`: a voting rule's own; the
    judge's pick of a solution), or None when it asks for none or no such protocol is registered."""
    make = getattr(_component(name), "ballot", None)
    return make() if make is not None else None


def voting_rules() -> list[str]:
    """The names of the registered voting rules, in the registry's order."""
    return [name for name in registry.names("protocol") if _is_rule(registry.get("protocol", name))]


def ballot_protocols() -> list[str]:
    """The names of the registered protocols that ask for a ballot, in the registry's order."""
    return [name for name in registry.names("protocol") if getattr(registry.get("protocol", name), "ballot", None)]
