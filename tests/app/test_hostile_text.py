"""Text never reaches out and dollars stay dollars: the one function that turns model, moderator or
user text into Markdown (`common.model_markdown`), the plain-text helper for questions
(`common.plain_markdown`), and what the Debate, Transcripts and Presenter pages hand to st.markdown
for a reply with two dollar amounts and an image, and for a long Knight-Knave-Spy question.
(The browser's side, that no request leaves and no KaTeX is drawn: tests/e2e/test_e2e_hostile_text.py.)"""
from __future__ import annotations

import re

from app_helpers import app, keys, open_debate, scripted_debate, texts
from test_presenter import presenter

from mad_core.tasks import kks
from madlab_ui.common import md_escape, model_markdown, plain_markdown

BAT = "The bat costs $1.00 more than the ball. The bat costs $1.05"
PIXEL = "![x](http://127.0.0.9:9/pixel.png)"
UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")


def test_model_markdown_keeps_dollars_literal_and_draws_images_as_words():
    assert model_markdown(BAT) == BAT.replace("$", "\\$")
    assert model_markdown(f"see {PIXEL} here") == "see \\[image: x\\] here"
    # a reference-style image is no image either; a link stays a link (nothing fetches it)
    assert model_markdown("![y][1]\n\n[1]: http://h/p.png").startswith("\\![y][1]")
    assert model_markdown("[site](http://h/)") == "[site](http://h/)"
    # already escaped: not escaped twice (that would leave a bare "$" after a literal backslash)
    assert model_markdown("\\$5 and \\\\$6") == "\\$5 and \\\\\\$6"
    # code is shown as it is: nothing added inside a fence or a code span
    assert model_markdown("`$x$` and\n```\n$y ![a](b)\n```") == "`$x$` and  \n```\n$y ![a](b)\n```"
    # line breaks still kept
    assert model_markdown("a $1\nb") == "a \\$1  \nb"
    # Must not happen: an unescaped dollar or an image left for st.markdown.
    for text in (BAT, PIXEL, "$$x$$", "![a (b)](http://h/(c).png)", "!![z](u)"):
        out = model_markdown(text)
        assert not UNESCAPED_DOLLAR.search(out) and "![" not in out, out


def test_plain_markdown_shows_every_line_as_text_never_a_heading_or_a_rule():
    body = plain_markdown("# Title\n---\nPlayer: $1 " + PIXEL)
    assert body.split("  \n") == ["\\# Title", "\\-\\-\\-", md_escape("Player: $1 " + PIXEL)]
    assert not UNESCAPED_DOLLAR.search(body) and "![" not in body


def _bat_reply(messages, info) -> str:
    kind = info["metadata"].get("kind", "discussion")
    if kind == "vote":
        return "1"
    if kind == "extraction":
        return "$0.05"
    return f"{BAT} and {PIXEL}\nFinal answer: $0.05"


def _bat_debate(question: str) -> str:
    data = {"question": question, "agents": [{"label": f"Agent {i}", "model": "scripted/apptest_bat"} for i in (1, 2)],
            "rounds": 1, "max_rounds": 1, "protocol": "simple_voting"}
    return scripted_debate("apptest_bat", _bat_reply, data)


def _escaped_bat(bodies: list[str]) -> None:
    """The reply reached st.markdown with its dollars escaped and its image as words."""
    reply = [b for b in bodies if "bat costs" in b]
    assert reply, bodies
    for body in reply:
        assert "\\$1.05" in body and "\\[image: x\\]" in body
        # Must not happen: a bare "$" (KaTeX) or an image (fetched by every viewer).
        assert not UNESCAPED_DOLLAR.search(body) and "![" not in body and "127.0.0.9" not in body


def test_debate_and_transcripts_pages_escape_the_dollars_and_draw_the_question_as_plain_text():
    question = "# Bat and ball\n---\nA bat and a ball cost $1.10. How much is the ball?"
    debate_id = _bat_debate(question)
    at = app()
    at.session_state["debate_id"] = debate_id
    at.run()
    assert not at.exception, at.exception
    _escaped_bat([m.value for m in at.get_by_key("turn_0").markdown])
    boxed = [m.value for m in at.get_by_key("debate_question").markdown]
    assert boxed == [plain_markdown(question)]
    # Must not happen: the question as Markdown anywhere (a heading, a rule, math).
    assert question not in [m.value for m in at.main.markdown]

    at = open_debate(debate_id)
    _escaped_bat([m.value for m in at.get_by_key("turn_1").markdown])
    assert [m.value for m in at.get_by_key("debate_question").markdown] == [plain_markdown(question)]
    assert at.get_by_key("debate_title").header[0].value == md_escape("# Bat and ball --- A bat and a ball cost "
                                                                      "$1.10. How much is the ball?")


def test_a_short_one_line_question_is_not_repeated_under_the_transcripts_title():
    debate_id = _bat_debate("How much is the ball?")
    at = open_debate(debate_id)
    assert at.get_by_key("debate_title").header[0].value == "How much is the ball?"
    assert "debate_question" not in keys(at)


def test_presenter_escapes_the_dollars_and_shows_a_whole_kks_puzzle_in_small_type():
    puzzle = kks.generate(7, 3)
    debate_id = _bat_debate(puzzle.text)
    at = presenter(replay=debate_id)
    at.button(key="presenter_next").click().run()
    _escaped_bat([m.value for m in at.get_by_key("presenter_agent_0").markdown])
    present = keys(at)
    assert "presenter_question_long" in present and "presenter_question_short" not in present
    body = "\n".join(m.value for m in at.get_by_key("presenter_question").markdown)
    assert body == plain_markdown(puzzle.text.strip())  # the config keeps it without its last line break
    for name, statement in zip(puzzle.names, puzzle.statement_texts()):  # every player, the last one too
        assert md_escape(f"Player name: {name}") in body and md_escape(f"Player statement: {statement}") in body
    # Must not happen: the puzzle cut short, or its "---" lines handed over as Markdown (rules, headings).
    assert "…" not in body and "\n---" not in body and not body.startswith("#")


def test_presenter_keeps_a_short_question_in_big_type():
    at = presenter(replay=_bat_debate("How much does the ball cost, in $?"))
    assert "presenter_question_short" in keys(at) and "presenter_question_long" not in keys(at)
    assert texts(at.get_by_key("presenter_question")) == md_escape("How much does the ball cost, in $?")
