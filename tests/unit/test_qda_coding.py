"""Coding projects (issue 22, items 1-3, 5 and 8; mad_core/qda): a project of debates, a code hierarchy,
coders in blind mode, passages by character offsets with their quote, memos, deletion that asks nobody
else's work and can be undone, the lead's reveal and gold coding, the history, and the migration that
turns the archive's tags and annotations into a project without losing any."""
from __future__ import annotations

import pytest
from sqlite_utils import Database

from mad_core import codebook
from mad_core.qda import coding, storage
from mad_core.qda.model import to_source
from mad_core.store import Store
from test_codebook import debate

TEXTS = ("The bat costs $1.05 and the ball 5 cents.", "No: the ball costs 0.05 dollars.", "I agree, café.")


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "qda.db") as s:
        debate(s, "d1", texts=TEXTS)
        debate(s, "d2", texts=("alpha", "beta", "gamma"))
        yield s


@pytest.fixture
def project(store):
    project_id = coding.create_project(store, "Bat and ball", "Lena", debate_ids=["d1", "d2"])
    lena = coding.join(store, project_id, "lena")  # the lead joined at creation: the same coder, any case
    omar = coding.join(store, project_id, "Omar")
    return project_id, lena, omar


def test_a_project_holds_its_debates_codebook_and_coders(store, project):
    project_id, lena, omar = project
    assert storage.debate_ids(store, project_id) == ["d1", "d2"]
    assert [c["name"] for c in storage.coder_rows(store, project_id)] == ["Lena", "Omar"]
    parent = coding.add_code(store, project_id, "Lena", "Reasoning", definition="Any argument", colour="#112233")
    child = coding.add_code(store, project_id, "Lena", "Arithmetic", parent=parent, include="sums and prices",
                            exclude="units", example="1.05 - 1 = 0.05")
    other = coding.add_code(store, project_id, "Lena", "Agreement")
    assert [r["name"] for r in storage.code_rows(store, project_id)] == ["Reasoning", "Arithmetic", "Agreement"]
    loaded = storage.load_project(store, project_id)
    by_id = {c.id: c for c in loaded.codes}
    assert by_id[child].parent == parent and by_id[parent].colour == "#112233"
    assert (by_id[child].include, by_id[child].exclude, by_id[child].example) == ("sums and prices", "units",
                                                                                  "1.05 - 1 = 0.05")
    assert by_id[other].colour.startswith("#") and len(by_id[other].colour) == 7
    # must not: a circle in the hierarchy, a second code of the same name, a colour that is not #RRGGBB
    with pytest.raises(ValueError, match="^parent:"):
        coding.update_code(store, project_id, parent, "Lena", parent=child)
    with pytest.raises(ValueError, match="^name:"):
        coding.add_code(store, project_id, "Lena", "reasoning")
    with pytest.raises(ValueError, match="^colour:"):
        coding.add_code(store, project_id, "Lena", "New", colour="red")
    with pytest.raises(LookupError, match="^debates:"):
        coding.create_project(store, "x", "Lena", debate_ids=["nope"])


def test_a_passage_is_stored_by_offsets_with_its_quote_and_maps_into_the_source_text(store, project):
    project_id, lena, omar = project
    code = coding.add_code(store, project_id, "Lena", "Price")
    turn_id = store.turns("d1")[0].id
    passage = coding.apply_code(store, project_id, lena, "d1", turn_id, code, 14, 19)
    whole = coding.apply_code(store, project_id, omar, "d1", turn_id, code)
    overlapping = coding.apply_code(store, project_id, omar, "d1", turn_id, code, 4, 19)
    rows = {r["id"]: r for r in storage.coding_rows(store, project_id)}
    assert rows[passage]["quote"] == "$1.05" and (rows[passage]["start"], rows[passage]["end"]) == (14, 19)
    assert rows[whole]["quote"] == TEXTS[0] and rows[overlapping]["quote"] == "bat costs $1.05"
    loaded = storage.load_project(store, project_id)
    source = next(s for s in loaded.sources if s.debate_id == "d1")
    for coded in loaded.codings:
        start, end = to_source(source, coded)
        assert source.text[start:end] == coded.quote  # the debate's plain text holds the passage where it says
    for start, end, field in ((0, 0, "end"), (-1, 3, "start"), (5, 999, "end"), (1.5, 3, "start")):
        with pytest.raises(ValueError, match=f"^{field}:"):
            coding.apply_code(store, project_id, lena, "d1", turn_id, code, start, end)
    with pytest.raises(LookupError, match="^turn:"):
        coding.apply_code(store, project_id, lena, "d1", "no-such-turn", code)
    assert len(storage.coding_rows(store, project_id)) == 3  # must not: a refused coding written


