"""Tampered JSON exports: each either imports (and then `show` and `export` work) or is refused
with exit code 2 and one line naming the field, and nothing is written (validate_export)."""
from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import sqlite3
from typing import Any, Callable

import pytest
from tests.conftest import role_replies
from hypothesis import event, given
from hypothesis import strategies as st

from mad_core import codebook, exports
from mad_core.cli import main
from mad_core.config import DebateConfig
from mad_core.events import SteeringApplied, Turn
from mad_core.export_schema import (CHILD_COLUMNS, DEBATE_COLUMNS, MAX_DOCUMENT_DEPTH, TURN_COLUMNS, ExportError,
                                    validate_export)
from mad_core.store import CHILD_TABLES, Store, default_db_path


# ----- a real export ----------------------------------------------------------------------------
def challenge_reply(messages, meta) -> str:
    return "AGREE" if meta["agent"] == "Agent 1" else "DISAGREE\nFinal answer: Paris"


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> dict[str, Any]:
    """A finished cumulative-voting debate with every child table filled, run with the scripted model."""
    from mad_core.engine import DebateEngine
    from mad_core.models import ensure_registered
    from mad_core.models.scripted import Script, register_script, unregister_script

    ensure_registered()
    votes = {"Agent 1": '{"1": 6, "2": 4}', "Agent 2": '{"2": 10}', "Agent 3": "no idea"}
    replies = role_replies({"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Paris"}, votes,
                           challenge=challenge_reply)
    register_script("import-validation", Script(replies=replies, faults={3: "exception"}))
    config = DebateConfig.from_dict({
        "question": "What is the capital of France?", "protocol": "cumulative_voting", "rounds": 1,
        "max_rounds": 2, "challenge": True, "vote_retries": 0, "confidence": True,
        "agents": [{"label": f"Agent {i}", "model": "scripted/import-validation"} for i in (1, 2, 3)]})
    try:
        with Store(tmp_path_factory.mktemp("export") / "source.db") as store:
            engine = DebateEngine(config, store=store)
            for _ in engine.run():
                pass
            store.record(SteeringApplied(action="message", targets=["Agent 2"], message="Look again."),
                         debate_id=engine.debate_id)
            codebook.annotate(store, engine.debate_id, store.turns(engine.debate_id)[0].id, "good", "a clear start")
            data = exports.export_debate(store, engine.debate_id)
    finally:
        unregister_script("import-validation")
    assert data["debate"]["status"] == "finished"
    assert all(data[table] for table in CHILD_TABLES), {table: len(data[table]) for table in CHILD_TABLES}
    assert any(isinstance(v["ballot"], dict) for v in data["votes"]) and data["errors"]
    return json.loads(json.dumps(data))  # exactly what a file holds


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def debate_count(db: str | None = None) -> int:
    path = db or default_db_path()
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            return conn.execute("SELECT count(*) FROM debates").fetchone()[0]
    except sqlite3.OperationalError:  # no database file (or no table): nothing was written
        return 0


def import_file(path, db: str | None = None, *extra: str) -> tuple[int, str, str]:
    return run_cli(*(["--db", db] if db else []), "import", str(path), *extra)


def check_outcome(path, field: str | None, db: str | None = None) -> str | None:
    """Import `path`: refused naming `field` with nothing written, or (field None) imported with
    `show` and `export` working. Returns the imported debate's id."""
    before = debate_count(db)
    code, out, err = import_file(path, db, "--new-id")
    if field is not None:
        assert (code, out) == (2, ""), err
        assert err.startswith(f"error: {path}: {field}: "), err
        assert err.count("\n") == 1 and len(err) < 600
        assert debate_count(db) == before
        return None
    assert code == 0, err
    debate_id = out.strip()
    assert debate_count(db) == before + 1
    prefix = ["--db", db] if db else []
    code, shown, err = run_cli(*prefix, "show", debate_id)
    assert code == 0 and shown.startswith("# "), err
    for fmt in ("csv", "md"):
        assert run_cli(*prefix, "export", debate_id, "--format", fmt)[0] == 0
    code, text, err = run_cli(*prefix, "export", debate_id)
    assert code == 0, err
    again = json.loads(text)
    assert validate_export(again) == again  # what was imported exports as a valid, settled export
    return debate_id


