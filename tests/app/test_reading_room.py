"""The reading room on the Transcripts and Compare pages (AppTest): the Codebook section (add,
rename, colour, delete, counts, who annotates), the list filters (tag, model, outcome,
correctness) with search, the annotation CSV downloads, fork links, and Compare's side by side."""
from __future__ import annotations

import csv
import io
import time

from app_helpers import (COMPARE, HELD, TRANSCRIPTS, app, config, keys, open_debate, run_debate, scripted_debate,
                         texts)

from mad_core import codebook, exports, live
from mad_core.store import Store
from madlab_ui.codebook import COLOUR_MARKS, NEW_TAG, NEW_TAG_LABEL, turn_tag


def listed(at) -> list[str]:
    return [b.key.removeprefix("open_") for b in at.get_by_key("debate_list").button if b.key.startswith("open_")]


def codebook_text(at) -> str:
    return texts(at.get_by_key("codebook_counts"))


def test_codebook_adds_renames_recolours_and_refuses_to_delete_a_used_tag():
    debate_id = run_debate()
    turn = Store().turns(debate_id)[0]
    codebook.annotate(Store(), debate_id, turn.id, "flip", "changes its mind")
    at = app(TRANSCRIPTS)
    assert "flip\\]" not in codebook_text(at) and "flip" in codebook_text(at)
    assert "1 annotation in 1 debate" in codebook_text(at)

    at.text_input(key="codebook_new").set_value("Circular reasoning")
    at.selectbox(key="codebook_new_colour").set_value("red")
    at.button(key="codebook_add").click().run()
    assert codebook.tag(Store(), "circular reasoning") == {**codebook.tag(Store(), "Circular reasoning"), "colour": "red"}
    assert ":red-badge[🔴 Circular reasoning]" in codebook_text(at)
    at.text_input(key="codebook_new").set_value("CIRCULAR reasoning")
    at.button(key="codebook_add").click().run()
    assert "already has" in texts(at.get_by_key("codebook_message"))
    assert sum(t["name"].lower() == "circular reasoning" for t in codebook.tags(Store())) == 1

    at.selectbox(key="codebook_tag").set_value("flip")
    at.text_input(key="codebook_rename_to").set_value("position change")
    at.button(key="codebook_rename").click().run()
    assert [a["tag"] for a in Store().annotations(debate_id)] == ["position change"]
    # Must not happen: the old name still shows in the codebook or is still stored.
    assert "flip" not in codebook_text(at) and codebook.tag(Store(), "flip") is None
    assert at.selectbox(key="codebook_tag").value == "position change"

    at.selectbox(key="codebook_colour").set_value("violet")
    at.button(key="codebook_set_colour").click().run()
    assert codebook.tag(Store(), "position change")["colour"] == "violet"
    at.button(key="codebook_delete").click().run()
    assert "is on 1 annotation" in texts(at.get_by_key("codebook_message"))
    assert codebook.tag(Store(), "position change") is not None
    at.selectbox(key="codebook_tag").set_value("off topic")
    at.button(key="codebook_delete").click().run()
    assert codebook.tag(Store(), "off topic") is None and "off topic" not in codebook_text(at)
    assert not at.exception


def test_annotating_uses_the_codebook_remembers_the_annotator_and_shows_chips():
    debate_id = run_debate()
    at = open_debate(debate_id)
    assert set(at.selectbox(key="tag_1").options) >= {"sycophancy", "flip"}
    at.text_input(key="annotator").set_value("Rater A").run()
    at.selectbox(key="tag_1").set_value("good point")
    at.text_input(key="note_1").set_value("misreads Agent 1")
    at.button(key="annotate_1").click().run()
    note = Store().annotations(debate_id)[0]
    assert (note["tag"], note["note"], note["annotator"]) == ("good point", "misreads Agent 1", "Rater A")
    colour = codebook.tag(Store(), "good point")["colour"]
    shown = texts(at.get_by_key("turn_1"))
    assert f":{colour}-badge[" in shown and "good point" in shown and "Rater A" in shown
    assert "good point" not in texts(at.get_by_key("turn_0"))
    assert f":{colour}-badge[{COLOUR_MARKS[colour]} good point] 1 annotation in 1 debate" in codebook_text(at)
    at.switch_page(COMPARE).run()
    at.switch_page(TRANSCRIPTS).run()
    assert at.text_input(key="annotator").value == "Rater A"  # remembered across pages
    buttons = {b.key for b in at.get("download_button")}
    assert {"export_annotations", "export_annotations_open"} <= buttons
    rows = list(csv.DictReader(io.StringIO(exports.annotations_csv(Store(), debate_id))))
    assert [(r["tag"], r["annotator"], r["previous_agent"]) for r in rows] == [("good point", "Rater A", "Agent 1")]


