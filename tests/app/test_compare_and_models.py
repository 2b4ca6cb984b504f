"""The Compare page (decisions side by side, overlaid metric curves) and the Models page."""
from __future__ import annotations

from app_helpers import COMPARE, MODELS, SCRIPT, app, keys, run_debate, texts

from mad_core.models import DEFAULT_MODEL, known_models


def test_compare_shows_decisions_side_by_side_and_overlaid_curves():
    first = run_debate("Which river flows through Paris?")
    second = run_debate("Which ocean is the largest?", protocol="solution_counting")
    at = app(COMPARE)
    assert "compare_decisions" not in keys(at)
    at.multiselect(key="compare_ids").set_value([first, second]).run()
    assert not at.exception, at.exception
    assert {f"compare_{first[:8]}", f"compare_{second[:8]}", "compare_diversity", "compare_entropy",
            "compare_agreement"} <= keys(at)
    assert "Which ocean is the largest?" in texts(at.get_by_key(f"compare_{second[:8]}"))
    assert "Paris" in texts(at.get_by_key(f"compare_{first[:8]}"))
    for key in ("compare_diversity", "compare_entropy", "compare_agreement"):
        charts = at.get_by_key(key).get("plotly_chart")
        assert len(charts) == 1
        assert charts[0].proto.spec.count('"name":"') >= 2  # one curve per debate


def test_models_page_lists_the_offline_default_and_never_shows_a_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value-123")
    at = app(MODELS)
    table = texts(at.get_by_key("model_table"))
    assert f"`{DEFAULT_MODEL}`" in table and f"`scripted/{SCRIPT}`" in table
    assert "✅ `OPENAI_API_KEY`" in table and "sk-test-secret" not in table
    assert "❌ `ANTHROPIC_API_KEY`" in table or "✅ `ANTHROPIC_API_KEY`" in table


def test_model_test_button_makes_a_short_call():
    names = [m["name"] for m in known_models()]
    i = names.index(f"scripted/{SCRIPT}")
    at = app(MODELS)
    at.button(key=f"test_{i}").click().run()
    result = texts(at.get_by_key(f"test_result_{i}"))
    assert "ok in" in result and "thinks about the okapi" in result


def test_model_test_button_reports_an_unusable_name():
    names = [m["name"] for m in known_models()]
    i = next(k for k, name in enumerate(names) if "<" in name)  # hosted_vllm/<model>: an example, not a model
    at = app(MODELS)
    at.button(key=f"test_{i}").click().run()
    assert "failed" in texts(at.get_by_key(f"test_result_{i}"))


def test_keys_from_secrets_toml_reach_the_environment_but_never_the_page(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = app(MODELS)
    at.secrets["ANTHROPIC_API_KEY"] = "sk-ant-secret-from-toml"
    at.secrets["unrelated_setting"] = "not a key"
    at.run()
    import os
    assert os.environ.get("ANTHROPIC_API_KEY") == "sk-ant-secret-from-toml"  # where litellm reads it
    assert "unrelated_setting" not in os.environ
    row = next(texts(at.get_by_key(k)) for k in keys(at) if k.startswith("model_") and
               "ANTHROPIC_API_KEY" in texts(at.get_by_key(k)))
    assert "✅" in row
    assert "sk-ant-secret-from-toml" not in texts(at.main)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
