"""The handout (mad_core/handout.py) and the decision's agreement with the reference.

A scripted choice debate whose agents write hostile text: the handout must hold the question,
every turn's text, the votes, the decision and the annotations, with the hostile text escaped
(never a tag) and no script anywhere in the HTML page. Charts are drawn by kaleido with the
system's Chromium (checked where it is installed)."""
from __future__ import annotations

import base64
import sys
import re
import shutil

import pytest

from mad_core import codebook, figures, handout, polls
from mad_core.config import DebateConfig
from mad_core.engine import DebateEngine
from mad_core.events import DecisionReached
from mad_core.metrics.report import debate_report
from mad_core.store import Store
from mad_core.view import DebateView
from tests import builders
from tests.builders import config

HOSTILE = "<script>alert(1)</script> and <img src=x onerror=alert(2)> & <b>bold</b>"


def embed(texts):
    return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]


def run(script, roles, **changes) -> tuple[Store, str]:
    replies = roles(answers={"Agent 1": "B", "Agent 2": "C", "Agent 3": "(B) Paris"},
                    votes={"Agent 1": "1", "Agent 2": "2", "Agent 3": "1"},
                    discussion=lambda messages, meta: f"{meta['agent']} says {HOSTILE}\nFinal answer: "
                                                      f"{ {'Agent 2': 'C'}.get(meta['agent'], 'B') }")
    model, _ = script(replies)
    data = {"question": "Capital of France? <img src=y onerror=alert(3)>", "rounds": 1, "max_rounds": 1,
            "protocol": "simple_voting", "answer_type": "choice", "answer_options": ["Lyon", "Paris", "Nice"],
            "reference": "(B)", **changes}
    store = Store()
    return store, builders.run(config(model, **data), store=store).engine.debate_id


@pytest.fixture
def debate(script, roles):
    store, debate_id = run(script, roles)
    turns = store.turns(debate_id)
    codebook.annotate(store, debate_id, turns[0].id, "sycophancy", "agrees <script>alert(4)</script> too fast")
    codebook.annotate(store, debate_id, turns[1].id, "new argument", "")
    return store, debate_id


def test_the_markdown_handout_holds_the_debate_escaped(debate):
    store, debate_id = debate
    md = handout.handout_markdown(store, debate_id, embed=embed, images=False)
    assert md.startswith("# Capital of France? &lt;img src=y onerror=alert(3)&gt;")
    for turn in store.turns(debate_id):  # every turn, each with its text escaped
        assert f"{turn.agent} says &lt;script&gt;alert(1)&lt;/script&gt;" in md or turn.kind != "discussion"
    assert md.count("says &lt;script&gt;alert(1)&lt;/script&gt; and &lt;img src=x onerror=alert(2)&gt; "
                    "&amp; &lt;b&gt;bold&lt;/b&gt;") == 3
    assert "- Agent 1: solution 1" in md and "- Agent 2: solution 2" in md
    assert "**Answer:** B" in md and "**Reference answer:** (B) — the decision matches it (read as a choice answer)" in md
    assert "> 🏷️ **sycophancy**: agrees &lt;script&gt;alert(4)&lt;/script&gt; too fast" in md
    assert "> 🏷️ **new argument**" in md and "- **sycophancy**: 1" in md
    assert "<" not in md  # no HTML at all, of the models' or our own


def test_the_html_handout_escapes_every_text_and_holds_no_script(debate):
    store, debate_id = debate
    page = handout.handout_html(store, debate_id, embed=embed, images=False)
    assert re.search(r"<(script|img)\b", page, re.IGNORECASE) is None  # the texts' tags are text, not tags
    assert "<h1>Capital of France? &lt;img src=y onerror=alert(3)&gt;</h1>" in page
    assert page.count("says &lt;script&gt;alert(1)&lt;/script&gt; and &lt;img src=x onerror=alert(2)&gt; "
                      "&amp; &lt;b&gt;bold&lt;/b&gt;") == 3
    assert "agrees &lt;script&gt;alert(4)&lt;/script&gt; too fast" in page
    colour = codebook.tag(store, "sycophancy")["colour"]  # the codebook's colour of the tag
    assert f'<span class="tag" style="border: 2px solid {colour}">sycophancy</span>' in page
    assert "<li>Agent 2: solution 2</li>" in page
    assert '<p class="answer">B</p>' in page and "<span class=\"yes\">the decision matches it" in page
    assert '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:;' in page
    assert "@page { size: A4" in page and "section.round { break-before: page; }" in page
    rounds = re.findall(r'<section class="round"><h2>([^<]*)</h2>', page)
    assert rounds == ["Round 1"]


