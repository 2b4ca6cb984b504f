"""What a backend (a provider module's ``generate(request)``) works with.

``Request`` (one generation request, the provider prefix stripped), ``Cancellation`` and
``current_cancellation()`` (set when ``call_model`` abandons the attempt a backend serves),
``split_pieces``/``stream_text`` (a text as streamed word pieces), ``whole_text`` (the same text
asked for unstreamed: one wait, one piece) and ``missing_package``.
Imports nothing of the project, so provider modules can import it without a circle.
"""
from __future__ import annotations

import importlib.util
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


class Cancellation:
    """Set when ``call_model`` abandons the attempt a backend is serving.

    That happens on a timeout, a stop, or an exception in a caller's callback. A backend
    gets the one for its attempt with ``current_cancellation()`` (in ``generate``, before
    its first yield) and stops at its next token once it is set.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` s, waking early when set; True if set."""
        return self._event.wait(timeout)

    def set(self) -> None:
        with self._lock:
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_set(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once when set (at once if it already is), e.g. ``event.set``."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()


_attempt_local = threading.local()


def current_cancellation() -> Cancellation:
    """The cancellation of the attempt this thread is pulling (a never-set one outside ``call_model``)."""
    cancel = getattr(_attempt_local, "cancel", None)
    return cancel if cancel is not None else Cancellation()


def bind_cancellation(cancel: Cancellation) -> None:
    """Make ``cancel`` the cancellation of the attempt this thread pulls (``current_cancellation``)."""
    _attempt_local.cancel = cancel


@dataclass
class Request:
    """One generation request as a backend sees it (the provider prefix already stripped)."""

    model: str
    messages: list[dict]
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    metadata: dict = field(default_factory=dict)
    # OpenAI json_schema response_format (``call_model``'s ``response_format``), or None.
    response_format: dict | None = None
    # Extra request fields (``call_model``'s ``extra``, e.g. llama.cpp's ``repeat_penalty``).
    extra: dict = field(default_factory=dict)
    # False: the caller asked for the whole reply at once (litellm's ``stream=False``); a backend
    # may then produce it whole instead of piece by piece.
    stream: bool = True


def split_pieces(text: str) -> list[str]:
    """Split a text into word pieces that keep their whitespace; ``"".join`` gives it back."""
    return re.findall(r"\s*\S+|\s+", text)


def stream_text(
    text: str, *, token_delay: float = 0.0, first_token_delay: float = 0.0, cancel: Cancellation | None = None,
    steady: bool = False,
) -> Iterator[str]:
    """Yield ``text`` as word pieces, optionally pausing before the first and between pieces.

    With ``cancel``, the pauses end early and nothing more is yielded once it is set. With
    ``steady``, piece k is due ``first_token_delay + k * token_delay`` after the first
    ``next``, as a server streams whatever time its client takes per piece; otherwise each
    pause starts when the previous piece was taken.
    """
    cancel = cancel or Cancellation()
    started = time.monotonic()
    for index, piece in enumerate(split_pieces(text)):
        if steady:
            delay = started + first_token_delay + index * token_delay - time.monotonic()
        else:
            delay = first_token_delay if index == 0 else token_delay
        if cancel.wait(delay) if delay > 0 else cancel.is_set():
            return
        yield piece


def whole_text(
    text: str, *, token_delay: float = 0.0, first_token_delay: float = 0.0, cancel: Cancellation | None = None,
) -> Iterator[str]:
    """``text`` in one piece, after the time ``stream_text`` would have taken to yield all of its
    pieces to a caller that takes each at once (``first_token_delay`` + one ``token_delay`` per
    further piece); nothing once ``cancel`` is set. An unstreamed reply: one wait, one piece."""
    cancel = cancel or Cancellation()
    pieces = split_pieces(text)
    delay = first_token_delay + token_delay * max(len(pieces) - 1, 0) if pieces else 0.0
    if cancel.wait(delay) if delay > 0 else cancel.is_set():
        return
    if text:
        yield text


def missing_package(module: str, package: str) -> str | None:
    """A message if ``module`` cannot be imported, without importing it."""
    if importlib.util.find_spec(module) is None:
        return f"The Python package {package} is not installed."
    return None
