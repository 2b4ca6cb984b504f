"""The Coding page (pages/8_Coding.py, madlab_ui/coding.py), driven through its widgets: a project made
and opened, a whole turn and a passage coded (their offsets and quotes stored), blind mode between two
browser sessions (the second sees nothing of the first until the lead reveals, and cannot take the
lead's name), delete that asks first and can be undone, the agreement table equal to the engine's
figures, hostile names and turn text drawn literally, and the exchange tab (QDPX out, a hostile QDC
refused with nothing written), and a model's pre-coding in the background with a proposal accepted.
The lead settles a passage disagreement into gold, and hands out a coder invitation: a visitor from
another machine who types it at /join codes that project only (no other project, no lead's tab, no
teacher page), until the lead retires it.
"""
from __future__ import annotations

import re

import pytest
from app_helpers import APP, keys, run_debate, scripted_debate, texts
from streamlit.testing.v1 import AppTest
from test_access import remote  # noqa: F401 - the fixture: every session on another machine
from test_join_page import JOIN
from test_join_page import join as join_by_code

from mad_core.qda import coding, invitations, reports, storage
from mad_core.store import Store
from madlab_ui import access
from madlab_ui import coding as page_parts
from madlab_ui.coding import CODING_OPEN, FIGURE_TITLES

CODING = "pages/8_Coding.py"
HOSTILE = "<b>x</b> :red-background[x] $1 and $2 ] &amp;"


def page(name: str | None = None) -> AppTest:
    """A new browser session (its own owner token) on the Coding page, with its coder name given."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(CODING).run()
    if name:
        at.text_input(key="coding_coder").input(name).run()
    assert not at.exception, at.exception
    return at


def clicked(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    return at


def first_turn(debate_id: str) -> dict:
    return storage.turn_rows(Store(), debate_id)[0]


def project_of_page(debates: list[str]) -> tuple[AppTest, str]:
    """Ann makes a blind project of `debates` with the code "Price" through the page's widgets."""
    at = page("Ann")
    at.text_input(key="coding_new_name").input("Price study")
    at.multiselect(key="coding_new_debates").set_value(debates)
    clicked(at, "coding_create")
    project_id = at.session_state[CODING_OPEN]
    at.text_input(key="coding_code_name").input("Price")
    clicked(at, "coding_code_add")
    return at, project_id


def on_debate(at: AppTest, debate_id: str) -> AppTest:
    """The Code tab showing `debate_id` (the project's first debate is shown first)."""
    if at.selectbox(key="coding_debate").value != debate_id:
        at.selectbox(key="coding_debate").set_value(debate_id).run()
    return at


def code_turn(at: AppTest, debate_id: str, index: int, code_ids: list[str], span: tuple[int, int] | None = None):
    suffix = f"{debate_id[:8]}_{index}"
    on_debate(at, debate_id)
    at.multiselect(key=f"coding_codes_{suffix}").set_value(code_ids)
    if span is not None:
        at.radio(key=f"coding_scope_{suffix}").set_value("Passage by words").run()
        at.select_slider(key=f"coding_span_{suffix}").set_range(*span).run()
    return clicked(at, f"coding_apply_{suffix}")


def codings_of(project_id: str, coder: str) -> list[dict]:
    store = Store()
    coder_id = next(c["id"] for c in storage.coder_rows(store, project_id) if c["name"] == coder)
    return storage.coding_rows(store, project_id, coder_ids=[coder_id])


@pytest.fixture
def coded():
    """Ann's project of two debates; she codes the first turn whole, then a passage of it."""
    debates = [run_debate("What is the capital of France?"), run_debate("Which city is largest?")]
    at, project_id = project_of_page(debates)
    price = storage.code_rows(Store(), project_id)[0]["id"]
    code_turn(at, debates[0], 0, [price])
    code_turn(at, debates[0], 0, [price], span=(1, 3))
    return at, project_id, debates, price


