"""Several debates running at once while a person reads, annotates, searches and exports them."""
from __future__ import annotations

import threading

from app_helpers import TRANSCRIPTS, app, config, reply, texts

from mad_core import live
from mad_core.models.scripted import Script, register_script, unregister_script
from mad_core.store import Store


def test_annotating_searching_and_exporting_while_three_debates_run():
    gate = threading.Event()

    def held_after_first_turn(messages, info):
        meta = info["metadata"]
        if not (meta["round"] == 1 and meta["agent"] == "Agent 1" and meta["kind"] == "discussion"):
            assert gate.wait(timeout=60), "the test never opened the gate"
        return reply(messages, info)

    register_script("busy", Script(replies=held_after_first_turn))
    try:
        debates = [live.start(config(f"Question {n}?", model="scripted/busy"), store=Store(), owner="tab")
                   for n in range(3)]
        store = Store()
        first_turns = []
        for debate in debates:  # each debate's first turn reaches the disk; the gate holds the rest
            for _ in range(3000):
                if turns := store.turns(debate.debate_id):
                    break
                threading.Event().wait(0.02)  # another thread's write: nothing to wait on but the file
            first_turns.append(turns[0])
        at = app(TRANSCRIPTS)
        at.text_input(key="search").set_value("zebrafinch").run()
        assert not at.exception, at.exception
        target = debates[1].debate_id
        at.button(key=f"open_{target[:8]}").click().run()
        assert not at.exception, at.exception
        at.selectbox(key="tag_0").set_value("good point").run()
        at.text_input(key="note_0").set_value("said while running").run()
        at.button(key="annotate_0").click().run()
        assert not at.exception, at.exception
        assert {b.key for b in at.main.get("download_button")} >= {"export_json", "export_md", "export_csv"}
        assert "good point" in texts(at.main)
        gate.set()
        for debate in debates:
            debate.thread.join(timeout=60)
        assert [Store().get_debate(d.debate_id)["status"] for d in debates] == ["finished"] * 3
        notes = Store().annotations(target)
        assert [(n["turn_id"], n["tag"], n["note"]) for n in notes] == [
            (first_turns[1].id, "good point", "said while running")]
    finally:
        gate.set()
        unregister_script("busy")
