"""The reading room in the browser: tag a turn with a new codebook tag, rename the tag, filter the
list by it and download the annotation CSV; read two annotated debates side by side in Compare;
Open brings the debate into view at 1280x720 and a reload (the URL) keeps it open.

The debates are run here, in the test's process, each on a scripted model registered in it for
that debate, and written to the server's database (the `store` fixture): the server only reads them.
"""
from __future__ import annotations

import csv
import io
import os
import re
import uuid
from pathlib import Path

import pytest
from e2e_helpers import (LIVE_TIMEOUT, choose, click, click_until, expect, expect_no_exception, key, open_app, open_disclosure,
                         pick, set_text, turn, unique, until, wait_for_idle)
from e2e_scripts import debate_script, reply

from mad_core import codebook
from mad_core.config import DebateConfig
from mad_core.engine import DebateEngine
from mad_core.events import DebateFinished
from mad_core.models import ensure_registered
from mad_core.models.scripted import Script, register_script, unregister_script
from madlab_ui.codebook import NEW_TAG_LABEL

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module", autouse=True)
def providers():
    ensure_registered()


def run_debate(store, question: str, tag: str, **changes) -> str:
    """A finished three-agent debate in the server's database, on a scripted model of its own
    whose turns say `<tag>a…`, `<tag>b…`, `<tag>c…`; returns its id."""
    name = f"reading-{uuid.uuid4().hex[:8]}"
    register_script(name, Script(**debate_script([reply(f"{tag}a", 4), reply(f"{tag}b", 4), reply(f"{tag}c", 4)],
                                                 3, answer="Paris")))
    config = DebateConfig.from_dict({"question": question, "agents": [{"label": f"Agent {i}",
                                                                      "model": f"scripted/{name}"} for i in (1, 2, 3)],
                                     "rounds": 1, "max_rounds": 1, "protocol": "simple_voting", **changes})
    engine = DebateEngine(config, store=store)
    try:
        ends = [(e.status, e.reason) for e in engine.run() if isinstance(e, DebateFinished)]
    finally:
        unregister_script(name)
    assert [status for status, _ in ends] == ["finished"], ends  # the cause, if the debate itself failed
    return engine.debate_id


def new_tag(page, k: int, name: str) -> None:
    """Name a new tag on turn k: "➕ New tag…" in its tag box, then the name in the field that opens."""
    choose(page, f"tag_{k}", NEW_TAG_LABEL)
    expect(key(page, f"new_tag_{k}")).to_be_visible()
    set_text(page, f"new_tag_{k}", name)
    wait_for_idle(page)


def open_transcript(page, url: str, debate_id: str) -> None:
    open_app(page, url, "/Transcripts")
    click(page, f"open_{debate_id[:8]}")
    expect(turn(page, 2)).to_be_visible(timeout=LIVE_TIMEOUT)  # the first opening computes the metrics
    wait_for_idle(page, timeout=LIVE_TIMEOUT)


def test_tag_rename_filter_and_export_annotations(page, server, store):
    tagged = run_debate(store, unique("Reading room: which city is the capital of France?"), "rt")
    untagged = run_debate(store, unique("Reading room: which river crosses Paris?"), "ru")
    uid = uuid.uuid4().hex[:6]
    first_name, second_name = f"Leading <b>question</b> {uid}", f"Loaded premise {uid}"

    open_transcript(page, server.url, tagged)
    open_disclosure(page, "codebook")
    set_text(page, "annotator", "Rater E2E")
    new_tag(page, 1, first_name)  # ➕ New tag… and its name: it joins the codebook
    click(page, "annotate_1")
    expect(turn(page, 1)).to_contain_text(first_name)
    expect(key(page, "codebook_counts")).to_contain_text(first_name)
    assert codebook.tag(store, first_name)["name"] == first_name
    # Must not happen: the tag's markup became an element.
    expect(turn(page, 1).locator("b", has_text="question")).to_have_count(0)

    choose(page, "codebook_tag", first_name)
    set_text(page, "codebook_rename_to", second_name)
    click(page, "codebook_rename")
    expect(key(page, "codebook_message")).to_contain_text(f"to '{second_name}' everywhere")
    expect(turn(page, 1)).to_contain_text(second_name)
    # Must not happen: the old name anywhere, on the page or in the database.
    expect(page.locator("body")).not_to_contain_text(first_name)
    assert codebook.tag(store, first_name) is None and [a["tag"] for a in store.annotations(tagged)] == [second_name]

    open_disclosure(page, "debate_list_box")  # the list, folded while a debate is open
    wait_for_idle(page)
    choose(page, "tag_filter", second_name)
    expect(key(page, f"debate_row_{tagged[:8]}")).to_be_visible()
    expect(key(page, f"debate_row_{tagged[:8]}")).to_contain_text(second_name)
    # Must not happen: the filter lists a debate without the tag.
    expect(key(page, f"debate_row_{untagged[:8]}")).to_have_count(0)
    rows = key(page, "debate_list").locator("[class*='st-key-debate_row_']")
    expect(rows).to_have_count(1)

    with page.expect_download() as download:
        click(page, "export_annotations_open")
    text = open(download.value.path(), encoding="utf-8").read()
    assert download.value.suggested_filename == f"annotations-{tagged[:8]}.csv"
    exported = list(csv.DictReader(io.StringIO(text)))
    turns = store.turns(tagged)
    assert len(exported) == 1
    row = exported[0]
    assert (row["debate_id"], row["turn_id"], row["agent"], row["tag"], row["annotator"]) == \
        (tagged, turns[1].id, "Agent 2", second_name, "Rater E2E")
    assert row["text"] == turns[1].content and row["previous_text"] == turns[0].content
    assert first_name not in text
    expect_no_exception(page)