# ----- projects and coding ---------------------------------------------------------------------------
def test_a_project_made_on_the_page_is_stored_and_turns_are_coded_whole_and_by_passage(coded):
    at, project_id, debates, price = coded
    store = Store()
    project = storage.project_row(store, project_id)
    assert (project["name"], project["lead"], project["blind"]) == ("Price study", "Ann", 1)
    assert sorted(storage.debate_ids(store, project_id)) == sorted(debates)
    assert [c["name"] for c in storage.code_rows(store, project_id)] == ["Price"]
    text = first_turn(debates[0])["content"]
    whole, part = codings_of(project_id, "Ann")
    assert (whole["start"], whole["end"], whole["quote"], whole["code_id"]) == (0, len(text), text, price)
    words = [m.span() for m in re.finditer(r"\S+", text)]  # word 2 to word 4 (slider 1..3)
    assert (part["start"], part["end"]) == (words[1][0], words[3][1])
    assert part["quote"] == text[words[1][0]:words[3][1]] == "1 thinks about"
    suffix = f"{debates[0][:8]}_0"
    shown = at.get_by_key(f"coding_text_{suffix}").markdown[0].value
    assert shown.count("-background[") == 2  # both passages highlighted
    assert "Price" in texts(at.get_by_key(f"coding_turn_{suffix}"))
    # The passage preview shows the exact quote while the slider is set.
    assert at.get_by_key(f"coding_preview_{suffix}").text[0].value == "1 thinks about"
    # Must not happen: a coding on a turn that was not coded.
    assert "-background[" not in at.get_by_key(f"coding_text_{debates[0][:8]}_1").markdown[0].value


def test_a_project_needs_a_coder_name_and_nothing_is_made_without_one():
    debate = run_debate()
    at = page()
    at.text_input(key="coding_new_name").input("Nameless")
    at.multiselect(key="coding_new_debates").set_value([debate])
    clicked(at, "coding_create")
    assert "coder" in texts(at.get_by_key("coding_message"))
    assert storage.projects(Store()) == []


# ----- blind mode, two browsers ----------------------------------------------------------------------
def test_blind_a_second_coder_sees_nothing_of_the_first_until_the_lead_reveals(coded):
    at, project_id, debates, price = coded
    suffix = f"{debates[0][:8]}_0"
    bob = page("Bob")
    assert bob.session_state["owner_id"] != at.session_state["owner_id"]
    on_debate(clicked(bob, f"coding_open_{project_id[:8]}"), debates[0])
    assert "until Ann reveals them" in texts(bob.get_by_key("coding_blind"))
    # Must not happen: Ann's passages, her coding's line or her figures on Bob's page.
    assert "-background[" not in bob.get_by_key(f"coding_text_{suffix}").markdown[0].value
    assert "Ann" not in texts(bob.get_by_key(f"coding_turn_{suffix}"))
    assert "coding_agree_compute" not in keys(bob) and "coding_reveal" not in keys(bob)
    assert "after Ann reveals" in texts(bob)
    # Bob cannot code under Ann's name: the page refuses it, naming the field, and shows no coding controls.
    bob.text_input(key="coding_coder").input("ann").run()
    assert "coder name" in texts(bob) and "another coder's name" in texts(bob)
    assert f"coding_apply_{suffix}" not in keys(bob)
    bob.text_input(key="coding_coder").input("Bob").run()
    clicked(at, "coding_reveal")
    on_debate(bob.run(), debates[0])
    assert "-background[" in bob.get_by_key(f"coding_text_{suffix}").markdown[0].value
    assert "Ann" in texts(bob.get_by_key(f"coding_turn_{suffix}"))
    # Bob sees Ann's codings, but a Delete button only on his own (he has none).
    assert not [k for k in keys(bob) if k.startswith("coding_delete_coding_")]


# ----- delete, confirm, undo -------------------------------------------------------------------------
def test_deleting_a_coding_asks_first_and_undo_brings_it_back(coded):
    at, project_id, _, _ = coded
    target = codings_of(project_id, "Ann")[0]
    suffix = f"coding_{target['id'][:8]}"
    clicked(at, f"coding_delete_{suffix}")
    assert len(codings_of(project_id, "Ann")) == 2  # the first click deletes nothing
    assert f"coding_confirm_{suffix}" in keys(at)
    clicked(at, f"coding_confirm_{suffix}")
    assert [c["id"] for c in codings_of(project_id, "Ann")] != [] and target["id"] not in {
        c["id"] for c in codings_of(project_id, "Ann")}
    clicked(at, "coding_undo")
    assert target["id"] in {c["id"] for c in codings_of(project_id, "Ann")}
    assert "coding_undo" not in keys(at)


