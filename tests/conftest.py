"""Shared fixtures: every test gets its own MADLAB_HOME, and the model providers registered."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def madlab_home(tmp_path, monkeypatch):
    """Point MAD Lab's data directory at a fresh temporary folder (as llm does with LLM_USER_PATH)."""
    home = tmp_path / "madlab-home"
    monkeypatch.setenv("MADLAB_HOME", str(home))
    return home


@pytest.fixture
def script():
    """Register a scripted model through litellm's provider map; returns (model name, Script).

    `script(replies, **options)`: replies as in mad_core.models.scripted.Script. Unregistered after the test.
    """
    import uuid

    from mad_core.models import ensure_registered
    from mad_core.models.scripted import Script, register_script, unregister_script

    ensure_registered()
    names: list[str] = []

    def make(replies, name: str | None = None, **options):
        name = name or f"test-{uuid.uuid4().hex[:8]}"
        names.append(name)
        return f"scripted/{name}", register_script(name, Script(replies=replies, **options))

    yield make
    for name in names:
        unregister_script(name)


def role_replies(answers: dict[str, str] | None = None, votes=None, default_answer: str = "Paris", **by_kind):
    """A scripted reply function that answers like a well-behaved debater for each kind of turn.

    answers: agent -> final answer (discussion turns end with `Final answer: X`).
    votes: agent -> vote text, or a function (agent, round, call_index) -> text.
    by_kind: kind -> text or function (messages, metadata) -> text, overriding the defaults.
    """
    answers = answers or {}

    def reply(messages, info):
        meta = info["metadata"]
        kind, agent = meta["kind"], meta["agent"]
        if kind in by_kind:
            value = by_kind[kind]
            return value(messages, meta) if callable(value) else value
        if kind == "vote":
            if callable(votes):
                return votes(agent, meta["round"], info["call_index"])
            return (votes or {}).get(agent, "1")
        answer = answers.get(agent, default_answer)
        if kind == "extraction":
            return answer
        return f"My reasoning as {agent}.\nFinal answer: {answer}"

    return reply


@pytest.fixture
def roles():
    """The `role_replies` factory, as a fixture."""
    return role_replies


# Hypothesis profile for the property tests (tests/unit/test_parsers_fuzz.py and others):
# 1,000 examples a property, no per-example deadline (CI machines vary). Choose another
# with HYPOTHESIS_PROFILE. function_scoped_fixture: the autouse `madlab_home` above is
# function-scoped and harmless to share between the examples of one test. No example database:
# an example saved from an earlier version of a fixture cannot be replayed against a new one.
settings.register_profile(
    "madlab",
    max_examples=1000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "madlab"))
