"""The real offline model (SmolLM2-135M) on its llama-server, reached through litellm.

A whole debate; and what the server brings: its own process, parallel slots that decode
simultaneous calls together, a per-agent prompt cache, and a restart when it dies.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid

import pytest

from mad_core import DebateConfig, DebateEngine
from mad_core.events import DebateFinished, DecisionReached, TokenReceived, TurnFinished
from mad_core.models import call_model
from mad_core.store import Store


@pytest.mark.real_model
def test_offline_default_model_runs_a_debate_end_to_end(tmp_path):
    config = DebateConfig.from_dict({
        "question": "What is 2 + 3?",
        "agents": [{"label": "A", "max_tokens": 24, "temperature": 0.0},
                   {"label": "B", "max_tokens": 24, "temperature": 0.0}],  # default model: local/smollm2-135m
        "rounds": 1, "max_rounds": 1, "protocol": "simple_voting", "seed": 1, "vote_retries": 0,
    })
    assert config.agents[0].model == "local/smollm2-135m"
    store = Store(tmp_path / "real.db")
    engine = DebateEngine(config, store=store)
    events = list(engine.run())
    finished = [e.turn for e in events if isinstance(e, TurnFinished)]
    discussion = [t for t in finished if t.kind == "discussion"]
    assert [t.agent for t in discussion] == ["A", "B"]
    assert all(t.status == "ok" and t.content.strip() and t.completion_tokens > 0 for t in discussion)
    tokens = [e for e in events if isinstance(e, TokenReceived) and e.turn_id == discussion[0].id]
    assert len(tokens) > 3  # it really streamed, piece by piece
    assert any(isinstance(e, DecisionReached) for e in events)  # a vote, valid or not, led to a decision
    assert events[-1] == next(e for e in events if isinstance(e, DebateFinished))
    assert store.get_debate(engine.debate_id)["status"] == "finished"
    assert len(store.turns(engine.debate_id)) == len(finished)


# ----------------------------------------------------------------------------- through llama-server

MODEL = "local/smollm2-135m"


def _server():
    from mad_core.models import llama_server, local_gguf

    return llama_server.server_for(local_gguf.resolve(MODEL.split("/", 1)[1]))


def _count(start: int) -> list[dict]:
    return [{"role": "user", "content": f"Count from {start} to {start + 40}, one number per line."}]


@pytest.mark.real_model
def test_the_real_model_runs_in_its_own_llama_server():
    result = call_model(MODEL, _count(1), max_tokens=8, temperature=0, seed=1)
    assert result.status == "ok", result.error
    server = _server()
    assert server.alive() and server.pid != os.getpid()
    assert server.metrics()["llamacpp:tokens_predicted_total"] >= result.completion_tokens > 0
    assert "llama_cpp" not in sys.modules  # llama.cpp never runs in this process


@pytest.mark.real_model
def test_three_simultaneous_calls_decode_at_the_same_time():
    call_model(MODEL, _count(1), max_tokens=2, temperature=0, seed=1)  # the server is up
    times: dict[str, list[float]] = {agent: [] for agent in "ABC"}

    def ask(agent: str, start: int) -> None:
        # ignore_eos: every reply runs to its 40 tokens (what the model says is not the point here,
        # and a small model may end a count after a few tokens)
        result = call_model(MODEL, _count(start), max_tokens=40, temperature=0, seed=1,
                            on_token=lambda _piece: times[agent].append(time.perf_counter()),
                            metadata={"agent": agent, "debate_id": "concurrent"}, extra={"ignore_eos": True})
        assert result.status == "ok", result.error

    threads = [threading.Thread(target=ask, args=(agent, 10 * i)) for i, agent in enumerate("ABC")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(len(stamps) >= 10 for stamps in times.values()), {a: len(s) for a, s in times.items()}
    # One at a time, a call would start streaming only after the one before it finished.
    last_start = max(stamps[0] for stamps in times.values())
    first_end = min(stamps[-1] for stamps in times.values())
    assert last_start < first_end, "the three replies did not stream at the same time"


@pytest.mark.real_model
def test_an_agents_next_turn_prefills_only_what_is_new():
    server = _server()
    meta = {"agent": "cache-test", "debate_id": uuid.uuid4().hex}
    first_turn = [{"role": "system", "content": "You are a careful debater. " * 20},
                  {"role": "user", "content": "Is 91 a prime number? Answer briefly."}]
    first = call_model(MODEL, first_turn, max_tokens=24, temperature=0, seed=1, metadata=meta)
    assert first.status == "ok", first.error
    second_turn = first_turn + [{"role": "assistant", "content": first.text},
                                {"role": "user", "content": "Another agent says 91 = 7 x 13. Reconsider."}]
    before = server.metrics()["llamacpp:prompt_tokens_total"]
    second = call_model(MODEL, second_turn, max_tokens=8, temperature=0, seed=1, metadata=meta)
    prefilled = server.metrics()["llamacpp:prompt_tokens_total"] - before
    new_tokens = second.prompt_tokens - first.prompt_tokens
    assert second.status == "ok" and first.prompt_tokens > 150 and new_tokens > 0
    assert prefilled <= 1.1 * new_tokens, (prefilled, new_tokens, second.prompt_tokens)


@pytest.mark.real_model
def test_a_killed_server_is_restarted_and_the_call_retried():
    server = _server()
    call_model(MODEL, _count(1), max_tokens=2, temperature=0, seed=1)
    killed = server.pid
    retries: list[str] = []

    def kill_on_first_piece(_piece: str) -> None:
        if server.pid == killed and not retries:
            os.kill(killed, signal.SIGKILL)

    result = call_model(MODEL, _count(1), max_tokens=30, temperature=0, seed=1, on_token=kill_on_first_piece,
                        on_retry=lambda attempt, error: retries.append(error))
    assert result.status == "ok" and result.attempts == 2, (result.error, retries)
    assert retries and server.alive() and server.pid != killed
