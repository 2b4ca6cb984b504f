"""`experiment --workers N`: one experiment run by N processes over one store file.

What it is for: a sweep is bound by Python's CPU time per model call, and one process runs one thread
of Python at a time; N processes use N cores. `WorkersRunner(experiment_id, workers=N).run()` does what
`ExperimentRunner.run` does around the debates (the checks, the experiment's claim and heartbeat, its
end) and starts N worker processes (multiprocessing's "spawn" context: a fresh interpreter each, never
a fork of a process holding threads and SQLite connections). Each worker runs ceil(concurrency / N)
debates at a time. A worker's thread takes the next planned debate with one atomic claim
(`claim_next`: the first pending run becomes 'running' inside the store's write transaction, BEGIN
IMMEDIATE, so two processes never take the same run), runs it exactly as the single-process runner does
(`ExperimentRunner._one`: a new debate, or an interrupted one resumed from its stored turns), and takes
another until none is pending. The workers start together, once every one of them has loaded its
model stack, so none takes the whole sweep while the others are still starting.

Progress: a worker sends each run that ended to the parent over its pipe; a thread of the parent
computes the debate's metric report (cached in the database for the results table, as the
single-process runner does after each debate: one embedding model in memory, the parent's, not one
per worker; in a thread of its own, so that loading it never holds up the experiment's heartbeat),
reads where the experiment stands from the store and reports it (`on_progress`, one line per debate).
Stop: `stop()` (Ctrl-C in the parent; the workers ignore SIGINT) tells every worker to stop its
debates gracefully; a worker whose parent is gone (its pipe closed) stops the same way.

A worker that dies (kill -9) leaves its debates 'running' under an owner that is gone, and their runs
'running': the other workers go on with the pending runs, and the experiment ends 'stopped', its error
naming the worker. `--resume` (with or without --workers) takes them over: the single-process runner
runs every run not done; here `reopen` first makes pending again every run left 'running' or
'stopped' whose debate no live process holds (or that never got a debate), and the worker that claims
it resumes the debate from its stored turns (`prepare_resume`).

Storage: the claim and the reopening are written here, through `Store.transaction` (storage.py's
functions are another module's, and its table has no owner column): a run's owner is the owner of its
debate (the debates row's owner, pid and host, written when the debate starts).

What it must not do: run the single-process path differently (`ExperimentRunner`, when --workers is
absent or 1), let two processes take one run, or leave a run pending while a worker lives.
"""
from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for_any
from typing import Any

from ..store import HEARTBEAT_EVERY_S, Store
from ..store.claims import owner_gone
from . import storage
from .runner import ExperimentRunner
from .spec import ExperimentConfig, Run

MAX_WORKERS = 32
STOP_GRACE_S = 60.0  # how long stopped workers may take to end their debates before they are terminated


# ----- the store: claiming and reopening runs ---------------------------------------------------
def claim_next(store: Store, experiment_id: str) -> dict[str, Any] | None:
    """Take the first pending run of the experiment (its row, now 'running'), or None when none is left.

    Read and written in one write transaction (BEGIN IMMEDIATE): no other process writes in between,
    so a run is taken by exactly one caller."""
    with store.transaction() as db:
        rows = list(db.query("SELECT * FROM experiment_runs WHERE experiment_id = ? AND status = 'pending' "
                             "ORDER BY run_index LIMIT 1", [experiment_id]))
        if not rows:
            return None
        now = time.time()
        db.execute("UPDATE experiment_runs SET status = 'running', started_at = ? WHERE id = ? AND status = 'pending'",
                   [now, rows[0]["id"]])
    return {**rows[0], "status": "running", "started_at": now}


def reopen(store: Store, experiment_id: str) -> list[int]:
    """Make pending again the runs left 'running' or 'stopped' whose debate no live process holds (its
    process died or was stopped, or the debate never began); returns their ids.

    Called by the parent before its workers start, while it holds the experiment's claim (no other
    runner of it lives; the workers of a parent that died stop when their pipe closes)."""
    sql = ("SELECT r.id, d.status AS debate_status, d.owner, d.pid, d.host, d.heartbeat_at, d.updated_at "
           "FROM experiment_runs r LEFT JOIN debates d ON d.id = r.debate_id "
           "WHERE r.experiment_id = ? AND r.status IN ('running', 'stopped')")
    host, now = socket.gethostname(), time.time()
    with store.transaction() as db:
        rows = list(db.query(sql, [experiment_id]))
        ids = [row["id"] for row in rows if row["debate_status"] != "running" or owner_gone(row, host, now)]
        for run_id in ids:
            db.execute("UPDATE experiment_runs SET status = 'pending' WHERE id = ?", [run_id])
    return ids


