"""A remote model without its API key is refused before anything runs (issue 18), by what the Models page
knows (`models.known_models`), with the variable's name and where a key goes; the CLI refuses the same way."""
from __future__ import annotations

import json

import pytest

from mad_core.cli import main
from mad_core.model_keys import key_problems
from mad_core.models import router
from mad_core.store import Store, default_db_path, list_debates

AGENTS = [{"label": "Agent 1", "model": "openai/gpt-4o-mini"}, {"label": "Agent 2", "model": "scripted/echo"}]


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LAB_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield
    router.reset()


def test_a_missing_key_is_named_with_where_it_goes_and_local_models_need_none():
    config = {"question": "q", "agents": AGENTS + [{"label": "Agent 3", "model": "local/smollm2-135m"},
                                                   {"label": "Agent 4", "model": "ollama/llama3.2"}],
              "judge_model": "anthropic/claude-3-5-haiku-latest", "supervisor_model": "callable/x"}
    found = dict(key_problems(config))
    assert set(found) == {"agents[0].model", "judge_model"}  # must not happen: scripted, local, ollama refused
    assert "OPENAI_API_KEY" in found["agents[0].model"] and ".streamlit/secrets.toml" in found["agents[0].model"]
    assert "ANTHROPIC_API_KEY" in found["judge_model"]


def test_a_key_that_is_set_passes(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    assert key_problems({"question": "q", "agents": AGENTS}) == []


def test_a_router_group_is_judged_by_its_own_keys_not_its_provider_prefix(tmp_path, monkeypatch):
    path = tmp_path / "router.yaml"
    path.write_text(json.dumps({"model_list": [{"model_name": "openai/gpt-4o-mini", "litellm_params": {
        "model": "hosted_vllm/smol", "api_base": "http://127.0.0.1:9/v1", "api_key": "os.environ/LAB_KEY"}}]}))
    monkeypatch.setenv("MADLAB_ROUTER", str(path))
    [(field, message)] = key_problems({"question": "q", "agents": AGENTS})
    assert field == "agents[0].model" and "LAB_KEY" in message and "OPENAI_API_KEY" not in message
    monkeypatch.setenv("LAB_KEY", "EMPTY")
    assert key_problems({"question": "q", "agents": AGENTS}) == []  # the router entry has its key


def test_the_cli_refuses_a_remote_model_without_its_key_before_writing_anything(capsys):
    code = main(["run", "--question", "What is 2+2?", "--model", "openai/gpt-4o-mini", "--agents", "2",
                 "--rounds", "1", "--max-rounds", "1"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "OPENAI_API_KEY" in err and ".streamlit/secrets.toml" in err
    # must not happen: a debate row (or even the database) written before the refusal
    assert not default_db_path().exists() or list_debates(Store()) == []