# ----- agreement ---------------------------------------------------------------------------------------
def test_the_agreement_table_shows_the_engines_figures_for_two_coders(coded):
    at, project_id, debates, price = coded
    bob = page("Bob")
    clicked(bob, f"coding_open_{project_id[:8]}")
    code_turn(bob, debates[0], 0, [price])
    code_turn(bob, debates[0], 1, [price])
    store = Store()
    ids = {c["name"]: c["id"] for c in storage.coder_rows(store, project_id)}
    at.multiselect(key="coding_agree_coders").set_value([ids["Ann"], ids["Bob"]])
    assert "coding_agree_table" not in keys(at.run())  # nothing computed before Compute
    clicked(at, "coding_agree_compute")
    shown = at.get_by_key("coding_agree_table").dataframe[0].value.to_dict("records")
    expected = reports.agreement_rows(store, project_id, [ids["Ann"], ids["Bob"]], "turn")
    assert [row["code"] for row in shown] == [row.code for row in expected] == ["Price", "overall"]
    for row, want in zip(shown, expected):
        assert row["n units"] == want.n_units > 0
        for name, title in FIGURE_TITLES.items():
            assert row[title] == getattr(want.agreement, name).text()
    assert re.fullmatch(r"-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\]", shown[-1]["Cohen's κ"])  # a figure, not n/a
    assert "unit: turn" in texts(at.get_by_key("coding_agree_table"))
    assert "coding_agree_csv" in keys(at)


# ----- hostile text ------------------------------------------------------------------------------------
def hostile_reply(messages, info) -> str:
    kind = info["metadata"].get("kind")
    return "1" if kind == "vote" else "Paris" if kind == "extraction" else f"{HOSTILE}\nFinal answer: Paris"


def test_hostile_code_names_and_turn_text_are_drawn_literally():
    model = "apptest_hostile"
    debate = scripted_debate(model, hostile_reply, {
        "question": "What is $5 and $6?", "agents": [{"label": f"Agent {i}", "model": f"scripted/{model}"}
                                                    for i in (1, 2)],
        "rounds": 1, "max_rounds": 1, "protocol": "simple_voting"})
    store = Store()
    project_id = coding.create_project(store, "<i>study</i>", "Ann", debate_ids=[debate])
    ann = coding.join(store, project_id, "Ann")
    code = coding.add_code(store, project_id, "Ann", HOSTILE, definition="$1 and $2 <script>")
    turn = first_turn(debate)
    assert turn["content"].startswith(HOSTILE)
    coding.apply_code(store, project_id, ann, debate, turn["turn_id"], code, 0, len(HOSTILE))
    at = page("Ann")
    clicked(at, f"coding_open_{project_id[:8]}")
    source = at.get_by_key(f"coding_text_{debate[:8]}_0").markdown[0].value
    bare = re.sub(r"\\.", "", source)  # the source with every escaped character taken out
    assert bare.count("[") == bare.count("]") == 1 and bare.startswith(":")  # one directive, the highlight
    assert "<" not in bare and "$" not in bare and "&" not in bare
    label = re.match(r":\w+-background\[((?:\\.|[^\]\\])*)\]", source).group(1)
    assert re.sub(r"\\(.)", r"\1", label) == HOSTILE  # the passage, every character of it, literally
    tree = texts(at.get_by_key("coding_codebook_tree"))
    assert r"\<b\>x\</b\> \:red\-background\[x\] \$1 and \$2 \]" in tree and r"\<script\>" in tree
    assert "<b>" not in re.sub(r"\\.", "", tree)
    assert r"\<i\>study\</i\>" in at.header[0].value


