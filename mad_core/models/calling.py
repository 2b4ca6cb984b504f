"""``call_model``: one chat completion through litellm, streamed or not, its attempts retried.

Transient failures are retried with backoff, never earlier than a server's Retry-After
asks and never longer than ``RetryPolicy.max_delay``; model errors never raise (status
"failed", an error text naming the cause, keys redacted).
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mad_core.models import router
from mad_core.models.backends import ensure_registered
from mad_core.models.complete import complete_once, http_timeout
from mad_core.models.error_text import describe, seconds_text
from mad_core.models.errors import provider_error, retry_after_in, transient_types
from mad_core.models.limits import RetryPolicy
from mad_core.models.loader import load_litellm
from mad_core.models.names import PROVIDER_MODULES, split_name
from mad_core.models.stream import Attempt, stream_once


@dataclass
class CallResult:
    """What one ``call_model`` call produced."""

    text: str
    status: str  # "ok" | "failed" | "interrupted"
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float  # the whole call, retries and backoff included
    first_token_s: float | None  # from the start of the call to the first piece of the last attempt (unstreamed: the reply)
    attempts: int
    # What was wrong with a reply that was kept (status "ok"), e.g. "cut: the model repeated
    # itself (...)"; None when nothing was. ``error`` stays the cause of a failure only.
    note: str | None = None


def count_tokens(model: str, *, messages: list[dict] | None = None, text: str | None = None) -> int:
    try:
        if messages is not None:
            return int(load_litellm().token_counter(model=model, messages=messages))
        return int(load_litellm().token_counter(model=model, text=text or ""))
    except Exception:  # noqa: BLE001 - fall back to a word count
        if messages is not None:
            return sum(len(str(m.get("content") or "").split()) for m in messages)
        return len((text or "").split())


def _usage_counts(model: str, messages: list[dict], attempt: Attempt) -> tuple[int, int]:
    usage = attempt.usage
    if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
        return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
    return count_tokens(model, messages=messages), count_tokens(model, text=attempt.text)


def _options(model: str, metadata: dict | None, extra: dict | None, **settings: Any) -> dict[str, Any]:
    """litellm's options for one call (``settings``: temperature, max_tokens, seed, response_format)."""
    options: dict[str, Any] = {
        "drop_params": True,
        "max_retries": 0,  # our RetryPolicy is the only retry layer
        "stream_options": {"include_usage": True},  # left out of an unstreamed call (``complete_once``)
        "metadata": dict(metadata or {}),
        **{key: value for key, value in settings.items() if value is not None},
    }
    if extra and split_name(model)[0] in PROVIDER_MODULES and not router.is_group(model):
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
    stream: bool = True,
) -> CallResult:
    """Stream one chat completion through litellm (``stream=False``: ask for it whole) and return what happened.

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

    ``stream=False`` (nobody watches: a sweep, ``run --no-stream``) asks for the reply whole, with the
    same retries, errors and ``CallResult``; ``on_token`` gets it once (``complete.complete_once``).
    """
    retry, started, messages = retry or RetryPolicy(), time.perf_counter(), [dict(message) for message in messages]
    options = _options(model, metadata, extra, temperature=temperature, max_tokens=max_tokens, seed=seed,
                       response_format=response_format)
    result = functools.partial(_result, model, messages, started)
    try:
        ensure_registered(model)
        limits = retry.limits(model)
    except Exception as exc:  # noqa: BLE001 - e.g. a broken MADLAB_SCRIPTS file, a bound that is not a number
        return result("failed", Attempt(), 0, describe(exc))
    if (timeout := limits.http_timeout() if stream else http_timeout(limits)) is not None:
        options["timeout"] = timeout
    attempt_once, attempts = stream_once if stream else complete_once, 0
    while True:
        if should_stop is not None and should_stop():
            return result("interrupted", Attempt(), attempts)
        attempts += 1
        attempt = attempt_once(model, messages, options, on_token, should_stop, started, limits)
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


def _result(model: str, messages: list[dict], started: float, status: str, attempt: Attempt, attempts: int,
            error: str | None = None) -> CallResult:
    """The ``CallResult`` of a call that started at ``started`` and ends with ``attempt``."""
    prompt_tokens, completion_tokens = _usage_counts(model, messages, attempt)
    return CallResult(attempt.text, status, error, prompt_tokens, completion_tokens, time.perf_counter() - started,
                      attempt.first_token_s, attempts, note=attempt.note if status == "ok" else None)


def _next_wait(failure: BaseException, attempts: int, retry: RetryPolicy) -> tuple[float | None, str]:
    """After ``attempts`` attempts, the last failing with ``failure``: the wait before the next one
    (None: give up) and the error text to report (for a retry, or the call's final error)."""
    error = provider_error(failure)
    error_text = describe(error)
    if not isinstance(error, transient_types()):
        return None, error_text
    retry_after = retry_after_in(failure)
    notes = [] if retry_after is None else [f"server asked to retry after {seconds_text(retry_after)} s"]
    wait = retry.wait_before_retry(attempts, retry_after) if attempts < retry.max_attempts else None
    if wait is None:
        if attempts < retry.max_attempts:  # the server asked for more than we may wait
            notes[-1] += f", more than retry_max_wait_s = {seconds_text(retry.max_delay)} s, so not retried"
        notes.append(f"{attempts} attempt{'s' if attempts > 1 else ''}")
        return None, f"{error_text} ({'; '.join(notes)})"
    return wait, f"{error_text} ({notes[0]})" if notes else error_text

