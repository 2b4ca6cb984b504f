"""Speaking orders (seed 003): fixed, random, MADC, truth first / truth last.

An ordering is a function `(labels, previous_answers, reference, rng) -> labels in speaking
order`, called at the start of every round. `previous_answers` maps each agent to its answer
in the previous round (empty in the first round), so orders that depend on answers fall back
to the configured order until answers exist.
"""
from __future__ import annotations

import random

from .answers import normalize_answer
from .config import ConfigError
from .metrics import madc_order
from .registry import register


@register("ordering", "fixed")
def fixed(labels: list[str], previous: dict[str, str], reference: str | None, rng: random.Random) -> list[str]:
    """Configured order, every round."""
    return list(labels)


@register("ordering", "random")
def shuffled(labels: list[str], previous: dict[str, str], reference: str | None, rng: random.Random) -> list[str]:
    """A seeded random order drawn anew each round (seed 003 draws once per debate; round 1 is that draw)."""
    order = list(labels)
    rng.shuffle(order)
    return order


@register("ordering", "madc")
def madc(labels: list[str], previous: dict[str, str], reference: str | None, rng: random.Random) -> list[str]:
    """Seed 003 Algorithm 1: the agent whose answer most others share speaks last."""
    if not previous:
        return list(labels)
    return madc_order(list(labels), [previous.get(label, "") for label in labels])


def _truth_split(labels: list[str], previous: dict[str, str], reference: str | None) -> tuple[list[str], list[str]]:
    truth = normalize_answer(reference or "")
    right = [lb for lb in labels if lb in previous and normalize_answer(previous[lb]) == truth]
    return right, [lb for lb in labels if lb not in right]


def _needs_reference(cfg) -> None:
    if not cfg.reference:
        raise ConfigError("reference", f"ordering {cfg.ordering!r} needs a reference answer")


@register("ordering", "truth_first")
def truth_first(labels: list[str], previous: dict[str, str], reference: str | None, rng: random.Random) -> list[str]:
    """Agents currently holding the reference answer speak first."""
    right, wrong = _truth_split(labels, previous, reference)
    return right + wrong


@register("ordering", "truth_last")
def truth_last(labels: list[str], previous: dict[str, str], reference: str | None, rng: random.Random) -> list[str]:
    """Agents currently holding the reference answer speak last (seed 003's best allocation)."""
    right, wrong = _truth_split(labels, previous, reference)
    return wrong + right


truth_first.check_config = _needs_reference
truth_last.check_config = _needs_reference