# ----- exchange -----------------------------------------------------------------------------------------
EVIL_QDC = (b'<?xml version="1.0"?><!DOCTYPE c [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
            b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="5d5e3b0a-0000-4000-8000-000000000001" '
            b'name="&e;" isCodable="true"/></Codes></CodeBook>')


def test_the_exchange_tab_offers_qdpx_and_refuses_a_hostile_qdc_writing_nothing(coded):
    at, project_id, _, _ = coded
    assert at.get_by_key("coding_qdpx") is not None and "coding_qdc" in keys(at)
    store = Store()
    before = (len(storage.code_rows(store, project_id)), len(storage.history(store, project_id)))
    at.file_uploader(key="coding_upload").set_value(("evil.qdc", EVIL_QDC, "application/xml"))
    clicked(at, "coding_import")
    message = texts(at.get_by_key("coding_message"))
    assert "refused at" in message and "Nothing was imported" in message
    assert (len(storage.code_rows(store, project_id)), len(storage.history(store, project_id))) == before


# ----- pre-coding ----------------------------------------------------------------------------------------
def test_a_model_pre_codes_in_the_background_and_a_proposal_is_accepted(coded, script):
    at, project_id, debates, price = coded
    model, _ = script(lambda messages, info: '{"codes": ["Price"]}')
    at.text_input(key="coding_precode_model").input(model)
    clicked(at, "coding_precode")
    job = page_parts.precode_job(project_id)
    job.thread.join(timeout=60)
    assert not job.running and job.error is None
    at.run()
    turns = sum(len(storage.turn_rows(Store(), d)) for d in debates)
    assert f"{turns} turns asked, {turns} proposals" in texts(at.get_by_key("coding_precode_status"))
    accepts = sorted(k for k in keys(at) if k.startswith("coding_accept_"))
    assert len(accepts) == turns
    clicked(at, accepts[0])
    mine = codings_of(project_id, "Ann")
    assert len(mine) == 3 and mine[-1]["proposal_id"] is not None
    assert len([k for k in keys(at) if k.startswith("coding_accept_")]) == turns - 1


# ----- the codebook ---------------------------------------------------------------------------------------
def test_codes_are_added_under_a_parent_edited_and_deleted_with_confirmation_and_undo(coded):
    at, project_id, _, price = coded
    at.text_input(key="coding_code_name").input("Cheap")
    at.selectbox(key="coding_code_parent").set_value(price)
    clicked(at, "coding_code_add")
    codes = {c["name"]: c for c in storage.code_rows(Store(), project_id)}
    assert codes["Cheap"]["parent_id"] == price
    assert "↳" in texts(at.get_by_key("coding_codebook_tree"))
    at.selectbox(key="coding_edit_code").set_value(price).run()
    assert at.text_input(key="coding_edit_name").value == "Price"  # the picked code's fields are loaded
    at.text_input(key="coding_edit_name").input("Cost")
    clicked(at, "coding_edit_save")
    assert storage.code_rows(Store(), project_id)[0]["name"] == "Cost"
    # A code with a child is refused (said), after the confirmation; must not happen: it goes.
    clicked(clicked(at, f"coding_delete_code_{price[:8]}"), f"coding_confirm_code_{price[:8]}")
    assert "has child codes" in texts(at.get_by_key("coding_message"))
    assert {c["name"] for c in storage.code_rows(Store(), project_id)} == {"Cost", "Cheap"}
    cheap = codes["Cheap"]["id"]
    at.selectbox(key="coding_edit_code").set_value(cheap).run()
    clicked(at, f"coding_delete_code_{cheap[:8]}")
    assert len(storage.code_rows(Store(), project_id)) == 2  # asked first
    clicked(at, f"coding_confirm_code_{cheap[:8]}")
    assert [c["name"] for c in storage.code_rows(Store(), project_id)] == ["Cost"]
    clicked(at, "coding_undo")
    assert {c["name"] for c in storage.code_rows(Store(), project_id)} == {"Cost", "Cheap"}


