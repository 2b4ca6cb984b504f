"""Browser check: a class of phones joins, predicts and reloads while the teacher steers a streaming debate.

Issue 23: "30 students on phones joining, predicting and reloading while a debate streams on the
projector: steering still <= 0.5 s, no prediction lost, the teacher's page refresh cost unchanged."

Starts the app as the e2e tests do (`tests/e2e/conftest.run_server`: `streamlit run app.py`, a
throw-away MADLAB_HOME, scripted models) and Debian's Chromium through Playwright. The scripted
debate (3 agents, `--words` words a turn at `--token-delay` s a word, rounds enough to outlast the
run) streams throughout; the bench stops it at the end. The teacher is one browser context at
1280x720 with two tabs of one session: the Debate page (the steering controls) and the Presenter
(the projector: the teacher opens a prediction poll there and reads its join code off the page).
`--phones` phones (browser contexts at 390x844, all in a Chromium of their own run at
`--phones-priority` (their Playwright drivers and the bench's threads that drive them too), driven
from `--concurrent` threads, each with its own Playwright connection over CDP) each open /join,
type the code and a
nickname of their own, predict, reload and check that the nickname and the prediction are still
shown; each phone's join, predict and reload times are recorded, and its page stays open (a class
waits for the reveal).

The phones' priority: in a class the phones are other devices, so drawing their pages should take no
CPU from the teacher's browser or the server. `idle` (the default) runs their Chromium under Linux's
SCHED_IDLE (`chrt --idle 0`): it gets only what nothing else wants. `low` is nice 19, which is not
enough: every thread of 30 phone pages weighs 15 against a nice-0 thread's 1024 in the scheduler, and
a hundred runnable ones together outweighed the teacher's renderer (measured: the teacher's clicks
took up to 7.7 s, 3.8 s of it before the click's message left the teacher's Chromium, and the
server's tick waited twice as long for a core). `normal` lets them compete as equals.

Four phases, with the same steering the whole time (a message to all, Pause, Resume: each click
timed in Chromium from the click to the visible change, as tests/e2e/test_e2e_steering.py's
`timed_click` does; a cycle every ~11 s, once the last message's notice has gone, see STEPS):
  before the phones  `--cycles` cycles before any phone connects (after one warm-up cycle, not counted);
  with phones        while the phones join, predict and reload;
  phones connected   `--cycles` cycles with every phone's page still open (then the store is read);
  after the phones   `--cycles` cycles once the phones' pages are closed.
A click whose change has not shown within 30 s is counted lost (its time is then infinite: the
target is not met); the server's log says whether its trigger reached the server.

The teacher's page refresh cost: the server time of one refresh of the live Debate page, i.e. one
call of its auto-refreshing fragment (`madlab_ui.live_page.tick`, what bench/live_refresh.py calls
a tick), timed inside the server process. The target compares its CPU time (the thread's CPU time,
`time.thread_time`: the work done for the teacher, which phones must not add to) with phones and
without, <= 1.1 as bench/browser.py's watched / unwatched; "without" pools the ticks before the
phones came and after they left, so that what the growing debate adds meanwhile stays out of the
ratio. Its wall time (which also waits for the GIL and the cores the phones use) is reported beside it. Reported too, per phase: the CPU seconds
per second of all the teacher's script runs (both tabs, every fragment and full run), of the
phones' runs, of the whole server process (/proc/<pid>/stat) and of the browser. The timing is
installed in the server through a `sitecustomize.py` the bench puts first on the server's
PYTHONPATH (`install_hooks`); it appends one JSON line per tick, per script run and per click.

At the end the store is read (`mad_core.classroom.participants`, `mad_core.polls.predictions_of`):
every phone's nickname in the class and its prediction in the poll exactly once, with the option it
chose; the Presenter's list of who joined (`class_joined`) and its count (`poll_count`) are read too.

    targets: slowest steering click with phones <= 0.5 s; predictions lost or doubled = 0;
             teacher's tick CPU time with phones / without (medians) <= 1.1

    .venv/bin/python bench/class_phones.py                   # 30 phones, 3 at a time
    .venv/bin/python bench/class_phones.py --phones 3        # a quick look
    .venv/bin/python bench/class_phones.py --phones 30 --concurrent 4 --cycles 4

Not a test: timings depend on the machine and its load (speed targets live in bench/, never in tests/).
"""
from __future__ import annotations

import functools
import json
import os
import queue
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
E2E = str(REPO / "tests" / "e2e")  # the e2e tests' helpers (on the path in the bench's process only)

