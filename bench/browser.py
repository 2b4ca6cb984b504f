"""Browser check: how fast streamed tokens reach Chromium, and what watching a debate costs.

Starts the app (`streamlit run app.py`, the project's .streamlit/config.toml) with a throw-away
MADLAB_HOME and a scripted model that streams one piece per `--token-delay` seconds; every
discussion reply is made of unique numbered words ("xaw01 xaw02 ..."). In the server process a
hook records when the engine emitted each token (`TokenReceived.ts`); in Chromium (Debian's, as
in tests/e2e) a MutationObserver records `Date.now()` when each word first appears in the DOM.

It runs a small warm-up debate (imports, the SBERT model), then `--repeat` times the same
seeded debate twice: unwatched (started from the page, which is then closed at once) and
watched (the page stays open until the status says finished). Reported:
  - token-to-DOM latency of the watched runs: median and p95 (ms), words seen / emitted;
  - debate wall time (the store's finished_at - created_at) unwatched and watched, and the ratio;
  - CPU seconds used meanwhile by the server process and by the browser (Chromium + driver).

    targets: median token-to-DOM latency <= 300 ms; watched / unwatched wall time <= 1.1

    .venv/bin/python bench/browser.py                       # 3 agents, 2 rounds, 25 words, 0.1 s
    .venv/bin/python bench/browser.py --repeat 3 --words 40 --token-delay 0.05

Not a test: timings depend on the machine (speed targets live in bench/, never in tests/).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from bench.common import Result, Target, finish, median, parser  # noqa: E402

WORD = re.compile(r"\bx[a-z]w\d{2}\b")  # the words of the scripted replies
TAGS = "abcdefghijklmnopqrstuvwxyz"
# Installed before the page loads: first time each scripted word appears in the DOM (Date.now(), ms).
OBSERVER = r"""
window.__seen = {};
const WORD = /\bx[a-z]w\d{2}\b/g;
const note = (text, now) => {
  for (const w of (text || "").match(WORD) || []) if (!(w in window.__seen)) window.__seen[w] = now;
};
new MutationObserver((records) => {
  const now = Date.now();
  for (const r of records) {
    if (r.type === "characterData") note(r.target.data, now);
    for (const n of r.addedNodes) note(n.textContent, now);
  }
}).observe(document, {childList: true, subtree: true, characterData: true});
"""


# ----- the server, with the token hook ---------------------------------------------------------------
def serve(tokens_path: str, streamlit_args: list[str]) -> None:
    """Run `streamlit run app.py` in this process, logging every token the engine emits."""
    from mad_core import live
    from mad_core.events import TokenReceived

    log = open(tokens_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - open for the server's life
    lock = threading.Lock()
    original = live.LiveDebate.__init__

    def recorded(debate_id, events):
        for event in events:
            if isinstance(event, TokenReceived):
                with lock:
                    log.write(json.dumps([debate_id, event.ts, event.text]) + "\n")
            yield event

    def init(self, debate_id, events_iter, *args, **kwargs):
        original(self, debate_id, recorded(debate_id, events_iter), *args, **kwargs)

    live.LiveDebate.__init__ = init
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(REPO / "app.py"), *streamlit_args]
    sys.exit(cli.main())


def start_server(root: Path, scripts: dict) -> tuple[subprocess.Popen, str, Path, Path]:
    from conftest import STARTUP_TIMEOUT_S, _free_port, _healthy

    home, tokens = root / "home", root / "tokens.jsonl"
    home.mkdir()
    (root / "scripts.json").write_text(json.dumps(scripts), encoding="utf-8")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "MADLAB_HOME": str(home),
           "MADLAB_SCRIPTS": str(root / "scripts.json"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, __file__, "--serve", str(tokens), "--", "--server.headless", "true",
               "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    log = open(root / "streamlit.log", "wb")  # noqa: SIM115 - the server writes to it until the end
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not _healthy(url):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start:\n{(root / 'streamlit.log').read_text()[-3000:]}")
        time.sleep(0.25)
    return process, url, home / "madlab.db", tokens


# ----- CPU time from /proc --------------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes and all their descendants (alive now)."""
    tree, total, todo, hz = _children(), 0.0, list(pids), os.sysconf("SC_CLK_TCK")
    while todo:
        pid = todo.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / hz
        except (OSError, IndexError, ValueError):
            pass
        todo += tree.get(pid, [])
    return total


def browser_cpu(server_pid: int) -> float:
    """CPU seconds of this script's other children: the Playwright driver and Chromium."""
    return cpu_seconds([pid for pid in _children().get(os.getpid(), []) if pid != server_pid])


# ----- debates -------------------------------------------------------------------------------------
def scripts(words: int, agents: int, rounds: int, token_delay: float, debates: int) -> dict:
    """The same replies under several names: one scripted model per debate (replies are consumed)."""
    from e2e_scripts import debate_script, reply

    discussion = [reply(f"x{TAGS[i]}", words) for i in range(agents * rounds)]
    bench = debate_script(discussion, agents, token_delay=token_delay)
    return {"warm": debate_script([reply("xz", 5)] * agents, agents, token_delay=token_delay),
            **{f"bench{n}": bench for n in range(debates)}}


