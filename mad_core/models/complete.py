"""One unstreamed attempt of a model call: ``litellm.completion(stream=False)``, for debates nobody
watches (sweeps, ``python -m mad_core run --no-stream``).

Why: a streamed reply costs litellm one chunk object per piece (its streaming wrapper, ~0.3 ms of
CPU a piece); one response object per call is a fraction of that, and a sweep is bound by that CPU
(bench/throughput.py). ``complete_once`` returns the same ``Attempt`` as ``stream.stream_once``, and
``calling.call_model(..., stream=False)`` runs its attempts, retries and Retry-After waits exactly as
it runs streamed ones.

What holds without a stream:
  * the bound: the reply is waited for in a helper thread for at most the whole-reply bound,
    ``StreamLimits.total`` (a remote model's ``RetryPolicy.timeout``; a model on this machine's
    ``local_total`` cap: its first-piece and idle bounds need pieces and do not apply). Past it the
    attempt is abandoned (its ``Cancellation`` is set, so an in-process backend stops at its next
    token; litellm's HTTP timeout, ``http_timeout``, lets a connection go soon after) and counts as a
    ``Timeout`` ("no reply within 120 s");
  * ``should_stop`` is asked once the reply is in, before anything is delivered: a stop drops the
    reply (status "interrupted", no text), a pause holds it back, and that time is not the model's;
  * ``on_token`` gets the whole text once; ``first_token_s`` is when the reply came (from the
    start of the call);
  * the repeat cut: the whole text is read as word pieces (``split_pieces``) and cut after the
    ``repeats``-th equal piece in a row, kept with the stream's note. A real model's tokens are
    not words, so the count may differ from the one its stream would have made;
  * a damaged stream cannot happen: a response body that cannot be read is litellm's error for it
    (retried when it is transient, like any other);
  * usage: the response's when it counts anything; a backend that reports none (litellm then says
    0 and 0) is counted by ``calling.count_tokens``, as a stream without a usage chunk is.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any

from mad_core.models import router
from mad_core.models.error_text import seconds_text
from mad_core.models.errors import EmptyReplyError
from mad_core.models.limits import StreamLimits
from mad_core.models.loader import load_litellm
from mad_core.models.names import split_name
from mad_core.models.provider_kit import Cancellation, bind_cancellation, split_pieces
from mad_core.models.stream import Attempt, _Repeats, _route


def http_timeout(limits: StreamLimits) -> float | None:
    """litellm's request timeout for an unstreamed attempt: the whole-reply bound (just above it for
    a model on this machine, so that ours names the cause); None: no bound."""
    if limits.total is None:
        return None
    return limits.total if limits.whole_reply else limits.total + 1.0


def complete_once(model, messages, options, on_token, should_stop, started, limits: StreamLimits) -> Attempt:
    """One unstreamed attempt, within ``limits.total`` (see the module docstring).

    Model errors (a timeout included) are returned in ``error``; callback errors propagate."""
    attempt = Attempt()
    complete = router.completion_for(model) or load_litellm().completion
    options = {key: value for key, value in options.items() if key != "stream_options"}  # a stream's only
    kind, value = _ask(lambda: complete(messages=messages, stream=False, **_route(model, options)), limits.total)
    if kind == "timeout":
        attempt.error = _timeout(model, limits)
        return attempt
    if kind == "error":
        attempt.error = value
        return attempt
    text, attempt.usage = _reply(value)
    if text.strip():
        attempt.first_token_s = time.perf_counter() - started
        # Asked before the reply is delivered: nothing reaches the caller after a stop, and a
        # should_stop that blocks while paused holds it back (that time is not the model's).
        if should_stop is not None and should_stop():
            attempt.interrupted = True
            return attempt
        attempt.text, attempt.note = _cut_repeats(text, limits.repeats)
        if on_token is not None:
            on_token(attempt.text)
    else:
        attempt.error = EmptyReplyError("the model returned an empty reply")
    return attempt


def _ask(call, bound: float | None) -> tuple[str, Any]:
    """Run ``call()`` in a helper thread; ``("reply", response)``, ``("error", exc)`` or
    ``("timeout", None)`` after ``bound`` seconds (the call is then told through its ``Cancellation``)."""
    cancel, box = Cancellation(), queue.SimpleQueue()

    def run() -> None:
        bind_cancellation(cancel)
        try:
            box.put(("reply", call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as the attempt's error
            box.put(("error", exc))

    threading.Thread(target=run, name="madlab-model-call", daemon=True).start()
    try:
        return box.get(timeout=bound)
    except queue.Empty:
        cancel.set()
        return "timeout", None


def _reply(response: Any) -> tuple[str, Any]:
    """The text and the usage (None when it counts nothing) of a litellm ``ModelResponse``."""
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    text = str(getattr(message, "content", None) or "")
    usage = getattr(response, "usage", None)
    if usage is not None and not (getattr(usage, "prompt_tokens", 0) or getattr(usage, "completion_tokens", 0)):
        usage = None  # a backend that counted nothing (our custom providers without a usage item)
    return text, usage


def _cut_repeats(text: str, limit: int | None) -> tuple[str, str | None]:
    """``text`` cut after the ``limit``-th equal word piece in a row, with the stream's note; as it is otherwise."""
    if limit is None:
        return text, None
    repeats, kept = _Repeats(limit), 0
    for piece in split_pieces(text):
        kept += len(piece)
        if repeats.seen(piece):
            return text[:kept], repeats.note()
    return text, None


def _timeout(model: str, limits: StreamLimits) -> BaseException:
    """The ``litellm.Timeout`` of an unstreamed attempt that got no reply within ``limits.total``."""
    message = f"no reply within {seconds_text(limits.total)} s"
    return load_litellm().Timeout(message=message, model=model, llm_provider=split_name(model)[0])
