"""The models MAD Lab knows: the default model, the providers a name may start with, a name's
check (``validate_model_name``) and the Models page's list (``known_models``; keys are only
said to be present or not, never returned).
"""
from __future__ import annotations

import difflib
import functools
import os

from mad_core.models import router
from mad_core.models.backends import ensure_registered
from mad_core.models.error_text import describe
from mad_core.models.loader import load_litellm
from mad_core.models.names import PROVIDER_MODULES, provider_module, split_name

DEFAULT_MODEL = "local/smollm2-135m"

# Remote providers shown on the Models page: (provider, example model, key env var, description).
_REMOTE_PROVIDERS = [
    ("openai", "openai/gpt-4o-mini", "OPENAI_API_KEY", "OpenAI API"),
    ("anthropic", "anthropic/claude-3-5-haiku-latest", "ANTHROPIC_API_KEY", "Anthropic API"),
    ("gemini", "gemini/gemini-2.0-flash", "GEMINI_API_KEY", "Google Gemini API"),
    ("mistral", "mistral/mistral-small-latest", "MISTRAL_API_KEY", "Mistral API"),
    ("groq", "groq/llama-3.1-8b-instant", "GROQ_API_KEY", "Groq API"),
    ("ollama", "ollama/llama3.2", None, "A local Ollama server (OLLAMA_API_BASE, default http://localhost:11434)"),
    ("hosted_vllm", "hosted_vllm/<model>", None, "An OpenAI-compatible vLLM server (set HOSTED_VLLM_API_BASE)"),
]


def provider_names() -> list[str]:
    """Every provider a model name may start with here (litellm's, the registered custom ones and
    MAD Lab's own), sorted: the Models page lists them."""
    litellm = load_litellm()
    custom = tuple(entry.get("provider") for entry in litellm.custom_provider_map)
    return list(_provider_names(tuple(litellm.provider_list), custom))


@functools.lru_cache(maxsize=4)
def _provider_names(litellm_providers: tuple, custom: tuple) -> tuple[str, ...]:
    """``provider_names`` for these litellm providers and these custom ones: every model of every
    debate is checked, and the set of ~100 names took 0.1 ms to build each time."""
    names = {getattr(p, "value", p) for p in litellm_providers}
    names.update(custom)
    names.update(PROVIDER_MODULES)
    return tuple(sorted(str(n) for n in names if n))


def validate_model_name(name: str) -> str | None:
    """None if ``name`` can be called, else a message saying what is wrong. No network."""
    if not isinstance(name, str) or not name.strip():
        return "The model name is empty: names look like provider/model (e.g. openai/gpt-4o-mini)."
    if name != name.strip():
        return f"The model name {name!r} starts or ends with whitespace."
    if router.is_group(name):
        return None
    unread = router.problem()  # a broken router file: say so where a group name is not found
    router_problem = f" (Router groups: {unread}.)" if unread else ""
    if "/" not in name:
        return (
            f"{name!r} has no provider: names look like provider/model "
            f"(e.g. openai/gpt-4o-mini or {DEFAULT_MODEL})."
        )
    try:
        ensure_registered()
    except Exception as exc:  # noqa: BLE001
        return f"Could not load the scripts file named by MADLAB_SCRIPTS: {describe(exc)}"
    provider, rest = split_name(name)
    if not rest:
        return f"{name!r} names no model after the provider {provider!r} (e.g. openai/gpt-4o-mini)."
    providers = provider_names()
    if provider not in providers:  # one line: the ~100 valid providers are listed on the Models page
        close = difflib.get_close_matches(provider, providers, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        # short: the form shows it beside the field; in Python, provider_names() lists them too
        return f"Unknown provider {provider!r}{hint}: the Models page lists the providers.{router_problem}"
    if provider in PROVIDER_MODULES:
        return provider_module(provider).check(rest)
    return None


def _local_description(alias: str, path: str) -> str:
    """A local GGUF's line: a downloaded curated model's name and measured speed, else its file name."""
    from mad_core.models import downloads

    record = downloads.read_record(alias) if path in downloads.installed().values() else None
    if not record:
        return f"GGUF model {os.path.basename(path)}"
    speed = (record.get("speed") or {}).get("tokens_per_s")
    measured = f", about {speed:g} tokens/s here" if isinstance(speed, (int, float)) else ""
    return f"{record.get('name') or alias} (downloaded GGUF{measured})"


def known_models() -> list[dict]:
    """Models for a Models page. ``key_present`` reads os.environ only and no key is returned.

    Entries that need no key have ``key_env`` None and ``key_present`` True.
    """
    from mad_core.models import hf_local, local_gguf, ollama, scripted

    def entry(name, kind, description, key_env=None):
        present = key_env is None or bool(os.environ.get(key_env))
        return {"name": name, "kind": kind, "description": description, "key_env": key_env, "key_present": present}

    models = [entry(DEFAULT_MODEL, "local", "SmolLM2-135M-Instruct (GGUF, offline, CPU): the default")]
    for alias, path in sorted(local_gguf.local_aliases().items()):
        if f"local/{alias}" != DEFAULT_MODEL:
            models.append(entry(f"local/{alias}", "local", _local_description(alias, path)))
    for name in ollama.listed_names():  # the server's last answer: known_models itself asks nothing
        models.append(entry(name, "ollama", f"Ollama model on the server at {ollama.api_base()}"))
    for alias, path in sorted(hf_local.hf_aliases().items()):
        models.append(entry(f"hf/{alias}", "hf", f"Hugging Face checkpoint in {path}"))
    for name in scripted.script_names():
        models.append(entry(f"scripted/{name}", "scripted", "Scripted replies (test double)"))
    for group, endpoints in sorted(router.groups().items()):
        key_envs = sorted({name for params in endpoints for name in router.env_refs(params)})
        models.append(entry(group, "router", router.describe(group), ", ".join(key_envs) or None))
        models[-1]["key_present"] = all(os.environ.get(name) for name in key_envs)
    for _provider, example, key_env, description in _REMOTE_PROVIDERS:
        models.append(entry(example, "remote", description, key_env))
    return models