def test_blind_coders_see_only_their_own_until_the_lead_reveals(store, project):
    project_id, lena, omar = project
    code = coding.add_code(store, project_id, "Lena", "Price")
    turn_id = store.turns("d1")[0].id
    coding.apply_code(store, project_id, lena, "d1", turn_id, code)
    coding.apply_code(store, project_id, omar, "d1", turn_id, code, 0, 3)
    model = coding.join(store, project_id, "scripted/coder", kind="model")
    assert set(coding.visible_coders(store, project_id, omar)) == {omar, model}  # his own, and proposals
    assert set(coding.visible_coders(store, project_id, lena)) == {lena, omar, model}  # the lead sees all
    with pytest.raises(PermissionError):
        coding.reveal(store, project_id, omar)
    assert set(coding.visible_coders(store, project_id, omar)) == {omar, model}  # must not: revealed by Omar
    coding.reveal(store, project_id, lena)
    assert set(coding.visible_coders(store, project_id, omar)) == {lena, omar, model}
    progress = {row["name"]: row for row in coding.progress(store, project_id)}
    assert (progress["Omar"]["codings"], progress["Omar"]["debates_coded"], progress["Omar"]["debates"]) == (1, 1, 2)


def test_deleting_touches_only_ones_own_work_and_can_be_undone(store, project):
    project_id, lena, omar = project
    code = coding.add_code(store, project_id, "Lena", "Price")
    turn_id = store.turns("d1")[0].id
    mine = coding.apply_code(store, project_id, lena, "d1", turn_id, code)
    theirs = coding.apply_code(store, project_id, omar, "d1", turn_id, code)
    memo = coding.add_memo(store, project_id, omar, "coding", theirs, "the price is the point")
    with pytest.raises(PermissionError):
        coding.delete_coding(store, project_id, theirs, lena)
    with pytest.raises(PermissionError):
        coding.delete_memo(store, project_id, memo, lena)
    assert {r["id"] for r in storage.coding_rows(store, project_id)} == {mine, theirs}  # must not: Omar's gone
    coding.delete_coding(store, project_id, mine, lena)
    assert {r["id"] for r in storage.coding_rows(store, project_id)} == {theirs}
    with pytest.raises(PermissionError):
        coding.undo_delete(store, project_id, "coding", mine, omar)
    coding.undo_delete(store, project_id, "coding", mine, lena)
    assert {r["id"] for r in storage.coding_rows(store, project_id)} == {mine, theirs}
    hidden = coding.delete_code(store, project_id, code, "Lena")
    assert hidden == 2 and storage.load_project(store, project_id).codings == []
    coding.undo_delete(store, project_id, "code", code, lena)
    assert len(storage.load_project(store, project_id).codings) == 2
    actions = [(h["actor"], h["action"], h["entity"]) for h in reversed(storage.history(store, project_id))]
    assert actions[-5:] == [("Omar", "add", "memo"), ("Lena", "delete", "coding"), ("Lena", "undo", "coding"),
                            ("Lena", "delete", "code"), ("Lena", "undo", "code")]


