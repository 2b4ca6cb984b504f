"""The reading room's store side: the codebook of annotation tags (create, rename, colour, delete,
counts; migration m006 keeps old annotations), the transcript filters (tag, model, outcome,
correctness by answer type), search of moderator messages, and the annotation CSV."""
from __future__ import annotations

import csv
import io
import threading

import pytest
from sqlite_utils import Database

from mad_core import codebook, exports
from mad_core.codebook import DEFAULT_TAGS, TAG_COLOURS, free_tag_colour
from mad_core.events import DebateFinished, DecisionReached, SteeringApplied, Turn, TurnFinished
from mad_core.exports import ANNOTATION_COLUMNS
from mad_core.metrics import cache
from mad_core.store import (MIGRATIONS, Store, debate_correctness, list_debates, models_used, search_matches,
                            search_turns)


def turn(seq: int, agent: str, content: str, rnd: int = 1, kind: str = "discussion") -> Turn:
    return Turn(id=f"t{seq}", seq=seq, round=rnd, agent=agent, kind=kind, model="scripted/x", prompt=[],
                content=content, started_at=100.0 + seq, finished_at=101.0 + seq)


def debate(store: Store, debate_id: str, *, answer: str | None = "Paris", reference: str | None = None,
           status: str = "finished", models=("scripted/alpha", "scripted/beta"), texts=("one", "two", "three"),
           steer: str | None = None, **config) -> str:
    """A stored debate of three turns (Agent 1, Agent 2, Agent 1), its decision and end."""
    cfg = {"question": f"Question of {debate_id}?", "protocol": "simple_voting", "paradigm": "memory",
           "agents": [{"label": f"Agent {i + 1}", "model": m} for i, m in enumerate(models)],
           "reference": reference, **config}
    store.create_debate(debate_id, cfg)
    for seq, (agent, text) in enumerate(zip(("Agent 1", "Agent 2", "Agent 1"), texts)):
        store.record(TurnFinished(turn=turn(seq, agent, text)), debate_id)
    if steer:
        store.record(SteeringApplied(action="message", targets=["Agent 2"], message=steer), debate_id)
    if answer is not None:
        store.record(DecisionReached(round=1, protocol="simple_voting", answer=answer, winner_agent="Agent 1",
                                     winner_index=0), debate_id)
    store.record(DebateFinished(status=status, answer=answer), debate_id)
    return debate_id


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "codebook.db") as s:
        yield s


def ids(rows) -> list[str]:
    return sorted(row["id"] for row in rows)


# ----- the codebook ------------------------------------------------------------------------
def test_a_new_archive_has_the_default_tags_each_in_a_palette_colour(store):
    tags = codebook.tags(store)
    assert sorted(t["name"] for t in tags) == sorted(DEFAULT_TAGS)
    assert all(t["colour"] in TAG_COLOURS and t["count"] == 0 for t in tags)


def test_annotating_with_a_new_name_adds_it_once_and_reuses_the_codebook_spelling(store):
    debate(store, "d1")
    codebook.annotate(store, "d1", "t0", "  Circular   reasoning ")
    codebook.annotate(store, "d1", "t1", "circular REASONING", "same tag, other case")
    codebook.annotate(store, "d1", "t2", "SYCOPHANCY")
    names = [t["name"] for t in codebook.tags(store)]
    assert names.count("Circular reasoning") == 1
    assert not any(n.lower() == "circular reasoning" and n != "Circular reasoning" for n in names)
    assert [a["tag"] for a in store.annotations("d1")] == ["Circular reasoning", "Circular reasoning", "sycophancy"]


def test_counts_per_tag_span_the_whole_archive(store):
    debate(store, "d1")
    debate(store, "d2")
    codebook.annotate(store, "d1", "t0", "flip")
    codebook.annotate(store, "d1", "t1", "flip")
    codebook.annotate(store, "d2", "t0", "flip")
    codebook.annotate(store, "d2", "t1", "error")
    counts = {t["name"]: (t["count"], t["debates"]) for t in codebook.tags(store)}
    assert counts["flip"] == (3, 2) and counts["error"] == (1, 1) and counts["hallucination"] == (0, 0)


