"""Bounds that keep a long-lived server's memory flat over a day of class debates.

- `mad_core.live` keeps every running debate but only the `MAX_FINISHED` most recently finished
  ones; an older finished debate is read from the store, where it is the same debate.
- A debate whose worker died (its end known only in memory) is never dropped.
- llama-server's prompt cache in RAM is bounded (`--cache-ram`), not llama.cpp's 8 GiB default.
- The charts' in-process embedding memo (`madlab_ui.plots`) starts afresh past `MAX_MEMO_TEXTS` texts.
"""
from __future__ import annotations

import threading

import pytest

from mad_core import live
from mad_core.config import DebateConfig
from mad_core.controller import Controller
from mad_core.models import llama_server
from mad_core.models.llama_server import DEFAULT_CACHE_RAM_MIB, LlamaServer, LlamaServerError
from mad_core.store import Store
from mad_core.view import DebateView
from madlab_ui import plots
from tests import builders
from tests.conftest import role_replies


debater = role_replies()  # discussion turns answer Paris, ballots pick solution 1


def config(model: str) -> DebateConfig:
    return builders.config(model, 2, rounds=1, max_rounds=1, protocol="simple_voting")


def finished(model: str) -> live.LiveDebate:
    debate = live.start(config(model), store=Store())
    debate.thread.join(timeout=30)
    assert debate.done and debate.status == "finished"
    return debate


@pytest.fixture
def keep_three(monkeypatch):
    monkeypatch.setattr(live, "MAX_FINISHED", 3)


def test_the_registry_keeps_only_the_newest_finished_debates_and_every_running_one(script, keep_three):
    gate = threading.Event()

    def held(messages, info):
        assert gate.wait(timeout=60), "the test never opened the gate"
        return debater(messages, info)

    held_model, _ = script(held)
    model, _ = script(debater)
    running = live.start(config(held_model), store=Store())
    try:
        done = [finished(model) for _ in range(6)]
        kept = [d for d in done if live.get(d.debate_id) is d]
        assert kept == done[-3:]  # the three most recently finished
        assert all(live.get(d.debate_id) is None for d in done[:3])
        # Must not happen: a running debate dropped, however many finished after it started.
        assert live.get(running.debate_id) is running and running in live.running()
    finally:
        gate.set()
        running.thread.join(timeout=30)
    assert running.done and live.get(running.debate_id) is running  # now the newest finished one


def test_a_dropped_debate_reads_from_the_store_as_it_ran(script, keep_three):
    model, _ = script(debater)
    first = finished(model)
    shown = first.view()
    for _ in range(3):
        finished(model)
    assert live.get(first.debate_id) is None
    stored = DebateView.from_store(Store(), first.debate_id)
    assert stored.status == shown.status == "finished"
    assert [(t.agent, t.kind, t.text) for t in stored.turns] == [(t.agent, t.kind, t.text) for t in shown.turns]
    assert stored.decision.answer == shown.decision.answer == "Paris"


def test_a_debate_whose_worker_died_is_never_dropped(script, keep_three):
    def broken():
        yield from ()
        raise RuntimeError("the worker fell over")

    died = live._register(live.LiveDebate("died-" + "0" * 26, broken(), Controller()))
    died.thread.join(timeout=30)
    assert died.done and died.pinned and died.status == "failed"
    model, _ = script(debater)
    for _ in range(4):
        finished(model)
    assert live.get(died.debate_id) is died  # the store never heard how it ended: only here can it be read


def test_llama_server_bounds_its_prompt_cache_in_ram(monkeypatch, tmp_path):
    cmd = LlamaServer("/models/m.gguf", executable="x").command(1)
    assert cmd[cmd.index("--cache-ram") + 1] == str(DEFAULT_CACHE_RAM_MIB) and 0 < DEFAULT_CACHE_RAM_MIB <= 1024
    assert LlamaServer("/m.gguf", executable="x", cache_ram_mib=0).command(1).count("--cache-ram") == 1
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("MADLAB_LLAMA_SERVER", "/bin/true")
    monkeypatch.setenv("MADLAB_LLAMA_GPU_LAYERS", "0")
    monkeypatch.setenv("MADLAB_LLAMA_CACHE_RAM", "0")  # 0: the cache is off
    try:
        server = llama_server.server_for(str(gguf))
        assert server.command(1)[server.command(1).index("--cache-ram") + 1] == "0"
    finally:
        llama_server._servers.pop(str(gguf.resolve()), None)
    monkeypatch.setenv("MADLAB_LLAMA_CACHE_RAM", "-1")  # must not happen: llama.cpp's "no limit" let through
    with pytest.raises(LlamaServerError, match="MADLAB_LLAMA_CACHE_RAM"):
        llama_server.server_for(str(gguf))


def test_the_charts_embedding_memo_starts_afresh_past_its_bound(monkeypatch):
    calls: list[list[str]] = []

    def embed(texts):
        calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    monkeypatch.setattr(plots, "EMBED", embed)
    monkeypatch.setattr(plots, "MAX_MEMO_TEXTS", 3)
    monkeypatch.setattr(plots, "_memos", {})
    memo = plots._memo()
    memo(["a", "bb", "ccc"])
    assert plots._memo() is memo  # within the bound: the same memo, nothing embedded again
    plots._memo()(["a"])
    assert len(calls) == 1
    memo(["dddd"])  # a fourth text: past the bound
    fresh = plots._memo()
    assert fresh is not memo and fresh.vectors == {}  # must not happen: a memo that grows all day