def test_the_lead_settles_a_unit_into_gold_and_the_history_says_who(store, project):
    project_id, lena, omar = project
    price, agree = coding.add_code(store, project_id, "Lena", "Price"), coding.add_code(store, project_id, "Lena", "Agree")
    turn_id = store.turns("d1")[2].id
    coding.apply_code(store, project_id, lena, "d1", turn_id, agree)
    coding.apply_code(store, project_id, omar, "d1", turn_id, price)
    with pytest.raises(PermissionError):
        coding.settle(store, project_id, omar, "d1", turn_id, [price])
    coding.settle(store, project_id, lena, "d1", turn_id, [price])
    coding.settle(store, project_id, lena, "d1", turn_id, [agree])  # changed her mind: gold is exactly [agree]
    gold = coding.gold_coder(store, project_id)
    assert [r["code_id"] for r in storage.coding_rows(store, project_id, coder_ids=[gold])] == [agree]
    settled = [h for h in storage.history(store, project_id) if h["action"] == "settle"]
    assert settled[0]["actor"] == "Lena" and settled[0]["after"] == {"codes": [agree], "decided_by": "Lena"}


def test_memos_attach_to_each_kind_of_target_and_refuse_unknown_ones(store, project):
    project_id, lena, _ = project
    code = coding.add_code(store, project_id, "Lena", "Price")
    turn_id = store.turns("d2")[1].id
    coded = coding.apply_code(store, project_id, lena, "d2", turn_id, code)
    for target, target_id in (("project", project_id), ("code", code), ("debate", "d2"), ("turn", turn_id),
                              ("coding", coded)):
        coding.add_memo(store, project_id, lena, target, target_id, f"on the {target} <b>not html</b>")
    assert [(m.target, m.text) for m in storage.load_project(store, project_id).memos][-1] == (
        "coding", "on the coding <b>not html</b>")
    for target, target_id, field in (("debate", "d9", "target_id"), ("turn", "nope", "target_id"),
                                     ("planet", "x", "target"), ("code", "nope", "target_id")):
        with pytest.raises((ValueError, LookupError), match=f"^{field}:"):
            coding.add_memo(store, project_id, lena, target, target_id, "text")
    with pytest.raises(ValueError, match="^text:"):
        coding.add_memo(store, project_id, lena, "project", project_id, "   ")


def test_the_archives_tags_and_annotations_become_a_project_losing_nothing(tmp_path):
    """m015 on a database annotated before coding projects existed: every tag a top-level code in
    its colour, every annotation a whole-turn coding by its annotator, every note a memo."""
    path = tmp_path / "old.db"
    with Store(path) as old:
        debate(old, "d1", texts=TEXTS)
        first, second = (t.id for t in old.turns("d1")[:2])
        codebook.add_tag(old, "price talk", "red")
        codebook.annotate(old, "d1", first, "price talk", note="see $1.05", annotator="Ana")
        codebook.annotate(old, "d1", second, "flip", annotator="")
        codebook.annotate(old, "d1", second, "error", note="wrong unit", annotator="Ana")
    db = Database(path)  # as before the coding projects: their tables and steps gone
    for table in ("coding_history", "memos", "codings", "coders", "codes", "coding_project_debates", "coding_projects"):
        db[table].drop()
    db.execute("DELETE FROM _migrations WHERE name IN ('m014_coding_projects', 'm015_annotations_to_codes')")
    db.conn.commit()
    db.close()
    with Store(path) as reopened:
        (row,) = storage.projects(reopened)
        assert row["name"] == storage.ARCHIVE_PROJECT and row["debates"] == 1
        project = storage.load_project(reopened, row["id"])
        tags = {t["name"]: t["colour"] for t in codebook.tags(reopened)}
        assert {c.name: c.colour for c in project.codes} == {n: storage.PALETTE_HEX[c] for n, c in tags.items()}
        assert all(c.parent is None for c in project.codes)
        names = {c.id: c.name for c in project.coders}
        codes = {c.id: c.name for c in project.codes}
        got = sorted((names[c.coder_id], codes[c.code_id], c.turn_id, c.start, c.end, c.quote) for c in project.codings)
        assert got == sorted([("Ana", "price talk", first, 0, len(TEXTS[0]), TEXTS[0]),
                              ("(no name)", "flip", second, 0, len(TEXTS[1]), TEXTS[1]),
                              ("Ana", "error", second, 0, len(TEXTS[1]), TEXTS[1])])
        assert sorted(m.text for m in project.memos) == ["see $1.05", "wrong unit"]
        assert len(reopened.annotations("d1")) == 3  # the annotations stay where they were


