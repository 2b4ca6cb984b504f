"""The Coding page (pages/8_Coding.py, madlab_ui/coding.py) in real Chromium (issue 22).

1. Two coders, blind, then reveal: Ann (one browser context) makes a blind project over a stored
   debate through the page's widgets, adds a code in the Codebook tab and codes a passage of the
   hostile turn with the word slider; Bob (a second context: another browser session) opens the
   project, cannot take the name "Ann" (an error, no coding controls) and codes the same turn whole;
   Ann reveals, and after a reload Bob sees her coding. Must not happen: Bob sees Ann's coding (its
   line or its highlight) before she reveals.
2. The turn is drawn literally with its highlight: the coded turn reads `$1.05`, `<b>bold?</b>`,
   `:red-background[escape]` and `a ] bracket` as text, and the passage is one coloured span whose
   text is exactly the stored quote. Must not happen: the turn's text becomes markup (a `<b>`
   element, KaTeX, a second directive).
3. Agreement in the browser: Ann picks both coders in the Agreement tab and presses Compute; the table
   has a row per code and "overall" with a number of units, and its CSV download has the figures'
   columns and the code's row. Must not happen: a table before Compute is pressed.
   The chosen tab stays chosen after Compute (and after Add code in the Codebook tab): must not
   happen: the page jumping back to the Code tab with the table out of sight.
4. Delete asks first and can be undone: Bob's first Delete click deletes nothing (the database still
   holds the coding), Confirm takes it off the page and out of the database, Undo brings it back to
   both. Must not happen: the first click deletes.

The debates are written straight into the server's database (the `store` fixture) before the pages
open; scenarios 2-4 also make their project, code and codings there through mad_core.qda, so each
test stands alone. Every wait is an `expect()` or a wait for the end of the script run an action
caused (`rerun`), 30 s at most (the machine is small and shared); nothing sleeps.
"""
from __future__ import annotations

import csv
import io
import re
import uuid
from typing import Callable

import pytest
from conftest import browser_page
from e2e_helpers import click, expect, expect_no_exception, fill, key, open_app, open_disclosure, set_text, \
    unique, wait_for_idle
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from mad_core.events import DebateFinished, DecisionReached, Turn, TurnFinished
from mad_core.qda import coding, storage
from madlab_ui.coding import PASSAGE

pytestmark = pytest.mark.e2e
T = 30_000  # ms: every expect's timeout here
HOSTILE = "The bat costs $1.05 and the ball $0.05 <b>bold?</b> :red-background[escape] a ] bracket"
FIRST, LAST = 3, 11  # the passage coded: word 4 ("$1.05") to word 12 ("]")
WORDS = [m.span() for m in re.finditer(r"\S+", HOSTILE)]
QUOTE = HOSTILE[WORDS[FIRST][0]:WORDS[LAST][1]]
HOSTILE_TURN = 1  # the debate's second turn carries the hostile text
CELL = '[role="gridcell"]'  # a cell of st.dataframe's accessible table (the grid itself is a canvas)


@pytest.fixture(autouse=True)
def patient(page):
    """Generous waits: the page fixture set 20 s; a busy 2-core machine may need more."""
    expect.set_options(timeout=T)
    page.set_default_timeout(T)


def turn_of(seq: int, agent: str, content: str) -> Turn:
    return Turn(id=f"t{seq}", seq=seq, round=1, agent=agent, kind="discussion", model="scripted/coding",
                prompt=[], content=content, started_at=100.0 + seq, finished_at=101.0 + seq)


def stored_debate(store) -> str:
    """A finished debate of three turns (Agent 1, Agent 2, Agent 1) in the server's database, the
    second one hostile; returns its id."""
    debate_id = uuid.uuid4().hex
    store.create_debate(debate_id, {"question": unique("Coding: what does the ball cost?"),
                                    "protocol": "simple_voting", "paradigm": "memory",
                                    "agents": [{"label": f"Agent {i}", "model": "scripted/coding"} for i in (1, 2)]})
    texts = ("The ball costs five cents, I think.", HOSTILE, "Agreed: five cents.")
    for seq, (agent, text) in enumerate(zip(("Agent 1", "Agent 2", "Agent 1"), texts)):
        store.record(TurnFinished(turn=turn_of(seq, agent, text)), debate_id)
    store.record(DecisionReached(round=1, protocol="simple_voting", answer="$0.05", winner_agent="Agent 1",
                                 winner_index=0), debate_id)
    store.record(DebateFinished(status="finished", answer="$0.05"), debate_id)
    return debate_id


