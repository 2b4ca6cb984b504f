"""Running an experiment: its planned debates, at most `concurrency` at once, resumable.

What it is for: `ExperimentRunner(experiment_id).run()` claims a stored experiment (see
storage.py), runs every planned debate not yet done through the same engine and recorder as any
other debate (`DebateEngine`, which writes each turn as it finishes) in a pool of
`concurrency` threads, links each debate to its run, reports `Progress` (done / total / failed
and an ETA: the mean wall time of the debates finished so far × the debates left ÷ concurrency)
after every debate, and ends the experiment as finished, stopped or failed. `stop()` (Ctrl-C in
the CLI, Stop in the app) stops the running debates gracefully and starts no new one.

Resume: running an experiment again continues where it stopped. Debates that finished or failed
are never run again (a failed debate is a result: it counts as failed). A debate interrupted
mid-way (stopped, or its process died) is RESUMED, not rerun: the engine replays its schedule
over the stored turns without calling a model for them, and every call's sampling seed is
derived from the debate's seed, agent, round and kind (`calls.call_seed`), so the
continuation is what an uninterrupted debate would have asked, and no finished model work is
thrown away. A planned debate whose row was never written starts fresh under its planned id.

Nobody watches a sweep's debates as they happen (a viewer reads them from the database), so they
run unstreamed (`DebateEngine(..., stream=False)`: each reply asked for whole, far less CPU a call);
`stream=True` streams them as the app's own debates do. `experiment --workers N` runs one experiment
in N processes over the same store (workers.py: `WorkersRunner`, built on this class).

`start_background` runs one in a daemon thread of a long-lived process (the app) and keeps it
in a registry; state lives in the database, so any viewer can follow it. Never imports streamlit.
"""
from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..config import ConfigError
from ..store import HEARTBEAT_EVERY_S, ResumeRefused, Store, new_owner
from . import results, storage
from .spec import ExperimentConfig, Run


@dataclass
class Progress:
    """Where an experiment stands: debates done (finished or failed) of total, and an ETA in seconds."""

    experiment_id: str
    total: int
    done: int
    failed: int
    running: int
    eta_s: float | None
    run: dict[str, Any] | None = None  # the planned debate that just ended (its row), if any

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


def eta_seconds(mean_wall: float | None, remaining: int, concurrency: int) -> float | None:
    """Mean wall time of the finished debates × debates left ÷ concurrency (None before the first)."""
    if remaining <= 0:
        return 0.0
    if mean_wall is None:
        return None
    return mean_wall * remaining / max(1, concurrency)