def test_rename_updates_every_annotation_and_the_old_name_is_gone_everywhere(store):
    debate(store, "d1")
    debate(store, "d2")
    codebook.annotate(store, "d1", "t0", "flip", "changes its mind")
    codebook.annotate(store, "d2", "t2", "flip")
    codebook.annotate(store, "d2", "t1", "error")
    assert codebook.rename_tag(store, "FLIP", "position change") == "position change"
    assert [a["tag"] for a in store.annotations("d1")] == ["position change"]
    assert [a["tag"] for a in store.annotations("d2")] == ["position change", "error"]
    assert {t["name"]: t["count"] for t in codebook.tags(store)}["position change"] == 2
    # Must not happen: the old name survives anywhere (codebook, annotations, search index, exports).
    assert codebook.tag(store, "flip") is None
    assert store.db.execute("SELECT COUNT(*) FROM annotations WHERE tag = 'flip'").fetchone()[0] == 0
    assert list_debates(store, search="flip") == []
    assert list_debates(store, tag="flip") == []
    assert "flip" not in exports.annotations_csv(store) and "flip" not in exports.to_markdown(store, "d1")
    assert ids(list_debates(store, tag="position change")) == ["d1", "d2"]


def test_rename_onto_an_existing_tag_is_refused_and_changes_nothing(store):
    debate(store, "d1")
    codebook.annotate(store, "d1", "t0", "flip")
    with pytest.raises(ValueError, match="already has 'error'"):
        codebook.rename_tag(store, "flip", "Error")
    with pytest.raises(LookupError, match="no tag 'nope'"):
        codebook.rename_tag(store, "nope", "other")
    with pytest.raises(ValueError, match="^new name: a tag needs a name$"):  # not the annotating message
        codebook.rename_tag(store, "flip", "   ")
    with pytest.raises(ValueError, match="^new name: at most 60 characters"):
        codebook.rename_tag(store, "flip", "x" * 61)
    with pytest.raises(ValueError, match="^new tag: a tag needs a name$"):
        codebook.add_tag(store, " \t ")
    with pytest.raises(ValueError, match="^tag: an annotation needs a tag"):
        codebook.annotate(store, "d1", "t0", "  ")
    assert [a["tag"] for a in store.annotations("d1")] == ["flip"] and codebook.tag(store, "flip") is not None
    assert codebook.rename_tag(store, "flip", "Flip") == "Flip"  # a change of case is a rename of the same tag
    assert [a["tag"] for a in store.annotations("d1")] == ["Flip"]


def test_colour_comes_from_the_palette_only(store):
    codebook.set_tag_colour(store, "flip", "red")
    assert codebook.tag(store, "flip")["colour"] == "red"
    for bad in ("#ff0000", "<b>red</b>", "pink"):
        with pytest.raises(ValueError, match="^colour: "):
            codebook.set_tag_colour(store, "flip", bad)
        with pytest.raises(ValueError, match="^colour: "):
            codebook.add_tag(store, "brand new", bad)
    assert codebook.tag(store, "flip")["colour"] == "red" and codebook.tag(store, "brand new") is None


def test_free_tag_colour_takes_an_unused_colour_then_the_least_used():
    assert free_tag_colour([]) == "blue"
    assert free_tag_colour(["blue", "green", "red"]) == "orange"  # the first one no tag has
    assert free_tag_colour(["yellow", *TAG_COLOURS]) == "blue"  # all taken: the fewest, palette order
    assert free_tag_colour([*TAG_COLOURS, "blue", "green", "odd"]) == "orange"