def run_debate(browser, url: str, store, model: str, agents: int, rounds: int, watch: bool, server_pid: int) -> dict:
    """Configure and start a debate from the page; watch it to the end or close the page at once.

    CPU seconds are counted from the click on Start until the debate ended (watched: before the
    page is closed, while Chromium's renderer still lives)."""
    from e2e_helpers import LIVE_TIMEOUT, click, configure_debate, debate_by_question, expect_status, open_debate_page
    from e2e_helpers import set_number, status, unique
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = context.new_page()
    page.add_init_script(OBSERVER)
    open_debate_page(page, url)
    question = unique("Bench: what is six times seven?")
    configure_debate(page, question, [model] * agents, rounds=rounds, max_rounds=rounds)
    set_number(page, "seed", 7)
    server0, browser0 = cpu_seconds([server_pid]), browser_cpu(server_pid)
    click(page, "start")
    expect(status(page)).to_be_visible(timeout=LIVE_TIMEOUT)
    seen: dict[str, float] = {}
    if watch:
        expect_status(page, "finished", timeout=600_000)
        seen = page.evaluate("window.__seen")
    browser1 = browser_cpu(server_pid)
    context.close()
    record = debate_by_question(store, question)
    while record["status"] == "running":  # unwatched: nobody shows the end; read it from the store
        time.sleep(0.2)
        record = store.get_debate(record["id"])
    return {"id": record["id"], "wall": record["finished_at"] - record["created_at"], "seen": seen,
            "status": record["status"], "watch": watch, "server_cpu": cpu_seconds([server_pid]) - server0,
            "browser_cpu": browser1 - browser0}


def latencies(tokens: Path, debate_id: str, seen: dict[str, float]) -> tuple[list[float], int]:
    """(token-to-DOM latency in ms of every word shown, words the engine emitted)."""
    emitted: dict[str, float] = {}
    for line in tokens.read_text(encoding="utf-8").splitlines():
        owner, ts, text = json.loads(line)
        if owner == debate_id:
            for word in WORD.findall(text):
                emitted.setdefault(word, ts * 1000)
    return [seen[w] - t for w, t in emitted.items() if w in seen], len(emitted)


def p95(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]


def main() -> int:
    options = parser(__doc__)
    options.add_argument("--token-delay", type=float, default=0.1, help="seconds between streamed pieces")
    options.add_argument("--words", type=int, default=25, help="words per discussion reply")
    options.add_argument("--agents", type=int, default=3)
    options.add_argument("--rounds", type=int, default=2)
    options.add_argument("--repeat", type=int, default=1, help="unwatched + watched pairs")
    options.add_argument("--serve", help=argparse.SUPPRESS)
    args, rest = options.parse_known_args()
    if args.serve:
        serve(args.serve, [a for a in rest if a != "--"])
        return 0
    chromium = shutil.which("chromium")
    if chromium is None:
        return finish(Result("browser", "Streaming to Chromium", skipped="Debian's chromium is not installed "
                             "(apt-get install chromium)"), args)
    from conftest import CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    from mad_core.store import Store

    root = Path(tempfile.mkdtemp(prefix="madlab-bench-browser-"))
    process, url, db_path, tokens = start_server(root, scripts(args.words, args.agents, args.rounds,
                                                               args.token_delay, 2 * args.repeat))
    runs: list[dict] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            store = Store(db_path)
            run_debate(browser, url, store, "scripted/warm", args.agents, 1, True, process.pid)
            for n in range(args.repeat):
                for watch in (False, True):
                    runs.append(run_debate(browser, url, store, f"scripted/bench{2 * n + watch}", args.agents,
                                           args.rounds, watch, process.pid))
            version = browser.version
            browser.close()
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
    return finish(report(args, runs, tokens, version, root), args)


def report(args, runs: list[dict], tokens: Path, version: str, root: Path) -> Result:
    lat: list[float] = []
    emitted = 0
    for run in runs:
        if run["watch"]:
            values, count = latencies(tokens, run["id"], run["seen"])
            lat += values
            emitted += count

    def of(key: str, watched: bool) -> list[float]:
        return [r[key] for r in runs if r["watch"] == watched]

    ratio = median(of("wall", True)) / median(of("wall", False))
    result = Result("browser", "Streaming to Chromium: token latency, watched vs unwatched wall time",
                    ["measure", "value"])
    result.rows = [["token-to-DOM latency, median (ms)", median(lat) if lat else "-"],
                   ["token-to-DOM latency, p95 (ms)", p95(lat) if lat else "-"],
                   ["words shown / emitted (watched runs)", f"{len(lat)} / {emitted}"],
                   ["wall time unwatched, median (s)", median(of("wall", False))],
                   ["wall time watched, median (s)", median(of("wall", True))],
                   ["watched / unwatched", ratio],
                   ["server CPU unwatched, median (s)", median(of("server_cpu", False))],
                   ["server CPU watched, median (s)", median(of("server_cpu", True))],
                   ["Chromium CPU while watching, median (s)", median(of("browser_cpu", True))]]
    result.targets = [Target("token-to-DOM latency (median)", median(lat) if lat else None, 300, "ms"),
                      Target("watched / unwatched wall time", ratio, 1.1)]
    result.notes = [f"{args.agents} agents x {args.rounds} rounds, {args.words} words a reply, "
                    f"{args.token_delay} s per token, {args.repeat} unwatched + watched pair(s); "
                    f"Chromium {version}",
                    "wall times (s): unwatched " + ", ".join(f"{w:.2f}" for w in of("wall", False))
                    + "; watched " + ", ".join(f"{w:.2f}" for w in of("wall", True)),
                    f"debates ended: {', '.join(sorted({r['status'] for r in runs}))}; server and token logs in {root}"]
    return result


if __name__ == "__main__":
    sys.exit(main())