from bench.browser import browser_cpu, cpu_seconds, p95  # noqa: E402
from bench.common import Result, Target, finish, median, parser  # noqa: E402

TARGET_S = 0.5  # slowest steering click (bench/steering.py's target)
TARGET_RATIO = 1.1  # the teacher's tick CPU time, with phones / without (bench/browser.py's watched / unwatched)
PROJECTOR = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}
SCRIPT = "class_phones"
AGENTS = 3
OPTIONS = ["42", "41", "7"]  # typed in the poll; "Something else" is offered after them
CHOICES = [*OPTIONS, "Something else"]
REFRESH_LOG = "MADLAB_BENCH_REFRESH_LOG"  # the server appends its timings to this file
SITECUSTOMIZE = f"""import os
if os.environ.get({REFRESH_LOG!r}):
    from bench.class_phones import install_hooks
    install_hooks(os.environ[{REFRESH_LOG!r}])
"""
TIMEOUT_MS = 120_000  # any wait of a phone or the teacher, on a loaded 2-core machine
CONTROLS = {"pause": "Pause", "resume": "Resume", "say_all_send": "Send to all"}
# control, where its change shows, the words that show it (as tests/e2e/test_e2e_steering.py waits for them)
STEPS = (("say_all_send", "controls", r"Message for all agents queued"), ("pause", "steering_status", r"paused"),
         ("resume", "steering_status", r"^running"))
# The message's notice stands above the buttons for 10 s; when it goes they move up (68 px at 1280x720, Stop
# then lies where Pause was): a cycle starts once it is gone and the row has settled, and its Pause and
# Resume come while the new notice is up, never as it goes.
SETTLE_MS = 1_000
STEER_TIMEOUT_MS = 30_000  # a click whose change has not shown by then is lost
LOST = float("inf")
PHASES = ("before the phones", "with phones", "phones connected", "after the phones")


