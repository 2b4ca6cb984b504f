"""Another machine on the network sees only what the teacher handed out; the machine itself keeps everything.

The real server is started bound to 0.0.0.0 (its own home and scripted model). A network namespace
made for this test (`ip netns`), joined to this machine by a veth pair in a private /30 (10.213.7.1
here, 10.213.7.2 there: traffic only between the two ends made here), plays a student's device:
Chromium runs inside it (Playwright launches `ip netns exec NS chromium`), so the server sees a
connection from 10.213.7.2, a real non-loopback peer. The teacher is a browser on loopback.

The teacher starts a long debate and a poll. From the namespace: the root lists no running debate
and offers no Watch; the debate's link (`?debate=<id>`, or the whole projected address with the
teacher's token) shows the debate with no steering control at all; Transcripts, Compare, Models and
Experiments refuse in one line; the poll link takes a prediction; the Presenter shows the debate
without its pause key; the teacher key link (from the line `python -m madlab_ui.access` prints) makes
that browser the teacher. The positive control: the same pages on loopback show enabled controls.
A coding project's coder invitation typed at /join opens that project's Coding page: the visitor
names itself, codes a turn (stored under its name) and keeps its place over a reload, and reaches no
other project, no lead's tab, no teacher page; once the lead retires the code, the page says so.

Needs root (`ip netns`, veth) and Debian's chromium; skipped, saying why, where either is missing.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import CHROMIUM_ARGS, REPO, browser_page, run_server
from e2e_helpers import (LIVE_TIMEOUT, configure_debate, debate_by_question, expect, expect_no_exception, fill, key,
                         open_app, start, status, turn, unique, wait_for_idle)
from e2e_scripts import debate_script, reply, words
from test_e2e_coding import choose_option, press, stored_debate, type_in

from mad_core import join_codes, polls
from mad_core.qda import coding, invitations, storage
from mad_core.store import Store
from madlab_ui import access

pytestmark = pytest.mark.e2e
NS = f"madlab{os.getpid() % 100000}"
HOST_IF, PHONE_IF = f"mlh{os.getpid() % 100000}", f"mlp{os.getpid() % 100000}"
HOST_IP, PHONE_IP = "10.213.7.1", "10.213.7.2"
# The debate runs through the checks: 300 words at 0.3 s a piece is 90 s a turn, 4.5 minutes in all. Not
# longer: a scripted model is bounded like a remote one (120 s an attempt, DebateConfig.timeout_s), and a turn
# cut at the bound is retried with the script's next reply (seen on a loaded machine with 400 words: Agent 1's
# column showed Agent 2's words, and the check for Agent 1's failed).
SCRIPTS = {"lan": debate_script([reply("na", 300), reply("nb", 300), reply("nc", 300)], 3, token_delay=0.3)}
STEERING = ("pause", "resume", "stop", "force_decision", "say_all_text", "say_all_send", "say_one_agent",
            "say_one_text", "say_one_send", "presenter_pause", "resume_debate", "start")
TEACHER_PAGES = ("Transcripts", "Compare", "Models", "Experiments", "Coding")


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def lan():
    """The namespace and the veth pair between it and this machine; removed at the end."""
    if shutil.which("ip") is None or os.geteuid() != 0:
        pytest.skip("another machine needs `ip netns` and root: not available here")
    try:
        _ip("netns", "add", NS)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"ip netns is not permitted here: {exc.stderr.strip()}")
    try:
        _ip("link", "add", HOST_IF, "type", "veth", "peer", "name", PHONE_IF)
        _ip("link", "set", PHONE_IF, "netns", NS)
        _ip("addr", "add", f"{HOST_IP}/30", "dev", HOST_IF)
        _ip("link", "set", HOST_IF, "up")
        _ip("netns", "exec", NS, "ip", "addr", "add", f"{PHONE_IP}/30", "dev", PHONE_IF)
        _ip("netns", "exec", NS, "ip", "link", "set", PHONE_IF, "up")
        _ip("netns", "exec", NS, "ip", "link", "set", "lo", "up")
        yield NS
    finally:
        subprocess.run(["ip", "link", "del", HOST_IF], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", NS], capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def lan_server(lan, tmp_path_factory):
    """The real app server, bound to every interface; every host name it looks up is written down
    (tests/e2e/lookup_recorder)."""
    root = tmp_path_factory.mktemp("madlab-lan")
    recorder = {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests" / "e2e" / "lookup_recorder")]),
                "MADLAB_LOOKUP_LOG": str(root / "lookups.txt")}
    with run_server(root, "0.0.0.0", SCRIPTS, extra_env=recorder) as srv:
        srv.lan_url = f"http://{HOST_IP}:{srv.url.rsplit(':', 1)[1]}"
        srv.lookups = root / "lookups.txt"
        yield srv


@pytest.fixture(scope="module")
def phone_browser(lan, browser, tmp_path_factory):
    """Chromium inside the namespace: Playwright launches it through `ip netns exec` (its pipes pass through)."""
    chromium = shutil.which("chromium")
    wrapper = tmp_path_factory.mktemp("netns-chromium") / "chromium-in-netns"
    wrapper.write_text(f'#!/bin/sh\nexec ip netns exec {lan} {chromium} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    launched = browser.browser_type.launch(executable_path=str(wrapper), args=CHROMIUM_ARGS)
    try:
        yield launched
    finally:
        launched.close()


@pytest.fixture(scope="module")
def projected(lan_server, browser):
    """The teacher, on this machine, has started a long debate and opened a poll on it:
    (debate id, poll id, the teacher's page)."""
    expect.set_options(timeout=20_000)
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    context.set_default_timeout(20_000)
    page = context.new_page()
    try:  # the first page of a fresh server: what it was doing, should it not come up
        open_app(page, lan_server.url, "/", timeout=LIVE_TIMEOUT)
        expect(key(page, "start")).to_be_visible(timeout=60_000)
    except Exception:
        # Seen 1 start in ~10 on a loaded 2-core machine: the fresh server's first page stays blank (an
        # empty body, the server log ends at "Uvicorn server started", no name looked up). Said here, then
        # opened once more: what this module checks starts after the teacher's page is up.
        print(f"--- the teacher's first page ---\n{page.inner_text('body')[:2000]}\n"
              f"--- streamlit log (tail) ---\n{lan_server.log_tail()}")
        open_app(page, lan_server.url, "/", timeout=LIVE_TIMEOUT)
        expect(key(page, "start")).to_be_visible(timeout=60_000)
    question = unique("LAN check: name a prime number.")
    configure_debate(page, question, ["scripted/lan"] * 3)
    start(page)
    expect(turn(page, 0)).to_contain_text(words("na", 3)[1], timeout=LIVE_TIMEOUT)
    with Store(lan_server.db_path) as store:
        debate_id = debate_by_question(store, question)["id"]
        poll_id = polls.open_poll(store, debate_id, ["42", "7"])
    yield debate_id, poll_id, page
    context.close()


@pytest.fixture
def phone(phone_browser, request, lan_server):
    """A fresh page in the namespace's Chromium (conftest's failure screenshot and log tail)."""
    with browser_page(phone_browser, lan_server, request, viewport={"width": 1280, "height": 900}) as page:
        yield page


def no_control(page) -> None:
    """Must not happen: any steering or starting control, or a text box a message could be typed in."""
    for name in STEERING:
        expect(key(page, name)).to_have_count(0)
    expect(page.locator("textarea:enabled, input[type=text]:enabled")).to_have_count(0)


# ----- the positive control: the machine itself ------------------------------------------------------
def test_a_server_open_to_the_network_looks_up_no_name(projected, lan_server):
    """Offline for every viewer: Streamlit's welcome lines would look up an "External URL" on the
    internet (checkip.amazonaws.com) inside the server's event loop; the app's config turns them off."""
    recorded = lan_server.lookups.read_text(encoding="utf-8").splitlines()
    assert "(recorder loaded)" in recorded  # the server's Python ran the recorder: the check below means something
    looked_up = [line for line in recorded if line != "(recorder loaded)"]
    assert [host for host in looked_up if host not in ("localhost", "127.0.0.1", "::1", "0.0.0.0", HOST_IP)] == []
    assert "You can now view" not in lan_server.log_tail(100_000)  # the welcome lines are off


def test_on_the_machine_itself_the_teacher_has_every_control(projected, lan_server):
    debate_id, _, page = projected
    for name in ("pause", "stop", "force_decision", "say_all_send"):
        expect(key(page, name).locator("button").first).to_be_enabled()
    expect(key(page, "say_all_text").locator("input").first).to_be_enabled()
    expect(key(page, "steer_read_only")).to_have_count(0)
    presenter = page.context.new_page()
    open_app(presenter, lan_server.url, "/Presenter?" + page.url.split("?", 1)[1])
    expect(key(presenter, "presenter_agent_0")).to_contain_text(words("na", 3)[0], timeout=LIVE_TIMEOUT)
    expect(key(presenter, "presenter_pause").locator("button").first).to_be_enabled()
    open_app(presenter, lan_server.url, "/Transcripts")
    expect(key(presenter, "running_list")).to_contain_text(debate_id[:8])
    expect(key(presenter, "access_refused")).to_have_count(0)
    presenter.close()


def test_the_teacher_sends_two_messages_in_a_row_and_the_box_is_empty_after_each(projected):
    """Each message box empties once its message is sent, and the next message sent right after works too."""
    _, _, page = projected
    notice = key(page, "steer_notice")
    for box, send, to in (("say_all_text", "say_all_send", "all agents"), ("say_all_text", "say_all_send", "all agents"),
                          ("say_one_text", "say_one_send", "Agent 1"), ("say_one_text", "say_one_send", "Agent 1")):
        expect(notice).to_have_count(0, timeout=30_000)  # the previous answer has gone (controls.NOTICE_S)
        fill(page, box, unique("Check the units"))
        key(page, send).locator("button").first.click()
        expect(notice).to_contain_text(f"Message for {to} queued")  # not "Not sent: the message is empty"
        # Must not happen: the sent text left in the box (typed over, it became part of the next message).
        expect(key(page, box).locator("input")).to_have_value("")


# ----- a visitor on another machine -------------------------------------------------------------------
def test_the_root_lists_no_running_debate_to_a_visitor(projected, phone, lan_server):
    open_app(phone, lan_server.lan_url)
    expect(key(phone, "visitor_home")).to_contain_text(access.VISITOR_HOME)
    expect(key(phone, "running_list")).to_have_count(0)
    expect(phone.get_by_role("button", name="Watch")).to_have_count(0)
    no_control(phone)
    expect_no_exception(phone)


@pytest.mark.parametrize("whole_address", [False, True], ids=["debate-link", "projected-address"])
def test_the_debate_link_shows_the_debate_with_no_control(projected, phone, lan_server, whole_address):
    debate_id, _, teacher = projected
    query = teacher.url.split("?", 1)[1] if whole_address else f"debate={debate_id}"
    if whole_address:
        assert "session=" in query  # the teacher's token travels with the projected address
    open_app(phone, lan_server.lan_url, f"/?{query}")
    expect(status(phone)).to_contain_text(re.compile(r"status\W*running", re.I), timeout=LIVE_TIMEOUT)
    expect(turn(phone, 0)).to_contain_text(words("na", 3)[0])
    expect(key(phone, "steer_read_only")).to_contain_text(access.READ_ONLY)
    no_control(phone)
    expect(key(phone, "reveal_reference")).to_have_count(0)
    expect_no_exception(phone)


@pytest.mark.parametrize("page_name", TEACHER_PAGES)
def test_the_teacher_pages_refuse_a_visitor_in_one_line(projected, phone, lan_server, page_name):
    open_app(phone, lan_server.lan_url, f"/{page_name}")
    refused = key(phone, "access_refused")
    expect(refused).to_have_text(access.REFUSED)
    main = phone.locator('[data-testid="stMain"]')
    # Must not happen: anything of the page under the refusal (a list, a picker, a running debate).
    expect(main.locator('[data-testid="stElementContainer"]')).to_have_count(1)
    expect(main).not_to_contain_text(projected[0][:8])
    no_control(phone)


def test_the_poll_link_takes_a_visitors_prediction(projected, phone, lan_server):
    _, poll_id, _ = projected
    open_app(phone, lan_server.lan_url, f"/Poll?poll={poll_id}")
    key(phone, "poll_choice").get_by_text("7", exact=True).click()
    wait_for_idle(phone)
    key(phone, "poll_predict").locator("button").first.click()
    expect(phone.get_by_text("Prediction recorded")).to_be_visible()
    with Store(lan_server.db_path) as store:
        assert polls.results(store, poll_id)["total"] >= 1


def test_join_by_code_admits_a_visitor_to_the_poll_and_nothing_else(projected, phone, lan_server):
    debate_id, poll_id, _ = projected
    with Store(lan_server.db_path) as store:
        code = join_codes.code_of(store, "poll", poll_id)
    open_app(phone, lan_server.lan_url, "/join")
    fill(phone, "join_code", code)
    fill(phone, "join_nickname", unique("Ana")[:20])
    key(phone, "join_send").locator("button").first.click()
    expect(key(phone, "poll_nickname")).to_contain_text("You are Ana")
    expect(key(phone, "poll_choice")).to_be_visible()
    # Must not happen: a seat opened by its guessable id without its code, or a teacher page after joining.
    device = re.search(r"device=([\w-]+)", phone.url).group(1)  # the same phone, naming a seat it has no code for
    open_app(phone, lan_server.lan_url, f"/join?seat={debate_id}.0&device={device}")
    expect(key(phone, "join_code")).to_be_visible()
    open_app(phone, lan_server.lan_url, "/Transcripts")
    expect(key(phone, "access_refused")).to_have_text(access.REFUSED)


def test_the_presenter_shows_the_debate_read_only_to_a_visitor(projected, phone, lan_server):
    debate_id, _, teacher = projected
    open_app(phone, lan_server.lan_url, "/Presenter?" + teacher.url.split("?", 1)[1])
    expect(key(phone, "presenter_agent_0")).to_contain_text(words("na", 3)[0], timeout=LIVE_TIMEOUT)
    expect(key(phone, "presenter_source")).to_have_count(0)  # no picker: no replay of any other debate
    expect(key(phone, "poll_open")).to_have_count(0)
    expect(key(phone, "poll_close")).to_have_count(0)
    no_control(phone)


def test_the_teacher_key_link_makes_another_machine_the_teacher(projected, phone, lan_server):
    port = lan_server.url.rsplit(":", 1)[1]
    printed = subprocess.run([sys.executable, "-m", "madlab_ui.access", "--server.address", "0.0.0.0",
                              "--server.port", port], cwd=REPO, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "MADLAB_HOME": str(lan_server.home), "PYTHONPATH": str(REPO)})
    line = printed.stdout.strip().splitlines()[-1]  # after this machine's and the network's addresses
    found = re.fullmatch(rf"Teacher key for other machines: http://\S+:{port}/\?teacher=(\S+)", line)
    assert found, (line, printed.stderr[-2000:])
    open_app(phone, lan_server.lan_url, f"/?teacher={found.group(1)}")
    expect(key(phone, "question")).to_be_visible()
    expect(phone).not_to_have_url(re.compile(r"teacher="))  # never left in the address
    phone.locator('[data-testid="stSidebarNav"] a', has_text="Transcripts").click()  # the same session
    expect(key(phone, "running_list")).to_contain_text(projected[0][:8])
    expect(key(phone, "access_refused")).to_have_count(0)
    open_app(phone, lan_server.lan_url, "/Transcripts")
    # A reload is a new session: without the key it is a visitor again (the key is not kept in the URL).
    expect(key(phone, "access_refused")).to_be_visible()
    # Must not happen: the key anywhere in the server's log.
    assert found.group(1) not in lan_server.log_tail(10**7)