def test_a_new_tag_gets_a_colour_no_other_tag_has(store):
    codebook.delete_tag(store, "flip")  # orange
    codebook.delete_tag(store, "off topic")  # yellow
    debate(store, "d1")
    codebook.annotate(store, "d1", "t0", "=SUM(A1)")  # made from a turn
    codebook.add_tag(store, "Circular reasoning")  # made in the codebook
    colours = {t["name"]: t["colour"] for t in codebook.tags(store)}
    assert (colours["=SUM(A1)"], colours["Circular reasoning"]) == ("orange", "yellow")
    # Must not happen: two tags sharing a colour while the palette had a free one.
    assert sorted(colours.values()) == sorted(TAG_COLOURS)
    codebook.add_tag(store, "Eighth")  # the palette is full: the least used colour, never a doubly used one
    codebook.add_tag(store, "Ninth")
    colours = {t["name"]: t["colour"] for t in codebook.tags(store)}
    assert (colours["Eighth"], colours["Ninth"]) == ("blue", "green")
    assert codebook.add_tag(store, "Tenth", "red") and codebook.tag(store, "Tenth")["colour"] == "red"  # a chosen colour is kept


def test_delete_only_an_unused_tag(store):
    debate(store, "d1")
    codebook.annotate(store, "d1", "t0", "flip")
    with pytest.raises(ValueError, match="'flip' is on 1 annotation; delete it or rename"):
        codebook.delete_tag(store, "flip")
    assert codebook.tag(store, "flip") is not None and len(store.annotations("d1")) == 1
    codebook.annotate(store, "d1", "t1", "flip")
    with pytest.raises(ValueError, match="'flip' is on 2 annotations; delete those or rename"):
        codebook.delete_tag(store, "flip")
    codebook.delete_tag(store, "off topic")
    assert codebook.tag(store, "off topic") is None


def test_deleting_one_annotation_frees_its_tag_and_leaves_the_others(store):
    debate(store, "d1")
    debate(store, "d2")
    mistaken = codebook.annotate(store, "d1", "t0", "flip", "wrong turn")
    kept = [codebook.annotate(store, "d1", "t1", "error"), codebook.annotate(store, "d2", "t0", "error", "kept")]
    assert not codebook.delete_annotation(store, mistaken, turn_id="t1")  # a button drawn for another turn deletes nothing
    assert codebook.delete_annotation(store, mistaken, turn_id="t0")
    assert not codebook.delete_annotation(store, mistaken, turn_id="t0")  # already gone
    # Must not happen: another annotation deleted with it.
    assert [a["id"] for a in store.annotations("d1") + store.annotations("d2")] == kept
    assert {t["name"]: t["count"] for t in codebook.tags(store)}["flip"] == 0
    assert list_debates(store, search="wrong turn") == [] and list_debates(store, tag="flip") == []
    codebook.delete_tag(store, "flip")  # no longer in use
    assert codebook.tag(store, "flip") is None


def test_many_threads_creating_the_same_tag_make_one_entry(tmp_path):
    path = tmp_path / "race.db"
    Store(path).close()
    barrier = threading.Barrier(8)
    results, errors = [], []

    def create(i: int) -> None:
        with Store(path) as mine:
            barrier.wait(timeout=30)
            try:
                results.append(codebook.add_tag(mine, "Rhetorical Question" if i % 2 else "rhetorical question"))
            except Exception as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    with Store(path) as store:
        matching = [t["name"] for t in codebook.tags(store) if t["name"].lower() == "rhetorical question"]
    assert len(matching) == 1 and set(results) == set(matching)


