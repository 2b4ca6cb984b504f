"""How MAD Lab imports litellm: lazily (it is slow), with the offline cost map, no debug banners,
no per-piece success logging, no repeated-chunk guard of its own, and ``damage.guard`` installed.

Every module of the model layer that needs litellm calls ``load_litellm()`` inside a function.
"""
from __future__ import annotations

import os
import sys

from mad_core.models.damage import guard


def load_litellm():
    """Import litellm the way MAD Lab needs it: offline cost map, no debug banners."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    # litellm hands every streamed piece to a thread pool for its success logging (callbacks,
    # caching), which MAD Lab uses neither of: it cost ~40 % of per-call time against a
    # fixed-latency model (bench/engine_overhead.py). Usage is read from the stream itself.
    litellm.disable_streaming_logging = True
    # litellm fails a stream that repeats one piece 100 times (an InternalServerError, so it was
    # retried three times and the turn failed); ``stream_once`` cuts such a stream itself and
    # keeps what was said (``RetryPolicy.repeat_limit``).
    litellm.REPEATED_STREAMING_CHUNK_LIMIT = sys.maxsize
    guard(litellm)  # an unreadable event fails the attempt instead of vanishing (``damage``)
    return litellm
