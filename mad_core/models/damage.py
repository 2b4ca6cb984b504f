"""Streams that arrive damaged: an event of an OpenAI-compatible stream that cannot be read.

What it is for: a server-sent event whose ``data:`` is not JSON (a proxy that cut it, a
server bug) loses that piece of the reply. litellm 1.106.2 handles it two ways, neither of
which says so honestly:
  * the ``openai/`` provider (llama-server's route too) lets the ``openai`` SDK's
    ``json.JSONDecodeError`` out of the stream, which read as a permanent failure with a
    parser's message;
  * providers read by litellm's own line iterator (``hosted_vllm/``, ``ollama/``, ...)
    turn the event into an empty piece, so the text is lost and the call reports ok.
``guard(litellm)`` makes the second raise ``DamagedStreamError`` instead, and
``as_damage(exc)`` turns the first into one; ``call_model`` treats it as transient (the
attempt is retried) and a call that stays damaged fails with "damaged stream" as its cause.

What it must not do: import litellm (the caller hands it over, already imported), swallow
any other error, or call a JSON error raised by a backend's own code (a ``callable``
model's function) a damaged stream: only errors raised while reading server-sent events are.
"""

from __future__ import annotations

import json
import os

# Where the openai SDK reads server-sent events: a JSON error raised there is a damaged event.
_SSE_READER = os.path.join("openai", "_streaming.py")


class DamagedStreamError(Exception):
    """A server-sent event of the reply could not be read (treated as transient)."""


def _unreadable(data: str) -> DamagedStreamError:
    shown = data if len(data) <= 80 else data[:80] + "..."
    return DamagedStreamError(f"damaged stream: an event could not be read ({shown!r})")


def guard(litellm) -> None:
    """Make litellm's line iterator raise ``DamagedStreamError`` for a ``data:`` event that is not JSON.

    Idempotent. Lines that are not ``data:`` (comments, ``event:`` lines) and ``[DONE]``
    are left as litellm reads them.
    """
    iterator = litellm.llms.base_llm.base_model_iterator.BaseModelResponseIterator
    original = iterator._string_to_dict_parser
    if getattr(original, "madlab_guard", False):
        return

    def strict(str_line: str) -> dict | None:
        parsed = original(str_line)
        line = str_line.strip() if isinstance(str_line, str) else ""
        if parsed is None and line.startswith("data:"):
            data = line[len("data:"):].strip()
            if data and data != "[DONE]":
                raise _unreadable(data)
        return parsed

    strict.madlab_guard = True
    iterator._string_to_dict_parser = staticmethod(strict)


def as_damage(exc: BaseException) -> BaseException:
    """``exc`` as a ``DamagedStreamError`` when it is a JSON error raised reading server-sent events, else ``exc``."""
    if not isinstance(exc, json.JSONDecodeError):
        return exc
    frame = exc.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code.co_filename.endswith(_SSE_READER):
            damaged = _unreadable(exc.doc)
            damaged.__cause__ = exc
            return damaged
        frame = frame.tb_next
    return exc
