"""The reading room on the Transcripts and Compare pages (AppTest): the Codebook section (add,
rename, colour, delete, counts, who annotates), the list filters (tag, model, outcome,
correctness) with search, the annotation CSV downloads, fork links, and Compare's side by side."""
from __future__ import annotations

import csv
import io
import time

from app_helpers import COMPARE, HELD, TRANSCRIPTS, app, config, keys, open_debate, run_debate, texts

from mad_core import live
from mad_core.store import Store
from madlab_ui.codebook import COLOUR_MARKS


def listed(at) -> list[str]:
    return [b.key.removeprefix("open_") for b in at.get_by_key("debate_list").button if b.key.startswith("open_")]


def codebook_text(at) -> str:
    return texts(at.get_by_key("codebook_counts"))


def test_codebook_adds_renames_recolours_and_refuses_to_delete_a_used_tag():
    debate_id = run_debate()
    turn = Store().turns(debate_id)[0]
    Store().annotate(debate_id, turn.id, "flip", "changes its mind")
    at = app(TRANSCRIPTS)
    assert "flip\\]" not in codebook_text(at) and "flip" in codebook_text(at)
    assert "1 annotation(s) in 1 debate(s)" in codebook_text(at)

    at.text_input(key="codebook_new").set_value("Circular reasoning")
    at.selectbox(key="codebook_new_colour").set_value("red")
    at.button(key="codebook_add").click().run()
    assert Store().tag("circular reasoning") == {**Store().tag("Circular reasoning"), "colour": "red"}
    assert ":red-badge[🔴 Circular reasoning]" in codebook_text(at)
    at.text_input(key="codebook_new").set_value("CIRCULAR reasoning")
    at.button(key="codebook_add").click().run()
    assert "already has" in texts(at.get_by_key("codebook_message"))
    assert sum(t["name"].lower() == "circular reasoning" for t in Store().tags()) == 1

    at.selectbox(key="codebook_tag").set_value("flip")
    at.text_input(key="codebook_rename_to").set_value("position change")
    at.button(key="codebook_rename").click().run()
    assert [a["tag"] for a in Store().annotations(debate_id)] == ["position change"]
    # Must not happen: the old name still shows in the codebook or is still stored.
    assert "flip" not in codebook_text(at) and Store().tag("flip") is None
    assert at.selectbox(key="codebook_tag").value == "position change"

    at.selectbox(key="codebook_colour").set_value("violet")
    at.button(key="codebook_set_colour").click().run()
    assert Store().tag("position change")["colour"] == "violet"
    at.button(key="codebook_delete").click().run()
    assert "is on 1 annotation" in texts(at.get_by_key("codebook_message"))
    assert Store().tag("position change") is not None
    at.selectbox(key="codebook_tag").set_value("off topic")
    at.button(key="codebook_delete").click().run()
    assert Store().tag("off topic") is None and "off topic" not in codebook_text(at)
    assert not at.exception


def test_annotating_uses_the_codebook_remembers_the_annotator_and_shows_chips():
    debate_id = run_debate()
    at = open_debate(debate_id)
    assert set(at.selectbox(key="tag_1").options) >= {"sycophancy", "flip"}
    at.text_input(key="annotator").set_value("Rater A").run()
    at.selectbox(key="tag_1").set_value("good point")  # a new name typed is tested in the browser (AppTest
    # cannot set a selectbox to a value outside its options)
    at.text_input(key="note_1").set_value("misreads Agent 1")
    at.button(key="annotate_1").click().run()
    note = Store().annotations(debate_id)[0]
    assert (note["tag"], note["note"], note["annotator"]) == ("good point", "misreads Agent 1", "Rater A")
    colour = Store().tag("good point")["colour"]
    shown = texts(at.get_by_key("turn_1"))
    assert f":{colour}-badge[" in shown and "good point" in shown and "Rater A" in shown
    assert "good point" not in texts(at.get_by_key("turn_0"))
    assert f":{colour}-badge[{COLOUR_MARKS[colour]} good point] 1 annotation(s) in 1 debate(s)" in codebook_text(at)
    at.switch_page(COMPARE).run()
    at.switch_page(TRANSCRIPTS).run()
    assert at.text_input(key="annotator").value == "Rater A"  # remembered across pages
    buttons = {b.key for b in at.get("download_button")}
    assert {"export_annotations", "export_annotations_open"} <= buttons
    rows = list(csv.DictReader(io.StringIO(Store().annotations_csv(debate_id))))
    assert [(r["tag"], r["annotator"], r["previous_agent"]) for r in rows] == [("good point", "Rater A", "Agent 1")]


