"""The model layer's errors: which failures are transient, what litellm wrapped, and Retry-After.

``EmptyReplyError`` (a reply of whitespace only), ``transient_types`` (the failures
``call_model`` retries), ``provider_error`` (the real cause under litellm's wrappers) and
``retry_after_seconds`` / ``retry_after_in`` (how long a server asked to wait, read from
every header mapping litellm may have attached). Imports litellm only inside functions.
"""
from __future__ import annotations

import contextlib
import datetime
import email.utils
import math
import socket
import time
from collections.abc import Iterator, Mapping

from mad_core.models.damage import DamagedStreamError, as_damage
from mad_core.models.loader import load_litellm

_NETWORK_MODULES = {"httpx", "httpcore", "openai", "aiohttp", "anyio", "urllib3", "requests", "ssl", "h11", "h2"}


class EmptyReplyError(Exception):
    """The model streamed nothing but whitespace (treated as transient)."""


def _is_litellm_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("litellm")


def transient_types() -> tuple[type[BaseException], ...]:
    litellm = load_litellm()
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


def provider_error(exc: BaseException) -> BaseException:
    """Unwrap what litellm wrapped: mid-stream wrappers, and local errors it called connection errors.

    litellm 1.106.2 wraps an error raised while streaming in ``MidStreamFallbackError``
    (a ``ServiceUnavailableError``) with the mapped error in ``original_exception``, and
    maps any exception it does not know (a custom handler's ``RuntimeError``, say) to
    ``APIConnectionError``, leaving the original as ``__context__``. A JSON error raised
    reading the server's events is a ``DamagedStreamError`` (``damage.as_damage``).
    """
    litellm = load_litellm()
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


def retry_after_in(exc: BaseException) -> float | None:
    """The Retry-After (seconds) of the first header mapping in ``exc``'s chain that has one."""
    for headers in _header_maps(exc):
        seconds = retry_after_seconds(headers)
        if seconds is not None:
            return seconds
    return None