# ----- in the server process --------------------------------------------------------------------------
def install_hooks(path: str) -> None:
    """Time every call of the live page's fragment (`live_page.tick`) and every script run, appending
    ["tick", time, wall ms, CPU ms, ended without a rerun] and ["run", time, session id, query string,
    fragment run, wall ms, CPU ms] lines to `path`; each button click that reaches the server,
    ["click", time, widget keys, accepted] (was a lost click lost on the way, or in the server?); and
    each full garbage collection, ["gc", time, wall ms] (one holds the GIL: every thread waits)."""
    import gc
    from streamlit.runtime.scriptrunner import script_runner
    from streamlit.runtime.scriptrunner_utils import script_requests

    from madlab_ui import live_page

    log = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - open for the server's life
    lock = threading.Lock()

    def note(*row) -> None:
        with lock:
            log.write(json.dumps(row) + "\n")

    tick = live_page.tick

    @functools.wraps(tick)  # the same module and name: the fragment keeps its identity
    def timed_tick(page, slots):
        wall, cpu, done = time.perf_counter(), time.thread_time(), False
        try:
            tick(page, slots)
            done = True
        finally:  # a tick that asks for a full run ends in st.rerun's exception
            note("tick", time.time(), (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000, done)

    run = script_runner.ScriptRunner._run_script

    def timed_run(self, rerun_data):
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return run(self, rerun_data)
        finally:
            note("run", time.time(), self._session_id, rerun_data.query_string, bool(rerun_data.fragment_id_queue),
                 (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000)

    request = script_requests.ScriptRequests.request_rerun

    def noted_request(self, new_data):
        accepted = request(self, new_data)
        widgets = new_data.widget_states.widgets if new_data.widget_states is not None else []
        clicked = [w.id.rsplit("-", 1)[-1] for w in widgets if w.WhichOneof("value") == "trigger_value" and w.trigger_value]
        if clicked:
            note("click", time.time(), clicked, accepted)
        return accepted

    started: list[float] = []

    def timed_gc(phase, info) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started[:] = [time.perf_counter()]
        elif started:
            note("gc", time.time(), (time.perf_counter() - started[0]) * 1000)

    gc.callbacks.append(timed_gc)
    live_page.tick = timed_tick
    script_runner.ScriptRunner._run_script = timed_run
    script_requests.ScriptRequests.request_rerun = noted_request


# ----- the debate and the teacher -----------------------------------------------------------------------
def scripts(args) -> dict:
    """One scripted model whose debate streams longer than the run can take (it is stopped at the end)."""
    from e2e_scripts import debate_script, reply

    seconds = 300 + 25 * args.phones  # a generous bound of the run on a loaded 2-core machine
    rounds = min(100, max(2, int(seconds / (args.words * args.token_delay * AGENTS)) + 1))
    args.rounds = rounds
    discussion = [reply(f"c{chr(ord('a') + i % 26)}", args.words) for i in range(AGENTS * rounds)]
    return {SCRIPT: debate_script(discussion, AGENTS, token_delay=args.token_delay)}


@dataclass
class Teacher:
    debate: object  # the Debate page (steering)
    presenter: object  # the Presenter (the projector: poll, code, who joined)
    token: str
    debate_id: str
    poll_id: str
    code: str
    shots: Path  # where a screenshot of a lost click goes
    errors: list[str] = field(default_factory=list)
    lost: list[tuple[str, float]] = field(default_factory=list)  # (control, when clicked): no change showed
    # (control, when the bench clicked, when the page saw the click, seconds to the change): every click
    timed: list[tuple[str, float, float, float]] = field(default_factory=list)


def teacher_starts(browser, url: str, rounds: int, store, shots: Path) -> Teacher:
    """Start the debate on the Debate page, open the Presenter in a second tab, open a poll there."""
    from e2e_helpers import (LIVE_TIMEOUT, configure_debate, expect, key, open_app, open_debate_page, start,
                             turn, unique)
    from test_e2e_classroom import open_sidebar

    from mad_core import join_codes

    context = browser.new_context(viewport=PROJECTOR)
    context.set_default_timeout(TIMEOUT_MS)
    page, errors = context.new_page(), []
    page.on("pageerror", lambda exc: errors.append(f"Debate page: {exc}"))
    open_debate_page(page, url)
    configure_debate(page, unique("Class of phones: what is six times seven?"), [f"scripted/{SCRIPT}"] * AGENTS,
                     rounds=rounds, max_rounds=rounds)
    start(page)
    expect(page).to_have_url(re.compile(r"[?&]debate=[0-9a-f]{32}"))
    token = re.search(r"[?&]session=([0-9a-f]{32})", page.url).group(1)
    debate_id = re.search(r"[?&]debate=([0-9a-f]{32})", page.url).group(1)
    expect(turn(page, 0)).to_contain_text("streaming", timeout=LIVE_TIMEOUT)

    presenter = context.new_page()
    presenter.on("pageerror", lambda exc: errors.append(f"Presenter: {exc}"))
    open_app(presenter, url, f"/Presenter?session={token}&debate={debate_id}")
    expect(key(presenter, "presenter_agent_2")).to_be_visible(timeout=TIMEOUT_MS)
    open_sidebar(presenter)
    options = key(presenter, "poll_options").locator("textarea")
    options.fill("\n".join(OPTIONS))
    options.press("Tab")
    key(presenter, "poll_open").locator("button").first.click()
    expect(key(presenter, "poll_code")).to_be_visible(timeout=TIMEOUT_MS)
    shown = key(presenter, "poll_teacher_code").inner_text().strip()
    code = re.search(r"`?([A-Z0-9]{6})`?\s*$", shown).group(1)
    poll_id = join_codes.resolve(store, code)["target"]
    return Teacher(page, presenter, token, debate_id, poll_id, code, shots, errors)


def steer(teacher: Teacher) -> dict[str, float]:
    """A message to all, Pause, Resume: each click's seconds to its visible change; LOST when it never
    showed within STEER_TIMEOUT_MS (a screenshot is kept). After a lost Pause there is nothing to resume;
    a debate a lost (or late) click left paused is resumed before the next click."""
    from e2e_helpers import expect, fill, key, unique
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    from test_e2e_steering import timed_click

    page, times = teacher.debate, {}
    resume_if_paused(page)
    for control, where, want in STEPS:
        if control == "resume" and times["pause"] == LOST:
            continue
        if control == "say_all_send":
            expect(key(page, "steer_notice")).to_have_count(0, timeout=TIMEOUT_MS)  # the last notice is gone (10 s)
            page.wait_for_timeout(SETTLE_MS)  # and the buttons it held down have moved up (see STEPS)
            fill(page, "say_all_text", unique("Check the units"))
        clicked = time.time()
        try:
            times[control] = timed_click(page, control, where, want)
        except (AssertionError, PlaywrightTimeoutError):  # no change within 30 s (or a button never enabled)
            times[control] = LOST
            teacher.lost.append((control, clicked))
            page.screenshot(path=str(teacher.shots / f"lost-{len(teacher.lost)}-{control}.png"))
        seen = page.evaluate("() => performance.timeOrigin + (window.__steer.clicked || 0)") / 1000  # epoch s
        teacher.timed.append((control, clicked, seen, times[control]))
    resume_if_paused(page)
    return times


def resume_if_paused(page) -> None:
    """Resume the debate if the steering line says paused (up to three clicks: one can be lost)."""
    from e2e_helpers import expect, key

    line = key(page, "steering_status")
    for _ in range(3):
        if "paused" not in line.inner_text().lower():
            return
        key(page, "resume").locator("button").first.click()
        try:
            expect(line).to_contain_text(re.compile("^running", re.I), timeout=STEER_TIMEOUT_MS)
        except AssertionError:
            continue


@dataclass
class Phase:
    name: str
    started: float = field(default_factory=time.time)
    ended: float = 0.0
    clicks: list[dict[str, float]] = field(default_factory=list)
    server_cpu: float = 0.0
    browser_cpu: float = 0.0

    @property
    def seconds(self) -> float:
        return self.ended - self.started


def phase(name: str, teacher: Teacher, server_pid: int, cycles: int, busy=lambda: False) -> Phase:
    """Steer `cycles` times, and on while `busy()`; the phase's window and the CPU used in it."""
    server0, browser0 = cpu_seconds([server_pid]), browser_cpu(server_pid)
    now = Phase(name)
    while len(now.clicks) < cycles or busy():
        now.clicks.append(steer(teacher))
    now.ended = time.time()
    now.server_cpu = cpu_seconds([server_pid]) - server0
    now.browser_cpu = browser_cpu(server_pid) - browser0
    return now


# ----- the phones -----------------------------------------------------------------------------------------
def nickname(i: int) -> str:
    return f"Student {i + 1:02d}"


def one_phone(browser, contexts: list, url: str, code: str, i: int) -> dict:
    """A phone joins with `code`, predicts, reloads and finds its nickname and prediction again."""
    from e2e_helpers import click, expect, key, wait_for_idle
    from test_e2e_join import join_on

    name, choice = nickname(i), CHOICES[i % len(CHOICES)]
    out: dict = {"phone": i, "nickname": name, "choice": choice, "errors": []}
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(TIMEOUT_MS)
    contexts.append(context)
    phone = context.new_page()
    phone.on("pageerror", lambda exc: out["errors"].append(f"page error: {exc}"))
    step = "join"
    try:
        started = time.perf_counter()
        join_on(phone, url, code, name)
        expect(key(phone, "poll_nickname")).to_contain_text(f"You are {name}", timeout=TIMEOUT_MS)
        out["join"], started, step = time.perf_counter() - started, time.perf_counter(), "predict"
        phone.get_by_role("radio", name=choice, exact=True).check(force=True)
        wait_for_idle(phone, timeout=TIMEOUT_MS)
        click(phone, "poll_predict")
        expect(key(phone, "poll_mine")).to_contain_text(f"({name}): {choice}", timeout=TIMEOUT_MS)
        out["predict"], step = time.perf_counter() - started, "reload"
        started = time.perf_counter()
        phone.reload()
        expect(key(phone, "poll_nickname")).to_contain_text(f"You are {name}", timeout=TIMEOUT_MS)
        expect(key(phone, "poll_mine")).to_contain_text(f"({name}): {choice}", timeout=TIMEOUT_MS)
        out["reload"] = time.perf_counter() - started
        if phone.locator('[data-testid="stException"]').count():
            out["errors"].append("a Python traceback on the page")
    except Exception as exc:  # noqa: BLE001 - a phone that fails is reported, the others go on
        out["errors"].append(f"{step}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    return out


class Class:
    """The phones, in `concurrent` threads; each thread keeps its phones' pages open until `release`."""

    def __init__(self, cdp: str, url: str, code: str, phones: int, concurrent: int, priority: str = "normal"):
        self.cdp, self.url, self.code, self.priority = cdp, url, code, priority
        self.todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(phones):
            self.todo.put(i)
        self.results: list[dict] = []
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.work, name=f"phones-{n}", daemon=True)
                        for n in range(max(1, min(concurrent, phones)))]
        self.working = len(self.threads)

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def busy(self) -> bool:
        with self.lock:
            return self.working > 0

    def work(self) -> None:
        from playwright.sync_api import sync_playwright

        thread_at_priority(self.priority)  # this thread only: it is the phones' hand, not the teacher's
        with sync_playwright() as playwright:
            browser = playwright.chromium.connect_over_cdp(self.cdp)
            contexts: list = []
            try:
                while True:
                    try:
                        i = self.todo.get_nowait()
                    except queue.Empty:
                        break
                    done = one_phone(browser, contexts, self.url, self.code, i)
                    with self.lock:
                        self.results.append(done)
            finally:
                with self.lock:
                    self.working -= 1
                self.released.wait()
                for context in contexts:
                    context.close()
                browser.close()  # over CDP: disconnects, the browser lives on

    def close(self) -> None:
        self.released.set()
        for thread in self.threads:
            thread.join(timeout=120)


# ----- what the store and the teacher's page say --------------------------------------------------------------
def class_check(store, teacher: Teacher, phones: int) -> dict:
    """Each phone's nickname in the class and its prediction in the poll, exactly once, as chosen."""
    from mad_core import classroom, polls

    joined = [row["nickname"] for row in classroom.participants(store, teacher.debate_id)]
    stored = polls.predictions_of(store, teacher.poll_id)
    lost = doubled = 0
    for i in range(phones):
        mine = [row for row in stored if row["voter"] == nickname(i)]
        lost += not any(row["option"] == CHOICES[i % len(CHOICES)] for row in mine)
        doubled += max(0, len(mine) - 1)
    expected = {nickname(i) for i in range(phones)}
    return {"lost": lost, "doubled": doubled, "stored": len(stored),
            "strangers": len([row for row in stored if row["voter"] not in expected]),
            "not_joined": len(expected - set(joined))}


# ----- the server's timings -------------------------------------------------------------------------------------
def read_log(log: Path) -> list[list]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def refresh_costs(rows: list[list], phases: list[Phase], token: str) -> dict[str, dict]:
    """Per phase: the teacher's ticks (wall and CPU ms), script CPU s/s of the teacher and of the phones, and
    the teacher's longest script run (a full run of the page: a click that comes meanwhile waits for it)."""
    teacher = {row[2] for row in rows if row[0] == "run" and f"session={token}" in row[3]}
    out: dict[str, dict] = {}
    for now in phases:
        inside = [row for row in rows if now.started <= row[1] <= now.ended]
        ticks = [row for row in inside if row[0] == "tick" and row[4]]
        runs = [row for row in inside if row[0] == "run"]
        out[now.name] = {
            "ticks": len(ticks), "tick_cpu": [row[3] for row in ticks], "tick_wall": [row[2] for row in ticks],
            "reruns": sum(row[0] == "tick" and not row[4] for row in inside),
            "teacher_cpu": sum(row[6] for row in runs if row[2] in teacher) / 1000 / now.seconds,
            "phones_cpu": sum(row[6] for row in runs if row[2] not in teacher) / 1000 / now.seconds,
            "longest_run": max((row[5] / 1000 for row in runs if row[2] in teacher), default="-"),
            "gcs": [row[2] for row in inside if row[0] == "gc"]}
    return out


def reached_server(rows: list[list], lost: list[tuple[str, float]]) -> int:
    """How many of the lost clicks the server received (their button's trigger in a rerun request)."""
    return sum(any(row[0] == "click" and control in row[2] and clicked <= row[1] <= clicked + STEER_TIMEOUT_MS / 1000
                   for row in rows) for control, clicked in lost)


# ----- the run ------------------------------------------------------------------------------------------------
def run_class(playwright, server, args, chromium: str) -> dict:
    """The teacher starts and steers, the phones come, act and stay; what the store and the pages say."""
    from conftest import CHROMIUM_ARGS, _free_port
    from e2e_helpers import expect

    from mad_core.store import Store

    expect.set_options(timeout=STEER_TIMEOUT_MS)  # timed_click waits this long
    port = _free_port()  # the phones' threads reach their Chromium over CDP
    browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)  # the teacher's
    phones_browser = playwright.chromium.launch(executable_path=at_priority(chromium, args.phones_priority,
                                                                            server.home.parent),
                                                args=[*CHROMIUM_ARGS, f"--remote-debugging-port={port}"])
    store = Store(server.db_path)
    teacher = teacher_starts(browser, server.url, args.rounds, store, server.home.parent)
    pid = server.process.pid
    warm = steer(teacher)  # the first clicks of a fresh server import what later ones reuse
    phases = [phase(PHASES[0], teacher, pid, args.cycles)]
    phones = Class(f"http://127.0.0.1:{port}", server.url, teacher.code, args.phones, args.concurrent,
                   args.phones_priority)
    # The phones' Playwright drivers (one Node.js process per phone thread, started by `phones.start()`,
    # after the teacher's) at the phones' priority too: they are the simulation's, not the class's.
    from playwright._impl._driver import compute_driver_executable

    os.environ["PLAYWRIGHT_NODEJS_PATH"] = at_priority(compute_driver_executable()[0], args.phones_priority,
                                                       server.home.parent)
    phones.start()
    try:
        phases.append(phase(PHASES[1], teacher, pid, 1, phones.busy))
        phases.append(phase(PHASES[2], teacher, pid, args.cycles))
        checked = class_check(store, teacher, args.phones)
        listed, count = teacher_sees(teacher, args.phones)
    finally:
        phones.close()  # their pages close: the class has gone
    phases.append(phase(PHASES[3], teacher, pid, args.cycles))
    for page in (teacher.debate, teacher.presenter):
        if page.locator('[data-testid="stException"]').count():
            teacher.errors.append(f"a Python traceback on {page.url}")
    stop(teacher.debate)
    version = browser.version
    browser.close()
    phones_browser.close()
    store.close()
    return {"teacher": teacher, "warm": warm, "phases": phases, "phones": sorted(phones.results, key=lambda r: r["phone"]),
            "check": checked, "listed": listed, "count": count, "version": version}


