"""Models of an Ollama server on this machine (or wherever ``OLLAMA_API_BASE`` points): listed from its
``GET /api/tags`` and used through litellm's own Ollama provider as ``ollama/<name>`` (litellm reads
``OLLAMA_API_BASE`` too; nothing of MAD Lab's call path is special for them).

``server_models`` asks the server with a short timeout (``TIMEOUT_S``) and keeps the answer for
``TTL_S`` seconds, so a page that asks on every rerun waits at most once in a while; a server that
does not answer, or stopped answering, gives a ``Listing`` whose ``problem`` says so in words.
``listed_names`` gives the names of the last answer without asking again (the Models page's table
and the Debate form's model boxes offer them).

What it must not do: wait on a server that does not answer (no retries, one short timeout), go
through a proxy to reach it, start, stop or pull anything on it, or import streamlit.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

DEFAULT_BASE = "http://127.0.0.1:11434"
TIMEOUT_S = 1.0
TTL_S = 10.0
PROVIDER = "ollama"

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}")  # what Ollama names look like; nothing else is listed


@dataclass(frozen=True)
class OllamaModel:
    """One model the server has pulled."""

    name: str
    size: int | None
    parameters: str | None
    quantization: str | None

    @property
    def model_name(self) -> str:
        """The name an agent's model box takes: ``ollama/<name>``."""
        return f"{PROVIDER}/{self.name}"


@dataclass(frozen=True)
class Listing:
    """What the server at ``base`` answered: its models, or ``problem`` (why there are none to use)."""

    base: str
    models: tuple[OllamaModel, ...]
    problem: str | None
    checked_at: float


def api_base() -> str:
    """Where the Ollama server is asked: ``OLLAMA_API_BASE``, else http://127.0.0.1:11434."""
    return (os.environ.get("OLLAMA_API_BASE") or DEFAULT_BASE).rstrip("/")


def _model(raw: dict) -> OllamaModel | None:
    name = raw.get("name") or raw.get("model")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return None
    details = raw.get("details")
    if not isinstance(details, dict):
        details = {}
    size = raw.get("size")
    return OllamaModel(name=name, size=size if isinstance(size, int) else None,
                       parameters=str(details["parameter_size"]) if details.get("parameter_size") else None,
                       quantization=str(details["quantization_level"]) if details.get("quantization_level") else None)


def _ask(base: str, seen_before: tuple[OllamaModel, ...]) -> Listing:
    """One ``GET /api/tags``; every failure becomes a Listing with its problem in words."""
    now = time.monotonic()
    try:
        with _NO_PROXY.open(f"{base}/api/tags", timeout=TIMEOUT_S) as response:
            data = json.loads(response.read().decode("utf-8"))
        raw_models = data["models"]
        if not isinstance(raw_models, list):
            raise TypeError("models is not a list")
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", None) or error
        if seen_before:
            names = ", ".join(m.model_name for m in seen_before[:5])
            return Listing(base, (), f"The Ollama server at {base} stopped answering ({reason}): its models "
                                     f"({names}) cannot be used until it is back.", now)
        return Listing(base, (), f"No Ollama server answers at {base} ({reason}). Start one with `ollama serve` "
                                 "(or set OLLAMA_API_BASE to where it runs) to use its models here.", now)
    except (ValueError, KeyError, TypeError):
        return Listing(base, (), f"The server at {base} answered /api/tags with something that is not "
                                 "Ollama's list of models.", now)
    models = tuple(m for m in (_model(raw) for raw in raw_models if isinstance(raw, dict)) if m is not None)
    return Listing(base, models, None, now)


_listings: dict[str, Listing] = {}
_seen: dict[str, tuple[OllamaModel, ...]] = {}  # base -> the models it last listed (to say it went away)
_lock = threading.Lock()


def server_models(max_age: float | None = None) -> Listing:
    """The server's models, asked at most every ``max_age`` seconds (default ``TTL_S``; 0: ask now)."""
    base = api_base()
    with _lock:
        last, seen_before = _listings.get(base), _seen.get(base, ())
    if last is not None and time.monotonic() - last.checked_at <= (TTL_S if max_age is None else max_age):
        return last
    listing = _ask(base, seen_before)
    with _lock:
        _listings[base] = listing
        if listing.problem is None:
            _seen[base] = listing.models
    return listing


def listed_names() -> list[str]:
    """``ollama/<name>`` of every model in the last answer from the server at ``api_base()`` (no request)."""
    with _lock:
        last = _listings.get(api_base())
    return [m.model_name for m in last.models] if last is not None else []


def forget() -> None:
    """Forget the kept answers (the next ``server_models`` asks again)."""
    with _lock:
        _listings.clear()
        _seen.clear()