# ----- the parent ----------------------------------------------------------------------------------
@dataclass
class _Child:
    """One worker process as the parent sees it: the process, its pipe, where it stands."""

    process: Any  # multiprocessing's SpawnProcess
    pipe: Connection
    ready: bool = False
    open: bool = True  # its pipe still delivers (closed: the worker has ended)


class WorkersRunner(ExperimentRunner):
    """Runs one stored experiment in `workers` processes (see the module docstring).

    `setup`: a picklable function each worker calls first (a test's or a benchmark's models to
    register); `worker_stats`: what each worker reported at its end (pid, debates, CPU seconds)."""

    def __init__(self, experiment_id: str, *, workers: int, setup: Callable[[], None] | None = None,
                 **options: Any):
        super().__init__(experiment_id, **options)
        if not 1 <= workers <= MAX_WORKERS:
            raise ValueError(f"workers must be from 1 to {MAX_WORKERS}, got {workers}")
        self.workers = workers
        self.setup = setup
        self.worker_stats: list[dict[str, Any]] = []
        self.problems: list[str] = []  # workers that ended badly, in words
        self._children: list[_Child] = []
        self._ended: queue.SimpleQueue = queue.SimpleQueue()  # runs that ended, for the reporting thread

    def prepare(self) -> tuple[ExperimentConfig, list[Run], dict[int, dict[str, Any]]]:
        experiment, todo, rows = super().prepare()  # the checks and the experiment's claim
        reopen(self._store(), self.experiment_id)
        return experiment, todo, rows

    def stop(self) -> None:
        super().stop()
        for child in list(self._children):
            _send(child.pipe, "stop")

    def _run_debates(self, todo: list[Run], rows: dict[int, dict[str, Any]], concurrency: int) -> None:
        if not todo:
            return
        count = min(self.workers, len(todo))
        context = multiprocessing.get_context("spawn")
        args = (self.experiment_id, str(self._store().path), math.ceil(concurrency / count), self.stream, self.setup)
        reporter = threading.Thread(target=self._report_ended, name="madlab-experiment-reports", daemon=True)
        reporter.start()
        try:
            for number in range(count):
                mine, theirs = context.Pipe()
                process = context.Process(target=work, args=(*args, theirs), name=f"madlab-worker-{number + 1}")
                process.start()
                theirs.close()  # the worker holds the only other end: it reads as closed once the worker ends
                self._children.append(_Child(process, mine))
            self._supervise()
        except BaseException:
            self.stop()  # they end their debates gracefully (or are terminated after STOP_GRACE_S)
            raise
        finally:
            _end_all(self._children, STOP_GRACE_S)
            self._ended.put(None)
            reporter.join()
        if self.problems:
            self.error = "; ".join(self.problems)

    def _supervise(self) -> None:
        """Start the workers together once all are ready; report each debate that ends; beat the
        experiment's heartbeat; return when every worker has ended."""
        children = {child.pipe: child for child in self._children}
        started, beaten = False, time.monotonic()
        while any(child.open for child in self._children):
            if not started and all(child.ready or not child.open for child in self._children):
                started = True
                for child in self._children:
                    _send(child.pipe, "stop" if self.stopping else "go")
            for pipe in wait_for_any([c.pipe for c in self._children if c.open], timeout=HEARTBEAT_EVERY_S):
                self._receive(children[pipe])
            if time.monotonic() - beaten >= HEARTBEAT_EVERY_S:
                storage.heartbeat(self._store(), self.experiment_id, self.owner)
                beaten = time.monotonic()

    def _receive(self, child: _Child) -> None:
        try:
            kind, body = child.pipe.recv()
        except (EOFError, OSError):  # the worker ended (or died): how?
            child.open = False
            child.process.join()
            problem = _exit_problem(child.process.pid, child.process.exitcode)
            if problem:
                self.problems.append(problem)
            return
        if kind == "ready":
            child.ready = True
        elif kind == "ended":
            self._ended.put(body)
        elif kind == "done":
            self.worker_stats.append(body)


    def _report_ended(self) -> None:
        """The reporting thread: each ended run's report, then its progress line, in the order they came."""
        while (run := self._ended.get()) is not None:
            try:
                if run.get("status") in storage.DONE_RUN_STATUSES and run.get("debate_id"):
                    self._report(self._store(), run["debate_id"])
                with self._lock:
                    self._progress(run)
            except Exception:  # noqa: BLE001 - a progress callback's error must not lose the others
                pass