def seeded_project(store, *, blind: bool = True) -> tuple[str, str, str]:
    """A project led by Ann over a new stored debate with the code "Price" (no browser holds Ann
    yet: the first session that names itself Ann does); returns (project, debate, code) ids."""
    debate_id = stored_debate(store)
    project_id = coding.create_project(store, unique("Seeded study"), "Ann", blind=blind, debate_ids=[debate_id])
    code_id = coding.add_code(store, project_id, "Ann", "Price")
    return project_id, debate_id, code_id


def coder_id(store, project_id: str, name: str) -> str:
    return next(c["id"] for c in storage.coder_rows(store, project_id) if c["name"] == name)


def codings_of(store, project_id: str, name: str, deleted: bool = False) -> list[dict]:
    return storage.coding_rows(store, project_id, coder_ids=[coder_id(store, project_id, name)], deleted=deleted)


# ----- driving the page -----------------------------------------------------------------------------
_WATCH = """() => {
    // Seen running, even when "running" and "notRunning" came in one batch of mutations (a fast run):
    // the records' old values say so where the current value no longer does.
    const app = document.querySelector('[data-testid="stApp"]');
    window.__codingRan = false;
    new MutationObserver((records, observer) => {
        if (app.dataset.testScriptState === 'running' || records.some((r) => r.oldValue === 'running')) {
            window.__codingRan = true;
            observer.disconnect();
        }
    }).observe(app, {attributes: true, attributeOldValue: true, attributeFilter: ['data-test-script-state']});
}"""
_RAN = """() => window.__codingRan === true
    && document.querySelector('[data-testid="stApp"]').dataset.testScriptState === 'notRunning'"""


def rerun(page, action: Callable[[], object]) -> None:
    """Do `action` (a click or an Enter that makes Streamlit rerun the page) and wait until the run it
    caused has ended. `wait_for_idle` alone may answer before that run has begun, and a click made in
    that gap can be lost (seen here: Compute pressed right after picking a coder did nothing)."""
    wait_for_idle(page)
    page.evaluate(_WATCH)
    action()
    try:
        page.wait_for_function(_RAN, timeout=T)
    except PlaywrightTimeoutError:  # no run seen (a loaded machine, an action that changed nothing): the
        wait_for_idle(page)         # expect() after each action still checks what the action must have done


def press(page, name: str) -> None:
    """Click the button keyed `name` and wait for the run it causes."""
    rerun(page, lambda: click(page, name))


def type_in(page, name: str, value: str) -> None:
    """Type `value` into the text field keyed `name`, commit it (Enter) and wait for the run."""
    rerun(page, lambda: set_text(page, name, value))


def open_coding(page, url: str, name: str) -> None:
    """The Coding page, this browser naming itself `name`."""
    open_app(page, url, "/Coding")
    expect(key(page, "coding_coder")).to_be_visible()
    type_in(page, "coding_coder", name)


def open_project(page, project_id: str) -> None:
    press(page, f"coding_open_{project_id[:8]}")
    expect(page.get_by_role("tab", name="Code", exact=True)).to_be_visible()


def tab(page, name: str) -> None:
    """Choose a tab (the page keeps the choice in its session: choosing one runs the page)."""
    chosen = page.get_by_role("tab", name=name, exact=True)
    if chosen.get_attribute("aria-selected") != "true":
        rerun(page, chosen.click)
    expect(chosen).to_have_attribute("aria-selected", "true")


