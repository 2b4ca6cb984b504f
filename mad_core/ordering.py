"""Speaking orders (seed 003): fixed, random, MADC, truth first / truth last.

One small class per ordering, registered by name; the engine makes one per debate
(`Ordering(cfg, rng)`) and asks `order(labels, previous)` at the start of every round.
`previous` maps each agent to its answer in the previous round (empty in the first round), so
orders that depend on answers keep the configured order until answers exist.

What an order means (seed 003 §3, Fig. 2): the position of each agent's viewpoint. In
sequential paradigms it is who speaks when; in simultaneous ones (everyone answers at once)
it is the order in which the previous round's answers stand in every agent's prompt — the
engine presents turns in this order, never in the order concurrent calls happened to end.
"""
from __future__ import annotations

import random

from .answers import normalize_answer
from .config import ConfigError
from .metrics import madc_order
from .registry import register
from .tasks.answer_types import DebateAnswerType, answer_key, is_correct


class Ordering:
    """Base: the configured order, every round."""

    def __init__(self, cfg, rng: random.Random):
        self.cfg, self.rng = cfg, rng

    def order(self, labels: list[str], previous: dict[str, str]) -> list[str]:
        return list(labels)


@register("ordering", "fixed")
class Fixed(Ordering):
    """Configured order, every round (seed 003 "Fixed": positions never change)."""


@register("ordering", "random")
class Random(Ordering):
    """Seed 003 "Random": roles are allocated at random once, before the debate; then fixed.

    Seeded by the debate seed, so a debate with a seed is reproducible."""

    def __init__(self, cfg, rng: random.Random):
        super().__init__(cfg, rng)
        self._drawn: list[str] | None = None

    def order(self, labels: list[str], previous: dict[str, str]) -> list[str]:
        if self._drawn is None:
            self._drawn = list(labels)
            self.rng.shuffle(self._drawn)
        return list(self._drawn)


@register("ordering", "madc")
class Madc(Ordering):
    """Seed 003 Algorithm 1: ordered by path consistency of the previous round, most consistent last."""

    def order(self, labels: list[str], previous: dict[str, str]) -> list[str]:
        if not previous:
            return list(labels)
        # Path consistency over the answers as the debate's answer type reads them ("18 apples" = "18").
        kind, options = self.cfg.answer_type or "text", self.cfg.answer_options
        keys = [answer_key(kind, previous[label], options) if label in previous else None for label in labels]
        return madc_order(list(labels), keys)


def holds_reference(cfg, text: str | None) -> bool:
    """Whether `text` holds the reference answer, judged as the metrics judge it (`is_correct` with the
    debate's answer type: "18 apples" holds 18, "1.5 m/s" holds 1.5); with answer_type "text", equal
    `normalize_answer` forms (as before)."""
    kind = DebateAnswerType(cfg.answer_type or "text", list(cfg.answer_options or []) or None)
    if kind.kind == "text":
        return normalize_answer(text or "") == normalize_answer(cfg.reference or "")
    return is_correct(kind.kind, text, cfg.reference, **kind.keywords) is True


class _ByTruth(Ordering):
    """Agents holding the reference answer in the previous round go to one end."""

    truth_last = True

    @staticmethod
    def check_config(cfg) -> None:
        if not cfg.reference:
            raise ConfigError("reference", f"ordering {cfg.ordering!r} needs a reference answer")

    def order(self, labels: list[str], previous: dict[str, str]) -> list[str]:
        right = [lb for lb in labels if lb in previous and holds_reference(self.cfg, previous[lb])]
        wrong = [lb for lb in labels if lb not in right]
        return wrong + right if self.truth_last else right + wrong


@register("ordering", "truth_first")
class TruthFirst(_ByTruth):
    """Agents currently holding the reference answer speak (stand) first."""

    truth_last = False


@register("ordering", "truth_last")
class TruthLast(_ByTruth):
    """Agents currently holding the reference answer speak (stand) last (seed 003's best allocation)."""
