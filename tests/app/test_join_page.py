"""The class joins by code (madlab_ui/join.py, pages/9_Join.py) and the presenter's class view: a phone
types the code and a nickname, predicts under it, keeps both across a reload and follows the next
poll; bad codes and nicknames are refused beside their field with nothing written; the teacher sees
the code, who joined and who predicted; after the reveal the stage shows the class's bar chart beside
the agents' answers at the poll's round. A visitor from the network reaches /join."""
from __future__ import annotations

import json

from app_helpers import APP, keys, run_debate, texts
from streamlit.testing.v1 import AppTest
from test_access import remote  # noqa: F401 - the fixture: every session on another machine
from test_presenter import presenter

from mad_core import classroom, join_codes, polls
from mad_core.store import Store
from madlab_ui import access
from madlab_ui.replay import DECISION

JOIN = "pages/9_join.py"


def phone(**params) -> AppTest:
    """A new session on the Join page opened with these URL parameters (a reload: the same link)."""
    at = AppTest.from_file(APP, default_timeout=30)
    for name, value in params.items():
        at.query_params[name] = value
    at.run()
    at.switch_page(JOIN).run()
    assert not at.exception, at.exception
    return at


def join(at: AppTest, code: str, nickname: str) -> AppTest:
    at.text_input(key="join_code").set_value(code)
    at.text_input(key="join_nickname").set_value(nickname).run()
    at.button(key="join_send").click().run()
    assert not at.exception, at.exception
    return at


def param(at: AppTest, name: str) -> str:
    value = at.query_params[name]
    return value[0] if isinstance(value, list) else value


def said(at: AppTest, key: str) -> str:
    """The text under `key` as read on the screen (markdown's escapes removed)."""
    return texts(at.get_by_key(key)).replace("\\", "")


def tables() -> tuple[list, list]:
    store = Store()
    return store.query("SELECT * FROM participants"), store.query("SELECT * FROM joins")


def test_a_phone_joins_by_code_predicts_reloads_and_follows_the_next_poll():
    debate_id = run_debate()
    first = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"], round=0)
    code = join_codes.code_of(Store(), "poll", first)
    ada = join(phone(), code.lower(), "Ada")
    assert "You are **Ada**" in texts(ada.get_by_key("poll_nickname"))
    assert "poll_voter" not in keys(ada)  # the nickname is the name: no second name field
    ada.radio(key="poll_choice").set_value("Lyon").run()
    ada.button(key="poll_predict").click().run()
    device = param(ada, "device")
    assert param(ada, "poll") == first
    assert [(r["device"], r["voter"], r["option"]) for r in Store().query("SELECT * FROM predictions")] == [
        (device, "Ada", "Lyon")]
    again = phone(device=device, poll=first)  # a reload: nickname and prediction kept, no form
    assert "join_code" not in keys(again) and "You are **Ada**" in texts(again.get_by_key("poll_nickname"))
    assert "Your prediction (Ada): **Lyon**" in texts(again.get_by_key("poll_mine"))
    polls.close(Store(), first)
    second = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"], round=1)
    again.run()  # the joined phone follows the debate's next poll, with no new code
    assert param(again, "poll") == second and "poll_choice" in keys(again)
    assert "You are **Ada**" in texts(again.get_by_key("poll_nickname"))
    # Must not happen: a phone that never joined let in by the link alone.
    stranger = phone(device="z" * 24, poll=second)
    assert "join_code" in keys(stranger) and "poll_choice" not in keys(stranger)