# ----- tamperings -------------------------------------------------------------------------------
def at(path: str, value: Any) -> Callable[[dict], Any]:
    """Set the value at a dotted path ("turns.3.status"); the value DELETE removes the key."""
    def tamper(data: dict) -> dict:
        *parents, last = path.split(".")
        target = data
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        key = int(last) if isinstance(target, list) else last
        if value is DELETE:
            del target[key]
        else:
            target[key] = value(data) if callable(value) else value
        return data
    return tamper


DELETE = object()
DEEP = json.loads("[" * 40 + "]" * 40)


def first_turn_id(data: dict) -> str:
    return data["turns"][0]["id"]


TAMPERINGS: list[tuple[str, Callable[[dict], Any], str | None]] = [
    # the whole document
    ("a top-level list", lambda d: [d], "export"),
    ("a top-level number", lambda d: 7, "export"),
    ("another format", at("format", "other-tool"), "format"),
    ("no format", at("format", DELETE), "format"),
    ("version as text", at("version", "1"), "version"),
    ("version from the future", at("version", 2), "version"),
    ("version true", at("version", True), "version"),
    ("an unknown key", at("extra", 1), "extra"),
    ("no debate", at("debate", DELETE), "debate"),
    ("no config", at("config", DELETE), "config"),
    ("no steering table", at("steering", DELETE), None),
    ("no turns at all", lambda d: {**d, "turns": [], "annotations": []}, None),
    # the debate row
    ("debate as a list", at("debate", []), "debate"),
    ("debate id a number", at("debate.id", 5), "debate.id"),
    ("debate id empty", at("debate.id", ""), "debate.id"),
    ("debate id a path", at("debate.id", "../../etc/passwd"), "debate.id"),
    ("debate id too long", at("debate.id", "a" * 200), "debate.id"),
    ("unknown debate status", at("debate.status", "paused"), "debate.status"),
    ("debate status missing", at("debate.status", DELETE), "debate.status"),
    ("running debate", at("debate.status", "running"), None),
    ("question missing", at("debate.question", DELETE), "debate.question"),
    ("question a list", at("debate.question", ["q"]), "debate.question"),
    ("created_at as text", at("debate.created_at", "yesterday"), "debate.created_at"),
    ("created_at huge", at("debate.created_at", 1e300), "debate.created_at"),
    ("created_at negative", at("debate.created_at", -5), "debate.created_at"),
    ("pid huge", at("debate.pid", 2**70), "debate.pid"),
    ("unknown debate column", at("debate.evil", "x"), "debate.evil"),
    ("parent id with spaces", at("debate.parent_id", "a b"), "debate.parent_id"),
    # the config
    ("config as text", at("config", "rounds: 3"), "config"),
    ("config rounds as text", at("config.rounds", "three"), "config.rounds"),
    ("config rounds huge", at("config.rounds", 10**30), "config.rounds"),
    ("config label a list", at("config.agents.0.label", [1, 2]), "config.agents[0].label"),
    ("config unknown setting", at("config.surprise", 1), "config.surprise"),
    ("config nested too deep", at("config.surprise", DEEP), "config.surprise" + "[0]" * 31),
    ("config model not available here", at("config.agents.0.model", "openai/gpt-4o"), None),
    ("config with a secret", at("config.openai_api_key", "sk-not-really"), None),
    # turns
    ("turns not a list", at("turns", {"0": {}}), "turns"),
    ("a turn not a mapping", at("turns.0", "turn"), "turns[0]"),
    ("unknown turn status", at("turns.3.status", "weird"), "turns[3].status"),
    ("unknown turn kind", at("turns.3.kind", "monologue"), "turns[3].kind"),
    ("duplicated turn id", at("turns.1.id", first_turn_id), "turns[1].id"),
    ("negative seq", at("turns.0.seq", -1), "turns[0].seq"),
    ("seq beyond SQLite", at("turns.0.seq", 2**64), "turns[0].seq"),
    ("round as float", at("turns.0.round", 1.5), "turns[0].round"),
    ("prompt as text", at("turns.0.prompt", "hi"), "turns[0].prompt"),
    ("prompt content a number", at("turns.0.prompt.0.content", 5), "turns[0].prompt[0].content"),
    ("prompt without role", at("turns.0.prompt.0.role", DELETE), "turns[0].prompt[0].role"),
    ("latency NaN", at("turns.0.latency_s", math.nan), "turns[0].latency_s"),
    ("latency infinite", at("turns.0.latency_s", math.inf), "turns[0].latency_s"),
    ("agent missing", at("turns.0.agent", DELETE), "turns[0].agent"),
    ("unknown turn field", at("turns.0.extra", 1), "turns[0].extra"),
    ("agreement as text", at("turns.0.agreement", "yes"), "turns[0].agreement"),
    ("content null", at("turns.0.content", None), "turns[0].content"),
    ("content missing", at("turns.0.content", DELETE), None),
    ("confidence a float", at("turns.0.confidence", 1.5), "turns[0].confidence"),
    ("a lone surrogate in content", at("turns.0.content", "half \ud800 pair"), None),
    ("NUL in content", at("turns.0.content", "nul \x00 here"), None),
    # child tables
    ("annotation on a missing turn", at("annotations.0.turn_id", "no-such-turn"), "annotations[0].turn_id"),
    ("annotation without a tag", at("annotations.0.tag", " "), "annotations[0].tag"),
    ("duplicated agent label", at("agents.1.label", lambda d: d["agents"][0]["label"]), "agents[1].label"),
    ("agents not a list", at("agents", "Agent 1"), "agents"),
    ("a ballot as text", at("votes.0.ballot", "first"), "votes[0].ballot"),
    ("a ballot with a word key", at("votes.1.ballot", {"best": 3}), "votes[1].ballot.best"),
    ("a negative ballot", at("votes.1.ballot", -1), "votes[1].ballot"),
    ("valid as a number", at("votes.0.valid", 1), "votes[0].valid"),
    ("attempt beyond SQLite", at("votes.0.attempt", 2**63), "votes[0].attempt"),
    ("an unknown vote column", at("votes.0.weight", 2), "votes[0].weight"),
    ("a NaN score", at("decisions.0.scores.0", math.nan), "decisions[0].scores[0]"),
    ("details as a list", at("decisions.1.details", [1, 2]), "decisions[1].details"),
    ("details nested too deep", at("decisions.1.details", {"x": DEEP}), "decisions[1].details.x" + "[0]" * 31),
    ("details with a huge number", at("decisions.1.details", {"x": 10**30}), "decisions[1].details.x"),
    ("agrees as text", at("challenges.0.agrees", "maybe"), "challenges[0].agrees"),
    ("targets as text", at("steering.0.targets", "Agent 2"), "steering[0].targets"),
    ("error message null", at("errors.0.message", None), "errors[0].message"),
    ("speakers not texts", at("rounds.0.speakers", [1]), "rounds[0].speakers[0]"),
    ("a row not a mapping", at("challenges.0", ["Agent 1", True]), "challenges[0]"),
]


