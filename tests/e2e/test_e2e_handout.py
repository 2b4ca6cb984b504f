"""Scenario: a teacher downloads a debate's handout from the Transcripts page, opens it in
Chromium and prints it to PDF; the charts show the PNG camera and download as HTML.

Must not happen: the handout runs anything (an alert dialog, a script element, the model's
<img onerror>), the charts' answer labels run into each other, or a chart's caption is split from
it by a page break."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e_helpers import LIVE_TIMEOUT, click, expect, expect_no_exception, finished_debate, key, open_app, turn, unique
from mad_core import codebook

pytestmark = pytest.mark.e2e
HANDOUT_TIMEOUT = 120_000  # the charts are drawn by a Chromium that kaleido starts on the click


def test_handout_opens_and_prints_without_running_anything(page, browser, server, store):
    question = unique("Handout check: what is 6 times 7? <img src=x onerror=alert('q')>")
    debate = finished_debate(page, server.url, store, question, ["scripted/handout"] * 2)
    first = store.turns(debate["id"])[0]
    codebook.annotate(store, debate["id"], first.id, "good point", "check <script>alert('note')</script> this")

    page.set_viewport_size({"width": 1280, "height": 900})
    open_app(page, server.url, "/Transcripts")
    click(page, f"open_{debate['id'][:8]}")
    expect(turn(page, 0)).to_contain_text("Print me: <script>")
    votes = key(page, "plot_votes")
    votes.scroll_into_view_if_needed()
    expect(votes.locator(".modebar-btn[data-title*='png' i]")).to_have_count(1)
    expect(key(page, "html_plot_votes")).to_be_visible()
    shots = Path(os.environ.get("MADLAB_E2E_ARTIFACTS", server.home.parent))
    key(page, "plot_timeline").screenshot(path=str(shots / "charts-timeline-1280.png"))
    votes.screenshot(path=str(shots / "charts-votes-1280.png"))
    # the vote chart's tick labels do not overlap one another
    ticks = votes.locator(".ytick text").all()
    boxes = sorted((t.bounding_box() for t in ticks), key=lambda b: b["y"])
    assert len(boxes) == 2 and all(a["y"] + a["height"] <= b["y"] for a, b in zip(boxes, boxes[1:])), boxes

    with page.expect_download() as chart_file:  # one chart as a standalone page, built on the click
        click(page, "html_plot_votes")
    chart_page = Path(chart_file.value.path()).read_text(encoding="utf-8")
    assert chart_page.startswith("<!doctype html>") and "Solution 1 (Agent 1)" in chart_page
    assert "<script src=" not in chart_page  # plotly.js inside: it opens offline
    with page.expect_download(timeout=HANDOUT_TIMEOUT) as download:
        click(page, "handout_html")
    path = shots / f"handout-{debate['id'][:8]}.html"
    download.value.save_as(str(path))
    expect_no_exception(page)

    reader = browser.new_context().new_page()
    dialogs: list[str] = []
    reader.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    reader.goto(path.as_uri())
    expect(reader.locator("h1")).to_have_text(question)
    expect(reader.locator(".turn .text").first).to_contain_text('Print me: <script>alert("h1")</script>')
    expect(reader.locator(".note").first).to_contain_text("good point check <script>alert('note')</script> this")
    expect(reader.locator("figure img")).to_have_count(5, timeout=LIVE_TIMEOUT)  # no accuracy chart: no reference
    assert reader.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    # Each chart stays with its caption where the page breaks: laid out in page-tall columns (the
    # same fragmentation rules as pages), no figure's image and caption land in different columns.
    reader.emulate_media(media="print")
    split = reader.evaluate("""() => {
        document.body.style.cssText = 'columns: 700px; column-gap: 40px; column-fill: auto; height: 900px;'
            + 'max-width: none; width: 40000px';
        return [...document.querySelectorAll('figure')].filter(f => {
            const img = f.querySelector('img').getBoundingClientRect();
            const caption = f.querySelector('figcaption').getBoundingClientRect();
            return Math.abs(img.left - caption.left) > 1 || caption.top < img.bottom - 1;
        }).map(f => f.querySelector('img').alt);
    }""")
    assert split == []  # must not happen: a caption at the top of the next page, away from its chart
    reader.reload()
    reader.emulate_media(media="screen")
    pdf = reader.pdf(format="A4", print_background=True)
    pages = pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages")
    assert pdf.startswith(b"%PDF") and pages >= 2, pages  # the round starts on a page of its own
    (shots / f"handout-{debate['id'][:8]}.pdf").write_bytes(pdf)
    # Must not happen: a dialog, a script element, or the model's markup turned into elements.
    assert dialogs == []
    assert reader.evaluate("document.scripts.length") == 0
    expect(reader.locator('img[src="x"]')).to_have_count(0)
    expect(reader.locator("b", has_text="bold")).to_have_count(0)
    reader.context.close()
