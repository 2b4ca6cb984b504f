"""`experiment FILE --ray HEAD:6379`: an experiment's debates run across machines by Ray (issue 21, item 7).

What it is for: a sweep bigger than one machine. `RayRunner(experiment_id, address="HEAD:6379").run()`
does what `ExperimentRunner.run` does around the debates (the checks, the experiment's claim and
heartbeat, progress, its end as finished / stopped / failed) and hands each planned debate not done to
Ray, an existing distributed engine: one Ray task a debate (`run_debate`, `num_cpus` each), at most
`concurrency` in flight (`ray.wait`). Ray places the tasks on the cluster's machines, restarts workers
that die and reports a node that is lost.

The design: the driver (this process) alone writes the database. A task gets the planned run, the
debate id the driver chose for it and nothing of the store (no path, no connection): it runs the debate
through the same engine as any other (`DebateEngine(..., stream=False)`, no store) with a listener that
keeps every event the store records, and returns them (`DebateResult`: plain dataclasses, pickled back).
The driver writes a returned debate in ONE write transaction (`Store.transaction`): the debate row, its
events in their order through `Store.record` (the rows any debate gets; its pid and host name the
worker that ran it), and its run's row (debate id, status, wall time, attempts). A debate is therefore
in the database whole or not at all, and a run is finished exactly when its debate is. Then (in a
thread of its own) the driver computes the debate's metric report, cached for the results table as the
single-process runner does, and reports progress (`on_progress`, one line per debate). When the
debate's settings use the response cache, the task also returns the cache entries the debate stored or
read in its machine's MAD Lab home, and the driver adds them to its own home's cache (`experiment
export` takes a sweep's cached replies from there).

Failures: a task that raises, whose worker process dies (`WorkerCrashedError`) or whose node is lost is
submitted again, up to `max_attempts` tries in all; then its run is recorded failed with the cause and
no debate. A debate that ends failed (its model kept failing) is a result, as in the other runners: not
retried. Stop: `stop()` (Ctrl-C in the CLI) collects the debates already returned, cancels the tasks in
flight (`ray.cancel`; their work is lost, nothing of it was written) and the experiment ends 'stopped'.
Resume: run it again, with Ray or without. A run left 'running' by a driver that died (kill -9) names a
debate that was never written: it runs afresh under that same id, so no debate is duplicated and no
item lost (`ExperimentRunner` and `WorkersRunner` resume it the same way). A run whose debate IS in the
database half done (a single-process runner was interrupted) is resumed from its stored turns in this
process (`ExperimentRunner._one`), since only this process reads the store.

Connecting (`connect`): `address=None` starts a Ray of this machine's own (`ray.init`, `local_cpus`
CPUs, no dashboard, bound to loopback, Ray's token authentication with its token in ~/.ray/auth_token)
and shuts it down at the end; "auto" or "HOST:PORT" joins a running cluster and leaves it running.
Ray is imported here only, on the first `connect`: nothing else of MAD Lab (the app, the CLI, the
engine) imports it. Usage statistics are off (RAY_USAGE_STATS_ENABLED=0), and nothing here asks Ray
for what downloads (no runtime environments): the workers import the project as installed on their
machine (Ray also puts the driver's current folder on their Python path).

Starting a cluster (every machine: the same Python, this project and `ray==2.60.0` installed, e.g.
`scripts/setup.sh`; the models the sweep names must run on every worker machine: local GGUF files in
each machine's MAD Lab home, or API keys in each machine's environment)::

    ray start --head --port 6379 --disable-usage-stats            # on the head machine
    ray start --address HEAD:6379 --disable-usage-stats           # on each other machine
    python -m mad_core experiment FILE --ray HEAD:6379            # anywhere in the cluster: the driver
    python -m mad_core experiment --resume ID --ray HEAD:6379     # continue a stopped one

(A cluster on one machine's loopback, as the tests start one: `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 ray
start --head --node-ip-address 127.0.0.1 ...`, without which Ray replaces 127.0.0.1 by the machine's
network address; `connect` does the same for the driver when the address is a loopback one.) A Ray
cluster runs whatever code its clients send: keep its ports inside a trusted network.

What it must not do: let a task open, or be told the path of, the driver's database; write a debate
before its task has returned, or part of one; run a run twice at once (the experiment's claim: one
driver at a time); leave a run 'running' when it returns; import ray at import time; start a
dashboard; shut down a cluster it did not start.
"""
from __future__ import annotations

import collections
import contextlib
import os
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..events import DebateStarted, Event
from ..store import HEARTBEAT_EVERY_S, Store
from . import storage
from .runner import ExperimentRunner
from .spec import Run

