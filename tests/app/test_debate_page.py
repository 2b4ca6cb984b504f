"""The Debate page: form validation, presets, starting a debate in the background, steering buttons."""
from __future__ import annotations

import pytest
from app_helpers import APP, HELD, SCRIPT, app, join, keys, texts
from streamlit.testing.v1 import AppTest

from mad_core import live
from mad_core.config import DebateConfig
from mad_core.models.scripted import get_script
from mad_core.presets import load_presets
from mad_core.prompts import TIT_FOR_TAT
from mad_core.store import Store, list_debates
from madlab_ui.forms import form_config


def fill(at, question="What is the capital of France?", model=f"scripted/{SCRIPT}", n=3, models=None):
    at.text_area(key="question").set_value(question)
    at.number_input(key="n_agents").set_value(n)
    for i in range(n):
        # AppTest cannot type a new selectbox option: the state is set, the page lists the current value.
        at.session_state[f"agent_model_{i}"] = (models or {}).get(i, model)
    at.number_input(key="rounds").set_value(1)
    at.number_input(key="max_rounds").set_value(2)
    return at.run()


def error_keys(at) -> set[str]:
    return {k for k in keys(at) if k.startswith("error_")}


def test_rounds_above_max_rounds_shows_error_under_max_rounds_and_starts_nothing():
    running_before = live.running()
    at = fill(app())
    at.number_input(key="rounds").set_value(4)
    at.number_input(key="max_rounds").set_value(2)
    at.button(key="start").click().run()
    assert error_keys(at) == {"error_max_rounds"}
    assert "must be at least rounds (4)" in texts(at.get_by_key("error_max_rounds"))
    assert live.running() == running_before
    assert list_debates(Store()) == []
    assert "debate_id" not in at.session_state


@pytest.mark.parametrize("setup, expected", [
    (lambda at: at.text_area(key="question").set_value("   "), "error_question"),
    (lambda at: at.text_input(key="agent_label_2").set_value("Agent 1"), "error_agent_label_2"),
    (lambda at: at.selectbox(key="ordering").set_value("truth_last"), "error_reference"),
])
def test_config_error_is_shown_under_its_field(setup, expected):
    at = fill(app())
    setup(at)
    at.run()
    at.button(key="start").click().run()
    assert error_keys(at) == {expected}
    assert texts(at.get_by_key(expected)).strip()
    assert list_debates(Store()) == []


def test_unknown_model_error_is_shown_under_that_agents_model():
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state["agent_model_1"] = "nosuchprovider/model"  # typed by hand: not one of the listed models
    at = fill(at.run(), models={1: "nosuchprovider/model"})
    assert at.selectbox(key="agent_model_1").value == "nosuchprovider/model"
    at.button(key="start").click().run()
    assert error_keys(at) == {"error_agent_model_1"}
    assert "nosuchprovider" in texts(at.get_by_key("error_agent_model_1"))
    assert list_debates(Store()) == []


def test_error_goes_away_when_the_form_is_fixed_and_started(gate):
    at = fill(app(), model=f"scripted/{HELD}")
    at.number_input(key="rounds").set_value(3).run()
    at.button(key="start").click().run()
    assert error_keys(at) == {"error_max_rounds"}
    at.number_input(key="max_rounds").set_value(3).run()
    at.button(key="start").click().run()
    assert error_keys(at) == set()
    assert live.get(at.session_state["debate_id"]) is not None


@pytest.mark.parametrize("preset", list(load_presets()))
def test_preset_fills_the_form(preset):
    wanted = DebateConfig.from_dict(load_presets()[preset]["config"])
    at = app()
    at.selectbox(key="preset").set_value(preset).run()
    assert not at.exception
    assert at.text_area(key="question").value == wanted.question
    assert at.number_input(key="n_agents").value == len(wanted.agents)
    assert at.selectbox(key="paradigm").value == wanted.paradigm
    assert at.selectbox(key="protocol").value == wanted.protocol
    assert at.number_input(key="max_tokens").value == wanted.agents[0].max_tokens
    assert at.checkbox(key="aad").value == wanted.all_agents_drafting
    for i, agent in enumerate(wanted.agents):
        assert at.text_input(key=f"agent_label_{i}").value == agent.label
        assert at.selectbox(key=f"agent_model_{i}").value == agent.model
    # The whole form round-trips to exactly the preset's configuration.
    assert DebateConfig.from_dict(form_config(at.session_state)).to_dict() == wanted.to_dict()


