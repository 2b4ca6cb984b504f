"""The class of a debate (mad_core/classroom.py) and the polls' codes (mad_core/polls.py): every poll
gets a code that is retired when the poll stops taking predictions, one open poll per debate, students
join by code with a nickname unique in the debate's class (nothing written when refused), a joined
device follows the debate's polls, the class CSV row by row, and the revealed poll's chart data."""
from __future__ import annotations

import csv
import hashlib
import io
import threading

import pytest

from mad_core import classroom, cli, join_codes, polls, seats
from mad_core.classroom import ClassroomError
from mad_core.polls import PollError
from mad_core.store import Store
from mad_core.view import DebateView, TurnView
from test_polls import CONFIG, DEBATE, decide  # the polls' debate, decided on CO2

OTHER = "e" * 32  # a second debate, its own class
ADA, BO, CY = "a" * 20, "b" * 20, "c" * 20  # device tokens


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "class.db") as opened:
        for debate_id in (DEBATE, OTHER):
            opened.create_debate(debate_id, CONFIG)
        yield opened


def table(store: Store, name: str) -> list[dict]:
    return [dict(row) for row in store.query(f"SELECT * FROM {name} ORDER BY rowid")]


def short(device: str) -> str:
    return hashlib.sha256(f"madlab-class-device:{device}".encode()).hexdigest()[:8]


# ----- codes on polls ---------------------------------------------------------------------------------
def test_the_migration_makes_the_class_tables(store):
    assert "m018_participants" in store.applied_migrations()
    assert store.db["participants"].pks == ["debate_id", "device"]
    assert set(store.db["joins"].columns_dict) == {"device", "kind", "target", "debate_id", "code", "at"}


