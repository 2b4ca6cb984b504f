"""Which API keys a debate's models need and lack, checked before anything runs.

What it is for: `key_problems(config)` lists, per model field of a debate configuration (every
agent's model, the judge, persona, summarizer and supervisor models), a remote model whose API
key is not set, with a message that names the environment variable and where a key goes. The
Debate page's Start and the CLI's `run` refuse with it before a debate is written.

It knows what the Models page knows and nothing more: the page's own catalogue
(`models.known_models`: the key each remote provider reads, and a router group's key references
with whether they are set). A router group is judged by its own entry (its endpoints' keys), before
any provider prefix. Local, scripted, callable and hf models, Ollama and vLLM servers, and providers
the catalogue does not list need no key here (their call says what is wrong, as before).

What it must not do: read or return a key's value (only whether its variable is set), call a
model or the network, import streamlit, or raise on a configuration it cannot read (it then finds
nothing: the configuration's own validation names the problem).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .models import known_models

MODEL_FIELDS = ("judge_model", "persona_model", "summarizer_model", "supervisor_model")
SECRETS_FILE = ".streamlit/secrets.toml"


def _model_fields(config: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(field, model name) of every model a configuration names."""
    for index, agent in enumerate(config.get("agents") or []):
        if isinstance(agent, Mapping) and isinstance(agent.get("model"), str) and agent["model"].strip():
            yield f"agents[{index}].model", agent["model"].strip()
    for field in MODEL_FIELDS:
        value = config.get(field)
        if isinstance(value, str) and value.strip():
            yield field, value.strip()


def missing_key(model: str, catalogue: list[dict] | None = None) -> str | None:
    """The environment variable(s) `model` needs and lacks, as the Models page names them, or None."""
    entries = catalogue if catalogue is not None else known_models()
    for entry in entries:  # a router group's own entry first: its name wins over a provider prefix
        if entry["kind"] == "router" and entry["name"] == model:
            return None if entry["key_present"] else entry["key_env"]
    provider = model.split("/", 1)[0] if "/" in model else ""
    for entry in entries:
        if entry["kind"] == "remote" and entry["key_env"] and entry["name"].split("/", 1)[0] == provider:
            return None if entry["key_present"] else entry["key_env"]
    return None


def key_message(model: str, variable: str) -> str:
    """What a refusal says: the model, the variable, where a key goes."""
    return (f"{model} needs an API key and {variable} is not set: set the environment variable {variable} "
            f"(or put {variable} = \"...\" in {SECRETS_FILE}, which the app reads at start), then start "
            f"again. The Models page shows which keys are set.")


def key_problems(config: Any) -> list[tuple[str, str]]:
    """(field, message) for every model of `config` (a mapping, or a `DebateConfig`) whose API key is
    missing; [] when every model can be called as far as keys go. Never raises."""
    try:
        data = config.to_dict() if hasattr(config, "to_dict") else config
        if not isinstance(data, Mapping):
            return []
        catalogue = known_models()
        found = []
        for field, model in _model_fields(data):
            variable = missing_key(model, catalogue)
            if variable:
                found.append((field, key_message(model, variable)))
        return found
    except Exception:  # noqa: BLE001 - an unreadable configuration: its own validation says why
        return []