def test_bad_codes_and_nicknames_are_said_beside_their_field_and_nothing_is_written():
    debate_id = run_debate()
    poll_id = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"])
    code = join_codes.code_of(Store(), "poll", poll_id)
    join(phone(), code, "Ada")
    before = tables()
    at = join(phone(), "K7M3", "Bo")
    assert "Code: a code is 6 letters and digits" in said(at, "join_code_error")
    at = join(at, "KKKKKK", "Bo")
    assert "no open poll or seat has the code KKKKKK" in said(at, "join_code_error")
    at = join(at, code, "ada")
    assert "join_code_error" not in keys(at)
    assert "Nickname: “ada” is taken in this class" in said(at, "join_nickname_error")
    at = join(at, code, "x" * 25)
    assert "Nickname: at most 24 characters (got 25)" in said(at, "join_nickname_error")
    at = join(at, code, "   ")
    assert "Nickname: must not be empty" in said(at, "join_nickname_error")
    assert tables() == before  # nothing written by any refusal
    polls.close(Store(), poll_id)  # the teacher closed the poll: its code is retired
    at = join(at, code, "Bo")
    assert "the code of a closed poll no longer works" in said(at, "join_code_error")
    assert tables() == before and "poll_choice" not in keys(at)


def test_the_teacher_sees_the_code_who_joined_and_the_class_chart_after_the_reveal():
    debate_id = run_debate()  # the scripted agents all answer Paris
    at = presenter(replay=debate_id)
    at.selectbox(key="presenter_round").set_value(1).run()
    for _ in range(3):
        at.button(key="presenter_next").click().run()
    at.text_area(key="poll_options").set_value("Paris\nLyon").run()
    at.button(key="poll_open").click().run()
    poll = polls.polls_of(Store(), debate_id)[0]
    code = join_codes.code_of(Store(), "poll", poll["id"])
    assert poll["round"] == 1
    assert f"`{code}`" in texts(at.get_by_key("poll_code")) and "/join" in texts(at.get_by_key("poll_code"))
    assert f"`{code}`" in texts(at.get_by_key("poll_teacher_code"))
    for name, choice in (("Ada", "Lyon"), ("Bo", "Paris"), ("Cy", "Paris")):
        student = join(phone(), code, name)
        student.radio(key="poll_choice").set_value(choice).run()
        student.button(key="poll_predict").click().run()
    join(phone(), code, "Dee")  # joined, never predicted
    at.run()
    assert texts(at.get_by_key("class_joined")) == "Ada, Bo, Cy, Dee"
    assert texts(at.get_by_key("class_predicted")) == "Predicted in this poll: 3 · Ada, Bo, Cy · waiting for 1"
    assert "poll_class_panel" not in keys(at)  # must not happen: the chart before the reveal
    at.selectbox(key="presenter_round").set_value(DECISION).run()
    assert "poll_code" not in keys(at)  # the decision closed the poll: its code is gone from the stage
    assert join_codes.resolve(Store(), code) is None
    at.button(key="poll_reveal").click().run()
    spec = json.loads(at.get_by_key("poll_chart").proto.spec)
    assert [(t["name"], t["x"], t["y"]) for t in spec["data"]] == [
        ("Class", ["✅ Paris", "Lyon", "Something else"], [2, 1, 0]),
        ("Agents", ["✅ Paris", "Lyon", "Something else"], [3, 0, 0])]
    assert [texts(at.get_by_key(f"poll_agent_answer_{i}")) for i in range(3)] == [
        "**Agent 1:** Paris", "**Agent 2:** Paris", "**Agent 3:** Paris"]
    assert "presenter_agent_0" not in keys(at)  # the class's answers take the agents' place
    at.button(key="presenter_class_toggle").click().run()
    assert "presenter_agent_0" in keys(at) and "poll_class_panel" not in keys(at)
    assert "class_csv" in keys(at)
    rows = classroom.class_rows(Store(), debate_id)
    assert [(r["nickname"], r["prediction"], r["matched"]) for r in rows] == [
        ("Ada", "Lyon", "no"), ("Bo", "Paris", "yes"), ("Cy", "Paris", "yes"), ("Dee", "", "")]


def test_a_visitor_opens_join_and_joins_but_no_teacher_page(remote):  # noqa: F811
    debate_id = run_debate()
    poll_id = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"])
    at = join(phone(), join_codes.code_of(Store(), "poll", poll_id), "Ada")
    assert "access_refused" not in keys(at) and "poll_choice" in keys(at)
    assert access.may_open("Join") and not access.may_open("Transcripts")