def test_a_poll_gets_a_code_when_it_opens_and_the_code_is_retired_when_it_closes(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"], round=0)
    code = join_codes.code_of(store, "poll", poll_id)
    assert code is not None and polls.poll_code(store, polls.get_poll(store, poll_id)) == code
    assert join_codes.resolve(store, code) == {"code": code, "kind": "poll", "target": poll_id}
    polls.close(store, poll_id)
    assert join_codes.resolve(store, code) is None  # retired: admits nobody
    assert polls.poll_code(store, polls.get_poll(store, poll_id)) is None  # and is no longer shown
    revealed = polls.open_poll(store, DEBATE, ["CO2", "O2"], round=1)
    polls.reveal(store, revealed)
    assert join_codes.resolve(store, join_codes.code_of(store, "poll", revealed)) is None


def test_a_live_debates_decision_retires_the_code_and_a_stale_code_admits_nobody(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    code = join_codes.code_of(store, "poll", poll_id)
    decide(store)  # the store closes the poll ("decided") without a write
    with pytest.raises(ClassroomError, match="no open poll or seat has the code") as refused:
        classroom.enter(store, code, "Ada", ADA)
    assert refused.value.field == "code"
    assert table(store, "participants") == [] and table(store, "joins") == []  # nothing written
    polls.retire_codes(store, DEBATE)
    assert join_codes.resolve(store, code) is None


def test_one_open_poll_at_a_time_per_debate(store):
    first = polls.open_poll(store, DEBATE, ["CO2", "O2"], round=0)
    with pytest.raises(PollError, match=f"poll {first} of this debate is still open") as refused:
        polls.open_poll(store, DEBATE, ["CO2", "O2"], round=1)
    assert refused.value.field == "debate_id"
    assert [poll["id"] for poll in polls.polls_of(store, DEBATE)] == [first]  # must not happen: a second one
    assert polls.open_poll(store, OTHER, ["CO2", "O2"])  # another debate's poll is its own
    polls.close(store, first)
    second = polls.open_poll(store, DEBATE, ["CO2", "O2"], round=1)
    assert [(p["id"], p["round"]) for p in polls.polls_of(store, DEBATE)] == [(second, 1), (first, 0)]


# ----- joining -----------------------------------------------------------------------------------------
def test_joining_by_code_stores_the_nickname_per_device_and_debate(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    code = join_codes.code_of(store, "poll", poll_id)
    joined = classroom.enter(store, f" {code[:3].lower()}-{code[3:]} ", "  Ａｄａ\u200b ", ADA)
    assert joined == {"kind": "poll", "target": poll_id, "debate_id": DEBATE, "nickname": "Ada", "code": code}
    assert [(r["debate_id"], r["device"], r["nickname"], r["folded"]) for r in table(store, "participants")] == [
        (DEBATE, ADA, "Ada", "ada")]
    assert [(r["device"], r["kind"], r["target"], r["code"]) for r in table(store, "joins")] == [
        (ADA, "poll", poll_id, code)]
    assert classroom.nickname_of(store, DEBATE, ADA) == "Ada"
    assert classroom.participants(store, DEBATE)[0]["device"] == short(ADA)  # never the raw token
    assert classroom.admitted(store, ADA, "poll", poll_id) == {"debate_id": DEBATE, "nickname": "Ada"}
    # Must not happen: a device that never joined admitted, or the joined one admitted to another debate.
    assert classroom.admitted(store, BO, "poll", poll_id) is None
    assert classroom.admitted(store, ADA, "poll", polls.open_poll(store, OTHER, ["a", "b"])) is None
    assert classroom.admitted(store, ADA, "seat", poll_id) is None


def test_a_taken_nickname_is_refused_case_folded_and_the_same_device_may_rename(store):
    code = join_codes.code_of(store, "poll", polls.open_poll(store, DEBATE, ["CO2", "O2"]))
    classroom.enter(store, code, "Ada", ADA)
    before = table(store, "participants")
    with pytest.raises(ClassroomError, match="“ADA” is taken in this class") as refused:
        classroom.enter(store, code, "ADA", BO)
    assert refused.value.field == "nickname"
    assert table(store, "participants") == before and len(table(store, "joins")) == 1  # nothing written
    classroom.enter(store, code, "ada", ADA)  # the holder itself: a rename of its own
    classroom.enter(store, code, "Bo", BO)
    assert [(r["device"], r["nickname"]) for r in table(store, "participants")] == [(ADA, "ada"), (BO, "Bo")]
    other_code = join_codes.code_of(store, "poll", polls.open_poll(store, OTHER, ["CO2", "O2"]))
    classroom.enter(store, other_code, "Bo", ADA)  # another debate, another class: "Bo" is free there
    assert classroom.nickname_of(store, OTHER, ADA) == "Bo" and classroom.nickname_of(store, DEBATE, ADA) == "ada"


@pytest.mark.parametrize("code, nickname, device, field, message", [
    ("K7M3P", "Ada", ADA, "code", "a code is 6 letters and digits"),
    ("K7M3PO", "Ada", ADA, "code", "a code is 6 letters and digits"),  # O is not in the alphabet
    (None, "Ada", ADA, "code", "a code is 6 letters and digits"),
    ("KKKKKK", "Ada", ADA, "code", "no open poll or seat has the code KKKKKK"),
    ("{code}", "", ADA, "nickname", "must not be empty"),
    ("{code}", "\u200b\u2060", ADA, "nickname", "has no visible characters"),
    ("{code}", "x" * 25, ADA, "nickname", "at most 24 characters (got 25)"),
    ("{code}", "Ada", "short", "device", "reload the page"),
])
def test_bad_input_is_refused_naming_the_field_and_writes_nothing(store, code, nickname, device, field, message):
    real = join_codes.code_of(store, "poll", polls.open_poll(store, DEBATE, ["CO2", "O2"]))
    with pytest.raises(ClassroomError) as refused:
        classroom.enter(store, code.format(code=real) if isinstance(code, str) else code, nickname, device)
    assert refused.value.field == field and message in refused.value.message
    assert table(store, "participants") == [] and table(store, "joins") == []


def test_a_closed_polls_code_admits_no_new_student_but_keeps_those_who_joined(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    code = join_codes.code_of(store, "poll", poll_id)
    classroom.enter(store, code, "Ada", ADA)
    polls.close(store, poll_id)
    with pytest.raises(ClassroomError, match="the code of a closed poll no longer works"):
        classroom.enter(store, code, "Bo", BO)
    assert classroom.admitted(store, ADA, "poll", poll_id) == {"debate_id": DEBATE, "nickname": "Ada"}
    # The next poll of the debate: the class follows it with the same nickname, no new code needed.
    following = polls.open_poll(store, DEBATE, ["CO2", "O2"], round=1)
    assert classroom.newest_poll(store, DEBATE)["id"] == following
    assert classroom.admitted(store, ADA, "poll", following)["nickname"] == "Ada"


def test_two_phones_racing_for_one_nickname_get_it_once(tmp_path, store):
    code = join_codes.code_of(store, "poll", polls.open_poll(store, DEBATE, ["CO2", "O2"]))
    devices = [f"{i:02d}" * 10 for i in range(8)]
    start, outcomes = threading.Barrier(len(devices)), []

    def join(device: str) -> None:
        own = Store(store.path)
        try:
            start.wait(timeout=30)
            classroom.enter(own, code, "Same", device)
            outcomes.append("joined")
        except ClassroomError as exc:
            outcomes.append(exc.field)
        finally:
            own.close()

    threads = [threading.Thread(target=join, args=(device,)) for device in devices]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["joined"] + ["nickname"] * 7
    assert len(table(store, "participants")) == 1


# ----- the class CSV ----------------------------------------------------------------------------------
def test_the_class_csv_has_one_row_per_student_per_poll(store):
    first = polls.open_poll(store, DEBATE, ["CO2", "O2"], round=0)
    code = join_codes.code_of(store, "poll", first)
    classroom.enter(store, code, "Ada", ADA)
    classroom.enter(store, code, "=HYPERLINK(1)", BO)  # a formula as a nickname
    polls.predict(store, first, "Ada", "CO2", device=ADA)
    polls.predict(store, first, "=HYPERLINK(1)", "O2", device=BO)
    polls.predict(store, first, "Cy", "O2")  # recorded by the teacher by name: no device
    polls.close(store, first)
    assert classroom.class_rows(store, DEBATE)[0]["matched"] == "undecided"  # no decision yet
    second = polls.open_poll(store, DEBATE, ["CO2", "O2"], round=1)
    polls.predict(store, second, "Ada", "O2", device=ADA)  # Bo does not predict this time
    decide(store)
    rows = list(csv.DictReader(io.StringIO(classroom.class_csv(store, DEBATE))))
    assert [tuple(row.values()) for row in rows] == [
        (DEBATE, first, "0", "Ada", short(ADA), "CO2", "CO2", "yes"),
        (DEBATE, first, "0", "'=HYPERLINK(1)", short(BO), "O2", "CO2", "no"),
        (DEBATE, first, "0", "Cy", "", "O2", "CO2", "no"),
        (DEBATE, second, "1", "Ada", short(ADA), "O2", "CO2", "no"),
        (DEBATE, second, "1", "'=HYPERLINK(1)", short(BO), "", "CO2", ""),
    ]
    assert list(rows[0]) == list(classroom.CSV_COLUMNS)
    text = classroom.class_csv(store, DEBATE)
    assert ADA not in text and BO not in text  # must not happen: a raw device token in the file
    assert classroom.class_csv(store, OTHER) == ",".join(classroom.CSV_COLUMNS) + "\r\n"  # no poll: the header


def test_the_cli_exports_the_class_csv(store, tmp_path, capsys):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"], round=2)
    polls.predict(store, poll_id, "Ada", "CO2", device=ADA)
    out = tmp_path / "class.csv"
    assert cli.main(["--db", str(store.path), "export", DEBATE[:8], "--format", "class-csv", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").splitlines() == [
        ",".join(classroom.CSV_COLUMNS), f"{DEBATE},{poll_id},2,Ada,{short(ADA)},CO2,,undecided"]


# ----- the chart of a revealed poll -------------------------------------------------------------------
def turn(agent: str, rnd: int, text: str) -> TurnView:
    return TurnView(id=f"{agent}{rnd}", round=rnd, agent=agent, kind="discussion", model="m", prompt=[], text=text,
                    status="ok")


def test_the_agents_at_a_polls_round_and_the_chart_beside_the_class(store):
    view = DebateView(debate_id=DEBATE, config=CONFIG,
                      turns=[turn("Agent 1", 1, "Final answer: O2"), turn("Agent 2", 1, "Final answer: CO2"),
                             turn("Agent 1", 2, "Final answer: CO2")])
    assert classroom.agents_at_round(view, 1) == {"Agent 1": "O2", "Agent 2": "CO2"}
    assert classroom.agents_at_round(view, 2) == {"Agent 1": "CO2", "Agent 2": "CO2"}
    assert classroom.agents_at_round(view, None) == {}  # before the debate
    result = {"counts": {"CO2": 3, "O2": 1, "Something else": 0}, "right_options": ["CO2"]}
    fig = classroom.results_figure(result, classroom.agents_at_round(view, 1))
    assert [(t.name, list(t.x), list(t.y)) for t in fig.data] == [
        ("Class", ["✅ CO2", "O2", "Something else"], [3, 1, 0]),
        ("Agents", ["✅ CO2", "O2", "Something else"], [1, 1, 0])]
    assert list(fig.data[0].marker.color) == [classroom.RIGHT_COLOR, classroom.NO_ANSWER_COLOR,
                                              classroom.NO_ANSWER_COLOR]
    hostile = classroom.results_figure({"counts": {"<b>x</b>": 1, "y": 0}, "right_options": []}, {})
    assert list(hostile.data[0].x) == ["&lt;b&gt;x&lt;/b&gt;", "y"] and len(hostile.data) == 1


def test_a_seats_code_joins_the_seats_debate_and_admits_that_seat_only(store):
    opened = seats.REGISTRY.open_debate(DEBATE, [(0, "Agent 1", 60.0), (1, "Agent 2", 60.0)])
    try:
        mine, other = opened["Agent 1"], opened["Agent 2"]
        code = seats.seat_code(store, mine)
        joined = classroom.enter(store, code, "Ada", ADA)
        assert (joined["kind"], joined["target"], joined["debate_id"]) == ("seat", mine, DEBATE)
        assert classroom.admitted(store, ADA, "seat", mine) == {"debate_id": DEBATE, "nickname": "Ada"}
        # Must not happen: the seat beside it (its id is guessable) opened without its code.
        assert classroom.admitted(store, ADA, "seat", other) is None
        with pytest.raises(ClassroomError, match="is taken"):  # one class per debate: polls and seats share names
            classroom.enter(store, join_codes.code_of(store, "poll", polls.open_poll(store, DEBATE, ["a", "b"])),
                            "ADA", BO)
    finally:
        seats.REGISTRY.close_debate(DEBATE)
