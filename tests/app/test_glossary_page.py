"""The Glossary page (pages/7_Glossary.py): every entry of mad_core/glossary.py, a search box, every text
shown literally (escaped, never HTML), and open to a visitor from another machine (madlab_ui/access.py)."""
from __future__ import annotations

from app_helpers import app, keys, open_debate, run_debate, texts
from test_access import opened, remote  # noqa: F401 - `remote` is a fixture

from mad_core import glossary
from madlab_ui import access

GLOSSARY = "pages/7_Glossary.py"


def sentence_of(name: str) -> str:
    entry = glossary.entry_for(name)
    assert entry is not None, name
    return entry["sentence"]


def test_the_page_lists_every_entry_and_the_search_finds_holm():
    at = app(GLOSSARY)
    assert {f"glossary_{glossary.entry_id(e)}" for e in glossary.ENTRIES} <= keys(at)
    at.text_input(key="glossary_search").set_value("Holm").run()
    assert not at.exception, at.exception
    holm = at.get_by_key("glossary_holm_p")
    assert "Holm p" in texts(holm)
    # the sentence is shown (escaped for Markdown: compare without the escaping backslashes)
    assert sentence_of("Holm p") in texts(holm).replace("\\", "")
    assert "glossary_entropy" not in keys(at)  # the search narrowed the list
    at.text_input(key="glossary_search").set_value("zzz no such metric").run()
    assert not any(k.startswith("glossary_") and k != "glossary_search" for k in keys(at))
    assert "Nothing matches" in texts(at.main)


def test_no_entry_renders_html(monkeypatch):
    hostile = glossary._entry(glossary.DEBATE, "<b>bold</b> metric", ("<i>x</i>",),
                              "It is <b>not bold</b> and [no link](javascript:alert(1)).", "<script>1</script>",
                              "![img](http://example.invalid/x.png)")
    monkeypatch.setattr(glossary, "ENTRIES", (*glossary.ENTRIES, hostile))
    at = app(GLOSSARY)
    at.text_input(key="glossary_search").set_value("bold").run()
    assert not at.exception, at.exception
    box = at.get_by_key(f"glossary_{glossary.entry_id(hostile)}")
    shown = texts(box)
    assert r"\<b\>not bold\</b\>" in shown and r"\<script\>1\</script\>" in shown  # shows literally
    assert r"\[no link\]\(javascript:alert\(1\)\)" in shown.replace("\\:", ":")
    assert "<b>" not in shown and "](" not in shown.replace("\\](", "") and "![" not in shown
    for element in [*box.markdown, *box.caption]:
        assert not element.proto.allow_html


def test_a_visitor_may_read_the_glossary(remote):  # noqa: F811 - the fixture
    at = opened(page=GLOSSARY)
    assert "access_refused" not in keys(at) and access.REFUSED not in texts(at.main)
    assert "glossary_holm_p" in keys(at)


def test_the_metrics_of_an_opened_debate_explain_themselves_on_hover():
    at = open_debate(run_debate())
    summary = at.get_by_key("metrics_summary").markdown[0]
    assert summary.value.startswith("**Metrics**")
    assert f"rounds to decision: {glossary.help_for('rounds_to_decision')}" in summary.proto.help
    assert glossary.help_for("agreement_all_auc") in summary.proto.help
    # One help icon a section: the agents' table has none (two controls named "Help" would share one name).
    assert not at.get_by_key("agent_metrics").markdown[0].proto.help
