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
``completion_tokens``. ``backends._handler_class()`` wraps such a function into a
``litellm.CustomLLM``. Each attempt is pulled in a helper thread (``stream._Pump``); a backend
that can stop early checks ``current_cancellation()`` between tokens, and is closed from that
thread when it next yields after the attempt was abandoned (timeout, stop, or an error in a callback).

This file is only the face: it re-exports the layer's public names and holds no logic. The
work is split by job, each module importing only those below it (no circle):
  ``loader``       importing litellm the way MAD Lab needs it (``load_litellm``),
  ``errors``       the error classes, which failures are transient, what litellm wrapped, Retry-After,
  ``error_text``   error texts for people, keys redacted,
  ``provider_kit`` what a backend works with (``Request``, ``Cancellation``, ``stream_text``),
  ``names``        what a model name means (provider, serial, streams here, ``response_format``),
  ``limits``       ``StreamLimits`` and ``RetryPolicy``,
  ``backends``     registering the in-process backends with litellm (``ensure_registered``),
  ``stream``       one streamed attempt (the helper thread, the clock, the repeat guard),
  ``calling``      ``call_model``: attempts, retries and the ``CallResult``,
  ``catalogue``    the default model, the providers, a name's check and the Models page's list.
"""

from mad_core.models.backends import ensure_registered
from mad_core.models.calling import CallResult, call_model
from mad_core.models.catalogue import DEFAULT_MODEL, known_models, provider_names, validate_model_name
from mad_core.models.errors import EmptyReplyError, retry_after_seconds
from mad_core.models.limits import (
    LOCAL_FIRST_PIECE_ENV,
    LOCAL_FIRST_PIECE_S,
    LOCAL_IDLE_ENV,
    LOCAL_IDLE_S,
    LOCAL_TOTAL_ENV,
    LOCAL_TOTAL_S,
    REPEAT_LIMIT,
    REPEAT_LIMIT_ENV,
    RetryPolicy,
    StreamLimits,
)
from mad_core.models.names import is_local, is_serial, response_format_support, streams_here
from mad_core.models.provider_kit import Cancellation, Request, current_cancellation, split_pieces, stream_text

__all__ = [
    "DEFAULT_MODEL", "LOCAL_FIRST_PIECE_ENV", "LOCAL_FIRST_PIECE_S", "LOCAL_IDLE_ENV", "LOCAL_IDLE_S",
    "LOCAL_TOTAL_ENV", "LOCAL_TOTAL_S", "REPEAT_LIMIT", "REPEAT_LIMIT_ENV", "CallResult", "Cancellation",
    "EmptyReplyError", "Request", "RetryPolicy", "StreamLimits", "call_model", "current_cancellation",
    "ensure_registered", "is_local", "is_serial", "known_models", "provider_names", "response_format_support",
    "retry_after_seconds", "split_pieces", "stream_text", "streams_here", "validate_model_name",
]