def test_a_new_archive_gets_no_project_from_its_starting_tags(tmp_path):
    with Store(tmp_path / "new.db") as fresh:
        assert storage.projects(fresh) == []


def test_agreement_of_a_stored_project_and_its_disagreements_with_gold(store, project):
    """Two coders over d1's three turns (d2, coded by Lena only, is left out): Price agreed on turn 1
    and absent on both elsewhere, Agreement applied by Lena alone on turn 3. By hand: Price 3/3 agree,
    Agreement 2/3; Cohen's kappa of Agreement = (2/3 - 2/3) / (1 - 2/3) = 0."""
    import csv
    import io

    from mad_core.qda import reports

    project_id, lena, omar = project
    price, agree = coding.add_code(store, project_id, "Lena", "=Price"), coding.add_code(store, project_id, "Lena", "Agree")
    t1, _, t3 = (t.id for t in store.turns("d1"))
    coding.apply_code(store, project_id, lena, "d1", t1, price, 14, 19)
    coding.apply_code(store, project_id, omar, "d1", t1, price)
    coding.apply_code(store, project_id, lena, "d1", t3, agree)
    coding.apply_code(store, project_id, lena, "d2", store.turns("d2")[0].id, price)
    rows = reports.agreement_rows(store, project_id, [lena, omar])
    by_code = {row.code: row.agreement for row in rows}
    assert by_code["=Price"].n_units == 3 and by_code["=Price"].percent_agreement.value == 1.0
    assert by_code["Agree"].percent_agreement.value == pytest.approx(2 / 3)
    assert by_code["Agree"].cohen_kappa.value == pytest.approx(0.0)
    records = reports.agreement_records(store, project_id, rows)
    parsed = list(csv.DictReader(io.StringIO(reports.agreement_csv(records))))
    assert [r["code"] for r in parsed] == ["'=Price", "Agree", "overall"]  # must not: a formula in the CSV
    assert parsed[0]["coders"] == "Lena; Omar" and float(parsed[1]["percent_agreement"]) == pytest.approx(2 / 3)
    differ = reports.disagreements(store, project_id, [lena, omar])
    # t1: both applied =Price, Lena to "$1.05" only, Omar to the whole turn: different characters, listed.
    assert [(d["turn_id"], d["codes"], d["gold"]) for d in differ] == [
        (t1, {"Lena": ["=Price"], "Omar": ["=Price"]}, None), (t3, {"Lena": ["Agree"], "Omar": []}, None)]
    assert differ[1]["text"] == TEXTS[2] and differ[1]["header"] == "Agent 1 · round 2 · discussion"
    assert differ[0]["differ"][0]["passages"] == {"Lena": [(14, 19, "$1.05")], "Omar": [(0, len(TEXTS[0]), TEXTS[0])]}
    coding.settle(store, project_id, lena, "d1", t3, [])  # the lead: nothing applies here
    coding.settle(store, project_id, lena, "d1", t1, [price])
    after = reports.disagreements(store, project_id, [lena, omar])
    assert [d["gold"] for d in after] == [["=Price"], None]  # an empty gold is no coding
    assert after[1]["differ"][0]["decided"] and after[1]["differ"][0]["gold"] == []  # decided: "not this code"
    gold = coding.gold_coder(store, project_id)
    versus = {row.code: row.agreement for row in reports.agreement_rows(store, project_id, [omar, gold])}
    assert versus["=Price"].percent_agreement.value == 1.0 and versus["Agree"].percent_agreement.value == 1.0


def test_a_coders_name_belongs_to_the_browser_that_took_it(store):
    project_id = coding.create_project(store, "Names", "Lena", debate_ids=["d1"])
    omar = coding.join(store, project_id, "Omar", session="browser-a")
    assert coding.join(store, project_id, "omar", session="browser-a") == omar  # a reload: the same coder
    with pytest.raises(ValueError, match="^coder:"):
        coding.join(store, project_id, "Omar", session="browser-b")  # must not: coding as Omar elsewhere
    lena = coding.join(store, project_id, "Lena", session="browser-c")  # the lead's name, not yet held
    with pytest.raises(ValueError, match="^coder:"):
        coding.join(store, project_id, "LENA", session="browser-b")
    assert len(storage.coder_rows(store, project_id)) == 2 and lena != omar


