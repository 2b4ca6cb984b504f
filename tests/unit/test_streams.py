"""Streams that go wrong without failing: a model that repeats itself, an event that cannot be read.

A reply that streams the same piece again and again (as the looping default model does) is cut
at ``RetryPolicy.repeat_limit`` and kept, marked "cut: the model repeated itself" (litellm's own
guard, which failed the call three times over, is off). A server-sent event that cannot be read
(tests/unit/openai_server.py's ``malformed_at``) is a "damaged stream": the attempt is retried,
and a call that stays damaged fails with that cause, never "ok" with a piece missing.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mad_core import DebateConfig, DebateEngine
from mad_core.events import DebateFinished, TurnFinished
from mad_core.models import RetryPolicy, call_model
from mad_core.models.callables import register_callable, unregister_callable
from mad_core.store import Store

sys.path.insert(0, str(Path(__file__).parent))
from openai_server import OpenAIServer  # noqa: E402

# litellm 1.106.2's OpenAI-compatible stream path reads pydantic fields the deprecated way.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ASK = [{"role": "user", "content": "What is the capital of France?"}]
LOOP = "Paris is the capital." + " again" * 150  # " again" 150 times in a row
CUT = "cut: the model repeated itself (the same piece 100 times in a row)"


# ----------------------------------------------------------------------------- a model that repeats itself


def test_a_reply_that_repeats_one_piece_is_cut_and_kept_not_failed(script):
    model, s = script([LOOP])
    pieces: list[str] = []
    result = call_model(model, ASK, on_token=pieces.append, retry=RetryPolicy(max_attempts=3))
    assert (result.status, result.attempts, result.error, result.note) == ("ok", 1, None, CUT)
    assert result.text == "".join(pieces) == "Paris is the capital." + " again" * 100  # cut at the limit
    assert s.wait_idle(5) and [c["outcome"] for c in s.history] == ["cancelled"]  # the stream was closed


def test_a_reply_below_the_repeat_limit_is_whole_and_unmarked(script, monkeypatch):
    model, _ = script(["Paris." + " again" * 99])
    result = call_model(model, ASK)
    assert (result.status, result.note, result.text.count(" again")) == ("ok", None, 99)
    monkeypatch.setenv("MADLAB_REPEAT_LIMIT", "5")
    short = call_model(model, ASK)
    assert (short.status, short.text.count(" again")) == ("ok", 5)
    assert short.note == "cut: the model repeated itself (the same piece 5 times in a row)"
    monkeypatch.setenv("MADLAB_REPEAT_LIMIT", "0")  # never cut, and litellm's own guard (100 pieces) is off too
    looping, _ = script([LOOP])
    whole = call_model(looping, ASK)
    assert (whole.status, whole.attempts, whole.note, whole.text) == ("ok", 1, None, LOOP)


def test_a_looping_agent_keeps_its_turn_in_a_debate_with_the_note(script, roles, tmp_path):
    loop = f"{LOOP}\nFinal answer: Paris"
    model, _ = script(roles(discussion=lambda messages, meta: loop if meta["agent"] == "Agent 1" else
                            f"{meta['agent']} thinks.\nFinal answer: Paris"))
    config = DebateConfig.from_dict({"question": "What is the capital of France?", "rounds": 1, "max_rounds": 1,
                                     "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)]})
    engine = DebateEngine(config, store=Store(tmp_path / "db.sqlite"))
    events = list(engine.run())
    [end] = [e for e in events if isinstance(e, DebateFinished)]
    assert end.status == "finished"
    looped = [e.turn for e in events if isinstance(e, TurnFinished) and e.turn.agent == "Agent 1"
              and e.turn.kind == "discussion"]
    assert [(t.status, t.error, t.attempts) for t in looped] == [("ok", CUT, 1)]
    with Store(tmp_path / "db.sqlite") as store:
        stored = {t.id: t for t in store.turns(engine.debate_id)}
        assert (stored[looped[0].id].status, stored[looped[0].id].error) == ("ok", CUT)
        assert all(t.error is None for t in stored.values() if t.id != looped[0].id)  # only the looping turn


def test_an_openai_compatible_server_that_loops_is_cut_too(monkeypatch):
    """litellm's guard is off on the HTTP path as well (it raised there after 100 pieces)."""
    with OpenAIServer("looper", reply=lambda messages: LOOP) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
        monkeypatch.setenv("OPENAI_API_BASE", server.api_base)
        result = call_model("openai/looper", ASK, retry=RetryPolicy(max_attempts=3, timeout=60))
    assert (result.status, result.attempts, result.note) == ("ok", 1, CUT)
    assert result.text == "Paris is the capital." + " again" * 100


# ----------------------------------------------------------------------------- a damaged stream


@pytest.fixture(params=["openai", "hosted_vllm"])
def endpoint(request, monkeypatch):
    """(provider, server factory): litellm reads openai/ with the openai SDK, hosted_vllm/ with its own
    line iterator, which used to turn an unreadable event into nothing."""
    provider = request.param
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")

    def serve(**options) -> OpenAIServer:
        server = OpenAIServer("damaged", reply=lambda messages: "one two three four five six", **options).start()
        monkeypatch.setenv("OPENAI_API_BASE", server.api_base)
        monkeypatch.setenv("HOSTED_VLLM_API_BASE", server.api_base)
        return server

    return provider, serve


def test_a_damaged_event_is_retried_and_the_retry_gives_the_whole_reply(endpoint):
    provider, serve = endpoint
    server = serve(malformed_at=2, malformed_calls=1)  # the first reply loses " three"
    retries: list[str] = []
    try:
        result = call_model(f"{provider}/damaged", ASK, on_retry=lambda n, error: retries.append(error),
                            sleep=lambda seconds: None, retry=RetryPolicy(max_attempts=3, timeout=60))
    finally:
        server.stop()
    assert (result.status, result.text, result.attempts, result.note) == ("ok", "one two three four five six", 2, None)
    assert len(retries) == 1 and retries[0].startswith("DamagedStreamError: damaged stream: an event could not be read")
    assert server.calls == 2


def test_a_stream_that_stays_damaged_fails_with_that_cause_never_ok(endpoint):
    provider, serve = endpoint
    server = serve(malformed_at=2)
    try:
        result = call_model(f"{provider}/damaged", ASK, sleep=lambda seconds: None,
                            retry=RetryPolicy(max_attempts=3, timeout=60))
    finally:
        server.stop()
    # Must not happen: "ok" with the text "one two four five six".
    assert (result.status, result.attempts) == ("failed", 3)
    assert result.error.startswith("DamagedStreamError: damaged stream: an event could not be read")
    assert result.error.endswith("(3 attempts)") and server.calls == 3


def test_a_json_error_in_a_callable_models_own_code_is_not_a_damaged_stream():
    def parses(messages):
        return json.loads("{not json")

    name = register_callable(parses, "parses")
    try:
        result = call_model(name, ASK, sleep=lambda seconds: None)
    finally:
        unregister_callable("parses")
    assert (result.status, result.attempts) == ("failed", 1)  # not transient: asked once
    assert result.error.startswith("JSONDecodeError: ")
