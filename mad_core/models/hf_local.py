"""The ``hf`` provider: a Hugging Face checkpoint in a local directory, run with transformers.

``hf//abs/path/to/dir`` runs the checkpoint in that directory (litellm strips ``hf/``, so
the handler sees ``/abs/path/to/dir``); ``register_hf_alias`` names one. Nothing is
downloaded (``local_files_only``). The model runs on CUDA when torch sees a GPU, else on
the CPU; it is loaded once and serves one request at a time (a lock per model).
Generation runs in a thread and streams through ``transformers.TextIteratorStreamer``.

This is the small-experiment path, on purpose: one request at a time, no batching (about 12
tokens/s for SmolLM2-135M on an H100, measured), so a simultaneous round's agents queue
behind each other. GPU work at scale belongs to a serving engine with continuous batching:
vLLM or SGLang reached as ``hosted_vllm/<model>``, several of them through a router file
(``mad_core.models.router``; README "GPUs and clusters").
The prompt uses the tokenizer's chat template when it has one, else ``role: content``
lines. torch and transformers are imported lazily.

An abandoned attempt (``call_model`` timed out or stopped it) must not keep the model:
the attempt's ``Cancellation`` is checked once the lock is held (an abandoned attempt
does not start) and by the stopping criterion at every generated token, so generation
ends within one token and the lock is released.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

from mad_core.models.provider_kit import Request, current_cancellation, missing_package

DEFAULT_MAX_NEW_TOKENS = 512

_aliases: dict[str, str] = {}
_models: dict[str, tuple[Any, Any, threading.Lock]] = {}
_load_lock = threading.Lock()


def register_hf_alias(alias: str, path: str | os.PathLike) -> str:
    """Make ``hf/<alias>`` run the checkpoint in directory ``path``; returns the model name."""
    path = os.path.abspath(os.fspath(path))
    if not alias or "/" in alias:
        raise ValueError(f"invalid alias {alias!r}")
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise FileNotFoundError(f"no config.json in {path}")
    _aliases[alias] = path
    return f"hf/{alias}"


def hf_aliases() -> dict[str, str]:
    return dict(_aliases)


def resolve(name: str) -> str | None:
    """The checkpoint directory that ``hf/<name>`` means, or None."""
    if name in _aliases:
        return _aliases[name]
    if os.path.isabs(name) and os.path.isfile(os.path.join(name, "config.json")):
        return name
    return None


def check(name: str) -> str | None:
    """None if ``hf/<name>`` can run, else why not."""
    if resolve(name) is None:
        known = ", ".join(sorted(_aliases)) or "(none)"
        return (
            f"Unknown Hugging Face model {name!r}: use a registered alias ({known}) or an absolute "
            f"path to a checkpoint directory with a config.json, e.g. hf//models/my-model."
        )
    return missing_package("transformers", "transformers")


def _load(path: str) -> tuple[Any, Any, threading.Lock]:
    with _load_lock:
        if path not in _models:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            device = "cuda" if torch.cuda.is_available() else "cpu"
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).to(device).eval()
            _models[path] = (model, tokenizer, threading.Lock())
        return _models[path]


def _prompt(tokenizer, messages: list[dict]) -> str:
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    lines = [f"{m.get('role', '')}: {m.get('content') or ''}" for m in messages]
    return "\n".join(lines + ["assistant:"])


def generate(request: Request) -> Iterator[Any]:
    path = resolve(request.model)
    if path is None:
        raise ValueError(check(request.model))
    cancel = current_cancellation()
    model, tokenizer, lock = _load(path)

    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

    stop = threading.Event()

    class StopWhenAsked(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            return stop.is_set() or cancel.is_set()

    with lock:
        if cancel.is_set():
            return
        encoded = tokenizer(_prompt(tokenizer, request.messages), return_tensors="pt")
        inputs = {key: encoded[key].to(model.device) for key in ("input_ids", "attention_mask") if key in encoded}
        streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
        options: dict[str, Any] = {
            **inputs,
            "streamer": streamer,
            "max_new_tokens": request.max_tokens or DEFAULT_MAX_NEW_TOKENS,
            "stopping_criteria": StoppingCriteriaList([StopWhenAsked()]),
            "pad_token_id": tokenizer.pad_token_id or tokenizer.eos_token_id or 0,
        }
        if request.temperature is not None:
            options["do_sample"] = request.temperature > 0
            if request.temperature > 0:
                options["temperature"] = request.temperature
        if request.seed is not None:
            torch.manual_seed(request.seed)
        failure: list[BaseException] = []

        def run() -> None:
            try:
                with torch.inference_mode():
                    model.generate(**options)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                failure.append(exc)
                streamer.end()

        thread = threading.Thread(target=run, name="hf-generate", daemon=True)
        thread.start()
        pieces = []
        try:
            for piece in streamer:
                if piece:
                    pieces.append(piece)
                    yield piece
        finally:
            stop.set()
            thread.join()
        if failure:
            raise failure[0]
        if cancel.is_set():
            return
        completion = len(tokenizer("".join(pieces), add_special_tokens=False)["input_ids"])
        yield {"prompt_tokens": int(inputs["input_ids"].shape[-1]), "completion_tokens": completion}
