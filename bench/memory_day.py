"""A class day without growing: the app's and the model server's memory over a compressed day.

Starts the app (`streamlit run app.py`, the project's .streamlit/config.toml) in a process of its
own with a throw-away MADLAB_HOME, and drives it from Debian's Chromium as a class would use it:

  - a teacher tab runs debates from the Debate page and watches each to its end: most on a fast
    scripted model (``scripted/classday``, registered in the app's process: every reply worded
    anew, as a model's are), ``--local-debates`` of them on the offline default model
    (local/smollm2-135m through llama-server, which the app starts and supervises);
  - after most debates the teacher replays it on the Presenter, opens a prediction poll,
    ``--browser-students`` student tabs (browser contexts of their own, like phones) predict from
    the Poll page and the rest of ``--students`` predictions come through `mad_core.polls` as the
    other phones' would; the teacher jumps to the decision and reveals; the students' tabs close;
  - between them the teacher visits pages (``--visits`` in all): the Transcripts list, a debate
    opened there with a handout (Markdown, now and then the printable one with its charts) and a
    chart's HTML downloaded, Compare, Models, Experiments, the Presenter, the Poll page, and the
    Debate page reloaded. Every visit is a page load, so sessions come and go as tabs do.

Every ``--sample-every`` actions it records the resident memory (VmRSS from /proc) of the app's
process and of the llama-server it started, and asks the app's process (SIGUSR1 to the wrapper
this script runs it in: off unless this benchmark starts it) what it holds: live debates in
`mad_core.live`'s registry, Streamlit sessions (connected and kept for a reconnect), remembered
forms, cached reports and embeddings, media files, threads, and Python objects by type.

Reported: RSS start / peak / end of each process, the growth over the second half of the day (a
least-squares line through the second half's samples, so one noisy sample does not decide it),
what was held and released. Targets (flat): the second half's growth of each process at most
50 MiB and at most 10 % of its RSS at the half. The first half holds the one-time loads (the SBERT
model and torch, the model server's weights and KV pool) and is not judged. The model server fills
its prompt cache (conversations put aside when a slot changes hands) up to its bound, so a day with
few debates on it may still see it fill: a third target checks that it stays within that bound.

    .venv/bin/python bench/memory_day.py                                  # the full day (30-60 min)
    .venv/bin/python bench/memory_day.py --debates 6 --polls 3 --visits 20 --local-debates 1  # a look

Not a test: what it measures depends on the machine (memory targets live in bench/, not tests/).
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import tracemalloc
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from conftest import CHROMIUM_ARGS, STARTUP_TIMEOUT_S, _free_port, _healthy  # noqa: E402
from e2e_helpers import (choose, click, configure_debate, expect_status, key, open_app, set_text,  # noqa: E402
                         wait_for_idle)
from playwright.sync_api import Error as PlaywrightError  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402
from streamlit.runtime import Runtime  # noqa: E402
from streamlit.web import cli as streamlit_cli  # noqa: E402

from bench.common import Result, Target, finish, parser, rss_mib, stop_process  # noqa: E402
from mad_core import live, polls  # noqa: E402
from mad_core.models import DEFAULT_MODEL  # noqa: E402
from mad_core.models.llama_server import DEFAULT_CACHE_RAM_MIB  # noqa: E402
from mad_core.models.scripted import Script, register_script  # noqa: E402
from mad_core.store import Store  # noqa: E402

SCRIPT = "classday"
MODEL = f"scripted/{SCRIPT}"
REPLY_WORDS = 60
VOCAB = ("sum", "two", "four", "pair", "count", "add", "check", "apples", "again", "total", "agree", "number",
         "reason", "step", "careful", "claim", "doubt", "evidence", "answer", "simple", "twice", "indeed", "case",
         "whole", "each", "rule", "makes", "exactly", "plus", "equal", "think", "first", "second", "final")
ANSWERS = ("4", "5", "3")
GROWTH_MIB, GROWTH_PCT = 50.0, 10.0
LONG_MS = 1_800_000  # a debate on the local model, a printable handout, on a loaded 2-core machine
PROBE_TIMEOUT_S = 120


# ----- the app's process: streamlit with a probe ----------------------------------------------------
def class_reply(messages: list[dict], info: dict) -> str:
    """A debater worded anew on every call (so embeddings and reports differ, as a model's do)."""
    meta = info["metadata"]
    kind, n = str(meta.get("kind", "")), int(info.get("call_index", 0))
    if kind == "vote":
        return "1"
    if kind in ("extraction", "judge"):
        return "4"
    words = " ".join(VOCAB[(n * 7 + i * (n % 5 + 1)) % len(VOCAB)] for i in range(REPLY_WORDS))
    return f"{meta.get('agent', 'I')} says {words} (call {n}).\n\nFinal answer: 4"


def held(tracemalloc_on: bool, baseline: list) -> dict:
    """What the app's process holds now (run inside it, on the probe's thread)."""
    gc.collect()
    objects = gc.get_objects()
    types = Counter(type(o).__name__ for o in objects)
    stats = {"rss_mib": rss_mib(os.getpid()), "objects": len(objects), "types": dict(types.most_common(40)),
             "threads": threading.active_count(), "live": len(live._LIVE), "live_running": len(live.running()),
             "live_events": sum(len(d._events) for d in list(live._LIVE.values()))}
    del objects
    stats.update(_streamlit_held())
    stats.update(_caches_held())
    if tracemalloc_on:
        snapshot = tracemalloc.take_snapshot()
        if not baseline:
            baseline.append(snapshot)
        stats["tracemalloc"] = [str(s) for s in snapshot.compare_to(baseline[0], "lineno")[:15]]
    return stats


def _streamlit_held() -> dict:
    try:
        runtime = Runtime.instance()
        manager = runtime._session_mgr
        files = runtime.media_file_mgr._storage._files_by_id
        return {"sessions_active": len(manager.list_active_sessions()),
                "sessions_kept": len(manager._session_storage.list()),
                "media_files": len(files), "media_mib": sum(len(f.content) for f in files.values()) / 2**20}
    except Exception as exc:  # noqa: BLE001 - private parts of Streamlit: say what failed, go on
        return {"streamlit": f"{type(exc).__name__}: {exc}"}


CACHES = {  # what the probe counts: (module, how to count it there)
    "session_memory": ("madlab_ui.session_memory", lambda m: len(m.MEMORY._values)),
    "plot_reports": ("madlab_ui.plots", lambda m: len(m._cache)),
    "plot_vectors": ("madlab_ui.plots", lambda m: sum(len(memo.vectors) for memo in m._memos.values())),
    "script_history": ("mad_core.models.scripted", lambda m: len(m._scripts[SCRIPT].history)),
}


def _caches_held() -> dict:
    found: dict = {}
    for name, (module_name, count) in CACHES.items():
        module = sys.modules.get(module_name)
        try:
            found[name] = count(module) if module is not None else None
        except Exception as exc:  # noqa: BLE001 - a module that changed shape: say so
            found[name] = f"{type(exc).__name__}: {exc}"
    return found


def serve(probe_dir: str, tracemalloc_on: bool, streamlit_args: list[str]) -> None:
    """Run `streamlit run app.py` in this process, with the class's scripted model and the probe."""
    register_script(SCRIPT, Script(replies=class_reply, token_delay=0.01))
    if tracemalloc_on:
        tracemalloc.start(10)
    asked = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: asked.set())
    threading.Thread(target=_probe_loop, args=(Path(probe_dir), asked, tracemalloc_on), name="madlab-bench-probe",
                     daemon=True).start()
    sys.argv = ["streamlit", "run", str(REPO / "app.py"), *streamlit_args]
    sys.exit(streamlit_cli.main())


