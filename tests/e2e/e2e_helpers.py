"""Small Playwright helpers for MAD Lab's Streamlit pages: locate by widget key, set widgets.

Every wait here is an `expect()` or a `wait_for_function` with a timeout; nothing sleeps.
Streamlit puts the class `st-key-<key>` on every keyed widget and keyed container.
"""
from __future__ import annotations

import re
import uuid

from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

LIVE_TIMEOUT = 120_000  # ms: a scripted debate on a slow, shared 2-core machine


def key(page: Page | Locator, name: str) -> Locator:
    """The element Streamlit rendered for the widget or container keyed `name`."""
    return page.locator(f".st-key-{name}")


def turn(page: Page | Locator, k: int) -> Locator:
    return key(page, f"turn_{k}")


def status(page: Page) -> Locator:
    return key(page, "debate_status")


def text_of(locator: Locator) -> str:
    return locator.inner_text()


def unique(prefix: str) -> str:
    return f"{prefix} {uuid.uuid4().hex[:8]}"


def wait_for_idle(page: Page, timeout: float = 30_000) -> None:
    """Wait until the app is connected and no script run is in progress."""
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.dataset.testConnectionState === 'CONNECTED'
                && app.dataset.testScriptState === 'notRunning';
        }""",
        timeout=timeout,
    )


def open_app(page: Page, url: str, path: str = "/", timeout: float = 60_000) -> None:
    page.goto(url.rstrip("/") + path)
    wait_for_idle(page, timeout=timeout)


def open_debate_page(page: Page, url: str) -> None:
    open_app(page, url, "/")
    expect(key(page, "start")).to_be_visible(timeout=60_000)


def _type(page: Page, field, value: str, commit: str) -> None:
    """Fill `field` with `value` and commit it (`commit`: the key pressed). A redraw in the middle of
    fill may put the old text back, or keep it beside the new; while a run redraws the page, the old
    element may still stand beside the new one with the same key (Playwright then refuses to act on
    two): wait for one field, and type it again when any of that happens (3 tries)."""
    for attempt in range(3):
        try:
            expect(field).to_have_count(1)
            field.fill(value)
            field.press(commit)
            expect(field).to_have_value(value, timeout=5_000)
            break
        except (AssertionError, PlaywrightError):
            if attempt == 2:
                raise
            wait_for_idle(page)
    wait_for_idle(page)


def set_text(page: Page, name: str, value: str) -> None:
    """Fill a text_input or text_area and commit it (Enter / Ctrl+Enter)."""
    field = key(page, name).locator("textarea, input").first
    is_area = field.evaluate("e => e.tagName") == "TEXTAREA"
    _type(page, field, value, "Control+Enter" if is_area else "Enter")


def set_number(page: Page, name: str, value: int | float) -> None:
    """Type `value` into the number field keyed `name` and commit it (Enter)."""
    _type(page, key(page, name).locator("input"), str(value), "Enter")


def choose(page: Page, name: str, value: str) -> None:
    """Pick `value` in the selectbox keyed `name` (typing it: works for new options too)."""
    box = key(page, name)
    field = box.locator("input")
    exact = page.get_by_role("option", name=value, exact=True)
    for attempt in range(3):
        field.click()
        field.fill(value)
        if not exact.count():
            field.press("Enter")
            break
        try:  # the list may close under the pointer (a rerun redraws the form): open it again
            exact.first.click(timeout=5_000)
            break
        except PlaywrightTimeoutError:
            if attempt == 2:
                raise
    expect(field).to_have_value(value)
    wait_for_idle(page)


def pick(page: Page, name: str, debate_id: str) -> None:
    """Add a debate to the multiselect keyed `name` (typing its id's first 8 characters)."""
    field = key(page, name).locator("input")
    field.click()
    field.fill(debate_id[:8])
    page.get_by_role("option", name=re.compile(re.escape(debate_id[:8]))).first.click()
    # The page then reruns with the debate, and may load the SBERT model for its metrics: on a busy machine
    # that takes longer than wait_for_idle's default 30 s.
    wait_for_idle(page, timeout=LIVE_TIMEOUT)


def click(page: Page, name: str) -> None:
    key(page, name).locator("button").first.click()


def until(page: Page, action, done, tries: int = 3, timeout: float = 15_000, again=lambda: True) -> None:
    """Do `action()` until `done(timeout)` (an expect() on what the action must change) holds.

    Streamlit used to drop a click that landed while a run redrew the page (seen on a loaded 2-core
    machine; app.py says why): the action is done again, at most `tries` times, only while `again()`
    says it may be (a delete button still on the page), so an action that did its work is never repeated."""
    for attempt in range(tries):
        wait_for_idle(page)
        action()
        try:
            done(timeout)
            return
        except AssertionError:
            if attempt == tries - 1 or not again():
                raise


def click_until(page: Page, name: str, done, tries: int = 3, timeout: float = 15_000) -> None:
    """Click the button keyed `name` until `done(timeout)` holds (`until`), while the button is there."""
    button = key(page, name).locator("button").first
    until(page, button.click, done, tries, timeout, again=lambda: button.count() > 0)


def configure_debate(page: Page, question: str, models: list[str], *, rounds: int = 1, max_rounds: int = 1,
                     max_tokens: int | None = None) -> None:
    """Set the question, the number of agents and each agent's model, and the round limits."""
    set_text(page, "question", question)
    set_number(page, "n_agents", len(models))
    expect(key(page, f"agent_model_{len(models) - 1}")).to_be_visible()
    expect(key(page, f"agent_model_{len(models)}")).to_have_count(0)
    for i, model in enumerate(models):
        choose(page, f"agent_model_{i}", model)
    set_number(page, "rounds", rounds)
    set_number(page, "max_rounds", max_rounds)
    if max_tokens is not None:
        set_number(page, "max_tokens", max_tokens)


def start(page: Page) -> None:
    click(page, "start")
    expect(status(page)).to_be_visible(timeout=LIVE_TIMEOUT)


def expect_status(page: Page, word: str, timeout: float = LIVE_TIMEOUT) -> None:
    """Wait until the status line says `word` (it reads "Status: <word> · ...")."""
    expect(status(page)).to_contain_text(re.compile(rf"status\W*{word}\b", re.I), timeout=timeout)


def open_disclosure(page: Page, name: str) -> Locator:
    """Open the expander or popover keyed `name`; return the locator that holds its content."""
    box = key(page, name)
    summary = box.locator("summary")
    if summary.count():
        if box.locator("details[open]").count() == 0:
            summary.first.click()
        return box
    box.locator("button").first.click()
    popover = page.locator('[data-testid="stPopoverBody"]')
    expect(popover.first).to_be_visible()
    return popover.first


# ----- store ----------------------------------------------------------------------------
# The engine writes every event to the store before the UI receives it, so once the page
# shows something (a turn, a status) the store already holds it: no polling is needed.

def debate_by_question(store, question: str) -> dict:
    """The one debate whose question is `question`."""
    rows = list(store.db.query("SELECT id FROM debates WHERE question = ? ORDER BY created_at", [question]))
    assert len(rows) == 1, f"expected one debate with question {question!r}, found {len(rows)}"
    return store.get_debate(rows[0]["id"])


def finished_debate(page: Page, url: str, store, question: str, models: list[str]) -> dict:
    """Run a one-round debate of `models` from the Debate page to its end; its stored record."""
    open_debate_page(page, url)
    configure_debate(page, question, models)
    start(page)
    expect_status(page, "finished")
    return debate_by_question(store, question)


def fill(page: Page, name: str, value: str) -> None:
    """Type into a text widget without committing it (a following button click commits it)."""
    box = key(page, name)
    field = box.locator("textarea, input").first
    field.fill(value)
    expect(field).to_have_value(value)


def expect_no_exception(page: Page) -> None:
    """Must not happen on any page: a Python traceback rendered by Streamlit."""
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