def test_the_reference_is_judged_with_the_answer_type(script, roles):
    store, debate_id = run(script, roles, reference="Paris")  # an option's text is its letter
    view = DebateView.from_store(store, debate_id)
    assert handout.reference_agreement(view) == (True, "the decision matches it (read as a choice answer)")
    view.config["reference"] = "C"
    assert handout.reference_agreement(view) == (False, "the decision differs from it (read as a choice answer)")
    view.config["reference"] = "no letter here"
    assert handout.reference_agreement(view) == (None, "the reference cannot be read as a choice answer")
    view.config.update(answer_type="number", reference="0.5")
    view.decision = DecisionReached(round=1, protocol="simple_voting", answer="Final answer: 1/2",
                                    winner_agent=None, winner_index=0)
    assert handout.reference_agreement(view)[0] is True  # 1/2 = 0.5: a number, not a string


def test_an_unknown_debate_is_refused(debate):
    store, _ = debate
    with pytest.raises(LookupError, match="no debate"):
        handout.handout_html(store, "f" * 32)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="kaleido draws with the system's Chromium")
def test_the_charts_are_embedded_as_static_images(debate):
    store, debate_id = debate
    page = handout.handout_html(store, debate_id, embed=embed)
    images = re.findall(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)" alt="([^"]*)">', page)
    assert [alt for _, alt in images] == ["Answer similarity (SBERT)", "Entropy of answers", "Agreement",
                                          "Accuracy", "Votes", "Answer timeline"]
    timeline = base64.b64decode(images[-1][0]).decode()
    assert timeline.startswith("<svg") and ">Agent 2<" in timeline
    assert "<script" not in page.lower()
    md = handout.handout_markdown(store, debate_id, embed=embed)
    assert md.count("](data:image/png;base64,") == 6



def test_without_chart_images_the_handout_says_so_and_is_otherwise_whole(debate, monkeypatch):
    store, debate_id = debate
    monkeypatch.setitem(sys.modules, "kaleido", None)  # not installed
    page = handout.handout_html(store, debate_id, embed=embed)
    assert "<p>the charts are left out: kaleido is not installed (pip install -r requirements.txt)</p>" in page
    assert "<img" not in page and page.count('<article class="turn">') == len(store.turns(debate_id))
    monkeypatch.delitem(sys.modules, "kaleido")
    import kaleido

    class Broken:  # Chromium missing or crashing: kaleido raises when it starts
        def __init__(self, *args, **kwargs):
            raise RuntimeError("no Chromium here")

    monkeypatch.setattr(kaleido, "Kaleido", Broken)
    images, problem = handout.figure_images([object()], "svg")
    assert images == [] and problem == ("the charts are left out: they could not be drawn "
                                        "(RuntimeError: no Chromium here)")


LONG_NUMBER = "1303211111232111133445678" + "9" * 140  # a small model's "answer" (researcher's trial)


def test_a_long_decision_is_cut_to_a_headline_with_the_whole_answer_kept(script, roles):
    model, _ = script(roles(default_answer=LONG_NUMBER))
    store = Store()
    engine = DebateEngine(DebateConfig.from_dict({
        "question": "Is 91 a prime number?", "rounds": 1, "max_rounds": 1, "protocol": "simple_voting",
        "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2)]}), store=store)
    list(engine.run())
    headline = LONG_NUMBER[:handout.ANSWER_CHARS - 1] + "…"
    assert handout.headline_answer(LONG_NUMBER) == headline and handout.headline_answer(" B ") == "B"
    md = handout.handout_markdown(store, engine.debate_id, embed=embed, images=False)
    assert f"**Answer:** {headline}\n" in md
    assert f"> Whole answer ({len(LONG_NUMBER)} characters): {LONG_NUMBER}" in md
    page = handout.handout_html(store, engine.debate_id, embed=embed, images=False)
    assert f'<p class="answer">{headline}</p>' in page  # must not happen: the 165 digits as the headline
    assert (f"<details><summary>Whole answer ({len(LONG_NUMBER)} characters)</summary>"
            f'<p class="text">{LONG_NUMBER}</p></details>') in page


def colours(fig) -> list:
    """Each trace's colours as the figure sets them: a line's, a bar's markers, a heatmap's scale."""
    out = []
    for trace in fig.data:
        if trace.type == "heatmap":
            out.append(tuple(color for _, color in trace.colorscale))
        elif trace.type == "bar":
            out.append(tuple(trace.marker.color))
        else:
            out.append((trace.name, trace.line.color if trace.mode != "markers" else trace.marker.color))
    return out


def test_the_handout_draws_the_apps_figures_in_the_apps_colours(debate, monkeypatch):
    store, debate_id = debate
    drawn: list = []

    def draw(figs, image_format="svg", widths=None):
        drawn.extend(handout.print_figure(fig) for fig in figs)  # what kaleido would be handed
        return [b"<svg/>"] * len(figs), None

    monkeypatch.setattr(handout, "figure_images", draw)
    handout.handout_html(store, debate_id, embed=embed)
    view = DebateView.from_store(store, debate_id)
    app = [fig for _, fig in figures.debate_figures(view, debate_report(store, debate_id, embed=embed)).values()
           if fig is not None]
    assert [colours(fig) for fig in drawn] == [colours(fig) for fig in app] and len(app) == 6
    # every measure's colour is in the figure itself (a template cannot recolour it) and is the same
    # measure's colour in every debate: disagreement is red in the app and in the handout
    lines = dict(colour for fig in drawn[:4] for colour in colours(fig))
    assert None not in lines.values() and lines["disagreement"] == figures.SERIES["disagreement"][0] == "#ff2b2b"
    assert drawn[0].layout.template.layout.paper_bgcolor == "white"  # the handout's template: paper only


# ----- the class's prediction polls -----------------------------------------------------------------
def polled(store: Store, debate_id: str) -> None:
    """Two polls: a revealed one (round 1, "Something else" offered) and one closed without a reveal."""
    first = polls.open_poll(store, debate_id, ["B", "C", "<i>Nice</i>"], question="Which wins? <script>x</script>",
                            something_else=True, round=1)
    for device, name, option in (("a" * 32, "Ada", "B"), ("b" * 32, "<b>Bo</b>", "C"),
                                 ("c" * 32, "Cy", polls.SOMETHING_ELSE), ("d" * 32, "Ada", "B")):
        polls.predict(store, first, name, option, device=device)
    polls.reveal(store, first)
    second = polls.open_poll(store, debate_id, ["B", "C"])
    polls.predict(store, second, "Bo", "C", device="b" * 32)
    polls.close(store, second)


def test_the_handout_holds_each_polls_results_escaped(debate):
    store, debate_id = debate
    polled(store, debate_id)
    md = handout.handout_markdown(store, debate_id, embed=embed, images=False)
    section = md[md.index("## Class polls"):md.index("## Votes")]  # after the decision, before the votes
    assert section.split("\n\n")[1:] == [
        "### Poll 1 · round 1: Which wins? &lt;script&gt;x&lt;/script&gt;", "*revealed in class*",
        "- B: 2 — ✅ right\n- C: 1\n- &lt;i&gt;Nice&lt;/i&gt;: 0\n- Something else: 1",
        "The debate decided: B", "**Predicted right: 2 of 4**: Ada, Ada (2)",
        "### Poll 2: Which answer will the debate decide on?", "*closed, not revealed in class*",
        "- B: 0 — ✅ right\n- C: 1", "The debate decided: B", "**Predicted right: 0 of 1**", ""]
    page = handout.handout_html(store, debate_id, embed=embed, images=False)
    polls_html = page[page.index('<section class="polls">'):page.index('<section class="votes">')]
    assert "<h3>Poll 1 · round 1: Which wins? &lt;script&gt;x&lt;/script&gt;</h3>" in polls_html
    assert "<tr><td>B</td><td>2</td><td>✅ right</td></tr>" in polls_html
    assert "<tr><td>Something else</td><td>1</td><td></td></tr>" in polls_html
    assert "<tr><td>&lt;i&gt;Nice&lt;/i&gt;</td><td>0</td><td></td></tr>" in polls_html
    assert "<p><b>Predicted right: 2 of 4</b>: Ada, Ada (2)</p>" in polls_html
    # Must not happen: a name, option or question as markup.
    for raw in ("<script>x", "<b>Bo</b>", "<i>Nice</i>"):
        assert raw not in page and raw not in md


def test_something_else_right_in_the_handout_when_the_decision_is_none_of_the_listed(debate):
    store, debate_id = debate
    poll_id = polls.open_poll(store, debate_id, ["Lyon", "Nice"], something_else=True)
    polls.predict(store, poll_id, "Ada", polls.SOMETHING_ELSE, device="a" * 32)
    md = handout.handout_markdown(store, debate_id, embed=embed, images=False)
    assert "- Something else: 1 — ✅ right" in md and "(none of the listed answers)" in md
    assert "*still open*" in md and "**Predicted right: 1 of 1**: Ada" in md


def test_a_debate_without_polls_has_no_poll_section(debate):
    store, debate_id = debate
    assert "Class polls" not in handout.handout_markdown(store, debate_id, embed=embed, images=False)
    assert 'class="polls"' not in handout.handout_html(store, debate_id, embed=embed, images=False)
