"""The ``scripted`` provider: a test double that is called through litellm like a real model.

A ``Script`` says what ``scripted/<name>`` replies, how fast it streams, and which calls
fail and how. Replies are either a list consumed in call order, a dict of lists keyed by
the agent label (``metadata["agent"]``) consumed in that agent's call order, or a function
``(messages, info) -> str`` (``info``: ``metadata``, ``call_index``, ``seed`` and the
``response_format`` sent). A list that runs out repeats its last reply; ``default`` is
the reply when there is none at all (an empty list, an agent the dict does not name).

``faults`` maps a 0-based call index (counting every call to the script) to a fault:
  "exception"     RuntimeError (not transient),
  "timeout"       litellm.Timeout,
  "rate_limit"    litellm.RateLimitError (429),
  "unavailable"   litellm.ServiceUnavailableError (503),
  "server_error"  litellm.InternalServerError,
  "empty"         reply "",
  "junk"          random garbage,
  "hang"          wait before the first piece, then stream the reply,
  "stall"         stream the first piece, wait, then stream the rest.
The errors are real litellm exceptions raised inside the handler; "rate_limit" and
"unavailable" carry an ``httpx.Response`` whose headers say ``retry_after`` (Retry-After:
seconds, or a string such as an HTTP date, sent as is) and ``retry_after_ms``
(retry-after-ms), so ``call_model`` reads them the way it reads a real server's. An
erring, "empty" or "junk" call consumes no reply, so a retry gets the reply the failed
call would have had; "hang" and "stall" calls consume theirs (they are slow, not wrong).

A "hang"/"stall" waits until ``Script.release()`` (for good: later hangs pass at once),
until the attempt is cancelled (``call_model`` timed out or stopped it: the call then
yields nothing more), or ``hang_s`` seconds when set. ``Script.hanging`` is set when a
call starts to wait, so a test can act on it without sleeping. ``serial=True`` makes the
script hold a lock while it generates, as a local model does, so a test can see that an
abandoned call lets go of it.

``json_schema=True`` declares that the script supports constrained output (as llama.cpp's
server does): the engine then sends it JSON-schema ``response_format``s, and its replies may
be JSON (it does not check them against the schema, so a test can send one that breaks it).

Every call is recorded in ``Script.history`` (with the ``max_tokens``, ``response_format``
and ``extra`` fields it received) with its ``fault`` and, when it ends, its
``outcome``: "finished" (streamed to the end), "cancelled" (stopped early: cancelled or
closed by the caller) or "raised". ``wait_idle`` waits until no call is running.
``keep_history=False`` records nothing (a benchmark's model serving thousands of calls: the
copies of every prompt are the double's cost, not the caller's, and would grow for good).

Asked for a whole reply (``Request.stream`` False, litellm's ``stream=False``), a call without
a fault waits once for as long as its pieces would have taken (the same pacing, steady or
not: nothing takes the pieces in between) and yields the reply whole, as a server answers an
unstreamed request; a call with a fault goes piece by piece, so "hang" and "stall" act as
they do in a stream.

Thread-safe: several agents may call the same script at once. It must not keep running
for an abandoned attempt: token delays and hangs wait on the attempt's ``Cancellation``
and end at once when it is set. Imports nothing heavy; litellm and httpx are imported
only to raise litellm's exception types.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mad_core.models.provider_kit import Cancellation, Request, current_cancellation, stream_text, whole_text

FAULTS = ("exception", "timeout", "rate_limit", "unavailable", "server_error", "empty", "junk", "hang", "stall")
_ERRORS = ("exception", "timeout", "rate_limit", "unavailable", "server_error")
_CONSUMES_NO_REPLY = (*_ERRORS, "empty", "junk")

Replies = list[str] | dict[str, list[str]] | Callable[[list[dict], dict], str]


@dataclass
class Script:
    """Replies, pacing and faults of one scripted model; ``history`` records every call."""

    replies: Replies = field(default_factory=list)
    token_delay: float = 0.0
    first_token_delay: float = 0.0
    faults: dict[int, str] = field(default_factory=dict)
    default: str = "..."
    retry_after: float | str | None = None  # Retry-After of "rate_limit"/"unavailable": seconds or a date
    retry_after_ms: float | None = None  # retry-after-ms of the same faults
    hang_s: float | None = None  # the longest a "hang"/"stall" waits (None: until released or cancelled)
    serial: bool = False  # one call at a time, a lock held while generating (like a local model)
    # Pace by the clock, as a server does: piece k is due at first_token_delay + k * token_delay
    # after the call started, however long the caller took over the pieces before it (a
    # server generates while the client reads). Default: each delay runs from the previous
    # piece being taken, so a caller that holds back (a pause) holds the model back too.
    steady: bool = False
    json_schema: bool = False  # declares constrained output: the engine sends it JSON-schema response_formats
    keep_history: bool = True  # False: record no call in ``history`` (see the module docstring)
    history: list[dict] = field(default_factory=list)
    hanging: threading.Event = field(default_factory=threading.Event, init=False, repr=False, compare=False)
    _calls: int = field(default=0, init=False, repr=False, compare=False)
    _served: dict[str | None, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)
    _changed: threading.Condition = field(init=False, repr=False, compare=False)
    _serial_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)
    _released: bool = field(default=False, init=False, repr=False, compare=False)
    _waiting: list[threading.Event] = field(default_factory=list, init=False, repr=False, compare=False)
    _active: int = field(default=0, init=False, repr=False, compare=False)
    _running: dict[int, dict] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.faults = {int(index): kind for index, kind in (self.faults or {}).items()}
        unknown = sorted(set(self.faults.values()) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown}; faults are {', '.join(FAULTS)}")
        if not (isinstance(self.replies, (list, dict)) or callable(self.replies)):
            raise TypeError("replies must be a list, a dict of lists, or a function (messages, info) -> str")
        self._changed = threading.Condition(self._lock)

    def release(self) -> None:
        """End every "hang"/"stall" wait, now and later."""
        with self._lock:
            self._released = True
            waiting, self._waiting = self._waiting, []
        for wake in waiting:
            wake.set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no call of this script is running; False if ``timeout`` passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: self._active == 0, timeout)

    def _hang(self, cancel: Cancellation) -> None:
        """Wait until released, cancelled or ``hang_s`` passed."""
        wake = threading.Event()
        with self._lock:
            if self._released:
                return
            self._waiting.append(wake)
        cancel.on_set(wake.set)
        self.hanging.set()
        wake.wait(self.hang_s)

    def _started(self) -> None:
        with self._lock:
            self._active += 1

    def _ended(self, index: int, outcome: str) -> None:
        with self._changed:
            entry = self._running.pop(index, None)  # its history entry (none without history)
            if entry is not None:
                entry["outcome"] = outcome
            self._active -= 1
            self._changed.notify_all()

    @property
    def calls(self) -> int:
        """How many calls this script has served."""
        return self._calls

    def next_call(self, request: Request) -> tuple[int, str | None, str | None]:
        """Record a call and return ``(call_index, fault, reply)``.

        The reply is None for an erring, "empty" or "junk" call and for a function script
        (the caller calls it).
        """
        with self._lock:
            index = self._calls
            self._calls += 1
            fault = self.faults.get(index)
            if self.keep_history:
                entry = {
                    "call_index": index,
                    "messages": copy.deepcopy(request.messages),
                    "metadata": dict(request.metadata),
                    "seed": request.seed,
                    "temperature": request.temperature,
                    "max_tokens": request.max_tokens,
                    "response_format": copy.deepcopy(request.response_format),
                    "extra": dict(request.extra),
                    "fault": fault,
                    "outcome": None,
                }
                self.history.append(entry)
                self._running[index] = entry
            if fault in _CONSUMES_NO_REPLY or callable(self.replies):
                return index, fault, None
            if isinstance(self.replies, dict):
                key = str(request.metadata.get("agent", ""))
                queue = self.replies.get(key) or []
            else:
                key, queue = None, self.replies
            position = self._served.get(key, 0)
            self._served[key] = position + 1
        return index, fault, (queue[min(position, len(queue) - 1)] if queue else self.default)


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
    allowed = {"replies", "token_delay", "first_token_delay", "steady", "faults", "default", "retry_after", "retry_after_ms",
               "hang_s", "serial", "json_schema"}
    for name, spec in data.items():
        unknown = set(spec or {}) - allowed
        if unknown:
            raise ValueError(f"{path}: script {name!r} has unknown keys {sorted(unknown)}")
        register_script(str(name), Script(**(spec or {})))
    return [str(name) for name in data]


def response_format_support(name: str) -> str | None:
    """"full" when ``scripted/<name>`` declares ``json_schema=True``, else None (see
    ``mad_core.models.response_format_support``)."""
    with _registry_lock:
        script = _scripts.get(name)
    return "full" if script is not None and script.json_schema else None


def check(name: str) -> str | None:
    """None if ``scripted/<name>`` exists, else a message listing the scripts."""
    if name in script_names():
        return None
    return f"Unknown script {name!r}. Registered scripts: {', '.join(script_names()) or '(none)'}."


def _junk(index: int) -> str:
    rng = random.Random(index)
    garbage = bytes(rng.randrange(256) for _ in range(48)).decode("latin-1")
    return "\ufffd" + garbage + "\x00\ufffd"


def _header(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _raise_fault(script: Script, fault: str, model: str) -> None:
    import httpx
    import litellm

    message = f"scripted fault: {fault}"
    if fault == "timeout":
        raise litellm.Timeout(message=message, model=model, llm_provider="scripted")
    if fault in ("rate_limit", "unavailable"):
        headers = {}
        if script.retry_after is not None:
            headers["Retry-After"] = _header(script.retry_after)
        if script.retry_after_ms is not None:
            headers["retry-after-ms"] = _header(script.retry_after_ms)
        status, error = (429, litellm.RateLimitError) if fault == "rate_limit" else (503, litellm.ServiceUnavailableError)
        response = httpx.Response(status, headers=headers, request=httpx.Request("POST", "http://scripted.invalid/"))
        raise error(message=message, model=model, llm_provider="scripted", response=response)
    if fault == "server_error":
        raise litellm.InternalServerError(message=message, model=model, llm_provider="scripted")
    raise RuntimeError(message)


def generate(request: Request) -> Iterator[Any]:
    """Stream the script's reply for this call as word pieces (see the module docstring)."""
    try:
        script = get_script(request.model)
    except KeyError:
        raise ValueError(check(request.model)) from None
    cancel = current_cancellation()
    index, fault, reply = script.next_call(request)
    script._started()
    outcome = "cancelled"  # unless it gets to the end or raises
    try:
        with script._serial_lock if script.serial else contextlib.nullcontext():
            if fault in _ERRORS:
                _raise_fault(script, fault, request.model)
            if fault == "empty":
                reply = ""
            elif fault == "junk":
                reply = _junk(index)
            elif reply is None:
                info = {"metadata": dict(request.metadata), "call_index": index, "seed": request.seed,
                        "response_format": request.response_format}
                reply = str(script.replies(request.messages, info))
            pacing = {"token_delay": script.token_delay, "first_token_delay": script.first_token_delay,
                      "cancel": cancel}
            pieces = (whole_text(reply, **pacing) if not request.stream and fault is None
                      else stream_text(reply, **pacing, steady=script.steady))
            for position, piece in enumerate(pieces):
                if position == 0 and fault == "hang":
                    script._hang(cancel)
                if cancel.is_set():
                    return
                yield piece
                if position == 0 and fault == "stall":
                    script._hang(cancel)
            if not cancel.is_set():
                outcome = "finished"
    except Exception:
        outcome = "raised"
        raise
    finally:
        script._ended(index, outcome)


def _echo(messages: list[dict], info: dict) -> str:
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    content = str((last_user or {}).get("content") or "")
    return content.splitlines()[0] if content.strip() else "(nothing to echo)"


register_script("echo", Script(replies=_echo))
