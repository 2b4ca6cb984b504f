"""One registry for every pluggable component: paradigms, protocols, response generators, orderings.

Components register themselves with a decorator where they are defined, so adding one is a
single new class or function and never an edit of an if-chain. Unknown names fail with the
list of valid ones.

This module imports nothing of the project. The built-in components are the modules listed
once in `BUILTIN`, imported by name the first time the registry is asked (the way `llm` loads
its default plugins); importing a module runs its `@register` decorators. Names are listed in
the order of `BUILTIN` (then in the order registered), whichever module happened to be imported
first; components registered from elsewhere (a test, a plugin) come after the built-ins.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

KINDS = ("paradigm", "protocol", "response_generator", "ordering")

# The modules that register the built-in components, relative to this package, in listing order.
BUILTIN = (
    ".generators",
    ".ordering",
    ".paradigms",
    ".protocols.simple_voting",
    ".protocols.approval_voting",
    ".protocols.ranked_voting",
    ".protocols.cumulative_voting",
    ".protocols.consensus",
    ".protocols.solution_counting",
    ".protocols.convergence",
    ".protocols.judge",
    ".kks_mode",
)
_RANK = {importlib.util.resolve_name(module, __package__): rank for rank, module in enumerate(BUILTIN)}

_REGISTRY: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
_loaded = False


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
    """The names registered under `kind`: the built-ins in `BUILTIN`'s order, then the others."""
    _load_builtin()
    return _ordered(_REGISTRY[kind])


def components() -> dict[str, list[str]]:
    """Every registered component name, by kind."""
    _load_builtin()
    return {kind: _ordered(items) for kind, items in _REGISTRY.items()}


def _ordered(items: dict[str, Any]) -> list[str]:
    """`items`' names by the rank of the module that defines each (sorted is stable: within one
    module, the order they were registered in)."""
    return sorted(items, key=lambda name: _RANK.get(str(getattr(items[name], "__module__", "")), len(_RANK)))


def _load_builtin() -> None:
    """Import the built-in modules (once; a module already imported costs nothing)."""
    global _loaded
    if _loaded:
        return
    for module in BUILTIN:
        importlib.import_module(module, __package__)
    _loaded = True
