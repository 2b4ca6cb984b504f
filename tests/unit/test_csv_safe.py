"""One rule for every CSV MAD Lab writes (`store.csv_safe`): a cell a spreadsheet would run as a
formula gets a leading apostrophe, also when whitespace or an invisible character comes before the
formula character (" =1+1", "\\n=1+1"); the debate CSV, the annotation CSV and the experiment CSVs
all go through it."""
from __future__ import annotations

import csv
import io

import pytest

from mad_core import codebook, exports
from mad_core.events import Turn, TurnFinished
from mad_core.experiments import results
from mad_core.exports import csv_safe
from mad_core.store import Store

FORMULAS = ["=1+1", "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR",
            " =1+1", "  +1", "\n=1+1", "\r\n@SUM(A1)", "\t-1+2", "\u00a0=1+1", "\u2003=1+1", "\u3000+1",
            "\u200b=1+1", "\ufeff@x", " \u200d\n -2"]
PLAIN = ["plain =1", "a-b", "", "   ", "\u00a0", "Paris", "3", "0.5", "e=mc2"]


@pytest.mark.parametrize("text", FORMULAS, ids=[repr(t) for t in FORMULAS])
def test_a_formula_after_any_leading_whitespace_is_neutralised(text):
    assert csv_safe(text) == "'" + text


@pytest.mark.parametrize("text", PLAIN, ids=[repr(t) for t in PLAIN])
def test_text_that_starts_no_formula_is_left_as_it_is(text):
    # Must not happen: ordinary text (or text with a formula character later on) changed.
    assert csv_safe(text) == text


def test_a_negative_number_stays_a_number_and_text_that_looks_like_one_is_neutralised():
    """The documented rule: numbers are written as they are; TEXT starting with "-" is a formula start
    to a spreadsheet ("-3" as text may as well be "-3+A1"), so it gets the apostrophe like any other."""
    assert csv_safe(-3) == -3 and csv_safe(-0.5) == -0.5 and csv_safe(None) is None
    assert csv_safe("-3") == "'-3" and csv_safe(" -3") == "' -3"


def turn(seq: int, text: str) -> Turn:
    return Turn(id=f"turn-{seq}", seq=seq, round=1, agent=text, kind="discussion", model="scripted/echo",
                prompt=[], content=text, started_at=1.0, finished_at=2.0)


def test_every_csv_writer_uses_the_rule(tmp_path):
    debate_id = "c" * 32
    with Store(tmp_path / "csv.db") as store:
        store.create_debate(debate_id, {"question": "q", "agents": [{"label": "A", "model": "scripted/echo"}]})
        for seq, text in enumerate(FORMULAS):
            store.record(TurnFinished(turn=turn(seq, text)), debate_id)
            codebook.annotate(store, debate_id, f"turn-{seq}", "flip", text)
        turns = list(csv.DictReader(io.StringIO(exports.to_csv(store, debate_id), newline="")))
        notes = list(csv.DictReader(io.StringIO(exports.annotations_csv(store, debate_id), newline="")))
    assert [row["content"] for row in turns] == ["'" + t for t in FORMULAS]
    assert [row["agent"] for row in turns] == ["'" + t for t in FORMULAS]
    assert [row["note"] for row in notes] == ["'" + t for t in FORMULAS]
    assert [row["text"] for row in notes] == ["'" + t for t in FORMULAS]
    table = list(csv.DictReader(io.StringIO(results.to_csv([{"label": t, "accuracy_mean": -0.5} for t in FORMULAS]),
                                            newline="")))
    assert [row["label"] for row in table] == ["'" + t for t in FORMULAS]
    assert {row["accuracy_mean"] for row in table} == {"-0.5"}  # numbers stay numbers
