"""The ``callable`` provider: plain Python functions called through litellm like any model.

``register_callable(fn)`` returns a model name ``callable/<name>``; a call to it runs
``fn(messages)`` and streams the returned text as word pieces. Useful for tests and for
deterministic or rule-based "agents".

A plain function cannot be interrupted: when ``call_model``'s timeout abandons a call
that is still inside ``fn``, the call is reported as a timeout at once, ``fn`` keeps its
helper thread until it returns, and its reply is then dropped (nothing of it is streamed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from mad_core.models.provider_kit import Request, current_cancellation, stream_text

_functions: dict[str, Callable[[list[dict]], str]] = {}
_lock = threading.Lock()


def register_callable(fn: Callable[[list[dict]], str], name: str | None = None) -> str:
    """Register ``fn(messages) -> str`` and return its model name ``callable/<name or id>``."""
    if not callable(fn):
        raise TypeError("fn must be callable")
    name = name or f"fn-{id(fn):x}"
    if "/" in name or name != name.strip():
        raise ValueError(f"invalid callable name {name!r}")
    with _lock:
        _functions[name] = fn
    return f"callable/{name}"


def unregister_callable(name: str) -> None:
    """Forget ``name`` (with or without its ``callable/`` prefix)."""
    with _lock:
        _functions.pop(name.removeprefix("callable/"), None)


def callable_names() -> list[str]:
    with _lock:
        return sorted(_functions)


def check(name: str) -> str | None:
    """None if ``callable/<name>`` is registered, else a message listing those that are."""
    if name in callable_names():
        return None
    return f"Unknown callable {name!r}. Registered callables: {', '.join(callable_names()) or '(none)'}."


def generate(request: Request) -> Iterator[str]:
    with _lock:
        fn = _functions.get(request.model)
    if fn is None:
        raise ValueError(check(request.model))
    text = fn(request.messages)
    if not isinstance(text, str):
        raise TypeError(f"callable/{request.model} returned {type(text).__name__}, not str")
    yield from stream_text(text, cancel=current_cancellation())
