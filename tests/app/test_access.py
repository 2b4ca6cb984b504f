"""Who may steer and what a visitor may open (madlab_ui/access.py), page by page with AppTest.

Three sessions: the owner (the session whose token started the debate), a non-owner on this machine
(another tab, no token), and a visitor (another machine: `access.client` reports a remote peer, as
the server's WebSocket would). The real network path is tests/e2e/test_e2e_access.py's; here the
policy: the owner gets enabled controls, a non-owner and a visitor none (and the caption why), a
visitor only the Poll page and the read-only debate of its link, never a reveal, a list, a form.
Also: the teacher key, forwarding headers, and the round words of the status line.
"""
from __future__ import annotations

import os
import stat

import pytest
from app_helpers import APP, COMPARE, HELD, MODELS, TRANSCRIPTS, app, config, join, keys, run_debate, texts
from streamlit.testing.v1 import AppTest
from test_page_memory import reload  # a new session opened with a URL

from mad_core import live, polls
from mad_core.store import Store
from madlab_ui import access
from madlab_ui.transcript import round_words

EXPERIMENTS = "pages/4_Experiments.py"
PRESENTER = "pages/5_Presenter.py"
POLL = "pages/6_Poll.py"
STEERING = ("pause", "resume", "stop", "force_decision", "say_all_text", "say_all_send", "say_one_agent",
            "say_one_text", "say_one_send")
PHONE = "10.213.7.2"


@pytest.fixture
def remote(monkeypatch):
    """Every session is a browser on another machine (what the server's WebSocket peer would say),
    until the test sets `remote["client"]` to another connection."""
    peer = {"client": access.Client(PHONE)}
    monkeypatch.setattr(access, "client", lambda: peer["client"])
    return peer


def opened(token: str | None = None, debate: str | None = None, page: str = APP, **params) -> AppTest:
    """A new session opened with this URL (token, debate and other parameters), on `page`."""
    at = reload(token, debate)
    for name, value in params.items():
        at.query_params[name] = value
    (at.switch_page(page) if page != APP else at).run()
    assert not at.exception, at.exception
    return at


def steering(at: AppTest) -> set[str]:
    return set(STEERING) & keys(at)


def enabled(at: AppTest, key: str) -> bool:
    return not at.button(key=key).disabled


@pytest.fixture
def held(gate):
    """A debate held at its first call, started by a session whose token is returned."""
    token = app().session_state["owner_id"]
    debate = live.start(config(model=f"scripted/{HELD}", reference="Paris"), store=Store(), owner=token)
    return token, debate


# ----- who steers --------------------------------------------------------------------------------
def test_the_owner_steers_and_another_tab_on_this_machine_only_watches(held):
    token, debate = held
    owner = opened(token, debate.debate_id)
    assert set(STEERING) <= keys(owner)
    assert enabled(owner, "pause") and enabled(owner, "stop") and enabled(owner, "force_decision")
    assert not owner.text_input(key="say_all_text").disabled
    assert "steer_read_only" not in keys(owner)

    other = opened(debate=debate.debate_id)  # only ?debate=<id>, as on the projected address bar
    assert other.session_state["owner_id"] != token
    assert "running" in texts(other.get_by_key("debate_status"))
    # Must not happen: a control for a debate this session did not start.
    assert steering(other) == set()
    assert access.READ_ONLY in texts(other.get_by_key("steer_read_only"))
    assert not debate.controller.paused and not debate.controller.stopped


def test_a_visitor_holding_the_owners_token_steers_nothing(held, remote):
    token, debate = held
    phone = opened(token, debate.debate_id)  # the whole projected address, token included
    assert "running" in texts(phone.get_by_key("debate_status"))
    assert steering(phone) == set()
    assert access.READ_ONLY in texts(phone.get_by_key("steer_read_only"))
    # Must not happen: the teacher's form in the visitor's page, or a list of the debates running.
    assert "question" not in keys(phone) and "start" not in keys(phone) and "running_list" not in keys(phone)


def test_a_forwarding_header_never_makes_a_loopback_peer_the_teacher(held, remote):
    token, debate = held
    remote["client"] = access.Client("127.0.0.1", forwarded=True)
    proxied = opened(token, debate.debate_id)
    assert steering(proxied) == set() and "question" not in keys(proxied)


def test_a_session_seen_remote_stays_a_visitor_when_its_connection_is_gone(held, remote):
    token, debate = held
    phone = opened(token, debate.debate_id)
    remote["client"] = access.Client(None, connected=False)
    phone.run()
    assert steering(phone) == set() and "question" not in keys(phone)


def test_resume_is_the_teachers_and_never_a_visitors(gate, remote):
    token = app().session_state["owner_id"]
    debate = live.start(config(model=f"scripted/{HELD}"), store=Store(), owner=token)
    debate.controller.stop()
    gate.opened.set()
    join(debate.debate_id)
    remote["client"] = access.Client("::1")
    teacher = opened(debate=debate.debate_id)  # another tab on this machine: the teacher may resume
    assert "resume_debate" in keys(teacher)
    remote["client"] = access.Client(PHONE)
    phone = opened(token, debate.debate_id)
    assert "resume_debate" not in keys(phone) and "stopped" in texts(phone.get_by_key("debate_status"))


# ----- what a visitor may open -------------------------------------------------------------------
@pytest.mark.parametrize("page", [TRANSCRIPTS, COMPARE, MODELS, EXPERIMENTS])
def test_a_visitor_is_refused_every_teacher_page_in_one_line(page, remote):
    run_debate("Which river flows through Paris?")
    at = opened(page=page)
    assert texts(at.main) == access.REFUSED
    # Must not happen: anything of the page drawn under the refusal (a list, a picker, a button).
    assert [node.key for node in at.main if getattr(node, "key", None)] == ["access_refused"]
    assert not at.button and not at.text_input and not at.multiselect


