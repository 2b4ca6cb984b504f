"""Join codes (mad_core/join_codes.py): six characters without look-alikes, one code per target,
typed codes forgiven for case, spaces and dashes but never guessed, retired codes admit nobody,
refused input writes nothing."""
from __future__ import annotations

import pytest

from mad_core import join_codes
from mad_core.join_codes import CodeError
from mad_core.store import Store

LOOK_ALIKES = set("0OQD1IL2Z5S8B6GUV")


@pytest.fixture
def store(tmp_path):
    opened = Store(tmp_path / "codes.db")
    yield opened
    opened.close()


def test_alphabet_has_no_look_alikes_and_codes_use_only_it():
    assert not LOOK_ALIKES & set(join_codes.ALPHABET)
    assert len(set(join_codes.ALPHABET)) == len(join_codes.ALPHABET) == 19
    for _ in range(200):
        code = join_codes.new_code()
        assert len(code) == 6 and set(code) <= set(join_codes.ALPHABET)


def test_one_code_per_target_and_a_typed_code_resolves(store):
    code = join_codes.issue(store, "poll", "p1")
    assert join_codes.issue(store, "poll", "p1") == code  # issued once
    other = join_codes.issue(store, "seat", "p1")  # the same id as another kind: another code
    assert other != code
    typed = f" {code[:3].lower()}-{code[3:]} "
    assert join_codes.resolve(store, typed) == {"code": code, "kind": "poll", "target": "p1"}
    assert join_codes.resolve(store, other)["kind"] == "seat"
    assert join_codes.code_of(store, "poll", "p1") == code


@pytest.mark.parametrize("typed", [None, "", "ACE", "ACEFHJK", "ACEFH0", "ACEFHO", 123456])
def test_malformed_or_unknown_codes_resolve_to_none(store, typed):
    join_codes.issue(store, "poll", "p1")
    assert join_codes.resolve(store, typed) is None


def test_a_retired_code_admits_nobody_and_is_not_handed_out_again(store):
    code = join_codes.issue(store, "seat", "s1")
    join_codes.retire(store, "seat", "s1")
    assert join_codes.resolve(store, code) is None
    assert join_codes.code_of(store, "seat", "s1") == code
    assert join_codes.issue(store, "seat", "s2") != code


def test_refused_input_names_the_field_and_writes_nothing(store):
    with pytest.raises(CodeError) as refused:
        join_codes.issue(store, "debate", "d1")
    assert refused.value.field == "kind"
    with pytest.raises(CodeError) as refused:
        join_codes.issue(store, "poll", "  ")
    assert refused.value.field == "target"
    assert store.query("SELECT * FROM join_codes") == []


def test_a_clash_draws_again(store, monkeypatch):
    drawn = iter(["ACEFHJ", "ACEFHJ", "KMNPRT"])
    monkeypatch.setattr(join_codes, "new_code", lambda: next(drawn))
    assert join_codes.issue(store, "poll", "p1") == "ACEFHJ"
    assert join_codes.issue(store, "poll", "p2") == "KMNPRT"


def test_a_renewed_target_gets_a_new_code_and_its_retired_one_stays_retired(store):
    """A coding project's invitation: retired, then handed out again, it gets a new code; the old one is
    still in the table (never drawn again) and still admits nobody."""
    first = join_codes.renew(store, "coding", "p1")
    assert join_codes.renew(store, "coding", "p1") == first == join_codes.live_code(store, "coding", "p1")
    assert join_codes.lookup(store, first.lower()) == {"code": first, "kind": "coding", "target": "p1",
                                                       "retired": False}
    join_codes.retire(store, "coding", "p1")
    assert join_codes.live_code(store, "coding", "p1") is None and join_codes.resolve(store, first) is None
    assert join_codes.lookup(store, first)["retired"] is True
    second = join_codes.renew(store, "coding", "p1")
    assert second != first and join_codes.resolve(store, second) == {"code": second, "kind": "coding", "target": "p1"}
    # must not: the retired code admitting again, or leaving the table (where it would be free to draw again)
    assert join_codes.resolve(store, first) is None
    assert join_codes.lookup(store, first) == {"code": first, "kind": "coding", "target": "p1", "retired": True}
    assert len(store.query("SELECT * FROM join_codes WHERE kind = 'coding'")) == 2
    assert join_codes.lookup(store, "KKKKKK") is None and join_codes.lookup(store, "nope") is None
