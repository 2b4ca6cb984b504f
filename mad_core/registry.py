"""One registry for every pluggable component: paradigms, protocols, response generators, orderings.

Components register themselves with a decorator where they are defined, so adding one is a
single new class or function and never an edit of an if-chain. Unknown names fail with the
list of valid ones.
"""
from __future__ import annotations

from typing import Any, Callable

KINDS = ("paradigm", "protocol", "response_generator", "ordering")

_REGISTRY: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}


class UnknownComponent(ValueError):
    """A name that no component of the asked kind is registered under."""

    def __init__(self, kind: str, name: str):
        self.kind, self.name = kind, name
        valid = ", ".join(sorted(_REGISTRY.get(kind, {}))) or "(none)"
        super().__init__(f"unknown {kind} {name!r}; valid choices: {valid}")


def register(kind: str, name: str) -> Callable[[Any], Any]:
    """Decorator: file `obj` under `kind`/`name` and give it a `.name` attribute."""
    if kind not in _REGISTRY:
        raise ValueError(f"unknown component kind {kind!r}; valid kinds: {', '.join(KINDS)}")

    def deco(obj: Any) -> Any:
        _REGISTRY[kind][name] = obj
        try:
            obj.name = name
        except (AttributeError, TypeError):
            pass
        return obj

    return deco


def get(kind: str, name: str) -> Any:
    """The component registered as `kind`/`name`, or UnknownComponent."""
    _load_builtin()
    try:
        return _REGISTRY[kind][name]
    except KeyError:
        raise UnknownComponent(kind, name) from None


def names(kind: str) -> list[str]:
    _load_builtin()
    return list(_REGISTRY[kind])


def components() -> dict[str, list[str]]:
    """Every registered component name, by kind."""
    _load_builtin()
    return {kind: list(items) for kind, items in _REGISTRY.items()}


def _load_builtin() -> None:
    # Importing the modules runs their @register decorators.
    from . import generators, kks_mode, ordering, paradigms  # noqa: F401
    from .protocols import decision  # noqa: F401
