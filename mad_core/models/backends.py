"""Registration of MAD Lab's in-process backends (``scripted``, ``hf``, ``callable``) as litellm
custom providers, so they take exactly the path remote models take.

A provider module's ``generate(request)`` yields text pieces and optionally one final usage
dict; ``_handler_class()`` wraps it into a ``litellm.CustomLLM`` (built on first use, so
litellm loads lazily). ``ensure_registered`` also loads the ``MADLAB_SCRIPTS`` file.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from mad_core.models.loader import load_litellm
from mad_core.models.names import CUSTOM_PROVIDERS, provider_module, split_name
from mad_core.models.provider_kit import Request

_register_lock = threading.Lock()
_loaded_scripts_file: str | None = None
_priced: set[str] = set()  # models of our providers given their zero price in litellm's map
# A zero price in every field litellm reads (the cache fields too: without them it warns at registration).
_FREE = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0, "cache_creation_input_token_cost": 0.0,
         "cache_read_input_token_cost": 0.0, "mode": "chat"}


def _chunk(text: str, *, finished: bool = False, usage: dict | None = None) -> dict:
    """A litellm ``GenericStreamingChunk``."""
    return {
        "text": text,
        "is_finished": finished,
        "finish_reason": "stop" if finished else "",
        "usage": usage,
        "index": 0,
        "tool_use": None,
    }


@functools.cache
def _handler_class():
    """The ``litellm.CustomLLM`` adapter class, built on first use so litellm loads lazily."""
    litellm = load_litellm()

    class BackendHandler(litellm.CustomLLM):
        """Serves a provider through a ``generate(request)`` function, streamed or not."""

        def __init__(self, provider: str, generate: Callable[[Request], Iterator[Any]]):
            super().__init__()
            self.provider = provider
            self.generate = generate

        def streaming(self, model, messages, optional_params=None, litellm_params=None, *, whole=False, **_kwargs):
            params = optional_params or {}
            request = Request(
                model=model,
                messages=messages,
                temperature=params.get("temperature"),
                max_tokens=params.get("max_tokens", params.get("max_completion_tokens")),
                seed=params.get("seed"),
                metadata=dict((litellm_params or {}).get("metadata") or {}),
                response_format=params.get("response_format"),
                extra=dict(params.get("extra_body") or {}),
                stream=not whole,
            )
            usage = None
            with contextlib.closing(iter(self.generate(request))) as items:
                for item in items:
                    if isinstance(item, dict):
                        usage = {**item, "total_tokens": item["prompt_tokens"] + item["completion_tokens"]}
                    elif item:
                        yield _chunk(item)
            yield _chunk("", finished=True, usage=usage)

        def completion(self, model, messages, model_response=None, **kwargs):
            text, usage = [], None
            for chunk in self.streaming(model, messages, whole=True, **kwargs):
                text.append(chunk["text"])
                usage = chunk["usage"] or usage
            model_response.choices[0].message.content = "".join(text)
            model_response.choices[0].finish_reason = "stop"
            model_response.model = f"{self.provider}/{model}"
            if usage:
                model_response.usage = litellm.Usage(**usage)
            # Its price, said by the provider that knows it: these backends run in this process and
            # cost nothing (``_FREE``). litellm takes a response's own ``response_cost`` as it is;
            # without it, it prices every reply again (~0.2 ms of CPU a call, bench/throughput.py).
            model_response._hidden_params["response_cost"] = 0.0
            return model_response

        async def acompletion(self, model, messages, **kwargs):
            return await asyncio.to_thread(self.completion, model, messages, **kwargs)

        async def astreaming(self, model, messages, **kwargs):
            chunks = self.streaming(model, messages, **kwargs)
            done = object()
            try:
                while (chunk := await asyncio.to_thread(next, chunks, done)) is not done:
                    yield chunk
            finally:
                chunks.close()

    return BackendHandler


def ensure_registered(model: str | None = None) -> None:
    """Register the ``scripted``, ``hf`` and ``callable`` providers with litellm.

    Idempotent and thread-safe; entries already in ``litellm.custom_provider_map`` are
    kept (a provider name registered there by someone else is left to them). Also loads
    the scripts file named by ``MADLAB_SCRIPTS`` (JSON or YAML), once per path.

    ``model``, when one of these providers serves it, gets a zero price in litellm's price map
    (once per name). It runs in this process and costs nothing (MAD Lab's own price,
    ``metrics.report.estimated_cost``, says 0.0 too); without an entry litellm searched its whole
    map and its fallback rules for every reply, about 0.7 ms of CPU a call (bench/throughput.py).
    """
    global _loaded_scripts_file
    litellm = load_litellm()
    with _register_lock:
        if model is not None and model not in _priced and split_name(model)[0] in CUSTOM_PROVIDERS:
            litellm.register_model({model: {**_FREE, "litellm_provider": split_name(model)[0]}})
            _priced.add(model)
        present = {entry.get("provider") for entry in litellm.custom_provider_map}
        for provider in CUSTOM_PROVIDERS:
            if provider not in present:
                handler = _handler_class()(provider, provider_module(provider).generate)
                litellm.custom_provider_map.append({"provider": provider, "custom_handler": handler})
        scripts_file = os.environ.get("MADLAB_SCRIPTS")
        if scripts_file and scripts_file != _loaded_scripts_file:
            provider_module("scripted").load_scripts_file(scripts_file)
            _loaded_scripts_file = scripts_file