def test_a_memo_on_the_debate_is_stored_and_shown_literally(coded):
    at, project_id, debates, _ = coded
    on_debate(at, debates[0])
    at.text_input(key="coding_memo_title").input("<b>note</b>")
    at.text_area(key="coding_memo_text").input("costs $1.05 and $2")
    clicked(at, "coding_memo_add")
    memo = storage.memo_rows(Store(), project_id)[-1]
    assert (memo["target"], memo["target_id"], memo["text"]) == ("debate", debates[0], "costs $1.05 and $2")
    shown = texts(at.get_by_key("coding_memos"))
    assert r"\<b\>note\</b\>" in shown and r"\$1\.05 and \$2" in shown
    assert f"coding_delete_memo_{memo['id'][:8]}" in keys(at)
    at.text_area(key=f"coding_memo_text_{memo['id'][:8]}").input("costs $1.10 after all")
    clicked(at, f"coding_memo_save_{memo['id'][:8]}")
    assert storage.memo_rows(Store(), project_id)[-1]["text"] == "costs $1.10 after all"
    bob = page("Bob")
    clicked(bob, f"coding_open_{project_id[:8]}")
    on_debate(bob, debates[0])
    assert f"coding_memo_save_{memo['id'][:8]}" not in keys(bob)  # must not: Bob editing Ann's memo


# ----- disagreements, gold and history ---------------------------------------------------------------------
def test_the_lead_settles_a_disagreement_into_gold_and_the_history_says_who(coded):
    at, project_id, debates, price = coded
    bob = page("Bob")
    clicked(bob, f"coding_open_{project_id[:8]}")
    code_turn(bob, debates[0], 1, [price])
    assert "coding_dis_coders" not in keys(bob)  # the lead's tabs only
    ids = {c["name"]: c["id"] for c in storage.coder_rows(Store(), project_id)}
    at.multiselect(key="coding_dis_coders").set_value([ids["Ann"], ids["Bob"]]).run()
    first = at.get_by_key("coding_dis_0")
    assert "Ann" in texts(first) and "Bob" in texts(first) and "not settled" in texts(first)
    at.multiselect(key="coding_settle_codes_0").set_value([price])
    clicked(at, "coding_settle_0")
    store = Store()
    gold = next(c["id"] for c in storage.coder_rows(store, project_id) if c["kind"] == "gold")
    assert [c["code_id"] for c in storage.coding_rows(store, project_id, coder_ids=[gold])] == [price]
    assert "vs gold" in texts(at.get_by_key("coding_gold_agreement"))
    history = at.get_by_key("coding_history").dataframe[0].value.to_dict("records")
    assert (history[0]["who"], history[0]["action"]) == ("Ann", "settle")


def test_the_lead_settles_a_passage_disagreement_to_one_coders_passage_and_gold_shows_it(coded):
    """Ann coded Price on the whole first turn, Bob on "the zebrafinch." only: the same code on different
    characters is listed, each coder's passage highlighted; "As Bob" copies his passage into gold."""
    at, project_id, debates, price = coded
    bob = page("Bob")
    clicked(bob, f"coding_open_{project_id[:8]}")
    code_turn(bob, debates[0], 0, [price], span=(4, 5))
    ids = {c["name"]: c["id"] for c in storage.coder_rows(Store(), project_id)}
    theirs = codings_of(project_id, "Bob")[0]
    assert theirs["quote"] == "the zebrafinch."
    at.multiselect(key="coding_dis_coders").set_value([ids["Ann"], ids["Bob"]]).run()
    section = at.get_by_key("coding_dis_0_code_0")
    assert "Price" in texts(section) and "different characters" in texts(section)
    shown = at.get_by_key("coding_dis_text_0_0_1").markdown
    assert "Bob" in shown[0].value and f"characters {theirs['start']}–{theirs['end']}" in shown[0].value
    assert re.search(r":\w+-background\[the zebrafinch\\.\]", shown[1].value)  # his passage, highlighted
    assert "whole turn" in texts(at.get_by_key("coding_dis_text_0_0_0"))  # Ann's: the whole turn
    assert "not settled" in texts(at.get_by_key("coding_dis_gold_0_0"))
    clicked(at, "coding_settle_as_0_0_1")
    assert "Settled Price as Bob's passages: 1 gold coding(s)." in texts(at.get_by_key("coding_message")).replace(
        "\\", "")
    store = Store()
    gold = next(c["id"] for c in storage.coder_rows(store, project_id) if c["kind"] == "gold")
    assert [(r["start"], r["end"], r["quote"], r["code_id"]) for r in storage.coding_rows(
        store, project_id, coder_ids=[gold])] == [(theirs["start"], theirs["end"], "the zebrafinch.", price)]
    column = at.get_by_key("coding_dis_gold_0_0")
    assert f"characters {theirs['start']}–{theirs['end']}" in texts(column) and "not settled" not in texts(column)
    assert "-background[the zebrafinch" in column.markdown[1].value
    assert "Price" in texts(at.get_by_key("coding_dis_0"))  # the turn's gold codes
    assert "(character units, overall)" in texts(at.get_by_key("coding_gold_agreement"))
    # "Not this code": gold keeps no Price there, and says the lead decided.
    clicked(at, "coding_settle_none_0_0")
    assert storage.coding_rows(Store(), project_id, coder_ids=[gold]) == []
    assert "not this code" in texts(at.get_by_key("coding_dis_gold_0_0"))
    history = at.get_by_key("coding_history").dataframe[0].value.to_dict("records")
    assert [(h["who"], h["action"]) for h in history[:2]] == [("Ann", "settle"), ("Ann", "settle")]


