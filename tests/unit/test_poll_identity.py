"""Poll voters are devices, not names (mad_core/polls.py): a student who types another student's name
no longer replaces that prediction, look-alike names are one name, broken text is refused naming the
field; "Something else" can be right; old databases migrate (m007) with their predictions readable."""
from __future__ import annotations

import sqlite3

import pytest
from sqlite_utils import Database
from test_polls import DEBATE, decide, store  # noqa: F401 - `store`: the fixture (a store with one debate)

from mad_core import polls
from mad_core.polls import SOMETHING_ELSE, PollError
from mad_core.store import MIGRATIONS, Store

ANA, BEA, CY = "a" * 32, "b" * 32, "c" * 32  # three devices (the tokens the students' pages keep)


def rows(store: Store) -> list[tuple]:
    return [tuple(r) for r in store.db.execute("SELECT device, voter, option FROM predictions ORDER BY rowid")]


# ----- devices, names ------------------------------------------------------------------------------
def test_two_devices_with_one_name_both_count_and_each_updates_only_its_own(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    polls.predict(store, poll_id, "Ada", "CO2", device=ANA)
    polls.predict(store, poll_id, "Ada", "O2", device=BEA)  # another student types the same name
    # Must not happen: the second "Ada" replacing the first one's prediction.
    assert polls.prediction_of(store, poll_id, ANA) == {"voter": "Ada", "option": "CO2"}
    assert polls.prediction_of(store, poll_id, BEA) == {"voter": "Ada (2)", "option": "O2"}
    polls.predict(store, poll_id, "Ada L.", "O2", device=ANA)  # the first device changes its mind (and name)
    result = polls.results(store, poll_id)
    assert result["total"] == 2 and result["voters"] == ["Ada", "Ada L."]
    assert polls.prediction_of(store, poll_id, ANA) == {"voter": "Ada L.", "option": "O2"}
    assert polls.prediction_of(store, poll_id, CY) is None and polls.prediction_of(store, poll_id, "Ada") is None
    polls.reveal(store, poll_id)
    assert polls.results(store, poll_id)["counts"] == {"CO2": 0, "O2": 2}


def test_look_alike_names_are_one_name_shown_apart_by_a_suffix(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    for device, name in ((ANA, "Ada"), (BEA, "Ａｄａ\u200b"), (CY, "\u2066A\u200dda\u2069 ")):
        polls.predict(store, poll_id, name, "CO2", device=device)
    assert [voter for _, voter, _ in rows(store)] == ["Ada", "Ada", "Ada"]  # NFKC, invisible characters gone
    assert polls.results(store, poll_id)["voters"] == ["Ada", "Ada (2)", "Ada (3)"]


@pytest.mark.parametrize("name, message", [
    ("\u200b\u200c\ufeff", "has no visible characters"),
    ("\u2066\u2069\x00\x07", "has no visible characters"),
    ("", "must not be empty"),
    ("Ada\ud800", "is not valid text"),  # a lone surrogate: UnicodeEncodeError in SQLite before
    ("\udfff", "is not valid text"),
    ("x" * 81, "at most 80 characters"),
    (["Ada"], "must be text"),
])
def test_a_name_without_visible_text_or_with_broken_text_is_refused_naming_the_field(store, name, message):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    with pytest.raises(PollError) as refused:
        polls.predict(store, poll_id, name, "CO2", device=ANA)
    assert refused.value.field == "voter" and message in refused.value.message
    assert rows(store) == []  # nothing written


def test_broken_text_in_options_or_question_is_refused_not_a_unicode_error(store):
    with pytest.raises(PollError, match=r"^options\[1\]: is not valid text"):
        polls.open_poll(store, DEBATE, ["CO2", "O\ud8002"])
    with pytest.raises(PollError, match="^question: is not valid text"):
        polls.open_poll(store, DEBATE, ["CO2", "O2"], question="Which\udc00?")
    assert polls.polls_of(store, DEBATE) == []


@pytest.mark.parametrize("device", ["", "short", "x" * 65, "a b" * 8, "../../etc/passwd", 12345678901234567])
def test_a_device_token_that_no_page_makes_is_refused(store, device):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    with pytest.raises(PollError) as refused:
        polls.predict(store, poll_id, "Ada", "CO2", device=device)
    assert refused.value.field == "device" and rows(store) == []


def test_the_teacher_records_by_name_and_never_touches_a_device_with_that_name(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    polls.predict(store, poll_id, "Bo", "CO2", device=ANA)  # a student named Bo on a phone
    polls.predict(store, poll_id, "Bo", "O2")  # the teacher records for another Bo
    polls.predict(store, poll_id, " Bo ", "CO2")  # and corrects it: the same named voter
    assert rows(store) == [(ANA, "Bo", "CO2"), ("name:Bo", "Bo", "CO2")]
    assert polls.results(store, poll_id)["voters"] == ["Bo", "Bo (2)"]


# ----- "Something else" --------------------------------------------------------------------------
def opened_with_something_else(store: Store) -> str:
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"], something_else=True)
    polls.predict(store, poll_id, "Ada", SOMETHING_ELSE, device=ANA)
    polls.predict(store, poll_id, "Bo", "CO2", device=BEA)
    polls.reveal(store, poll_id)
    return poll_id


def test_something_else_is_an_option_and_is_right_when_the_decision_is_none_of_the_listed(store):
    poll_id = opened_with_something_else(store)
    assert polls.get_poll(store, poll_id)["options"] == ["CO2", "O2", SOMETHING_ELSE]
    decide(store, "Final answer: water vapour")
    result = polls.results(store, poll_id)
    assert result["right_options"] == [SOMETHING_ELSE] and result["right"] == ["Ada"]
    assert result["counts"] == {"CO2": 1, "O2": 0, SOMETHING_ELSE: 1}


def test_something_else_is_never_right_when_the_decision_is_a_listed_option(store):
    poll_id = opened_with_something_else(store)
    decide(store, "Final answer: co2")
    assert polls.results(store, poll_id)["right"] == ["Bo"]
    # Must not happen: the teacher (or a stale mark) making "Something else" right beside the decided option.
    with pytest.raises(PollError, match="^option: the debate decided 'CO2'") as refused:
        polls.mark_right(store, poll_id, SOMETHING_ELSE)
    assert refused.value.field == "option"
    assert polls.results(store, poll_id)["right_options"] == ["CO2"]


def test_the_teacher_can_mark_something_else_right_and_undo_it(store):
    poll_id = opened_with_something_else(store)
    assert polls.results(store, poll_id)["right"] == []  # no decision: nobody is right
    polls.mark_right(store, poll_id, SOMETHING_ELSE)
    assert polls.results(store, poll_id)["right"] == ["Ada"]
    decide(store, "Final answer: O2")  # a decision that names a listed option comes later: the mark yields
    assert polls.results(store, poll_id)["right_options"] == ["O2"] and polls.results(store, poll_id)["right"] == []
    polls.mark_right(store, poll_id, "CO2")  # the teacher judges "CO2" right after all
    assert polls.results(store, poll_id)["right"] == ["Bo"]
    polls.mark_right(store, poll_id, None)  # back to the rule
    assert polls.results(store, poll_id)["right_options"] == ["O2"]
    with pytest.raises(PollError, match="^option: "):
        polls.mark_right(store, poll_id, "N2")


def test_a_listed_something_else_is_not_added_twice_and_the_rule_is_pure():
    assert polls.right_options(["CO2", "something else."], "water") == ["something else."]
    assert polls.right_options(["CO2", SOMETHING_ELSE], None) == []
    assert polls.right_options(["CO2", "O2"], "water") == []  # no "Something else" offered: nobody is right
    assert polls.right_options(["CO2", SOMETHING_ELSE], "CO2", marked=SOMETHING_ELSE) == ["CO2"]


def test_open_poll_keeps_a_typed_something_else_once(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "something else"], something_else=True, round=2)
    poll = polls.get_poll(store, poll_id)
    assert poll["options"] == ["CO2", "something else"] and poll["round"] == 2


# ----- the migration -----------------------------------------------------------------------------
def test_a_database_from_before_devices_migrates_and_keeps_its_predictions(tmp_path):
    path = tmp_path / "old.db"
    old = Database(path)
    MIGRATIONS.apply(old, stop_before="m007_poll_devices")  # the schema as it was (m001..m006)
    assert old["predictions"].pks == ["poll_id", "voter"]
    old["debates"].insert({"id": DEBATE, "question": "q", "config": "{}", "status": "finished"})
    old["polls"].insert({"id": "p1", "debate_id": DEBATE, "question": "Which?", "options": '["CO2", "O2"]',
                         "status": "open", "created_at": 1.0})
    old["predictions"].insert_all([{"poll_id": "p1", "voter": "Ada", "option": "CO2", "at": 2.0},
                                   {"poll_id": "p1", "voter": "Bo", "option": "O2", "at": 3.0}])
    old.close()
    with Store(path) as store:
        assert "m007_poll_devices" in store.applied_migrations()
        assert rows(store) == [("name:Ada", "Ada", "CO2"), ("name:Bo", "Bo", "O2")]
        assert polls.results(store, "p1")["voters"] == ["Ada", "Bo"]
        polls.predict(store, "p1", "Ada", "O2", device=ANA)  # a new device named Ada: a new voter
        polls.predict(store, "p1", "Bo", "CO2")  # the teacher corrects Bo's old prediction
        assert rows(store) == [("name:Ada", "Ada", "CO2"), ("name:Bo", "Bo", "CO2"), (ANA, "Ada", "O2")]
        assert polls.get_poll(store, "p1")["round"] is None
    with sqlite3.connect(path) as conn:  # the old table is gone, the new one is the only one
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "predictions" in tables and not any(name.startswith("predictions_") for name in tables)
