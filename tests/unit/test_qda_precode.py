"""Machine pre-coding (issue 22, item 6; mad_core/qda/precode.py): the exact prompt a model gets, its
proposals stored as a coder of its own, failures recorded with their cause, accept and reject."""
from __future__ import annotations

import pytest

from mad_core.qda import coding, precode, storage
from mad_core.store import Store
from test_codebook import debate
from test_qda_coding import TEXTS


@pytest.fixture
def project(tmp_path):
    store = Store(tmp_path / "qda.db")
    debate(store, "d1", texts=TEXTS)
    project_id = coding.create_project(store, "Bat and ball", "Lena", debate_ids=["d1"])
    price = coding.add_code(store, project_id, "Lena", "Price", definition="talks about what something costs",
                            exclude="units alone")
    agree = coding.add_code(store, project_id, "Lena", "Agreement", example="I agree")
    yield store, project_id, {"Price": price, "Agreement": agree}
    store.close()


def test_reading_a_reply_never_raises_and_says_why_it_cannot_be_read():
    codes = [{"id": "p", "name": "Price"}, {"id": "a", "name": "Agreement"}]
    assert precode.read_proposal('{"codes": ["agreement", "Price"]}', codes).code_ids == ("p", "a")
    assert precode.read_proposal('Sure!\n```json\n{"codes": []}\n```', codes) == precode.Proposal(())
    assert precode.read_proposal("- Price\n- Nonsense", codes) == precode.Proposal(("p",), None, ("Nonsense",))
    for reply, reason in (("", "empty"), ("I think it is fine", "neither JSON"), ('{"codes": ["Money"]}', "Money"),
                          ('{"codes": [', "neither JSON"), ("\x00" * 10, "neither JSON")):
        found = precode.read_proposal(reply, codes)
        assert found.code_ids == () and reason in found.invalid


def test_a_model_proposes_codes_as_a_coder_of_its_own_and_people_accept_or_reject(project, script):
    store, project_id, codes = project
    replies = {TEXTS[0]: '{"codes": ["Price"]}', TEXTS[1]: "no idea", TEXTS[2]: '{"codes": ["Agreement", "price"]}'}
    model, calls = script(lambda messages, info: next(r for t, r in replies.items() if t in messages[1]["content"]))
    done = precode.precode(store, project_id, model)
    assert (done.asked, done.proposals, done.skipped) == (3, 3, 0)
    assert [turn for turn, _ in done.failed] == [store.turns("d1")[1].id] and "neither JSON" in done.failed[0][1]
    # The exact prompt of the first turn: the question, the speaker, the turn, every field of each code.
    first = calls.history[0]["messages"][1]["content"]
    assert first == ("A debate discussed this question:\nQuestion of d1?\n\nOne turn of it, by Agent 1 · round 2 · "
                     f"discussion:\n<<<\n{TEXTS[0]}\n>>>\n\nThe codebook a research team uses to code such turns:\n"
                     "- Price\n  means: talks about what something costs\n  not when: units alone\n"
                     "- Agreement\n  example: I agree\n\nWhich of these codes apply to the turn as a whole? Use only "
                     "the code names above, exactly as written; choose none when none fits.\n"
                     'Reply with JSON only: {"codes": ["<code name>", ...]}')
    coder = next(c for c in storage.coder_rows(store, project_id) if c["id"] == done.coder_id)
    assert (coder["name"], coder["kind"]) == (model, "model")
    proposals = storage.coding_rows(store, project_id, coder_ids=[done.coder_id])
    assert sorted((p["quote"], p["code_id"]) for p in proposals) == sorted(
        [(TEXTS[0], codes["Price"]), (TEXTS[2], codes["Price"]), (TEXTS[2], codes["Agreement"])])
    failed = [h for h in storage.history(store, project_id) if h["action"] == "precode-failed"]
    assert failed[0]["actor"] == model and "neither JSON" in failed[0]["after"]["cause"]
    # Asked again: only the turn that failed is asked, nothing is proposed twice.
    again = precode.precode(store, project_id, model)
    assert (again.asked, again.skipped, again.proposals) == (1, 2, 0) and len(calls.history) == 4
    lena = coding.join(store, project_id, "Lena")
    taken = precode.accept(store, project_id, proposals[0]["id"], lena)
    precode.reject(store, project_id, proposals[1]["id"], lena)
    mine = storage.coding_rows(store, project_id, coder_ids=[lena])
    assert [(m["id"], m["proposal_id"], m["quote"]) for m in mine] == [(taken, proposals[0]["id"], proposals[0]["quote"])]
    assert storage.reviews(store, project_id, lena) == {proposals[0]["id"]: "accepted", proposals[1]["id"]: "rejected"}
    omar = coding.join(store, project_id, "Omar")
    assert storage.reviews(store, project_id, omar) == {}  # must not: Lena's review decides for Omar
    assert precode.accept(store, project_id, proposals[0]["id"], lena) == taken  # twice: one coding
    precode.reject(store, project_id, proposals[0]["id"], lena)  # changed her mind: her copy goes (undoably)
    assert storage.coding_rows(store, project_id, coder_ids=[lena]) == []
    assert storage.reviews(store, project_id, lena)[proposals[0]["id"]] == "rejected"
    assert len(storage.load_project(store, project_id, coder_ids=[done.coder_id]).codings) == 3  # still the model's
    with pytest.raises(LookupError, match="^proposal:"):
        precode.accept(store, project_id, taken, lena)  # must not: a person's coding taken as a proposal


def test_a_failing_model_is_recorded_with_its_cause_and_nothing_is_proposed(project, script):
    store, project_id, _ = project
    model, _ = script(["x"], faults={0: "exception", 1: "exception", 2: "exception"})
    from mad_core.models import RetryPolicy

    done = precode.precode(store, project_id, model, retry=RetryPolicy(max_attempts=1))
    assert done.proposals == 0 and len(done.failed) == 3 and all(cause for _, cause in done.failed)
    assert storage.coding_rows(store, project_id, coder_ids=[done.coder_id]) == []
