"""MAD Lab's model layer: every model call goes through litellm, whatever the backend.

What it is for:
  * ``call_model`` streams one chat completion through ``litellm.completion(stream=True)``,
    hands each text piece to a callback, can be interrupted between pieces, bounds every
    attempt (``RetryPolicy``: a remote model's whole reply; a model streaming on this
    machine by the time without a new piece, so a busy CPU does not fail its turns), cuts
    and keeps a reply that repeats itself, retries transient failures (waiting at least
    what a server's ``Retry-After`` asks), and returns a ``CallResult`` whose error text
    names the real cause.
  * ``local/...`` names a GGUF model served by llama.cpp's own server, which MAD Lab
    starts and supervises (``llama_server``); ``_route`` sends such a call through
    litellm's OpenAI-compatible provider to that server, exactly like a remote model
    (``local_gguf``: aliases, slots and the prompt cache).
  * Three in-process backends are registered as litellm custom providers, so they take
    exactly the same path as remote models:
      ``scripted/...`` the test double with scripted replies and faults (``scripted``),
      ``hf/...``       a Hugging Face checkpoint in a local directory (``hf_local``),
      ``callable/...`` a plain Python function (``callables``).
  * A model name that is a group of the router file (``MADLAB_ROUTER``) is served by one
    process-wide ``litellm.Router`` over several endpoints (``router``), through the same
    streaming, timeout, cancellation and retry path.
  * ``validate_model_name``, ``is_serial``, ``is_local``, ``response_format_support`` and
    ``known_models`` tell the UI and the engine what a model name means (and whether its
    backend takes a JSON-schema ``response_format``), without calling any model.

What it must not do:
  * import litellm, torch or transformers at import time (they are slow); they are
    imported inside functions. llama_cpp is never imported: llama.cpp runs in its own
    server process, so it never shares a process with torch,
  * touch the network except for a remote model the caller asked for,
  * raise for a model's failure (``call_model`` returns status "failed" instead),
  * retry earlier than a server asked, or wait longer than ``RetryPolicy.max_delay``,
  * count time the caller spends in its own callbacks (a paused ``should_stop``) as the
    model's time,
  * put API keys in error texts or return them from ``known_models``,
  * import streamlit or know anything about debates.

Backends are plain Python: each provider module has ``generate(request)`` yielding text
pieces (``str``) and, optionally, one final usage ``dict`` with ``prompt_tokens`` and
``completion_tokens``. ``_handler_class()`` wraps such a function into a ``litellm.CustomLLM``.
Each attempt is pulled in a helper thread (``_Pump``); a backend that can stop early
checks ``current_cancellation()`` between tokens, and is closed from that thread when it
next yields after the attempt was abandoned (timeout, stop, or an error in a callback).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import difflib
import email.utils
import functools
import importlib
import importlib.util
import math
import os
import queue
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mad_core.models.damage import DamagedStreamError, as_damage, guard

DEFAULT_MODEL = "local/smollm2-135m"

# Our own providers and the modules that implement them: all but ``local`` (see ``_route``)
# are litellm custom providers.
_PROVIDER_MODULES = {
    "local": "mad_core.models.local_gguf",
    "scripted": "mad_core.models.scripted",
    "hf": "mad_core.models.hf_local",
    "callable": "mad_core.models.callables",
}
_CUSTOM_PROVIDERS = ("scripted", "hf", "callable")
_SERIAL_PROVIDERS = {"hf"}  # a local GGUF's llama-server has parallel slots

# Remote providers shown on the Models page: (provider, example model, key env var, description).
_REMOTE_PROVIDERS = [
    ("openai", "openai/gpt-4o-mini", "OPENAI_API_KEY", "OpenAI API"),
    ("anthropic", "anthropic/claude-3-5-haiku-latest", "ANTHROPIC_API_KEY", "Anthropic API"),
    ("gemini", "gemini/gemini-2.0-flash", "GEMINI_API_KEY", "Google Gemini API"),
    ("mistral", "mistral/mistral-small-latest", "MISTRAL_API_KEY", "Mistral API"),
    ("groq", "groq/llama-3.1-8b-instant", "GROQ_API_KEY", "Groq API"),
    ("ollama", "ollama/llama3.2", None, "A local Ollama server (OLLAMA_API_BASE, default http://localhost:11434)"),
    ("hosted_vllm", "hosted_vllm/<model>", None, "An OpenAI-compatible vLLM server (set HOSTED_VLLM_API_BASE)"),
]

_register_lock = threading.Lock()
_loaded_scripts_file: str | None = None


# --------------------------------------------------------------------------- results


@dataclass
class CallResult:
    """What one ``call_model`` call produced."""

    text: str
    status: str  # "ok" | "failed" | "interrupted"
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float  # the whole call, retries and backoff included
    first_token_s: float | None  # from the start of the call to the first piece of the last attempt
    attempts: int
    # What was wrong with a reply that was kept (status "ok"), e.g. "cut: the model repeated
    # itself (...)"; None when nothing was. ``error`` stays the cause of a failure only.
    note: str | None = None


# Where a model streams on this machine (llama-server, an in-process checkpoint), a busy CPU
# makes a whole reply slow while its pieces keep coming: such a stream is bounded by the time
# without a new piece, not by the whole reply. Each bound is an environment knob (seconds;
# "inf": no bound of that kind); RetryPolicy's local_* fields override them.
LOCAL_FIRST_PIECE_ENV, LOCAL_FIRST_PIECE_S = "MADLAB_LOCAL_FIRST_PIECE_S", 300.0  # server start + prefill
LOCAL_IDLE_ENV, LOCAL_IDLE_S = "MADLAB_LOCAL_IDLE_S", 60.0  # between two pieces
LOCAL_TOTAL_ENV, LOCAL_TOTAL_S = "MADLAB_LOCAL_TOTAL_S", 900.0  # the whole reply's cap
# A stream that repeats the same piece this many times in a row is cut there and kept, marked
# so (litellm's own guard, which fails the call instead, is switched off in ``_litellm``).
REPEAT_LIMIT_ENV, REPEAT_LIMIT = "MADLAB_REPEAT_LIMIT", 100
_STREAMS_HERE = {"local", "hf"}


@dataclass(frozen=True)
class StreamLimits:
    """How far one attempt's stream may go (None: no limit of that kind).

    ``first_piece``: seconds waiting for the first piece (opening the stream, starting a
    server, the prefill); ``idle``: seconds waiting for each next piece; ``total``: all the
    attempt's waits added up (without ``first_piece`` and ``idle`` it is the whole-reply
    bound, and the timeout texts say "within"). Time the caller spends in its own callbacks
    counts in none of them. ``repeats``: the same piece this many times in a row ends the
    stream, and the reply is kept as it is, with a note.
    """

    first_piece: float | None = None
    idle: float | None = None
    total: float | None = None
    repeats: int | None = None

    @property
    def whole_reply(self) -> bool:
        """True when only ``total`` bounds time (remote models): the old whole-reply bound."""
        return self.first_piece is None and self.idle is None

    def http_timeout(self) -> float | None:
        """litellm's per-request timeout (httpx applies it to every read): just above ours, so ours
        names the cause, and the abandoned connection (a llama-server slot) is let go soon after."""
        if self.whole_reply:
            return self.total
        gaps = [bound for bound in (self.first_piece, self.idle) if bound is not None]
        return max(gaps) + 1.0 if gaps else self.total


def _setting(value: float | None, env: str, default: float) -> float | None:
    """``value``, else the environment's ``env``, else ``default``; inf means no bound (None)."""
    raw = os.environ.get(env, "").strip() if value is None else repr(value)
    try:
        seconds = float(raw) if raw else default
    except ValueError:
        seconds = math.nan
    if not seconds > 0:
        raise ValueError(f"{env}={raw!r} is not a number of seconds above 0 (inf: no bound)")
    return None if math.isinf(seconds) else seconds


