"""How far one attempt may go: ``StreamLimits`` (the bounds of one stream) and ``RetryPolicy``
(those bounds per model, the number of attempts and the waits between them).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from mad_core.models.names import streams_here

# Where a model streams on this machine (llama-server, an in-process checkpoint), a busy CPU
# makes a whole reply slow while its pieces keep coming: such a stream is bounded by the time
# without a new piece, not by the whole reply. Each bound is an environment knob (seconds;
# "inf": no bound of that kind); RetryPolicy's local_* fields override them.
LOCAL_FIRST_PIECE_ENV, LOCAL_FIRST_PIECE_S = "MADLAB_LOCAL_FIRST_PIECE_S", 300.0  # server start + prefill
LOCAL_IDLE_ENV, LOCAL_IDLE_S = "MADLAB_LOCAL_IDLE_S", 60.0  # between two pieces
LOCAL_TOTAL_ENV, LOCAL_TOTAL_S = "MADLAB_LOCAL_TOTAL_S", 900.0  # the whole reply's cap
# A stream that repeats the same piece this many times in a row is cut there and kept, marked
# so (litellm's own guard, which fails the call instead, is switched off in ``loader.load_litellm``).
REPEAT_LIMIT_ENV, REPEAT_LIMIT = "MADLAB_REPEAT_LIMIT", 100


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