def test_compare_two_annotated_debates_side_by_side(page, server, store):
    left = run_debate(store, unique("Side by side: capital of France?"), "sl")
    right = run_debate(store, unique("Side by side: capital of France, by counting?"), "sr",
                       protocol="solution_counting")
    uid = uuid.uuid4().hex[:6]
    left_tag, right_tag = f"concedes {uid}", f"new evidence {uid}"
    codebook.add_tag(store, right_tag, "green")
    codebook.annotate(store, left, store.turns(left)[1].id, left_tag, "gives in to Agent 1")
    codebook.annotate(store, right, store.turns(right)[2].id, right_tag)

    open_app(page, server.url, "/Compare")
    pick(page, "compare_ids", left)
    pick(page, "compare_ids", right)
    until(page, key(page, "compare_mode").get_by_text("Side by side").click,
          lambda ms: expect(key(page, "side_by_side")).to_be_visible(timeout=ms))  # choosing it again is harmless
    wait_for_idle(page, timeout=LIVE_TIMEOUT)

    expect(key(page, "side_decision_left")).to_contain_text("Paris", timeout=LIVE_TIMEOUT)
    expect(key(page, "side_decision_right")).to_contain_text(right[:8])
    expect(key(page, "side_left_turn_1")).to_contain_text(left_tag)
    expect(key(page, "side_left_turn_1")).to_contain_text("gives in to Agent 1")
    expect(key(page, "side_left_turn_1")).to_contain_text("slbw01")
    expect(key(page, "side_right_turn_1")).to_contain_text("srbw01")
    expect(key(page, "side_right_turn_2")).to_contain_text(right_tag)
    # Both round-1 columns start in the same round row.
    expect(key(page, "side_round_1").locator(".st-key-side_left_turn_0")).to_have_count(1)
    expect(key(page, "side_round_1").locator(".st-key-side_right_turn_0")).to_have_count(1)
    # Must not happen: a debate's tag shown in the other debate's column.
    expect(key(page, "side_decision_right").locator("..")).not_to_contain_text(left_tag)
    for k in range(3):
        expect(key(page, f"side_right_turn_{k}")).not_to_contain_text(left_tag)
        expect(key(page, f"side_left_turn_{k}")).not_to_contain_text(right_tag)
    expect_no_exception(page)


ACTIONS = ("export_json", "export_md", "export_csv", "handout_md", "handout_html")
# JavaScript: is any element in the button cut (its text wider than its box: an ellipsis)?
CUT = "button => [button, ...button.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1)"


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 720}, {"width": 1440, "height": 900}])
def test_an_opened_debate_shows_full_button_labels_and_deletes_one_annotation(page, server, store, viewport):
    debate_id = run_debate(store, unique("Labels and annotations: which city is the capital?"), "lb")
    turns = store.turns(debate_id)
    mistaken = codebook.annotate(store, debate_id, turns[1].id, "flip", "tagged by mistake")
    kept = codebook.annotate(store, debate_id, turns[1].id, "good point", "kept note")
    page.set_viewport_size(viewport)
    open_transcript(page, server.url, debate_id)
    labels = {}
    for name in ACTIONS:
        button = key(page, name).locator("button").first  # (a button with help is drawn twice)
        expect(button).to_be_visible()
        labels[name] = button.inner_text().strip()
        box = button.bounding_box()
        # Must not happen: a cut label ("Handout (Markdo…") or a button beyond the page's right edge.
        assert not button.evaluate(CUT), f"{name}: label cut to {labels[name]!r} at {viewport}"
        assert box and box["x"] + box["width"] <= viewport["width"], (name, box)
    key(page, "debate_actions").scroll_into_view_if_needed()
    shots = Path(os.environ.get("MADLAB_E2E_ARTIFACTS", server.home.parent))
    page.screenshot(path=str(shots / f"debate_actions_{viewport['width']}x{viewport['height']}.png"))
    assert labels == {"export_json": "Export JSON", "export_md": "Export Markdown", "export_csv": "Export CSV",
                      "handout_md": "Handout · Markdown", "handout_html": "Handout · print"}

    expect(turn(page, 1)).to_contain_text("tagged by mistake")
    turn(page, 1).screenshot(path=str(shots / f"annotated_turn_{viewport['width']}x{viewport['height']}.png"))
    click_until(page, f"unannotate_{mistaken}",
                lambda ms: expect(turn(page, 1)).not_to_contain_text("tagged by mistake", timeout=ms))
    expect(turn(page, 1)).to_contain_text("kept note")
    # Must not happen: the other annotation on the same turn deleted with it.
    assert [a["id"] for a in store.annotations(debate_id)] == [kept]
    expect_no_exception(page)