@dataclass
class RetryPolicy:
    """How ``call_model`` bounds attempts and retries transient failures.

    ``timeout`` bounds each attempt of a remote model (and of ``scripted``/``callable``):
    the attempt may spend at most that many seconds waiting for the model (opening the
    stream, the first piece, each next piece, added up); time spent in the caller's
    ``should_stop``/``on_token`` is not counted. None: no bound of our own (litellm's own
    timeouts still apply remotely).

    A model that streams on this machine (``local/``, ``hf/``) is bounded instead by the
    time without a new piece: ``local_first_piece`` s to the first piece, ``local_idle`` s
    between pieces, and a ``local_total`` s cap on the whole reply; None takes the
    environment's ``MADLAB_LOCAL_FIRST_PIECE_S`` / ``MADLAB_LOCAL_IDLE_S`` /
    ``MADLAB_LOCAL_TOTAL_S`` (defaults 300, 60, 900), ``math.inf`` no bound. A stream that
    keeps coming is never cut by the whole-reply ``timeout``.

    ``repeat_limit`` (None: ``MADLAB_REPEAT_LIMIT``, default 100; 0: never): the same piece
    that many times in a row ends the stream, and the reply is kept with a note.

    ``max_delay`` is the longest wait before a retry, a server's ``Retry-After`` included.
    A server that asks for more than ``max_delay`` is not retried early: ``call_model``
    gives up at once and says how long the server asked to wait (retrying before the
    server's time only earns more rate-limit errors).
    """

    max_attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    timeout: float | None = 120.0  # seconds one attempt may wait for a remote model
    local_first_piece: float | None = None
    local_idle: float | None = None
    local_total: float | None = None
    repeat_limit: int | None = None

    def limits(self, model: str) -> StreamLimits:
        """The limits of one attempt of ``model`` (ValueError: a knob in the environment is not a number)."""
        repeats = self.repeat_limit
        if repeats is None:
            raw = os.environ.get(REPEAT_LIMIT_ENV, "").strip()
            if raw and not raw.isdigit():
                raise ValueError(f"{REPEAT_LIMIT_ENV}={raw!r} is not a whole number (0: never cut)")
            repeats = int(raw) if raw else REPEAT_LIMIT
        if not streams_here(model):
            return StreamLimits(total=self.timeout, repeats=repeats or None)
        return StreamLimits(
            first_piece=_setting(self.local_first_piece, LOCAL_FIRST_PIECE_ENV, LOCAL_FIRST_PIECE_S),
            idle=_setting(self.local_idle, LOCAL_IDLE_ENV, LOCAL_IDLE_S),
            total=_setting(self.local_total, LOCAL_TOTAL_ENV, LOCAL_TOTAL_S),
            repeats=repeats or None,
        )

    def delay(self, failed_attempts: int) -> float:
        """Backoff before the next attempt, after ``failed_attempts`` failures (1, 2, ...)."""
        return min(self.base_delay * 2 ** (failed_attempts - 1), self.max_delay)

    def wait_before_retry(self, failed_attempts: int, retry_after: float | None = None) -> float | None:
        """The wait before the next attempt: the backoff, or longer if the server asked.

        ``retry_after`` is the server's Retry-After in seconds (None: it sent none). Returns
        None when the server asked for more than ``max_delay``: do not retry.
        """
        if retry_after is None:
            return self.delay(failed_attempts)
        if retry_after > self.max_delay:
            return None
        return max(self.delay(failed_attempts), retry_after)


