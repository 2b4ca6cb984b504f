"""The handout on paper: captions that say how to read a chart (not its title again, not "hover"),
each chart and its caption one unbreakable box, and long answers cut at a word with "…"."""
from __future__ import annotations

import re

import pytest

from mad_core import handout
from mad_core.config import DebateConfig
from mad_core.engine import DebateEngine
from mad_core.metrics.report import debate_report
from mad_core.store import Store
from tests.builders import config, run

LONG = ("The truth about how a number's prime factorization relates to its square is an interesting topic - it "
        "shows that certain odd numbers are indeed squares but also something else entirely different here")


def embed(texts):
    return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]


@pytest.fixture
def debate(script, roles):
    model, _ = script(roles(answers={"Agent 1": LONG, "Agent 2": "No, 91 = 7 x 13"}, votes={"Agent 1": "1", "Agent 2": "2"}))
    store = Store()
    cfg = config(model, 2, question="Is 91 a prime number?", rounds=1, max_rounds=1, protocol="simple_voting",
                 reference="No")
    return store, run(cfg, store=store).engine.debate_id


@pytest.fixture
def drawn(monkeypatch):
    """The figures handed to kaleido (as the handout prints them); each drawn as a tiny SVG."""
    figs: list = []

    def draw(given, image_format="svg", widths=None):
        figs.extend(handout.print_figure(fig) for fig in given)
        return [b"<svg/>"] * len(given), None

    monkeypatch.setattr(handout, "figure_images", draw)
    return figs


def test_each_chart_is_one_box_with_a_caption_that_explains_it(debate, drawn):
    store, debate_id = debate
    page = handout.handout_html(store, debate_id, embed=embed)
    figures = re.findall(r'<figure class="chart( wide)?"><img src="data:image/svg\+xml;base64,[^"]+" alt="([^"]*)">'
                         r"<figcaption>([^<]*)</figcaption></figure>", page)
    assert [alt for _, alt, _ in figures] == ["Answer similarity (SBERT)", "Entropy of answers", "Agreement",
                                              "Accuracy", "Votes", "Answer timeline"]
    assert [caption for _, _, caption in figures] == [handout.html.escape(handout.PRINT_CAPTIONS[k]) for k in (
        "plot_diversity", "plot_entropy", "plot_agreement", "plot_accuracy", "plot_votes", "plot_timeline")]
    # Must not happen: a caption that repeats its chart's title, or one about hovering (paper has no hover).
    assert all(caption.strip() and alt not in caption for _, alt, caption in figures)
    assert "hover" not in page.lower()
    # the chart and its caption are one box that a page break cannot split
    css = page[page.index("<style>"):page.index("</style>")]
    rule = re.search(r"figure\.chart \{([^}]*)\}", css).group(1)
    assert "display: inline-block" in rule and "break-inside: avoid" in rule
    md = handout.handout_markdown(store, debate_id, embed=embed)
    assert f"\n\n*{handout.PRINT_CAPTIONS['plot_timeline']}*\n" in md


def test_the_printed_timeline_drops_the_hover_hint_the_app_keeps(debate, drawn):
    store, debate_id = debate
    handout.handout_html(store, debate_id, embed=embed)
    timeline = drawn[-1]
    assert timeline.data[0].type == "heatmap"
    assert "hover" not in timeline.layout.title.subtitle.text
    assert timeline.layout.title.subtitle.text.startswith(("black frame: changed answer", "one colour per answer"))
    from mad_core import figures
    from mad_core.view import DebateView
    app = figures.debate_figures(DebateView.from_store(store, debate_id),
                                 debate_report(store, debate_id, embed=embed))["plot_timeline"][1]
    assert "hover: whole answer" in app.layout.title.subtitle.text  # the app's chart has a hover


