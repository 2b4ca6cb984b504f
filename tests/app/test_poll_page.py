"""The students' poll page after the reveal says what the debate decided, also when the decision
is none of the poll's answers (the phone showed an empty "decision" column and "nobody")."""
from __future__ import annotations

from app_helpers import run_debate, texts
from test_presenter import student  # the students' page of a poll, opened as a phone does

from mad_core import polls
from mad_core.store import Store


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
    rows = [dict(r) for r in phone.get_by_key("poll_results").table[0].value.to_dict("records")]
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
    rows = [dict(r) for r in phone.get_by_key("poll_results").table[0].value.to_dict("records")]
    assert [row["decision"] for row in rows] == ["✅ the decision", "✗ not the decision"]