PRIORITIES = {"idle": "chrt --idle 0", "low": "nice -n 19", "normal": ""}  # --phones-priority: the wrapper's prefix


def thread_at_priority(priority: str) -> None:
    """Put the calling thread (Linux: a thread is scheduled on its own) at one of PRIORITIES: the
    threads that drive the phones' pages are the simulation's, like the phones' Chromium."""
    if priority == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # 0: the calling thread
    elif priority == "low":
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


def at_priority(executable: str, priority: str, root: Path) -> str:
    """`executable` (the phones' Chromium, or the Node.js of their Playwright drivers) at `priority` (a key
    of PRIORITIES; a wrapper script in the run's folder `root`, whose policy every process and thread it
    starts inherits). In a class the phones are other devices: drawing 30 phone pages on the teacher's 2
    cores took 1.7 CPU s/s away from the server (measured at `normal`), which is the simulation's cost,
    not the app's."""
    if not PRIORITIES[priority]:
        return executable
    wrapper = root / f"phones-{Path(executable).name}"
    wrapper.write_text(f'#!/bin/sh\nexec {PRIORITIES[priority]} "{executable}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return str(wrapper)


def stop(page) -> None:
    """Stop the debate (a click can be lost: up to three)."""
    from e2e_helpers import expect_status, key

    for _ in range(3):
        key(page, "stop").locator("button").first.click()
        try:
            expect_status(page, "stopped", timeout=STEER_TIMEOUT_MS)
            return
        except AssertionError:
            continue


def teacher_sees(teacher: Teacher, phones: int) -> tuple[int, str]:
    """(nicknames listed in the Presenter's `class_joined`, its `poll_count` line), once they caught up."""
    from e2e_helpers import expect, key

    try:
        expect(key(teacher.presenter, "poll_count")).to_contain_text(f"{phones} prediction", timeout=30_000)
    except AssertionError:
        pass  # a phone did not predict: the line says how many did
    listed = key(teacher.presenter, "class_joined").inner_text()
    return sum(nickname(i) in listed for i in range(phones)), key(teacher.presenter, "poll_count").inner_text()


def main() -> int:
    options = parser(__doc__)
    options.add_argument("--phones", type=int, default=30, help="phones (browser contexts) that join")
    options.add_argument("--concurrent", type=int, default=3, help="phones acting at the same time (threads)")
    options.add_argument("--cycles", type=int, default=3, help="steering cycles before the phones, once they are all connected, and after")
    options.add_argument("--words", type=int, default=30, help="words a turn")
    options.add_argument("--token-delay", type=float, default=0.2, help="seconds between streamed words")
    options.add_argument("--phones-priority", choices=sorted(PRIORITIES), default="idle",
                         help="the phones' own Chromium: idle (SCHED_IDLE, the default), low (nice 19) or normal "
                              "(it competes with the server and the teacher's browser for the cores)")
    args = options.parse_args()
    sys.path.insert(0, E2E)
    chromium = shutil.which("chromium")
    if chromium is None:
        return finish(Result("class_phones", "A class of phones", skipped="Debian's chromium is not installed "
                             "(apt-get install chromium)"), args)
    from conftest import run_server
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="madlab-bench-class-"))
    (root / "hook").mkdir()
    (root / "hook" / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    log = root / "refresh.jsonl"
    env = {"PYTHONPATH": os.pathsep.join([str(root / "hook"), str(REPO)]), REFRESH_LOG: str(log)}
    with run_server(root, scripts_table=scripts(args), extra_env=env) as server, sync_playwright() as playwright:
        run = run_class(playwright, server, args, chromium)
    rows = read_log(log)
    run["reached"] = reached_server(rows, run["teacher"].lost)
    run["slowest"] = slowest_click(rows, run)
    return finish(report(args, run, refresh_costs(rows, run["phases"], run["teacher"].token), root), args)


def spread(values: list[float]) -> tuple[float | str, float | str]:
    return (median(values), max(values)) if values else ("-", "-")


def report(args, run: dict, costs: dict[str, dict], root: Path) -> Result:
    phases, check = run["phases"], run["check"]
    result = Result("class_phones", f"A class of {args.phones} phones joins, predicts and reloads while the "
                    "teacher steers a streaming debate", ["measure", *PHASES])
    result.rows = [["phase (s)", *[p.seconds for p in phases]], ["steering cycles", *[len(p.clicks) for p in phases]],
                   *steering_rows(phases), *cost_rows(phases, [costs[p.name] for p in phases]),
                   *class_rows(args, run)]
    without = [ms for name in (PHASES[0], PHASES[3]) for ms in costs[name]["tick_cpu"]]
    ratio = median(costs[PHASES[1]]["tick_cpu"]) / median(without) if without and costs[PHASES[1]]["ticks"] else None
    slowest = max((max(cycle.values()) for cycle in phases[1].clicks), default=None)
    result.targets = [Target("slowest steering click with phones", slowest, TARGET_S, "s"),
                      Target("predictions lost or doubled", float(check["lost"] + check["doubled"] + check["strangers"]),
                             0),
                      Target("teacher's tick CPU time, with phones / without (medians)", ratio, TARGET_RATIO)]
    result.notes = notes(args, run, root)
    return result


def steering_rows(phases: list[Phase]) -> list[list]:
    rows = []
    for control, label in CONTROLS.items():
        values = [spread([c[control] for c in p.clicks if c.get(control, LOST) != LOST]) for p in phases]
        rows += [[f"{label}: median click (s)", *[v[0] for v in values]],
                 [f"{label}: slowest click (s)", *[v[1] for v in values]]]
    return rows + [["clicks lost (no change within 30 s)", *[sum(v == LOST for c in p.clicks for v in c.values())
                                                             for p in phases]]]


def cost_rows(phases: list[Phase], cost: list[dict]) -> list[list]:
    def of(values: str, how) -> list:
        return [how(c[values]) if c["ticks"] else "-" for c in cost]

    return [["teacher's tick, CPU median (ms)", *of("tick_cpu", median)],
            ["teacher's tick, CPU p95 (ms)", *of("tick_cpu", p95)],
            ["teacher's tick, wall median (ms)", *of("tick_wall", median)],
            ["teacher's tick, wall p95 (ms)", *of("tick_wall", p95)],
            ["teacher's ticks per s", *[c["ticks"] / p.seconds for c, p in zip(cost, phases)]],
            ["ticks that asked for a full run", *[c["reruns"] for c in cost]],
            ["teacher's script runs, CPU s/s", *[c["teacher_cpu"] for c in cost]],
            ["teacher's longest script run (s)", *[c["longest_run"] for c in cost]],
            ["phones' script runs, CPU s/s", *[c["phones_cpu"] for c in cost]],
            ["server's full garbage collections", *[len(c["gcs"]) for c in cost]],
            ["server's longest full collection (ms)", *[max(c["gcs"], default="-") for c in cost]],
            ["server process, CPU s/s", *[p.server_cpu / p.seconds for p in phases]],
            ["browser (Chromium, drivers), CPU s/s", *[p.browser_cpu / p.seconds for p in phases]]]


def class_rows(args, run: dict) -> list[list]:
    """The phones' own times (in the "with phones" column) and what the store held at the end of "phones connected"."""
    phones, check = run["phones"], run["check"]

    def at(column: int, what: str, value) -> list:
        return [what, *[value if i == column else "-" for i in range(len(PHASES))]]

    rows = []
    for step in ("join", "predict", "reload"):
        times = [r[step] for r in phones if step in r]
        rows.append(at(1, f"phone {step}: median / slowest (s)",
                       f"{median(times):.2f} / {max(times):.2f}" if times else "-"))
    return rows + [at(1, "phones that joined, predicted and reloaded", sum("reload" in r and not r["errors"] for r in phones)),
                   at(2, "predictions stored / lost / doubled", f"{check['stored']} / {check['lost']} / {check['doubled']}"),
                   at(2, "nicknames in the class (store) / on the presenter",
                      f"{args.phones - check['not_joined']} / {run['listed']} of {args.phones}")]


def slowest_click(rows: list[list], run: dict) -> str:
    """Where the slowest click with phones spent its time: until its trigger reached the server, and the
    teacher's script runs that were going on between the click and its visible change."""
    window = run["phases"][1]
    clicks = [c for c in run["teacher"].timed if window.started <= c[1] <= window.ended and c[3] != LOST]
    if not clicks:
        return "slowest click with phones: none timed"
    control, clicked, in_page, seconds = max(clicks, key=lambda c: c[3])
    shown = in_page + seconds
    arrived = [row[1] for row in rows if row[0] == "click" and control in row[2] and clicked <= row[1] <= shown + 1]
    teacher = {row[2] for row in rows if row[0] == "run" and f"session={run['teacher'].token}" in row[3]}
    busy = [f"{'fragment' if row[4] else 'full'} run {row[1] - row[5] / 1000 - clicked:+.2f}..{row[1] - clicked:+.2f} s"
            f" (CPU {row[6] / 1000:.2f} s)" for row in rows
            if row[0] == "run" and row[2] in teacher and row[1] >= clicked and row[1] - row[5] / 1000 <= shown]
    return (f"slowest click with phones: {control} at {time.strftime('%H:%M:%S', time.localtime(clicked))}, "
            f"{seconds:.2f} s; times from the bench's click: the page saw the click at {in_page - clicked:+.2f} s, "
            "its trigger reached the server "
            + (f"at {arrived[0] - clicked:+.2f} s" if arrived else "never (within the window)")
            + f", the change showed at {shown - clicked:+.2f} s; the teacher's script runs meanwhile: "
            + ("; ".join(busy) or "none"))


def lost_note(run: dict) -> str:
    lost = run["teacher"].lost
    if not lost:
        return "steering clicks lost: 0"
    return (f"steering clicks lost: {len(lost)} (" + ", ".join(f"{control} at {time.strftime('%H:%M:%S', time.localtime(at))}"
                                                     for control, at in lost)
            + f"; screenshots lost-*.png); {run['reached']} of them reached the server (their button's trigger in a "
            "rerun request) and did nothing")


def notes(args, run: dict, root: Path) -> list[str]:
    failed = [f"{r['nickname']}: {'; '.join(r['errors'])}" for r in run["phones"] if r["errors"]]
    return [f"{AGENTS} agents x up to {args.rounds} rounds (stopped at the end), {args.words} words a turn at "
            f"{args.token_delay} s a word; {args.phones} phones at {PHONE['width']}x{PHONE['height']}, "
            f"{args.concurrent} at a time, in a Chromium {run['version']} of their own at priority {args.phones_priority} "
            f"({PRIORITIES[args.phones_priority] or 'as the rest'}) "
            f"(phones are other devices in a class); the teacher at "
            f"{PROJECTOR['width']}x{PROJECTOR['height']} (Debate page and Presenter, one session, another Chromium)",
            "steering: click to visible change in Chromium (tests/e2e/test_e2e_steering.py's timed_click); "
            "warm-up cycle, not counted: " + ", ".join(f"{k} {v:.3f} s" for k, v in run["warm"].items()),
            "teacher's tick: server time of one call of the Debate page's live fragment (madlab_ui.live_page.tick), "
            "CPU = the script thread's CPU time, wall = with the waits for the GIL and the cores; script runs: "
            "every run of the teacher's tabs / of the phones' pages (ScriptRunner._run_script)",
            f"the presenter's count at the end: {run['count'].strip()!r}; store read with "
            "mad_core.classroom.participants and mad_core.polls.predictions_of",
            f"phones failed: {len(failed)}" + (": " + " | ".join(failed[:5]) if failed else ""),
            lost_note(run),
            run["slowest"],
            f"teacher's page errors: {len(run['teacher'].errors)}"
            + (": " + " | ".join(run["teacher"].errors[:3]) if run["teacher"].errors else ""),
            f"server log and timings in {root}"]


if __name__ == "__main__":
    sys.exit(main())
