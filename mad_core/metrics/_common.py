"""Helpers shared by the metric submodules: normalizing answers without ever raising."""
from __future__ import annotations

from collections.abc import Iterable

from ..answers import normalize_answer


def norm(value: object) -> str | None:
    """The normalized answer, or None for no answer (None, or text that normalizes to "").

    Non-text labels (numbers, enums) are compared through their `str`, so a caller may pass
    ints for choices or roles without any of these functions raising.
    """
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    try:
        normalized = normalize_answer(text)
    except Exception:  # defensive: a metric must never take a page down
        normalized = text.strip().lower()
    return normalized or None


def normalized(values: Iterable[object] | None) -> list[str]:
    """The normalized answers that exist, in order (missing answers dropped)."""
    if values is None:
        return []
    try:
        items = list(values)
    except TypeError:
        return []
    return [v for v in (norm(x) for x in items) if v is not None]


def as_list(values: object) -> list:
    """`values` as a list; a dict gives its values; anything else not iterable gives []."""
    if values is None or isinstance(values, (str, bytes)):
        return []
    if isinstance(values, dict):
        return list(values.values())
    try:
        return list(values)  # type: ignore[call-overload]
    except TypeError:
        return []