def test_a_project_exported_as_qdpx_comes_back_onto_the_same_debates_and_a_qdc_adds_codes(store, project):
    """Export, then import into a second project of the same debates: the same codes (hierarchy,
    colours, descriptions), coders, passages and memos; importing again adds nothing. A QDC from
    another tool adds only the codes the project lacks (matched by name); a hostile file writes nothing."""
    import xmlschema

    from mad_core.qda import exchange, refi

    project_id, lena, omar = project
    parent = coding.add_code(store, project_id, "Lena", "Reasoning", definition="any argument", colour="#112233")
    child = coding.add_code(store, project_id, "Lena", "Arithmetic", parent=parent, exclude="units")
    t1 = store.turns("d1")[0].id
    passage = coding.apply_code(store, project_id, lena, "d1", t1, child, 14, 19)
    coding.apply_code(store, project_id, omar, "d1", t1, parent)
    coding.add_memo(store, project_id, omar, "coding", passage, "a price, not a unit")
    data = exchange.export_qdpx(store, project_id)
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        xmlschema.XMLSchema(str(refi.SCHEMA_PATH)).validate(archive.read("project.qde"))
    second = coding.create_project(store, "Second", "Lena", debate_ids=["d1", "d2"])
    counts = exchange.import_project(store, second, "Lena", data)
    assert counts == {"codes": 2, "coders": 1, "codings": 2, "memos": 1}  # Lena leads both: matched by name
    before = storage.load_project(store, project_id)
    after = storage.load_project(store, second)
    assert [(c.name, c.colour, c.definition, c.exclude) for c in after.codes] == [
        (c.name, c.colour, c.definition, c.exclude) for c in before.codes]
    names = {c.id: c.name for c in after.coders}
    assert sorted((names[c.coder_id], c.turn_id, c.start, c.end, c.quote) for c in after.codings) == sorted(
        [("Lena", t1, 14, 19, "$1.05"), ("Omar", t1, 0, len(TEXTS[0]), TEXTS[0])])
    assert [m.text for m in after.memos] == ["a price, not a unit"]
    assert exchange.import_project(store, second, "Lena", data) == {"codes": 0, "coders": 0, "codings": 0, "memos": 0}
    qdc = (b'<?xml version="1.0" encoding="utf-8"?><CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="Other tool">'
           b'<Codes><Code guid="A1B2C3D4-0000-4000-8000-000000000001" name="reasoning" isCodable="true"/>'
           b'<Code guid="A1B2C3D4-0000-4000-8000-000000000002" name="Hedging" isCodable="true" color="#00FF00">'
           b'<Description>Softens a claim.</Description></Code></Codes></CodeBook>')
    assert exchange.import_codebook(store, project_id, "Lena", qdc) == 1
    assert [c["name"] for c in storage.code_rows(store, project_id)][-1] == "Hedging"
    bomb = (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
            b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="A1B2C3D4-0000-4000-8000-000000000003" '
            b'name="&b;" isCodable="true"/></Codes></CodeBook>')
    rows_before = len(storage.history(store, project_id))
    with pytest.raises(exchange.QdaImportError):
        exchange.import_codebook(store, project_id, "Lena", bomb)
    assert len(storage.history(store, project_id)) == rows_before  # must not: anything written
    assert "Hedging" in [c["name"] for c in storage.code_rows(store, project_id)] and len(
        storage.code_rows(store, project_id)) == 3