def test_migration_keeps_existing_annotations_and_indexes_old_moderator_messages(tmp_path):
    path = tmp_path / "old.db"
    db = Database(path)
    MIGRATIONS.apply(db, stop_before="m006_codebook")
    assert "tags" not in db.table_names()
    db["debates"].insert({"id": "old", "question": "Old?", "config": "{}", "status": "finished", "created_at": 1.0})
    db["turns"].insert({"turn_id": "t0", "debate_id": "old", "seq": 0, "round": 1, "agent": "Agent 1",
                        "kind": "discussion", "model": "m", "prompt": "[]", "content": "hello"})
    db["annotations"].insert_all([
        {"debate_id": "old", "turn_id": "t0", "tag": "Sycophancy", "note": "agrees too fast", "created_at": 2.0},
        {"debate_id": "old", "turn_id": "t0", "tag": "my own code", "note": "", "created_at": 3.0},
    ])
    db["steering"].insert({"debate_id": "old", "action": "message", "targets": "null",
                           "message": "consider the okapiword", "ts": 4.0})
    db.close()
    with Store(path) as store:
        assert "m006_codebook" in store.applied_migrations()
        notes = store.annotations("old")
        assert [(n["tag"], n["note"]) for n in notes] == [("sycophancy", "agrees too fast"), ("my own code", "")]
        counts = {t["name"]: t["count"] for t in codebook.tags(store)}
        assert counts["sycophancy"] == 1 and counts["my own code"] == 1 and set(DEFAULT_TAGS) <= set(counts)
        assert "Sycophancy" not in counts  # one entry per name, whatever its case
        assert ids(list_debates(store, search="okapiword")) == ["old"]


# ----- filters and search -------------------------------------------------------------------
def test_search_finds_a_moderator_message(store):
    debate(store, "steered", steer="Think about the zeppelinword first.")
    debate(store, "plain")
    assert ids(list_debates(store, search="zeppelinword")) == ["steered"]
    assert ids(list_debates(store, search="zeppelinword", protocol="simple_voting")) == ["steered"]


def test_search_matches_the_start_of_words_and_says_what_matched(store):
    debate(store, "turns", texts=("The kettles boil at once.", "Ketchup is not an answer.", "Water kettle"))
    debate(store, "tagged")
    codebook.annotate(store, "tagged", "t1", "error", "misreads the kettle gauge")
    debate(store, "steered", steer="Mind the Kettlebell example.")
    debate(store, "asked", question="Why do kettles whistle?")
    debate(store, "plain")
    found = ids(list_debates(store, search="kettle"))
    # Must not happen: a whole-word search that misses "kettles", or a debate without the word.
    assert found == ["asked", "steered", "tagged", "turns"]
    matches = search_matches(store, "kettle", [*found, "plain"])
    assert set(matches) == set(found)
    assert matches["turns"] == {"where": "turn", "label": "Agent 1 · round 1", "more": 1,
                                "parts": [("The ", False), ("kettles", True), (" boil at once.", False)]}
    assert matches["tagged"]["where"] == "annotation" and matches["tagged"]["label"] == "tag error"
    assert ("kettle", True) in matches["tagged"]["parts"]
    assert (matches["steered"]["where"], matches["steered"]["label"]) == ("moderator message", "to Agent 2")
    assert ("Kettlebell", True) in matches["steered"]["parts"]
    assert matches["asked"]["where"] == "question"
    assert matches["asked"]["parts"] == [("Why do ", False), ("kettle", True), ("s whistle?", False)]
    # Every word must start a word; a prefix inside a word does not match.
    assert ids(list_debates(store, search="kett boil")) == ["turns"]
    assert ids(list_debates(store, search="ettle")) == ["asked"]  # (the question matches the text anywhere)
    assert [r["turn_id"] for r in search_turns(store, "ketch")] == ["t1"]


@pytest.mark.parametrize("query", ['"', "*", "NEAR(", "') OR 1=1 --", "\x00", "   ", "kettle\" OR", "a\"b"])
def test_search_matches_take_any_text(store, query):
    """Nothing matches these (no words, or words no text holds); the same characters around a word that
    is there still find it (positive control: the search ran and was not broken by them)."""
    debate(store, "d1", texts=("kettle", "two", "three"))
    assert search_matches(store, query, ["d1"]) == {}
    found = {"d1": {"where": "turn", "label": "Agent 1 · round 1", "parts": [("kettle", True)], "more": 0}}
    assert search_matches(store, "kettle", ["d1"]) == found
    if query not in ("NEAR(", "') OR 1=1 --", "kettle\" OR", "a\"b"):  # these add words of their own
        assert search_matches(store, f"kettle {query}", ["d1"]) == found


