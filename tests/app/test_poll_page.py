"""The students' poll page: after the reveal it says what the debate decided, also when the decision
is none of the poll's answers (the phone showed an empty "decision" column and "nobody"); each phone
is its own voter whatever name it types; "Something else" can be right, and the teacher can mark it."""
from __future__ import annotations

from app_helpers import APP, keys, run_debate, texts
from streamlit.testing.v1 import AppTest
from test_presenter import POLL, presenter, student  # the students' page of a poll, opened as a phone does

from madlab_ui import poll
from madlab_ui.replay import DECISION

from mad_core import polls
from mad_core.store import Store


def table(phone) -> list[dict]:
    """The rows of the results table on a student's page."""
    return [dict(r) for r in phone.get_by_key("poll_results").table[0].value.to_dict("records")]


def test_after_the_reveal_the_student_sees_the_decided_answer_even_when_no_option_names_it():
    debate_id = run_debate()  # the scripted agents decide on "Paris"
    poll_id = polls.open_poll(Store(), debate_id, ["Lyon", "Marseille"])
    phone = student(poll_id)
    phone.radio(key="poll_choice").set_value("Lyon")
    phone.text_input(key="poll_voter").set_value("Ana").run()
    phone.button(key="poll_predict").click().run()
    assert "The debate decided" not in texts(phone.main)  # nothing of the decision before the reveal
    polls.reveal(Store(), poll_id)
    phone.run()
    assert "**The debate decided:** Paris (none of the poll's answers)" in texts(phone.get_by_key("poll_decision"))
    rows = table(phone)
    assert rows == [{"answer": "Lyon", "predictions": 1, "decision": "✗ not the decision"},
                    {"answer": "Marseille", "predictions": 0, "decision": "✗ not the decision"},
                    {"answer": "Paris", "predictions": 0, "decision": "✅ the decision (not a poll answer)"}]
    # Must not happen: an empty decision cell, or a verdict without the answer it was measured against.
    assert all(row["decision"] for row in rows)
    assert "Not this time: the debate decided otherwise." in texts(phone.main)


def test_a_decision_among_the_options_is_named_above_and_marked_in_its_row():
    debate_id = run_debate()
    store = Store()
    poll_id = polls.open_poll(store, debate_id, ["Paris", "Lyon"])
    polls.reveal(store, poll_id)
    phone = student(poll_id)
    assert "**The debate decided:** Paris" in texts(phone.get_by_key("poll_decision"))
    rows = table(phone)
    assert [row["decision"] for row in rows] == ["✅ the decision", "✗ not the decision"]


# ----- voters are devices -------------------------------------------------------------------------
def predict(phone, choice: str, name: str = ""):
    phone.radio(key="poll_choice").set_value(choice)
    phone.text_input(key="poll_voter").set_value(name).run()
    phone.button(key="poll_predict").click().run()
    assert not phone.exception, phone.exception
    return phone


def test_two_phones_with_one_name_are_two_voters_and_a_phone_changes_only_its_own():
    debate_id = run_debate()
    poll_id = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"])
    first, second = predict(student(poll_id), "Paris", "Ada"), predict(student(poll_id), "Lyon", "Ada")
    assert first.query_params["device"] != second.query_params["device"]  # each page keeps its own token
    # Must not happen: the second "Ada" replacing the first one's prediction.
    assert polls.results(Store(), poll_id)["total"] == 2
    assert "Your prediction (Ada): **Paris**" in texts(first.run().get_by_key("poll_mine"))
    assert "Your prediction (Ada \\(2\\)): **Lyon**" in texts(second.get_by_key("poll_mine"))
    predict(first, "Lyon", "Ada")  # the first phone changes its mind: its own prediction, not a third one
    assert polls.results(Store(), poll_id)["total"] == 2
    assert "**Lyon**" in texts(first.get_by_key("poll_mine"))


