"""Router groups (mad_core.models.router): a debate spread over two OpenAI-compatible servers on loopback.

The servers are tests/unit/openai_server.py (stdlib, SSE streaming, usage in the last chunk),
each answering with its own name, so every stored turn says which server wrote it.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mad_core import exports
from mad_core.events import DebateFinished, TokenReceived, TurnFinished
from mad_core.models import RetryPolicy, call_model, is_serial, known_models, router, validate_model_name
from mad_core.store import Store
from tests.builders import config, run

sys.path.insert(0, str(Path(__file__).parent))
from openai_server import OpenAIServer  # noqa: E402

# litellm 1.106.2's OpenAI-compatible stream path reads pydantic fields the deprecated way.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

GROUP = "lab/smol"
SECRET = "labcred-0123456789abcdef"  # its variable's name does not look secret: only the router file says it is


def _reply(name: str):
    def reply(messages: list[dict]) -> str:
        last = str(messages[-1].get("content") or "").lower()
        return "1" if "vote" in last else f"This is {name} speaking. Final answer: 4"
    return reply


@pytest.fixture
def servers():
    with OpenAIServer("server-a", _reply("server-a")) as a, OpenAIServer("server-b", _reply("server-b")) as b:
        yield a, b


@pytest.fixture
def router_file(tmp_path, monkeypatch):
    """write(*servers_or_bases, **settings) -> path: one group GROUP over those endpoints, MADLAB_ROUTER set."""
    monkeypatch.setenv("LAB_CRED", SECRET)

    def write(*endpoints, settings: dict | None = None, name: str = GROUP) -> Path:
        entries = [{"model_name": name, "litellm_params": {
            "model": f"{'openai' if i % 2 else 'hosted_vllm'}/smol",
            "api_base": e if isinstance(e, str) else e.api_base, "api_key": "os.environ/LAB_CRED"}}
            for i, e in enumerate(endpoints)]
        path = tmp_path / "router.yaml"
        path.write_text(json.dumps({"model_list": entries, **({"router_settings": settings} if settings else {})}))
        monkeypatch.setenv("MADLAB_ROUTER", str(path))
        return path

    yield write
    router.reset()


def _dead_base() -> str:
    with OpenAIServer("gone") as gone:
        base = gone.api_base
    return base  # nothing listens there any more


def _debate(store_path, n: int = 4, **settings):
    agents = [{"label": f"Agent {i + 1}", "model": GROUP, "max_tokens": 32} for i in range(n)]
    events = run(config(GROUP, **{"question": "What is 2+2?", "agents": agents, "paradigm": "simultaneous",
                                  "rounds": 2, "max_rounds": 2, "retry_base_delay": 0.05, "timeout_s": 20,
                                  **settings}), store=Store(store_path))
    return list(events), events.engine


def test_a_debate_on_a_router_group_spreads_its_calls_over_both_servers(servers, router_file, tmp_path):
    a, b = servers
    router_file(a, b)
    assert validate_model_name(GROUP) is None and not is_serial(GROUP)

    events, engine = _debate(tmp_path / "d.db")

    assert isinstance(events[-1], DebateFinished) and engine.status == "finished", events[-1]
    turns = [e.turn for e in events if isinstance(e, TurnFinished)]
    assert turns and all(t.status == "ok" and t.attempts == 1 for t in turns)
    assert a.calls > 0 and b.calls > 0, (a.calls, b.calls)  # 16+ calls: all on one server has p < 1e-4
    assert a.calls + b.calls == len(turns)
    spoken = [t for t in turns if t.kind != "vote"]
    assert all(("server-a" in t.content) != ("server-b" in t.content) for t in spoken)
    streamed = "".join(e.text for e in events if isinstance(e, TokenReceived))
    assert "server-a" in streamed and "server-b" in streamed  # tokens streamed from both
    stored = Store(tmp_path / "d.db").turns(engine.debate_id)
    assert len(stored) == len(turns)
    discussion = [t for t in stored if t.kind == "discussion"]
    assert all(t.completion_tokens == 7 and t.prompt_tokens > 0 for t in discussion)  # the servers' own usage
    assert {t.model for t in stored} == {GROUP}


def test_calls_succeed_on_the_other_server_when_one_is_down(servers, router_file, tmp_path):
    a, _ = servers
    # A cooldown longer than any test run: on a busy machine the debate may outlast the default 5 s,
    # and the dead endpoint would then be tried again in a later round.
    router_file(a, _dead_base(), settings={"cooldown_time": 3600})

    events, engine = _debate(tmp_path / "d.db")

    turns = [e.turn for e in events if isinstance(e, TurnFinished)]
    assert engine.status == "finished" and all(t.status == "ok" for t in turns)
    assert all("server-a" in t.content for t in turns if t.kind == "discussion")
    # The dead endpoint is left out after its first failure (cooldown): only calls that were already
    # under way in the first step (4 agents at once) can have been sent there.
    assert all(t.round == 1 and t.attempts == 2 for t in turns if t.attempts > 1)
    assert a.calls == len(turns)


def test_every_endpoint_down_fails_with_the_cause_and_retries_after_the_cooldown(router_file):
    router_file(_dead_base(), _dead_base(), settings={"cooldown_time": 0.2})
    waits: list[float] = []
    result = call_model(GROUP, [{"role": "user", "content": "hi"}], retry=RetryPolicy(max_attempts=3, base_delay=0.01),
                        sleep=waits.append)
    assert result.status == "failed" and result.attempts == 3
    assert "Connection error" in result.error or "cooling down" in result.error
    assert waits and all(w <= 0.2 for w in waits)


def test_an_api_key_from_the_router_file_never_reaches_the_store_an_export_an_error_or_the_log(
        servers, router_file, tmp_path, capfd):
    a, _ = servers
    with OpenAIServer("leaky", status=401, error_body="invalid api key {received_key}") as leaky:
        router_file(leaky)
        result = call_model(GROUP, [{"role": "user", "content": "hi"}], retry=RetryPolicy(max_attempts=1))
        assert leaky.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"  # the key was used ...
        assert result.status == "failed" and SECRET not in result.error and "[REDACTED]" in result.error
        router_file(a, leaky)
        events, engine = _debate(tmp_path / "d.db", retry_attempts=1)
    failed = [e.turn for e in events if isinstance(e, TurnFinished) and e.turn.status == "failed"]
    assert failed and all("AuthenticationError" in t.error for t in failed)  # ... and the server echoed it
    store = Store(tmp_path / "d.db")
    outputs = [json.dumps(exports.export_debate(store, engine.debate_id)), exports.to_markdown(store, engine.debate_id),
               exports.to_csv(store, engine.debate_id), json.dumps(known_models()), repr(events)]
    assert not [text for text in outputs if SECRET in text]
    store.close()
    for path in tmp_path.glob("d.db*"):  # the database, its WAL and shared memory
        assert SECRET.encode() not in path.read_bytes()
    out, err = capfd.readouterr()
    assert SECRET not in out and SECRET not in err


def test_router_groups_are_listed_and_a_bad_router_file_is_explained(servers, router_file, tmp_path, monkeypatch):
    a, b = servers
    router_file(a, b, settings={"routing_strategy": "latency-based-routing"})
    listed = {m["name"]: m for m in known_models()}
    assert listed[GROUP]["kind"] == "router" and listed[GROUP]["key_env"] == "LAB_CRED"
    assert listed[GROUP]["key_present"] is True
    assert "2 endpoints" in listed[GROUP]["description"] and a.api_base not in listed[GROUP]["description"]

    path = tmp_path / "router.yaml"
    path.write_text("model_list:\n  - model_name: lab/x\n    litellm_params: {model: openai/x, api_key: sk-literal}\n")
    problem = validate_model_name("lab/x")
    assert problem and "environment reference" in problem and "sk-literal" not in problem
    path.write_text("model_list: [unclosed")
    assert "cannot be read as YAML" in validate_model_name("lab/x")
    router_file(a, settings={"routing_strategy": "least-busy"})
    assert "least-busy miscounts" in validate_model_name(GROUP)
    monkeypatch.setenv("MADLAB_ROUTER", str(tmp_path / "missing.yaml"))
    assert "does not exist" in validate_model_name("lab/x")
    monkeypatch.delenv("MADLAB_ROUTER")
    assert router.groups() == {} and validate_model_name("scripted/echo") is None


def test_a_placeholder_key_for_a_server_without_authentication_is_accepted():
    text = "model_list:\n  - model_name: g\n    litellm_params: {model: openai/m, api_base: http://h/v1, api_key: EMPTY}\n"
    assert router.parse(text)["settings"] == {"routing_strategy": "simple-shuffle", "cooldown_time": 5.0}
    with pytest.raises(router.RouterFileError, match="environment reference"):
        router.parse(text.replace("EMPTY", "hunter2-secret"))


def test_the_example_router_file_parses():
    example = Path(__file__).resolve().parents[2] / "assets" / "router.example.yaml"
    spec = router.parse(example.read_text(), str(example))
    assert len({entry["model_name"] for entry in spec["model_list"]}) >= 1
