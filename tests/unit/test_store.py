"""The SQLite store: schema and migrations, every event written and read back, FTS search,
annotations, export/import, Markdown/CSV handouts, dead-process detection, no secrets."""
from __future__ import annotations

import csv
import functools
import io
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mad_core import codebook, exports
from mad_core.metrics.report import ROUND_COLUMNS
from mad_core.events import (ChallengeResult, DebateFinished, DebateStarted, DecisionAttempted, DecisionReached,
                             ErrorOccurred, PersonasAssigned, RoundStarted, SteeringApplied, TokenReceived, Turn,
                             TurnFinished, TurnRetried, TurnStarted, VoteCast)
from mad_core.store import core as store_core
from mad_core.store import (ClaimLost, ResumeRefused, Store, claim_for_resume, default_db_path, list_debates,
                            madlab_home, mark_dead_interrupted, search_turns, undo_resume)

CONFIG = {
    "question": "Which gas do plants absorb for photosynthesis?",
    "agents": [{"label": "Agent 1", "model": "scripted/echo", "persona": ""},
               {"label": "Agent 2", "model": "scripted/other", "persona": "A botanist."}],
    "protocol": "simple_voting",
    "paradigm": "memory",
    "rounds": 1,
    "max_rounds": 2,
    "reference": "CO2",
}


def make_turn(seq: int, agent: str, content: str, *, round: int = 1, kind: str = "discussion", **extra) -> Turn:
    return Turn(id=f"turn-{seq}", seq=seq, round=round, agent=agent, kind=kind, model="scripted/echo",
                prompt=[{"role": "system", "content": "Debate."}, {"role": "user", "content": f"Q{seq}"}],
                content=content, prompt_tokens=10 + seq, completion_tokens=5 + seq, latency_s=0.25,
                first_token_s=0.05, started_at=1000.0 + seq, finished_at=1001.0 + seq, **extra)


def run_debate(store: Store, debate_id: str = "a" * 32, config: dict | None = None) -> str:
    """Record one complete debate with every kind of event the store keeps."""
    store.create_debate(debate_id, config or CONFIG)
    events = [
        DebateStarted(debate_id=debate_id, config=config or CONFIG),
        PersonasAssigned(personas={"Agent 1": "A chemist.", "Agent 2": "A botanist."}),
        RoundStarted(round=1, order=["Agent 1", "Agent 2"]),
        TurnStarted(turn_id="turn-0", round=1, agent="Agent 1", kind="discussion", model="scripted/echo", prompt=[]),
        TokenReceived(turn_id="turn-0", agent="Agent 1", text="Plants"),
        TurnRetried(turn_id="turn-0", agent="Agent 1", attempt=2, error="timeout"),
        TurnFinished(turn=make_turn(0, "Agent 1", "Plants absorb carbon dioxide through stomata.",
                                    answer="CO2", agreement=True, confidence=8)),
        TurnFinished(turn=make_turn(1, "Agent 2", "Chlorophyll needs light; the gas is oxygen.",
                                    answer="O2", agreement=False)),
        TurnFinished(turn=make_turn(2, "Agent 2", "", kind="vote", status="failed", error="model crashed")),
        VoteCast(round=1, agent="Agent 1", protocol="simple_voting", raw="I vote 1", ballot=0, valid=True),
        VoteCast(round=1, agent="Agent 2", protocol="simple_voting", raw="hmm", ballot=None, valid=False,
                 reason="no number", attempt=3),
        DecisionAttempted(round=1, protocol="simple_voting", reached=False, reason="tie", scores=[1.0, 1.0],
                          solutions=["CO2", "O2"], solution_agents=["Agent 1", "Agent 2"]),
        SteeringApplied(action="message", targets=["Agent 2"], message="Check the light reactions."),
        SteeringApplied(action="force_decision"),
        DecisionReached(round=2, protocol="simple_voting", answer="CO2", winner_agent="Agent 1", winner_index=0,
                        scores=[2.0, 0.0], solutions=["CO2", "O2"], solution_agents=["Agent 1", "Agent 2"],
                        forced=True, fallback="first solution on a tie", details={"counts": {"0": 2}}),
        ChallengeResult(agent="Agent 2", agrees=False, new_answer="O2"),
        ChallengeResult(agent="Agent 1", agrees=None),
        ErrorOccurred(message="Agent 2's vote failed", agent="Agent 2", turn_id="turn-2"),
        DebateFinished(status="finished", answer="CO2", reason="forced"),
    ]
    for event in events:
        store.record(event)
    return debate_id


def row_counts(store: Store) -> dict[str, int]:
    return {name: store.db[name].count for name in
            ("debates", "agents", "turns", "votes", "decisions", "challenges", "steering", "errors", "annotations")}


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "test.db") as s:
        yield s


# ----- schema -------------------------------------------------------------------------------
def test_migrations_create_the_schema_on_an_empty_database(tmp_path):
    path = tmp_path / "empty.db"
    store = Store(path)
    assert store.applied_migrations()[:4] == ["m001_initial", "m002_owners_and_rounds", "m003_metrics",
                                               "m004_experiments"]
    applied = store.applied_migrations()
    assert applied == sorted(applied) and len(applied) == len(set(applied))  # in their numbered order, once
    assert {"m016_proposal_reviews", "m017_join_codes"} <= set(applied)
    store_migrations = store.applied_migrations()
    db = store.db
    assert {"_migrations", "debates", "agents", "turns", "votes", "decisions", "challenges", "steering",
            "errors", "annotations", "rounds", "turns_fts", "annotations_fts"} <= set(db.table_names())
    assert set(db["debates"].columns_dict) == {
        "id", "question", "config", "protocol", "paradigm", "models", "status", "answer", "reference", "reason",
        "parent_id", "forked_from_seq", "pid", "host", "created_at", "updated_at", "finished_at",
        "owner", "heartbeat_at"}
    assert db["debates"].pks == ["id"]
    assert db["turns"].pks == ["id"] and db["turns"].columns_dict["id"] is int
    assert set(Turn.__dataclass_fields__) - {"id"} <= set(db["turns"].columns_dict)
    assert {"turn_id", "debate_id"} <= set(db["turns"].columns_dict)
    assert any(ix.unique and ix.columns == ["debate_id", "turn_id"] for ix in db["turns"].indexes)
    for table in ("turns", "votes", "decisions", "challenges", "steering", "errors", "annotations", "rounds"):
        assert any(ix.columns[0] == "debate_id" for ix in db[table].indexes), table
    assert set(db["rounds"].columns_dict) == {"id", "debate_id", "round", "speakers", "topic", "steps", "ts"}
    assert db["turns"].detect_fts() == "turns_fts" and db["annotations"].detect_fts() == "annotations_fts"
    assert {"turns_ai", "turns_ad", "turns_au", "annotations_ai"} <= {t.name for t in db.triggers}
    assert db.journal_mode == "wal"
    assert db["metric_reports"].pks == ["debate_id"] and db["embeddings"].pks == ["text_hash", "model"]
    assert db["embeddings"].columns_dict["vector"] is bytes
    store.close()
    # Reopening applies nothing twice.
    with Store(path) as again:
        assert again.db["_migrations"].count == len(store_migrations)
        # every step is recorded under the one set name all of them had before the features took theirs
        assert {row["migration_set"] for row in again.db["_migrations"].rows} == {"madlab"}