def _send(pipe: Connection, message: Any) -> None:
    with contextlib.suppress(OSError, ValueError):  # a worker that has ended (its pipe closed)
        pipe.send(message)


def _end_all(children: list[_Child], grace: float) -> None:
    """Wait up to `grace` seconds for the workers to end; terminate the ones still running."""
    deadline = time.monotonic() + grace
    for child in children:
        child.process.join(max(0.0, deadline - time.monotonic()))
        if child.process.is_alive():
            child.process.terminate()
            child.process.join()
        child.pipe.close()


def _exit_problem(pid: int | None, code: int | None) -> str | None:
    """A worker's end in words when it was not a clean exit (None when it was)."""
    if code == 0:
        return None
    if code is not None and code < 0:
        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"failed (exit code {code}; its error is above)"
    return f"worker process {pid} {how}: its unfinished debates are resumed by --resume"


# ----- a worker ------------------------------------------------------------------------------------
class _Worker(ExperimentRunner):
    """One worker process's runner: its threads take pending runs until none is left."""

    def __init__(self, experiment_id: str, pipe: Connection, **options: Any):
        super().__init__(experiment_id, **options)
        self.pipe = pipe
        self.ran = 0
        self._send_lock = threading.Lock()

    def send(self, message: Any) -> None:
        with self._send_lock:
            _send(self.pipe, message)

    def _report(self, store: Store, debate_id: str) -> None:
        """Left to the parent (see the module docstring)."""

    def _progress(self, run: dict[str, Any] | None) -> None:  # under `_lock` (see `_one`): the parent reports
        if run is not None:
            self.ran += 1
            self.send(("ended", run))

    def take_runs(self, plan: dict[int, Run]) -> None:
        store = self._store()
        while not self.stopping:
            row = claim_next(store, self.experiment_id)
            if row is None:
                return
            self._one(plan[row["run_index"]], row)

    def listen(self) -> None:
        """Stop when the parent says so, or is gone (its pipe closed)."""
        try:
            while self.pipe.recv() != "stop":
                pass
        except (EOFError, OSError):
            pass
        self.stop()


def work(experiment_id: str, db_path: str, concurrency: int, stream: bool, setup: Callable[[], None] | None,
         pipe: Connection) -> None:
    """A worker process's life: get ready, wait for the parent's "go", take runs until none is left."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it tells the workers to stop
    if setup is not None:
        setup()
    from ..engine import DebateEngine  # noqa: F401 - the model stack loads before the start, not in a debate
    from ..models import ensure_registered

    ensure_registered()
    worker = _Worker(experiment_id, pipe, db_path=db_path, stream=stream)
    record = storage.get_experiment(worker._store(), experiment_id) or {}
    plan = {run.index: run for run in ExperimentConfig.from_dict(record["spec"]).runs()}
    pipe.send(("ready", os.getpid()))
    try:
        if pipe.recv() != "go":
            return
    except (EOFError, OSError):
        return
    threading.Thread(target=worker.listen, name="madlab-worker-listen", daemon=True).start()
    cpu, wall = time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="madlab-exp") as pool:
        futures = [pool.submit(worker.take_runs, plan) for _ in range(concurrency)]
    worker.send(("done", {"pid": os.getpid(), "debates": worker.ran, "cpu_s": time.process_time() - cpu,
                          "wall_s": time.perf_counter() - wall}))
    for future in futures:
        future.result()  # a thread's error (the store, say) ends the worker visibly: the parent names it