def test_a_debate_deleted_from_the_archive_leaves_a_project_that_still_exports(store, project):
    from mad_core.qda import exchange

    project_id, lena, omar = project
    parent = coding.add_code(store, project_id, "Lena", "Reasoning")
    child = coding.add_code(store, project_id, "Lena", "Arithmetic", parent=parent)
    kept = coding.apply_code(store, project_id, lena, "d1", store.turns("d1")[0].id, child)
    gone = coding.apply_code(store, project_id, omar, "d2", store.turns("d2")[0].id, child)
    coding.add_memo(store, project_id, omar, "coding", gone, "on a debate about to go")
    coding.delete_code(store, project_id, child, "Lena")
    coding.delete_code(store, project_id, parent, "Lena")
    coding.undo_delete(store, project_id, "code", child, lena)  # the child back, its parent still deleted
    store.delete_debate("d2")
    loaded = storage.load_project(store, project_id)
    assert [c.id for c in loaded.codings] == [kept] and loaded.memos == []
    assert [(c.name, c.parent) for c in loaded.codes] == [("Arithmetic", None)]
    assert exchange.export_qdpx(store, project_id)  # must not: an export refused for what is gone
    assert {r["id"] for r in storage.coding_rows(store, project_id)} == {kept, gone}  # nothing removed


def test_the_lead_is_held_by_the_browser_that_made_the_project_and_a_memo_is_edited_by_its_author(store):
    project_id = coding.create_project(store, "Held", "Lena", debate_ids=["d2", "d1"], session="browser-a")
    assert storage.debate_ids(store, project_id) == ["d2", "d1"]  # in the order they were picked
    with pytest.raises(ValueError, match="^coder:"):
        coding.join(store, project_id, "Lena", session="browser-b")  # must not: the lead's name taken
    lena = coding.join(store, project_id, "Lena", session="browser-a")
    omar = coding.join(store, project_id, "Omar", session="browser-b")
    memo = coding.add_memo(store, project_id, lena, "debate", "d1", "first thought")
    with pytest.raises(PermissionError):
        coding.edit_memo(store, project_id, memo, omar, "his words")
    coding.edit_memo(store, project_id, memo, lena, "second thought")
    assert [m.text for m in storage.load_project(store, project_id).memos] == ["second thought"]
    edit = next(h for h in storage.history(store, project_id) if h["action"] == "edit")
    assert (edit["before"]["text"], edit["after"]["text"]) == ("first thought", "second thought")


def test_passages_of_a_debate_as_a_viewer_may_see_them_blind_then_revealed(store, project):
    """What the Transcripts page highlights in a turn: blind mode holds (a coder sees their own, the
    lead all, a stranger nothing; a name held by another browser session shows nothing), everything
    once revealed; a deleted coding or a deleted code's codings are not drawn."""
    project_id, lena, omar = project
    coding.join(store, project_id, "Omar", session="omar-browser")
    turn = storage.turn_rows(store, "d1")[0]
    price = coding.add_code(store, project_id, "Lena", "Price", colour="#D62728")
    doubt = coding.add_code(store, project_id, "Lena", "Doubt")
    coding.apply_code(store, project_id, omar, "d1", turn["turn_id"], price, 14, 19)  # "$1.05"
    coding.apply_code(store, project_id, lena, "d1", turn["turn_id"], doubt)
    gone = coding.apply_code(store, project_id, omar, "d1", turn["turn_id"], doubt, 0, 3)
    coding.delete_coding(store, project_id, gone, omar)
    omar_sees = coding.passages_of_debate(store, "d1", "omar", "omar-browser")
    assert omar_sees == {turn["turn_id"]: [{"start": 14, "end": 19, "quote": "$1.05", "code": "Price",
                                           "colour": "#D62728", "coder": "Omar", "project": "Bat and ball"}]}
    lena_sees = coding.passages_of_debate(store, "d1", "Lena", None)
    assert sorted((p["coder"], p["code"], p["start"], p["end"]) for p in lena_sees[turn["turn_id"]]) == [
        ("Lena", "Doubt", 0, len(TEXTS[0])), ("Omar", "Price", 14, 19)]
    # must not: a stranger, or someone typing Omar's name in another browser, sees a blind project's codings
    assert coding.passages_of_debate(store, "d1", None) == {}
    assert coding.passages_of_debate(store, "d1", "Omar", "someone-else") == {}
    assert coding.passages_of_debate(store, "d2", "Lena") == {}  # nothing coded there
    coding.reveal(store, project_id, lena)
    assert len(coding.passages_of_debate(store, "d1", None)[turn["turn_id"]]) == 2
    coding.delete_code(store, project_id, doubt, "Lena")
    assert [p["code"] for p in coding.passages_of_debate(store, "d1", None)[turn["turn_id"]]] == ["Price"]