def choose_option(page, name: str, label: str, typed: str | None = None) -> None:
    """Add the option shown as `label` (or the one whose label contains `typed`, typed to find it) to the
    multiselect keyed `name`, then close its list. A rerun landing while the list is open may close it
    and take the typed text, or redraw the field just as the option is clicked (seen on a loaded machine:
    the option never reached the field): then the whole pick is done again (3 tries)."""
    field = key(page, name).locator("input")
    option = page.get_by_role("option", name=label, exact=True) if typed is None else \
        page.get_by_role("option", name=re.compile(re.escape(typed)))
    for attempt in range(3):
        try:
            field.click()
            field.fill(typed or label)
            option.first.wait_for(timeout=10_000)
            rerun(page, lambda: option.first.click())
            field.press("Escape")
            expect(key(page, name)).to_contain_text(typed or label, timeout=10_000)
            return
        except (PlaywrightTimeoutError, AssertionError):
            if attempt == 2:
                raise
            wait_for_idle(page)


def suffix(debate_id: str, index: int = HOSTILE_TURN) -> str:
    return f"{debate_id[:8]}_{index}"


def code_passage(page, s: str, code: str, first: int, last: int, quote: str) -> None:
    """Code words `first`..`last` of turn `s` with `code`: Passage, then the slider's two thumbs moved
    by keyboard from (0, last word) until the page's preview shows `quote`."""
    choose_option(page, f"coding_codes_{s}", code)
    rerun(page, lambda: key(page, f"coding_scope_{s}").get_by_text(PASSAGE, exact=True).click())
    thumbs = key(page, f"coding_span_{s}").get_by_role("slider")
    expect(thumbs).to_have_count(2)
    for _ in range(first):
        thumbs.nth(0).press("ArrowRight")
    for _ in range(len(WORDS) - 1 - last):
        thumbs.nth(1).press("ArrowLeft")
    expect(key(page, f"coding_preview_{s}").locator('[data-testid="stText"]')).to_have_text(quote)
    wait_for_idle(page)  # the run that drew this preview has begun: this waits for its end
    press(page, f"coding_apply_{s}")
    expect(key(page, "coding_message")).to_contain_text("Coded the passage with 1 code(s)")


def code_whole(page, s: str, code: str) -> None:
    choose_option(page, f"coding_codes_{s}", code)
    press(page, f"coding_apply_{s}")
    expect(key(page, "coding_message")).to_contain_text("Coded the whole turn with 1 code(s)")


def highlights(page, s: str):
    """The coloured passages Streamlit drew for `:colour-background[...]` in turn `s`'s text."""
    return key(page, f"coding_text_{s}").locator(".stMarkdownColoredBackground")