def progress_of(store: Store, experiment_id: str, run: dict[str, Any] | None = None) -> Progress:
    """The progress of a stored experiment, from the database alone (what a reloaded page shows);
    counted by SQLite (`storage.run_counts`), so it costs the same at 10 or 10,000 debates."""
    experiment = storage.get_experiment(store, experiment_id) or {}
    counts = storage.run_counts(store, experiment_id)
    return Progress(experiment_id, counts["total"], counts["done"], counts["failed"], counts["running"],
                    eta_seconds(counts["mean_wall"], counts["total"] - counts["done"],
                                experiment.get("concurrency") or 1), run)


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA after the first debate"
    seconds = int(round(seconds))
    return f"ETA {seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class ExperimentRunner:
    """Runs one stored experiment; `run()` blocks until it ends and returns its final status."""

    def __init__(self, experiment_id: str, *, db_path: str | Path | None = None,
                 on_progress: Callable[[Progress], None] | None = None, embed: Any = None,
                 concurrency: int | None = None, stream: bool = False):
        self.experiment_id = experiment_id
        self.stream = stream  # False: nobody watches these debates, each reply is asked for whole
        self.db_path = Path(db_path) if db_path is not None else None
        self.on_progress = on_progress
        self.embed = embed  # the report's embedder (None: SBERT); tests pass a cheap one
        self.concurrency = concurrency
        self.owner = new_owner()
        self.status = "pending"
        self.error: str | None = None
        self._stop = threading.Event()
        self._lock = threading.RLock()  # a progress callback may call stop()
        self._controllers: dict[int, Any] = {}
        self._local = threading.local()
        self.thread: threading.Thread | None = None
        self.started = threading.Event()  # set once `run` has claimed the experiment (or could not)
        self.startup_error: BaseException | None = None

    # ----- control -----------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the running debates gracefully (they can be resumed) and start no new one."""
        self._stop.set()
        with self._lock:
            controllers = list(self._controllers.values())
        for controller in controllers:
            controller.stop()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _store(self) -> Store:
        """This thread's Store (SQLite connections must not cross threads)."""
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = Store(self.db_path)
        return store

    # ----- the run -------------------------------------------------------------------------------
    def prepare(self) -> tuple[ExperimentConfig, list[Run], dict[int, dict[str, Any]]]:
        """Read and re-check the stored experiment (models must run here), then claim it.

        Raises LookupError (unknown), ConfigError (its settings cannot run here) or
        ExperimentBusy (a live process runs it) and changes nothing in those cases."""
        store = self._store()
        record = storage.get_experiment(store, self.experiment_id)
        if record is None:
            raise LookupError(f"no experiment with id {self.experiment_id!r}")
        experiment = ExperimentConfig.from_dict(record["spec"])
        plan = {run.index: run for run in experiment.runs()}
        rows = {row["run_index"]: row for row in storage.runs(store, self.experiment_id)}
        if set(rows) != set(plan) or any(rows[i]["item_id"] != run.item.id or rows[i]["seed"] != run.seed
                                         or rows[i]["config_key"] != run.configuration.key for i, run in plan.items()):
            raise ConfigError("experiment", "its stored plan no longer matches its definition (the task set "
                                            "changed?): start a new experiment")
        storage.claim(store, self.experiment_id, self.owner)
        self._reconcile(store, rows)
        todo = [plan[i] for i, row in sorted(rows.items()) if row["status"] not in storage.DONE_RUN_STATUSES]
        return experiment, todo, rows

    def _reconcile(self, store: Store, rows: dict[int, dict[str, Any]]) -> None:
        """Runs whose debate ended while nobody recorded it (the process died in between) take its status."""
        for row in rows.values():
            if row["status"] in storage.DONE_RUN_STATUSES or not row.get("debate_id"):
                continue
            debate = store.get_debate(row["debate_id"]) or {}
            if debate.get("status") in storage.DONE_RUN_STATUSES:
                row["status"] = debate["status"]
                storage.update_run(store, row["id"], status=debate["status"])

    def run(self) -> str:
        """Run the experiment to its end (or until `stop()`); returns finished / stopped / failed."""
        try:
            experiment, todo, rows = self.prepare()
        except BaseException as exc:
            self.startup_error = exc
            raise
        finally:
            self.started.set()
        concurrency = self.concurrency or experiment.concurrency
        if self.concurrency and self.concurrency != experiment.concurrency:
            storage.set_concurrency(self._store(), self.experiment_id, concurrency)
        self.status = "running"
        self._progress(None)
        try:
            self._run_debates(todo, rows, concurrency)
        except KeyboardInterrupt:  # a second Ctrl-C: the debates were stopped and can be resumed
            self.status = "stopped"
            storage.release(self._store(), self.experiment_id, self.owner, "stopped")
            raise
        except BaseException as exc:
            self.status, self.error = "failed", f"{type(exc).__name__}: {exc}"
            storage.release(self._store(), self.experiment_id, self.owner, "failed", self.error)
            raise
        left = [r for r in storage.runs(self._store(), self.experiment_id)
                if r["status"] not in storage.DONE_RUN_STATUSES]
        self.status = "stopped" if left else "finished"
        storage.release(self._store(), self.experiment_id, self.owner, self.status, self.error)
        return self.status

    def _run_debates(self, todo: list[Run], rows: dict[int, dict[str, Any]], concurrency: int) -> None:
        """Run the debates left (`todo`), `concurrency` at once, beating the experiment's heartbeat."""
        left = iter(todo)
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="madlab-exp") as pool:
            pending: set[Any] = set()
            try:
                while True:
                    # at most two debates per thread wait in the pool: 10,000 planned ones cost no more memory than 10
                    while len(pending) < 2 * concurrency and (run := next(left, None)) is not None:
                        pending.add(pool.submit(self._one, run, rows[run.index]))
                    if not pending:
                        break
                    _, pending = wait(pending, timeout=HEARTBEAT_EVERY_S, return_when=FIRST_COMPLETED)
                    storage.heartbeat(self._store(), self.experiment_id, self.owner)
            except BaseException:
                self.stop()  # before the pool waits for its workers: they end their debates now
                raise

    def _one(self, run: Run, row: dict[str, Any]) -> None:
        """Run (or resume) one planned debate, record how it ended, report progress."""
        if self.stopping:
            return
        from ..controller import Controller
        from ..engine import DebateEngine
        from ..replay import Origin
        from ..resume import prepare_resume

        store = self._store()
        controller = Controller()
        with self._lock:
            self._controllers[run.index] = controller
        started = time.time()
        debate_id = row.get("debate_id")
        values: dict[str, Any] = {"attempts": (row.get("attempts") or 0) + 1, "started_at": started, "error": None}
        try:
            existing = store.get_debate(debate_id) if debate_id else None
            if existing is not None:  # interrupted mid-way: resume it from its last finished turn
                engine = prepare_resume(debate_id, store, controller)
                engine.calls.stream = self.stream  # before it runs: its calls are asked for as ours are
            else:
                debate_id = debate_id or uuid.uuid4().hex
                engine = DebateEngine(run.debate_config(), controller=controller, store=store,
                                      origin=Origin(debate_id=debate_id), stream=self.stream)
            storage.update_run(store, row["id"], status="running", debate_id=debate_id, **values)
            if self.stopping:
                controller.stop()
            for _ in engine.run():
                pass
            status = engine.status if engine.status in storage.RUN_STATUSES else "failed"
        except (ResumeRefused, ConfigError) as exc:
            status, values["error"] = "failed", str(exc)
        except Exception as exc:  # noqa: BLE001 - one broken debate must not end the experiment
            status, values["error"] = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._controllers.pop(run.index, None)
        wall = time.time() - started
        if status in storage.DONE_RUN_STATUSES and debate_id:
            self._report(store, debate_id)
        with self._lock:  # one debate's end and its progress line at a time: the counts go up by one
            storage.update_run(store, row["id"], status=status, debate_id=debate_id, wall_s=wall,
                               finished_at=time.time(), **values)
            self._progress({**row, **values, "status": status, "debate_id": debate_id, "wall_s": wall,
                            "config_label": run.configuration.label})

    def _report(self, store: Store, debate_id: str) -> None:
        """Compute the debate's report now (cached in the database) and keep what the results table
        needs on its run (`results.store_run_result`)."""
        try:
            results.store_run_result(store, debate_id, embed=self.embed)
        except Exception:  # noqa: BLE001 - the results table computes it again and says what failed
            pass

    def _progress(self, run: dict[str, Any] | None) -> None:
        """Report where the experiment stands (callers hold `_lock`, or no worker runs yet)."""
        if self.on_progress is not None:
            self.on_progress(progress_of(self._store(), self.experiment_id, run))