def test_a_code_on_different_passages_is_a_disagreement_the_lead_settles_to_one_coders_passage(store, project):
    """Both coders put Price on turn 1, Lena on "$1.05", Omar on "5 cents": listed. Turn 2 coded with the
    same characters in one passage and in two (must not be listed). The lead settles Price on turn 1 to
    Omar's passage: gold gets his offsets and quote, and an earlier gold coding of Price there goes."""
    from mad_core.qda import reports

    project_id, lena, omar = project
    price = coding.add_code(store, project_id, "Lena", "Price")
    t1, t2, _ = (t.id for t in store.turns("d1"))
    coding.apply_code(store, project_id, lena, "d1", t1, price, 14, 19)
    coding.apply_code(store, project_id, omar, "d1", t1, price, 33, 40)
    coding.apply_code(store, project_id, lena, "d1", t2, price, 0, 3)
    coding.apply_code(store, project_id, lena, "d1", t2, price, 3, 6)
    coding.apply_code(store, project_id, omar, "d1", t2, price, 0, 6)
    differ = reports.disagreements(store, project_id, [lena, omar])
    assert [d["turn_id"] for d in differ] == [t1]  # must not: t2, the same characters in other pieces
    item = differ[0]["differ"][0]
    assert (item["code_id"], item["code"], item["gold"], item["decided"]) == (price, "Price", [], False)
    assert item["passages"] == {"Lena": [(14, 19, "$1.05")], "Omar": [(33, 40, "5 cents")]}
    assert reports.passage_unit(store, project_id, [lena, omar]) == "character"
    gold = coding.gold_coder(store, project_id)
    earlier = coding.settle(store, project_id, lena, "d1", t1, [price])  # the whole turn first
    history = len(storage.history(store, project_id))
    # must not: a coder who does not lead settles, or offsets past the turn; nothing written by either
    with pytest.raises(PermissionError):
        coding.settle_code(store, project_id, omar, "d1", t1, price, [(33, 40)])
    with pytest.raises(ValueError, match="^end:"):
        coding.settle_code(store, project_id, lena, "d1", t1, price, [(33, 40), (0, 999)])
    assert [r["id"] for r in storage.coding_rows(store, project_id, coder_ids=[gold])] == earlier
    assert len(storage.history(store, project_id)) == history
    made = coding.settle_code(store, project_id, lena, "d1", t1, price, [tuple(s[:2]) for s in item["passages"]["Omar"]])
    rows = storage.coding_rows(store, project_id, coder_ids=[gold])
    assert [(r["id"], r["start"], r["end"], r["quote"], r["code_id"]) for r in rows] == [
        (made[0], 33, 40, "5 cents", price)]
    assert [r["deleted_at"] is not None for r in storage.coding_rows(store, project_id, coder_ids=[gold], deleted=True)
            if r["id"] in earlier] == [True]  # replaced, kept in the database as deleted
    settled = storage.history(store, project_id)[0]
    assert (settled["actor"], settled["action"], settled["after"]["spans"], settled["after"]["decided_by"]) == (
        "Lena", "settle", [[33, 40]], "Lena")
    item = reports.disagreements(store, project_id, [lena, omar])[0]["differ"][0]
    assert (item["gold"], item["decided"]) == ([(33, 40, "5 cents")], True)
    # Omar against gold over characters: they differ only on turn 2's first 6 characters (gold has none there).
    total = sum(len(text) for text in TEXTS)
    versus = reports.agreement_rows(store, project_id, [omar, gold], "character")[0].agreement
    assert versus.n_units == total and versus.percent_agreement.value == pytest.approx(1 - 6 / total)
    coding.settle_code(store, project_id, lena, "d1", t1, price, [])  # "not this code"
    assert storage.coding_rows(store, project_id, coder_ids=[gold]) == []
    assert reports.disagreements(store, project_id, [lena, omar])[0]["differ"][0]["decided"]


