"""Text never reaches out, dollars stay dollars, a long question stays in its box, the speaker stays
in view, and an opened transcript has no invisible or unnamed control (issue 18).

1. A stored debate whose question, personas, replies, moderator message, tag, annotation, poll
   (question and options) and a second debate beside it (Compare) all carry a Markdown image, an
   HTML image and the bat-and-ball dollars: every page (Debate watching it, Transcripts opened,
   Compare in both modes, Presenter, Poll, Models, Experiments with a hostile name) loads, and the
   browser asks nothing of any host but this server; the dollars read literally, no KaTeX is drawn,
   no <img> points anywhere but here.
2. At 1280x720 a live debate with a 20,000-character question: the question's box keeps to ~30 % of
   the window, the latest turn stays in view, and with the box at the newest text (where following
   keeps it) the speaking bubble's header (its name) stays at the box's top as the long turn scrolls.
3. The Presenter shows a 7-player Knight-Knave-Spy puzzle whole, in its own scroll box, the agents'
   columns still starting on the screen.
4. Every focusable element of an opened transcript is visible and has a name of its own.

The stored debates are run here, in the test's process, on scripted models registered in it, into
the server's database; the live one runs in the app on the `hostile_live` script (e2e_scripts.py).
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from e2e_helpers import (LIVE_TIMEOUT, configure_debate, expect, expect_no_exception, expect_status, key,
                         open_debate_page, pick, start, turn, unique, until, wait_for_idle)
from e2e_scripts import words

from mad_core import codebook, polls
from mad_core.config import DebateConfig
from mad_core.controller import Controller
from mad_core.engine import DebateEngine
from mad_core.experiments import storage
from mad_core.experiments.spec import ExperimentConfig
from mad_core.models import ensure_registered
from mad_core.models.scripted import Script, register_script, unregister_script
from mad_core.tasks import kks

pytestmark = pytest.mark.e2e
PIXEL = "![x](http://127.0.0.9:9/pixel.png)"
HTML_IMAGE = '<img src="http://127.0.0.9:9/html.png">'
BAT = "$1.00 more than the ball. The bat costs $1.05"
HOSTILE = f"{PIXEL} {HTML_IMAGE} {BAT}"
PROJECTOR = {"width": 1280, "height": 720}


@pytest.fixture(scope="module", autouse=True)
def providers():
    ensure_registered()


def hostile_reply(messages, info) -> str:
    kind = info["metadata"].get("kind", "discussion")
    if kind == "vote":
        return "1"
    if kind == "extraction":
        return f"{BAT} {PIXEL}"
    return f"{info['metadata'].get('agent')} says {HOSTILE}\nFinal answer: {BAT}"


def hostile_debate(store, question: str) -> str:
    """A finished two-agent debate carrying the hostile text everywhere a person or a model writes."""
    name = f"hostile-{uuid.uuid4().hex[:8]}"
    controller = Controller()

    def replies(messages, info):
        if info["metadata"].get("kind") == "discussion" and info["metadata"].get("agent") == "Agent 1":
            controller.say(f"Moderator: {HOSTILE}")  # applied after this turn
        return hostile_reply(messages, info)

    register_script(name, Script(replies=replies))
    config = DebateConfig.from_dict({
        "question": question, "rounds": 1, "max_rounds": 1, "protocol": "simple_voting",
        "agents": [{"label": f"Agent {i}", "model": f"scripted/{name}", "persona": f"Persona {i}: {HOSTILE}"}
                   for i in (1, 2)]})
    engine = DebateEngine(config, controller=controller, store=store)
    try:
        list(engine.run())
    finally:
        unregister_script(name)
    return engine.debate_id


def watch_requests(page, server) -> list[str]:
    """Every address the page asks for, from now on."""
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    return requested


def assert_nothing_reached_out(page, server, requested: list[str], where: str) -> None:
    """Must not happen: a request to any host but this server, KaTeX drawn, or an <img> pointing out."""
    outside = [url for url in requested if not url.startswith((server.url, "data:", "blob:"))]
    assert not outside, (where, outside)
    expect(page.locator(".katex")).to_have_count(0)
    expect(page.locator('img[src*="127.0.0.9"]')).to_have_count(0)
    expect_no_exception(page)


def visit(page, server, path: str) -> None:
    """Open a page and wait until its script has run (the first metrics load SBERT: slow on a busy machine)."""
    page.goto(server.url + path)
    wait_for_idle(page, timeout=LIVE_TIMEOUT)


def test_hostile_text_is_shown_as_text_on_every_page_and_nothing_is_fetched(page, server, store):
    question = unique(f"Bat and ball: {HOSTILE}")
    debate_id = hostile_debate(store, question)
    other_id = hostile_debate(store, unique(f"Second: {HOSTILE}"))
    tag = f"{PIXEL} tag"
    codebook.add_tag(store, tag, "red")
    codebook.annotate(store, debate_id, store.turns(debate_id)[0].id, tag, f"note {HOSTILE}")
    poll_id = polls.open_poll(store, debate_id, [f"{PIXEL} yes", f"{BAT} no"], question=f"Predict: {PIXEL} {BAT}")
    spec = ExperimentConfig.from_dict({"name": f"Sweep {PIXEL} {BAT}", "task_set": "yes_no", "items": 1,
                                       "seeds": [0], "base": {"rounds": 1, "max_rounds": 1}})
    experiment_id = storage.create_experiment(store, spec)
    requested = watch_requests(page, server)

    # The Debate page watching it: the reply's dollars literal, its images as words, the question as typed.
    visit(page, server, f"/?debate={debate_id}")
    expect(turn(page, 0)).to_contain_text("The bat costs $1.05")
    expect(turn(page, 0)).to_contain_text("[image: x]")
    expect(turn(page, 0)).to_contain_text(HTML_IMAGE)
    expect(turn(page, 0)).to_contain_text(f"Persona 1: {PIXEL}")
    expect(key(page, "debate_question")).to_contain_text(question)
    expect(key(page, "steer_0")).to_contain_text("The bat costs $1.05")
    assert_nothing_reached_out(page, server, requested, "Debate")

    # Transcripts, opened: the same, with the tag chip and the note literal.
    visit(page, server, f"/Transcripts?open={debate_id}")
    expect(turn(page, 1)).to_contain_text("The bat costs $1.05", timeout=LIVE_TIMEOUT)
    expect(turn(page, 0)).to_contain_text(tag)
    expect(turn(page, 0)).to_contain_text(f"note {PIXEL}")
    expect(key(page, "debate_title")).to_contain_text(question[:40])
    assert_nothing_reached_out(page, server, requested, "Transcripts")

    # Compare: the overview, then side by side (the replies and the moderator's message in full).
    visit(page, server, "/Compare")
    pick(page, "compare_ids", debate_id)
    pick(page, "compare_ids", other_id)
    expect(key(page, f"compare_{debate_id[:8]}")).to_contain_text("$1.05", timeout=LIVE_TIMEOUT)
    until(page, key(page, "compare_mode").get_by_text("Side by side").click,
          lambda ms: expect(key(page, "side_by_side")).to_be_visible(timeout=ms))  # choosing it again is harmless
    wait_for_idle(page, timeout=LIVE_TIMEOUT)
    expect(key(page, "side_left_turn_0")).to_contain_text("The bat costs $1.05", timeout=LIVE_TIMEOUT)
    expect(key(page, "side_left_steer_0")).to_contain_text("[image: x]")
    assert_nothing_reached_out(page, server, requested, "Compare")

    # Presenter (replay, one step on) with the poll's question in its band.
    visit(page, server, f"/Presenter?replay={debate_id}")
    expect(key(page, "presenter_question")).to_contain_text(question)
    expect(key(page, "poll_stage")).to_contain_text(f"Predict: {PIXEL} {BAT}")
    # A key pressed while the page still draws can be lost (classroom e2e): pressed again while the
    # first agent's column does not show the turn yet (the columns keep it after later steps).
    until(page, lambda: page.locator("body").press("ArrowRight"),
          lambda ms: expect(key(page, "presenter_agent_0")).to_contain_text("The bat costs $1.05", timeout=ms),
          again=lambda: "The bat costs $1.05" not in key(page, "presenter_agent_0").inner_text())
    assert_nothing_reached_out(page, server, requested, "Presenter")

    # The students' Poll page: the options are radio labels, shown as typed.
    visit(page, server, f"/Poll?poll={poll_id}")
    expect(key(page, "poll_choice")).to_contain_text(f"{PIXEL} yes")
    expect(key(page, "poll_choice")).to_contain_text(f"{BAT} no")
    assert_nothing_reached_out(page, server, requested, "Poll")

    visit(page, server, "/Models")
    expect(key(page, "model_table")).to_be_visible()
    assert_nothing_reached_out(page, server, requested, "Models")

    visit(page, server, "/Experiments")
    key(page, f"exp_open_{experiment_id[:8]}").locator("button").first.click()
    expect(page.get_by_role("heading", name=f"Sweep {PIXEL} {BAT}")).to_be_visible()
    assert_nothing_reached_out(page, server, requested, "Experiments")
    assert any(url.startswith(server.url) for url in requested)  # the watcher did see the pages' own requests


def test_a_20000_character_question_stays_in_its_box_and_the_speaker_stays_in_view(page, server):
    page.set_viewport_size(PROJECTOR)
    open_debate_page(page, server.url)
    question = unique("# Long question\n" + "\n".join(f"Line {i}: " + "word " * 40 for i in range(100)))[:20_000]
    configure_debate(page, question, ["scripted/hostile_live"] * 2)
    start(page)
    late = words("hlb", 400)
    expect(turn(page, 1)).to_contain_text(late[300], timeout=LIVE_TIMEOUT)  # ~5 s of its text still to come
    expect_status(page, "running")
    expect(key(page, "follow_debate").locator("input")).to_be_checked()
    # The reader at the newest text, where following keeps the box. (Streamlit's autoscroll itself can lose
    # the bottom on a busy machine at the debate's start: that is its own timing, not what is checked here.)
    key(page, "transcript").evaluate("b => new Promise(done => { b.scrollTop = b.scrollHeight; "
                                     "requestAnimationFrame(() => requestAnimationFrame(done)); })")
    geometry = page.evaluate("""() => {
        const rect = s => { const e = document.querySelector(s); if (!e) return null;
                            const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
        const q = document.querySelector('.st-key-debate_question');
        return {question: rect('.st-key-debate_question'), box: rect('.st-key-transcript'),
                head: rect('.st-key-turn_head_1'), turn: rect('.st-key-turn_1'),
                question_scrolls: q.scrollHeight > q.clientHeight + 100,
                headings: document.querySelectorAll('.st-key-debate_question h1, .st-key-debate_question h2').length};
    }""")
    print(geometry)
    shot = Path(os.environ.get("MADLAB_E2E_ARTIFACTS", server.home.parent)) / "long_question_1280x720.png"
    page.screenshot(path=str(shot))
    print(f"\nscreenshot: {shot}")
    # The question keeps to its box (~30 % of 720 px) and scrolls inside; no Markdown heading from "# ...".
    assert geometry["question"]["bottom"] - geometry["question"]["top"] <= 0.3 * 720 + 4, geometry
    assert geometry["question_scrolls"] and geometry["headings"] == 0, geometry
    # The latest text stays in view: the streaming turn's end is inside the window and the box.
    assert geometry["turn"]["bottom"] <= 720 and geometry["box"]["bottom"] <= 720, geometry
    # The speaker's header sticks to the top of the box while its long turn scrolls under it.
    head, box = geometry["head"], geometry["box"]
    assert box["top"] - 1 <= head["top"] <= box["top"] + 40 and head["bottom"] <= box["bottom"], geometry
    # Must not happen (the case sticking is for): the turn's start is scrolled out of the box.
    assert geometry["turn"]["top"] < box["top"], geometry
    expect(key(page, "turn_head_1")).to_contain_text("Agent 2")
    expect(key(page, "turn_head_1")).to_be_in_viewport()
    expect_no_exception(page)


def test_the_presenter_shows_a_whole_kks_puzzle_in_its_own_box(page, server, store, script):
    page.set_viewport_size(PROJECTOR)
    puzzle = kks.generate(7, 3)
    model, _ = script(hostile_reply)
    config = DebateConfig.from_dict({"question": puzzle.text, "rounds": 1, "max_rounds": 1,
                                     "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)]})
    engine = DebateEngine(config, store=store)
    list(engine.run())
    visit(page, server, f"/Presenter?replay={engine.debate_id}")
    box = key(page, "presenter_question")
    expect(box.locator(".st-key-presenter_question_long")).to_be_visible()
    last = f"Player statement: {puzzle.statement_texts()[-1]}"
    expect(box).to_contain_text(last)  # in the box's scrollable content
    expect(box).to_contain_text(f"Player name: {puzzle.names[-1]}")
    expect(box.locator("p").first).to_have_css("font-size", "17.6px")  # 1.1rem: smaller than a short one's 2rem
    sizes = box.evaluate("""b => ({top: b.getBoundingClientRect().top, height: b.clientHeight,
                                   scroll: b.scrollHeight,
                                   font: parseFloat(getComputedStyle(b.querySelector('p')).fontSize)})""")
    assert sizes["scroll"] > sizes["height"] and sizes["height"] <= 0.3 * 720 + 4, sizes  # its own scroll box
    # The agents' columns still start on the screen, below the question.
    columns = key(page, "presenter_agent_0").bounding_box()
    assert columns is not None and sizes["top"] + sizes["height"] <= columns["y"] < 720 - 100, (columns, sizes)
    # Must not happen: the puzzle's "---" lines drawn as rules or headings.
    expect(box.locator("hr, h1, h2, h3")).to_have_count(0)
    expect_no_exception(page)


FOCUSED = """() => {
    const e = document.activeElement;
    if (!e || e === document.body) return null;
    const r = e.getBoundingClientRect();
    let opacity = 1;
    for (let p = e; p && p.nodeType === 1; p = p.parentElement) opacity *= parseFloat(getComputedStyle(p).opacity);
    const keyed = e.closest('[class*="st-key-"]');
    return {tag: e.tagName, key: keyed ? keyed.className.match(/st-key-(\\S+)/)[1] : null,
            testid: e.getAttribute('data-testid'), width: r.width, height: r.height, opacity,
            visible: e.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}) && r.width >= 4 && r.height >= 4
                     && opacity > 0.3 && r.bottom > 0 && r.right > 0};
}"""
SCROLL_BOXES = {"MAIN", "DIV", "SECTION"}  # a scrolling box the browser lets the keyboard reach (no control)
ACTING = {"button", "combobox", "textbox", "slider", "checkbox", "radio", "switch", "DisclosureTriangle"}


def tab_walk(page) -> list[dict]:
    """Every element the Tab key reaches, in order, as it is when focused, with the role and the
    accessible name Chromium gives it (its accessibility tree, through the DevTools protocol)."""
    cdp = page.context.new_cdp_session(page)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    reached: list[dict] = []
    for _ in range(400):
        page.keyboard.press("Tab")
        now = page.evaluate(FOCUSED)
        if now is None:
            continue
        focused = cdp.send("Runtime.evaluate", {"expression": "document.activeElement"})["result"]["objectId"]
        node = cdp.send("Accessibility.getPartialAXTree", {"objectId": focused, "fetchRelatives": False})["nodes"][0]
        now.update(role=node.get("role", {}).get("value"), name=" ".join(str(node.get("name", {}).get("value", "")).split()))
        if reached and (now["key"], now["name"], now["tag"]) == (reached[0]["key"], reached[0]["name"], reached[0]["tag"]):
            break  # round the page once
        reached.append(now)
    return reached


def test_an_opened_transcript_has_no_invisible_or_unnamed_control(page, server, store):
    question = unique("Accessible transcript: what does the ball cost?")
    debate_id = hostile_debate(store, question)
    turns = store.turns(debate_id)
    first = codebook.annotate(store, debate_id, turns[0].id, "good point", "first note")
    codebook.annotate(store, debate_id, turns[0].id, "flip", "second note")
    page.goto(f"{server.url}/Transcripts?open={debate_id}")
    expect(turn(page, 1)).to_contain_text("$1.05", timeout=LIVE_TIMEOUT)
    expect(key(page, "plot_timeline").locator(".modebar-btn").first).to_be_attached(timeout=LIVE_TIMEOUT)
    wait_for_idle(page, timeout=LIVE_TIMEOUT)
    reached = tab_walk(page)
    controls = [r for r in reached if r["tag"] not in SCROLL_BOXES]
    print([(r["role"], r["name"]) for r in controls])
    assert len(controls) > 30 and any(r["key"] == "fork_1" for r in controls), controls  # the walk went round
    # Must not happen: a stop for the keyboard that the eye cannot see (a heading's anchor, a hidden copy).
    hidden = [r for r in reached if not r["visible"]]
    assert not hidden, hidden
    # Every control has a name of its own that says what it does: no icon's ligature, no bare "HTML".
    names = [r["name"] for r in controls]
    assert all(names), [r for r in controls if not r["name"]]
    assert not {n.lower() for n in names} & {"delete", "html", "download", "link to heading"}, names
    # ... and no two controls that act (buttons, fields, disclosures) share one (links to one address may)
    acting = [r["name"] for r in controls if r["role"] in ACTING]
    repeated = sorted({n for n in acting if acting.count(n) > 1})
    assert not repeated, repeated
    assert "show prompt of turn 2" in names
    assert "Delete annotation 1 on turn 1 (good point)" in names and "Delete annotation 2 on turn 1 (flip)" in names
    assert "Download the vote chart as HTML" in names and "Download the vote chart as PNG" in names
    assert "Annotate turn 2" in names and "Fork at turn 2" in names
    # The words that make the names distinct are for screen readers: the buttons still read "Annotate", "Fork".
    assert key(page, "annotate_1").locator("button").first.inner_text().split("\n")[0] == "Annotate"
    delete = key(page, f"unannotate_{first}").locator("button").first
    assert delete.bounding_box()["width"] < 120  # an icon button, its words hidden from the eye
    expect_no_exception(page)
