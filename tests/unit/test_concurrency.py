"""Many writers, one database: threads and processes write at once and nothing is lost.

Covers what a probe found broken: several `Store.record` threads, ten debates in ten threads,
six CLI debates at once, annotating / searching / exporting while debates run, two resumes of
one debate started together (exactly one runs), kill -9 mid-debate then resume (the same
continuation as an uninterrupted run), and a database error in the middle of a debate (the
debate ends visibly as failed, never 'running' forever).
"""
from __future__ import annotations

import functools
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mad_core import DebateEngine, codebook, exports
from mad_core.events import DebateFinished, Turn, TurnFinished
from mad_core.resume import prepare_resume
from mad_core.store import HEARTBEATS, ResumeRefused, Store, list_debates, mark_dead_interrupted, search_turns
from tests import builders
from tests.builders import run

WORKER = Path(__file__).with_name("debate_worker.py")
ROOT = WORKER.parent.parent.parent


config = functools.partial(builders.config, rounds=2, max_rounds=2)  # 3 agents, 2 rounds


def worker(db: Path, *args: str, token_delay: float | None = None) -> subprocess.Popen:
    extra = ["--token-delay", str(token_delay)] if token_delay else []
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.Popen([sys.executable, str(WORKER), "--db", str(db), *args, *extra], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


RUN = ("run", "--question", "What is the capital of France?", "--agents", "3", "--rounds", "2",
       "--max-rounds", "2", "--model", "scripted/worker", "--ordering", "random", "--seed", "11")


def ok_turns(store: Store, debate_id: str) -> list[tuple]:
    return sorted((t.round, t.agent, t.kind, t.content) for t in store.turns(debate_id) if t.status == "ok")


def wait_for(condition, what: str, limit_s: float = 120.0):
    """Wait until condition() is true (a state change in another process), failing after limit_s."""
    deadline = time.monotonic() + limit_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)
    return value


# ----- threads ----------------------------------------------------------------------------------
def test_threads_recording_at_once_lose_no_write(tmp_path):
    path = tmp_path / "db.sqlite"
    with Store(path) as store:
        store.create_debate("d" * 32, {"question": "q", "agents": []})
    failures: list[BaseException] = []

    def write(n: int) -> None:
        try:
            with Store(path) as mine:
                for i in range(200):
                    turn = Turn(id=f"{n}-{i}", seq=n * 1000 + i, round=1, agent=f"A{n}", kind="discussion",
                                model="m", prompt=[], content=f"turn {i} of writer {n}")
                    mine.record(TurnFinished(turn), "d" * 32)
        except BaseException as exc:  # noqa: BLE001
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with Store(path) as store:
        assert len(store.turns("d" * 32)) == 800


