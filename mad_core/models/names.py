"""What a model name means, without calling any model: its provider, the module serving it,
whether it is served one request at a time, streams on this machine, is a ``local/`` model,
and whether its backend takes a JSON-schema ``response_format``.

A model name that is a group of the router file is the router's, whatever its prefix.
"""
from __future__ import annotations

import importlib

from mad_core.models import router
from mad_core.models.loader import load_litellm

# Our own providers and the modules that implement them: all but ``local`` (see ``stream._route``)
# are litellm custom providers.
PROVIDER_MODULES = {
    "local": "mad_core.models.local_gguf",
    "scripted": "mad_core.models.scripted",
    "hf": "mad_core.models.hf_local",
    "callable": "mad_core.models.callables",
}
CUSTOM_PROVIDERS = ("scripted", "hf", "callable")
_SERIAL_PROVIDERS = {"hf"}  # a local GGUF's llama-server has parallel slots
_STREAMS_HERE = {"local", "hf"}
# Providers whose servers compile any JSON schema into a grammar (llama.cpp's server, vLLM).
_GRAMMAR_PROVIDERS = {"local", "hosted_vllm"}


def split_name(name: str) -> tuple[str, str]:
    """``("openai", "gpt-4o-mini")`` for ``openai/gpt-4o-mini``; the rest is empty without a slash."""
    provider, _, rest = name.partition("/")
    return provider, rest


def provider_module(provider: str):
    """The module serving one of MAD Lab's own providers (``PROVIDER_MODULES``), imported on first use."""
    return importlib.import_module(PROVIDER_MODULES[provider])


def is_serial(model: str) -> bool:
    """True for backends that serve one request at a time (a local HF checkpoint)."""
    return split_name(model)[0] in _SERIAL_PROVIDERS and not router.is_group(model)


def streams_here(model: str) -> bool:
    """True for models that stream on this machine (``local/``, ``hf/``): bounded by the time
    without a new piece rather than by the whole reply (``RetryPolicy``)."""
    return split_name(model)[0] in _STREAMS_HERE and not router.is_group(model)


def is_local(model: str) -> bool:
    """True for ``local/...`` models (llama.cpp), the ones ``call_model``'s ``extra`` is meant for."""
    return split_name(model)[0] == "local" and not router.is_group(model)



def response_format_support(model: str) -> str | None:
    """How ``model`` takes a JSON-schema ``response_format`` (constrained output).

    "full": any JSON schema, length and size keywords included (``local/`` models, i.e.
    llama.cpp's server; ``hosted_vllm/``; a script with ``json_schema=True``); "subset":
    a hosted API whose litellm entry supports response schemas
    (``litellm.supports_response_schema``), whose strict mode may refuse length, size and
    range keywords; None: not supported (``hf/``, ``callable/``, router groups, other
    remote models), so the request is made in words only. No network.
    """
    provider, rest = split_name(model)
    if router.is_group(model):
        return None  # a group may mix backends that do and do not support it
    if provider in _GRAMMAR_PROVIDERS:
        return "full"
    if provider == "scripted":
        return provider_module("scripted").response_format_support(rest)
    if provider in PROVIDER_MODULES or not rest:
        return None
    try:
        return "subset" if load_litellm().supports_response_schema(model=model) else None
    except Exception:  # noqa: BLE001 - a model litellm does not know
        return None
