"""Task sets from the researcher's own files (mad_core/tasks/files.py, issue 21 item 6): JSONL, JSON, CSV,
TSV and Parquet files written here, and Hugging Face datasets through a stand-in `load_dataset` or a local
cache built here. No test touches the network: the ones that reach the real `datasets` code block sockets."""
from __future__ import annotations

import csv
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mad_core.config import ConfigError
from mad_core.tasks import files
from mad_core.tasks.files import describe, load_hf_dataset, load_task_file, load_task_source
from mad_core.tasks.sets import TaskItem

ROWS = [
    {"qid": "c1", "prompt": "Which city is the capital of France?", "gold": "B",
     "choices": ["Rome", "Paris", "Berlin"], "kind": "choice"},
    {"qid": "n1", "prompt": "How many legs do three spiders have?", "gold": "24", "choices": None, "kind": "number"},
    {"qid": "y1", "prompt": "Is a tomato a fruit?", "gold": "yes", "choices": None, "kind": "yes_no"},
]
COLUMNS = {"id": "qid", "question": "prompt", "answer": "gold", "options": "choices", "answer_type": "kind"}
EXPECTED = [
    TaskItem(id="c1", question="Which city is the capital of France?", answer="B", kind="choice",
             choices=("Rome", "Paris", "Berlin"), instruction="Answer with the letter of one option."),
    TaskItem(id="n1", question="How many legs do three spiders have?", answer="24", kind="number",
             instruction="Answer with a single number."),
    TaskItem(id="y1", question="Is a tomato a fruit?", answer="yes", kind="yes_no", instruction="Answer yes or no."),
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_csv(path: Path, rows: list[dict], delimiter: str = ",") -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return path


def raises(field: str, *words: str):
    """The ConfigError raised in the block names `field`, and its message holds each of `words`."""
    class Check:
        def __enter__(self):
            self.info = pytest.raises(ConfigError)
            return self.info.__enter__()

        def __exit__(self, *exc):
            handled = self.info.__exit__(*exc)
            error = self.info.excinfo.value
            assert error.field == field, (error.field, error.message)
            for word in words:
                assert word in error.message, (word, error.message)
            return handled
    return Check()


@pytest.fixture
def no_network(monkeypatch):
    """Sockets refuse to connect and names to resolve; every try is recorded (the list must stay empty)."""
    tries: list[tuple] = []

    def refuse(*args, **kwargs):
        tries.append(args)
        raise OSError("the network is blocked in this test")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return tries


# ----- the formats ---------------------------------------------------------------------------------
def test_jsonl_csv_tsv_json_and_parquet_of_the_same_items_give_equal_items(tmp_path):
    pandas = pytest.importorskip("pandas")
    write_jsonl(tmp_path / "qa.jsonl", ROWS)
    (tmp_path / "qa.json").write_text(json.dumps(ROWS), encoding="utf-8")  # one array
    text_rows = [dict(row, choices="") for row in ROWS]
    text_rows[0]["choices"] = json.dumps(ROWS[0]["choices"])  # a JSON list in a text cell
    write_csv(tmp_path / "qa.csv", text_rows)
    text_rows[0]["choices"] = "Rome | Paris | Berlin"  # or options separated by "|"
    write_csv(tmp_path / "qa.tsv", text_rows, delimiter="\t")
    pandas.DataFrame(ROWS).to_parquet(tmp_path / "qa.parquet")
    for name in ("qa.jsonl", "qa.json", "qa.csv", "qa.tsv", "qa.parquet"):
        items = load_task_file({"file": name, "columns": COLUMNS}, base_dir=tmp_path)
        assert items == EXPECTED, name
        assert [item.is_correct(reply) for item, reply in zip(items, ["(B) Paris", "24 legs", "Yes."])] == [True] * 3


def test_columns_default_to_the_fields_own_names_and_ids_to_the_row_number(tmp_path):
    path = write_jsonl(tmp_path / "plain.jsonl", [{"question": "2+2?", "answer": 4}, {"question": "3*3?", "answer": "9"}])
    items = load_task_file({"file": str(path), "answer_type": "number", "instruction": "Give the number only."})
    assert [(item.id, item.question, item.answer, item.kind) for item in items] == [
        ("1", "2+2?", "4", "number"), ("2", "3*3?", "9", "number")]
    assert {item.instruction for item in items} == {"Give the number only."}


def test_a_json_number_keeps_the_digits_it_was_written_with(tmp_path):
    (tmp_path / "pi.jsonl").write_text('{"question": "pi to 20 places?", "answer": 3.14159265358979323846}\n')
    [item] = load_task_file({"file": "pi.jsonl", "answer_type": "number"}, base_dir=tmp_path)
    assert item.answer == "3.14159265358979323846"


def test_a_fixed_answer_type_or_one_per_row(tmp_path):
    rows = [{"q": "Is ice cold?", "a": "yes", "answer_type": "yes_no"}, {"q": "Ten plus one?", "a": "11",
                                                                         "answer_type": "number"}]
    write_jsonl(tmp_path / "mixed.jsonl", rows)
    per_row = load_task_file({"file": "mixed.jsonl", "columns": {"question": "q", "answer": "a"}}, base_dir=tmp_path)
    assert [item.kind for item in per_row] == ["yes_no", "number"]  # the column of its own name
    fixed = load_task_file({"file": "mixed.jsonl", "columns": {"question": "q", "answer": "a"},
                            "answer_type": "text"}, base_dir=tmp_path)
    assert [item.kind for item in fixed] == ["text", "text"]  # one kind for all rows wins over that column
    with raises("task_set.answer_type", "not both"):
        load_task_file({"file": "mixed.jsonl", "answer_type": "text",
                        "columns": {"question": "q", "answer": "a", "answer_type": "answer_type"}}, base_dir=tmp_path)
    write_jsonl(tmp_path / "untyped.jsonl", [{"question": "Why?", "answer": "because"}])
    with raises("task_set.answer_type", "not given"):
        load_task_file({"file": "untyped.jsonl"}, base_dir=tmp_path)
    with raises("task_set.answer_type", "one of"):
        load_task_file({"file": "untyped.jsonl", "answer_type": "essay"}, base_dir=tmp_path)
    write_jsonl(tmp_path / "badkind.jsonl", [{"question": "Why?", "answer": "because", "answer_type": "essay"}])
    with raises("task_set.rows[1].answer_type", "column 'answer_type'", "'essay'"):
        load_task_file({"file": "badkind.jsonl"}, base_dir=tmp_path)


def test_a_choice_answer_by_number_or_by_option_text(tmp_path):
    rows = [{"question": "Largest planet?", "options": ["Mars", "Jupiter", "Venus"], "answer": 1},
            {"question": "Red planet?", "options": ["Mars", "Jupiter", "Venus"], "answer": 0}]
    write_jsonl(tmp_path / "mmlu.jsonl", rows)
    source = {"file": "mmlu.jsonl", "answer_type": "choice", "choice_answer": "index0"}
    assert [item.answer for item in load_task_file(source, base_dir=tmp_path)] == ["B", "A"]
    with raises("task_set.rows[2].answer", "'0'", "1-3"):
        load_task_file({**source, "choice_answer": "index1"}, base_dir=tmp_path)
    write_jsonl(tmp_path / "texts.jsonl", [dict(rows[0], answer="jupiter")])
    [item] = load_task_file({**source, "file": "texts.jsonl", "choice_answer": "option"}, base_dir=tmp_path)
    assert item.answer == "B"


# ----- the errors ----------------------------------------------------------------------------------
def test_a_missing_column_is_named_with_the_columns_there_are(tmp_path):
    write_jsonl(tmp_path / "qa.jsonl", ROWS)
    with raises("task_set.columns.answer", "'gold_answer'", "not in the file", "qid, prompt, gold, choices, kind"):
        load_task_file({"file": "qa.jsonl", "columns": {**COLUMNS, "answer": "gold_answer"}}, base_dir=tmp_path)
    with raises("task_set.columns.question", "no column 'question'"):
        load_task_file({"file": "qa.jsonl", "columns": {"answer": "gold"}, "answer_type": "text"}, base_dir=tmp_path)
    with raises("task_set.columns.answer_types", "unknown field"):
        load_task_file({"file": "qa.jsonl", "columns": {**COLUMNS, "answer_types": "kind"}}, base_dir=tmp_path)
    with raises("task_set.shuffle", "unknown field"):
        load_task_file({"file": "qa.jsonl", "columns": COLUMNS, "shuffle": True}, base_dir=tmp_path)


def test_a_bad_answer_names_the_row_and_the_field(tmp_path):
    rows = [dict(ROWS[1]), dict(ROWS[1], qid="n2", gold="lots")]
    write_csv(tmp_path / "bad.csv", rows)
    with raises("task_set.rows[2].answer", "'lots'", "number", "id 'n2'", "column 'gold'"):
        load_task_file({"file": "bad.csv", "columns": COLUMNS}, base_dir=tmp_path)


@pytest.mark.parametrize("row, field, words", [
    (dict(ROWS[0], gold="E"), "answer", ["letter of an option", "'E'"]),
    (dict(ROWS[0], choices=None), "options", ["needs its options"]),
    (dict(ROWS[0], choices=["Rome", "rome"]), "options", ["two options read the same"]),
    (dict(ROWS[1], choices=["1", "2"]), "options", ["only rows of type 'choice' or 'kks'"]),
    (dict(ROWS[1], prompt="  "), "question", ["empty"]),
    (dict(ROWS[1], gold=True), "answer", ["true/false"]),
    (dict(ROWS[1], gold=None), "answer", ["empty or missing"]),
    (dict(ROWS[1], qid=""), "id", ["empty or missing"]),
])
def test_a_bad_cell_names_the_row_and_the_field(tmp_path, row, field, words):
    write_jsonl(tmp_path / "rows.jsonl", [ROWS[2], row])
    with raises(f"task_set.rows[2].{field}", *words):
        load_task_file({"file": "rows.jsonl", "columns": COLUMNS}, base_dir=tmp_path)


def test_a_yes_no_answer_may_be_a_boolean(tmp_path):
    write_jsonl(tmp_path / "bool.jsonl", [dict(ROWS[2], gold=False)])
    [item] = load_task_file({"file": "bool.jsonl", "columns": COLUMNS}, base_dir=tmp_path)
    assert item.answer == "no"


def test_duplicate_ids_are_refused_naming_both_rows(tmp_path):
    write_jsonl(tmp_path / "dup.jsonl", [ROWS[0], ROWS[1], dict(ROWS[2], qid="c1")])
    with raises("task_set.rows[3].id", "'c1'", "rows 1 and 3"):
        load_task_file({"file": "dup.jsonl", "columns": COLUMNS}, base_dir=tmp_path)


def test_an_empty_file_is_refused(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n\n", encoding="utf-8")
    (tmp_path / "header.csv").write_text("question,answer\n", encoding="utf-8")
    (tmp_path / "nothing.csv").write_text("", encoding="utf-8")
    (tmp_path / "empty.json").write_text("[]", encoding="utf-8")
    for name in ("empty.jsonl", "header.csv", "nothing.csv", "empty.json"):
        with raises("task_set.file", "no rows"):
            load_task_file({"file": name, "answer_type": "text"}, base_dir=tmp_path)


def test_an_unknown_extension_or_a_missing_file_is_refused(tmp_path):
    (tmp_path / "qa.txt").write_text("question,answer\nWhy?,because\n", encoding="utf-8")
    with raises("task_set.file", "'.txt'", ".csv, .json, .jsonl, .parquet, .tsv"):
        load_task_file({"file": "qa.txt", "answer_type": "text"}, base_dir=tmp_path)
    with raises("task_set.file", "no such file"):
        load_task_file({"file": "missing.csv", "answer_type": "text"}, base_dir=tmp_path)
    (tmp_path / "folder.csv").mkdir()
    with raises("task_set.file", "not a file"):
        load_task_file({"file": "folder.csv", "answer_type": "text"}, base_dir=tmp_path)
    (tmp_path / "latin1.csv").write_bytes("question,answer\nCaf\xe9?,oui\n".encode("latin-1"))
    with raises("task_set.file", "not UTF-8"):
        load_task_file({"file": "latin1.csv", "answer_type": "text"}, base_dir=tmp_path)
    (tmp_path / "broken.parquet").write_bytes(b"not parquet at all")
    with raises("task_set.file", "not a Parquet file"):
        load_task_file({"file": "broken.parquet", "answer_type": "text"}, base_dir=tmp_path)


def test_bad_rows_of_a_file_are_named(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"question": "a?", "answer": "b"}\n{"question": \n', encoding="utf-8")
    with raises("task_set.rows[2]", "not valid JSON"):
        load_task_file({"file": "bad.jsonl", "answer_type": "text"}, base_dir=tmp_path)
    (tmp_path / "list.jsonl").write_text('["a?", "b"]\n', encoding="utf-8")
    with raises("task_set.rows[1]", "JSON object"):
        load_task_file({"file": "list.jsonl", "answer_type": "text"}, base_dir=tmp_path)
    (tmp_path / "nan.jsonl").write_text('{"question": "a?", "answer": NaN}\n', encoding="utf-8")
    with raises("task_set.rows[1]", "NaN"):
        load_task_file({"file": "nan.jsonl", "answer_type": "number"}, base_dir=tmp_path)
    (tmp_path / "cells.csv").write_text("question,answer\na?,b\nc?,d,e\n", encoding="utf-8")
    with raises("task_set.rows[2]", "3 cells", "the header 2"):
        load_task_file({"file": "cells.csv", "answer_type": "text"}, base_dir=tmp_path)
    (tmp_path / "twice.csv").write_text("question,answer,answer\na?,b,c\n", encoding="utf-8")
    with raises("task_set.file", "'answer' twice"):
        load_task_file({"file": "twice.csv", "answer_type": "text"}, base_dir=tmp_path)


def test_a_csv_formula_cell_stays_literal_text(tmp_path):
    rows = [{"question": '=HYPERLINK("http://example.invalid","click")', "answer": "=1+1"},
            {"question": "@SUM(A1:A2)", "answer": "+cmd|' /C calc'!A0"}]
    write_csv(tmp_path / "formulas.csv", rows)
    items = load_task_file({"file": "formulas.csv", "answer_type": "text"}, base_dir=tmp_path)
    assert [(item.question, item.answer) for item in items] == [
        ('=HYPERLINK("http://example.invalid","click")', "=1+1"), ("@SUM(A1:A2)", "+cmd|' /C calc'!A0")]


def test_a_relative_path_is_read_from_base_dir_else_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "specs" / "data").mkdir(parents=True)
    write_jsonl(tmp_path / "specs" / "data" / "qa.jsonl", ROWS)
    source = {"file": "data/qa.jsonl", "columns": COLUMNS}
    assert load_task_file(source, base_dir=tmp_path / "specs") == EXPECTED
    assert load_task_file(source, base_dir=str(tmp_path / "specs")) == EXPECTED
    with raises("task_set.file", "no such file"):
        load_task_file(source)  # the current directory has no data/qa.jsonl
    monkeypatch.chdir(tmp_path / "specs")
    assert load_task_file(source) == EXPECTED
    assert load_task_source(source) == EXPECTED


def test_rows_and_cells_are_bounded(tmp_path, monkeypatch):
    write_jsonl(tmp_path / "many.jsonl", [{"question": f"{n} + 1?", "answer": n + 1} for n in range(12)])
    monkeypatch.setattr(files, "MAX_ROWS", 10)
    with raises("task_set.limit", "more than 10 rows"):
        load_task_file({"file": "many.jsonl", "answer_type": "number"}, base_dir=tmp_path)
    items = load_task_file({"file": "many.jsonl", "answer_type": "number", "limit": 5}, base_dir=tmp_path)
    assert [item.id for item in items] == ["1", "2", "3", "4", "5"]
    with raises("task_set.limit", "1 to 10"):
        load_task_file({"file": "many.jsonl", "answer_type": "number", "limit": 11}, base_dir=tmp_path)
    monkeypatch.setattr(files, "MAX_CELL_CHARS", 50)
    write_csv(tmp_path / "long.csv", [{"question": "short?", "answer": "ok"}, {"question": "x" * 51, "answer": "fine"}])
    with raises("task_set.rows[2].question", "51 characters"):
        load_task_file({"file": "long.csv", "answer_type": "text"}, base_dir=tmp_path)


def test_describe_names_the_file_the_rows_and_the_columns(tmp_path):
    write_jsonl(tmp_path / "qa.jsonl", ROWS)
    source = {"file": "qa.jsonl", "columns": COLUMNS}
    line = describe(source, base_dir=tmp_path)
    assert line == ("qa.jsonl (3 rows, columns qid→id, prompt→question, gold→answer, choices→options, "
                    "kind→answer_type; answer type per row)")
    items = load_task_file(source, base_dir=tmp_path)
    assert describe(source, items=items) == line  # without reading the file again
    plain = {"file": "qa.jsonl", "columns": {"question": "prompt", "answer": "gold"}, "answer_type": "text"}
    assert describe(plain, base_dir=tmp_path) == "qa.jsonl (3 rows, columns prompt→question, gold→answer; answer type text)"


def test_importing_the_module_does_not_import_datasets():
    code = "import sys, mad_core.tasks.files; assert 'datasets' not in sys.modules, 'datasets imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2], timeout=120)


# ----- Hugging Face datasets -----------------------------------------------------------------------
@pytest.fixture
def fake_hub(monkeypatch):
    """`datasets.load_dataset` answering from memory; the calls and the offline flags seen are recorded."""
    pytest.importorskip("datasets")
    import datasets.config
    import huggingface_hub.constants

    calls: list[dict] = []

    def answer(path, name=None, split=None, **kwargs):
        calls.append({"path": path, "name": name, "split": split, **kwargs,
                      "offline": (datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE)})
        if isinstance(answer.result, Exception):
            raise answer.result
        return answer.result
    answer.result = datasets.Dataset.from_dict({
        "question": ["Which gas do plants take in?", "2 + 5?"],
        "choices": [{"text": ["Oxygen", "Carbon dioxide", "Helium"], "label": ["A", "B", "C"]},
                    {"text": ["6", "7", "8"], "label": ["A", "B", "C"]}],
        "answerKey": ["B", "B"],
        "extra": ["not read", "not read"],
    })
    answer.calls = calls
    monkeypatch.setattr(datasets, "load_dataset", answer)
    return answer


def test_a_hugging_face_dataset_is_read_with_the_mapping(fake_hub):
    source = {"hf": "allenai/ai2_arc", "config": "ARC-Challenge", "split": "validation", "answer_type": "choice",
              "columns": {"options": "choices", "answer": "answerKey"}, "limit": 2}
    items = load_hf_dataset(source)
    assert items == [
        TaskItem(id="1", question="Which gas do plants take in?", answer="B", kind="choice",
                 choices=("Oxygen", "Carbon dioxide", "Helium"), instruction="Answer with the letter of one option."),
        TaskItem(id="2", question="2 + 5?", answer="B", kind="choice", choices=("6", "7", "8"),
                 instruction="Answer with the letter of one option."),
    ]
    [call] = fake_hub.calls
    assert (call["path"], call["name"], call["split"], call["revision"]) == ("allenai/ai2_arc", "ARC-Challenge",
                                                                           "validation", None)
    assert load_task_source(source) == items
    assert describe(source, items=items) == describe(source) == ("hf:allenai/ai2_arc (ARC-Challenge) [validation] (2 rows, columns question→question, "
                                "answerKey→answer, choices→options; answer type choice)")


def test_a_dataset_split_defaults_to_test_and_columns_are_checked(fake_hub):
    load_hf_dataset({"hf": "org/set", "answer_type": "choice", "columns": {"options": "choices", "answer": "answerKey"}})
    assert (fake_hub.calls[-1]["name"], fake_hub.calls[-1]["split"]) == (None, "test")
    with raises("task_set.columns.answer", "'gold'", "not in the dataset", "question, choices, answerKey, extra"):
        load_hf_dataset({"hf": "org/set", "answer_type": "choice", "columns": {"answer": "gold"}})
    with raises("task_set.hf", "dataset id"):
        load_hf_dataset({"hf": "../local/folder", "answer_type": "text"})
    with raises("task_set.split", "non-empty string"):
        load_hf_dataset({"hf": "org/set", "answer_type": "text", "split": 3})


def test_an_uncached_dataset_while_offline_names_task_set_hf(fake_hub, monkeypatch):
    import datasets.config

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)  # as if imported before the variable was set
    fake_hub.result = ConnectionError("Couldn't reach the Hugging Face Hub for dataset 'org/set': offline mode")
    with raises("task_set.hf", "org/set", "not in the local cache", "network is off", "load_dataset('org/set'"):
        load_hf_dataset({"hf": "org/set", "answer_type": "text"})
    assert fake_hub.calls[-1]["offline"] == (True, True)  # the library was held offline for the call
    assert datasets.config.HF_HUB_OFFLINE is False  # and let go after it


def test_an_unreachable_hub_reads_the_cache_without_retrying(fake_hub, monkeypatch):
    import datasets.config
    import huggingface_hub.constants

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(files, "_hub_reachable", lambda: False)
    assert len(load_hf_dataset({"hf": "org/set", "answer_type": "choice",
                                "columns": {"options": "choices", "answer": "answerKey"}})) == 2
    assert fake_hub.calls[-1]["offline"] == (True, True)
    fake_hub.result = FileNotFoundError("Dataset org/set is not cached")
    with raises("task_set.hf", "not in the local cache", "cannot be reached"):
        load_hf_dataset({"hf": "org/set", "answer_type": "text"})
    monkeypatch.setattr(files, "_hub_reachable", lambda: True)
    fake_hub.result = ValueError('Unknown split "tset". Should be one of [\'test\', \'train\'].')
    with raises("task_set.split", "Unknown split"):
        load_hf_dataset({"hf": "org/set", "answer_type": "text", "split": "tset"})
    assert fake_hub.calls[-1]["offline"] == (False, False)


def test_the_hub_probe_gives_up_quietly_without_network(no_network, monkeypatch):
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert files._hub_reachable(timeout=1.0) is False
    assert no_network  # it tried (no offline variable asks it not to)


def _cache_a_dataset(cache: Path, tmp_path: Path) -> None:
    """Lay `someorg/tiny` (split "test") in a datasets cache as `load_dataset` leaves a Hub dataset there:
    built by the library's own Parquet builder, then named as the Hub's "default" config is."""
    import pandas
    from datasets.packaged_modules.parquet.parquet import Parquet

    data = tmp_path / "tiny.parquet"
    pandas.DataFrame({"q": ["2 + 2?", "3 * 3?"], "a": ["4", "9"]}).to_parquet(data)
    Parquet(cache_dir=str(cache), dataset_name="someorg___tiny", data_files={"test": str(data)},
            hash="0123abcd").download_and_prepare()
    [built] = (cache / "someorg___tiny").iterdir()
    built.rename(cache / "someorg___tiny" / "default")
    folder = cache / "someorg___tiny" / "default" / "0.0.0" / "0123abcd"
    (folder / "someorg___tiny-test.arrow").rename(folder / "tiny-test.arrow")


def test_the_real_library_reads_the_local_cache_offline_and_never_connects(no_network, tmp_path, monkeypatch):
    pytest.importorskip("datasets")
    import datasets.config

    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    _cache_a_dataset(cache, tmp_path)
    items = load_hf_dataset({"hf": "someorg/tiny", "answer_type": "number", "columns": {"question": "q", "answer": "a"}})
    assert [(item.question, item.answer) for item in items] == [("2 + 2?", "4"), ("3 * 3?", "9")]
    with raises("task_set.hf", "someorg/other is not in the local cache", "network is off"):
        load_hf_dataset({"hf": "someorg/other", "answer_type": "text"})
    assert no_network == []


def test_an_experiment_runs_on_a_file_next_to_its_spec_and_names_a_bad_column(tmp_path, madlab_home):
    """The experiment spec's `task_set` takes a file source; its relative path starts at the spec's folder
    and is stored absolute (a stored sweep resumes from anywhere); a bad mapping names the column."""
    import json as json_module

    from mad_core.config import ConfigError as SpecError
    from mad_core.experiments.spec import ExperimentConfig

    rows = [{"qid": f"q{i}", "prompt": f"What is {i} + {i}?", "gold": str(2 * i)} for i in range(4)]
    (tmp_path / "qa.jsonl").write_text("\n".join(json_module.dumps(r) for r in rows))
    spec = tmp_path / "sweep.yaml"
    spec.write_text("name: mine\ntask_set: {file: qa.jsonl, columns: {id: qid, question: prompt, answer: gold}, "
                    "answer_type: number}\nitems: 3\nseeds: [1]\nbase: {models: scripted/echo, rounds: 1}\n")
    experiment = ExperimentConfig.load(spec)
    assert experiment.task_set["file"] == str((tmp_path / "qa.jsonl").resolve())
    assert [i.id for i in experiment.task_items] == ["q0", "q1", "q2"]
    config = experiment.runs()[1].debate_config()
    assert (config.reference, config.answer_type) == ("2", "number") and "What is 1 + 1?" in config.question
    assert [i.id for i in ExperimentConfig.from_dict(experiment.to_dict()).task_items] == ["q0", "q1", "q2"]
    bad = {**experiment.to_dict(), "task_set": {**experiment.task_set, "columns": {"answer": "nope"}}}
    with pytest.raises(SpecError) as caught:
        ExperimentConfig.from_dict(bad)
    assert caught.value.field == "task_set.columns.answer" and "nope" in caught.value.message
    assert not (madlab_home / "madlab.db").exists()  # must not: anything written