# ----- 1. two coders, blind, then reveal --------------------------------------------------------------
def test_two_coders_blind_then_the_lead_reveals(page, browser, server, store, request):
    debate_id = stored_debate(store)
    s = suffix(debate_id)
    project_name = unique("Price study")
    open_coding(page, server.url, "Ann")
    open_disclosure(page, "coding_new")
    choose_option(page, "coding_new_debates", "", typed=debate_id[:8])
    fill(page, "coding_new_name", project_name)  # committed by the Create click
    press(page, "coding_create")
    expect(key(page, "coding_message")).to_contain_text("Created the project")
    project = next(p for p in storage.projects(store) if p["name"] == project_name)
    assert (project["lead"], project["blind"], storage.debate_ids(store, project["id"])) == ("Ann", 1, [debate_id])

    tab(page, "Codebook")
    page.locator("summary", has_text="Add a code").click()
    type_in(page, "coding_code_name", "Price")
    press(page, "coding_code_add")
    expect(key(page, "coding_codebook_tree")).to_contain_text("Price")
    tab(page, "Code")
    code_passage(page, s, "Price", FIRST, LAST, QUOTE)
    expect(highlights(page, s)).to_have_count(1)
    [ann] = codings_of(store, project["id"], "Ann")
    assert (ann["start"], ann["end"], ann["quote"], ann["turn_id"]) == (WORDS[FIRST][0], WORDS[LAST][1], QUOTE, "t1")

    with browser_page(browser, server, request) as bob:
        expect.set_options(timeout=T)
        bob.set_default_timeout(T)
        open_coding(bob, server.url, "Bob")
        open_project(bob, project["id"])
        expect(key(bob, "coding_blind")).to_contain_text("until Ann reveals them")
        expect(key(bob, f"coding_text_{s}")).to_contain_text("bracket")
        # Must not happen: Ann's coding on Bob's page before the reveal, as a highlight or as its line.
        expect(highlights(bob, s)).to_have_count(0)
        expect(key(bob, f"coding_turn_{s}")).not_to_contain_text("Ann")

        type_in(bob, "coding_coder", "Ann")  # Bob tries the lead's name: refused, no controls
        expect(bob.get_by_text(re.compile("another coder's name"))).to_be_visible()
        expect(key(bob, f"coding_apply_{s}")).to_have_count(0)
        type_in(bob, "coding_coder", "Bob")
        expect(key(bob, f"coding_apply_{s}")).to_be_visible()
        code_whole(bob, s, "Price")
        [whole] = codings_of(store, project["id"], "Bob")
        assert (whole["start"], whole["end"], whole["quote"]) == (0, len(HOSTILE), HOSTILE)
        expect(key(bob, f"coding_turn_{s}")).not_to_contain_text("Ann")

        press(page, "coding_reveal")
        expect(key(page, "coding_message")).to_contain_text("Revealed")
        expect(key(page, "coding_blind")).to_have_count(0)

        bob.reload()
        wait_for_idle(bob)
        expect(key(bob, "coding_coder").locator("input")).to_have_value("Bob")  # the reload keeps the name
        open_project(bob, project["id"])
        expect(key(bob, "coding_blind")).to_have_count(0)
        expect(key(bob, f"coding_turn_{s}")).to_contain_text("Ann")
        expect(key(bob, f"coding_turn_{s}")).to_contain_text(QUOTE)
        # Bob may delete his own coding, never Ann's.
        expect(key(bob, f"coding_delete_coding_{whole['id'][:8]}")).to_be_visible()
        expect(key(bob, f"coding_delete_coding_{ann['id'][:8]}")).to_have_count(0)
        expect_no_exception(bob)
    expect_no_exception(page)


# ----- 2. the turn drawn literally, with its highlight ------------------------------------------------
def test_the_coded_turn_is_drawn_literally_with_its_passage_highlighted(page, server, store):
    project_id, debate_id, code_id = seeded_project(store)
    ann = coder_id(store, project_id, "Ann")
    coding.apply_code(store, project_id, ann, debate_id, "t1", code_id, WORDS[FIRST][0], WORDS[LAST][1])
    s = suffix(debate_id)
    open_coding(page, server.url, "Ann")
    open_project(page, project_id)
    text = key(page, f"coding_text_{s}")
    for literal in ("$1.05", "$0.05", "<b>bold?</b>", ":red-background[escape]", "a ] bracket"):
        expect(text).to_contain_text(literal)
    marked = highlights(page, s)
    expect(marked).to_have_count(1)
    expect(marked).to_have_text(QUOTE)
    assert marked.text_content() == QUOTE  # exactly, every space and sign
    colour = marked.evaluate("e => getComputedStyle(e).backgroundColor")
    assert colour not in ("", "transparent", "rgba(0, 0, 0, 0)"), colour
    # Must not happen: the turn's text as markup (a <b> element, KaTeX, another coloured span).
    expect(key(page, f"coding_turn_{s}").locator("b")).to_have_count(0)
    expect(key(page, f"coding_turn_{s}").locator(".katex")).to_have_count(0)
    expect(key(page, f"coding_turn_{s}").locator(".stMarkdownColoredText")).to_have_count(1)  # the code's dot only
    expect(highlights(page, suffix(debate_id, 0))).to_have_count(0)
    expect_no_exception(page)


# ----- 3. agreement ------------------------------------------------------------------------------------
def agreement_project(store) -> str:
    """A seeded project where Ann coded turns 0 and 1 and Bob turns 1 and 2 with "Price"."""
    project_id, debate_id, code_id = seeded_project(store)
    ann = coder_id(store, project_id, "Ann")
    bob = coding.join(store, project_id, "Bob")
    for who, turns in ((ann, ("t0", "t1")), (bob, ("t1", "t2"))):
        for turn_id in turns:
            coding.apply_code(store, project_id, who, debate_id, turn_id, code_id)
    return project_id