# --------------------------------------------------------------------------- backends


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


def _litellm():
    """Import litellm the way MAD Lab needs it: offline cost map, no debug banners."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    # litellm hands every streamed piece to a thread pool for its success logging (callbacks,
    # caching), which MAD Lab uses neither of: it cost ~40 % of per-call time against a
    # fixed-latency model (bench/engine_overhead.py). Usage is read from the stream itself.
    litellm.disable_streaming_logging = True
    # litellm fails a stream that repeats one piece 100 times (an InternalServerError, so it was
    # retried three times and the turn failed); ``_stream_once`` cuts such a stream itself and
    # keeps what was said (``RetryPolicy.repeat_limit``).
    litellm.REPEATED_STREAMING_CHUNK_LIMIT = sys.maxsize
    guard(litellm)  # an unreadable event fails the attempt instead of vanishing (``damage``)
    return litellm


def _chunk(text: str, *, finished: bool = False, usage: dict | None = None) -> dict:
    """A litellm ``GenericStreamingChunk``."""
    return {
        "text": text,
        "is_finished": finished,
        "finish_reason": "stop" if finished else "",
        "usage": usage,
        "index": 0,
        "tool_use": None,
    }


@functools.cache
def _handler_class():
    """The ``litellm.CustomLLM`` adapter class, built on first use so litellm loads lazily."""
    litellm = _litellm()

    class BackendHandler(litellm.CustomLLM):
        """Serves a provider through a ``generate(request)`` function, streamed or not."""

        def __init__(self, provider: str, generate: Callable[[Request], Iterator[Any]]):
            super().__init__()
            self.provider = provider
            self.generate = generate

        def streaming(self, model, messages, optional_params=None, litellm_params=None, **_kwargs):
            params = optional_params or {}
            request = Request(
                model=model,
                messages=messages,
                temperature=params.get("temperature"),
                max_tokens=params.get("max_tokens", params.get("max_completion_tokens")),
                seed=params.get("seed"),
                metadata=dict((litellm_params or {}).get("metadata") or {}),
                response_format=params.get("response_format"),
                extra=dict(params.get("extra_body") or {}),
            )
            usage = None
            with contextlib.closing(iter(self.generate(request))) as items:
                for item in items:
                    if isinstance(item, dict):
                        usage = {**item, "total_tokens": item["prompt_tokens"] + item["completion_tokens"]}
                    elif item:
                        yield _chunk(item)
            yield _chunk("", finished=True, usage=usage)

        def completion(self, model, messages, model_response=None, **kwargs):
            text, usage = [], None
            for chunk in self.streaming(model, messages, **kwargs):
                text.append(chunk["text"])
                usage = chunk["usage"] or usage
            model_response.choices[0].message.content = "".join(text)
            model_response.choices[0].finish_reason = "stop"
            model_response.model = f"{self.provider}/{model}"
            if usage:
                model_response.usage = litellm.Usage(**usage)
            return model_response

        async def acompletion(self, model, messages, **kwargs):
            return await asyncio.to_thread(self.completion, model, messages, **kwargs)

        async def astreaming(self, model, messages, **kwargs):
            chunks = self.streaming(model, messages, **kwargs)
            done = object()
            try:
                while (chunk := await asyncio.to_thread(next, chunks, done)) is not done:
                    yield chunk
            finally:
                chunks.close()

    return BackendHandler


def _provider_module(provider: str):
    return importlib.import_module(_PROVIDER_MODULES[provider])


def ensure_registered() -> None:
    """Register the ``scripted``, ``hf`` and ``callable`` providers with litellm.

    Idempotent and thread-safe; entries already in ``litellm.custom_provider_map`` are
    kept (a provider name registered there by someone else is left to them). Also loads
    the scripts file named by ``MADLAB_SCRIPTS`` (JSON or YAML), once per path.
    """
    global _loaded_scripts_file
    litellm = _litellm()
    with _register_lock:
        present = {entry.get("provider") for entry in litellm.custom_provider_map}
        for provider in _CUSTOM_PROVIDERS:
            if provider not in present:
                handler = _handler_class()(provider, _provider_module(provider).generate)
                litellm.custom_provider_map.append({"provider": provider, "custom_handler": handler})
        scripts_file = os.environ.get("MADLAB_SCRIPTS")
        if scripts_file and scripts_file != _loaded_scripts_file:
            _provider_module("scripted").load_scripts_file(scripts_file)
            _loaded_scripts_file = scripts_file


# --------------------------------------------------------------------------- errors

_NETWORK_MODULES = {"httpx", "httpcore", "openai", "aiohttp", "anyio", "urllib3", "requests", "ssl", "h11", "h2"}
_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


class EmptyReplyError(Exception):
    """The model streamed nothing but whitespace (treated as transient)."""


def _is_litellm_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("litellm")


def _transient_types() -> tuple[type[BaseException], ...]:
    litellm = _litellm()
    return (
        EmptyReplyError,
        DamagedStreamError,
        litellm.Timeout,
        litellm.RateLimitError,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    )


def _provider_error(exc: BaseException) -> BaseException:
    """Unwrap what litellm wrapped: mid-stream wrappers, and local errors it called connection errors.

    litellm 1.106.2 wraps an error raised while streaming in ``MidStreamFallbackError``
    (a ``ServiceUnavailableError``) with the mapped error in ``original_exception``, and
    maps any exception it does not know (a custom handler's ``RuntimeError``, say) to
    ``APIConnectionError``, leaving the original as ``__context__``. A JSON error raised
    reading the server's events is a ``DamagedStreamError`` (``damage.as_damage``).
    """
    litellm = _litellm()
    while isinstance(exc, litellm.exceptions.MidStreamFallbackError) and exc.original_exception is not None:
        exc = exc.original_exception
    if isinstance(exc, litellm.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        while cause is not None and _is_litellm_error(cause):
            cause = cause.__cause__ or cause.__context__
        if cause is not None and not _is_network_error(cause):
            return as_damage(cause)
    return as_damage(exc)


def _is_network_error(exc: BaseException) -> bool:
    return isinstance(exc, (ConnectionError, TimeoutError, socket.gaierror)) or (
        type(exc).__module__.split(".")[0] in _NETWORK_MODULES
    )


def _redact(text: str) -> str:
    """Remove API keys: values of secret-looking environment variables or of those the router
    file refers to, and key-shaped strings."""
    secrets = [value for name, value in os.environ.items() if _SECRET_ENV.search(name)]
    for value in secrets + _router_module().secret_values():
        if len(value) >= 8:
            text = text.replace(value, "[REDACTED]")
    return re.sub(r"\b(?:sk|gsk|xai)-[A-Za-z0-9_\-]{16,}|\bAIza[A-Za-z0-9_\-]{35}", "[REDACTED]", text)


def _header_maps(exc: BaseException) -> Iterator[Mapping]:
    """Every response-header mapping litellm 1.106.2 may have attached to ``exc`` or its causes.

    Mapped provider errors keep the vendor's headers on ``exc.response.headers`` (an
    ``httpx.Headers``); ``exception_type`` also sets ``exc.litellm_response_headers``; some
    errors carry a plain ``exc.headers`` dict. Wrappers (``MidStreamFallbackError``) keep
    the mapped error in ``original_exception``.
    """
    seen: list[BaseException] = []
    pending: list[BaseException | None] = [exc]
    while pending and len(seen) < 10:
        current = pending.pop(0)
        if current is None or any(current is done for done in seen):
            continue
        seen.append(current)
        for name in ("headers", "response", "litellm_response_headers"):
            try:  # a property that raises is as good as no headers
                headers = getattr(current, name, None)
                headers = getattr(headers, "headers", None) if name == "response" else headers
            except Exception:  # noqa: BLE001
                continue
            if isinstance(headers, Mapping):
                yield headers
        pending += [getattr(current, "original_exception", None), current.__cause__, current.__context__]


def retry_after_seconds(headers: Mapping, now: float | None = None) -> float | None:
    """Seconds a server asked to wait: ``retry-after-ms``, else ``Retry-After`` (seconds or an HTTP date).

    None when there is no such header or it cannot be read; a date in the past gives 0.
    """
    lowered = {str(key).lower(): str(value).strip() for key, value in headers.items()}
    with contextlib.suppress(ValueError):
        milliseconds = float(lowered.get("retry-after-ms", ""))
        if math.isfinite(milliseconds) and milliseconds >= 0:
            return milliseconds / 1000
    value = lowered.get("retry-after", "")
    with contextlib.suppress(ValueError):
        seconds = float(value)
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _retry_after(exc: BaseException) -> float | None:
    """The Retry-After (seconds) of the first header mapping in ``exc``'s chain that has one."""
    for headers in _header_maps(exc):
        seconds = retry_after_seconds(headers)
        if seconds is not None:
            return seconds
    return None


