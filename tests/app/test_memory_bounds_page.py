"""A finished debate the live registry dropped (mad_core.live keeps only the newest finished ones)
still shows on the Debate page, read from the store, and the session lets go of the live debate
it followed."""
from __future__ import annotations

from app_helpers import SCRIPT, app, config, join, texts

from mad_core import live
from mad_core.store import Store
from madlab_ui import live_page


def test_a_dropped_debate_still_shows_and_the_session_lets_go_of_it(monkeypatch):
    monkeypatch.setattr(live, "MAX_FINISHED", 1)
    at = app()
    at.text_area(key="question").set_value("What is the capital of France?")
    for i in range(3):
        at.session_state[f"agent_model_{i}"] = f"scripted/{SCRIPT}"
    at.number_input(key="rounds").set_value(1)
    at.number_input(key="max_rounds").set_value(2)
    at.run()
    at.button(key="start").click().run()
    debate_id = at.session_state["debate_id"]
    join(debate_id)
    at.run()
    assert isinstance(at.session_state[live_page.SESSION_KEY], live_page.LivePage)  # following it live
    assert "zebrafinch" in texts(at.main)
    later = live.start(config("Another question?"), store=Store())  # finishes after it: the registry keeps one
    join(later.debate_id)
    assert live.get(debate_id) is None

    at.run()
    assert not at.exception, at.exception
    shown = texts(at.main)
    assert "zebrafinch" in shown and "axolotl" in shown and "finished" in texts(at.get_by_key("debate_status"))
    assert live_page.SESSION_KEY not in at.session_state  # the session no longer holds the dropped debate
    # Must not happen: the page calls the debate gone, or forgets which debate it shows.
    assert "is gone" not in shown and at.session_state["debate_id"] == debate_id
