"""Resume from the app, and debates whose worker died: shown as failed, with a Resume button;
a debate that cannot be resumed says why and stays exactly as it was."""
from __future__ import annotations

from app_helpers import app, join, open_debate, run_debate, texts

from mad_core import Controller, exports, live
from mad_core.events import DebateStarted
from mad_core.models.scripted import Script, register_script, unregister_script
from mad_core.store import Store


def test_a_failed_debate_can_be_resumed_from_the_transcripts_page():
    debate_id = run_debate()
    Store().set_status(debate_id, "failed")
    at = open_debate(debate_id)
    at.button(key="resume").click().run()
    assert not at.exception, at.exception
    join(debate_id)
    assert Store().get_debate(debate_id)["status"] == "finished"


def test_a_debate_whose_model_is_gone_says_why_and_stays_as_it_was():
    register_script("gone-soon", Script(replies=["Final answer: Paris"]))
    debate_id = run_debate(model="scripted/gone-soon")
    Store().set_status(debate_id, "stopped")
    unregister_script("gone-soon")
    before = exports.export_debate(Store(), debate_id)
    at = open_debate(debate_id)
    at.button(key="resume").click().run()
    assert not at.exception, at.exception
    shown = texts(at.main)
    assert "Cannot resume: agents[0].model: Unknown script 'gone-soon'" in shown
    assert live.get(debate_id) is None  # nothing started
    assert exports.export_debate(Store(), debate_id) == before  # and nothing changed


def test_a_finished_debate_offers_no_resume():
    debate_id = run_debate()
    at = open_debate(debate_id)
    assert "resume" not in {b.key for b in at.main.button}


def test_a_debate_whose_worker_died_shows_failed_with_a_resume_button():
    debate_id = run_debate()
    Store().set_status(debate_id, "interrupted")  # what the store says once its owner stopped beating
    config = Store().get_debate(debate_id)["config"]

    def dying_worker():
        yield DebateStarted(debate_id, config)
        raise RuntimeError("worker thread crashed")

    dead = live._register(live.LiveDebate(debate_id, dying_worker(), Controller()))
    dead.thread.join(timeout=30)
    at = app()
    at.session_state["debate_id"] = debate_id
    at.run()
    status = texts(at.get_by_key("debate_status"))
    assert "failed" in status and "worker thread crashed" in status
    at.button(key="resume_debate").click().run()
    assert not at.exception, at.exception
    join(debate_id)
    assert Store().get_debate(debate_id)["status"] == "finished"
