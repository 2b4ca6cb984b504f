"""One streamed attempt of a model call: pulled in a helper thread (``_Pump``), bounded by the
model's own time (``_Clock``, ``StreamLimits``), cut when it repeats itself (``_Repeats``).

``stream_once`` returns an ``Attempt``: its text, usage, time to the first piece, and the
model error that ended it (callback errors propagate). ``calling.call_model`` runs the attempts;
``complete.complete_once`` is the unstreamed attempt (one response, no pieces), which shares
``Attempt``, ``_Repeats`` and ``_route`` with this one.
"""
from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mad_core.models import router
from mad_core.models.error_text import seconds_text
from mad_core.models.errors import EmptyReplyError
from mad_core.models.limits import StreamLimits
from mad_core.models.loader import load_litellm
from mad_core.models.names import CUSTOM_PROVIDERS, provider_module, split_name
from mad_core.models.provider_kit import Cancellation, bind_cancellation


@dataclass
class Attempt:
    text: str = ""
    usage: Any = None
    first_token_s: float | None = None
    interrupted: bool = False
    error: BaseException | None = None
    note: str | None = None  # what was wrong with a stream that ended without an error


class _Pump:
    """Pulls one attempt's stream in a helper thread, one chunk per ``next`` call.

    The stream is opened at once; after that the model advances only when ``next`` asks
    (as a plain loop would), so a caller blocked in ``should_stop`` holds the model back.
    ``next(timeout)`` waits at most ``timeout`` seconds. ``abandon()`` sets the attempt's
    ``Cancellation``; the helper thread closes the stream (an HTTP connection, which frees
    a llama-server slot; an in-process backend's lock) as soon as the backend hands control
    back to it, since a generator can only be closed by the thread that runs it.
    """

    def __init__(self, open_stream: Callable[[], Any]):
        self.cancel = Cancellation()
        self._wanted = threading.Semaphore(0)
        self._items: queue.SimpleQueue = queue.SimpleQueue()
        thread = threading.Thread(target=self._run, args=(open_stream,), name="madlab-model-stream", daemon=True)
        thread.start()

    def _run(self, open_stream: Callable[[], Any]) -> None:
        bind_cancellation(self.cancel)
        stream = None
        try:
            stream = open_stream()
            chunks = iter(stream)
            while self._wanted.acquire() and not self.cancel.is_set():
                try:
                    self._items.put(("chunk", next(chunks)))
                except StopIteration:
                    self._items.put(("end", None))
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as the attempt's error
            self._items.put(("error", exc))
        finally:
            if stream is not None:
                _close_stream(stream)

    def next(self, timeout: float | None) -> tuple[str, Any]:
        """``("chunk", chunk)``, ``("end", None)``, ``("error", exc)`` or ``("timeout", None)``."""
        self._wanted.release()
        try:
            return self._items.get(timeout=None if timeout is None else max(timeout, 0.0))
        except queue.Empty:
            return "timeout", None

    def abandon(self) -> None:
        self.cancel.set()
        self._wanted.release()  # wakes the helper thread if it waits for a request


class _Clock:
    """The model's time in one attempt: waits added up, and the wait since the last piece."""

    def __init__(self, limits: StreamLimits):
        self.limits = limits
        self.waited = 0.0
        self.since_piece = 0.0
        self.pieces = 0  # chunks received
        self.hit: str | None = None  # the bound that would end the next wait

    def allowance(self) -> float | None:
        """How long the next wait may last (None: no bound), and which bound that is (``hit``)."""
        gap = self.limits.first_piece if self.pieces == 0 else self.limits.idle
        bounds = [(gap - self.since_piece, "first_piece" if self.pieces == 0 else "idle")] if gap is not None else []
        if self.limits.total is not None:
            bounds.append((self.limits.total - self.waited, "total"))
        if not bounds:
            return None
        allowance, self.hit = min(bounds)
        return allowance

    def add(self, seconds: float, got_chunk: bool) -> None:
        self.waited += seconds
        self.since_piece = 0.0 if got_chunk else self.since_piece + seconds
        self.pieces += got_chunk

    def timeout(self, model: str, pieces: int) -> BaseException:
        """The ``litellm.Timeout`` that names the bound hit, after ``pieces`` pieces of text."""
        limits, after = self.limits, f"after {pieces} piece{'s' * (pieces != 1)}"
        if limits.whole_reply:
            within = f"within {seconds_text(limits.total)} s"
            message = (f"the reply stalled {after} and did not finish {within}" if pieces else f"no reply {within}")
        elif self.hit == "first_piece":
            message = f"no first piece within {seconds_text(limits.first_piece)} s"
        elif self.hit == "idle":
            message = f"no new piece for {seconds_text(limits.idle)} s ({after})"
        else:
            message = f"the whole reply passed the {seconds_text(limits.total)} s cap ({after})"
        return load_litellm().Timeout(message=message, model=model, llm_provider=split_name(model)[0])