def test_filters_combine_with_search_and_never_list_a_debate_without_the_tag():
    tagged = run_debate("Which river flows through Paris?", reference="Paris")
    other = run_debate("Which ocean is the largest?", reference="Atlantic")
    plain = run_debate("Which mountain is the highest?")
    Store().annotate(tagged, Store().turns(tagged)[0].id, "good point")
    Store().annotate(other, Store().turns(other)[0].id, "error")
    at = app(TRANSCRIPTS)
    assert set(listed(at)) == {tagged[:8], other[:8], plain[:8]}
    at.selectbox(key="tag_filter").set_value("good point").run()
    assert listed(at) == [tagged[:8]]
    for debate_id in listed(at):  # must not happen: a listed debate without the tag
        assert any(a["tag"] == "good point" for a in Store().annotations(Store().find_debate_id(debate_id)))
    at.text_input(key="search").set_value("ocean").run()
    assert listed(at) == [] and "No debates match." in texts(at.get_by_key("debate_list"))
    at.text_input(key="search").set_value("").run()
    at.selectbox(key="tag_filter").set_value(None).run()
    at.selectbox(key="correctness_filter").set_value("correct").run()
    assert listed(at) == [tagged[:8]]
    at.selectbox(key="correctness_filter").set_value("incorrect").run()
    assert listed(at) == [other[:8]]
    at.selectbox(key="correctness_filter").set_value("no reference").run()
    assert listed(at) == [plain[:8]]
    at.selectbox(key="correctness_filter").set_value(None).run()
    assert "scripted/apptest" in at.selectbox(key="model_filter").options
    at.selectbox(key="model_filter").set_value("scripted/apptest").run()
    at.selectbox(key="outcome_filter").set_value("decided").run()
    assert set(listed(at)) == {tagged[:8], other[:8], plain[:8]}
    at.selectbox(key="outcome_filter").set_value("stopped").run()
    assert listed(at) == []
    assert not at.exception


def test_renaming_a_tag_keeps_the_tag_filter_on_it():
    debate_id = run_debate()
    Store().annotate(debate_id, Store().turns(debate_id)[0].id, "flip")
    at = app(TRANSCRIPTS)
    at.selectbox(key="tag_filter").set_value("flip").run()
    at.selectbox(key="codebook_tag").set_value("flip")
    at.text_input(key="codebook_rename_to").set_value("u-turn")
    at.button(key="codebook_rename").click().run()
    assert at.selectbox(key="tag_filter").value == "u-turn" and listed(at) == [debate_id[:8]]
    assert "flip" not in at.selectbox(key="tag_filter").options


def _fork_of(parent: str, seq: int) -> str:
    """A finished fork of `parent` after turn `seq`, stored as the engine stores one."""
    store = Store()
    child = "f" * 32
    store.create_debate(child, store.get_debate(parent)["config"], parent_id=parent, forked_from_seq=seq)
    store.set_status(child, "finished")
    return child


def test_a_fork_names_its_parent_in_the_list_and_opens_it():
    parent = run_debate()
    child = _fork_of(parent, 1)
    at = app(TRANSCRIPTS)
    assert f"fork of {parent[:8]} after turn 1" in texts(at.get_by_key(f"debate_row_{child[:8]}"))
    assert "fork of" not in texts(at.get_by_key(f"debate_row_{parent[:8]}"))
    assert f"parent_{parent[:8]}" not in keys(at)  # the parent is no fork: no parent button
    at.button(key=f"parent_{child[:8]}").click().run()
    assert at.session_state["open_debate"] == parent
    at.button(key=f"open_{child[:8]}").click().run()
    assert f"fork of {parent[:8]} after turn 1" in texts(at.main)
    at.button(key="open_parent").click().run()
    assert at.session_state["open_debate"] == parent