def test_the_teacher_opens_those_pages(gate):
    for page in (TRANSCRIPTS, COMPARE, MODELS, EXPERIMENTS):
        at = app(page)
        assert "access_refused" not in keys(at), page


def test_a_visitor_at_the_root_gets_one_line_and_no_running_debate(held, remote):
    at = opened()
    assert access.VISITOR_HOME in texts(at.get_by_key("visitor_home"))
    assert "running_list" not in keys(at) and "question" not in keys(at)
    assert not at.button  # no Watch, no Start
    # Only the visitor's pages are linked; the menu of every page is not shown.
    assert [link.proto.page for link in at.sidebar.get("page_link")] == ["", "Presenter", "Poll", "join", "Glossary"]


def test_a_visitor_predicts_on_the_poll_of_its_link(remote):
    debate_id = run_debate()
    poll_id = polls.open_poll(Store(), debate_id, ["Paris", "Lyon"])
    phone = opened(page=POLL, poll=poll_id)
    phone.radio(key="poll_choice").set_value("Lyon")
    phone.text_input(key="poll_voter").set_value("Ana").run()
    phone.button(key="poll_predict").click().run()
    assert polls.results(Store(), poll_id)["total"] == 1  # the visitor's prediction is stored
    assert "Prediction recorded" in texts(phone.main)


def test_a_visitor_sees_the_presenter_read_only(held, remote):
    token, debate = held
    phone = opened(debate=debate.debate_id, page=PRESENTER)
    assert "presenter_agent_0" in keys(phone)
    # Must not happen: the pause key, the source picker (replay any id), the poll's teacher controls.
    assert "presenter_pause" not in keys(phone)
    assert not phone.sidebar.radio and not phone.sidebar.text_input and not phone.sidebar.button
    remote["client"] = access.Client("127.0.0.1")  # the owner, on the machine itself
    owner = opened(token, debate.debate_id, page=PRESENTER)
    assert "presenter_pause" in keys(owner)


# ----- the reference -----------------------------------------------------------------------------
def test_a_running_debates_reference_is_offered_to_its_owner_only(held):
    token, debate = held
    mine = opened(token, page=TRANSCRIPTS, open=debate.debate_id)
    assert "reveal_reference" in keys(mine)
    other = opened(page=TRANSCRIPTS, open=debate.debate_id)
    assert "reveal_reference" not in keys(other)
    assert "Paris" not in texts(other.main).replace("capital of France", "")


def test_a_visitor_never_reveals_a_finished_debates_reference(remote):
    debate_id = run_debate(reference="Paris")
    phone = opened(debate=debate_id)
    assert "decision_card" in keys(phone)
    assert "reveal_reference" not in keys(phone) and "reference_revealed" not in keys(phone)


# ----- the teacher key ---------------------------------------------------------------------------
def test_the_teacher_key_makes_a_visitor_the_teacher_and_leaves_the_url(remote):
    key = access.teacher_key()
    wrong = opened(teacher=key[:-1] + ("x" if key[-1] != "x" else "y"))
    assert "question" not in keys(wrong) and "not valid" in texts(wrong.main)
    at = opened(teacher=key)
    assert "question" in keys(at) and "start" in keys(at)
    assert "teacher" not in at.query_params  # never left in the address (it may be projected)
    at.switch_page(TRANSCRIPTS).run()
    assert "access_refused" not in keys(at)


def test_the_key_is_random_per_home_kept_private_and_printed_in_one_line(tmp_path, capsys):
    (tmp_path / "other").mkdir()
    first, again, other = access.teacher_key(tmp_path), access.teacher_key(tmp_path), access.teacher_key(tmp_path / "other")
    assert first == again and first != other and len(first) >= 32
    assert stat.S_IMODE(os.stat(access.key_path(tmp_path)).st_mode) == 0o600
    assert access.key_matches(first, tmp_path) and not access.key_matches(first[:-1], tmp_path)
    assert not access.key_matches("", tmp_path) and not access.key_matches(None, tmp_path)
    assert access.main(["--server.address", "10.213.7.1", "--server.port", "8600"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == ["MAD Lab on this machine: http://localhost:8600",
                     "Poll links and students' devices: http://10.213.7.1:8600",
                     f"Teacher key for other machines: http://10.213.7.1:8600/?teacher={access.teacher_key()}"]


@pytest.mark.parametrize("address, local", [("127.0.0.1", True), ("::1", True), ("127.0.0.2", True),
                                            ("::ffff:127.0.0.1", True), ("10.213.7.2", False),
                                            ("192.168.1.5", False), ("", False), (None, False), ("x", False)])
def test_loopback_addresses(address, local):
    assert access.is_loopback_address(address) is local


# ----- round words (the status line and the progress bar) -----------------------------------------
def test_round_words_name_the_rounds_set_and_the_cap_apart():
    assert round_words(1, 2, 5) == "round 1 of 2 (cap 5)"
    assert round_words(3, 2, 5) == "round 3 of 2 (extra round: no decision yet, cap 5)"
    assert round_words(2, 2, 2) == "round 2 of 2"
    # Must not happen: "of max 5" when the teacher asked for 2 rounds.
    assert "max" not in round_words(1, 2, 5)


def test_the_status_line_says_round_of_the_rounds_set(held):
    token, debate = held
    owner = opened(token, debate.debate_id)
    assert "of max" not in texts(owner.get_by_key("debate_status"))
    done = run_debate(rounds=1, max_rounds=3)
    at = opened(debate=done)
    assert "round 1 of 1 (cap 3)" in texts(at.get_by_key("debate_status"))
