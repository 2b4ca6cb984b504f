"""A page that remembers, pages with names, and the Debate page on a projector (1280x720).

- A reload of the Debate page, or a second tab opened with its URL, shows the running debate and
  the form as they were (the URL carries the session token and the watched debate).
- A fresh tab (no token) lists the debates running now, with a Watch button.
- The sidebar names the first page "Debate" (not "app").
- At 1280x720 the Start button, the status line, the latest turn and the steering controls are in
  the viewport without scrolling the page.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from e2e_scripts import words
from e2e_helpers import (LIVE_TIMEOUT, configure_debate, debate_by_question, expect, expect_no_exception,
                         expect_status, key, open_debate_page, start, status, turn, unique, wait_for_idle)

pytestmark = pytest.mark.e2e
INFO = "Pick a preset or write a question"  # the empty Debate page's hint
PROJECTOR = {"width": 1280, "height": 720}


def question_field(page):
    return key(page, "question").locator("textarea")


def test_reload_and_second_tab_show_the_running_debate_and_the_form(page, server, store, browser):
    open_debate_page(page, server.url)
    expect(page).to_have_url(re.compile(r"[?&]session=[0-9a-f]{32}"))
    question = unique("Reload check: name a prime number.")
    configure_debate(page, question, ["scripted/reload"] * 3)
    start(page)
    first = words("ra", 30)
    expect(turn(page, 0)).to_contain_text(first[1], timeout=LIVE_TIMEOUT)
    debate_id = debate_by_question(store, question)["id"]
    expect(page).to_have_url(re.compile(rf"[?&]debate={debate_id}"))

    # A fresh tab without the token: its own empty form, and the running debate to watch.
    fresh_context = browser.new_context(viewport={"width": 1500, "height": 1100})
    try:
        fresh = fresh_context.new_page()
        open_debate_page(fresh, server.url)
        running = key(fresh, "running_list")
        expect(fresh.get_by_text("Debates running now")).to_be_visible()
        expect(running).to_contain_text(question)
        expect(question_field(fresh)).to_have_value("")
        watch = key(fresh, f"reattach_{debate_id[:8]}").locator("button").first
        expect(watch).to_have_text("Watch")
        watch.click()
        expect(turn(fresh, 0)).to_contain_text(first[0], timeout=LIVE_TIMEOUT)
        expect(fresh).to_have_url(re.compile(rf"[?&]debate={debate_id}"))
        expect_no_exception(fresh)
    finally:
        fresh_context.close()

    # Reload: the same debate, still streaming, and the form as it was.
    url = page.url
    page.reload()
    wait_for_idle(page, timeout=60_000)
    expect(question_field(page)).to_have_value(question)
    expect(status(page)).to_be_visible(timeout=LIVE_TIMEOUT)
    expect(turn(page, 0)).to_contain_text(first[0])
    expect(key(page, "n_agents").locator("input")).to_have_value("3")
    expect(key(page, "agent_model_2").locator("input")).to_have_value("scripted/reload")
    # Must not happen: the empty page's "Pick a preset…" hint instead of the debate after a reload.
    expect(page.get_by_text(INFO)).to_have_count(0)
    expect(key(page, "stop").locator("button").first).to_be_enabled()  # the reloaded session still steers it

    # A second tab opened with the same URL shows the same debate and form.
    second = page.context.new_page()
    second.goto(url)
    wait_for_idle(second, timeout=60_000)
    expect(question_field(second)).to_have_value(question)
    expect(turn(second, 0)).to_contain_text(first[0], timeout=LIVE_TIMEOUT)
    expect(second.get_by_text(INFO)).to_have_count(0)
    expect_no_exception(second)
    expect_no_exception(page)


def test_sidebar_names_the_debate_page(page, server):
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    open_debate_page(page, server.url)
    nav = page.locator('[data-testid="stSidebarNav"]')
    expect(nav.get_by_role("link", name="Debate", exact=True)).to_be_visible()
    for title in ("Transcripts", "Compare", "Models", "Experiments"):
        expect(nav.get_by_role("link", name=title, exact=True)).to_be_visible()
    # Must not happen: the entry file's name as the first page's label.
    expect(nav.get_by_role("link", name="app", exact=True)).to_have_count(0)
    nav.get_by_role("link", name="Transcripts", exact=True).click()
    expect(page).to_have_url(re.compile(r"/Transcripts(\?|$)"))
    expect(page.get_by_role("heading", name="Transcripts")).to_be_visible()
    # Must not happen: the pages (their favicons included) ask anything of a host but this server.
    outside = [url for url in requested if not url.startswith((server.url, "data:", "blob:"))]
    assert not outside, outside


def _inside(box: dict | None, viewport: dict) -> bool:
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"] \
        and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"]


def test_debate_page_fits_a_projector(page, server):
    page.set_viewport_size(PROJECTOR)
    open_debate_page(page, server.url)
    configure_debate(page, unique("Projector check: name a prime number."), ["scripted/projector"] * 3)
    start(page)
    second = words("pb", 120)
    expect(turn(page, 1)).to_contain_text(second[60], timeout=LIVE_TIMEOUT)
    expect_status(page, "running")
    # The page as it opens: filling the form made Playwright scroll fields into view.
    page.locator('[data-testid="stMain"]').evaluate("main => { main.scrollTop = 0; }")
    shot = Path(os.environ.get("MADLAB_E2E_ARTIFACTS", server.home.parent)) / "projector_1280x720.png"
    page.screenshot(path=str(shot))
    print(f"\nscreenshot: {shot}")
    boxes = {name: locator.bounding_box() for name, locator in {
        "start": key(page, "start").locator("button").first,  # (a button with help is drawn twice)
        "status": status(page),
        "latest turn": turn(page, 1),
        "pause": key(page, "pause").locator("button").first,
        "stop": key(page, "stop").locator("button").first,
    }.items()}
    print({name: box and {k: round(v) for k, v in box.items()} for name, box in boxes.items()})
    # Must not happen: any of them below (or beside) the 1280x720 view, to be reached only by scrolling the page.
    outside = {name: box for name, box in boxes.items()
               if not _inside(box if name != "latest turn" else _bottom_line(box), PROJECTOR)}
    assert not outside, outside
    expect_no_exception(page)


def _bottom_line(box: dict | None) -> dict | None:
    """The latest turn's last line (a long turn's start scrolls out of the transcript box by design)."""
    if box is None:
        return None
    return {**box, "y": box["y"] + box["height"] - 24, "height": 24}
