"""The decision card of a debate whose decision the challenge step changed (seed 000 §5; mad_core/challenge.py)."""
from __future__ import annotations

from app_helpers import keys, open_debate, scripted_debate, texts

from mad_core.config import DebateConfig
from madlab_ui.forms import config_to_state, form_config


def replies(first_stance: str):
    def reply(messages, info) -> str:
        meta = info["metadata"]
        kind, agent = meta["kind"], meta["agent"]
        if kind == "vote":
            return "1"
        if kind == "extraction":
            return "Lyon"
        if kind == "challenge":
            if "You do not accept it" in messages[-1]["content"]:
                return "Paris is the capital.\nFinal answer: Paris"
            return first_stance if agent == "Agent 1" else "AGREE"
        return f"{agent} weighs it.\nFinal answer: Lyon"
    return reply


def debate(name: str, first_stance: str) -> str:
    return scripted_debate(name, replies(first_stance), {
        "question": "What is the capital of France?", "rounds": 1, "max_rounds": 1, "protocol": "simple_voting",
        "challenge": "solution", "agents": [{"label": f"Agent {i}", "model": f"scripted/{name}"} for i in (1, 2)]})


def test_the_card_shows_the_new_answer_and_says_the_challenge_changed_it():
    at = open_debate(debate("card_challenged", "DISAGREE"))
    assert texts(at.get_by_key("decision_answer")) == "#### Paris"
    line = texts(at.get_by_key("decision_challenge"))
    assert line.startswith("Changed by the challenge: Lyon → Paris") and "Agent 1" in line and "solution" in line


def test_a_decision_the_challenge_kept_has_no_such_line():
    at = open_debate(debate("card_kept", "AGREE"))
    assert texts(at.get_by_key("decision_answer")) == "#### Lyon"
    assert "decision_challenge" not in keys(at)  # must not happen: a change line for an unchanged decision


def test_a_named_challenge_setting_survives_the_form_and_clearing_the_box_turns_it_off():
    data = DebateConfig.from_dict({"question": "q", "challenge": "history"}, check_models=False).to_dict()
    state = config_to_state(data)
    assert state["challenge"] is True  # the box shows the step is on (a checkbox takes no setting name)
    assert form_config(state)["challenge"] == "history"
    state["challenge"] = False
    assert form_config(state)["challenge"] is False  # must not: the setting kept after the box is cleared