def test_presets_run_offline_with_small_replies():
    presets = load_presets()
    titles = {p["title"] for p in presets.values()}
    assert {"Du et al. simultaneous debate (seed 004)", "Liang et al. MAD two-sided with judge (seed 002)",
            "MALLM simple voting with AAD (seed 000)", "MADC ordering (seed 003)"} <= titles
    for preset in presets.values():
        cfg = DebateConfig.from_dict(preset["config"])
        assert {a.model for a in cfg.agents} == {"local/smollm2-135m"}
        assert all(a.max_tokens <= 128 for a in cfg.agents)
        assert preset["source"]


def test_tit_for_tat_explains_its_effect():
    at = app()
    at.selectbox(key="tit_for_tat").set_value(3).run()
    assert TIT_FOR_TAT[3] in texts(at.main)
    at.selectbox(key="tit_for_tat").set_value(-1).run()
    assert TIT_FOR_TAT[3] not in texts(at.main)
    assert form_config(at.session_state)["tit_for_tat"] is None


def test_generate_personas_asks_the_first_agents_model_and_refuses_a_debaters_reply():
    at = fill(app(), question="Why is the sky blue?")
    at.text_input(key="agent_persona_1").set_value("Physicist: optics").run()
    script = get_script(SCRIPT)
    calls = len(script.history)
    at.button(key="generate_personas").click().run()
    asked = script.history[calls:]
    # the script answers like a debater ("... Final answer: Paris"): refused, re-asked twice, then given up
    assert len(asked) == 3 and all("panel of experts" in c["messages"][1]["content"] for c in asked)
    assert "Why is the sky blue?" in asked[0]["messages"][-1]["content"]
    assert "persona 2 reads like an answer, not an expert ('Final answer: Paris')" in asked[1]["messages"][-1]["content"]
    warning = texts(at.get_by_key("persona_error")).replace("\\", "")  # shown markdown-escaped
    assert warning.startswith("The model could not suggest personas: persona 2 reads like an answer")
    assert warning.endswith("(asked 3 times). Write them yourself.")
    # must not happen: a refused reply lands in a persona field, or a typed persona is lost
    assert [at.text_input(key=f"agent_persona_{i}").value for i in range(3)] == ["", "Physicist: optics", ""]


def test_generate_personas_needs_a_question():
    at = app()
    at.button(key="generate_personas").click().run()
    assert "question first" in texts(at.main)
    assert at.text_input(key="agent_persona_0").value == ""


def test_start_runs_the_debate_in_the_background_and_shows_it():
    at = fill(app())
    at.button(key="start").click().run()
    debate_id = at.session_state["debate_id"]
    join(debate_id)
    at.run()
    at.run()  # reruns neither restart nor duplicate the debate
    assert [d["id"] for d in list_debates(Store())] == [debate_id]
    assert "finished" in texts(at.get_by_key("debate_status"))
    turns = Store().turns(debate_id)
    assert {f"turn_{k}" for k in range(len(turns))} <= keys(at)
    assert f"turn_{len(turns)}" not in keys(at)
    assert "zebrafinch" in texts(at.get_by_key("turn_0")) and "Agent 1" in texts(at.get_by_key("turn_0"))
    assert {"round_1", "votes_1", "decision_card", "usage", "plot_diversity", "plot_entropy", "plot_votes",
            "plot_timeline", "prompt_0"} <= keys(at)
    card = texts(at.get_by_key("decision_card"))
    assert "Paris" in card and "simple\\_voting" in card
    # the extracted answer up front; the winner's whole reply one click away, as plain text
    assert [m.value for m in at.get_by_key("decision_answer").markdown] == ["#### Paris"]
    full = at.get_by_key("decision_card").expander[0]
    assert full.label == "Full winning text (Agent 1)"
    assert [t.value for t in full.text] == ["Agent 1 thinks about the zebrafinch.\nFinal answer: Paris"]
    assert not full.markdown  # never rendered as markdown or HTML
    assert [b.disabled for b in (at.button(key=k) for k in ("pause", "resume", "stop", "force_decision"))] == \
        [True, True, True, True]
    assert len(at.get_by_key("plot_diversity").get("plotly_chart")) == 1