def _seconds(value: float) -> str:
    """``30``, ``0.25``, ``2.5``: a duration for an error text."""
    return f"{value:.0f}" if value >= 10 else f"{round(value, 2):g}"


def _describe(exc: BaseException) -> str:
    """``TypeName: message`` without litellm's repeated prefix, tracebacks or keys."""
    name = type(exc).__name__
    message = str(getattr(exc, "message", None) or exc).strip()
    message = re.sub(rf"^(?:(?:litellm\.)?{name}:\s*)+", "", message)  # litellm repeats the type name
    message = message.split("\nTraceback (most recent call last)")[0].strip()
    if len(message) > 1000:
        message = message[:1000] + "..."
    return _redact(f"{name}: {message}" if message else name)


# --------------------------------------------------------------------------- calling


@dataclass
class _Attempt:
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
        _attempt_local.cancel = self.cancel
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
            within = f"within {_seconds(limits.total)} s"
            message = (f"the reply stalled {after} and did not finish {within}" if pieces else f"no reply {within}")
        elif self.hit == "first_piece":
            message = f"no first piece within {_seconds(limits.first_piece)} s"
        elif self.hit == "idle":
            message = f"no new piece for {_seconds(limits.idle)} s ({after})"
        else:
            message = f"the whole reply passed the {_seconds(limits.total)} s cap ({after})"
        return _litellm().Timeout(message=message, model=model, llm_provider=_split(model)[0])