# ----- background runs (the app) -------------------------------------------------------------------
_ACTIVE: dict[str, ExperimentRunner] = {}
_ACTIVE_LOCK = threading.Lock()


def start_background(experiment_id: str, *, db_path: str | Path | None = None, embed: Any = None) -> ExperimentRunner:
    """Claim and run an experiment in a daemon thread; raises (nothing changed) if it cannot start."""
    runner = ExperimentRunner(experiment_id, db_path=db_path, embed=embed)

    def work() -> None:
        try:
            runner.run()
        except BaseException as exc:  # noqa: BLE001 - recorded on the runner and in the database
            runner.error = runner.error or f"{type(exc).__name__}: {exc}"
        finally:
            with _ACTIVE_LOCK:
                if _ACTIVE.get(experiment_id) is runner:
                    _ACTIVE.pop(experiment_id)

    runner.thread = threading.Thread(target=work, name=f"madlab-experiment-{experiment_id[:8]}", daemon=True)
    with _ACTIVE_LOCK:
        if experiment_id in _ACTIVE:
            raise storage.ExperimentBusy(f"experiment {experiment_id[:8]} is already running here")
        _ACTIVE[experiment_id] = runner
    runner.thread.start()
    runner.started.wait()  # the checks and the claim happen before this returns
    if runner.startup_error is not None:
        runner.thread.join()
        raise runner.startup_error
    return runner


def active(experiment_id: str) -> ExperimentRunner | None:
    """The runner of an experiment running in this process, if any."""
    with _ACTIVE_LOCK:
        return _ACTIVE.get(experiment_id)