def test_there_are_enough_tamperings():
    assert len(TAMPERINGS) >= 37 and len({name for name, _, _ in TAMPERINGS}) == len(TAMPERINGS)


@pytest.mark.parametrize("tamper, field", [t[1:] for t in TAMPERINGS], ids=[t[0] for t in TAMPERINGS])
def test_a_tampered_export_imports_cleanly_or_is_refused_naming_the_field(export, tmp_path, tamper, field):
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(tamper(copy.deepcopy(export))), encoding="utf-8")
    check_outcome(path, field)
    if field is not None:
        assert not default_db_path().exists()  # refused before the database was even opened


def test_a_running_debate_imports_as_interrupted_and_can_be_resumed(export, tmp_path):
    data = copy.deepcopy(export)
    data["debate"].update(status="running", pid=1, host="elsewhere", owner="elsewhere:1:abc")
    path = tmp_path / "running.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    debate_id = check_outcome(path, None)
    with Store() as store:
        row = store.get_debate(debate_id)
    assert (row["status"], row["pid"], row["host"], row["owner"]) == ("interrupted", None, None, None)
    normalised = validate_export(data)
    assert normalised["debate"]["status"] == "interrupted" and data["debate"]["status"] == "running"
    assert validate_export(normalised) == normalised  # idempotent


def test_a_valid_export_is_returned_unchanged(export):
    assert validate_export(export) == export
    assert validate_export(validate_export(export)) == export


def test_a_secret_in_the_config_is_not_imported(export, tmp_path):
    data = copy.deepcopy(export)
    data["config"]["openai_api_key"] = "sk-not-really"
    path = tmp_path / "secret.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    debate_id = check_outcome(path, None)
    with Store() as store:
        assert "openai_api_key" not in store.get_debate(debate_id)["config"]


def test_the_schema_covers_every_stored_column():
    with Store() as store:
        columns = {table: set(store.db[table].columns_dict) - {"id", "debate_id"} for table in CHILD_TABLES}
        debate_columns = set(store.db["debates"].columns_dict) - {"config"}
    assert set(CHILD_COLUMNS) == set(CHILD_TABLES)
    assert {table: set(spec) for table, spec in CHILD_COLUMNS.items()} == columns
    assert set(DEBATE_COLUMNS) == debate_columns
    assert set(TURN_COLUMNS) == set(Turn.__dataclass_fields__)


