"""`experiment --workers N`: one sweep run by N processes over one store file (issue 21, item 7).

Every planned run is taken by exactly one worker (an atomic claim in the store's write transaction),
so a 12-debate sweep on two workers gives 12 debates, one per run, none twice, none left pending,
both workers having run some (each debate row names the process that ran it). A worker killed with
SIGKILL mid-sweep leaves its debate to `--resume`, which finishes it from its stored turns: no
duplicate debate, no lost item. The scripted model reaches the worker processes through a scripts
file (MADLAB_SCRIPTS), which every process loads; the kill waits for a state in the store
(`test_concurrency.wait_for`), never for a fixed time.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading

import pytest
import yaml

from mad_core import cli
from mad_core.experiments import ExperimentConfig, create_experiment, storage
from mad_core.experiments.workers import WorkersRunner, claim_next, reopen
from mad_core.store import Store
from test_concurrency import wait_for, worker

SCRIPT = "sweep"  # scripted/sweep, defined in the scripts file every process loads
REPLY = "I weighed it once more.\nFinal answer: yes"


def cheap_embed(texts):
    """A stand-in for SBERT (the parent computes each debate's report)."""
    return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]


def sweep(items: int = 6, seeds=(1, 2), concurrency: int = 2) -> dict:
    return {"name": "workers", "task_set": "yes_no", "items": items, "seeds": list(seeds), "concurrency": concurrency,
            "base": {"models": f"scripted/{SCRIPT}", "rounds": 1, "max_rounds": 2, "cache": "off"},
            "grid": {"protocol": ["majority_consensus"]}}


@pytest.fixture
def scripts(tmp_path, monkeypatch):
    """Write the scripts file (token_delay: seconds between pieces; faults, hang_s: as a Script takes
    them, counted in each process) and point MADLAB_SCRIPTS at it."""
    from mad_core.models import ensure_registered

    def write(token_delay: float = 0.0, **faults):
        path = tmp_path / f"scripts-{token_delay}.yaml"
        path.write_text(yaml.safe_dump({SCRIPT: {"replies": [REPLY], "token_delay": token_delay, **faults}}))
        monkeypatch.setenv("MADLAB_SCRIPTS", str(path))
        ensure_registered()  # this process too (the experiment's models are checked here)
        return path

    return write


def debates_by_run(store: Store, experiment_id: str) -> list[dict]:
    return store.query("SELECT r.run_index, r.status, r.attempts, r.debate_id, d.pid, d.owner, d.status AS debate "
                       "FROM experiment_runs r LEFT JOIN debates d ON d.id = r.debate_id "
                       "WHERE r.experiment_id = ? ORDER BY r.run_index", [experiment_id])


def every_run_once(store: Store, experiment_id: str, total: int) -> list[dict]:
    """Every run finished with its own finished debate; no other debate in the store."""
    rows = debates_by_run(store, experiment_id)
    assert len(rows) == total and {r["status"] for r in rows} == {"finished"}, rows
    assert {r["debate"] for r in rows} == {"finished"}
    assert len({r["debate_id"] for r in rows}) == total  # one debate per run, none shared
    assert store.query("SELECT COUNT(*) AS n FROM debates")[0]["n"] == total  # no duplicate debate
    return rows


# ----- the claim ---------------------------------------------------------------------------------
def test_two_claimers_at_once_never_take_the_same_run(scripts, tmp_path):
    scripts()
    db = tmp_path / "claims.db"
    store = Store(db)
    experiment_id = create_experiment(store, ExperimentConfig.from_dict(sweep(items=10, seeds=[1, 2, 3])))
    taken: list[list[int]] = [[], [], []]

    def claim(mine: list[int]) -> None:
        with Store(db) as own:
            while (row := claim_next(own, experiment_id)) is not None:
                mine.append(row["run_index"])

    threads = [threading.Thread(target=claim, args=(mine,)) for mine in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    everything = sorted(index for mine in taken for index in mine)
    assert everything == list(range(30))  # each run once, none left
    assert {r["status"] for r in storage.runs(store, experiment_id)} == {"running"}


def test_reopen_takes_back_only_runs_no_live_process_holds(scripts, tmp_path):
    scripts()
    store = Store(tmp_path / "reopen.db")
    experiment_id = create_experiment(store, ExperimentConfig.from_dict(sweep(items=4, seeds=[1])))
    rows = storage.runs(store, experiment_id)
    gone = subprocess.Popen(["true"])
    gone.wait()
    for row, debate in zip(rows, ("live", "dead", None, "done")):
        storage.update_run(store, row["id"], status="running", debate_id=debate and debate * 8)
        if debate:
            store.create_debate(debate * 8, {"question": "q", "agents": []})
    store.update_debate("dead" * 8, pid=gone.pid)  # its process is gone
    store.update_debate("done" * 8, status="stopped")
    reopened = reopen(store, experiment_id)
    assert sorted(reopened) == sorted(r["id"] for r in rows[1:])
    assert [r["status"] for r in storage.runs(store, experiment_id)] == ["running", "pending", "pending", "pending"]


# ----- a sweep in two processes ------------------------------------------------------------------
def test_two_workers_run_every_planned_debate_exactly_once(scripts, madlab_home):
    scripts(token_delay=0.005)
    store = Store()
    experiment_id = create_experiment(store, ExperimentConfig.from_dict(sweep()))
    progress = []
    runner = WorkersRunner(experiment_id, workers=2, db_path=store.path, embed=cheap_embed,
                           on_progress=progress.append)
    assert runner.run() == "finished", runner.error
    rows = every_run_once(store, experiment_id, 12)
    pids = {r["pid"] for r in rows}
    assert len(pids) == 2 and os.getpid() not in pids  # both workers ran some; the parent none
    assert all(r["owner"] is None for r in rows)  # released when each debate ended
    assert sorted(s["pid"] for s in runner.worker_stats) == sorted(pids)
    assert sum(s["debates"] for s in runner.worker_stats) == 12 and all(s["debates"] for s in runner.worker_stats)
    # The parent reported one line per debate: its start, then 12 ends, each run once.
    assert progress[0].run is None and len(progress) == 13
    assert sorted(p.run["run_index"] for p in progress[1:]) == list(range(12))
    assert (progress[-1].done, progress[-1].total, progress[-1].failed) == (12, 12, 0)
    assert storage.get_experiment(store, experiment_id)["status"] == "finished"


def test_workers_flag_is_checked_and_one_worker_is_the_single_process_path(scripts, tmp_path, capsys, monkeypatch):
    scripts()
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep(items=2, seeds=[1])))
    for bad in ("0", "33", "two"):
        assert cli.main(["experiment", str(path), "--workers", bad]) == 2
        assert "workers: must be a whole number from 1 to 32" in capsys.readouterr().err
    import mad_core.experiments.workers as workers

    monkeypatch.setattr(workers.WorkersRunner, "run", lambda self: pytest.fail("--workers 1 started processes"))
    monkeypatch.setattr("mad_core.experiments.runner.ExperimentRunner._report", lambda self, store, debate_id: None)
    assert cli.main(["experiment", str(path), "--workers", "1"]) == 0
    assert "[2/2]" in capsys.readouterr().out