def test_open_brings_the_debate_into_view_and_a_reload_keeps_it_open(page, server, store):
    page.set_viewport_size({"width": 1280, "height": 720})
    question = unique("In view: which city is the capital of France?")
    target = run_debate(store, question, "iv")
    for _ in range(8):  # newer debates: the target's row is far down the list
        run_debate(store, unique("Listed above it: which river crosses Paris?"), "la")
    open_app(page, server.url, "/Transcripts")
    expect(key(page, f"debate_row_{target[:8]}")).to_be_visible()
    page.mouse.move(640, 300)
    page.mouse.wheel(0, 20_000)  # the page scrolled as far as it goes, as a researcher reading the list does
    key(page, f"open_{target[:8]}").scroll_into_view_if_needed()  # and the list down to its last row
    expect(key(page, f"open_{target[:8]}")).to_be_in_viewport()
    click(page, f"open_{target[:8]}")
    title = key(page, "debate_title")
    expect(title).to_contain_text(question, timeout=LIVE_TIMEOUT)
    wait_for_idle(page, timeout=LIVE_TIMEOUT)
    expect(title).to_be_in_viewport()
    box = title.bounding_box()
    assert box and 0 <= box["y"] and box["y"] + box["height"] <= 720, box
    shots = Path(os.environ.get("MADLAB_E2E_ARTIFACTS", server.home.parent))
    page.screenshot(path=str(shots / "opened_debate_1280x720.png"))
    # Must not happen: the list still on screen above the debate.
    expect(key(page, "debate_list")).not_to_be_visible()
    assert f"open={target}" in page.url

    page.reload()
    wait_for_idle(page, timeout=LIVE_TIMEOUT)
    expect(turn(page, 1)).to_contain_text("ivb", timeout=LIVE_TIMEOUT)
    expect(key(page, "debate_title")).to_contain_text(question)
    # Must not happen: the reload shows the list alone, the debate closed.
    expect(key(page, "debate_list")).not_to_be_visible()

    click(page, "back_to_list")
    expect(key(page, f"debate_row_{target[:8]}")).to_be_visible()
    expect(key(page, "debate_title")).to_have_count(0)
    assert "open=" not in page.url
    expect_no_exception(page)


def test_typing_part_of_a_tag_and_enter_picks_that_tag_and_makes_none(page, server, store):
    debate_id = run_debate(store, unique("Tag prefix: which city is the capital?"), "tp")
    uid = uuid.uuid4().hex[:6]
    existing = f"=SUM(A1) {uid}"
    codebook.add_tag(store, existing)
    before = {t["name"] for t in codebook.tags(store)}
    open_transcript(page, server.url, debate_id)
    field = key(page, "tag_1").locator("input")
    field.click()
    field.press_sequentially(f"=SUM(A1) {uid}"[:5])  # "=SUM(": the start of the tag, as a person types it
    match = page.get_by_role("option", name=existing, exact=True)
    expect(match).to_have_attribute("data-focused", "true")  # the match is highlighted: Enter takes it
    expect(page.get_by_role("option", name=re.compile("^Add"))).to_have_count(0)  # no "Add: =SUM(" offered
    field.press("Enter")
    expect(field).to_have_value(existing)  # Enter took the highlighted codebook tag
    wait_for_idle(page)
    click(page, "annotate_1")
    expect(turn(page, 1)).to_contain_text(existing)
    # Must not happen: a new tag made of the typed prefix (the counts and the filter split in two).
    assert {t["name"] for t in codebook.tags(store)} == before
    assert [a["tag"] for a in store.annotations(debate_id)] == [existing]

    new_tag(page, 2, f"  =sum(a1)   {uid.upper()} ")  # the same name in other case and spacing
    click(page, "annotate_2")
    expect(turn(page, 2)).to_contain_text(f"already has '{existing}'")
    shots = Path(os.environ.get("MADLAB_E2E_ARTIFACTS", server.home.parent))
    turn(page, 2).screenshot(path=str(shots / "new_tag_refused.png"))
    assert {t["name"] for t in codebook.tags(store)} == before and len(store.annotations(debate_id)) == 1
    new_tag(page, 2, f"Sarcasm {uid}")
    click(page, "annotate_2")
    expect(turn(page, 2)).to_contain_text(f"Sarcasm {uid}")
    assert {t["name"] for t in codebook.tags(store)} == before | {f"Sarcasm {uid}"}
    expect_no_exception(page)