def test_a_coder_invitation_admits_a_visitor_to_that_projects_coding_page_and_nothing_else(projected, phone,
                                                                                              lan_server):
    with Store(lan_server.db_path) as store:
        debate_id, secret = stored_debate(store), stored_debate(store)
        project_id = coding.create_project(store, unique("Invited study"), "Ann", debate_ids=[debate_id],
                                           session="ann-browser")
        ann = coding.join(store, project_id, "Ann", session="ann-browser")
        price = coding.add_code(store, project_id, "Ann", "Price")
        other = coding.create_project(store, unique("Other study"), "Ann", debate_ids=[secret])
        names = [storage.project_row(store, p)["name"] for p in (project_id, other)]
        code = invitations.invite(store, project_id, ann)
    open_app(phone, lan_server.lan_url, "/join")
    fill(phone, "join_code", f"{code[:3].lower()}-{code[3:]}")  # no nickname: a coder names itself on the page
    key(phone, "join_send").locator("button").first.click()
    expect(phone).to_have_url(re.compile(rf"/Coding\?(.*&)?invite={code}"))
    main = phone.locator('[data-testid="stMain"]')
    expect(main.locator("h2")).to_contain_text(names[0])
    type_in(phone, "coding_coder", "Vera")
    s = f"{debate_id[:8]}_0"
    choose_option(phone, f"coding_codes_{s}", "Price")
    press(phone, f"coding_apply_{s}")
    expect(key(phone, "coding_message")).to_contain_text("Coded the whole turn with 1 code(s)")
    with Store(lan_server.db_path) as store:
        vera = next(c["id"] for c in storage.coder_rows(store, project_id) if c["name"] == "Vera")
        assert [(r["code_id"], r["turn_id"]) for r in storage.coding_rows(store, project_id, coder_ids=[vera])] == [
            (price, "t0")]
    for tab_name in ("Code", "Codebook", "Agreement"):
        expect(phone.get_by_role("tab", name=tab_name, exact=True)).to_have_count(1)
    # Must not happen: the project list, another project, adding debates, the lead's or the Exchange tab.
    for tab_name in ("Disagreements", "History", "Exchange"):
        expect(phone.get_by_role("tab", name=tab_name, exact=True)).to_have_count(0)
    for name in ("coding_projects", "coding_new", "coding_add_debates", "coding_invitation", "coding_precode"):
        expect(key(phone, name)).to_have_count(0)
    expect(main).not_to_contain_text(names[1])
    expect(main).not_to_contain_text(secret[:8])
    phone.reload()  # the same address: the same project, the same coder name, Vera's coding on the turn
    wait_for_idle(phone)
    expect(key(phone, f"coding_turn_{s}")).to_contain_text("Vera")
    expect(key(phone, f"coding_apply_{s}")).to_be_visible()
    open_app(phone, lan_server.lan_url, "/Transcripts")
    expect(key(phone, "access_refused")).to_have_text(access.REFUSED)
    with Store(lan_server.db_path) as store:
        invitations.retire(store, project_id, ann)
    open_app(phone, lan_server.lan_url, f"/Coding?invite={code}")
    expect(key(phone, "access_refused")).to_have_text(access.INVITATION_GONE)
    expect(main.locator('[data-testid="stElementContainer"]')).to_have_count(1)  # nothing of the project
    expect(main).not_to_contain_text(names[0])