def test_vote_answers_are_cut_at_a_word_with_an_ellipsis(debate, drawn):
    store, debate_id = debate
    page = handout.handout_html(store, debate_id, embed=embed, images=False)
    cells = re.findall(r"<tr><td>Solution \d \(Agent \d\)</td><td>([^<]*)</td>", page)
    assert len(cells) == 2, cells
    long_cell = handout.html.unescape(next(c for c in cells if c.startswith("The truth")))
    assert long_cell.endswith("…") and len(long_cell) <= handout.VOTE_ANSWER_CHARS
    # Must not happen: a word cut in the middle ("…but also", "I wil") or a cut without "…".
    assert LONG.startswith(long_cell[:-1]) and LONG[len(long_cell) - 1] == " "
    md = handout.handout_markdown(store, debate_id, embed=embed, images=False)
    assert f"→ {handout._md_line(long_cell)}: " in md  # the same cut in the Markdown


@pytest.mark.parametrize(("text", "limit", "cut"), [
    ("abc def ghi", 8, "abc def…"),  # the room ends a word: kept whole
    ("abcde fghij kl", 10, "abcde…"),  # "fghij" does not fit: cut before it
    ("abcdefghijk", 5, "abcd…"),  # one long word (a number): cut inside
    ("a  b\n c", 10, "a b c"),  # whitespace folded, nothing cut
    ("one, two three", 8, "one…"),  # no dangling comma before the …
])
def test_cut_words(text, limit, cut):
    assert handout.cut_words(text, limit) == cut and len(cut) <= limit


# ----- each turn's "Answer:" line: the answer as read, short, in the reply's size (third trial) -------
REASONING = ("Let me think about whether 91 is prime. It is odd, so 2 does not divide it; its digits add up to "
             "10, so 3 does not either; it does not end in 0 or 5. But 7 times 13 is 91, so it has divisors.")
PRIME_REPLIES = {
    "Agent 1": REASONING + "\nFinal answer: no",
    "Agent 2": "It depends on what one counts as a divisor, and I would rather weigh both views at length "
               "before I commit myself to anything at all in this debate, which I will not do yet.",
}
PRIME_EXTRACTED = {"Agent 1": '{\n  "answer": "The answer is: no"\n}', "Agent 2": '{"answer": "yes"}'}


def test_each_turns_answer_line_is_the_answer_as_read_not_the_reply_again(script, roles):
    model, _ = script(roles(discussion=lambda messages, meta: PRIME_REPLIES[meta["agent"]],
                            extraction=lambda messages, meta: PRIME_EXTRACTED[meta["agent"]]))
    store = Store()
    engine = DebateEngine(DebateConfig.from_dict({
        "question": "Is 91 a prime number?", "rounds": 1, "max_rounds": 1, "protocol": "simple_voting",
        "answer_type": "yes_no", "extract_final_answers": True,
        "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2)]}), store=store)
    list(engine.run())
    page = handout.handout_html(store, engine.debate_id, embed=embed, images=False)
    lines = re.findall(r'<p class="turn-answer"><b>Answer:</b> ([^<]*)</p>', page)
    # discussion: Agent 1's "no", Agent 2 has none; extraction: the parsed answers, lead-in dropped
    # (the two extractions run at once: the transcript lists them in the order they started)
    assert lines[:2] == ["no", "no readable answer"] and sorted(lines[2:]) == ["no", "yes"]
    # Must not happen: a reply printed twice (once as the reply, once as its "Answer:" line).
    for reply in PRIME_REPLIES.values():
        assert page.count(handout.html.escape(reply.splitlines()[0])) == 1
    # the answer line is set in the reply's own size, never larger (it is no heading)
    css = page[page.index("<style>"):page.index("</style>")]
    size = re.search(r"\.turn-answer \{[^}]*font-size: ([\d.]+pt)", css).group(1)
    assert size == re.search(r"\.text \{[^}]*font-size: ([\d.]+pt)", css).group(1)
    md = handout.handout_markdown(store, engine.debate_id, embed=embed, images=False)
    assert re.findall(r"\*\*Answer:\*\* (.*)", md) == ["no", *lines]  # the decision's, then each turn's
    assert all(md.count(handout._md_line(reply.splitlines()[0])) == 1 for reply in PRIME_REPLIES.values())