def stream_once(model, messages, options, on_token, should_stop, started, limits: StreamLimits) -> Attempt:
    """One streamed attempt, within ``limits`` (the model's time only: see ``StreamLimits``).

    Model errors (a timeout included) are returned in ``error``; callback errors propagate.
    A stream cut for repeating itself ends without an error, with a ``note``.
    """
    attempt = Attempt()
    parts: list[str] = []
    # A router group (mad_core.models.router) is opened through its litellm.Router, anything else by litellm.
    complete = router.completion_for(model) or load_litellm().completion
    pump = _Pump(lambda: complete(messages=messages, stream=True, **_route(model, options)))
    # Our own providers' finishing chunk is their stream's last (BackendHandler.streaming): taking
    # it is the end, without litellm's end-of-stream work (it rebuilds the whole response and
    # prices it, ~4 ms a call, for nothing read here: usage is read from the chunks).
    ends_when_finished = split_name(model)[0] in CUSTOM_PROVIDERS and not router.is_group(model)
    clock, repeats = _Clock(limits), _Repeats(limits.repeats)
    finished = False
    try:
        while True:
            asked = time.perf_counter()
            kind, chunk = pump.next(clock.allowance())
            clock.add(time.perf_counter() - asked, kind == "chunk")
            if kind == "end":
                break
            if kind != "chunk":
                attempt.error = chunk if kind == "error" else clock.timeout(model, len(parts))
                break
            attempt.usage = getattr(chunk, "usage", None) or attempt.usage
            if finished and attempt.usage is not None:
                # The usage chunk that follows the last one: litellm would build the whole
                # response once more before ending the stream, for nothing we read.
                break
            finished = finished or bool(chunk.choices and chunk.choices[0].finish_reason)
            piece = chunk.choices[0].delta.content if chunk.choices else None
            if piece:
                if attempt.first_token_s is None:
                    attempt.first_token_s = time.perf_counter() - started
                # Asked before a piece is delivered, so nothing reaches the caller after a stop
                # (and a should_stop that blocks while paused holds the piece back until resume;
                # that time is not the model's, so it does not count against the timeout).
                if should_stop is not None and should_stop():
                    attempt.interrupted = True
                    break
                parts.append(piece)
                if on_token is not None:
                    on_token(piece)
                if repeats.seen(piece):
                    attempt.note = repeats.note()
                    break
            if finished and ends_when_finished:
                break
    finally:
        pump.abandon()
        attempt.text = "".join(parts)
    if attempt.error is None and not attempt.interrupted and not attempt.text.strip():
        attempt.error = EmptyReplyError("the model returned an empty reply")
    return attempt


class _Repeats:
    """Counts the same piece arriving again and again; ``seen`` is true at the limit."""

    def __init__(self, limit: int | None):
        self.limit, self.last, self.count = limit, None, 0

    def seen(self, piece: str) -> bool:
        self.count = self.count + 1 if piece == self.last else 1
        self.last = piece
        return self.limit is not None and self.count >= self.limit

    def note(self) -> str:
        return f"cut: the model repeated itself (the same piece {self.count} times in a row)"


def _route(model: str, options: dict[str, Any]) -> dict[str, Any]:
    """``model`` and ``options`` as litellm gets them: a ``local/...`` model goes to its llama-server.

    Called in the attempt's helper thread, so starting a server counts against the attempt's timeout.
    """
    provider, rest = split_name(model)
    if provider == "local" and not router.is_group(model):
        model, options = provider_module("local").route(rest, options)
    return {"model": model, **options}


def _close_stream(stream) -> None:
    """Stop the backend early (closes an HTTP stream, releases an in-process model's lock)."""
    for obj in (getattr(stream, "completion_stream", None), stream):
        close = getattr(obj, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()