def test_filters_combine_with_search_and_never_list_a_debate_without_the_tag():
    tagged = run_debate("Which river flows through Paris?", reference="Paris")
    other = run_debate("Which ocean is the largest?", reference="Atlantic")
    plain = run_debate("Which mountain is the highest?")
    codebook.annotate(Store(), tagged, Store().turns(tagged)[0].id, "good point")
    codebook.annotate(Store(), other, Store().turns(other)[0].id, "error")
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
    codebook.annotate(Store(), debate_id, Store().turns(debate_id)[0].id, "flip")
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
    codebook.annotate(store, first, store.turns(first)[1].id, "sycophancy", "agrees at once")
    codebook.add_tag(store, "Strong claim", "green")
    codebook.annotate(store, second, store.turns(second)[0].id, "Strong claim")
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
    assert not at.exception and codebook.tag(Store(), odd)["name"] == odd
    message = texts(at.get_by_key("codebook_message"))
    assert "Added" in message and "\\[link\\]" in message and "\\<b\\>" in message
    counts = codebook_text(at)
    assert "\\<b\\>bold\\</b\\>" in counts and "\\[link\\]" in counts  # escaped: no HTML, no link
    at.selectbox(key="codebook_tag").set_value(odd)
    at.button(key="codebook_delete").click().run()
    assert not at.exception and codebook.tag(Store(), odd) is None
    assert "Deleted" in texts(at.get_by_key("codebook_message"))


# ----- defects found by the researcher tester (issue 10) ---------------------------------------------
def test_an_annotation_is_deleted_from_its_turn_and_then_its_tag_can_go():
    debate_id = run_debate()
    store = Store()
    turns = store.turns(debate_id)
    mistaken = codebook.annotate(store, debate_id, turns[1].id, "flip", "wrong turn", annotator="Rater R1")
    same_turn = codebook.annotate(store, debate_id, turns[1].id, "error", "keep me")
    other_turn = codebook.annotate(store, debate_id, turns[0].id, "flip", "right turn")
    at = open_debate(debate_id)
    assert "2 annotations in 1 debate" in codebook_text(at)
    button = at.button(key=f"unannotate_{mistaken}")
    assert "flip" in button.help and "wrong turn" in button.help  # the control says which annotation it deletes
    button.click().run()
    assert not at.exception, at.exception
    # Must not happen: another annotation deleted with it (same turn, or the same tag elsewhere).
    assert [a["id"] for a in Store().annotations(debate_id)] == [same_turn, other_turn]
    assert "wrong turn" not in texts(at.get_by_key("turn_1")) and "keep me" in texts(at.get_by_key("turn_1"))
    assert f"unannotate_{mistaken}" not in keys(at) and f"unannotate_{other_turn}" in keys(at)
    assert "1 annotation in 1 debate" in codebook_text(at)  # the counts follow at once
    at.button(key=f"unannotate_{other_turn}").click().run()
    at.selectbox(key="codebook_tag").set_value("flip")
    at.button(key="codebook_delete").click().run()
    assert "Deleted 'flip'" in texts(at.get_by_key("codebook_message")) and codebook.tag(Store(), "flip") is None


def test_the_annotator_name_survives_a_reload_and_goes_on_later_annotations():
    from test_page_memory import reload

    debate_id = run_debate()
    first = open_debate(debate_id)
    first.text_input(key="annotator").set_value("Rater R1").run()  # committed (Tab / Enter / click away)
    again = reload(first.session_state["owner_id"], page=TRANSCRIPTS)  # a reload or a second tab, same URL
    assert again.text_input(key="annotator").value == "Rater R1"
    again.button(key=f"open_{debate_id[:8]}").click().run()
    again.selectbox(key="tag_1").set_value("flip")
    again.button(key="annotate_1").click().run()
    # Must not happen: the annotation saved without its annotator.
    assert [a["annotator"] for a in Store().annotations(debate_id)] == ["Rater R1"]
    assert reload(page=TRANSCRIPTS).text_input(key="annotator").value == ""  # another session's name is not shown