def test_a_running_fork_names_its_parent_in_the_running_list(gate):
    parent = run_debate()
    fork = live.start_fork(parent, 1, Store(), config=config(model=f"scripted/{HELD}"), owner="someone")
    deadline = time.monotonic() + 30
    while Store().get_debate(fork.debate_id) is None:  # the engine's thread writes the row first thing
        assert time.monotonic() < deadline, "the fork's row was never written"
        time.sleep(0.01)
    at = app(TRANSCRIPTS)
    assert f"fork of {parent[:8]} after turn 1" in texts(at.get_by_key("running_list"))


def test_compare_names_forks_and_reads_two_annotated_debates_side_by_side():
    first = run_debate("Which river flows through Paris?")
    second = run_debate("Which ocean is the largest?", protocol="solution_counting")
    child = _fork_of(first, 2)
    store = Store()
    store.annotate(first, store.turns(first)[1].id, "sycophancy", "agrees at once")
    store.add_tag("Strong claim", "green")
    store.annotate(second, store.turns(second)[0].id, "Strong claim")
    at = app(COMPARE)
    label = at.multiselect(key="compare_ids").format_func(child)
    assert f"fork of {first[:8]} after turn 2" in label
    at.multiselect(key="compare_ids").set_value([first, second, child]).run()
    assert f"fork of {first[:8]} after turn 2" in texts(at.get_by_key(f"compare_{child[:8]}"))
    assert f"compare_parent_{child[:8]}" in keys(at) and f"compare_parent_{first[:8]}" not in keys(at)

    at.radio(key="compare_mode").set_value("Side by side").run()
    assert not at.exception, at.exception
    assert {"side_by_side", "side_decision_left", "side_decision_right", "side_round_1"} <= keys(at)
    assert "compare_diversity" not in keys(at)
    assert "Paris" in texts(at.get_by_key("side_decision_left"))
    left_turn = texts(at.get_by_key("side_left_turn_1"))
    assert "sycophancy" in left_turn and "agrees at once" in left_turn and "quokka" in left_turn
    assert ":green-badge[🟢 Strong claim]" in texts(at.get_by_key("side_right_turn_0"))
    # Must not happen: one debate's tags shown on the other's turns.
    assert "sycophancy" not in texts(at.get_by_key("side_right_turn_1"))
    assert "Strong claim" not in texts(at.get_by_key("side_left_turn_0"))
    # Rounds line up: both debates' round-1 turns sit in the same round container.
    in_round_one = {n.key for n in at.get_by_key("side_round_1") if getattr(n, "key", None)}
    assert {"side_left_turn_0", "side_right_turn_0", "side_left_turn_2", "side_right_turn_2"} <= in_round_one
    at.selectbox(key="side_right").set_value(child).run()
    assert f"fork of {first[:8]} after turn 2" in texts(at.get_by_key("side_decision_right"))
    assert "side_parent_right" in keys(at)


def test_codebook_messages_show_odd_tag_names_literally():
    at = app(TRANSCRIPTS)
    odd = "{x} <b>bold</b> [link](javascript:alert(1))"
    at.text_input(key="codebook_new").set_value(odd)
    at.button(key="codebook_add").click().run()
    assert not at.exception and Store().tag(odd)["name"] == odd
    message = texts(at.get_by_key("codebook_message"))
    assert "Added" in message and "\\[link\\]" in message and "\\<b\\>" in message
    counts = codebook_text(at)
    assert "\\<b\\>bold\\</b\\>" in counts and "\\[link\\]" in counts  # escaped: no HTML, no link
    at.selectbox(key="codebook_tag").set_value(odd)
    at.button(key="codebook_delete").click().run()
    assert not at.exception and Store().tag(odd) is None
    assert "Deleted" in texts(at.get_by_key("codebook_message"))
