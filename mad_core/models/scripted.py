"""The ``scripted`` provider: a test double that is called through litellm like a real model.

A ``Script`` says what ``scripted/<name>`` replies, how fast it streams, and which calls
fail and how. Replies are either a list consumed in call order, a dict of lists keyed by
the agent label (``metadata["agent"]``) consumed in that agent's call order, or a function
``(messages, info) -> str``. A list that runs out repeats its last reply; ``default`` is
the reply when there is none at all (an empty list, an agent the dict does not name).

``faults`` maps a 0-based call index (counting every call to the script) to a fault:
"exception" (RuntimeError), "timeout" (litellm.Timeout), "rate_limit"
(litellm.RateLimitError), "server_error" (litellm.InternalServerError), "empty" (reply
"") or "junk" (random garbage). A faulted call consumes no reply, so a retry gets the
reply the failed call would have had. Every call is recorded in ``Script.history``.

Thread-safe: several agents may call the same script at once. Imports nothing heavy;
litellm is imported only to raise its exception types.
"""

from __future__ import annotations

import copy
import json
import os
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mad_core.models import Request, stream_text

FAULTS = ("exception", "timeout", "rate_limit", "server_error", "empty", "junk")

Replies = list[str] | dict[str, list[str]] | Callable[[list[dict], dict], str]


@dataclass
class Script:
    """Replies, pacing and faults of one scripted model; ``history`` records every call."""

    replies: Replies = field(default_factory=list)
    token_delay: float = 0.0
    first_token_delay: float = 0.0
    faults: dict[int, str] = field(default_factory=dict)
    default: str = "..."
    history: list[dict] = field(default_factory=list)
    _calls: int = field(default=0, init=False, repr=False, compare=False)
    _served: dict[str | None, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.faults = {int(index): kind for index, kind in (self.faults or {}).items()}
        unknown = sorted(set(self.faults.values()) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown}; faults are {', '.join(FAULTS)}")
        if not (isinstance(self.replies, (list, dict)) or callable(self.replies)):
            raise TypeError("replies must be a list, a dict of lists, or a function (messages, info) -> str")

    @property
    def calls(self) -> int:
        """How many calls this script has served."""
        return self._calls

    def next_call(self, request: Request) -> tuple[int, str | None, str | None]:
        """Record a call and return ``(call_index, fault, reply)``.

        The reply is None for a faulted call and for a function script (the caller calls it).
        """
        with self._lock:
            index = self._calls
            self._calls += 1
            fault = self.faults.get(index)
            self.history.append(
                {
                    "call_index": index,
                    "messages": copy.deepcopy(request.messages),
                    "metadata": dict(request.metadata),
                    "seed": request.seed,
                    "temperature": request.temperature,
                    "max_tokens": request.max_tokens,
                    "fault": fault,
                }
            )
            if fault is not None or callable(self.replies):
                return index, fault, None
            if isinstance(self.replies, dict):
                key = str(request.metadata.get("agent", ""))
                queue = self.replies.get(key) or []
            else:
                key, queue = None, self.replies
            position = self._served.get(key, 0)
            self._served[key] = position + 1
        return index, None, (queue[min(position, len(queue) - 1)] if queue else self.default)


_scripts: dict[str, Script] = {}
_registry_lock = threading.Lock()


def register_script(name: str, script: Script) -> Script:
    """Register (or replace) ``scripted/<name>``; returns the script."""
    if not name or "/" in name or name != name.strip():
        raise ValueError(f"invalid script name {name!r}")
    with _registry_lock:
        _scripts[name] = script
    return script


def get_script(name: str) -> Script:
    """The registered script ``name`` (KeyError if there is none)."""
    with _registry_lock:
        return _scripts[name]


def script_names() -> list[str]:
    with _registry_lock:
        return sorted(_scripts)


def unregister_script(name: str) -> None:
    with _registry_lock:
        _scripts.pop(name, None)


def load_scripts_file(path: str | os.PathLike) -> list[str]:
    """Register the scripts in a JSON or YAML file mapping name -> {replies, token_delay, ...}.

    Returns the names registered.
    """
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if str(path).endswith(".json"):
        data = json.loads(text)
    else:
        import yaml

        data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of script name -> script")
    allowed = {"replies", "token_delay", "first_token_delay", "faults", "default"}
    for name, spec in data.items():
        unknown = set(spec or {}) - allowed
        if unknown:
            raise ValueError(f"{path}: script {name!r} has unknown keys {sorted(unknown)}")
        register_script(str(name), Script(**(spec or {})))
    return [str(name) for name in data]


def check(name: str) -> str | None:
    """None if ``scripted/<name>`` exists, else a message listing the scripts."""
    if name in script_names():
        return None
    return f"Unknown script {name!r}. Registered scripts: {', '.join(script_names()) or '(none)'}."


def _junk(index: int) -> str:
    rng = random.Random(index)
    garbage = bytes(rng.randrange(256) for _ in range(48)).decode("latin-1")
    return "\ufffd" + garbage + "\x00\ufffd"


def _raise_fault(fault: str, model: str) -> None:
    import litellm

    message = f"scripted fault: {fault}"
    if fault == "timeout":
        raise litellm.Timeout(message=message, model=model, llm_provider="scripted")
    if fault == "rate_limit":
        raise litellm.RateLimitError(message=message, model=model, llm_provider="scripted")
    if fault == "server_error":
        raise litellm.InternalServerError(message=message, model=model, llm_provider="scripted")
    raise RuntimeError(message)


def generate(request: Request) -> Iterator[Any]:
    """Stream the script's reply for this call as word pieces."""
    try:
        script = get_script(request.model)
    except KeyError:
        raise ValueError(check(request.model)) from None
    index, fault, reply = script.next_call(request)
    if fault in ("exception", "timeout", "rate_limit", "server_error"):
        _raise_fault(fault, request.model)
    if fault == "empty":
        reply = ""
    elif fault == "junk":
        reply = _junk(index)
    elif reply is None:
        info = {"metadata": dict(request.metadata), "call_index": index, "seed": request.seed}
        reply = str(script.replies(request.messages, info))
    yield from stream_text(reply, token_delay=script.token_delay, first_token_delay=script.first_token_delay)


def _echo(messages: list[dict], info: dict) -> str:
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    content = str((last_user or {}).get("content") or "")
    return content.splitlines()[0] if content.strip() else "(nothing to echo)"


register_script("echo", Script(replies=_echo))