def _stream_once(model, messages, options, on_token, should_stop, started, limits: StreamLimits) -> _Attempt:
    """One streamed attempt, within ``limits`` (the model's time only: see ``StreamLimits``).

    Model errors (a timeout included) are returned in ``error``; callback errors propagate.
    A stream cut for repeating itself ends without an error, with a ``note``.
    """
    attempt = _Attempt()
    parts: list[str] = []
    # A router group (mad_core.models.router) is opened through its litellm.Router, anything else by litellm.
    complete = _router_module().completion_for(model) or _litellm().completion
    pump = _Pump(lambda: complete(messages=messages, stream=True, **_route(model, options)))
    # Our own providers' finishing chunk is their stream's last (BackendHandler.streaming): taking
    # it is the end, without litellm's end-of-stream work (it rebuilds the whole response and
    # prices it, ~4 ms a call, for nothing read here: usage is read from the chunks).
    ends_when_finished = _split(model)[0] in _CUSTOM_PROVIDERS and not _router_module().is_group(model)
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
    provider, rest = _split(model)
    if provider == "local" and not _router_module().is_group(model):
        model, options = _provider_module("local").route(rest, options)
    return {"model": model, **options}


def _close_stream(stream) -> None:
    """Stop the backend early (closes an HTTP stream, releases an in-process model's lock)."""
    for obj in (getattr(stream, "completion_stream", None), stream):
        close = getattr(obj, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()


def _count_tokens(model: str, *, messages: list[dict] | None = None, text: str | None = None) -> int:
    try:
        if messages is not None:
            return int(_litellm().token_counter(model=model, messages=messages))
        return int(_litellm().token_counter(model=model, text=text or ""))
    except Exception:  # noqa: BLE001 - fall back to a word count
        if messages is not None:
            return sum(len(str(m.get("content") or "").split()) for m in messages)
        return len((text or "").split())


def _usage_counts(model: str, messages: list[dict], attempt: _Attempt) -> tuple[int, int]:
    usage = attempt.usage
    if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
        return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
    return _count_tokens(model, messages=messages), _count_tokens(model, text=attempt.text)


def _options(model: str, metadata: dict | None, extra: dict | None, **settings: Any) -> dict[str, Any]:
    """litellm's options for one call (``settings``: temperature, max_tokens, seed, response_format)."""
    options: dict[str, Any] = {
        "drop_params": True,
        "max_retries": 0,  # our RetryPolicy is the only retry layer
        "stream_options": {"include_usage": True},
        "metadata": dict(metadata or {}),
        **{key: value for key, value in settings.items() if value is not None},
    }
    if extra and _split(model)[0] in _PROVIDER_MODULES and not _router_module().is_group(model):
        options["extra_body"] = dict(extra)  # ``_route`` keeps it for the local llama-server
    return options


def call_model(
    model: str,
    messages: list[dict],
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    on_token: Callable[[str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    retry: RetryPolicy | None = None,
    metadata: dict | None = None,
    on_retry: Callable[[int, str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    response_format: dict | None = None,
    extra: dict | None = None,
) -> CallResult:
    """Stream one chat completion through litellm and return what happened.

    ``response_format`` (an OpenAI json_schema one; ``response_format_support`` says which
    backends honour it) goes to litellm as is (a custom provider's ``Request.response_format``).
    ``extra``: request fields for a backend on this machine (llama.cpp's ``repeat_penalty``),
    sent as ``extra_body`` to ``local/`` models and our custom providers (``Request.extra``),
    never to a remote provider.

    ``on_token(piece)`` gets every non-empty streamed piece; ``should_stop()`` is asked
    before each attempt and before each piece is delivered and, when true, ends the call
    with status "interrupted" and the text delivered so far (the piece in hand is
    dropped). A ``should_stop`` that blocks (a paused debate) holds the model back, and
    that time does not count against the timeout.

    Each attempt is bounded by ``retry.limits(model)`` (``RetryPolicy``: a remote model's whole
    reply; a model streaming on this machine by the time without a new piece). Past a bound it
    is abandoned (its backend told through its ``Cancellation``, closed when it next yields) and
    counts as a ``Timeout`` naming the bound ("no new piece for 60 s (after 50 pieces)"). A
    stream repeating one piece ``repeat_limit`` times is cut and kept ("ok", with a ``note``).

    Transient failures (timeouts, rate limits, connection and 5xx errors, an empty reply, a
    damaged stream) are retried, ``retry.max_attempts`` attempts in all, with ``sleep(wait)``
    between them: ``min(base_delay * 2**k, max_delay)``, or the server's Retry-After
    (``retry-after-ms``, ``Retry-After`` in seconds or an HTTP date) when longer; a server
    asking for more than ``max_delay`` is not retried early: the call gives up at once.
    ``on_retry(failed_attempt_number, error_text)`` comes before each retry (1 for the first
    failure), so a caller can clear a partial reply. Other errors fail at once.

    Model errors never raise: status "failed" and an ``error`` naming the cause, e.g.
    ``"Timeout: no reply within 0.5 s (3 attempts)"``, ``"RateLimitError: ... (server asked to
    retry after 30 s, more than retry_max_wait_s = 8 s, so not retried; 1 attempt)"``; keys
    are redacted. Exceptions raised by the callbacks themselves propagate.
    """
    retry, started, messages = retry or RetryPolicy(), time.perf_counter(), [dict(message) for message in messages]
    options = _options(model, metadata, extra, temperature=temperature, max_tokens=max_tokens, seed=seed,
                       response_format=response_format)

    def result(status: str, attempt: _Attempt, attempts: int, error: str | None = None) -> CallResult:
        prompt_tokens, completion_tokens = _usage_counts(model, messages, attempt)
        return CallResult(attempt.text, status, error, prompt_tokens, completion_tokens, time.perf_counter() - started,
                          attempt.first_token_s, attempts, note=attempt.note if status == "ok" else None)

    try:
        ensure_registered()
        limits = retry.limits(model)
    except Exception as exc:  # noqa: BLE001 - e.g. a broken MADLAB_SCRIPTS file, a bound that is not a number
        return result("failed", _Attempt(), 0, _describe(exc))
    if limits.http_timeout() is not None:
        options["timeout"] = limits.http_timeout()
    attempts = 0
    while True:
        if should_stop is not None and should_stop():
            return result("interrupted", _Attempt(), attempts)
        attempts += 1
        attempt = _stream_once(model, messages, options, on_token, should_stop, started, limits)
        if attempt.interrupted:
            return result("interrupted", attempt, attempts)
        if attempt.error is None:
            return result("ok", attempt, attempts)
        wait, error_text = _next_wait(attempt.error, attempts, retry)
        if wait is None:
            return result("failed", attempt, attempts, error_text)
        if on_retry is not None:
            on_retry(attempts, error_text)
        sleep(wait)


def _next_wait(failure: BaseException, attempts: int, retry: RetryPolicy) -> tuple[float | None, str]:
    """After ``attempts`` attempts, the last failing with ``failure``: the wait before the next one
    (None: give up) and the error text to report (for a retry, or the call's final error)."""
    error = _provider_error(failure)
    error_text = _describe(error)
    if not isinstance(error, _transient_types()):
        return None, error_text
    retry_after = _retry_after(failure)
    notes = [] if retry_after is None else [f"server asked to retry after {_seconds(retry_after)} s"]
    wait = retry.wait_before_retry(attempts, retry_after) if attempts < retry.max_attempts else None
    if wait is None:
        if attempts < retry.max_attempts:  # the server asked for more than we may wait
            notes[-1] += f", more than retry_max_wait_s = {_seconds(retry.max_delay)} s, so not retried"
        notes.append(f"{attempts} attempt{'s' if attempts > 1 else ''}")
        return None, f"{error_text} ({'; '.join(notes)})"
    return wait, f"{error_text} ({notes[0]})" if notes else error_text


# --------------------------------------------------------------------------- model names


def _split(name: str) -> tuple[str, str]:
    provider, _, rest = name.partition("/")
    return provider, rest


def is_serial(model: str) -> bool:
    """True for backends that serve one request at a time (a local HF checkpoint)."""
    return _split(model)[0] in _SERIAL_PROVIDERS and not _router_module().is_group(model)


def streams_here(model: str) -> bool:
    """True for models that stream on this machine (``local/``, ``hf/``): bounded by the time
    without a new piece rather than by the whole reply (``RetryPolicy``)."""
    return _split(model)[0] in _STREAMS_HERE and not _router_module().is_group(model)


def is_local(model: str) -> bool:
    """True for ``local/...`` models (llama.cpp), the ones ``call_model``'s ``extra`` is meant for."""
    return _split(model)[0] == "local" and not _router_module().is_group(model)


# Providers whose servers compile any JSON schema into a grammar (llama.cpp's server, vLLM).
_GRAMMAR_PROVIDERS = {"local", "hosted_vllm"}


def response_format_support(model: str) -> str | None:
    """How ``model`` takes a JSON-schema ``response_format`` (constrained output).

    "full": any JSON schema, length and size keywords included (``local/`` models, i.e.
    llama.cpp's server; ``hosted_vllm/``; a script with ``json_schema=True``); "subset":
    a hosted API whose litellm entry supports response schemas
    (``litellm.supports_response_schema``), whose strict mode may refuse length, size and
    range keywords; None: not supported (``hf/``, ``callable/``, router groups, other
    remote models), so the request is made in words only. No network.
    """
    provider, rest = _split(model)
    if _router_module().is_group(model):
        return None  # a group may mix backends that do and do not support it
    if provider in _GRAMMAR_PROVIDERS:
        return "full"
    if provider == "scripted":
        return _provider_module("scripted").response_format_support(rest)
    if provider in _PROVIDER_MODULES or not rest:
        return None
    try:
        return "subset" if _litellm().supports_response_schema(model=model) else None
    except Exception:  # noqa: BLE001 - a model litellm does not know
        return None


def provider_names() -> list[str]:
    """Every provider a model name may start with here (litellm's, the registered custom ones and
    MAD Lab's own), sorted: the Models page lists them."""
    litellm = _litellm()
    names = {getattr(p, "value", p) for p in litellm.provider_list}
    names.update(entry.get("provider") for entry in litellm.custom_provider_map)
    names.update(_PROVIDER_MODULES)
    return sorted(str(n) for n in names if n)


def validate_model_name(name: str) -> str | None:
    """None if ``name`` can be called, else a message saying what is wrong. No network."""
    if not isinstance(name, str) or not name.strip():
        return "The model name is empty: names look like provider/model (e.g. openai/gpt-4o-mini)."
    if name != name.strip():
        return f"The model name {name!r} starts or ends with whitespace."
    if _router_module().is_group(name):
        return None
    unread = _router_module().problem()  # a broken router file: say so where a group name is not found
    router_problem = f" (Router groups: {unread}.)" if unread else ""
    if "/" not in name:
        return (
            f"{name!r} has no provider: names look like provider/model "
            f"(e.g. openai/gpt-4o-mini or {DEFAULT_MODEL})."
        )
    try:
        ensure_registered()
    except Exception as exc:  # noqa: BLE001
        return f"Could not load the scripts file named by MADLAB_SCRIPTS: {_describe(exc)}"
    provider, rest = _split(name)
    if not rest:
        return f"{name!r} names no model after the provider {provider!r} (e.g. openai/gpt-4o-mini)."
    providers = provider_names()
    if provider not in providers:  # one line: the ~100 valid providers are listed on the Models page
        close = difflib.get_close_matches(provider, providers, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        # short: the form shows it beside the field; in Python, provider_names() lists them too
        return f"Unknown provider {provider!r}{hint}: the Models page lists the providers.{router_problem}"
    if provider in _PROVIDER_MODULES:
        return _provider_module(provider).check(rest)
    return None


def known_models() -> list[dict]:
    """Models for a Models page. ``key_present`` reads os.environ only and no key is returned.

    Entries that need no key have ``key_env`` None and ``key_present`` True.
    """
    from mad_core.models import hf_local, local_gguf, scripted

    def entry(name, kind, description, key_env=None):
        present = key_env is None or bool(os.environ.get(key_env))
        return {"name": name, "kind": kind, "description": description, "key_env": key_env, "key_present": present}

    models = [entry(DEFAULT_MODEL, "local", "SmolLM2-135M-Instruct (GGUF, offline, CPU): the default")]
    for alias, path in sorted(local_gguf.local_aliases().items()):
        if f"local/{alias}" != DEFAULT_MODEL:
            models.append(entry(f"local/{alias}", "local", f"GGUF model {os.path.basename(path)}"))
    for alias, path in sorted(hf_local.hf_aliases().items()):
        models.append(entry(f"hf/{alias}", "hf", f"Hugging Face checkpoint in {path}"))
    for name in scripted.script_names():
        models.append(entry(f"scripted/{name}", "scripted", "Scripted replies (test double)"))
    router = _router_module()
    for group, endpoints in sorted(router.groups().items()):
        key_envs = sorted({name for params in endpoints for name in router.env_refs(params)})
        models.append(entry(group, "router", router.describe(group), ", ".join(key_envs) or None))
        models[-1]["key_present"] = all(os.environ.get(name) for name in key_envs)
    for _provider, example, key_env, description in _REMOTE_PROVIDERS:
        models.append(entry(example, "remote", description, key_env))
    return models


def _router_module():
    from mad_core.models import router

    return router


def _missing_package(module: str, package: str) -> str | None:
    """A message if ``module`` cannot be imported, without importing it."""
    if importlib.util.find_spec(module) is None:
        return f"The Python package {package} is not installed."
    return None