def test_tag_model_and_outcome_filters_combine_with_search(store):
    debate(store, "a", texts=("apple", "x", "y"))
    debate(store, "b", texts=("apple", "x", "y"), models=("scripted/gamma",))
    debate(store, "c", answer=None, status="stopped", texts=("apple", "x", "y"))
    debate(store, "d", answer=None)
    debate(store, "e", judge_model="scripted/judge")
    codebook.annotate(store, "a", "t1", "flip")
    codebook.annotate(store, "b", "t0", "flip")
    codebook.annotate(store, "c", "t0", "error")
    assert ids(list_debates(store, tag="flip")) == ["a", "b"]
    assert ids(list_debates(store, tag="FLIP", model="scripted/gamma")) == ["b"]
    assert ids(list_debates(store, model="scripted/judge")) == ["e"]
    assert ids(list_debates(store, outcome="decided")) == ["a", "b", "e"]
    assert ids(list_debates(store, outcome="no decision")) == ["d"]
    assert ids(list_debates(store, outcome="stopped", search="apple")) == ["c"]
    assert list_debates(store, tag="error", outcome="decided") == []
    assert "scripted/judge" in models_used(store) and "scripted/gamma" in models_used(store)
    # Must not happen: a tag filter lists a debate without the tag.
    for row in list_debates(store, tag="flip"):
        assert any(a["tag"] == "flip" for a in store.annotations(row["id"]))
    with pytest.raises(ValueError, match="^outcome: "):
        list_debates(store, outcome="won")
    with pytest.raises(ValueError, match="^correctness: "):
        list_debates(store, correctness="maybe")


def test_correctness_reads_answers_by_their_type_not_as_plain_strings(store):
    debate(store, "choice", answer="I pick (B) Paris", reference="B", answer_type="choice",
           answer_options=["London", "Paris"])
    debate(store, "number", answer="Final answer: 0.5", reference="1/2", answer_type="number")
    debate(store, "wrong", answer="Final answer: 3", reference="4", answer_type="number")
    debate(store, "noref", answer="Paris")
    debate(store, "undecided", answer=None, reference="Paris")
    debate(store, "unreadable", answer="7", reference="many", answer_type="number")
    assert ids(list_debates(store, correctness="correct")) == ["choice", "number"]
    assert ids(list_debates(store, correctness="incorrect")) == ["wrong"]
    assert ids(list_debates(store, correctness="no reference")) == ["noref"]
    assert ids(list_debates(store, correctness="no decision")) == ["undecided"]
    assert ids(list_debates(store, correctness="reference unreadable")) == ["unreadable"]
    assert ids(list_debates(store, correctness="correct", search="Question of number")) == ["number"]


def test_correctness_prefers_a_stored_metric_report_of_the_debate_as_it_is(store):
    debate(store, "text", answer="The city of Paris", reference="Paris")
    assert debate_correctness(store.get_debate("text")) == "incorrect"  # plain text differs
    from mad_core.metrics.report import report_stamp

    cache.save_report(store, "text", report_stamp(store.get_debate("text"), "sbert"), {"summary": {"correct": True}})
    assert ids(list_debates(store, correctness="correct")) == ["text"]
    cache.save_report(store, "text", "v0|stale", {"summary": {"correct": False}})  # an outdated report is ignored
    assert ids(list_debates(store, correctness="correct")) == []