def pick_coders(page, url: str, project_id: str) -> None:
    """Ann opens the project's Agreement tab and picks both coders."""
    open_coding(page, url, "Ann")
    open_project(page, project_id)
    tab(page, "Agreement")
    choose_option(page, "coding_agree_coders", "Ann")
    choose_option(page, "coding_agree_coders", "Bob")


def compute(page) -> None:
    press(page, "coding_agree_compute")
    expect(key(page, "coding_message")).to_contain_text("Computed the agreement of 2 coders over turn units")


def test_agreement_is_computed_on_compute_and_downloads_as_csv(page, server, store):
    project_id = agreement_project(store)
    pick_coders(page, server.url, project_id)
    # Must not happen: figures before Compute is pressed.
    expect(key(page, "coding_agree_table")).to_have_count(0)
    compute(page)
    table = key(page, "coding_agree_table")
    expect(table).to_be_visible()
    expect(table).to_contain_text("Agreement of Ann, Bob")
    expect(table).to_contain_text("unit: turn")
    rows = table.locator('[role="row"]')  # the grid's (visually hidden) accessible table: a header row, then one per line
    expect(rows).to_have_count(3)
    for name in ("Price", "overall"):
        cells = rows.filter(has=page.locator(CELL, has_text=re.compile(rf"^{name}$"))).locator(CELL)
        expect(cells.nth(1)).to_have_text("3")  # n units: the debate's three turns
        expect(cells.nth(3)).to_have_text(re.compile(r"^-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\]$"))  # Cohen's κ

    with page.expect_download() as download:
        click(page, "coding_agree_csv")
    assert download.value.suggested_filename == f"agreement-{project_id[:8]}-turn.csv"
    records = list(csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
    assert {"code", "n_units", "percent_agreement", "cohen_kappa"} <= set(records[0])
    by_code = {row["code"]: row for row in records}
    assert set(by_code) == {"Price", "overall"}
    assert (by_code["Price"]["n_units"], by_code["Price"]["coders"]) == ("3", "Ann; Bob")
    assert float(by_code["Price"]["percent_agreement"]) == pytest.approx(1 / 3)  # they agree on turn 1 only
    assert float(by_code["Price"]["cohen_kappa"]) == pytest.approx(-0.5)
    expect_no_exception(page)


def test_the_agreement_tab_stays_chosen_after_compute(page, server, store):
    pick_coders(page, server.url, agreement_project(store))
    compute(page)
    # Must not happen: Compute sends the person back to the Code tab, its table out of sight (the tabs
    # are keyed: the message line drawn above them after an action no longer makes them new tabs).
    expect(page.get_by_role("tab", name="Agreement", exact=True)).to_have_attribute("aria-selected", "true",
                                                                                      timeout=5_000)
    expect(key(page, "coding_agree_table")).to_be_visible(timeout=5_000)


# ----- 4. delete asks first, undo brings it back ---------------------------------------------------------
def test_deleting_a_coding_asks_first_and_undo_brings_it_back(page, server, store):
    project_id, debate_id, code_id = seeded_project(store)
    bob = coding.join(store, project_id, "Bob")
    coding_id = coding.apply_code(store, project_id, bob, debate_id, "t1", code_id)
    s, mine = suffix(debate_id), coding_id[:8]
    open_coding(page, server.url, "Bob")
    open_project(page, project_id)
    expect(highlights(page, s)).to_have_text(HOSTILE)

    press(page, f"coding_delete_coding_{mine}")
    expect(key(page, f"coding_confirm_coding_{mine}")).to_be_visible()
    expect(key(page, f"coding_cancel_coding_{mine}")).to_be_visible()
    # Must not happen: the first click deletes.
    assert [c["id"] for c in codings_of(store, project_id, "Bob")] == [coding_id]
    expect(highlights(page, s)).to_have_count(1)

    press(page, f"coding_confirm_coding_{mine}")
    expect(key(page, "coding_message")).to_contain_text("Deleted coding Price")
    expect(key(page, f"coding_delete_coding_{mine}")).to_have_count(0)
    expect(highlights(page, s)).to_have_count(0)
    expect(key(page, f"coding_turn_{s}")).not_to_contain_text("Bob")
    assert codings_of(store, project_id, "Bob") == []
    assert [c["id"] for c in codings_of(store, project_id, "Bob", deleted=True)] == [coding_id]

    press(page, "coding_undo")
    expect(key(page, "coding_message")).to_contain_text("Brought back coding Price")
    expect(key(page, f"coding_delete_coding_{mine}")).to_be_visible()
    expect(highlights(page, s)).to_have_text(HOSTILE)
    expect(key(page, "coding_undo")).to_have_count(0)
    assert [c["id"] for c in codings_of(store, project_id, "Bob")] == [coding_id]
    expect_no_exception(page)


# ----- 5. a passage selected with the mouse ------------------------------------------------------------------
_SELECT = """(box, [start, end]) => {
    // Select code points start..end of the box's text (as a person dragging over it would), then let go.
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    const at = [];  // at[k]: [text node, UTF-16 offset] where code point k begins; the last entry is the end
    let last = null;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        let unit = 0;
        for (const ch of node.data) { at.push([node, unit]); unit += ch.length; }
        last = node;
    }
    at.push([last, last.data.length]);
    const range = document.createRange();
    range.setStart(at[start][0], at[start][1]);
    range.setEnd(at[end][0], at[end][1]);
    const selection = document.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    box.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
}"""


def test_a_passage_selected_with_the_mouse_is_coded_at_its_code_point_offsets(page, server, store):
    """After an emoji (two UTF-16 units, one Python character) and a highlighted passage, the selected
    words are coded at Python's offsets with their exact quote. Must not happen: the offsets shifted by
    the emoji, or the turn's markup run (its `<b>` stays text inside the box)."""
    project_id, debate_id, code_id = seeded_project(store)
    text = "Cost 😀 of <b>the</b> bat: $1.05, so the ball is $0.05."
    debate = stored_debate(store)
    store.record(TurnFinished(turn=turn_of(9, "Agent 2", text)), debate)
    coding.add_debates(store, project_id, [debate], "Ann")
    ann = coding.join(store, project_id, "Ann")
    coding.apply_code(store, project_id, ann, debate, "t9", code_id, 0, 4)  # "Cost": a highlighted piece before
    s = suffix(debate, 3)
    start = text.index("the</b> bat")
    end = start + len("the</b> bat: $1.05")
    open_coding(page, server.url, "Ann")
    open_project(page, project_id)
    field = key(page, "coding_debate").locator("input")
    field.click()  # opens the list, typing narrows it (no run of the page yet)
    field.fill(debate[:8])
    rerun(page, lambda: page.get_by_role("option", name=re.compile(debate[:8])).first.click())
    choose_option(page, f"coding_codes_{s}", "Price")
    rerun(page, lambda: key(page, f"coding_scope_{s}").get_by_text("Selected text", exact=True).click())
    box = key(page, f"coding_pick_{s}").locator('[data-testid="madlab-passage"]')
    expect(box).to_have_text(text)
    expect(box.locator("b")).to_have_count(0)
    expect(box.locator("mark")).to_have_text("Cost")
    rerun(page, lambda: box.evaluate(_SELECT, [start, end]))
    expect(key(page, f"coding_preview_{s}").locator('[data-testid="stText"]')).to_have_text(text[start:end])
    press(page, f"coding_apply_{s}")
    expect(key(page, "coding_message")).to_contain_text("Coded the passage with 1 code(s)")
    made = [c for c in codings_of(store, project_id, "Ann") if c["turn_id"] == "t9" and c["start"] != 0]
    assert [(c["start"], c["end"], c["quote"]) for c in made] == [(start, end, "the</b> bat: $1.05")]
    expect_no_exception(page)