def test_ten_debates_in_ten_threads_all_end_with_every_turn_on_disk(script, roles, tmp_path):
    path = tmp_path / "db.sqlite"
    model, _ = script(roles(), token_delay=0.001)
    ends: dict[int, list] = {}

    def debate(n: int) -> None:
        events = run(config(model, question=f"Question {n}?"), store=Store(path))
        ends[n] = [(e.status, events.engine.debate_id) for e in events if isinstance(e, DebateFinished)]

    threads = [threading.Thread(target=debate, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(ends) == list(range(10)) and all(len(v) == 1 and v[0][0] == "finished" for v in ends.values())
    with Store(path) as store:
        debates = list_debates(store)
        assert len(debates) == 10 and {d["status"] for d in debates} == {"finished"}
        for d in debates:  # 6 discussion turns, 3 extractions, 3 votes, a decision, nobody holding it
            kinds = [t.kind for t in store.turns(d["id"])]
            assert (kinds.count("discussion"), kinds.count("extraction"), kinds.count("vote")) == (6, 3, 3)
            assert len(store.votes(d["id"])) == 3 and store.decisions(d["id"])[-1]["final"]
            assert d["owner"] is None


def letter_counts(texts: list[str]) -> list[list[float]]:
    """A cheap embedder for the metrics: each text's count of each letter a-z."""
    return [[float(text.lower().count(chr(c))) for c in range(97, 123)] for text in texts]


def test_annotating_searching_and_exporting_while_debates_run_never_fail(script, roles, tmp_path):
    path = tmp_path / "db.sqlite"
    model, _ = script(roles(), token_delay=0.002)
    engines = [DebateEngine(config(model, question=f"Question {n}?"), store=Store(path)) for n in range(3)]
    ends: list[tuple[str, str | None]] = []
    threads = [threading.Thread(target=lambda e=e: ends.extend((x.status, x.reason) for x in e.run()
                                                                 if isinstance(x, DebateFinished)))
               for e in engines]
    for thread in threads:
        thread.start()
    made = 0
    with Store(path) as store:
        while any(thread.is_alive() for thread in threads):
            for engine in engines:
                for turn in store.turns(engine.debate_id)[-1:]:
                    codebook.annotate(store, engine.debate_id, turn.id, "seen", f"note {made}")
                    made += 1
                    # The metrics are computed and cached too, with a cheap embedder: SBERT's model would make
                    # this thread hog a busy machine's CPU, which is not what this test is about.
                    exports.export_debate(store, engine.debate_id, embed=letter_counts)
                    exports.to_markdown(store, engine.debate_id, embed=letter_counts)
                    exports.to_csv(store, engine.debate_id, embed=letter_counts)
            search_turns(store, "reasoning")
            list_debates(store, search="Paris")
        for thread in threads:
            thread.join()
        assert [status for status, _ in ends] == ["finished"] * 3, ends  # the reasons, if one failed
        assert made > 0 and sum(len(store.annotations(e.debate_id)) for e in engines) == made
        assert {d["status"] for d in list_debates(store)} == {"finished"}


def test_a_lagging_heartbeat_does_not_let_this_process_interrupt_its_own_running_debate(script, roles, tmp_path):
    """On a busy machine the heartbeat thread may fall a minute behind: this process still knows its
    debate is alive, so its own readers (a page, an export) never interrupt it; once it has ended
    (no claim held) the same staleness is an interruption, as before."""
    path = tmp_path / "db.sqlite"
    model, s = script(roles(), faults={0: "hang"})
    engine = DebateEngine(config(model), store=Store(path))
    ends: list[tuple[str, str | None]] = []
    thread = threading.Thread(target=lambda: ends.extend((e.status, e.reason) for e in engine.run()
                                                         if isinstance(e, DebateFinished)))
    thread.start()
    try:
        assert s.hanging.wait(60), "the first model call never started"
        with Store(path) as store:
            stale = time.time() - 3600
            store.db["debates"].update(engine.debate_id, {"heartbeat_at": stale, "updated_at": stale})
            assert mark_dead_interrupted(store) == []  # must not happen: its own live debate interrupted
            assert list_debates(store)[0]["status"] == "running"
    finally:
        s.release()
        thread.join()
    assert [status for status, _ in ends] == ["finished"], ends
    with Store(path) as store:
        store.db["debates"].update(engine.debate_id, {"status": "running", "owner": engine.owner, "heartbeat_at": stale,
                                                      "updated_at": stale})
        assert mark_dead_interrupted(store) == [engine.debate_id]  # ended: nobody holds it any more


def test_two_resumes_started_together_exactly_one_runs(script, roles, tmp_path):
    path = tmp_path / "db.sqlite"
    model, _ = script(roles(), token_delay=0.001)

    def stop(event, engine):
        if isinstance(event, TurnFinished) and event.turn.round == 2:
            engine.controller.stop()

    engine = run(config(model), steer=stop, store=Store(path)).engine
    barrier, got, refused = threading.Barrier(2), [], []

    def resume() -> None:
        with Store(path) as store:
            barrier.wait()
            try:
                got.append(prepare_resume(engine.debate_id, store))
            except ResumeRefused as exc:
                refused.append(str(exc))

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 1 and len(refused) == 1 and "still running" in refused[0]
    assert [e.status for e in got[0].run() if isinstance(e, DebateFinished)] == ["finished"]
    with Store(path) as store:
        keys = [(t.round, t.agent, t.kind) for t in store.turns(engine.debate_id) if t.status == "ok"]
        assert len(keys) == len(set(keys)) == 12  # no turn twice
        assert len(store.votes(engine.debate_id)) == 3
        assert [d["final"] for d in store.decisions(engine.debate_id)] == [False, True]


# ----- a broken database --------------------------------------------------------------------------
def test_a_database_error_mid_debate_ends_it_visibly_as_failed(script, roles, tmp_path, monkeypatch):
    path = tmp_path / "db.sqlite"
    model, _ = script(roles())
    real_record, calls = Store.record, {"turns": 0}

    def flaky(self, event, debate_id=None):
        if isinstance(event, TurnFinished):
            calls["turns"] += 1
            if calls["turns"] == 3:
                raise sqlite3.OperationalError("disk I/O error")
        return real_record(self, event, debate_id)

    monkeypatch.setattr(Store, "record", flaky)
    engine = DebateEngine(config(model), store=Store(path))
    ends = [e for e in engine.run() if isinstance(e, DebateFinished)]
    assert [e.status for e in ends] == ["failed"]
    assert "database could not be written" in ends[0].reason and "disk I/O error" in ends[0].reason
    with Store(path) as store:
        debate = store.get_debate(engine.debate_id)
        assert (debate["status"], debate["owner"]) == ("failed", None)
        assert "disk I/O error" in debate["reason"] and len(store.turns(engine.debate_id)) == 2
    assert (str(path), engine.debate_id) not in HEARTBEATS.held()


def test_a_database_that_cannot_be_written_at_all_still_ends_the_debate(script, roles, tmp_path, monkeypatch):
    path = tmp_path / "db.sqlite"
    model, _ = script(roles())
    real_record = Store.record

    def broken(self, event, debate_id=None):
        if not isinstance(event, (TurnFinished,)) or event.turn.seq < 2:
            if not isinstance(event, DebateFinished) and not type(event).__name__ == "ErrorOccurred":
                return real_record(self, event, debate_id)
        raise sqlite3.OperationalError("database disk image is malformed")

    monkeypatch.setattr(Store, "record", broken)
    engine = DebateEngine(config(model), store=Store(path))
    ends = [e for e in engine.run() if isinstance(e, DebateFinished)]
    assert [e.status for e in ends] == ["failed"] and "malformed" in ends[0].reason
    assert (str(path), engine.debate_id) not in HEARTBEATS.held()  # no beat: its claim expires
    with Store(path) as store:
        store.db["debates"].update(engine.debate_id, {"heartbeat_at": time.time() - 3600,
                                                      "updated_at": time.time() - 3600})
        assert mark_dead_interrupted(store) == [engine.debate_id]
        assert len(store.turns(engine.debate_id)) == 2  # what was written stays


# ----- processes ---------------------------------------------------------------------------------
def test_six_cli_debates_at_once_all_finish(tmp_path):
    db = tmp_path / "db.sqlite"
    procs = [worker(db, *RUN) for _ in range(6)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert [code for code, _ in results] == [0] * 6, results
    assert all("Traceback" not in err for _, err in results)
    with Store(db) as store:
        debates = list_debates(store)
        assert len(debates) == 6 and {d["status"] for d in debates} == {"finished"}
        assert all(len(ok_turns(store, d["id"])) == 12 for d in debates)


def test_two_resume_processes_exactly_one_runs(tmp_path):
    db = tmp_path / "db.sqlite"
    first = worker(db, *RUN, token_delay=0.02)
    with Store(db) as store:
        wait_for(lambda: list_debates(store) and len(store.turns(list_debates(store)[0]["id"])) >= 2,
                 "two turns on disk")
        first.send_signal(signal.SIGKILL)
        first.wait()
        debate_id = list_debates(store)[0]["id"]
        store.db["debates"].update(debate_id, {"heartbeat_at": time.time() - 3600})  # as if long dead
    resumes = [worker(db, "resume", debate_id, token_delay=0.005) for _ in range(2)]
    results = sorted((p.wait(timeout=300), p.stderr.read()) for p in resumes)
    assert [code for code, _ in results] == [0, 2], results
    assert results[1][1].startswith("error: debate ") and "Traceback" not in results[1][1]
    with Store(db) as store:
        keys = [turn[:3] for turn in ok_turns(store, debate_id)]
        assert len(keys) == len(set(keys)) == 12
        assert store.get_debate(debate_id)["status"] == "finished"


@pytest.mark.parametrize("kill_after", [1, 4, 7])
def test_kill_9_mid_debate_then_resume_continues_as_if_uninterrupted(tmp_path, kill_after):
    reference_db, db = tmp_path / "reference.sqlite", tmp_path / "db.sqlite"
    assert worker(reference_db, *RUN).wait(timeout=300) == 0
    victim = worker(db, *RUN, token_delay=0.01)
    with Store(db) as store:
        wait_for(lambda: list_debates(store) and
                 len(ok_turns(store, list_debates(store)[0]["id"])) >= kill_after, f"{kill_after} turns")
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        debate_id = list_debates(store)[0]["id"]
        assert store.get_debate(debate_id)["status"] == "interrupted"  # its process is gone
    resumed = worker(db, "resume", debate_id)
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()
    with Store(reference_db) as ref, Store(db) as store:
        reference_id = list_debates(ref)[0]["id"]
        assert ok_turns(store, debate_id) == ok_turns(ref, reference_id)
        assert store.get_debate(debate_id)["answer"] == ref.get_debate(reference_id)["answer"]
        assert sorted((v["agent"], v["ballot"]) for v in store.votes(debate_id)) == \
            sorted((v["agent"], v["ballot"]) for v in ref.votes(reference_id))  # cast at once: any order
        assert [r["speakers"] for r in store.rounds(debate_id)] == [r["speakers"] for r in ref.rounds(reference_id)]