def test_a_worker_killed_mid_sweep_leaves_a_sweep_that_resume_finishes(scripts, tmp_path, capsys, monkeypatch):
    """The command line in this process (the parent, its reports cheap), the workers real processes:
    one of them is killed with SIGKILL while its debate is half done."""
    from mad_core.experiments import results
    from mad_core.experiments.runner import ExperimentRunner
    from mad_core.metrics.report import debate_report

    monkeypatch.setattr(ExperimentRunner, "_report", lambda self, store, debate_id: debate_report(
        store, debate_id, embed=cheap_embed))
    monkeypatch.setattr(results, "_report", lambda store, debate_id, embed: debate_report(
        store, debate_id, embed=cheap_embed))
    # Each worker's 5th call (round 2 of its first debate) waits 2 s before it answers: a debate seen
    # with its first round done is still running when the worker is killed a moment later.
    scripts(token_delay=0.01, faults={4: "hang"}, hang_s=2.0)
    db, path = tmp_path / "kill.db", tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep()))
    killed: list[tuple] = []

    def a_worker_mid_debate(store: Store):
        """(pid, debate id) of a worker whose debate is still running with its first round done."""
        rows = store.query("SELECT d.id, d.pid FROM debates d JOIN experiment_runs r ON r.debate_id = d.id "
                           "WHERE d.status = 'running' AND (SELECT COUNT(*) FROM turns t WHERE t.debate_id = "
                           "d.id AND t.status = 'ok') >= 3 ORDER BY d.created_at LIMIT 1")
        return (rows[0]["pid"], rows[0]["id"]) if rows else None

    def kill() -> None:  # in a thread of its own, with its own Store
        with Store(db) as mine:
            victim, debate_id = wait_for(lambda: a_worker_mid_debate(mine), "a worker's debate half done")
            before = {(t.id, t.finished_at) for t in mine.turns(debate_id) if t.status == "ok"}
        killed.append((victim, debate_id, before))
        os.kill(victim, signal.SIGKILL)

    killer = threading.Thread(target=kill)
    killer.start()
    code = cli.main(["--db", str(db), "experiment", str(path), "--workers", "2"])
    killer.join(60)
    [(victim, killed_debate, before)] = killed
    err = capsys.readouterr().err
    assert code == 130, err  # stopped: resumable
    assert victim != os.getpid() and f"worker process {victim} was killed by SIGKILL" in err
    store = Store(db)
    experiment = storage.list_experiments(store)[0]
    assert experiment["status"] == "stopped"
    left = [r for r in debates_by_run(store, experiment["id"]) if r["status"] != "finished"]
    assert [r["debate_id"] for r in left] == [killed_debate]  # the other worker did every other run

    assert cli.main(["--db", str(db), "experiment", "--resume", experiment["id"][:8], "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "[12/12]" in out
    rows = every_run_once(store, experiment["id"], 12)
    again = next(r for r in rows if r["debate_id"] == killed_debate)
    assert again["attempts"] == 2  # the same debate, resumed: not a new one
    after = {(t.id, t.finished_at) for t in store.turns(killed_debate) if t.status == "ok"}
    assert before and before < after  # its finished turns kept, not asked again
    assert storage.get_experiment(store, experiment["id"])["status"] == "finished"


def test_the_command_line_runs_a_sweep_in_worker_processes(scripts, tmp_path):
    """`python ... experiment FILE --workers 2` as a person runs it (spawned workers, its own process)."""
    scripts(token_delay=0.005)
    db, path = tmp_path / "cli.db", tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep(items=2, seeds=[1, 2])))
    process = worker(db, "experiment", str(path), "--workers", "2")
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert "[4/4]" in out and "Traceback" not in err
    store = Store(db)
    rows = every_run_once(store, storage.list_experiments(store)[0]["id"], 4)
    assert process.pid not in {r["pid"] for r in rows}  # the workers ran them, not the parent
