"""Model groups served by several endpoints through one process-wide ``litellm.Router``.

A lab with several model servers (vLLM, SGLang, llama.cpp servers, any OpenAI-compatible
endpoint, remote APIs) lists them in a router file, and a debate's agents use a group's
name as their model: the calls of a round, of a debate and of every debate in the process
are spread over the group's endpoints. Adding a server is an edit of that file, not of code.

The file is found through ``MADLAB_ROUTER`` (a path), else ``$MADLAB_HOME/router.yaml``
(``~/.madlab/router.yaml``). It is YAML (or JSON) in litellm's own proxy-config shape::

    model_list:                       # one entry per endpoint; entries sharing a model_name form a group
      - model_name: lab/smollm2
        litellm_params:
          model: hosted_vllm/HuggingFaceTB/SmolLM2-135M-Instruct
          api_base: http://gpu1:8000/v1
          api_key: os.environ/LAB_VLLM_KEY    # secrets only as environment references
    router_settings:                  # optional
      routing_strategy: simple-shuffle        # or latency-based-routing, usage-based-routing-v2
      cooldown_time: 5                        # seconds an endpoint that failed is left out

A model name that equals a group's ``model_name`` is served by the router (before any
provider prefix is looked at). ``call_model`` opens the stream through ``completion_for``;
everything else stays call_model's: streaming, the timeout per attempt, cancellation and
the only retry layer (the Router's own retries and fallbacks are off, ``num_retries=0``).

Routing: ``simple-shuffle`` by default (a weighted random pick per call; ``weight`` in
``litellm_params`` biases it). It keeps no state about calls in flight, so it stays right
when call_model closes a stream early (a stop, a timeout). ``least-busy`` is refused: it
counts calls in flight through litellm's success/failure callbacks, which a stream closed
early never fires (measured with litellm 1.106.2: after one stopped call its endpoint
counted as busy for good and every later call went to the other one). An endpoint whose
stream could not be opened for a transient reason (refused connection, 5xx, timeout) is
put in the Router's cooldown for ``cooldown_time`` seconds when its group has other
endpoints, so call_model's retry lands elsewhere (litellm itself never cools down a
refused connection); when every endpoint of a group is cooling down the call fails with a
``ServiceUnavailableError`` whose Retry-After is the cooldown, which call_model honours.

What it must not do: import litellm or yaml before a router file exists; store, log or
return an API key (the file holds ``os.environ/NAME`` references only, a literal secret is
refused except placeholders such as ``EMPTY`` for servers without authentication, and
``secret_values`` lets error texts be redacted of every referenced value);
know anything about debates.
"""
from __future__ import annotations

import copy
import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV_REF = "os.environ/"
ROUTING_STRATEGIES = ("simple-shuffle", "latency-based-routing", "usage-based-routing-v2", "cost-based-routing")
DEFAULT_STRATEGY = "simple-shuffle"
DEFAULT_COOLDOWN_S = 5.0
_SETTINGS = {"routing_strategy", "cooldown_time"}
_SECRET_PARAM = re.compile(r"key|token|secret|password|credential", re.IGNORECASE)
# Stand-ins that servers without authentication accept and that are not secrets (vLLM's docs use EMPTY).
_PLACEHOLDERS = {"empty", "none", "dummy", "no-key", "sk-no-key-required"}

_lock = threading.Lock()
_cache: dict[str, Any] = {"stamp": None, "spec": None, "problem": None, "router": None}


class RouterFileError(ValueError):
    """The router file cannot be used; the message names the file and the entry."""


def router_path() -> Path | None:
    """The router file in use: ``MADLAB_ROUTER``, else ``$MADLAB_HOME/router.yaml`` if it exists."""
    named = os.environ.get("MADLAB_ROUTER")
    if named:
        return Path(named).expanduser()
    home = Path(os.environ.get("MADLAB_HOME") or Path.home() / ".madlab").expanduser()
    path = home / "router.yaml"
    return path if path.is_file() else None


def _env_ref(value: Any) -> str | None:
    return value[len(ENV_REF):] if isinstance(value, str) and value.startswith(ENV_REF) else None