def test_reference_is_hidden_until_revealed():
    at = fill(app())
    at.text_input(key="reference").set_value("Lyon-secret-ref").run()
    at.button(key="start").click().run()
    join(at.session_state["debate_id"])
    at.run()
    assert "Lyon-secret-ref" not in texts(at.main)
    at.button(key="reveal_reference").click().run()
    assert "Lyon-secret-ref" in texts(at.get_by_key("reference_revealed"))
    assert "differs" in texts(at.get_by_key("reference_revealed"))


def test_steering_buttons_call_the_controller(gate):
    at = fill(app(), model=f"scripted/{HELD}")
    at.button(key="start").click().run()
    debate = live.get(at.session_state["debate_id"])
    assert "running" in texts(at.get_by_key("debate_status"))
    assert [at.button(key=k).disabled for k in ("pause", "resume", "stop", "force_decision")] == \
        [False, True, False, False]

    at.button(key="pause").click().run()
    assert debate.controller.paused
    assert "paused" in texts(at.get_by_key("debate_status"))
    assert [at.button(key=k).disabled for k in ("pause", "resume")] == [True, False]

    at.text_input(key="say_all_text").set_value("Think about Lyon.")
    at.button(key="say_all_send").click().run()
    at.selectbox(key="say_one_agent").set_value("Agent 2")
    at.text_input(key="say_one_text").set_value("Only for you.")
    at.button(key="say_one_send").click().run()
    assert at.text_input(key="say_all_text").value == "" and at.text_input(key="say_one_text").value == ""

    at.button(key="resume").click().run()
    assert not debate.controller.paused
    at.button(key="stop").click().run()
    assert debate.controller.stopped
    gate.opened.set()
    join(debate.debate_id)
    at.run()
    assert "stopped" in texts(at.get_by_key("debate_status"))
    messages = [s for s in Store().steering(debate.debate_id) if s["action"] == "message"]
    assert [(m["targets"], m["message"]) for m in messages] == [(None, "Think about Lyon."),
                                                                (["Agent 2"], "Only for you.")]
    steer = "\n".join(texts(at.get_by_key(k)) for k in keys(at) if k.startswith("steer_"))
    assert "Think about Lyon." in steer and "Only for you." in steer
    assert all(at.button(key=k).disabled for k in ("pause", "resume", "stop", "force_decision", "say_all_send"))


def test_empty_message_is_refused_without_steering(gate):
    at = fill(app(), model=f"scripted/{HELD}")
    at.button(key="start").click().run()
    debate_id = at.session_state["debate_id"]
    at.button(key="say_all_send").click().run()
    assert "empty" in texts(at.sidebar).lower()
    at.button(key="stop").click().run()
    gate.opened.set()
    join(debate_id)
    assert [s["action"] for s in Store().steering(debate_id)] == ["stop"]


def _started(at) -> str:
    at.button(key="start").click().run()
    assert not error_keys(at)
    join(at.session_state["debate_id"])
    return at.session_state["debate_id"]


def test_ring_connectivity_chosen_in_the_form_limits_who_sees_whom():
    at = fill(app(), n=4)
    at.selectbox(key="paradigm").set_value("simultaneous")
    at.selectbox(key="connectivity").set_value("ring")
    at.number_input(key="rounds").set_value(2).run()
    debate_id = _started(at)
    assert Store().get_debate(debate_id)["config"]["connectivity"] == "ring"
    # Ring of four: Agent 1 hears Agent 4 and Agent 2 in round 2, never Agent 3.
    first = next(t for t in Store().turns(debate_id) if t.agent == "Agent 1" and t.round == 2)
    prompt = "\n".join(m["content"] for m in first.prompt)
    assert "quokka" in prompt and "okapi" in prompt and "axolotl" not in prompt


def test_summarizer_model_chosen_in_the_form_writes_the_summaries(gate):
    gate.opened.set()  # scripted/apptest_held answers at once: here it is only a second model name
    at = fill(app())
    at.selectbox(key="paradigm").set_value("simultaneous_summarizer")
    at.session_state["summarizer_model"] = f"scripted/{HELD}"
    at.number_input(key="rounds").set_value(2).run()
    turns = Store().turns(_started(at))
    assert {t.model for t in turns if t.kind == "summary"} == {f"scripted/{HELD}"}
    assert {t.model for t in turns if t.kind == "discussion"} == {f"scripted/{SCRIPT}"}
