"""The glossary (mad_core/glossary.py): every metric and column the app shows has an entry, each a plain
sentence first, README's Glossary section is the module's own Markdown, and names are found loosely."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from mad_core import exports, glossary
from mad_core.experiments import stats
from mad_core.experiments.results import CHALLENGE_METRICS, METRICS
from mad_core.metrics.report import ROUND_COLUMNS

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_section() -> str:
    """README.md's "## Glossary" section, up to the next second-level heading."""
    text = README.read_text(encoding="utf-8")
    start = text.index(glossary.HEADING + "\n")
    end = text.find("\n## ", start + len(glossary.HEADING))
    return text[start:] if end < 0 else text[start:end + 1]


def test_readme_section_is_the_glossarys_markdown():
    """Regenerate with: python -c 'from mad_core import glossary; print(glossary.markdown())'."""
    assert readme_section().strip() == glossary.markdown().strip()


@pytest.mark.parametrize("name", [*METRICS, *(title for title, _, _ in METRICS.values()), *CHALLENGE_METRICS,
                                  *(title for title, _, _ in CHALLENGE_METRICS.values()), *ROUND_COLUMNS,
                                  *(f"round_{name}" for name in ROUND_COLUMNS)])
def test_every_metric_of_the_results_and_the_report_has_an_entry(name):
    assert glossary.help_for(name), name


def test_every_column_of_the_csvs_and_the_comparisons_has_an_entry():
    columns = [*exports.TURN_CSV_COLUMNS, "requested_at", "ts",
               *(f.name for f in dataclasses.fields(stats.Comparison) if f.name != "note"),
               *(f.name for f in dataclasses.fields(stats.Changes)), "n", "net",
               "accuracy_low", "accuracy_high", "accuracy_interval", "accuracy_mean", "tokens_sd", "cost_usd_n",
               "debates", "finished", "failed"]
    missing = [name for name in columns if glossary.help_for(name) is None]
    assert missing == []


@pytest.mark.parametrize("name, shown", [
    ("Holm p", "Holm p"), ("p_holm", "Holm p"), ("vs_single_p_holm", "Holm p"), ("vs single", "vs baseline"),
    ("vs_single_diff_low", "vs baseline"), ("McNemar p", "McNemar p"), ("Cohen's h", "Cohen's h"),
    ("odds_ratio", "odds ratio"), ("right → wrong", "right → wrong"), ("wrong_to_right", "wrong → right"),
    ("smooth accuracy", "smooth accuracy"), ("accuracy_sd", "accuracy"), ("round_entropy", "entropy"),
    ("round", "round"), ("ANSWER-READ", "answer_read"), ("requested_at", "requested_at"),
    ("agreement AUC (all)", "agreement AUC (all)"), ("path_consistency", "path consistency"),
    ("self_bleu_diversity", "Self-BLEU diversity"), ("judge", "judge side agreement"),
    ("transitions", "transitions"), ("log_likelihood", "log-likelihood"),
])
def test_names_are_found_loosely(name, shown):
    entry = glossary.entry_for(name)
    assert entry is not None and entry["name"] == shown
    assert glossary.help_for(name) == entry["sentence"]


def test_an_unknown_name_has_no_help():
    assert glossary.help_for("no such metric") is None and glossary.entry_for("") is None


def test_each_entry_is_one_plain_sentence_then_its_formula_and_source():
    for entry in glossary.ENTRIES:
        sentence = entry["sentence"]
        assert sentence[:1].isupper() or sentence[:1].isdigit(), entry["name"]
        assert sentence.endswith(".") and not re.search(r"[.!?]\s", sentence), entry["name"]  # one sentence
        assert not re.search(r"seed \d|§|App\.|Eq\.", sentence), entry["name"]  # the paper comes after
        assert entry["group"] in glossary.GROUPS
        # README shows them as Markdown: no backtick anywhere (formulas, column names and other names are
        # code spans there), and the plain text (sentence, source, a name that is no column) holds no markup
        for text in (entry["name"], entry["sentence"], entry["formula"], entry["source"], *entry["keys"]):
            assert "`" not in text, entry["name"]
        plain = [entry["sentence"], entry["source"]] + ([] if re.search(r"[_*]", entry["name"]) else [entry["name"]])
        markup = re.compile(r"[<>*\[\]\\]|(?<!\w)_|_(?!\w)")  # an underscore inside a word ("yes_no") is text
        assert not any(markup.search(text) for text in plain), entry["name"]
    assert any(entry["source"].startswith("seed 00") for entry in glossary.ENTRIES)


def test_names_and_ids_are_unique_and_every_name_finds_its_own_entry():
    ids = [glossary.entry_id(entry) for entry in glossary.ENTRIES]
    assert len(ids) == len(set(ids))
    claimed: dict[str, str] = {}
    for entry in glossary.ENTRIES:
        for name in (entry["name"], *entry["keys"]):
            key = " ".join(re.split(r"[\s_\-]+", name.casefold())).strip()
            assert claimed.setdefault(key, entry["name"]) == entry["name"], f"{name!r} names two entries"
            assert glossary.entry_for(name) is entry, name


def test_search_matches_every_word_in_any_field():
    assert glossary.search("") == list(glossary.ENTRIES)
    assert [e["name"] for e in glossary.search("holm")][:1] == ["vs baseline"]
    assert "Holm p" in [e["name"] for e in glossary.search("HOLM")]
    assert [e["name"] for e in glossary.search("apples 18")] == ["answer_read"]
    assert glossary.search("no-such-word-anywhere") == []
