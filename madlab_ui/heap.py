"""The app server's long-lived heap, kept out of Python's full garbage collections (``settle``).

A full (generation 2) collection walks every object the collector tracks. With the app's imports
(streamlit, litellm and the OpenAI SDK, plotly, torch and sentence-transformers for the charts) that
is ~830,000 objects and 0.45 s of CPU on 2 cores, all of it holding the GIL: whatever ran meanwhile (a
steering click's rerun, a streaming tick, another tab) stalled with it. bench/class_phones.py caught
clicks whose fragment run took 0.44-0.50 s of CPU where a run takes 10-15 ms; a debate that streams
makes enough surviving objects to bring such a collection round again and again.

``gc.freeze()`` moves every object that exists into a permanent generation no collection walks (the
use Python's documentation gives it: a server's state after its imports). ``settle()`` is called at
the end of every full run of the app: when modules were imported since the last freeze (the first
run; the first chart that loads SBERT), it collects once, so that only what is alive is frozen, and
freezes again. Objects that die later are still freed by their reference counts; only cycles among
frozen objects would outlive their use, and freezing happens a few times per process, not per run.

What it must not do: collect or freeze on a run that imported nothing new (a collection is what it
is here to spare), or draw anything.
"""
from __future__ import annotations

import gc
import sys
import threading

MODULES_STEP = 25  # modules imported since the last freeze that make the next run freeze again

_lock = threading.Lock()
_frozen_at = 0  # len(sys.modules) at the last freeze


def settle() -> bool:
    """Collect once and freeze the heap if MODULES_STEP modules were imported since the last freeze;
    True when it froze."""
    global _frozen_at
    with _lock:
        if len(sys.modules) < _frozen_at + MODULES_STEP:
            return False
        gc.collect()
        gc.freeze()
        _frozen_at = len(sys.modules)
        return True