def parse(text: str, source: str = "router file") -> dict:
    """Check a router file's text; returns ``{"model_list": [...], "settings": {...}}``.

    Raises ``RouterFileError`` naming the entry at fault (never quoting a secret).
    """
    if source.endswith(".json"):
        data = json.loads(text)
    else:
        import yaml

        data = yaml.safe_load(text)
    if not isinstance(data, dict) or not isinstance(data.get("model_list"), list) or not data["model_list"]:
        raise RouterFileError(f"{source}: expected a mapping with a non-empty model_list (litellm's format)")
    unknown = sorted(set(data) - {"model_list", "router_settings"})
    if unknown:
        raise RouterFileError(f"{source}: unknown top-level keys {unknown}; allowed: model_list, router_settings")
    settings = data.get("router_settings") or {}
    if not isinstance(settings, dict) or set(settings) - _SETTINGS:
        raise RouterFileError(f"{source}: router_settings may set only {sorted(_SETTINGS)} "
                              "(retries are MAD Lab's own: retry_attempts in the debate settings)")
    strategy = settings.get("routing_strategy", DEFAULT_STRATEGY)
    if strategy not in ROUTING_STRATEGIES:
        why = " (least-busy miscounts streams that MAD Lab stops early)" if strategy == "least-busy" else ""
        raise RouterFileError(f"{source}: routing_strategy {strategy!r} is not one of "
                              f"{', '.join(ROUTING_STRATEGIES)}{why}")
    cooldown = settings.get("cooldown_time", DEFAULT_COOLDOWN_S)
    if isinstance(cooldown, bool) or not isinstance(cooldown, (int, float)) or not 0 <= cooldown <= 3600:
        raise RouterFileError(f"{source}: cooldown_time must be a number of seconds between 0 and 3600")
    for i, entry in enumerate(data["model_list"]):
        where = f"{source}: model_list[{i}]"
        params = entry.get("litellm_params") if isinstance(entry, dict) else None
        name = entry.get("model_name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise RouterFileError(f"{where}: model_name must be a non-empty name without surrounding spaces")
        if not isinstance(params, dict) or not isinstance(params.get("model"), str) or "/" not in params["model"]:
            raise RouterFileError(f"{where}: litellm_params.model must be a litellm name such as "
                                  "hosted_vllm/MODEL or openai/MODEL")
        for key, value in params.items():
            placeholder = isinstance(value, str) and value.lower() in _PLACEHOLDERS
            if _SECRET_PARAM.search(str(key)) and value is not None and _env_ref(value) is None and not placeholder:
                raise RouterFileError(f"{where}: litellm_params.{key} must be an environment reference such as "
                                      f"{ENV_REF}LAB_API_KEY, not the secret itself")
    return {"model_list": data["model_list"], "settings": {"routing_strategy": strategy,
                                                           "cooldown_time": float(cooldown)}}


def _state() -> dict:
    """The parsed file (re-read when it changes) and why it cannot be used, if so."""
    path = router_path()
    try:
        stat = path.stat() if path is not None else None
    except OSError:
        stat = None
    stamp = None if path is None else (str(path), stat and stat.st_mtime_ns, stat and stat.st_size)
    with _lock:
        if stamp != _cache["stamp"]:
            spec = problem = None
            if path is not None and stat is None:
                problem = f"the router file {path} (MADLAB_ROUTER) does not exist"
            elif path is not None:
                try:
                    spec = parse(path.read_text(encoding="utf-8"), str(path))
                except Exception as exc:  # noqa: BLE001 - unreadable, not YAML: say so, never quote the text
                    problem = str(exc) if isinstance(exc, RouterFileError) else \
                        f"{path} cannot be read as YAML or JSON ({type(exc).__name__})"
            _cache.update(stamp=stamp, spec=spec, problem=problem, router=None)
        return dict(_cache)


def problem() -> str | None:
    """Why the router file in use cannot be read (None: no file, or a good one)."""
    return _state()["problem"]


def groups() -> dict[str, list[dict]]:
    """Group name -> its entries' ``litellm_params`` (env references unresolved). Empty without a file."""
    spec = _state()["spec"]
    found: dict[str, list[dict]] = {}
    for entry in (spec or {}).get("model_list", []):
        found.setdefault(entry["model_name"], []).append(dict(entry["litellm_params"]))
    return found


def is_group(model: str) -> bool:
    return model in groups()


def env_refs(params: dict) -> list[str]:
    """Names of the environment variables an entry's parameters refer to."""
    return [name for name in map(_env_ref, params.values()) if name]


def secret_values() -> list[str]:
    """Current values of every environment variable the router file refers to (for redaction)."""
    names = {name for entries in groups().values() for params in entries for name in env_refs(params)}
    return [os.environ[name] for name in sorted(names) if os.environ.get(name)]


def describe(group: str) -> str:
    """A line for the Models page: how many endpoints and which models (no addresses, no keys)."""
    entries = groups().get(group, [])
    models = ", ".join(sorted({str(p["model"]) for p in entries}))
    strategy = (_state()["spec"] or {}).get("settings", {}).get("routing_strategy", DEFAULT_STRATEGY)
    return f"Router group: {len(entries)} endpoint{'s' * (len(entries) != 1)} ({models}), {strategy}"


def _router():
    """The process-wide ``litellm.Router`` for the file in use (rebuilt when the file changes)."""
    from mad_core.models.loader import load_litellm

    state = _state()
    if state["spec"] is None:
        raise RouterFileError(state["problem"] or "no router file")
    with _lock:
        if _cache["router"] is None or _cache["stamp"] != state["stamp"]:
            litellm = load_litellm()
            settings = state["spec"]["settings"]
            _cache["router"] = litellm.Router(
                model_list=copy.deepcopy(state["spec"]["model_list"]),  # the Router pops from its entries
                routing_strategy=settings["routing_strategy"],
                cooldown_time=settings["cooldown_time"],
                num_retries=0,  # call_model's RetryPolicy is the only retry layer
                retry_after=0,
                max_fallbacks=0,
            )
        return _cache["router"]


def _group_size(router, group: str) -> int:
    return sum(1 for d in router.model_list if d.get("model_name") == group)


def _unavailable(group: str, seconds: float, reason: str):
    """A transient error asking call_model to wait ``seconds`` (Retry-After), e.g. all endpoints cooling down."""
    import httpx

    from mad_core.models.loader import load_litellm

    response = httpx.Response(503, headers={"Retry-After": f"{seconds:g}"},
                              request=httpx.Request("POST", "http://router.invalid/"))
    return load_litellm().ServiceUnavailableError(message=reason, model=group, llm_provider="router", response=response)


def completion_for(model: str) -> Callable[..., Any] | None:
    """``litellm.completion``'s stand-in for a router group (None when ``model`` is not one).

    The returned function opens the stream through the Router. A transient failure of one
    endpoint puts it in the Router's cooldown (when the group has another endpoint);
    "every endpoint is cooling down" becomes a retryable ServiceUnavailableError.
    """
    if not is_group(model):
        return None

    def complete(**kwargs):
        from mad_core.models.errors import transient_types

        router = _router()
        kwargs["metadata"] = dict(kwargs.get("metadata") or {})  # the Router writes into it: a fresh one per attempt
        try:
            return router.completion(**kwargs)
        except Exception as exc:
            cooldown = float(router.cooldown_time or DEFAULT_COOLDOWN_S)
            if getattr(exc, "all_deployments_in_cooldown", False):
                raise _unavailable(model, cooldown, f"every endpoint of router group {model!r} failed "
                                                    f"recently and is cooling down for {cooldown:g} s") from None
            failed = getattr(exc, "failed_deployment_id", None)
            if failed and isinstance(exc, transient_types()) and _group_size(router, model) > 1:
                router.cooldown_cache.add_deployment_to_cooldown(
                    model_id=str(failed), original_exception=exc,
                    exception_status=int(getattr(exc, "status_code", 503) or 503), cooldown_time=cooldown)
            raise

    return complete


def reset() -> None:
    """Forget the parsed file and the Router (tests; a changed file is noticed without it)."""
    with _lock:
        _cache.update(stamp=None, spec=None, problem=None, router=None)