def test_a_reload_with_the_device_in_the_link_is_the_same_voter():
    debate_id = run_debate()
    poll_id = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"])
    phone = predict(student(poll_id), "Paris", "Bo")
    device = phone.query_params["device"]
    reloaded = AppTest.from_file(APP, default_timeout=30)  # a new session: only the link is the same
    reloaded.query_params["poll"] = poll_id
    reloaded.query_params["device"] = device[0] if isinstance(device, list) else device
    reloaded.run()
    reloaded.switch_page(POLL).run()
    assert "Your prediction (Bo): **Paris**" in texts(reloaded.get_by_key("poll_mine"))
    predict(reloaded, "Lyon", "Bo")
    assert polls.results(Store(), poll_id)["total"] == 1  # must not happen: the reload counted twice


def test_a_name_with_nothing_visible_is_refused_naming_the_field_and_nothing_is_recorded():
    debate_id = run_debate()
    poll_id = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"])
    phone = predict(student(poll_id), "Paris", "\u200b\u200d\u2060")
    assert "Your name" in texts(phone.main) and "has no visible characters" in texts(phone.main)
    assert polls.results(Store(), poll_id)["total"] == 0 and "poll_mine" not in keys(phone)
    predict(phone, "Paris", "   ")  # nothing typed at all: an anonymous guest, recorded
    assert "Your prediction (guest\\-" in texts(phone.get_by_key("poll_mine"))  # markdown-escaped


# ----- "Something else" ----------------------------------------------------------------------------
def test_something_else_counts_as_right_when_the_decision_is_none_of_the_listed_answers():
    debate_id = run_debate()  # decides on "Paris"
    poll_id = polls.open_poll(Store(), debate_id, ["Lyon", "Marseille"], something_else=True)
    phone = predict(student(poll_id), "Something else", "Ana")
    other = predict(student(poll_id), "Lyon", "Bo")
    polls.reveal(Store(), poll_id)
    phone.run()
    assert "(none of the listed answers: Something else counts as right)" in texts(phone.get_by_key("poll_decision"))
    assert [tuple(row.values()) for row in table(phone)] == [
        ("Lyon", 1, "✗ not the decision"), ("Marseille", 0, "✗ not the decision"),
        ("Something else", 1, "✅ counts as right"), ("Paris", 0, "✅ the decision (not a poll answer)")]
    assert "You predicted right!" in texts(phone.main)
    assert "Not this time" in texts(other.run().main)


def test_the_teacher_marks_an_answer_right_after_the_reveal():
    debate_id = run_debate()  # decides on "Paris"
    poll_id = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"], something_else=True)
    phone = predict(student(poll_id), "Something else", "Ana")
    teacher = presenter(replay=debate_id)
    teacher.selectbox(key="presenter_round").set_value(DECISION).run()
    teacher.button(key="poll_reveal").click().run()
    assert "You predicted right" not in texts(phone.run().main)
    # Must not happen: "Something else" made right while the decision is one of the listed answers.
    teacher.selectbox(key="poll_mark").set_value("Something else").run()
    assert "the debate decided 'Paris', one of the listed answers" in texts(teacher.sidebar)
    assert polls.results(Store(), poll_id)["right_options"] == ["Paris"]
    teacher.selectbox(key="poll_mark").set_value("Lyon").run()  # the teacher's own judgement
    assert polls.results(Store(), poll_id)["right_options"] == ["Lyon"]


def test_the_stage_lists_something_else_only_when_chosen_or_right():
    base = {"decision": "water", "total": 2, "right": ["Ana"]}
    right = poll.stage_rows({**base, "counts": {"CO2": 1, "O2": 0, "Something else": 1},
                             "right_options": ["Something else"]})
    assert right == ["✗ **1** · CO2", "✗ **0** · O2", "✅ **1** · Something else · counts as right"]
    unchosen = poll.stage_rows({**base, "decision": "CO2", "counts": {"CO2": 1, "O2": 0, "Something else": 0},
                                "right_options": ["CO2"]})
    # Must not happen: an unchosen, wrong "Something else" taking a line of the projector's band.
    assert unchosen == ["✅ **1** · CO2 · the decision", "✗ **0** · O2"]
