"""What a paradigm (and the KKS mode) may ask of the running debate: the `ParadigmContext` port.

A paradigm that plans its own rounds (`Paradigm.plan` / `Paradigm.messages`, e.g. the KKS
per-player debate in `kks_mode.py`) reads the debate through this interface and nothing else:
the settings, the round, the agents, every turn so far, the personas, and the moderator
messages waiting for an agent. The engine side implements it (`context.DebateContext`, which
also implements the protocols' `protocols.decision.DecisionContext`); a test may hand a
paradigm any object with these members.

A leaf module: it imports nothing of the project at run time.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .events import Event, Turn

Emit = Callable[["Event"], None]  # hands one event to the debate's listeners and its consumer


class ParadigmContext(Protocol):
    """The running debate as a paradigm sees it (read-only, besides taking moderator messages)."""

    @property
    def cfg(self) -> Any:
        """The DebateConfig."""

    @property
    def round(self) -> int:
        """The current round (1-based; 0 before the first)."""

    @property
    def labels(self) -> list[str]:
        """The agents, in configured order."""

    @property
    def turns(self) -> list[Turn]:
        """Every turn so far (any kind, any status), in the order they were planned."""

    @property
    def personas(self) -> dict[str, str]:
        """label -> persona (a copy)."""

    def take_moderator(self, agent: str) -> list[str]:
        """The moderator messages waiting for `agent` (handed over once: they reach its next prompt)."""
