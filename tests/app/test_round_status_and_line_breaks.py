"""Two things a transcript must say truly, on debates a scripted model really ran and the
Transcripts page shows: a round cut by Stop (or a failure) is never called "done", and a reply's
single line breaks are kept (Markdown would join the lines)."""
from __future__ import annotations

from app_helpers import config, open_debate, texts

from mad_core.controller import Controller
from mad_core.engine import DebateEngine
from mad_core.events import DebateFinished, RoundStarted, TokenReceived, Turn, TurnFinished, TurnStarted
from mad_core.models.scripted import Script, register_script, unregister_script
from mad_core.store import Store
from mad_core.view import DebateView
from madlab_ui.common import md_escape, model_markdown
from madlab_ui.transcript import round_status


def stopped_while(agent: str, name: str) -> str:
    """A stored debate stopped while `agent` streams its round-1 turn."""
    long = " ".join(f"word{i}" for i in range(60)) + "\nFinal answer: Paris"
    register_script(name, Script(replies=[long] * 3, token_delay=0.002))
    try:
        controller = Controller()

        def stop(event):  # a listener: on the streaming call's thread, before the piece is queued
            if isinstance(event, TokenReceived) and event.agent == agent and "word3" in event.text:
                controller.stop()

        engine = DebateEngine(config(model=f"scripted/{name}"), controller=controller, store=Store(),
                              listeners=[stop])
        list(engine.run())
        assert engine.status == "stopped"
        return engine.debate_id
    finally:
        unregister_script(name)


def test_a_round_cut_by_stop_says_stopped_and_how_many_agents_finished():
    debate_id = stopped_while("Agent 2", "apptest_stop_round")
    at = open_debate(debate_id)
    caption = texts(at.get_by_key("round_1"))
    assert md_escape("stopped: 1 of 3 agents finished their turn (Agent 2 cut off)") in caption
    # Must not happen: the cut round called "done".
    assert "done" not in caption


def test_round_status_words_for_stopped_failed_and_finished_rounds():
    view = DebateView()
    for event in (RoundStarted(1, ["Agent 1", "Agent 2", "Agent 3"]),
                  TurnStarted("t1", 1, "Agent 1", "discussion", "m", []),
                  TurnFinished(Turn("t1", 0, 1, "Agent 1", "discussion", "m", [], "A", status="interrupted"))):
        view.apply(event)
    view.config = {"agents": [{"label": f"Agent {i}"} for i in (1, 2, 3)]}
    view.apply(DebateFinished("stopped", reason="stopped by a person"))
    assert round_status(view, 1) == "stopped: 0 of 3 agents finished their turn (Agent 1 cut off)"
    view.status = "failed"
    assert round_status(view, 1).startswith("failed: 0 of 3 agents finished their turn")
    # a failed turn in a round the debate went on from: the round is done, but says who failed
    view.status = "finished"
    view.turns[0].status = "failed"
    view.apply(RoundStarted(2, ["Agent 1"]))
    view.apply(TurnStarted("t2", 2, "Agent 1", "discussion", "m", []))
    view.apply(TurnFinished(Turn("t2", 1, 2, "Agent 1", "discussion", "m", [], "B")))
    assert round_status(view, 1) == "done: 0 of 3 agents finished their turn (Agent 1 failed)"
    assert round_status(view, 2) == "done"


def test_a_two_line_reply_keeps_its_line_break_on_the_transcripts_page():
    name = "apptest_two_lines"
    register_script(name, Script(replies=["even better yet in future\nThe correct answer is Paris"] * 3))
    try:
        engine = DebateEngine(config(model=f"scripted/{name}"), store=Store())
        list(engine.run())
    finally:
        unregister_script(name)
    at = open_debate(engine.debate_id)
    bodies = [m.value for m in at.get_by_key("turn_0").markdown]
    assert "even better yet in future  \nThe correct answer is Paris" in bodies  # a hard break
    # Must not happen: the two lines handed to Markdown as one paragraph (it joins them).
    assert "even better yet in future\nThe correct answer is Paris" not in bodies


def test_model_markdown_breaks_single_lines_but_not_code_or_paragraphs():
    assert model_markdown("a\nb\n\nc") == "a  \nb\n\nc"
    assert model_markdown("x\n```\nq = 1\nr = 2\n```\ny\nz") == "x  \n```\nq = 1\nr = 2\n```\ny  \nz"
    assert model_markdown(None) == ""
