"""Harness of the end-to-end browser tests: one Streamlit server, one Chromium, a page per test.

What it is for: start `streamlit run app.py` once per session against a throw-away
MADLAB_HOME and a scripted-models file written here (`SCRIPTS`), launch Debian's Chromium
through Playwright (sync API; `playwright install` cannot download browsers here), and hand
every test a fresh browser context on that server.

What it must not do: wait with sleeps. The only loop that polls is the server readiness
check (`/_stcore/health`), bounded in time; every wait for a feature is an `expect()` in the
tests. It never touches the developer's ~/.madlab: the server gets its own MADLAB_HOME.

Each scripted model keeps per-session state in the server process (replies are consumed in
call order), so every test uses its own script name(s) and one debate per script, except
where a script is meant to be reused (a fork continues on the same script; its list then
repeats its last reply, "1", which is valid as a discussion turn, an extraction and a vote).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e_scripts import SCRIPTS

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 90  # first start imports litellm etc. on a 2-core machine
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@dataclass
class Server:
    url: str
    home: Path
    db_path: Path
    log_path: Path
    process: subprocess.Popen

    def log_tail(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no server log)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def run_server(root: Path, address: str = "127.0.0.1", scripts_table: dict | None = None,
               extra_env: dict[str, str] | None = None):
    """`streamlit run app.py` bound to `address` on a free port, with its own MADLAB_HOME under `root`
    and the scripted models `scripts_table` (default: SCRIPTS), `extra_env` added to its environment
    last; killed at the end. The Server's url is always the loopback one."""
    if not (REPO / "app.py").exists():
        pytest.fail(f"{REPO / 'app.py'} does not exist: the e2e tests need the Streamlit app")
    home = root / "home"
    home.mkdir()
    scripts = root / "scripts.json"
    scripts.write_text(json.dumps(SCRIPTS if scripts_table is None else scripts_table, indent=2), encoding="utf-8")
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "MADLAB_HOME": str(home),
        "MADLAB_SCRIPTS": str(scripts),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
        **(extra_env or {}),
    }
    log_path = root / "streamlit.log"
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
               "--server.port", str(port), "--server.address", address,
               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    srv = Server(url, home, home / "madlab.db", log_path, process)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _healthy(url):  # readiness check of the server, bounded
            if process.poll() is not None:
                pytest.fail(f"streamlit exited with {process.returncode}:\n{srv.log_tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit was not healthy within {STARTUP_TIMEOUT_S} s:\n{srv.log_tail()}")
            time.sleep(0.25)
        yield srv
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> Server:
    """`streamlit run app.py` on a free loopback port with scripted models; killed at the end."""
    with run_server(tmp_path_factory.mktemp("madlab-e2e")) as srv:
        yield srv


@pytest.fixture(scope="session")
def browser():
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@contextlib.contextmanager
def browser_page(browser, server, request, viewport: dict | None = None):
    """A fresh context and page of `browser` (on `server`); on failure, a screenshot and the server log's tail."""
    from playwright.sync_api import expect

    expect.set_options(timeout=20_000)
    context = browser.new_context(viewport=viewport or {"width": 1500, "height": 1100})
    context.set_default_timeout(20_000)
    new_page = context.new_page()
    errors: list[str] = []
    new_page.on("pageerror", lambda exc: errors.append(str(exc)))
    new_page.page_errors = errors  # type: ignore[attr-defined]
    yield new_page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        out = Path(os.environ.get("MADLAB_E2E_ARTIFACTS", server.home.parent)) / f"{request.node.name}.png"
        try:
            new_page.screenshot(path=str(out), full_page=True)
            print(f"\nscreenshot: {out}")
        except Exception as exc:  # noqa: BLE001 - a screenshot is a courtesy
            print(f"\nno screenshot: {exc}")
        print(f"page errors: {errors}\n--- streamlit log (tail) ---\n{server.log_tail()}")
    context.close()


@pytest.fixture
def page(browser, server, request):
    """A fresh browser context per test; on failure, a screenshot and the server log's tail."""
    with browser_page(browser, server, request) as new_page:
        yield new_page


@pytest.fixture
def store(server):
    """A read-side Store on the server's database (opened in the test's thread)."""
    from mad_core.store import Store

    opened = Store(server.db_path)
    yield opened
    opened.close()