def test_the_colour_box_shows_the_picked_tags_own_colour():
    codebook.add_tag(Store(), "Concession", "green")
    codebook.add_tag(Store(), "Loaded premise", "orange")
    at = app(TRANSCRIPTS)
    box = at.selectbox(key="codebook_colour")
    assert box.value is None and box.disabled  # no tag picked: no colour claimed
    at.selectbox(key="codebook_tag").set_value("Concession").run()
    # Must not happen: "blue" (the palette's first colour) shown for a green tag.
    assert at.selectbox(key="codebook_colour").value == "green" and not at.selectbox(key="codebook_colour").disabled
    at.selectbox(key="codebook_tag").set_value("Loaded premise").run()
    assert at.selectbox(key="codebook_colour").value == "orange"
    at.selectbox(key="codebook_colour").set_value("red").run()  # a colour chosen stays until Set colour
    assert at.selectbox(key="codebook_colour").value == "red" and codebook.tag(Store(), "Loaded premise")["colour"] == "orange"
    at.button(key="codebook_set_colour").click().run()
    assert codebook.tag(Store(), "Loaded premise")["colour"] == "red" and at.selectbox(key="codebook_colour").value == "red"
    at.selectbox(key="codebook_tag").set_value("Concession").run()
    assert at.selectbox(key="codebook_colour").value == "green"


def test_renaming_to_blank_names_the_new_name_field():
    at = app(TRANSCRIPTS)
    at.selectbox(key="codebook_tag").set_value("flip")
    at.text_input(key="codebook_rename_to").set_value("   ")
    at.button(key="codebook_rename").click().run()
    message = texts(at.get_by_key("codebook_message"))
    assert "new name\\: a tag needs a name" in message and at.text_input(key="codebook_rename_to").label == "New name"
    assert "annotation" not in message  # must not happen: the annotating message for a rename
    assert codebook.tag(Store(), "flip") is not None


def test_the_list_shows_the_decided_answer_not_the_whole_reply():
    debate_id = consensus_debate("What is seven times eight?", ["Seven times eight is fifty-six. Final answer: 56",
                                                                "I agree, the product is 56. Final answer: 56",
                                                                "Yes I agree with fifty-six. Final answer: 56"])
    assert "Final answer" in Store().get_debate(debate_id)["answer"]  # the stored answer is the whole reply
    at = app(TRANSCRIPTS)
    row = texts(at.get_by_key(f"debate_row_{debate_id[:8]}"))
    assert "outcome: 56" in row
    assert "Final answer" not in row and "fifty" not in row  # must not happen: the reply instead of the answer
    at.button(key=f"open_{debate_id[:8]}").click().run()
    assert "56" in texts(at.get_by_key("decision_answer"))  # the decision card leads with the same answer


def test_search_finds_word_starts_and_says_what_matched_in_each_row():
    turned = consensus_debate("Which appliance boils water?", ["Electric kettles boil water fast. Final answer: kettle"] * 3)
    tagged = run_debate("Which river flows through Paris?")
    codebook.annotate(Store(), tagged, Store().turns(tagged)[1].id, "error", "confuses a kettle with a pot")
    asked = run_debate("Why do kettles whistle?")
    plain = run_debate("Which ocean is the largest?")
    at = app(TRANSCRIPTS)
    at.text_input(key="search").set_value("kettle").run()
    assert sorted(listed(at)) == sorted([turned[:8], tagged[:8], asked[:8]])
    assert plain[:8] not in listed(at) and f"match_{plain[:8]}" not in keys(at)  # must not happen: a row without it
    turn_match = texts(at.get_by_key(f"match_{turned[:8]}"))
    assert "turn · Agent 1 · round 1" in turn_match and "**kettles**" in turn_match and "more" in turn_match
    tag_match = texts(at.get_by_key(f"match_{tagged[:8]}"))
    assert "annotation · tag error" in tag_match and "**kettle**" in tag_match
    assert "question" in texts(at.get_by_key(f"match_{asked[:8]}"))
    at.text_input(key="search").set_value("").run()
    assert not any(k.startswith("match_") for k in keys(at))  # no search: no match lines


def consensus_debate(question: str, said: list[str]) -> str:
    """A finished one-round majority-consensus debate whose Agent i says said[i - 1]."""
    data = {"question": question, "protocol": "majority_consensus", "rounds": 1, "max_rounds": 1,
            "agents": [{"label": f"Agent {i}", "model": "scripted/reading_consensus"} for i in (1, 2, 3)]}
    return scripted_debate("reading_consensus", {f"Agent {i}": [text] for i, text in enumerate(said, 1)}, data)