def test_selected_text_is_coded_only_once_a_valid_selection_came_back(coded):
    """The mouse selection comes from the browser (tests/e2e/test_e2e_coding.py drives it); here: with
    none yet, Apply says what to do and stores nothing; the offsets a browser sends are checked."""
    from madlab_ui.passage_picker import checked_selection

    at, project_id, debates, price = coded
    suffix = f"{debates[0][:8]}_0"
    on_debate(at, debates[0])
    before = len(codings_of(project_id, "Ann"))
    at.multiselect(key=f"coding_codes_{suffix}").set_value([price])
    at.radio(key=f"coding_scope_{suffix}").set_value("Selected text").run()
    clicked(at, f"coding_apply_{suffix}")
    assert len(codings_of(project_id, "Ann")) == before  # must not: a coding without a selection
    assert any("select the text to code" in e.value for e in at.error)
    assert checked_selection({"start": 2, "end": 5}, "abcdef") == (2, 5)
    for bad in ({"start": 5, "end": 2}, {"start": -1, "end": 2}, {"start": 0, "end": 7}, {"start": True, "end": 3},
                {"start": "0", "end": 3}, None, [0, 3]):
        assert checked_selection(bad, "abcdef") is None, bad


# ----- the coder invitation ----------------------------------------------------------------------------
def test_the_lead_creates_and_retires_a_coder_invitation_and_a_coder_who_does_not_lead_sees_none(coded):
    at, project_id, _, _ = coded
    assert "none now" in texts(at.get_by_key("coding_invitation")) and "coding_invite_retire" not in keys(at)
    clicked(at, "coding_invite_create")
    code = invitations.live_code(Store(), project_id)
    assert code is not None and f"`{code}`" in texts(at.get_by_key("coding_invitation"))
    assert "/join" in texts(at.get_by_key("coding_invitation"))
    bob = page("Bob")
    clicked(bob, f"coding_open_{project_id[:8]}")
    assert "coding_invitation" not in keys(bob) and code not in texts(bob)  # must not: the code shown to Bob
    clicked(at, "coding_invite_retire")
    assert invitations.live_code(Store(), project_id) is None and invitations.project_of(Store(), code) is None
    assert f"Retired the coder invitation {code}" in texts(at.get_by_key("coding_message"))
    assert "coding_invite_create" in keys(at)


