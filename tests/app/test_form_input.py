"""The debate form keeps what is typed and names every problem: the summary at Start, counts, descriptions,
personas, Start disabled while the session's debate runs, presets that keep the user's question."""
from __future__ import annotations

import json

from app_helpers import APP, HELD, MODELS, app, join, keys, texts
from streamlit.testing.v1 import AppTest
from test_debate_page import error_keys, fill

from mad_core import live, registry
from mad_core.presets import load_presets
from mad_core.store import Store


def summary(at) -> str:
    return "\n".join(line.rstrip() for line in texts(at.get_by_key("form_errors")).splitlines())


def with_model(agent: int, name: str) -> AppTest:
    """The Debate page, filled, with a model name typed by hand for one agent (not among the listed ones)."""
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state[f"agent_model_{agent}"] = name
    return fill(at.run(), models={agent: name})


def test_start_names_every_problem_in_a_summary_and_beside_each_field():
    at = with_model(1, "nosuchprovider/model")
    at.text_area(key="question").set_value("  ")
    at.number_input(key="rounds").set_value(0)
    at.selectbox(key="ordering").set_value("truth_first")
    at.run()
    at.button(key="start").click().run()
    assert error_keys(at) == {"error_question", "error_rounds", "error_reference", "error_agent_model_1"}
    lines = summary(at).splitlines()
    assert lines[0] == "Not started: fix these 4 problems."
    assert lines[1:] == [
        "Question: must not be empty",
        "Model 2: Unknown provider 'nosuchprovider' in 'nosuchprovider/model': the app's Models page (or "
        "mad_core.models.provider_names()) lists the providers MAD Lab can reach, e.g. openai, anthropic, ollama, "
        "local.",
        "Rounds: must be at least 1, got 0",
        "Reference answer: ordering 'truth_first' needs a reference answer",
    ]
    assert "must be at least 1, got 0" in texts(at.get_by_key("error_rounds"))
    # must not happen: anything starts or is written while there is a problem
    assert Store().list_debates() == [] and "debate_id" not in at.session_state


def test_a_fixed_field_loses_its_message_at_once_and_the_others_stay():
    at = fill(app())
    at.text_area(key="question").set_value("")
    at.number_input(key="max_rounds").set_value(0)
    at.button(key="start").click().run()
    assert error_keys(at) == {"error_question", "error_max_rounds"}
    at.text_area(key="question").set_value("What is the capital of France?").run()
    assert error_keys(at) == {"error_max_rounds"}
    assert summary(at).splitlines()[1:] == ["Max rounds: must be at least 1, got 0"]


def test_zero_agents_typed_is_refused_by_name_and_starts_nothing():
    at = fill(app())
    at.number_input(key="n_agents").set_value(0).run()
    assert at.number_input(key="n_agents").value == 0  # the widget takes what is typed...
    assert not [k for k in keys(at) if k.startswith("agent_label_")]
    at.button(key="start").click().run()
    assert "Number of agents: at least one agent is needed" in summary(at)  # ...and validation refuses it
    assert "error_n_agents" in error_keys(at)
    assert Store().list_debates() == [] and live.running() == []
    at.number_input(key="n_agents").set_value(13).run()
    assert "Number of agents: the form shows at most 12 agents, got 13" in summary(at)


def test_the_description_follows_the_option_now_chosen():
    at = app()
    for kind in ("paradigm", "ordering", "protocol", "response_generator"):
        for name in registry.names(kind)[:3]:
            at.selectbox(key=kind).set_value(name).run()
            doc = (registry.get(kind, name).__doc__ or "").strip().splitlines()[0]
            assert texts(at.get_by_key(f"{kind}_doc")) == doc, (kind, name)


def test_suggested_personas_fill_the_fields_from_a_structured_list(script):
    personas = ["Geographer: maps and capitals", "Historian: French history", "Linguist: place names"]
    model, s = script(lambda m, info: json.dumps({"personas": personas}), json_schema=True)
    at = fill(app(), model=model)
    at.button(key="generate_personas").click().run()
    assert [at.text_input(key=f"agent_persona_{i}").value for i in range(3)] == personas
    assert s.history[-1]["response_format"]["json_schema"]["name"] == "persona_list"
    assert "persona_error" not in keys(at)


def test_personas_the_model_cannot_give_leave_the_fields_as_they_were(script):
    model, s = script(["We are assembling a panel of experts to discuss this question."])
    at = fill(app(), model=model)
    at.text_input(key="agent_persona_0").set_value("Chemist: my own").run()
    at.button(key="generate_personas").click().run()
    assert len(s.history) == 3  # the first request and two re-asks
    warning = texts(at.get_by_key("persona_error")).replace("\\", "")
    assert warning == ("The model could not suggest personas: persona 1 copies the request instead of describing "
                       "an expert ('We are assembling a panel of experts to discuss this question.') (asked 3 "
                       "times). Write them yourself.")
    assert [at.text_input(key=f"agent_persona_{i}").value for i in range(3)] == ["Chemist: my own", "", ""]


def test_start_is_disabled_while_the_sessions_debate_runs(gate):
    at = fill(app(), model=f"scripted/{HELD}")
    assert not at.button(key="start").disabled
    at.button(key="start").click().run()
    debate_id = at.session_state["debate_id"]
    assert not live.get(debate_id).done
    assert at.button(key="start").disabled
    assert "still running" in at.button(key="start").help and "still running" in texts(at.get_by_key("start_wait"))
    gate.opened.set()
    join(debate_id)
    at.run()
    assert not at.button(key="start").disabled and at.button(key="start").help in (None, "")
    assert "start_wait" not in keys(at)


def test_a_preset_keeps_the_question_the_user_wrote_until_asked_for_its_example():
    presets = load_presets()
    name = next(n for n, p in presets.items() if p["config"].get("question"))
    at = app()
    at.text_area(key="question").set_value("My own question?").run()
    at.text_input(key="reference").set_value("mine").run()
    at.selectbox(key="preset").set_value(name).run()
    assert at.text_area(key="question").value == "My own question?"  # must not happen: the preset drops it
    assert at.text_input(key="reference").value == "mine"
    assert at.number_input(key="rounds").value == presets[name]["config"].get("rounds", 3)
    at.button(key="use_preset_question").click().run()
    assert at.text_area(key="question").value == presets[name]["config"]["question"]
    assert "use_preset_question" not in keys(at)


def test_a_preset_on_an_empty_form_brings_its_example_question():
    presets = load_presets()
    name = next(n for n, p in presets.items() if p["config"].get("question"))
    at = app()
    at.selectbox(key="preset").set_value(name).run()
    assert at.text_area(key="question").value == presets[name]["config"]["question"]
    assert "use_preset_question" not in keys(at)


def test_unknown_provider_in_the_form_is_one_line():
    at = with_model(0, "foo/bar")
    at.button(key="start").click().run()
    message = texts(at.get_by_key("error_agent_model_0"))
    assert message.startswith("Unknown provider 'foo' in 'foo/bar'") and "\n" not in message
    assert "bedrock" not in message


def test_the_models_page_lists_the_providers_the_error_points_to():
    at = app(MODELS)
    listed = texts(at.get_by_key("providers"))
    for provider in ("openai", "anthropic", "ollama", "bedrock", "local", "scripted", "hf", "callable"):
        assert provider in listed.split(", ")
    assert "foo" not in listed.split(", ")
