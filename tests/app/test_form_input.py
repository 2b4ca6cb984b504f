"""The debate form keeps what is typed and names every problem: the summary at Start, counts, descriptions,
personas, Start disabled while the session's debate runs, presets that keep the user's question."""
from __future__ import annotations

import json

from app_helpers import APP, HELD, MODELS, app, join, keys, texts
from streamlit.testing.v1 import AppTest
from test_debate_page import error_keys, fill

from mad_core import live, registry
from mad_core.presets import load_presets
from mad_core.store import Store, list_debates


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
    # one line naming the fields in the form's order; each message beside its field
    assert summary(at) == "Not started: fix Question, Reference answer, Model 2, Rounds (each says why beside it)."
    assert texts(at.get_by_key("error_agent_model_1")) == \
        "Unknown provider 'nosuchprovider': the Models page lists the providers."
    assert "must be at least 1, got 0" in texts(at.get_by_key("error_rounds"))
    # must not happen: anything starts or is written while there is a problem
    assert list_debates(Store()) == [] and "debate_id" not in at.session_state


def test_a_fixed_field_loses_its_message_at_once_and_the_others_stay():
    at = fill(app())
    at.text_area(key="question").set_value("")
    at.number_input(key="max_rounds").set_value(0)
    at.button(key="start").click().run()
    assert error_keys(at) == {"error_question", "error_max_rounds"}
    at.text_area(key="question").set_value("What is the capital of France?").run()
    assert error_keys(at) == {"error_max_rounds"}
    assert summary(at) == "Not started: fix Max rounds (each says why beside it)."


def test_zero_agents_typed_is_refused_by_name_and_starts_nothing():
    at = fill(app())
    at.number_input(key="n_agents").set_value(0).run()
    assert at.number_input(key="n_agents").value == 0  # the widget takes what is typed...
    assert not [k for k in keys(at) if k.startswith("agent_label_")]
    at.button(key="start").click().run()
    assert "Number of agents" in summary(at)  # ...and validation refuses it
    assert texts(at.get_by_key("error_n_agents")) == "at least one agent is needed"
    assert list_debates(Store()) == [] and live.running() == []
    at.number_input(key="n_agents").set_value(13).run()
    assert texts(at.get_by_key("error_n_agents")) == "the form shows at most 12 agents, got 13"


def test_the_description_follows_the_option_now_chosen():
    at = app()
    for kind in ("paradigm", "ordering", "protocol", "response_generator"):
        for name in registry.names(kind)[:3]:
            at.selectbox(key=kind).set_value(name).run()
            doc = (registry.get(kind, name).__doc__ or "").strip().splitlines()[0]
            assert texts(at.get_by_key(f"{kind}_doc")) == doc, (kind, name)


def test_suggested_personas_fill_the_fields_from_a_structured_list(script):
    personas = ["Geographer: maps and capitals", "Historian: French history", "Linguist: place names"]
    given = iter(personas)  # one persona a request (seed 000 App. C), each request showing the panel so far
    model, s = script(lambda m, info: json.dumps({"personas": [next(given)]}), json_schema=True)
    at = fill(app(), model=model)
    at.button(key="generate_personas").click().run()
    assert [at.text_input(key=f"agent_persona_{i}").value for i in range(3)] == personas
    assert s.history[-1]["response_format"]["json_schema"]["name"] == "persona_list" and len(s.history) == 3
    assert f"- {personas[0]}\n- {personas[1]}" in s.history[-1]["messages"][-1]["content"]
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


def test_an_out_of_range_rounds_is_the_only_cause_reported_not_max_rounds_below_it():
    at = with_model(2, "foo/bar")
    at.number_input(key="rounds").set_value(100_000_000)
    at.number_input(key="max_rounds").set_value(2)
    at.run()
    at.button(key="start").click().run()
    assert error_keys(at) == {"error_agent_model_2", "error_rounds"}
    assert texts(at.get_by_key("error_rounds")) == "must be at most 100, got 100000000"
    # the fields in the form's order (Model 3 is drawn above Rounds); must not happen: a Max rounds error
    # caused by Rounds alone
    assert summary(at) == "Not started: fix Model 3, Rounds (each says why beside it)."
    assert "Max rounds" not in summary(at)


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
    assert message == "Unknown provider 'foo': the Models page lists the providers."  # one short line, no Python
    assert "bedrock" not in message


def test_the_models_page_lists_the_providers_the_error_points_to():
    at = app(MODELS)
    listed = texts(at.get_by_key("providers"))
    for provider in ("openai", "anthropic", "ollama", "bedrock", "local", "scripted", "hf", "callable"):
        assert provider in listed.split(", ")
    assert "foo" not in listed.split(", ")


# ----- a preset's task fields belong to its own question -------------------------------------------
def preset_note(at) -> str:
    return texts(at.get_by_key("preset_note"))


def stored_config(debate_id: str) -> dict:
    config = Store().get_debate(debate_id)["config"]
    return json.loads(config) if isinstance(config, str) else config