def test_validate_export_raises_export_errors_for_python_callers(export):
    for bad, field in (([], "export"), ({**export, "turns": [{}]}, "turns[0].id"),
                       ({**export, "votes": [{**export["votes"][0], "ballot": {1.5: 1}}]}, "votes[0].ballot.1.5"),
                       ({**export, "config": {**export["config"], "seed": object()}}, "config.seed")):
        with pytest.raises(ExportError) as err:
            validate_export(bad)
        assert err.value.field == field and isinstance(err.value, ValueError)


# ----- files that are not exports ---------------------------------------------------------------
@pytest.mark.parametrize("content, words", [
    (b"", "not JSON: Expecting value"),
    (b"{not json", "not JSON: Expecting property name"),
    ("{\"format\": \"madlab-debate\", \"x\": \"Café\"}".encode("latin-1"), "not UTF-8 text (byte 0xe9"),
    (b"[" * 100_000, "nested too deeply"),
    (b'{"format": "madlab-debate", "version": ' + b"1" * 5000 + b"}", "not JSON: Exceeds the limit"),
    (b'{"format": "madlab-debate", "version": 1e400}', "version: unsupported export version inf"),
    (b'{"format": "madlab-debate", "version": 1}', "debate: missing"),
    (b'{"format": "other"}', "format: not a MAD Lab debate export"),
])
def test_files_that_are_no_export_exit_2(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, out, err = import_file(path)
    assert code == 2 and out == "" and err.startswith(f"error: {path}: ") and words in err
    assert err.count("\n") == 1 and len(err) < 600
    assert not default_db_path().exists()


def test_unreadable_and_oversized_files_exit_2(tmp_path, monkeypatch, export):
    code, _, err = import_file(tmp_path / "missing.json")
    assert code == 2 and "cannot read" in err
    code, _, err = import_file(tmp_path)
    assert code == 2 and "cannot read" in err
    path = tmp_path / "debate.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    monkeypatch.setattr("mad_core.cli.MAX_IMPORT_BYTES", 1000)
    code, _, err = import_file(path)
    assert code == 2 and "larger than 1,000 bytes" in err
    assert not default_db_path().exists()


# ----- a property: any mutation anywhere ------------------------------------------------------------
def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a JSON document (the root first)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, prefix + (index,))
    return found


SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
           | st.sampled_from([2**63, -1, 1e300, "running", "interrupted", "", "Agent 1", "x" * 300,
                              {"role": "user", "content": "hi"}, DEEP]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)


def mutate(data: dict, draw: Callable[..., Any], borrowed: list[Any]) -> Any:
    """One random change at a random place: replace, delete, add, or duplicate a list item."""
    where = draw(st.sampled_from(paths(data)), label="path")
    if not where:
        return copy.deepcopy(draw(VALUES, label="document"))  # never the shared DEEP itself: later mutations would change it
    parent = data
    for key in where[:-1]:
        parent = parent[key]
    key = where[-1]
    action = draw(st.sampled_from(["replace", "replace", "delete", "add", "duplicate"]), label="action")
    if action == "replace":
        parent[key] = copy.deepcopy(draw(VALUES | st.sampled_from(borrowed), label="value"))
    elif action == "delete":
        del parent[key]
    elif action == "add" and isinstance(parent, dict):
        parent[draw(st.sampled_from(NAMES) | st.text(max_size=8), label="key")] = copy.deepcopy(draw(VALUES))
    elif isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))
    return data


NAMES = sorted({*DEBATE_COLUMNS, *TURN_COLUMNS, *(c for spec in CHILD_COLUMNS.values() for c in spec),
                *CHILD_TABLES, "format", "version", "debate", "config", "turns", "role", "content"})


def borrowable(data: dict) -> list[Any]:
    """Values of a valid export (ids, labels, rows) to put somewhere else."""
    return [data["debate"]["id"], data["turns"][0]["id"], data["agents"][0]["label"], data["turns"][0]["prompt"],
            data["votes"][1]["ballot"], data["config"], data["turns"][0]]