def _probe_loop(folder: Path, asked: threading.Event, tracemalloc_on: bool) -> None:
    """On each SIGUSR1: write what the process holds to probe-<n>.json; trim the scripted model's log."""
    baseline: list = []
    for n in range(1, 10**9):
        asked.wait()
        asked.clear()
        try:
            stats = held(tracemalloc_on, baseline)
        except Exception:  # noqa: BLE001 - the benchmark reads the reason
            stats = {"error": traceback.format_exc()}
        scripted = sys.modules.get("mad_core.models.scripted")
        if scripted is not None and SCRIPT in scripted._scripts:
            scripted._scripts[SCRIPT].history.clear()  # the test double's own log: not the app's memory
        tmp = folder / f"probe-{n}.tmp"
        tmp.write_text(json.dumps(stats))
        tmp.rename(folder / f"probe-{n}.json")


# ----- processes from /proc ---------------------------------------------------------------------------
def descendant(pid: int, name: str) -> int | None:
    """The first process below ``pid`` whose command name is ``name`` (the app's llama-server)."""
    tree: dict[int, list[tuple[int, str]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                head, _, tail = (entry / "stat").read_text().rpartition(")")
                tree.setdefault(int(tail.split()[1]), []).append((int(entry.name), head.partition("(")[2]))
            except (OSError, IndexError, ValueError):
                continue
    todo = [pid]
    while todo:
        for child, comm in tree.get(todo.pop(), []):
            if comm == name:
                return child
            todo.append(child)
    return None


# ----- the day -----------------------------------------------------------------------------------------
VISITS = ("transcripts", "transcript_handout", "compare", "presenter", "transcript_chart", "models", "poll_page",
          "debate_reload", "experiments", "transcript_open")
PAGES = {"transcripts": "/Transcripts", "compare": "/Compare", "models": "/Models", "experiments": "/Experiments",
         "presenter": "/Presenter", "poll_page": "/Poll", "debate_reload": "/"}
PRINTABLE_EVERY = 25  # every 25th visit downloads the printable handout (its charts drawn by Chromium)


def plan(debates: int, local: int, poll_count: int, visits: int) -> list[str]:
    """The day's actions in order: debates (a few on the local model, spread over the day), a poll
    after most of them, page visits spread between them."""
    local_at = {int((k + 0.5) * debates / local) for k in range(local)} if local else set()
    actions: list[str] = []
    shown = 0
    for i in range(debates):
        actions.append("local" if i in local_at else "debate")
        if (i + 1) * poll_count // debates > i * poll_count // debates:
            actions.append("poll")
        for _ in range((i + 1) * visits // debates - i * visits // debates):
            shown += 1
            actions.append("handout_html" if shown % PRINTABLE_EVERY == 0 else VISITS[shown % len(VISITS)])
    return actions


@dataclass
class Day:
    """The running day: the server, the browser, the teacher's tab, what was done and measured."""

    args: argparse.Namespace
    url: str
    server: subprocess.Popen
    probe_dir: Path
    store: Store
    browser: object
    teacher: object = None
    token: str = ""
    configured: str = ""  # the model the teacher's form is set to
    debates: list[str] = field(default_factory=list)
    done: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    actions: int = 0  # actions done (or failed) so far
    probes: int = 0

    def go(self, path: str, **params: str) -> None:
        """Open ``path`` in the teacher's tab (a page load: a new session) with the teacher's token."""
        query = "&".join(f"{k}={v}" for k, v in {**params, "session": self.token}.items() if v)
        open_app(self.teacher, self.url, f"{path}?{query}")
        found = re.search(r"session=([0-9a-f]{32})", self.teacher.url)
        self.token = found.group(1) if found else self.token


def run_debate(day: Day, model: str) -> None:
    """The teacher starts a 3-agent, 2-round debate from the Debate page and watches it to its end."""
    day.go("/")
    question = f"Class day, debate {len(day.debates) + 1}: what is two plus two?"
    if day.configured != model:
        configure_debate(day.teacher, question, [model] * 3, rounds=2, max_rounds=2, max_tokens=day.args.max_tokens)
        day.configured = model
    else:
        set_text(day.teacher, "question", question)
    click(day.teacher, "start")
    # The page watches the new debate once its id is in the URL (before that, the status line may still
    # be the previous debate's "finished").
    before = day.debates[-1] if day.debates else "-"
    expect(day.teacher).to_have_url(re.compile(rf"[?&]debate=(?!{before})[0-9a-f]{{32}}"))
    expect_status(day.teacher, "finished", timeout=LONG_MS if model != MODEL else 120_000)
    day.debates.append(re.search(r"[?&]debate=([0-9a-f]{32})", day.teacher.url).group(1))
    day.done["local debates" if model != MODEL else "scripted debates"] += 1


def open_sidebar(page) -> None:
    sidebar = page.locator('[data-testid="stSidebar"]')
    if sidebar.get_attribute("data-collapsed") == "true":
        page.locator('[data-testid="stExpandSidebarButton"]').click()
    expect(sidebar).to_have_attribute("data-collapsed", "false")


def student_predicts(day: Day, poll_url: str, n: int):
    """A student's phone: a browser context of its own opens the poll link and predicts."""
    context = day.browser.new_context(viewport={"width": 500, "height": 900})
    phone = context.new_page()
    phone.goto(poll_url)
    wait_for_idle(phone, timeout=60_000)
    choice = ANSWERS[n % len(ANSWERS)]
    phone.get_by_role("radio", name=choice).check(force=True)
    wait_for_idle(phone)
    key(phone, "poll_voter").locator("input").fill(f"phone {n}")
    click(phone, "poll_predict")
    expect(key(phone, "poll_mine")).to_contain_text(choice)
    return context, phone


def run_poll(day: Day) -> None:
    """Replay the newest debate on the Presenter, open a poll, the class predicts, decide, reveal."""
    page, students = day.teacher, day.args.students
    day.go("/Presenter", replay=day.debates[-1])
    expect(key(page, "presenter_agent_2")).to_be_visible()
    open_sidebar(page)
    options = key(page, "poll_options").locator("textarea")
    options.fill("\n".join(ANSWERS))
    options.press("Tab")
    wait_for_idle(page)
    click(page, "poll_open")
    expect(key(page, "poll_link")).to_contain_text("/Poll?poll=")
    poll_url = re.search(r"\S+/Poll\?poll=\w+", key(page, "poll_link").inner_text()).group(0)
    phones = [student_predicts(day, poll_url, n) for n in range(min(day.args.browser_students, students))]
    for n in range(len(phones), students):  # the other phones' predictions, as the Poll page sends them
        polls.predict(day.store, poll_url.rsplit("=", 1)[1], f"student {n}", ANSWERS[n % len(ANSWERS)])
    expect(key(page, "poll_count")).to_contain_text(f"{students} prediction", timeout=30_000)
    choose(page, "presenter_round", "Decision")
    expect(key(page, "decision_card")).to_be_visible()
    click(page, "poll_reveal")
    expect(key(page, "poll_results")).to_be_visible()
    for context, phone in phones:  # the students' pages learn of the reveal by themselves
        expect(key(phone, "poll_results")).to_be_visible(timeout=30_000)
        context.close()
    day.done["polls"] += 1
    day.done["predictions"] += students


def visit(day: Day, name: str) -> None:
    """One page visit of the teacher's (see VISITS)."""
    page = day.teacher
    if name in PAGES:
        day.go(PAGES[name])
    else:  # a debate opened on the Transcripts page
        day.go("/Transcripts", open=random.Random(len(day.samples)).choice(day.debates[-10:]))
        expect(key(page, "turn_0")).to_be_visible()
        download = {"transcript_handout": "handout_md", "transcript_chart": "html_plot_votes",
                    "handout_html": "handout_html"}.get(name)
        if download:
            key(page, download).scroll_into_view_if_needed()
            with page.expect_download(timeout=LONG_MS):
                click(page, download)
    day.done["visits"] += 1


# ----- sampling ---------------------------------------------------------------------------------------
def probe(day: Day) -> dict:
    """Ask the app's process what it holds (SIGUSR1; its probe thread writes probe-<n>.json)."""
    day.probes += 1
    path = day.probe_dir / f"probe-{day.probes}.json"
    os.kill(day.server.pid, signal.SIGUSR1)
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    while not path.exists():  # the probe walks every object of the process: seconds, not an event we can wait on
        if time.monotonic() > deadline or day.server.poll() is not None:
            return {"error": "the app's probe did not answer"}
        time.sleep(0.2)
    return json.loads(path.read_text())


def sample(day: Day, label: str) -> None:
    """RSS of the app and of its llama-server now (read before the probe, which collects garbage)."""
    llama = descendant(day.server.pid, "llama-server")
    row = {"label": label, "minutes": (time.monotonic() - day.started) / 60, "actions": day.actions,
           "debates": day.done["scripted debates"] + day.done["local debates"], "polls": day.done["polls"],
           "visits": day.done["visits"], "app": rss_mib(day.server.pid), "llama": rss_mib(llama), "held": None}
    if len(day.samples) % day.args.probe_every == 0 or label in ("start", "day over", "settled"):
        row["held"] = probe(day)
    day.samples.append(row)
    with open(day.probe_dir / "samples.jsonl", "a") as log:  # kept even if the run is killed
        log.write(json.dumps({k: v for k, v in row.items() if k != "held"}) + "\n")
    held = row["held"] or {}
    print(f"[{row['minutes']:5.1f} min] {label:<18} actions {row['actions']:>4}  app {row['app'] or 0:7.1f} MiB  "
          f"llama-server {row['llama'] or 0:7.1f} MiB  live {held.get('live', '-')}  "
          f"sessions {held.get('sessions_active', '-')}/{held.get('sessions_kept', '-')}", flush=True)


def act(day: Day, action: str) -> None:
    if action in ("debate", "local"):
        run_debate(day, MODEL if action == "debate" else DEFAULT_MODEL)
    elif action == "poll":
        run_poll(day)
    else:
        visit(day, action)


def new_teacher(day: Day) -> None:
    if day.teacher is not None:
        day.teacher.context.close()
    context = day.browser.new_context(viewport={"width": 1500, "height": 1100})
    context.set_default_timeout(60_000)
    day.teacher = context.new_page()
    day.configured = ""


def wait_for_debates(day: Day) -> None:
    """Wait (at most LONG_MS) until no debate runs, as the store says."""
    deadline = time.monotonic() + LONG_MS / 1000
    while next(iter(day.store.db.execute("SELECT count(*) FROM debates WHERE status = 'running'")))[0]:
        if time.monotonic() > deadline:
            return
        time.sleep(2)  # the store is the only witness left once the tab is closed


class Stopped(Exception):
    """SIGTERM: the day ends where it is, and the report says so."""


def stopped(*_) -> None:
    raise Stopped


def run_day(day: Day) -> None:
    """Every action of the day in order, sampled every ``--sample-every`` actions; a failed action is
    recorded (the teacher's tab starts afresh) and the day goes on."""
    args = day.args
    expect.set_options(timeout=60_000)
    new_teacher(day)
    day.go("/")
    sample(day, "start")
    actions = plan(args.debates, args.local_debates, args.polls, args.visits)
    for n, action in enumerate(actions, 1):
        day.actions = n
        try:
            act(day, action)
        except (AssertionError, PlaywrightError, IndexError, AttributeError, polls.PollError) as exc:
            day.failures.append(f"{action} (action {n}): {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            print(f"failed: {day.failures[-1]}", flush=True)
            with contextlib.suppress(PlaywrightError):  # what the teacher saw, for the reader of the log
                day.teacher.screenshot(path=str(day.probe_dir / f"failed-{n}.png"), full_page=True)
            for context in day.browser.contexts:
                context.close()
            day.teacher = None
            wait_for_debates(day)  # the teacher's form starts nothing while its last debate runs
            new_teacher(day)
        if n % args.sample_every == 0 or n == len(actions):
            sample(day, "day over" if n == len(actions) else action)
    day.teacher.context.close()


# ----- the server ---------------------------------------------------------------------------------------
def start_server(root: Path, args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    home = root / "home"
    home.mkdir()
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "MADLAB_HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, __file__, "--serve", "--probe-dir", str(root)] + (["--tracemalloc"] if args.tracemalloc
                                                                                 else [])
    command += ["--", "--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1",
                "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    log = open(root / "streamlit.log", "wb")  # noqa: SIM115 - the server writes to it until the end
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not _healthy(url):  # readiness of a server: nothing to wait on but its answer
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start:\n{(root / 'streamlit.log').read_text()[-3000:]}")
        time.sleep(0.25)
    return process, url


# ----- the report ---------------------------------------------------------------------------------------
def second_half_growth(samples: list[dict], which: str) -> tuple[float, float] | None:
    """(MiB, % of the line's value at the half) a least-squares line through the second half's
    samples (by actions done) rises from the half to the end; None with fewer than 3 samples."""
    day = [s for s in samples if s["label"] != "settled" and s[which] is not None]
    if not day:
        return None
    half = day[-1]["actions"] / 2
    points = [(s["actions"], s[which]) for s in day if s["actions"] >= half]
    if len(points) < 3:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    spread = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / spread if spread else 0.0
    at_half = my + slope * (half - mx)
    growth = slope * (day[-1]["actions"] - half)
    return growth, 100 * growth / at_half if at_half else 0.0


def extremes(samples: list[dict], which: str) -> str:
    values = [s[which] for s in samples if s[which] is not None]
    if not values:
        return f"{which}: not running"
    day_end = [s[which] for s in samples if s["label"] == "day over" and s[which] is not None]
    return (f"{which}: start {values[0]:.0f} MiB, peak {max(values):.0f} MiB, end of day "
            f"{(day_end or values)[-1]:.0f} MiB, after the tabs closed {values[-1]:.0f} MiB")


def held_notes(day: Day) -> list[str]:
    """What the app's process held at the half, at the end of the day and after the tabs closed."""
    probed = [s for s in day.samples if s["held"] and "error" not in s["held"]]
    if not probed:
        return ["the app's probe gave nothing"]
    notes = []
    half = next((s for s in probed if s["actions"] >= day.samples[-1]["actions"] / 2), probed[-1])
    for s in (half, *[s for s in probed if s["label"] in ("day over", "settled")]):
        h = s["held"]
        notes.append(f"held at '{s['label']}' ({s['debates']} debates run): {h.get('live')} live debates "
                     f"({h.get('live_running')} running, {h.get('live_events')} events), sessions "
                     f"{h.get('sessions_active')} connected + {h.get('sessions_kept')} kept for a reconnect, "
                     f"{h.get('session_memory')} remembered forms, {h.get('plot_reports')} cached reports, "
                     f"{h.get('plot_vectors')} embedded texts, {h.get('media_files')} media files "
                     f"({h.get('media_mib', 0):.1f} MiB), {h.get('threads')} threads, {h.get('objects')} objects")
    first, last = half["held"]["types"], probed[-1]["held"]["types"]
    grown = sorted(((last.get(t, 0) - first.get(t, 0), t) for t in set(first) | set(last)), reverse=True)[:6]
    notes.append("objects by type, from the half to the last probe: "
                 + ", ".join(f"{t} {n:+d}" for n, t in grown))
    if probed[-1]["held"].get("tracemalloc"):
        notes.append("tracemalloc (since the first probe): " + " | ".join(probed[-1]["held"]["tracemalloc"][:8]))
    return notes


def report(day: Day, root: Path) -> Result:
    args = day.args
    result = Result("memory_day", "A class day: memory of the app and of the model server over "
                    f"{args.debates} debates, {args.polls} polls, {args.visits} page visits",
                    ["sample", "min", "debates", "polls", "visits", "app MiB", "llama-server MiB", "live debates",
                     "sessions (connected/kept)"])
    for s in day.samples:
        h = s["held"] or {}
        result.rows.append([s["label"], round(s["minutes"], 1), s["debates"], s["polls"], s["visits"],
                            s["app"] if s["app"] is not None else "-", s["llama"] if s["llama"] is not None else "-",
                            h.get("live", "-"), f"{h.get('sessions_active', '-')}/{h.get('sessions_kept', '-')}"])
    for which, name in (("app", "app"), ("llama", "llama-server")):
        growth = second_half_growth(day.samples, which)
        result.targets.append(Target(f"{name}: growth over the second half", growth and growth[0], GROWTH_MIB, "MiB"))
        result.targets.append(Target(f"{name}: growth over the second half, share", growth and growth[1], GROWTH_PCT,
                                     "%"))
    served = [s["llama"] for s in day.samples if s["llama"] is not None]
    result.targets.append(Target("llama-server: peak above its first sample (its prompt cache is bounded at "
                                 f"{DEFAULT_CACHE_RAM_MIB} MiB)", max(served) - served[0] if served else None,
                                 DEFAULT_CACHE_RAM_MIB * 1.1, "MiB"))
    result.notes = [extremes(day.samples, "app"), extremes(day.samples, "llama"),
                    f"done: {dict(day.done)}; {args.students} predictions a poll ({args.browser_students} from "
                    f"student tabs in Chromium, the rest through mad_core.polls); max_tokens {args.max_tokens}; "
                    f"samples every {args.sample_every} actions; the app's probe (every {args.probe_every}th sample) "
                    "runs gc.collect() before counting",
                    *held_notes(day),
                    f"{len(day.failures)} actions failed" + (": " + "; ".join(day.failures[:5]) if day.failures else ""),
                    f"server log and probes in {root}"]
    return result


def settle(day: Day) -> None:
    """Every tab is closed: wait past Streamlit's reconnect window, then the last sample."""
    if day.args.settle > 0:
        time.sleep(day.args.settle)  # Streamlit keeps a closed tab's session for a reconnect (120 s)
        sample(day, "settled")


def main() -> int:
    options = parser(__doc__)
    options.add_argument("--debates", type=int, default=60, help="debates in the day")
    options.add_argument("--local-debates", type=int, default=4, help="of them on the offline default model")
    options.add_argument("--polls", type=int, default=40)
    options.add_argument("--students", type=int, default=30, help="predictions a poll")
    options.add_argument("--browser-students", type=int, default=3, help="of them from student tabs in Chromium")
    options.add_argument("--visits", type=int, default=300, help="page visits of the teacher")
    options.add_argument("--max-tokens", type=int, default=96, help="per reply (the local model's debates)")
    options.add_argument("--sample-every", type=int, default=10, help="actions between memory samples")
    options.add_argument("--probe-every", type=int, default=3, help="samples between probes of the app's process")
    options.add_argument("--settle", type=float, default=150.0,
                         help="seconds after the last tab closed before the last sample (0: none)")
    options.add_argument("--tracemalloc", action="store_true", help="trace the app's allocations (slow)")
    options.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    options.add_argument("--probe-dir", help=argparse.SUPPRESS)
    args, rest = options.parse_known_args()
    if args.serve:
        serve(args.probe_dir, args.tracemalloc, [a for a in rest if a != "--"])
        return 0
    chromium = shutil.which("chromium")
    if chromium is None:
        return finish(Result("memory_day", "A class day", skipped="Debian's chromium is not installed "
                             "(apt-get install chromium)"), args)
    signal.signal(signal.SIGTERM, stopped)  # a stopped benchmark reports what it has and stops its server
    root = Path(tempfile.mkdtemp(prefix="madlab-bench-day-"))
    process, url = start_server(root, args)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            day = Day(args, url, process, root, Store(root / "home" / "madlab.db"), browser)
            try:
                run_day(day)
                browser.close()
                settle(day)
            except Stopped:
                day.failures.insert(0, f"the benchmark was stopped (SIGTERM) after {day.actions} actions")
    finally:
        stop_process(process)
    return finish(report(day, root), args)


if __name__ == "__main__":
    sys.exit(main())