def test_a_question_kept_across_presets_is_not_graded_by_either_presets_reference():
    """The tester's path: Du preset, own question typed over it, then the MALLM preset (which keeps it)."""
    at = app()
    at.selectbox(key="preset").set_value("du_simultaneous").run()
    assert at.text_input(key="reference").value == "9"  # the preset's question comes with its reference
    at.text_area(key="question").set_value("Is 91 a prime number?").run()
    assert (at.text_input(key="reference").value, at.text_input(key="task").value) == ("", "")
    assert at.selectbox(key="answer_type").value == "text"
    assert "The question is yours: what the preset set for its example question is cleared (task instruction, " \
           "reference answer, answer type)." in preset_note(at)
    at.selectbox(key="preset").set_value("mallm_consensus").run()
    assert at.text_area(key="question").value == "Is 91 a prime number?"
    assert (at.text_input(key="reference").value, at.text_input(key="task").value) == ("", "")
    assert at.selectbox(key="answer_type").value == "text"
    assert at.selectbox(key="protocol").value == "majority_consensus"  # the preset's mechanics apply
    assert "cleared (task instruction, reference answer, answer type, answer options)" in preset_note(at)
    fill(at, question="Is 91 a prime number?")
    at.checkbox(key="auto_personas").uncheck()
    at.button(key="start").click().run()
    debate_id = at.session_state["debate_id"]
    join(debate_id)
    config = stored_config(debate_id)
    # must not happen: a hidden reference (or the task/answer type) of either preset in the debate's config
    assert (config["reference"], config["task"], config["answer_type"], config["answer_options"]) == \
        (None, "", "text", None)
    assert config["protocol"] == "majority_consensus" and config["paradigm"] == "memory"


def test_typing_over_a_presets_question_clears_its_task_fields_once_and_the_example_brings_them_back():
    presets = load_presets()
    kks = presets["wu_kks_per_player"]["config"]
    at = app()
    at.selectbox(key="preset").set_value("wu_kks_per_player").run()
    assert at.selectbox(key="answer_type").value == "kks"
    at.text_area(key="question").set_value("Who is the spy among Ann and Bob?").run()
    # the reference, the answer type and the player names were the puzzle's: all cleared
    assert at.text_input(key="reference").value == ""
    assert at.selectbox(key="answer_type").value == "text" and at.text_area(key="answer_options").value == ""
    assert "cleared (reference answer, answer type, answer options)" in preset_note(at)
    # what the user gives their own question afterwards is theirs, even the preset's own values
    at.selectbox(key="answer_type").set_value("kks").run()
    at.text_input(key="reference").set_value(kks["reference"]).run()
    at.text_area(key="question").set_value("Who is the spy among Ann, Bob and Cy?").run()
    assert at.text_input(key="reference").value == kks["reference"]  # must not happen: the user's value cleared
    assert at.selectbox(key="answer_type").value == "kks"
    at.button(key="use_preset_question").click().run()
    assert at.text_area(key="question").value == kks["question"]
    assert at.text_input(key="reference").value == kks["reference"]
    assert at.text_area(key="answer_options").value == "\n".join(kks["answer_options"])
    assert "use_preset_question" not in keys(at) and "cleared" not in preset_note(at)


def test_the_user_s_own_task_fields_survive_choosing_a_preset():
    at = app()
    at.text_area(key="question").set_value("Is 91 a prime number?").run()
    at.text_input(key="task").set_value("Answer yes or no.").run()
    at.selectbox(key="answer_type").set_value("yes_no").run()
    at.selectbox(key="preset").set_value("mallm_consensus").run()
    assert (at.text_input(key="task").value, at.selectbox(key="answer_type").value) == ("Answer yes or no.", "yes_no")
    assert at.text_input(key="reference").value == ""  # must not happen: the preset's "C" comes with it
    # the note says only what is true: the task instruction is the user's own, not a cleared one
    assert "cleared (reference answer, answer options)" in preset_note(at)
    at.text_input(key="reference").set_value("No, 91 = 7 x 13").run()
    # must not happen: the note still says the reference is cleared although the user typed one
    assert "reference answer" not in preset_note(at) and "cleared (answer options)" in preset_note(at)
    assert "The question is yours" in preset_note(at)