# ----- defects found by the researcher tester, third round (issue 10) -------------------------------
def test_a_turns_tag_box_picks_codebook_tags_and_makes_a_new_one_only_through_new_tag():
    debate_id = run_debate()
    codebook.add_tag(Store(), "=SUM(A1)")
    at = open_debate(debate_id)
    box = at.selectbox(key="tag_1")
    # Must not happen: the box takes typed text as a new option (Enter then stored the prefix "=SUM").
    assert box.proto.accept_new_options is False
    assert box.options[0] == NEW_TAG_LABEL and "=SUM(A1)" in box.options and "new_tag_1" not in keys(at)
    before = len(codebook.tags(Store()))
    box.set_value("=SUM(A1)")
    at.button(key="annotate_1").click().run()
    assert [a["tag"] for a in Store().annotations(debate_id)] == ["=SUM(A1)"] and len(codebook.tags(Store())) == before

    at.selectbox(key="tag_2").set_value(NEW_TAG).run()  # the visible step: a field for the new tag's name
    at.text_input(key="new_tag_2").set_value("  =sum(a1) ")
    at.button(key="annotate_2").click().run()
    shown = texts(at.get_by_key("turn_2"))
    assert "new tag: the codebook already has '=SUM(A1)'" in shown.replace("\\", "")
    assert len(codebook.tags(Store())) == before and len(Store().annotations(debate_id)) == 1  # nothing written

    at.text_input(key="new_tag_2").set_value("Sarcasm")
    at.button(key="annotate_2").click().run()
    assert [a["tag"] for a in Store().annotations(debate_id)] == ["=SUM(A1)", "Sarcasm"]
    assert len(codebook.tags(Store())) == before + 1 and "Sarcasm" in texts(at.get_by_key("turn_2"))
    assert at.selectbox(key="tag_2").value is None and "new_tag_2" not in keys(at)  # the row is ready again
    assert not at.exception


def test_turn_tag_refuses_a_second_spelling_and_a_tag_gone_meanwhile():
    names = ["=SUM(A1)", "good point"]
    assert turn_tag("=SUM(A1)", None, names) == ("=SUM(A1)", None)
    assert turn_tag(NEW_TAG, "  Sarcasm  ", names) == ("Sarcasm", None)
    assert turn_tag(NEW_TAG, "GOOD   point", names)[1] == "new tag: the codebook already has 'good point'; " \
                                                           "pick it in the tag box"
    assert turn_tag(NEW_TAG, "  ", names) == (None, "new tag: a tag needs a name")
    assert turn_tag("flip", None, names) == (None, "tag: the codebook no longer has 'flip'; pick another")
    assert turn_tag(None, "Sarcasm", names)[0] is None  # a name typed but ➕ New tag… not picked: nothing made


def test_the_new_tag_form_offers_a_colour_no_tag_has():
    codebook.delete_tag(Store(), "off topic")  # yellow is free
    at = app(TRANSCRIPTS)
    # Must not happen: blue offered (sycophancy is blue) while yellow is free.
    assert at.selectbox(key="codebook_new_colour").value == "yellow"
    at.text_input(key="codebook_new").set_value("Concession")
    at.button(key="codebook_add").click().run()
    assert codebook.tag(Store(), "Concession")["colour"] == "yellow"
    codebook.delete_tag(Store(), "flip")  # orange is free now (another tab, or a turn's new tag)
    at.run()
    assert at.selectbox(key="codebook_new_colour").value == "orange"
    at.selectbox(key="codebook_new_colour").set_value("green").run()  # a colour the user chose stays
    codebook.delete_tag(Store(), "hallucination")
    at.run()
    assert at.selectbox(key="codebook_new_colour").value == "green"


def test_codebook_counts_say_singular_and_plural_right():
    first, second = run_debate(), run_debate("Which ocean is the largest?")
    store = Store()
    codebook.annotate(store, first, store.turns(first)[0].id, "flip")
    codebook.annotate(store, first, store.turns(first)[1].id, "error")
    codebook.annotate(store, first, store.turns(first)[2].id, "error")
    codebook.annotate(store, first, store.turns(first)[0].id, "hedging")
    codebook.annotate(store, second, store.turns(second)[0].id, "hedging")
    counts = codebook_text(app(TRANSCRIPTS))
    assert "flip] 1 annotation in 1 debate" in counts
    assert "error] 2 annotations in 1 debate" in counts and "hedging] 2 annotations in 2 debates" in counts
    assert "sycophancy] 0 annotations in 0 debates" in counts
    assert "(s)" not in counts  # must not happen: "annotation(s)"
