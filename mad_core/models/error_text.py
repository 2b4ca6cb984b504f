"""Error texts for people: ``TypeName: message``, durations, and no API keys.

``describe(exc)`` is what ``call_model`` reports for a failure; ``redact`` removes the values
of secret-looking environment variables, of those the router file refers to, and key-shaped
strings. A failure to reach an Ollama server says where it was looked for and how to start one.
"""
from __future__ import annotations

import os
import re

from mad_core.models import ollama, router

_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


def _redact(text: str) -> str:
    """Remove API keys: values of secret-looking environment variables or of those the router
    file refers to, and key-shaped strings."""
    secrets = [value for name, value in os.environ.items() if _SECRET_ENV.search(name)]
    for value in secrets + router.secret_values():
        if len(value) >= 8:
            text = text.replace(value, "[REDACTED]")
    return re.sub(r"\b(?:sk|gsk|xai)-[A-Za-z0-9_\-]{16,}|\bAIza[A-Za-z0-9_\-]{35}", "[REDACTED]", text)


def seconds_text(value: float) -> str:
    """``30``, ``0.25``, ``2.5``: a duration for an error text."""
    return f"{value:.0f}" if value >= 10 else f"{round(value, 2):g}"


def describe(exc: BaseException) -> str:
    """``TypeName: message`` without litellm's repeated prefix, tracebacks or keys."""
    name = type(exc).__name__
    message = str(getattr(exc, "message", None) or exc).strip()
    message = re.sub(rf"^(?:(?:litellm\.)?{name}:\s*)+", "", message)  # litellm repeats the type name
    message = message.split("\nTraceback (most recent call last)")[0].strip()
    if len(message) > 1000:
        message = message[:1000] + "..."
    if "OllamaException" in message and re.search(r"connect|refused|unreachable|timed out", message, re.I):
        message += (f" (no Ollama server answers at {ollama.api_base()}: start it with `ollama serve`, "
                    "or set OLLAMA_API_BASE to where it runs)")
    return _redact(f"{name}: {message}" if message else name)