@given(data=st.data())
def test_any_mutation_imports_cleanly_or_is_refused_naming_a_field(export, tmp_path_factory, data):
    work = tmp_path_factory.getbasetemp() / "mutations"
    work.mkdir(exist_ok=True)
    db, path = str(work / "madlab.db"), work / "mutated.json"
    document, borrowed = copy.deepcopy(export), borrowable(export)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        document = mutate(document, data.draw, borrowed) if isinstance(document, dict) else document
    path.write_text(json.dumps(document), encoding="utf-8")
    try:
        expected = validate_export(json.loads(path.read_text(encoding="utf-8")))
        field = None
    except ExportError as exc:
        field = exc.field
    debate_id = check_outcome(path, field, db)
    event("refused" if debate_id is None else "imported")
    if debate_id is not None:
        with Store(db) as store:
            stored = exports.export_debate(store, debate_id)
            assert stored["debate"]["status"] == expected["debate"]["status"] != "running"
            assert len(stored["turns"]) == len(expected.get("turns", []))
            store.delete_debate(debate_id)


# ----- documents too deep or too large: refused before anything walks them ---------------------------
def nested_text(export: dict, levels: int, key: str = "surprise") -> str:
    """The export's JSON text with `levels` nested lists under config.<key>, written as text (a
    nested object cannot even be made by json.dumps at 100,000 levels)."""
    text = json.dumps({**export, "config": {**export["config"], key: 0}})
    marker = f'"{key}": 0'
    assert text.count(marker) == 1
    return text.replace(marker, f'"{key}": ' + "[" * levels + "]" * levels)


@pytest.mark.parametrize("levels", [500, 100_000])
@pytest.mark.parametrize("key", ["surprise", "openai_api_key"])  # a secret's value was scrubbed recursively first
def test_a_document_nested_too_deep_is_refused_before_any_recursive_work(export, tmp_path, levels, key):
    text = nested_text(export, levels, key)
    with Store(tmp_path / "deep.db") as store:
        for document in (text, text.encode("utf-8")):
            with pytest.raises(ExportError) as err:
                exports.import_debate(store, document)
            assert (err.value.field, err.value.message) == ("export", f"nested deeper than {MAX_DOCUMENT_DEPTH} levels")
        if levels == 500:  # parsed by json itself (it can at 500 levels): the object is refused the same way
            with pytest.raises(ExportError, match="nested deeper than 64 levels"):
                exports.import_debate(store, json.loads(text))
        # Must not happen: a row written, or a RecursionError.
        assert store.db["debates"].count == 0 and store.db["turns"].count == 0


def test_an_object_nested_100000_levels_or_holding_itself_is_refused_without_recursion(export, tmp_path):
    deep: list = []
    for _ in range(100_000):  # built in a loop: nothing recursive makes it
        deep = [deep]
    looped: dict = {}
    looped["again"] = looped
    with Store(tmp_path / "deep.db") as store:
        for value in (deep, looped):
            data = {**export, "config": {**export["config"], "api_key": value}}
            with pytest.raises(ExportError, match="^export: nested deeper than 64 levels$"):
                exports.import_debate(store, data)
            with pytest.raises(ExportError, match="nested deeper than"):
                validate_export(data)
        assert store.db["debates"].count == 0


def test_a_document_larger_than_the_limit_is_refused_before_it_is_parsed(export, tmp_path, monkeypatch):
    monkeypatch.setattr("mad_core.export_schema.MAX_DOCUMENT_BYTES", 1_000_000)
    data = copy.deepcopy(export)
    data["turns"][0]["content"] = "é" * 600_000  # 600,000 characters, 1.2 MB as UTF-8
    with Store(tmp_path / "large.db") as store:
        for document in (json.dumps(data, ensure_ascii=False), json.dumps(data).encode("utf-8"), data):
            with pytest.raises(ExportError) as err:
                exports.import_debate(store, document)
            assert (err.value.field, err.value.message) == ("export", "larger than 1 MB")
        assert store.db["debates"].count == 0
        # The positive control: the same export at a normal size imports, from its text too.
        debate_id = exports.import_debate(store, json.dumps(export))
        assert store.get_debate(debate_id)["question"] == export["debate"]["question"]


def test_export_text_that_is_not_json_or_not_utf8_is_an_export_error(tmp_path):
    with Store(tmp_path / "bad.db") as store:
        for text, words in (("{not json", "not JSON"), (b"\xff\xfe{}", "not UTF-8 text"),
                            ('"a string with [[[ brackets" ]]]', "not JSON")):
            with pytest.raises(ExportError, match=words):
                exports.import_debate(store, text)
        assert store.db["debates"].count == 0