def test_a_transaction_commits_at_its_end_and_rolls_back_on_an_error(tmp_path):
    with Store(tmp_path / "t.db") as store, Store(tmp_path / "t.db") as reader:
        with store.transaction() as db:
            db["tags"].insert({"name": "kept", "colour": "blue"})
            with store.transaction():  # nested: a savepoint of the outer one
                db["tags"].insert({"name": "also kept", "colour": "red"})
            assert not reader.query("SELECT 1 FROM tags WHERE name = 'kept'")  # not committed yet
        with pytest.raises(RuntimeError), store.transaction() as db:
            db["tags"].insert({"name": "undone", "colour": "green"})
            raise RuntimeError("boom")
        names = {row["name"] for row in reader.query("SELECT name FROM tags")}
        assert {"kept", "also kept"} <= names and "undone" not in names


def test_each_feature_keeps_its_own_migrations_beside_its_code():
    from sqlite_utils import Database

    from mad_core import codebook, join_codes, polls, round_plans
    from mad_core.experiments import storage
    from mad_core.metrics import cache
    from mad_core.qda import storage as qda_storage
    from mad_core.store.migrations import CORE_MIGRATIONS

    def steps(migrations):
        return [step.name for step in migrations.pending(Database(memory=True))]

    assert steps(CORE_MIGRATIONS) == ["m001_initial", "m002_owners_and_rounds", "m008_round_plans",
                                      "m011_steering_requested_at"]
    assert steps(cache.MIGRATIONS) == ["m003_metrics"]
    assert steps(storage.MIGRATIONS) == ["m004_experiments", "m010_experiment_configurations",
                                         "m012_experiment_provenance", "m013_run_results"]
    assert steps(polls.MIGRATIONS) == ["m005_polls", "m007_poll_devices"]
    assert steps(codebook.MIGRATIONS) == ["m006_codebook"]
    assert steps(round_plans.MIGRATIONS) == ["m009_round_plans"]
    assert steps(qda_storage.MIGRATIONS) == ["m014_coding_projects", "m015_annotations_to_codes",
                                             "m016_proposal_reviews"]
    assert steps(join_codes.MIGRATIONS) == ["m017_join_codes"]


def test_default_path_is_under_madlab_home(madlab_home):
    assert default_db_path() == madlab_home / "madlab.db"
    with Store() as store:
        assert store.path == madlab_home / "madlab.db"
    assert (madlab_home / "madlab.db").exists()