DEFAULT_ATTEMPTS = 3  # tries of one debate's task (the first included) before its run is failed
WAIT_S = 0.5  # the longest the driver waits for a task before it looks at stop() and the heartbeat again
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
_LOCAL_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray keeps to loopback (see _loopback_only)


class RayUnavailable(RuntimeError):
    """Ray is not installed here, or the cluster cannot be reached (nothing was changed)."""


# ----- the task (runs on any machine of the cluster) ---------------------------------------------
@dataclass(frozen=True)
class DebateRequest:
    """What one task is given: the planned run, its debate's id, which try this is. No store."""

    run: Run
    debate_id: str
    attempt: int = 1
    stream: bool = False
    setup: Callable[[], None] | None = None  # called first in the task (a test's or a benchmark's models)


@dataclass
class DebateResult:
    """What one task hands back: the debate's recorded events, in order, and where it ran."""

    debate_id: str
    status: str  # finished, failed or stopped (the engine's)
    events: list[Event]
    wall_s: float
    pid: int
    host: str
    cache_entries: list[dict[str, Any]] = field(default_factory=list)  # response-cache entries it used


def run_debate(request: DebateRequest) -> DebateResult:
    """One debate, run by a Ray task: no store; every event the store records comes back, in order."""
    if request.setup is not None:
        request.setup()
    from ..engine import DebateEngine
    from ..models import ensure_registered
    from ..replay import Origin
    from ..store.rows import EVENT_WRITERS

    ensure_registered()
    events: list[Event] = []

    def keep(event: Event) -> None:  # recorded events come from the engine's one worker thread, in order
        if type(event) in EVENT_WRITERS:
            events.append(event)

    config = request.run.debate_config()
    started = time.time()
    engine = DebateEngine(config, origin=Origin(debate_id=request.debate_id), listeners=[keep],
                          stream=request.stream)
    for _ in engine.run():
        pass
    return DebateResult(request.debate_id, engine.status, events, time.time() - started, os.getpid(),
                        socket.gethostname(), _cache_entries(config.cache, request.debate_id))


def _cache_entries(mode: str, debate_id: str) -> list[dict[str, Any]]:
    """The response-cache entries the debate stored or read in this machine's home ("readwrite" only)."""
    if mode != "readwrite":
        return []
    from ..models.response_cache import ResponseCache

    cache = ResponseCache("read")
    try:
        return cache.entries_for([debate_id])
    except Exception:  # noqa: BLE001 - the debate stands without them; the driver's cache just lacks them
        return []
    finally:
        cache.close()


# ----- connecting ----------------------------------------------------------------------------------
def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(f"Ray is not installed ({exc}): pip install ray==2.60.0") from None
    return ray


def _loopback(address: str) -> bool:
    return address.rpartition(":")[0] in _LOOPBACK if ":" in address else address in _LOOPBACK


def connect(address: str | None = None, *, num_cpus: int | None = None) -> bool:
    """Connect this process to Ray: `None` starts a Ray of this machine (`num_cpus` CPUs, loopback only),
    "auto" or "HOST:PORT" joins a running cluster. Returns True when this call connected (then
    `disconnect()` lets go: the local Ray ends, a joined cluster keeps running); False when this process
    was connected already. Raises RayUnavailable."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray = _ray()
    if ray.is_initialized():
        return False
    if address is not None:
        _check_reachable(address)  # Ray itself would retry a wrong address for minutes
    options: dict[str, Any] = dict(log_to_driver=False, ignore_reinit_error=True)
    if address is None:
        options.update(num_cpus=num_cpus, include_dashboard=False)
    else:
        options.update(address=address)
    try:
        with _loopback_only(address is None or _loopback(address), local=address is None):
            ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailable(f"cannot reach the Ray cluster at {address or 'this machine'}: {exc}") from None
    return True


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """RayUnavailable at once when nothing answers at HOST:PORT ("auto" and other forms are left to Ray)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayUnavailable(f"nothing answers at {address} ({exc}): is the cluster's head started there "
                             f"(`ray start --head --port {port}`)?") from None


@contextlib.contextmanager
def _loopback_only(loopback: bool, local: bool) -> Iterator[None]:
    """While Ray starts or connects: keep to 127.0.0.1 when `loopback` (Ray on Linux replaces a loopback
    address by the machine's network address unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, read when ray is
    imported; the Ray processes started now inherit it); and for a `local` Ray, no RAY_ADDRESS (with
    which ray.init would join that cluster instead). All put back afterwards."""
    if not loopback:
        yield
        return
    from ray._private import ray_constants

    saved = {name: os.environ.get(name) for name in (_LOCAL_ONLY, "RAY_ADDRESS")}
    before = ray_constants.ENABLE_RAY_CLUSTER
    os.environ[_LOCAL_ONLY], ray_constants.ENABLE_RAY_CLUSTER = "0", False
    if local:
        os.environ.pop("RAY_ADDRESS", None)
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def disconnect() -> None:
    """Let go of Ray (this process's connection; a Ray that `connect(None)` started ends with it)."""
    ray = _ray()
    if ray.is_initialized():
        ray.shutdown()


