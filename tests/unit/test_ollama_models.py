"""An Ollama server on this machine, faked on loopback (fake_hub.FakeOllama): its models are listed and
used as ``ollama/<name>`` through litellm's own Ollama provider, a debate turn's text comes from it,
and a server that is not there, or goes away, is said in words without waiting."""
from __future__ import annotations

import socket
import time

import pytest
from fake_hub import FakeOllama

from mad_core.models import RetryPolicy, call_model, known_models, ollama, validate_model_name
from tests.builders import config, run, turns

REPLY = "The river is the Seine. Final answer: Seine"
MODELS = [{"name": "tiny:1b", "size": 807_694_464, "details": {"parameter_size": "1.2B", "quantization_level": "Q4_K_M"}},
          {"name": "bad `name` [x](http://example.com)"}]  # not an Ollama name: never listed


@pytest.fixture
def server(monkeypatch):
    fake = FakeOllama(MODELS, REPLY)
    monkeypatch.setenv("OLLAMA_API_BASE", fake.url)
    ollama.forget()
    yield fake
    fake.stop()
    ollama.forget()


def test_the_servers_models_are_listed_and_a_debate_turn_comes_from_it(server):
    listing = ollama.server_models()
    assert listing.problem is None and [m.model_name for m in listing.models] == ["ollama/tiny:1b"]
    assert listing.models[0].parameters == "1.2B" and listing.models[0].quantization == "Q4_K_M"
    assert ollama.server_models() is listing and server.tag_requests == 1  # kept: a rerun does not ask again
    listed = {m["name"]: m for m in known_models()}
    assert listed["ollama/tiny:1b"]["kind"] == "ollama" and listed["ollama/tiny:1b"]["key_present"]
    assert validate_model_name("ollama/tiny:1b") is None
    events = run(config("ollama/tiny:1b", n=1, rounds=1, max_rounds=1, question="Which river flows through Paris?"))
    assert [(t.model, t.content) for t in turns(events)][0] == ("ollama/tiny:1b", REPLY)
    prompts = [body for path, body in server.bodies if path == "/api/generate"]
    assert prompts and prompts[0]["model"] == "tiny:1b" and "Which river flows through Paris?" in prompts[0]["prompt"]


def test_a_server_that_goes_away_is_said_and_its_calls_fail_at_once(server):
    assert ollama.server_models().models
    server.stop()
    started = time.monotonic()
    listing = ollama.server_models(max_age=0)
    assert listing.models == () and listing.problem.startswith(f"The Ollama server at {server.url} stopped answering (")
    assert listing.problem.endswith("its models (ollama/tiny:1b) cannot be used until it is back.")
    assert ollama.listed_names() == [] and "ollama/tiny:1b" not in {m["name"] for m in known_models()}
    result = call_model("ollama/tiny:1b", [{"role": "user", "content": "hi"}], retry=RetryPolicy(max_attempts=1))
    assert result.status == "failed" and result.text == ""
    assert f"no Ollama server answers at {server.url}: start it with `ollama serve`" in result.error
    assert time.monotonic() - started < 5


def test_no_server_is_said_without_waiting(monkeypatch):
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    monkeypatch.setenv("OLLAMA_API_BASE", f"http://127.0.0.1:{port}")
    ollama.forget()
    started = time.monotonic()
    listing = ollama.server_models()
    assert time.monotonic() - started <= ollama.TIMEOUT_S + 0.5
    assert listing.problem.startswith(f"No Ollama server answers at http://127.0.0.1:{port} (")
    assert "Start one with `ollama serve`" in listing.problem and ollama.listed_names() == []
    ollama.forget()