def test_madlab_home_defaults_to_dot_madlab(monkeypatch, tmp_path):
    monkeypatch.delenv("MADLAB_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert madlab_home() == tmp_path / ".madlab" and madlab_home().is_dir()


# ----- recording ----------------------------------------------------------------------------
def test_every_event_is_recorded_and_read_back(store):
    debate_id = run_debate(store)

    debate = store.get_debate(debate_id)
    assert debate["config"] == CONFIG
    assert debate["status"] == "finished" and debate["answer"] == "CO2" and debate["reason"] == "forced"
    assert debate["models"] == "scripted/echo,scripted/other"
    assert debate["protocol"] == "simple_voting" and debate["paradigm"] == "memory"
    assert debate["pid"] == os.getpid() and debate["host"] == socket.gethostname()
    assert debate["finished_at"] is not None and debate["reference"] == "CO2"

    assert [(a["label"], a["model"], a["persona"], a["position"]) for a in store.agents(debate_id)] == [
        ("Agent 1", "scripted/echo", "A chemist.", 0), ("Agent 2", "scripted/other", "A botanist.", 1)]

    turns = store.turns(debate_id)
    assert turns == [
        make_turn(0, "Agent 1", "Plants absorb carbon dioxide through stomata.", answer="CO2", agreement=True,
                  confidence=8),
        make_turn(1, "Agent 2", "Chlorophyll needs light; the gas is oxygen.", answer="O2", agreement=False),
        make_turn(2, "Agent 2", "", kind="vote", status="failed", error="model crashed"),
    ]

    votes = store.votes(debate_id)
    assert [(v["agent"], v["ballot"], v["valid"], v["reason"], v["attempt"], v["raw"]) for v in votes] == [
        ("Agent 1", 0, True, None, 1, "I vote 1"), ("Agent 2", None, False, "no number", 3, "hmm")]

    attempted, reached = store.decisions(debate_id)
    assert (attempted["reached"], attempted["final"], attempted["reason"], attempted["scores"],
            attempted["solution_agents"]) == (False, False, "tie", [1.0, 1.0], ["Agent 1", "Agent 2"])
    assert (reached["reached"], reached["final"], reached["answer"], reached["winner_agent"],
            reached["winner_index"]) == (True, True, "CO2", "Agent 1", 0)
    assert (reached["forced"], reached["fallback"], reached["details"], reached["round"]) == (
        True, "first solution on a tie", {"counts": {"0": 2}}, 2)

    assert [(c["agent"], c["agrees"], c["new_answer"]) for c in store.challenges(debate_id)] == [
        ("Agent 2", False, "O2"), ("Agent 1", None, None)]
    assert [(s["action"], s["targets"], s["message"]) for s in store.steering(debate_id)] == [
        ("message", ["Agent 2"], "Check the light reactions."), ("force_decision", None, None)]
    assert [(e["message"], e["turn_id"]) for e in store.errors(debate_id)] == [("Agent 2's vote failed", "turn-2")]


def test_streaming_events_write_nothing(store):
    debate_id = run_debate(store)
    before = row_counts(store)
    updated = store.get_debate(debate_id)["updated_at"]
    for event in (TurnStarted(turn_id="x", round=3, agent="Agent 1", kind="discussion", model="m", prompt=[]),
                  TokenReceived(turn_id="x", agent="Agent 1", text="tok"),
                  TurnRetried(turn_id="x", agent="Agent 1", attempt=2, error="boom")):
        store.record(event)
    assert row_counts(store) == before
    assert store.get_debate(debate_id)["updated_at"] == updated


def test_a_finished_turn_is_committed_before_record_returns(store, tmp_path):
    store.create_debate("d" * 32, CONFIG)
    store.record(TurnFinished(turn=make_turn(0, "Agent 1", "on disk already")))
    with Store(tmp_path / "test.db") as reader:  # a second connection sees it at once
        assert [t.content for t in reader.turns("d" * 32)] == ["on disk already"]
    assert not store.db.conn.in_transaction


def _python_with_pipes(code: str, path: Path) -> subprocess.Popen:
    """`python -c code path` from the repository, its stdin and stdout piped (text)."""
    repo = str(Path(__file__).resolve().parents[2])
    return subprocess.Popen([sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=repo, env={**os.environ, "PYTHONPATH": repo})


def test_a_turn_survives_its_writer_killed_right_after_record_returns(tmp_path):
    """Commits go to the WAL without waiting for the disk (synchronous=NORMAL, `use_wal`): what a
    killed process committed is kept all the same; only a power cut could lose the last commits."""
    path = tmp_path / "killed.db"
    code = ("import sys\nfrom mad_core.events import Turn, TurnFinished\nfrom mad_core.store import Store\n"
            "store = Store(sys.argv[1])\nstore.create_debate('k' * 32, {'question': 'Q?', 'agents': []})\n"
            "store.record(TurnFinished(turn=Turn(id='t0', seq=0, round=1, agent='Agent 1', kind='discussion', "
            "model='scripted/echo', prompt=[], content='kept')))\n"
            "print(store.db.execute('PRAGMA synchronous').fetchone()[0], flush=True)\nsys.stdin.read()\n")
    writer = _python_with_pipes(code, path)
    try:
        assert writer.stdout.readline().strip() == "1"  # NORMAL; the turn was recorded before this line
    finally:
        writer.kill()  # SIGKILL: no exit handler, no checkpoint, no close
        writer.wait(timeout=60)
    assert writer.returncode == -9
    with Store(path) as reader:
        assert reader.db.journal_mode == "wal"
        assert [t.content for t in reader.turns("k" * 32)] == ["kept"]


def test_a_turn_is_recorded_in_four_statements_without_looking_up_the_schema(store):
    """The insert is built once per table and set of columns (store/inserts.py): recording a turn
    runs BEGIN, its INSERT, the debate's updated_at and COMMIT, and no sqlite_master or
    table_info lookup (sqlite-utils' insert made 11 statements of every turn)."""
    store.create_debate("d" * 32, CONFIG)
    store.record(TurnFinished(turn=make_turn(0, "Agent 1", "first")))
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        store.record(TurnFinished(turn=make_turn(1, "Agent 2", "second")))
    finally:
        store.db.conn.set_trace_callback(None)
    # "-- ..." lines are SQLite's own work inside a statement (the FTS index's triggers); the trace
    # shows a statement again for each trigger step, hence dict.fromkeys
    ran = list(dict.fromkeys(s.split("(")[0].split(" = ")[0].strip() for s in statements if not s.startswith("--")))
    assert ran == ["BEGIN IMMEDIATE", "INSERT OR REPLACE INTO [turns]", "UPDATE debates SET updated_at", "COMMIT"]
    assert not [s for s in statements if "sqlite_master" in s or "table_info" in s]
    assert [t.content for t in store.turns("d" * 32)] == ["first", "second"]


def test_the_fast_insert_stores_what_sqlite_utils_stores(store):
    """Lists and dicts outside the JSON columns become JSON text as sqlite-utils makes them; a column
    added after the store opened is written; a column the table lacks is sqlite-utils' error, and
    the transaction writes nothing."""
    store.create_debate("d" * 32, CONFIG)
    store.db.execute("ALTER TABLE turns ADD COLUMN extra_note TEXT")  # as another process's migration would
    store.insert("turns", {"turn_id": "x", "debate_id": "d" * 32, "seq": 0, "round": 1, "agent": "A",
                           "kind": "discussion", "model": "m", "content": "c", "extra_note": ["a", {"b": 1}]})
    row = store.query("SELECT extra_note, prompt FROM turns WHERE turn_id = 'x'")[0]
    assert row == {"extra_note": '["a", {"b": 1}]', "prompt": None}
    with pytest.raises(sqlite3.OperationalError, match="no column named nope"):
        with store.transaction():
            store.insert("votes", {"debate_id": "d" * 32, "round": 1, "agent": "A", "raw": "1"})
            store.insert("votes", {"debate_id": "d" * 32, "nope": 1})
    assert store.votes("d" * 32) == []


def _writers_lock_is_free(path: Path) -> bool:
    """Whether no process holds the database's writers' lock (store/writelock.py), asked without waiting."""
    import fcntl

    fd = os.open(f"{path}-writers", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # also lets go of the lock if it was taken here


def test_a_write_transaction_holds_the_writers_lock_for_other_processes(tmp_path):
    """Processes take turns on a file lock beside the database, woken when it frees (not SQLite's
    busy handler, which sleeps up to 100 ms a try): held for the whole transaction, free after."""
    path = tmp_path / "turns.db"
    Store(path).close()
    code = ("import sys\nfrom mad_core.store import Store\nstore = Store(sys.argv[1])\n"
            "with store.transaction():\n    print('inside', flush=True)\n    sys.stdin.readline()\n"
            "print('out', flush=True)\nsys.stdin.readline()\n")
    writer = _python_with_pipes(code, path)
    try:
        assert _writers_lock_is_free(path)
        assert writer.stdout.readline().strip() == "inside"
        assert not _writers_lock_is_free(path)  # must not happen: a second writer while one is inside
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "out"
        assert _writers_lock_is_free(path)
    finally:
        writer.kill()
        writer.wait(timeout=60)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_takes_the_writers_lock_for_itself(tmp_path):
    """A child made by fork opens the lock file anew: taken through the parent's descriptor, the lock
    would count as the parent's and exclude nobody."""
    from mad_core.store.writelock import WriteLock

    path = tmp_path / "forked.db"
    lock = WriteLock(path)
    with lock:  # the parent's descriptor is open from here on
        pass
    inside_r, inside_w = os.pipe()
    leave_r, leave_w = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        try:
            with lock:
                os.write(inside_w, b"1")
                os.read(leave_r, 1)
        finally:
            os._exit(0)
    try:
        assert os.read(inside_r, 1) == b"1"
        assert not _writers_lock_is_free(path)
        # the parent's own descriptor must not get it either while the child holds it
        import fcntl
        with pytest.raises(BlockingIOError):
            fcntl.flock(lock._descriptor(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.write(leave_w, b"1")
        os.waitpid(child, 0)
    assert _writers_lock_is_free(path)


def test_a_lock_file_that_cannot_be_made_yet_leaves_the_turns_to_sqlite(tmp_path):
    """A folder not made yet (the response cache's first write): the writer goes on without the file
    lock (SQLite's busy timeout still orders it) and takes the lock once the file can be made."""
    from mad_core.store.writelock import WriteLock

    path = tmp_path / "later" / "cache.db"
    lock = WriteLock(path)
    with lock:
        assert not (tmp_path / "later").exists()
    path.parent.mkdir()
    with lock:
        assert not _writers_lock_is_free(path)
    assert _writers_lock_is_free(path)


def test_recording_a_turn_again_replaces_it_and_its_index_entry(store):
    store.create_debate("d" * 32, CONFIG)
    store.record(TurnFinished(turn=make_turn(0, "Agent 1", "", status="interrupted")))
    store.record(TurnFinished(turn=make_turn(0, "Agent 1", "pelican answer")))
    assert [(t.content, t.status) for t in store.turns("d" * 32)] == [("pelican answer", "ok")]
    store.record(TurnFinished(turn=make_turn(0, "Agent 1", "walrus answer")))
    assert search_turns(store, "pelican") == []
    assert [r["content"] for r in search_turns(store, "walrus")] == ["walrus answer"]


def test_record_updates_updated_at(store):
    store.create_debate("d" * 32, CONFIG)
    store.db["debates"].update("d" * 32, {"updated_at": 1.0})
    store.record(TurnFinished(turn=make_turn(0, "Agent 1", "text")))
    assert store.get_debate("d" * 32)["updated_at"] > 1.0


def test_record_without_a_debate_is_refused(store):
    with pytest.raises(ValueError, match="create_debate"):
        store.record(TurnFinished(turn=make_turn(0, "Agent 1", "text")))


def test_record_can_target_a_debate_explicitly(store):
    store.create_debate("a" * 32, CONFIG)
    store.create_debate("b" * 32, CONFIG)
    store.record(VoteCast(round=1, agent="Agent 1", protocol="p", raw="1", ballot=0, valid=True), "a" * 32)
    assert len(store.votes("a" * 32)) == 1 and store.votes("b" * 32) == []


def test_debate_started_creates_an_unknown_debate_and_resumes_a_known_one(store):
    store.record(DebateStarted(debate_id="e" * 32, config=CONFIG, parent_id="f" * 32))
    debate = store.get_debate("e" * 32)
    assert (debate["status"], debate["parent_id"], debate["config"]) == ("running", "f" * 32, CONFIG)
    store.db["debates"].update("e" * 32, {"status": "interrupted", "pid": 1, "finished_at": 5.0})
    store.record(DebateStarted(debate_id="e" * 32, config=CONFIG, resumed=True))
    debate = store.get_debate("e" * 32)
    assert (debate["status"], debate["pid"], debate["finished_at"]) == ("running", os.getpid(), None)


def test_round_orders_are_stored(store):
    debate_id = run_debate(store)
    assert [(r["round"], r["speakers"]) for r in store.rounds(debate_id)] == [(1, ["Agent 1", "Agent 2"])]


def test_a_resume_claim_forgets_what_a_resume_replays_and_undo_puts_it_back(store):
    debate_id = run_debate(store)
    store.set_status(debate_id, "stopped")
    codebook.annotate(store, debate_id, "turn-0", "keep")
    before, row_before = row_counts(store), store.get_debate(debate_id)
    exported = exports.export_debate(store, debate_id)
    claim = claim_for_resume(store, debate_id, "me:1:abc")
    after = row_counts(store)
    assert (after["votes"], after["decisions"], after["challenges"]) == (0, 0, 0)
    assert {k: v for k, v in after.items() if k not in ("votes", "decisions", "challenges")} == \
        {k: v for k, v in before.items() if k not in ("votes", "decisions", "challenges")}
    debate = store.get_debate(debate_id)
    assert (debate["status"], debate["owner"], debate["answer"]) == ("running", "me:1:abc", None)
    # The resume adds a failed turn and an error, then gives up: everything goes back as it was.
    mine = Store(store.path, owner="me:1:abc")
    mine.record(TurnFinished(turn=make_turn(7, "Agent 1", "", status="failed", error="gone")), debate_id)
    mine.record(ErrorOccurred(message="gone"), debate_id)
    mine.record(DebateFinished(status="failed", reason="gone"), debate_id)
    codebook.annotate(store, debate_id, "turn-1", "added meanwhile")  # a person's note is never undone
    assert undo_resume(store, claim) is True
    now = exports.export_debate(store, debate_id)
    for table in ("turns", "votes", "decisions", "challenges", "errors", "steering", "rounds"):
        assert now[table] == exported[table], table
    restored = store.get_debate(debate_id)
    assert {k: restored[k] for k in ("status", "answer", "reason", "finished_at", "owner")} == \
        {k: row_before[k] for k in ("status", "answer", "reason", "finished_at", "owner")}
    assert [a["tag"] for a in store.annotations(debate_id)] == ["keep", "added meanwhile"]


def test_a_writer_that_lost_its_claim_writes_nothing(store):
    debate_id = run_debate(store)
    store.set_status(debate_id, "interrupted")
    claim_for_resume(store, debate_id, "first:1:a")
    store.db["debates"].update(debate_id, {"owner": "second:2:b"})  # someone else took it over
    loser = Store(store.path, owner="first:1:a")
    before = row_counts(store)
    with pytest.raises(ClaimLost):
        loser.record(TurnFinished(turn=make_turn(9, "Agent 1", "late")), debate_id)
    assert row_counts(store) == before


@pytest.mark.parametrize("status, refused", [("finished", "is finished"), ("running", "is still running")])
def test_finished_and_live_debates_cannot_be_claimed(store, status, refused):
    debate_id = run_debate(store)
    store.set_status(debate_id, status)
    before = exports.export_debate(store, debate_id)
    with pytest.raises(ResumeRefused, match=refused):
        claim_for_resume(store, debate_id, "me:1:abc")
    assert exports.export_debate(store, debate_id) == before


def test_fork_keeps_parent_and_seq(store):
    store.create_debate("c" * 32, CONFIG, parent_id="a" * 32, forked_from_seq=4)
    debate = store.get_debate("c" * 32)
    assert (debate["parent_id"], debate["forked_from_seq"]) == ("a" * 32, 4)


def test_create_debate_twice_is_refused(store):
    store.create_debate("a" * 32, CONFIG)
    with pytest.raises(ValueError, match="already exists"):
        store.create_debate("a" * 32, CONFIG)


def test_set_status(store):
    store.create_debate("a" * 32, CONFIG)
    store.set_status("a" * 32, "stopped")
    assert store.get_debate("a" * 32)["status"] == "stopped"
    with pytest.raises(ValueError, match="unknown status"):
        store.set_status("a" * 32, "paused-ish")


def test_no_api_key_is_stored(store):
    config = {**CONFIG, "openai_api_key": "sk-SECRET-1", "token": "SECRET-2", "api_key": "SECRET-3",
              "agents": [{"label": "Agent 1", "model": "m", "max_tokens": 64, "api_key": "SECRET-4",
                          "extra": {"hf_token": "SECRET-5", "apikey": "SECRET-6"}}]}
    store.create_debate("a" * 32, config)
    stored = store.get_debate("a" * 32)["config"]
    assert stored == {**CONFIG, "agents": [{"label": "Agent 1", "model": "m", "max_tokens": 64, "extra": {}}]}
    raw = store.db.execute("SELECT config FROM debates").fetchone()[0]
    assert "SECRET" not in raw
    # Imports are scrubbed too.
    data = exports.export_debate(store, "a" * 32)
    data["config"]["db_password"] = "SECRET-7"
    data["config"]["agents"] = [{"label": "Agent 1", "model": "m", "api_key": "SECRET-8"}]
    new_id = exports.import_debate(store, data, new_id=True)
    assert "db_password" not in store.get_debate(new_id)["config"]
    assert "SECRET" not in str(exports.export_debate(store, new_id))


# ----- reading and searching ----------------------------------------------------------------
def test_list_debates_filters_and_orders_newest_first(store):
    run_debate(store, "a" * 32)
    store.create_debate("b" * 32, {**CONFIG, "question": "Is the sky green?", "protocol": "consensus"})
    store.db["debates"].update("a" * 32, {"created_at": 100.0})
    store.db["debates"].update("b" * 32, {"created_at": 200.0})
    assert [d["id"] for d in list_debates(store)] == ["b" * 32, "a" * 32]
    assert [d["id"] for d in list_debates(store, status="finished")] == ["a" * 32]
    assert [d["id"] for d in list_debates(store, protocol="consensus")] == ["b" * 32]
    assert [d["id"] for d in list_debates(store, limit=1)] == ["b" * 32]
    assert [d["id"] for d in list_debates(store, search="stomata")] == ["a" * 32]  # turn text
    assert [d["id"] for d in list_debates(store, search="sky green")] == ["b" * 32]  # question
    assert list_debates(store, search="stomata", status="running") == []


def test_search_turns_returns_turn_fields_and_a_snippet(store):
    debate_id = run_debate(store)
    results = search_turns(store, "chlorophyll")
    assert len(results) == 1
    hit = results[0]
    assert (hit["debate_id"], hit["turn_id"], hit["agent"], hit["seq"]) == (debate_id, "turn-1", "Agent 2", 1)
    assert "Chlorophyll" in hit["snippet"]
    long = "filler " * 100 + "needle in the haystack " + "filler " * 100
    store.record(TurnFinished(turn=make_turn(9, "Agent 1", long)))
    snippet = search_turns(store, "needle")[0]["snippet"]
    assert "needle" in snippet and len(snippet) < 200 and snippet.startswith("…") and snippet.endswith("…")
    assert {r["turn_id"] for r in search_turns(store, "Agent 1")} >= {"turn-0"}  # agent column is indexed too


@pytest.mark.parametrize("query", ['"AND OR (', '"', "(", ")", "NEAR(", "*", "^", "-", "content:x", "a\"b",
                                   "') OR 1=1 --", "\\", "\x00", "AND", "NOT", "   ", "", "🙂 é"])
def test_hostile_search_strings_never_break_search(store, query):
    """Operators, quotes and control characters are plain text: no turn holds these words, and a query
    with no words at all (blank, NUL) filters nothing. The positive control proves the index answers."""
    debate_id = run_debate(store)
    assert search_turns(store, query) == []
    no_words = query.strip("\x00 ") == ""
    assert [d["id"] for d in list_debates(store, search=query)] == ([debate_id] if no_words else [])
    assert [r["turn_id"] for r in search_turns(store, "stomata")] == ["turn-0"]  # positive control
    assert [d["id"] for d in list_debates(store, search="stomata")] == [debate_id]


@pytest.mark.parametrize("query", ['"stomata', "stomata*", "(stomata)", "stomata^", "-stomata", "stomata\\",
                                   "stomata\x00", 'stomata "', "stomata   "])
def test_hostile_characters_around_a_word_still_find_it(store, query):
    debate_id = run_debate(store)
    assert [r["turn_id"] for r in search_turns(store, query)] == ["turn-0"]
    assert [d["id"] for d in list_debates(store, search=query)] == [debate_id]


def test_operators_in_queries_are_plain_words(store):
    store.create_debate("a" * 32, CONFIG)
    store.record(TurnFinished(turn=make_turn(0, "Agent 1", "cats OR dogs NOT birds")))
    store.record(TurnFinished(turn=make_turn(1, "Agent 1", "only cats here")))
    # Unquoted, "cats OR dogs" would match both turns; quoted, every word must appear.
    assert [r["turn_id"] for r in search_turns(store, "cats OR dogs")] == ["turn-0"]
    assert [r["turn_id"] for r in search_turns(store, "NOT birds")] == ["turn-0"]


def test_find_debate_id_accepts_unique_prefixes(store):
    store.create_debate("abc1" + "0" * 28, CONFIG)
    store.create_debate("abc2" + "0" * 28, CONFIG)
    assert store.find_debate_id("abc1") == "abc1" + "0" * 28
    with pytest.raises(LookupError, match="ambiguous"):
        store.find_debate_id("abc")
    with pytest.raises(LookupError, match="no debate"):
        store.find_debate_id("zzz")
    with pytest.raises(LookupError, match="no debate"):
        store.find_debate_id("%")  # LIKE wildcards are literal


def test_delete_debate_removes_everything(store):
    debate_id = run_debate(store)
    codebook.annotate(store, debate_id, "turn-0", "keep")
    store.delete_debate(debate_id)
    assert all(count == 0 for count in row_counts(store).values())
    assert search_turns(store, "stomata") == []


# ----- annotations --------------------------------------------------------------------------
def test_annotations_are_stored_listed_searchable_and_deletable(store):
    debate_id = run_debate(store)
    first = codebook.annotate(store, debate_id, "turn-1", "hallucination", "oxygen is released, not absorbed")
    codebook.annotate(store, debate_id, "turn-0", "good")
    assert [(a["id"], a["turn_id"], a["tag"], a["note"]) for a in store.annotations(debate_id)] == [
        (first, "turn-1", "hallucination", "oxygen is released, not absorbed"), (first + 1, "turn-0", "good", "")]
    assert [d["id"] for d in list_debates(store, search="hallucination")] == [debate_id]
    assert [d["id"] for d in list_debates(store, search="released")] == [debate_id]
    codebook.delete_annotation(store, first)
    assert list_debates(store, search="hallucination") == []
    assert [a["tag"] for a in store.annotations(debate_id)] == ["good"]
    with pytest.raises(ValueError):
        codebook.annotate(store, debate_id, "turn-0", "  ")


# ----- export / import / handouts -----------------------------------------------------------
def test_export_import_round_trip(store, tmp_path):
    debate_id = run_debate(store)
    codebook.annotate(store, debate_id, "turn-1", "wrong", "oxygen")
    exported = exports.export_debate(store, debate_id)
    assert exported["format"] == "madlab-debate" and exported["version"] == 1
    assert exported["config"] == CONFIG and len(exported["turns"]) == 3
    assert {k: len(exported[k]) for k in ("agents", "votes", "decisions", "challenges", "steering", "errors",
                                          "annotations")} == {
        "agents": 2, "votes": 2, "decisions": 2, "challenges": 2, "steering": 2, "errors": 1, "annotations": 1}

    with Store(tmp_path / "other.db") as other:
        assert exports.import_debate(other, exported) == debate_id
        assert exports.export_debate(other, debate_id) == exported
        assert other.turns(debate_id) == store.turns(debate_id)

    copy_id = exports.import_debate(store, exported, new_id=True)
    assert copy_id != debate_id
    copy = exports.export_debate(store, copy_id)
    assert copy["debate"].pop("id") == copy_id
    exported["debate"].pop("id")
    assert copy == exported
    assert {d["id"] for d in list_debates(store, search="oxygen")} == {copy_id, debate_id}


def test_import_refuses_duplicates_and_foreign_data(store):
    debate_id = run_debate(store)
    data = exports.export_debate(store, debate_id)
    with pytest.raises(ValueError, match="already exists"):
        exports.import_debate(store, data)
    with pytest.raises(ValueError, match="not a MAD Lab"):
        exports.import_debate(store, {"format": "something-else"})
    with pytest.raises(ValueError, match="version"):
        exports.import_debate(store, {**data, "version": 99}, new_id=True)
    assert store.db["debates"].count == 1


def test_markdown_handout_contains_the_debate(store):
    debate_id = run_debate(store)
    codebook.annotate(store, debate_id, "turn-1", "wrong", "oxygen is an output")
    md = exports.to_markdown(store, debate_id)
    assert md.startswith("# Which gas do plants absorb for photosynthesis?")
    for text in ("Plants absorb carbon dioxide through stomata.", "Chlorophyll needs light; the gas is oxygen.",
                 "## Round 1", "## Round 2", "### Agent 1 · discussion", "### Agent 2 · vote",
                 "failed: model crashed", "**Answer:** CO2", "- Agent 1: solution 1", "- Agent 2: invalid (no number)",
                 "**No decision (simple_voting):** tie", "**Decision (simple_voting) (forced):** CO2 — Agent 1",
                 "**Agent 2:** scripted/other — A botanist.", "**Reference answer:** CO2",
                 "**Final answer:** CO2", "> **wrong**: oxygen is an output", "- Agent 2 challenges — proposes O2",
                 "- Agent 1 takes no clear stance",
                 "message → Agent 2: Check the light reactions."):
        assert text in md, text
    assert md.index("Plants absorb") < md.index("Chlorophyll") < md.index("## Round 2")
    assert "<" not in md  # no HTML of our own


def test_markdown_shows_only_failed_attempts_besides_the_decision(store):
    store.create_debate("a" * 32, CONFIG)
    store.record(DecisionAttempted(round=1, protocol="simple_voting", reached=True, reason="solution 1 won"))
    store.record(DecisionReached(round=1, protocol="simple_voting", answer="CO2", winner_agent=None, winner_index=0))
    md = exports.to_markdown(store, "a" * 32)
    assert "**Decision (simple_voting):** CO2" in md
    assert "No decision" not in md and "solution 1 won" not in md


def test_markdown_shows_model_text_literally_and_safely(store):
    store.create_debate("a" * 32, {**CONFIG, "question": "Is <img src=x onerror=alert(1)> safe?"})
    store.record(TurnFinished(turn=make_turn(0, "Agent 1", "x < y and <b>bold</b> <script>alert(1)</script> "
                                             "[click](javascript:alert(2)) <JavaScript:alert(3)> & done")))
    codebook.annotate(store, "a" * 32, "turn-0", "<i>tag</i>", "[x](javascript:void(0))")
    md = exports.to_markdown(store, "a" * 32)
    assert "x &lt; y and &lt;b&gt;bold&lt;/b&gt; &lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert r"\[click\](javascript&#58;alert(2)) &lt;JavaScript&#58;alert(3)&gt; &amp; done" in md
    assert "# Is &lt;img src=x onerror=alert(1)&gt; safe?" in md
    assert r"> **&lt;i&gt;tag&lt;/i&gt;**: \[x\](javascript&#58;void(0))" in md
    for raw in ("<", "javascript:", "JavaScript:"):
        assert raw not in md, raw
    assert re.search(r"(?<!\\)\]\(", md) is None  # no link can form: every ] before ( is escaped


def test_csv_cells_never_start_a_formula(store):
    hostile = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR", "plain =1"]
    store.create_debate("a" * 32, {**CONFIG, "question": hostile[0], "reference": hostile[3]})
    for seq, text in enumerate(hostile):
        store.record(TurnFinished(turn=make_turn(seq, text, text, answer=text)))
    rows = list(csv.DictReader(io.StringIO(exports.to_csv(store, "a" * 32), newline="")))
    assert [r["content"] for r in rows] == ["'" + t for t in hostile[:-1]] + ["plain =1"]
    assert [r["agent"] for r in rows] == [r["content"] for r in rows] == [r["answer"] for r in rows]
    # a text debate reads the reply's line (whitespace folded), neutralised like every other cell
    assert [r["answer_read"] for r in rows] == ["'" + t for t in hostile[:4]] + ["TAB", "CR", "plain =1"]
    assert {(r["question"], r["reference"]) for r in rows} == {("'" + hostile[0], "'" + hostile[3])}
    assert rows[0]["seq"] == "0"  # numbers stay numbers


def test_csvs_of_several_debates_concatenate_into_one_table(store):
    import pandas as pd

    first = run_debate(store)
    second = run_debate(store, "b" * 32, {**CONFIG, "question": "Which gas do we breathe out?", "answer_type": "choice",
                                          "answer_options": ["O2", "CO2"], "reference": "B"})
    tables = [pd.read_csv(io.StringIO(exports.to_csv(store, debate_id)), dtype=str, keep_default_na=False)
              for debate_id in (first, second)]
    assert list(tables[0].columns) == list(tables[1].columns) == [*exports.TURN_CSV_COLUMNS, *(
        f"round_{name}" for name in ROUND_COLUMNS)]
    both = pd.concat(tables, ignore_index=True)
    assert list(both.columns) == list(tables[0].columns)  # one table, no column of one debate only
    assert both.groupby("debate_id").size().to_dict() == {first: 3, second: 3}
    by_debate = {debate_id: rows for debate_id, rows in both.groupby("debate_id")}
    assert set(by_debate[first]["question"]) == {CONFIG["question"]}
    assert set(by_debate[second]["question"]) == {"Which gas do we breathe out?"}
    assert (set(by_debate[first]["reference"]), set(by_debate[second]["reference"])) == ({"CO2"}, {"B"})
    assert (set(by_debate[first]["answer_type"]), set(by_debate[second]["answer_type"])) == ({"text"}, {"choice"})
    assert list(by_debate[first]["confidence"]) == ["8", "", ""]  # each turn's own confidence
    # each turn's own answer as the debate's answer type reads it: in the choice debate no reply names a letter
    # or is an option's text (empty), in the free-text one it is the reply's last line; a vote states none
    assert list(by_debate[second]["answer_read"]) == ["", "", ""]
    assert list(by_debate[first]["answer_read"]) == ["Plants absorb carbon dioxide through stomata.",
                                                     "Chlorophyll needs light; the gas is oxygen.", ""]


def test_answer_read_is_the_turns_own_answer_not_the_decided_one(store):
    debate_id = "n" * 32
    config = {**CONFIG, "question": "How many apples are left?", "answer_type": "number", "reference": "18"}
    store.create_debate(debate_id, config)
    replies = [(0, "Agent 1", "I think 18 apples", "discussion"), (1, "Agent 2", "Maybe more.\nFinal answer: 20",
                                                                   "discussion"),
               (2, "Agent 1", "Either 20 or 21", "discussion"), (3, "Agent 2", "1", "vote"),
               (4, "Agent 2", '{"answer": "20 apples"}', "extraction")]
    for seq, agent, text, kind in replies:
        store.record(TurnFinished(turn=make_turn(seq, agent, text, kind=kind)), debate_id)
    store.record(DecisionReached(round=1, protocol="simple_voting", answer="20", winner_agent="Agent 2",
                                 winner_index=1), debate_id)
    rows = list(csv.DictReader(io.StringIO(exports.to_csv(store, debate_id), newline="")))
    # several numbers and no marker: unreadable; a vote states no answer; the extraction reads its JSON
    assert [r["answer_read"] for r in rows] == ["18", "20", "", "", "20"]
    assert {r["answer_type"] for r in rows} == {"number"} and {r["reference"] for r in rows} == {"18"}


def test_csv_has_one_row_per_turn(store):
    debate_id = run_debate(store)
    codebook.annotate(store, debate_id, "turn-0", "good", "cites stomata")
    codebook.annotate(store, debate_id, "turn-0", "short")
    rows = list(csv.DictReader(io.StringIO(exports.to_csv(store, debate_id))))
    assert [r["seq"] for r in rows] == ["0", "1", "2"]
    assert rows[0]["content"] == "Plants absorb carbon dioxide through stomata."
    assert (rows[0]["agent"], rows[0]["kind"], rows[0]["status"], rows[0]["answer"]) == (
        "Agent 1", "discussion", "ok", "CO2")
    assert (rows[0]["prompt_tokens"], rows[0]["completion_tokens"], rows[0]["latency_s"]) == ("10", "5", "0.25")
    assert rows[0]["annotations"] == "good: cites stomata; short: "
    assert rows[2]["status"] == "failed" and rows[1]["annotations"] == ""


# ----- steering times: when the person acted, when the engine applied it ----------------------
def test_a_database_and_an_export_from_before_request_times_still_open(tmp_path):
    from sqlite_utils import Database

    from mad_core.store.migrations import MIGRATIONS
    from mad_core.view import DebateView

    path = tmp_path / "old.db"
    db = Database(path)
    MIGRATIONS.apply(db, stop_before="m011_steering_requested_at")
    assert "requested_at" not in db["steering"].columns_dict
    db["debates"].insert({"id": "old", "question": "Old?", "config": '{"question": "Old?"}', "status": "stopped",
                          "created_at": 1.0})
    db["steering"].insert({"debate_id": "old", "action": "pause", "targets": "null", "message": None, "ts": 4.0})
    db.close()
    with Store(path) as store:
        assert "m011_steering_requested_at" in store.applied_migrations()
        assert store.steering("old")[0]["requested_at"] is None
        assert [(s.action, s.requested_at, s.ts) for s in DebateView.from_store(store, "old").steering] == [
            ("pause", None, 4.0)]
        exported = exports.export_debate(store, "old", embed=lambda texts: [[1.0] for _ in texts])
        assert "- applied " + exports.clock_time(4.0) + " pause" in exports.to_markdown(
            store, "old", embed=lambda texts: [[1.0] for _ in texts])
    old_export = {**exported, "steering": [{k: v for k, v in row.items() if k != "requested_at"}
                                           for row in exported["steering"]]}
    with Store(tmp_path / "new.db") as other:
        copy = exports.import_debate(other, old_export, new_id=True)
        assert [(row["action"], row["requested_at"], row["ts"]) for row in other.steering(copy)] == [
            ("pause", None, 4.0)]


def test_steering_rows_keep_when_it_was_asked_for_and_when_it_was_applied(store, tmp_path):
    store.create_debate("a" * 32, CONFIG)
    store.record(SteeringApplied(action="message", targets=["Agent 2"], message="Look again.", requested_at=10.5,
                                 ts=12.25))
    assert [(r["requested_at"], r["ts"]) for r in store.steering("a" * 32)] == [(10.5, 12.25)]
    exported = exports.export_debate(store, "a" * 32)
    assert [(r["requested_at"], r["ts"]) for r in exported["steering"]] == [(10.5, 12.25)]
    with Store(tmp_path / "other.db") as other:
        assert exports.export_debate(other, exports.import_debate(other, exported))["steering"] == exported["steering"]
    assert exports.steering_times({"ts": 12.25, "requested_at": 10.5}) == (
        f"applied {exports.clock_time(12.25)} (requested {exports.clock_time(10.5)})")


# ----- dead processes -----------------------------------------------------------------------
def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # exited and reaped: nothing runs under this pid now
    return proc.pid


def test_running_debates_of_dead_processes_become_interrupted(store, tmp_path):
    now = time.time()
    for debate_id, values in {
        "dead" + "0" * 28: {"pid": dead_pid()},
        "live" + "0" * 28: {"pid": os.getpid()},
        "hung" + "0" * 28: {"pid": os.getpid(), "heartbeat_at": now - 3600, "updated_at": now - 3600},
        "gone" + "0" * 28: {"host": "elsewhere", "updated_at": now - 3600, "heartbeat_at": now - 3600},
        "away" + "0" * 28: {"host": "elsewhere", "updated_at": now - 3600},
        "old_" + "0" * 28: {"host": "elsewhere", "updated_at": now - 3600, "heartbeat_at": None},
        "done" + "0" * 28: {"pid": dead_pid(), "status": "finished"},
    }.items():
        store.create_debate(debate_id, CONFIG)
        store.db["debates"].update(debate_id, values)
    assert sorted(mark_dead_interrupted(store)) == [p + "0" * 28 for p in ("dead", "gone", "hung", "old_")]
    status = {d["id"][:4]: d["status"] for d in list_debates(store)}
    assert status == {"dead": "interrupted", "live": "running", "hung": "interrupted", "gone": "interrupted",
                      "away": "running", "old_": "interrupted", "done": "finished"}
    assert mark_dead_interrupted(store) == []


def test_opening_a_store_writes_nothing_and_the_sweep_is_an_explicit_call(tmp_path):
    with Store(tmp_path / "x.db") as store:
        store.create_debate("a" * 32, CONFIG)
        store.db["debates"].update("a" * 32, {"pid": dead_pid()})
        changes = store.db.conn.total_changes
    with Store(tmp_path / "x.db") as store:
        assert store.db.conn.total_changes == 0  # the open (schema up to date) wrote nothing
        assert store.get_debate("a" * 32)["status"] == "running"
        assert mark_dead_interrupted(store) == ["a" * 32]
        assert store.get_debate("a" * 32)["status"] == "interrupted"
    assert changes > 0


def test_a_store_opens_while_another_connection_writes_to_a_new_database(tmp_path, monkeypatch):
    """Switching a new file to WAL fails at once, busy timeout or not, while another connection writes:
    the Store tries again (10 debates opening Stores in 10 threads met it on a busy core)."""
    path = tmp_path / "new.db"
    writer = sqlite3.connect(path)
    writer.execute("CREATE TABLE other (x)")
    writer.execute("BEGIN IMMEDIATE")  # a write under way, in SQLite's default journal mode
    writer.execute("INSERT INTO other VALUES (1)")
    pauses: list[float] = []

    def pause(seconds: float) -> None:  # the writer commits while the Store waits to try again
        pauses.append(seconds)
        writer.commit()

    monkeypatch.setattr(store_core, "retry_locked", functools.partial(store_core.retry_locked, pause=pause))
    with Store(path) as store:
        assert store.db.journal_mode == "wal" and "debates" in store.db.table_names()
    assert pauses == [0.05]  # refused once, then opened
    writer.close()


def test_retry_locked_tries_again_only_on_a_lock_and_lets_the_last_error_through():
    calls: list[int] = []
    pauses: list[float] = []

    def locked_twice() -> str:
        calls.append(1)
        if len(calls) <= 2:
            raise sqlite3.OperationalError("database is locked")
        return "done"

    assert store_core.retry_locked(locked_twice, pause=pauses.append) == "done"
    assert len(calls) == 3 and pauses == [0.05, 0.1]

    def broken() -> None:
        calls.append(1)
        raise sqlite3.OperationalError("no such table: nowhere")

    calls.clear()
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        store_core.retry_locked(broken, pause=pauses.append)
    assert len(calls) == 1  # any other error: no second try

    def always_locked() -> None:
        calls.append(1)
        raise sqlite3.OperationalError("database is locked")

    calls.clear()
    with pytest.raises(sqlite3.OperationalError, match="locked"):  # the lock itself, not a RuntimeError
        store_core.retry_locked(always_locked, tries=4, pause=lambda _s: None)
    assert len(calls) == 4


def test_cumulative_ballots_read_back_with_integer_keys(tmp_path):
    from mad_core.events import DebateStarted, VoteCast

    store = Store(tmp_path / "c.db")
    store.create_debate("d1", {"question": "q", "agents": []})
    store.record(DebateStarted("d1", {"question": "q"}), debate_id="d1")
    store.record(VoteCast(1, "A", "cumulative_voting", '{"1": 6, "2": 4}', {0: 6, 1: 4}, True), debate_id="d1")
    assert store.votes("d1")[0]["ballot"] == {0: 6, 1: 4}


# ----- any text, any query ------------------------------------------------------------------
def test_lone_surrogates_and_nul_are_stored_without_failing(store):
    debate_id = "s" * 32
    store.create_debate(debate_id, {**CONFIG, "question": "Why \ud800 this?"})
    text = "broken \ud800 escape, a pair \ud83d\ude00 and a NUL \x00 inside"
    store.record(TurnFinished(turn=make_turn(0, "Agent 1", text, answer="\udfff")), debate_id)
    store.record(SteeringApplied(action="message", targets=["Agent 1"], message="hi \udc80"), debate_id)
    turn = store.turns(debate_id)[0]
    assert turn.content == "broken \ufffd escape, a pair \U0001F600 and a NUL \x00 inside"
    assert turn.answer == "\ufffd" and store.get_debate(debate_id)["question"] == "Why \ufffd this?"
    assert store.steering(debate_id)[0]["message"] == "hi \ufffd"
    assert [r["turn_id"] for r in search_turns(store, "escape")] == ["turn-0"]
    exported = exports.export_debate(store, debate_id)
    assert exported["turns"][0]["content"] == turn.content
    assert "a pair 😀 and a NUL" in exports.to_markdown(store, debate_id)
    assert "a pair 😀 and a NUL" in exports.to_csv(store, debate_id)


@pytest.mark.parametrize("query", ["x" * 100_000, "\ud800" * 5000, "\x00zq\x00" * 3000, "\"" * 50_000 + "NEAR("])
def test_any_search_text_is_accepted(store, query):
    debate_id = run_debate(store)
    assert list_debates(store, search=query) == []
    assert search_turns(store, query) == []
    assert [r["turn_id"] for r in search_turns(store, "stomata")] == ["turn-0"]  # positive control: the same
    assert [d["id"] for d in list_debates(store, search="stomata")] == [debate_id]  # store answers a real query


@pytest.mark.parametrize("limit", [10**20, -5, 0, "many", None])
def test_any_listing_limit_is_kept_within_bounds(store, limit):
    run_debate(store)
    assert len(list_debates(store, limit=limit)) == 1


def test_a_dead_owners_claim_expires_and_a_live_one_holds(store):
    debate_id = run_debate(store)
    now = time.time()
    store.db["debates"].update(debate_id, {"status": "running", "owner": "far:1:x", "host": "far-away",
                                           "heartbeat_at": now, "updated_at": now})
    with pytest.raises(ResumeRefused, match="still running"):
        claim_for_resume(store, debate_id, "me:2:y")
    store.db["debates"].update(debate_id, {"heartbeat_at": now - 3600, "updated_at": now - 3600})
    claim_for_resume(store, debate_id, "me:2:y")
    assert store.get_debate(debate_id)["owner"] == "me:2:y"