def test_an_invited_visitor_codes_one_project_and_reaches_nothing_else(remote):  # noqa: F811
    """From another machine: the code typed at /join opens that project's Coding page (no nickname needed).
    Blind: Ann's coding is hidden; the visitor cannot take Ann's name, codes a turn and writes a memo.
    Must not happen: the project list, another project, another debate of the archive, the lead's tabs,
    Exchange, pre-coding, the invitation, a teacher page; after the lead retires the code, the page."""
    debates = [run_debate("What is the capital of France?"), run_debate("Which secret city is largest?")]
    store = Store()
    project_id = coding.create_project(store, "Price study", "Ann", debate_ids=[debates[0]], session="ann-browser")
    ann = coding.join(store, project_id, "Ann", session="ann-browser")
    price = coding.add_code(store, project_id, "Ann", "Price")
    coding.apply_code(store, project_id, ann, debates[0], first_turn(debates[0])["turn_id"], price, 0, 5)
    other = coding.create_project(store, "Secret study", "Ann", debate_ids=[debates[1]])
    code = invitations.invite(store, project_id, ann)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(JOIN).run()
    join_by_code(at, code.lower(), "")
    assert at.query_params["invite"] in (code, [code]) and "access_refused" not in keys(at)
    assert "Price study" in at.header[0].value  # the Join button's run went on to the Coding page
    at.switch_page(CODING).run()  # AppTest keeps the page it was told: the browser would stay there (e2e)
    assert "Price study" in at.header[0].value and "access_refused" not in keys(at)
    at.text_input(key="coding_coder").input("ann").run()  # the lead's name: refused, no coding controls
    assert "the name of the project's lead" in texts(at) and not [k for k in keys(at) if k.startswith("coding_apply")]
    at.text_input(key="coding_coder").input("Vera").run()
    assert not at.exception, at.exception
    suffix = f"{debates[0][:8]}_0"
    assert [t.label for t in at.tabs] == ["Code", "Codebook", "Agreement"]
    assert at.selectbox(key="coding_debate").options == [page_parts.debate_label(
        store.get_debate(debates[0])["question"], debates[0])]
    for absent in ("coding_projects", "coding_new", "coding_create", "coding_add_debates", "coding_reveal",
                   "coding_progress", "coding_invitation", "coding_dis_coders", "coding_history", "coding_qdpx",
                   "coding_upload", "coding_precode"):
        assert absent not in keys(at), absent
    assert not [k for k in keys(at) if k.startswith("coding_open_")]
    shown = texts(at)
    assert "Secret study" not in shown and "secret city" not in shown and other[:8] not in shown and code not in shown
    assert "-background[" not in at.get_by_key(f"coding_text_{suffix}").markdown[0].value  # blind: Ann's hidden
    code_turn(at, debates[0], 0, [price])
    vera = codings_of(project_id, "Vera")
    assert [(c["code_id"], c["start"], c["quote"]) for c in vera] == [(price, 0, first_turn(debates[0])["content"])]
    held = next(c for c in storage.coder_rows(Store(), project_id) if c["name"] == "Vera")["session"]
    assert held == f"visitor:{at.session_state['owner_id']}"
    at.text_area(key="coding_memo_text").input("a price, said twice")
    clicked(at, "coding_memo_add")
    assert [m["text"] for m in storage.memo_rows(Store(), project_id)] == ["a price, said twice"]
    at.switch_page("pages/1_Transcripts.py").run()
    assert texts(at.get_by_key("access_refused")) == access.REFUSED
    assert "running_list" not in keys(at)
    at.switch_page(CODING).run()
    assert "Price study" in at.header[0].value  # back on its project (the invitation still admits)
    invitations.retire(Store(), project_id, ann)
    # The page drawn before the retirement: Apply's callback runs before the page's guard, and changes nothing.
    code_turn(at, debates[0], 1, [price])
    assert len(codings_of(project_id, "Vera")) == 1
    assert texts(at.get_by_key("access_refused")).replace("\\", "") == access.INVITATION_GONE
    assert "coding_coder" not in keys(at) and "Price study" not in texts(at)
    late = AppTest.from_file(APP, default_timeout=60).run()  # another colleague types the retired code
    join_by_code(late.switch_page(JOIN).run(), code, "")
    assert "was retired by the project's lead" in texts(late.get_by_key("join_code_error"))
    assert "invite" not in late.query_params and access.INVITED not in late.session_state