def test_the_unit_that_shows_the_coders_work_is_the_turn_until_a_passage_is_coded(store, project):
    from mad_core.qda import reports

    project_id, lena, omar = project
    price = coding.add_code(store, project_id, "Lena", "Price")
    t1 = store.turns("d1")[0].id
    coding.apply_code(store, project_id, lena, "d1", t1, price)
    coding.apply_code(store, project_id, omar, "d1", t1, price, 0, len(TEXTS[0]))  # a "passage" of every character
    assert reports.passage_unit(store, project_id, [lena, omar]) == "turn"
    assert reports.disagreements(store, project_id, [lena, omar]) == []  # the same characters: no disagreement
    coding.apply_code(store, project_id, omar, "d1", t1, price, 4, 7)
    assert reports.passage_unit(store, project_id, [lena, omar]) == "character"
    assert reports.passage_unit(store, project_id, [lena]) == "turn"


def test_a_coder_invitation_is_the_leads_to_make_and_retire_and_a_retired_one_admits_nobody(store, project):
    from mad_core.qda import invitations

    project_id, lena, omar = project
    other = coding.create_project(store, "Other", "Lena", debate_ids=["d2"])
    with pytest.raises(PermissionError):  # must not: a coder who does not lead hands out or retires a code
        invitations.invite(store, project_id, omar)
    assert invitations.live_code(store, project_id) is None and store.query("SELECT * FROM join_codes") == []
    code = invitations.invite(store, project_id, lena)
    assert len(code) == 6 and invitations.invite(store, project_id, lena) == code  # one live code at a time
    assert invitations.project_of(store, f" {code[:3].lower()}-{code[3:]} ") == project_id
    assert invitations.admits(store, code) == {"code": code, "project": project_id, "retired": False}
    with pytest.raises(PermissionError):
        invitations.retire(store, project_id, omar)
    assert invitations.project_of(store, code) == project_id
    assert invitations.retire(store, project_id, lena) == code
    assert invitations.project_of(store, code) is None  # retired: admits nobody
    assert invitations.admits(store, code)["retired"] is True
    assert invitations.retire(store, project_id, lena) is None  # nothing live to retire
    again = invitations.invite(store, project_id, lena)
    assert again != code and invitations.project_of(store, again) == project_id
    assert invitations.project_of(store, code) is None and invitations.project_of(store, "KKKKKK") is None
    assert invitations.live_code(store, other) is None  # another project's: not invited by this code
    actions = [(h["actor"], h["action"], h["entity"]) for h in storage.history(store, project_id)[:3]]
    assert actions == [("Lena", "invite", "invitation"), ("Lena", "retire", "invitation"),
                       ("Lena", "invite", "invitation")]
    # A poll's code is no coder invitation.
    from mad_core import join_codes
    poll_code = join_codes.issue(store, "poll", "some-poll")
    assert invitations.admits(store, poll_code) is None and invitations.project_of(store, poll_code) is None


def test_an_invited_coder_never_takes_the_leads_the_golds_or_a_models_name(store):
    project_id = coding.create_project(store, "Names", "Lena", debate_ids=["d1"])  # nobody holds Lena yet
    with pytest.raises(ValueError, match="^coder: 'lena' is the name of the project's lead"):
        coding.join(store, project_id, "lena", session="visitor:x", may_lead=False)
    coding.gold_coder(store, project_id)
    coding.join(store, project_id, "scripted/m", kind="model")
    for name in ("Gold", "scripted/m"):
        with pytest.raises(ValueError, match="^coder: .* coder; pick your own name"):
            coding.join(store, project_id, name, session="visitor:x", may_lead=False)
    ana = coding.join(store, project_id, "Ana", session="visitor:x", may_lead=False)
    assert not coding.is_lead(store, project_id, ana)
    assert [(c["name"], c["session"]) for c in storage.coder_rows(store, project_id)] == [
        ("Lena", None), ("gold", None), ("scripted/m", None), ("Ana", "visitor:x")]  # must not: Lena's held