def _cause(exc: BaseException) -> str:
    """A failed task's cause in one line: the task's own exception where Ray kept it."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        exc = cause
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]


# ----- the driver ----------------------------------------------------------------------------------
class RayRunner(ExperimentRunner):
    """Runs one stored experiment's debates as Ray tasks; this process alone writes (module docstring).

    `address`: None (a Ray of this machine, `local_cpus` CPUs), "auto" or "HOST:PORT"; `num_cpus`: the
    CPUs each task reserves; `max_attempts`: tries of a task before its run is failed; `setup`: a
    picklable function every task calls first (it must be importable on the workers); `task`: what the
    tasks run in place of `run_debate` (same signature; tests wrap it). `retries` lists each try that
    failed and was tried again: (run index, cause)."""

    def __init__(self, experiment_id: str, *, address: str | None = None, num_cpus: float = 1,
                 local_cpus: int | None = None, max_attempts: int = DEFAULT_ATTEMPTS,
                 setup: Callable[[], None] | None = None,
                 task: Callable[[DebateRequest], DebateResult] = run_debate, **options: Any):
        super().__init__(experiment_id, **options)
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        self.address, self.num_cpus, self.local_cpus = address, num_cpus, local_cpus
        self.max_attempts, self.setup, self.task = max_attempts, setup, task
        self.retries: list[tuple[int, str]] = []
        self._reporter: ThreadPoolExecutor | None = None

    def run(self) -> str:
        """Connect to Ray (RayUnavailable: nothing changed), run the experiment, let go of what was started."""
        connected = connect(self.address, num_cpus=self.local_cpus)
        try:
            return super().run()
        finally:
            if connected:
                disconnect()

    def _run_debates(self, todo: list[Run], rows: dict[int, dict[str, Any]], concurrency: int) -> None:
        """Half-done stored debates resume here (threads); every other run goes to the cluster."""
        store = self._store()
        here = {run.index for run in todo if rows[run.index].get("debate_id")
                and store.get_debate(rows[run.index]["debate_id"]) is not None}
        queue = collections.deque((run, 1) for run in todo if run.index not in here)
        self._reporter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="madlab-ray-reports")
        local = ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(here))), thread_name_prefix="madlab-exp")
        resumed = [local.submit(self._one, run, rows[run.index]) for run in todo if run.index in here]
        try:
            self._dispatch(queue, rows, concurrency)
        except BaseException:
            self.stop()  # the resumed debates end gracefully before the pool waits for them
            raise
        finally:
            wait(resumed)
            local.shutdown()
            self._reporter.shutdown()  # after the last report and progress line
            self._reporter = None

    def _dispatch(self, queue: collections.deque, rows: dict[int, dict[str, Any]], concurrency: int) -> None:
        """Keep `concurrency` tasks in flight until none is left (or stop()), beating the heartbeat."""
        ray = _ray()
        remote = ray.remote(num_cpus=self.num_cpus, max_retries=0)(self.task)  # the driver counts the tries
        flight: dict[Any, tuple[Run, int, float]] = {}  # task -> (run, try, when it was submitted)
        beaten = time.monotonic()
        try:
            while (queue or flight) and not self.stopping:
                while queue and len(flight) < concurrency and not self.stopping:
                    run, attempt = queue.popleft()
                    flight[self._submit(remote, run, rows[run.index], attempt)] = (run, attempt, time.time())
                ready, _ = ray.wait(list(flight), num_returns=1, timeout=WAIT_S)
                self._take(ready, flight, queue, rows)
                if time.monotonic() - beaten >= HEARTBEAT_EVERY_S:
                    storage.heartbeat(self._store(), self.experiment_id, self.owner)
                    beaten = time.monotonic()
            if flight:  # stopped: keep the debates that have come back already
                self._take(ray.wait(list(flight), num_returns=len(flight), timeout=0)[0], flight, queue, rows)
        finally:
            for ref in flight:  # their work is lost: nothing of it was written
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
            with contextlib.suppress(Exception):  # (an error of the database raised above stays the one raised)
                self._stopped([run for run, _ in queue] + [run for run, _, _ in flight.values()], rows)

    def _submit(self, remote: Any, run: Run, row: dict[str, Any], attempt: int) -> Any:
        """Mark the run running under its debate's id (chosen here, once) and hand it to the cluster."""
        row["debate_id"] = row.get("debate_id") or uuid.uuid4().hex
        row["attempts"] = (row.get("attempts") or 0) + 1
        row["status"] = "running"
        storage.update_run(self._store(), row["id"], status="running", debate_id=row["debate_id"],
                           attempts=row["attempts"], started_at=time.time(), error=None)
        return remote.remote(DebateRequest(run, row["debate_id"], attempt, self.stream, self.setup))

    def _take(self, ready: list[Any], flight: dict[Any, tuple[Run, int, float]], queue: collections.deque,
              rows: dict[int, dict[str, Any]]) -> None:
        """Collect the tasks that came back; a failed one with tries left goes first in the queue again."""
        for ref in ready:
            run, attempt, started = flight.pop(ref)
            if self._collect(ref, run, rows[run.index], attempt, started):
                queue.appendleft((run, attempt + 1))

    def _collect(self, ref: Any, run: Run, row: dict[str, Any], attempt: int, started: float) -> bool:
        """Write a returned debate, or judge a failed task: True when it is to be tried again."""
        ray = _ray()
        try:
            result = ray.get(ref)
        except ray.exceptions.RayError as exc:  # it raised, its worker died, its node or its result was lost
            cause = _cause(exc)
            if attempt < self.max_attempts:
                self.retries.append((run.index, cause))
                return True
            self._ended(run, row, status="failed", debate_id=None, wall_s=time.time() - started,
                        finished_at=time.time(), error=f"{cause} (try {attempt} of {self.max_attempts})")
            return False
        status = result.status if result.status in storage.DONE_RUN_STATUSES + ("stopped",) else "failed"
        values = dict(status=status, debate_id=result.debate_id, wall_s=result.wall_s, finished_at=time.time(),
                      error=None)
        store = self._store()
        try:
            with store.transaction():  # the debate whole and its run, or nothing
                _store_debate(store, result)
                storage.update_run(store, row["id"], **values)
        except Exception as exc:  # noqa: BLE001 - the database refused it: the run fails, naming why
            self._ended(run, row, **{**values, "status": "failed", "debate_id": None,
                                     "error": f"the debate could not be stored ({type(exc).__name__}: {exc})"})
            return False
        _import_cache(result)
        self._announce(run, row, values)
        return False

    def _ended(self, run: Run, row: dict[str, Any], **values: Any) -> None:
        storage.update_run(self._store(), row["id"], **values)
        self._announce(run, row, values)

    def _announce(self, run: Run, row: dict[str, Any], values: dict[str, Any]) -> None:
        """The run's new state in `rows`; its report and progress line follow in the reporting thread."""
        row.update(values)
        ended = {**row, "config_label": run.configuration.label}
        if self._reporter is not None:
            self._reporter.submit(self._report_and_progress, ended)

    def _report_and_progress(self, run: dict[str, Any]) -> None:
        try:
            if run["status"] in storage.DONE_RUN_STATUSES and run.get("debate_id"):
                self._report(self._store(), run["debate_id"])
            with self._lock:
                self._progress(run)
        except Exception:  # noqa: BLE001 - a progress callback's error must not lose the later lines
            pass

    def _stopped(self, runs: list[Run], rows: dict[int, dict[str, Any]]) -> None:
        """Runs this driver left 'running' without a task (stop, or an error here) become 'stopped'."""
        for run in runs:
            row = rows[run.index]
            if row.get("status") == "running":
                row["status"] = "stopped"
                storage.update_run(self._store(), row["id"], status="stopped")


def _store_debate(store: Store, result: DebateResult) -> None:
    """A returned debate's rows, written as the engine's recorder writes a debate's (inside the caller's
    transaction): the debate row, then every event through `Store.record`, then where it ran."""
    started = next((event for event in result.events if isinstance(event, DebateStarted)), None)
    if started is None:
        raise ValueError("the task returned no DebateStarted event")
    store.create_debate(result.debate_id, started.config, created_at=started.ts)
    for event in result.events:
        store.record(event, result.debate_id)
    store.update_debate(result.debate_id, pid=result.pid, host=result.host)


def _import_cache(result: DebateResult) -> None:
    """The response-cache entries a debate used on its machine, added to this home's cache as its own."""
    if not result.cache_entries:
        return
    from ..models.response_cache import ResponseCache

    cache = ResponseCache("readwrite")
    try:
        cache.import_entries(result.cache_entries)
        for entry in result.cache_entries:
            cache.record_use(entry["key"], result.debate_id)
    except Exception:  # noqa: BLE001 - a cache that cannot take them loses them; the debate stands
        pass
    finally:
        cache.close()
