"""llama-server's prompt cache in RAM: the server's memory as its slots change hands.

When a caller takes over a slot that holds another conversation, llama.cpp saves that
conversation's KV state to a prompt cache in the server's RAM (``--cache-ram`` MiB; llama.cpp's
default 8192). MAD Lab gives each debate's agent a slot of its own while there are enough
(`llama_server.SlotTable`), so over a day of debates slots change hands all the time, and with the
default the server grew by the size of every conversation it had put aside (a classroom trial:
0.52 GB to 2.23 GB in an hour). MAD Lab starts it with ``--cache-ram`` at
`llama_server.DEFAULT_CACHE_RAM_MIB` (``MADLAB_LLAMA_CACHE_RAM``).

This benchmark starts the default model's server (as MAD Lab does: ``LlamaServer.command``) with
llama.cpp's default and with MAD Lab's bound, and sends each ``--requests`` distinct prompts of
``--words`` words, on slots 0, 1, 2, 3, 0, 1, ... (each request from the fifth on puts a slot's
conversation aside), reading the server's RSS (VmRSS) after each. Target: with MAD Lab's bound,
the growth over the requests that put a conversation aside is at most the bound plus 10 %.

    .venv/bin/python bench/memory_prompt_cache.py
    .venv/bin/python bench/memory_prompt_cache.py --requests 8 --words 150    # quicker, smaller

Skipped, with the reason, when the default model or llama-server is not installed.
"""
from __future__ import annotations

import json
import random
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Result, Target, finish, parser, rss_mib  # noqa: E402
from mad_core.models import DEFAULT_MODEL, validate_model_name  # noqa: E402
from mad_core.models import llama_server, local_gguf  # noqa: E402

LLAMA_DEFAULT_MIB = 8192  # llama.cpp's own --cache-ram
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def prompts(count: int, words: int) -> list[str]:
    """Distinct prompts that share no prefix (so each one replaces what its slot held)."""
    rng = random.Random(7)
    return [" ".join(f"w{rng.randrange(10**5)}x" for _ in range(words)) for _ in range(count)]


def run(cache_ram_mib: int, texts: list[str], slots: int) -> list[tuple[int, float]]:
    """(prompt tokens, server RSS MiB after the request) for each prompt, on a fresh server."""
    server = llama_server.LlamaServer(local_gguf.resolve(DEFAULT_MODEL.split("/", 1)[1]),
                                      executable=llama_server.binary(), slots=slots, cache_ram_mib=cache_ram_mib)
    server.ensure_running()
    out = [(0, rss_mib(server.pid))]
    try:
        for n, text in enumerate(texts):
            body = json.dumps({"prompt": text, "n_predict": 1, "id_slot": n % slots, "cache_prompt": True}).encode()
            request = urllib.request.Request(f"{server.url}/completion", body, {"Content-Type": "application/json"})
            with _NO_PROXY.open(request, timeout=1800) as response:
                tokens = json.load(response).get("tokens_evaluated") or 0
            out.append((tokens, rss_mib(server.pid)))
    finally:
        server.stop()
    return out


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--requests", type=int, default=12)
    cli.add_argument("--words", type=int, default=300, help="words a prompt (about 6 tokens each)")
    args = cli.parse_args()
    bound = llama_server.DEFAULT_CACHE_RAM_MIB
    result = Result("memory_prompt_cache", "llama-server's RSS as slots change hands: llama.cpp's prompt cache "
                    f"default ({LLAMA_DEFAULT_MIB} MiB) vs MAD Lab's bound ({bound} MiB)",
                    ["request", "prompt tokens", f"RSS MiB, --cache-ram {LLAMA_DEFAULT_MIB}",
                     f"RSS MiB, --cache-ram {bound}"])
    problem = validate_model_name(DEFAULT_MODEL) or (None if llama_server.binary() else "no llama-server binary")
    if problem:
        result.skipped = problem
        return finish(result, args)
    slots = llama_server.DEFAULT_SLOTS
    texts = prompts(args.requests, args.words)
    default, bounded = run(LLAMA_DEFAULT_MIB, texts, slots), run(bound, texts, slots)
    for n, ((tokens, before), (_, after)) in enumerate(zip(default, bounded)):
        result.rows.append(["server started" if n == 0 else n, tokens, before, after])
    aside = args.requests - slots  # requests that put a slot's conversation aside
    if aside > 0:
        result.targets.append(Target(f"growth over the {aside} requests that put a conversation aside, bounded",
                                     bounded[-1][1] - bounded[slots][1], bound * 1.1, "MiB"))
        result.notes.append(f"the same requests with llama.cpp's default grew the server by "
                            f"{default[-1][1] - default[slots][1]:.0f} MiB")
    result.notes.append(f"{slots} slots, one KV pool ({llama_server.DEFAULT_CTX_PER_SLOT} tokens a slot) allocated "
                        "at start; each request's prompt shares no prefix with the slot's, so from the "
                        f"{slots + 1}th on each one puts a conversation aside")
    return finish(result, args)


if __name__ == "__main__":
    sys.exit(main())