# ----- the annotation CSV -------------------------------------------------------------------
def test_annotation_csv_has_one_row_per_annotation_with_its_turn_and_context(store):
    debate(store, "d1", texts=("=HYPERLINK(\"http://x\")", "-2+3 reply", "third turn"))
    debate(store, "d2")
    codebook.annotate(store, "d1", "t1", "flip", "@SUM(A1)", annotator="Rater One")
    codebook.annotate(store, "d1", "t0", "error")
    codebook.annotate(store, "d2", "t2", "good point", "fine", annotator="Rater Two")
    rows = list(csv.DictReader(io.StringIO(exports.annotations_csv(store))))
    assert list(rows[0]) == list(ANNOTATION_COLUMNS) and len(rows) == 3
    first = rows[0]
    assert (first["debate_id"], first["question"], first["turn_id"], first["round"], first["agent"],
            first["kind"]) == ("d1", "Question of d1?", "t1", "1", "Agent 2", "discussion")
    assert first["text"] == "'-2+3 reply"  # formula-safe
    assert first["previous_agent"] == "Agent 1" and first["previous_text"] == "'=HYPERLINK(\"http://x\")"
    assert (first["tag"], first["note"], first["annotator"]) == ("flip", "'@SUM(A1)", "Rater One")
    assert first["created_at"].endswith("+00:00")
    assert rows[1]["turn_id"] == "t0" and rows[1]["previous_text"] == "" and rows[1]["annotator"] == ""
    assert rows[2]["text"] == "three" and rows[2]["previous_text"] == "two"
    only = list(csv.DictReader(io.StringIO(exports.annotations_csv(store, "d2"))))
    assert [r["debate_id"] for r in only] == ["d2"]
    # Must not happen: any cell that a spreadsheet would run as a formula.
    assert not any(value.startswith(("=", "+", "-", "@")) for row in rows for value in row.values())


def test_annotation_csv_context_is_what_the_transcript_shows_before_the_turn_a_moderator_message_included(store):
    debate(store, "d1", texts=("first reply", "answers the moderator", "third turn"))
    # Between Agent 1's turn (started at 100) and Agent 2's (101): a pause (no context) and a message to Agent 2.
    store.record(SteeringApplied(action="pause", ts=100.4), "d1")
    store.record(SteeringApplied(action="message", targets=["Agent 2"], message="=think of flamingos", ts=100.5), "d1")
    codebook.annotate(store, "d1", "t1", "flip")
    codebook.annotate(store, "d1", "t2", "error")
    rows = list(csv.DictReader(io.StringIO(exports.annotations_csv(store, "d1"))))
    after_message, after_turn = rows
    assert (after_message["previous_kind"], after_message["previous_agent"], after_message["previous_to"],
            after_message["previous_text"]) == ("moderator message", "Moderator", "Agent 2", "'=think of flamingos")
    # Must not happen: the moderator message skipped, Agent 1's reply given as what Agent 2 answered.
    assert after_message["previous_text"] != "first reply"
    assert (after_turn["previous_kind"], after_turn["previous_agent"], after_turn["previous_to"],
            after_turn["previous_text"]) == ("discussion", "Agent 2", "", "answers the moderator")
    assert [(r["round"], r["turn_seq"], r["copied_from_parent"]) for r in rows] == [("1", "1", "no"), ("1", "2", "no")]


def test_annotation_csv_marks_a_forks_turns_copied_from_its_parent(store):
    debate(store, "parent")
    cfg = {"question": "Question of parent?", "protocol": "simple_voting", "paradigm": "memory",
           "agents": [{"label": "Agent 1", "model": "scripted/a"}, {"label": "Agent 2", "model": "scripted/b"}]}
    store.create_debate("fork", cfg, parent_id="parent", forked_from_seq=1)
    for seq, agent, text in ((0, "Agent 1", "one"), (1, "Agent 2", "two"), (2, "Agent 1", "new in the fork")):
        store.record(TurnFinished(turn=turn(seq, agent, text)), "fork")
    store.record(DebateFinished(status="finished"), "fork")
    for turn_id in ("t0", "t1", "t2"):
        codebook.annotate(store, "fork", turn_id, "flip")
    rows = list(csv.DictReader(io.StringIO(exports.annotations_csv(store, "fork"))))
    assert [(r["turn_id"], r["turn_seq"], r["copied_from_parent"]) for r in rows] == \
        [("t0", "0", "yes"), ("t1", "1", "yes"), ("t2", "2", "no")]
    assert rows[2]["text"] == "new in the fork" and rows[2]["previous_text"] == "two"