def test_the_picker_and_its_caption_say_what_was_changed_from_the_preset():
    at = app()
    at.selectbox(key="preset").set_value("mallm_consensus").run()
    assert at.selectbox(key="preset").label == "Preset"
    assert "The preset set the other settings." in preset_note(at)
    at.selectbox(key="protocol").set_value("simple_voting").run()
    # must not happen: the picker still reads as if the form were the preset's
    assert at.selectbox(key="preset").label == "Preset (changed: Protocol)"
    assert "Changed from the preset: Protocol." in preset_note(at)
    assert at.selectbox(key="preset").value == "mallm_consensus"  # the option's text never changes
    assert at.selectbox(key="preset").options == ["(none: fill in yourself)"] + \
        [p["title"] for p in load_presets().values()]
    at.number_input(key="rounds").set_value(2).run()
    at.text_input(key="agent_persona_1").set_value("A chemist").run()
    at.text_input(key="reference").set_value("D").run()
    assert "Changed from the preset: Reference answer, Protocol, Rounds, Persona 2." in preset_note(at)
    assert at.selectbox(key="preset").label == "Preset (changed: Reference answer, Protocol, 2 more)"
    for key, value in (("protocol", "majority_consensus"), ("rounds", 1), ("agent_persona_1", ""), ("reference", "C")):
        getattr(at, {"protocol": "selectbox", "rounds": "number_input"}.get(key, "text_input"))(key=key) \
            .set_value(value).run()
    assert at.selectbox(key="preset").label == "Preset" and "The preset set the other settings." in preset_note(at)


def test_every_preset_as_chosen_is_unchanged():
    from madlab_ui.forms import changed_from_preset

    at = app()
    for name in load_presets():
        at.selectbox(key="preset").set_value(name).run()
        assert changed_from_preset(name, at.session_state) == [], name


def test_a_presets_value_sent_back_by_a_browser_that_missed_the_clearing_is_cleared_again():
    """A click made while the clearing run was on its way: the browser sends every widget's value with the
    next run, the preset's among them (the e2e preset test hits this now and then)."""
    at = app()
    at.selectbox(key="preset").set_value("du_simultaneous").run()
    at.text_area(key="question").set_value("Is 91 a prime number?").run()
    assert at.text_input(key="reference").value == ""
    at.text_input(key="reference").set_value("9")  # the browser's stale value, sent with the next click
    at.text_input(key="task").set_value("Answer with a number.")
    at.selectbox(key="answer_type").set_value("number")
    at.selectbox(key="preset").set_value("mallm_consensus").run()
    # must not happen: Du's hidden "9" kept as if it were the user's own reference under MALLM's preset
    assert (at.text_input(key="reference").value, at.text_input(key="task").value) == ("", "")
    assert at.selectbox(key="answer_type").value == "text"
    assert at.text_area(key="question").value == "Is 91 a prime number?"
    at.run()  # a run with the cleared values: settled
    assert at.session_state["preset_task"] == {}
    at.text_input(key="reference").set_value("9").run()  # now typed by the user: theirs
    at.text_area(key="question").set_value("Is 93 a prime number?").run()
    assert at.text_input(key="reference").value == "9"


def test_the_presets_own_value_typed_again_by_the_user_is_kept():
    at = app()
    at.selectbox(key="preset").set_value("mallm_consensus").run()
    at.text_area(key="question").set_value("Which is a prime? A) 91 B) 93 C) 97").run()
    assert at.text_input(key="reference").value == ""
    at.text_input(key="reference").set_value("C").run()  # the preset's value, typed again for this question
    assert at.text_input(key="reference").value == "C"  # must not happen: the user's own answer cleared
    at.text_area(key="question").set_value("Which is a prime? A) 91 B) 93 C) 97 D) 99").run()
    assert at.text_input(key="reference").value == "C"


def test_the_preset_note_says_how_big_the_debate_is_before_it_starts():
    at = app()
    at.selectbox(key="preset").set_value("madc_truth_last").run()
    plan = live.plan_calls(load_presets()["madc_truth_last"]["config"])
    assert plan.total(2) == 20  # 10 agents x 2 rounds; solution counting reads the final answers, no ballots
    assert "Size: 10 agents, 2 rounds: about 20 model calls." in preset_note(at)
    at.selectbox(key="preset").set_value("mallm_consensus").run()
    # must not happen: a consensus that may need more rounds announced as one fixed number
    assert "Size: 3 agents, 1 round: about 7 to 23 model calls." in preset_note(at)


def test_a_run_never_pushes_the_servers_value_into_a_field_the_browser_holds():
    """A value the script writes into a widget's key is sent to the browser with the order to replace what
    the field shows (the element's `set_value`). The form used to write every field again on every run, so a
    run that began before a person committed a field put the old value back into it, and the next commit of
    any field sent that old value to the server (a typed "Rounds: 1" came back as 3 on a busy machine).
    After the first run only a field the script really changes may carry that order."""
    def fields(at):
        return [*at.number_input, *at.text_input, *at.text_area, *at.selectbox, *at.checkbox]

    at = app()
    assert {"rounds", "max_rounds", "question", "reference", "ordering"} <= {f.key for f in fields(at)}
    assert any(f.proto.set_value for f in fields(at))  # positive control: the first run fills the fields
    at.number_input(key="max_rounds").set_value(2).run()
    at.text_input(key="task").set_value("Answer with a number.").run()
    pushed = sorted(f.key for f in fields(at) if f.proto.set_value)
    assert pushed == []  # must not happen: a field the person holds is overwritten by the server
    assert at.number_input(key="max_rounds").value == 2 and at.text_input(key="task").value == "Answer with a number."
