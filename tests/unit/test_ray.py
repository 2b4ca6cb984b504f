"""`experiment --ray`: a sweep's debates run as Ray tasks; the driver alone writes (issue 21, item 7).

A real Ray cluster on this machine's loopback (`ray start --head --node-ip-address 127.0.0.1`, two CPUs,
no dashboard, no usage stats) runs small scripted sweeps. Its worker processes are other processes: they
get the scripted model from `register_models` (this module, importable there through PYTHONPATH) and a
guard that refuses any SQLite file under the test's folder (where the driver's database and home are),
so a task that opened the driver's database would fail the test. Checked: every run finished exactly
once, in debates equal to what the single-process runner stores for the same spec; the debates ran in
the workers and came back as events; the response-cache entries they used reach the driver's home; a
task that raises, or whose worker dies, is tried again and its run finishes; one that always raises
gives a failed run naming its cause; a driver stopped midway leaves a sweep a second driver finishes;
a debate left half done by the single-process runner is resumed by the driver from its turns; a driver
killed with SIGKILL leaves nothing half-written, and the single-process runner's resume finishes it
with no duplicate debate. Without an address the driver starts a Ray of this machine (on loopback) and
ends it with the sweep; an address where nothing answers is refused at once (Ray retries for minutes).
The first two tests run before the cluster's: this process is connected to the cluster from then on.

The cluster is stopped by the ids of its own processes (those with a token in their environment or a
file open in its temporary folder), not with `ray stop`, which ends every Ray process of the machine.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path

import pytest

from mad_core.experiments import ExperimentConfig, create_experiment, storage
from mad_core.experiments.ray_runner import DebateRequest, RayRunner, connect, disconnect, run_debate
from mad_core.experiments.runner import ExperimentRunner
from mad_core.store import Store
from test_workers import debates_by_run, every_run_once

# A Ray cluster's start and its workers' (each imports the project and litellm) take minutes when the suite
# runs pinned to one core beside a CPU hog (bench/pinned_suites.sh): the per-test bound is raised for this
# file, and every wait below polls for an event (a run's status, a file, processes gone) under a generous
# bound; none waits a fixed time.
pytestmark = [pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed"),
              pytest.mark.timeout(1200)]
HOLD_BOUND_S = 900  # a held task's own safety bound: the test releases it (removes the file) long before

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "ray-sweep"  # scripted/ray-sweep: its replies depend only on the request (any process, any order)


# ----- what the worker processes load ------------------------------------------------------------
def debater(messages, info) -> str:
    """The same request gets the same reply in every process: a digest of the messages and the seed."""
    meta = info["metadata"]
    digest = zlib.crc32(repr((messages, info["seed"])).encode())
    answer = "yes" if digest % 3 else "no"
    if meta["kind"] == "vote":
        return "1"
    if meta["kind"] == "extraction":
        return answer
    return f"{meta['agent']} weighed it ({digest:08x}).\nFinal answer: {answer}"


def register_models() -> None:
    from mad_core.models import ensure_registered
    from mad_core.models.scripted import Script, register_script

    ensure_registered()
    register_script(SCRIPT, Script(replies=debater))


_GUARDED: set[str] = set()


class Setup:
    """What every task calls first: the scripted model, and a guard that refuses to open any SQLite file
    under `guarded` (the test's folder). `before(request)` is the faulty task's hook (`faulty`)."""

    def __init__(self, guarded: Path, *, hold: Path | None = None, hold_from: int = 10**6,
                 raise_once=(), die_once=(), always_raise=()):
        self.guarded, self.hold, self.hold_from = os.path.realpath(guarded), hold, hold_from
        self.raise_once, self.die_once, self.always_raise = set(raise_once), set(die_once), set(always_raise)

    def __call__(self) -> None:
        register_models()
        if self.guarded in _GUARDED:
            return
        _GUARDED.add(self.guarded)
        import sqlite3

        opened, guarded = sqlite3.connect, self.guarded

        def connect_guarded(database, *args, **kwargs):
            if os.path.realpath(str(database)).startswith(guarded):
                raise PermissionError(f"a Ray worker opened {database}")
            return opened(database, *args, **kwargs)

        sqlite3.connect = connect_guarded

    def before(self, request: DebateRequest) -> None:
        index = request.run.index
        if index in self.always_raise:
            raise ValueError(f"item {request.run.item.id} is always broken")
        if index in self.raise_once and request.attempt == 1:
            raise RuntimeError("flaky once")
        if index in self.die_once and request.attempt == 1:
            os._exit(3)  # the worker process dies mid-task
        # Released by the test (it removes the file); the bound only keeps a forgotten hold from running on.
        # It was 60 s: on a starved core the runs that should come back first took longer than that, the held
        # ones came back by the clock, and the order the tests wait for was lost.
        deadline = time.monotonic() + HOLD_BOUND_S
        while index >= self.hold_from and self.hold is not None and self.hold.exists() and time.monotonic() < deadline:
            time.sleep(0.02)


def faulty(request: DebateRequest):
    """The task, with the faults and holds its Setup names."""
    request.setup.before(request)
    return run_debate(request)


def try_to_open(setup: Setup, path: str) -> str:
    """The guard's positive control, run in a worker: opening the driver's database is refused."""
    setup()
    try:
        Store(path)
    except PermissionError as exc:
        return f"refused: {exc}"
    return "opened"


def cheap_embed(texts):
    """A stand-in for SBERT (the driver computes each debate's report)."""
    return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]


def drive(db: str, experiment_id: str, address: str, guarded: str, hold: str) -> None:
    """A driver in a process of its own (the SIGKILL test): runs 0 and 1 come back, the rest are held."""
    register_models()
    RayRunner(experiment_id, address=address, db_path=db, embed=cheap_embed, concurrency=2, task=faulty,
              setup=Setup(Path(guarded), hold=Path(hold), hold_from=2)).run()


@pytest.fixture(autouse=True)
def forget_the_models():
    """This process's scripted models of these tests go with them (others list the registered ones)."""
    yield
    from mad_core.models.scripted import unregister_script

    for name in (SCRIPT, "ray-local"):
        unregister_script(name)


# ----- the cluster ---------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _processes_of(token: str, folder: str | Path) -> list[int]:
    """A Ray's processes: those whose environment carries `token` (`ray start`'s, and what it started) or
    that hold a file open in `folder` (its sessions: a Ray agent or worker rewrites its environment with
    its title, but keeps its logs open there). Not this process (a driver of it)."""
    found, folder = [], str(folder)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if token.encode() in (entry / "environ").read_bytes() or any(
                    os.readlink(fd).startswith(folder) for fd in (entry / "fd").iterdir()):
                found.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def _end_processes(token: str, folder: str | Path) -> None:
    for pid in _processes_of(token, folder):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def cluster():
    """A Ray head node on 127.0.0.1 with 2 CPUs; this process connected to it. Yields its address and the
    MAD Lab home of its workers."""
    folder = Path(tempfile.mkdtemp(prefix="madray-", dir="/tmp"))  # short: Ray's socket paths live in it
    token, port = f"MADLAB_RAY_TEST_{uuid.uuid4().hex}", _free_port()
    env = {key: value for key, value in os.environ.items() if key != "MADLAB_SCRIPTS"}
    env.update({"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", token: "1",
                "RAY_AUTH_MODE": "disabled",  # a throw-away cluster on loopback; its clients are told the same
                "MADLAB_HOME": str(folder / "worker-home"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "unit"), env.get("PYTHONPATH", "")])})
    ray_cli = Path(sys.executable).with_name("ray")
    started = subprocess.run([str(ray_cli), "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
                              "--num-cpus", "2", "--include-dashboard", "false", "--disable-usage-stats",
                              "--temp-dir", str(folder / "ray")], env=env, capture_output=True, text=True, timeout=600)
    patch = pytest.MonkeyPatch()
    patch.setenv("RAY_AUTH_MODE", "disabled")  # this process and the drivers it starts
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        address = f"127.0.0.1:{port}"
        assert connect(address)  # this process joins it (RayRunner(address=...) then finds it connected)
        yield address, folder / "worker-home"
    finally:
        disconnect()
        patch.undo()
        _end_processes(token, folder)
        shutil.rmtree(folder, ignore_errors=True)


# ----- helpers -------------------------------------------------------------------------------------
def sweep(items: int = 3, agents=(2, 3), cache: str = "off", concurrency: int = 2) -> ExperimentConfig:
    register_models()  # the driver checks the experiment's models too
    return ExperimentConfig.from_dict({
        "name": "ray", "task_set": "yes_no", "items": items, "seeds": [1], "concurrency": concurrency,
        "base": {"models": f"scripted/{SCRIPT}", "rounds": 1, "max_rounds": 2, "cache": cache},
        "grid": {"agents": list(agents)}})


def debates_by_plan(store: Store, experiment_id: str) -> dict[tuple, tuple]:
    """(configuration, item, seed) -> how its debate ended, every turn's text, its rounds' speaking orders, its
    agents and its decisions (ids and times left out)."""
    found = {}
    for run in storage.runs(store, experiment_id):
        debate = store.get_debate(run["debate_id"])
        turns = sorted((t.round, t.agent, t.kind, t.status, t.content) for t in store.turns(run["debate_id"]))
        found[(run["config_key"], run["item_id"], run["seed"])] = (
            debate["status"], debate["answer"], turns,
            [(r["round"], r["speakers"]) for r in store.rounds(run["debate_id"])],
            [(a["label"], a["model"], a["persona"]) for a in store.agents(run["debate_id"])],
            [(d["round"], d["reached"], d["answer"]) for d in store.decisions(run["debate_id"])])
    return found


# ----- the tests -----------------------------------------------------------------------------------
def test_an_address_where_nothing_answers_is_refused_at_once():
    """Ray would retry it for minutes; `connect` says so within seconds, and nothing is started."""
    import ray

    from mad_core.experiments.ray_runner import RayUnavailable

    if ray.is_initialized():
        pytest.skip("this process is connected to a Ray cluster already")
    started = time.monotonic()
    with pytest.raises(RayUnavailable, match="nothing answers at 127.0.0.1:"):
        connect(f"127.0.0.1:{_free_port()}")
    assert time.monotonic() - started < 10 and not ray.is_initialized()


def test_the_command_line_refuses_ray_with_workers_and_names_a_dead_address(tmp_path, madlab_home, capsys):
    # Before the tests that connect this process to a cluster: a connected process would not probe the address.
    import ray

    from mad_core import cli

    if ray.is_initialized():
        pytest.skip("this process is connected to a Ray cluster already")
    spec = tmp_path / "sweep.yaml"
    spec.write_text("name: r\ntask_set: yes_no\nitems: 1\nseeds: [1]\nbase: {models: scripted/echo, rounds: 1}\n")
    assert cli.main(["experiment", str(spec), "--ray", "auto", "--workers", "2"]) == 2
    assert "give --ray or --workers, not both" in capsys.readouterr().err
    assert not (madlab_home / "madlab.db").exists()  # must not: anything written before the refusal
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert cli.main(["experiment", str(spec), "--ray", f"127.0.0.1:{port}"]) == 2
    assert f"127.0.0.1:{port}" in capsys.readouterr().err


def test_without_an_address_a_ray_of_this_machine_runs_the_sweep_and_ends_with_it(tmp_path, monkeypatch):
    """`RayRunner(address=None)`: a Ray of this machine (loopback only), started for the sweep and shut
    down after it. First in the file: the other tests keep this process connected to their cluster."""
    import ray
    import yaml

    from mad_core.models import ensure_registered

    if ray.is_initialized():
        pytest.skip("this process is connected to a Ray cluster already")
    scripts = tmp_path / "scripts.yaml"  # the local Ray's workers are this process's children: they inherit it
    scripts.write_text(yaml.safe_dump({"ray-local": {"replies": ["I weighed it.\nFinal answer: yes"]}}))
    token = f"MADLAB_RAY_TEST_{uuid.uuid4().hex}"
    monkeypatch.setenv("MADLAB_SCRIPTS", str(scripts))
    monkeypatch.setenv(token, "1")  # every process the local Ray starts carries it
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # Ray keeps a local Ray's token in ~/.ray/auth_token
    monkeypatch.setenv("RAY_AUTH_MODE", "unset")  # ray.init sets it to "token" here: put back as it was after
    monkeypatch.delenv("RAY_AUTH_MODE")  # (unset: Ray's default, token authentication, for a local Ray)
    folder = tempfile.mkdtemp(prefix="madray-", dir="/tmp")  # Ray's sessions (short: its socket paths)
    monkeypatch.setenv("RAY_TMPDIR", folder)
    ensure_registered()
    store = Store(tmp_path / "local.db")
    experiment_id = create_experiment(store, ExperimentConfig.from_dict({
        "name": "local", "task_set": "yes_no", "items": 2, "seeds": [1],
        "base": {"models": "scripted/ray-local", "rounds": 1, "max_rounds": 1, "cache": "off"}}))
    addresses, running = [], []

    def seen(progress) -> None:  # while the local Ray runs: where it listens, and its processes
        addresses.append(ray.util.get_node_ip_address())
        running.append(len(_processes_of(token, folder)))

    runner = RayRunner(experiment_id, local_cpus=1, db_path=store.path, embed=cheap_embed, on_progress=seen)
    try:
        assert runner.run() == "finished", runner.error
        assert not ray.is_initialized()  # the Ray it started has ended
        assert set(addresses) == {"127.0.0.1"}
        assert (tmp_path / "home" / ".ray" / "auth_token").exists()
        assert every_run_once(store, experiment_id, 2)
        wait_until_gone = time.monotonic() + 300  # an event-wait: as long as a starved core needs
        while _processes_of(token, folder) and time.monotonic() < wait_until_gone:
            time.sleep(0.1)
        assert min(running) > 0 and _processes_of(token, folder) == []  # its processes found, then none left
    finally:
        _end_processes(token, folder)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_sweep_on_the_cluster_stores_what_one_process_stores(cluster, tmp_path, monkeypatch):
    import ray

    from mad_core.models.response_cache import ResponseCache

    address, worker_home = cluster
    db = tmp_path / "ray.db"
    store = Store(db)
    experiment_id = create_experiment(store, sweep(cache="readwrite"))
    progress = []
    runner = RayRunner(experiment_id, address=address, db_path=db, embed=cheap_embed, setup=Setup(tmp_path),
                       on_progress=progress.append)
    assert runner.run() == "finished", runner.error
    rows = every_run_once(store, experiment_id, 6)
    assert {r["attempts"] for r in rows} == {1} and runner.retries == []
    assert os.getpid() not in {r["pid"] for r in rows}  # the workers ran them; their events came back
    assert progress[0].run is None and sorted(p.run["run_index"] for p in progress[1:]) == list(range(6))
    assert (progress[-1].done, progress[-1].total, progress[-1].failed) == (6, 6, 0)
    assert store.query("SELECT COUNT(*) AS n FROM metric_reports")[0]["n"] == 6  # each debate's report, here
    assert storage.get_experiment(store, experiment_id)["status"] == "finished"
    # The guard was in force: a worker that tries to open the driver's database is refused.
    assert ray.get(ray.remote(try_to_open).remote(Setup(tmp_path), str(db))).startswith("refused")
    # The cache entries the debates used on the workers' home came back to this home's cache.
    ids = [r["debate_id"] for r in rows]
    mine, theirs = ResponseCache("read"), ResponseCache("read", worker_home / "cache.db")
    assert mine.entries_for(ids) and mine.entries_for(ids) == theirs.entries_for(ids)

    # The same spec in one process (its own home: no cached reply) stores the same debates.
    monkeypatch.setenv("MADLAB_HOME", str(tmp_path / "single-home"))
    single = Store(tmp_path / "single.db")
    single_id = create_experiment(single, sweep(cache="readwrite"))
    assert ExperimentRunner(single_id, db_path=single.path, embed=cheap_embed).run() == "finished"
    plan = debates_by_plan(store, experiment_id)
    assert plan == debates_by_plan(single, single_id)
    assert len({repr(debate[2]) for debate in plan.values()}) == 6  # six different debates, compared


def test_failed_tasks_are_tried_again_then_their_run_fails_naming_the_cause(cluster, tmp_path):
    address, _ = cluster
    db = tmp_path / "faults.db"
    store = Store(db)
    experiment_id = create_experiment(store, sweep(agents=(2,)))
    setup = Setup(tmp_path, raise_once={0}, die_once={1}, always_raise={2})
    runner = RayRunner(experiment_id, address=address, db_path=db, embed=cheap_embed, setup=setup, task=faulty,
                       max_attempts=2)
    assert runner.run() == "finished", runner.error  # a failed run is a result: the sweep is done
    rows = debates_by_run(store, experiment_id)
    assert [(r["status"], r["attempts"], r["debate"]) for r in rows] == [
        ("finished", 2, "finished"), ("finished", 2, "finished"), ("failed", 2, None)]
    error = storage.runs(store, experiment_id)[2]["error"]
    assert rows[2]["debate_id"] is None and "ValueError: item" in error and "always broken (try 2 of 2)" in error
    causes = dict((index, cause) for index, cause in runner.retries)
    assert causes[0] == "RuntimeError: flaky once" and causes[1].startswith("WorkerCrashedError")
    assert sorted(index for index, _ in runner.retries) == [0, 1, 2]
    assert store.query("SELECT COUNT(*) AS n FROM debates")[0]["n"] == 2


def test_a_driver_stopped_midway_leaves_the_rest_to_a_second_driver(cluster, tmp_path):
    address, _ = cluster
    db, hold = tmp_path / "stop.db", tmp_path / "hold"
    hold.touch()
    store = Store(db)
    experiment_id = create_experiment(store, sweep(items=2))
    first = RayRunner(experiment_id, address=address, db_path=db, embed=cheap_embed, task=faulty,
                      setup=Setup(tmp_path, hold=hold, hold_from=1),
                      on_progress=lambda progress: progress.run and first.stop())
    assert first.run() == "stopped"
    hold.unlink()
    rows = debates_by_run(store, experiment_id)
    assert [r["status"] for r in rows][0] == "finished" and "finished" not in [r["status"] for r in rows[1:]]
    assert {r["status"] for r in rows[1:]} <= {"pending", "stopped"}  # none left 'running'
    assert store.query("SELECT COUNT(*) AS n FROM debates")[0]["n"] == 1  # a cancelled task wrote nothing
    assert storage.get_experiment(store, experiment_id)["status"] == "stopped"

    second = RayRunner(experiment_id, address=address, db_path=db, embed=cheap_embed, setup=Setup(tmp_path))
    assert second.run() == "finished", second.error
    again = every_run_once(store, experiment_id, 4)
    assert (again[0]["debate_id"], again[0]["attempts"]) == (rows[0]["debate_id"], 1)  # not run again


def test_a_debate_left_half_done_by_the_single_process_runner_is_resumed_by_the_driver(cluster, tmp_path):
    """Only the driver reads the store, so a stored half-done debate is resumed there (from its turns);
    the runs never begun go to the cluster."""
    import threading

    from mad_core.models.scripted import Script, register_script

    address, _ = cluster
    store = Store(tmp_path / "half.db")
    experiment = sweep(agents=(3,), concurrency=1)
    experiment_id = create_experiment(store, experiment)
    reached, gate = threading.Event(), threading.Event()
    second = experiment.task_items[1].question

    def held(messages, info):  # the second debate's Agent 3 waits: its debate is stopped half done
        if info["metadata"]["agent"] == "Agent 3" and any(second in str(m.get("content")) for m in messages):
            reached.set()
            gate.wait(30)
        return debater(messages, info)

    register_script(SCRIPT, Script(replies=held))
    single = ExperimentRunner(experiment_id, db_path=store.path, embed=cheap_embed)
    thread = threading.Thread(target=single.run)
    thread.start()
    try:
        assert reached.wait(60)
        single.stop()
    finally:
        gate.set()
        thread.join(60)
    rows = debates_by_run(store, experiment_id)
    assert [(r["status"], r["debate"]) for r in rows] == [("finished", "finished"), ("stopped", "stopped"),
                                                          ("pending", None)]
    kept = {(t.id, t.finished_at) for t in store.turns(rows[1]["debate_id"]) if t.status == "ok"}
    assert kept

    register_models()  # the plain model again, for the debate resumed here
    runner = RayRunner(experiment_id, address=address, db_path=store.path, embed=cheap_embed, setup=Setup(tmp_path))
    assert runner.run() == "finished", runner.error
    again = every_run_once(store, experiment_id, 3)
    assert again[1]["debate_id"] == rows[1]["debate_id"] and again[1]["attempts"] == 2
    assert kept < {(t.id, t.finished_at) for t in store.turns(rows[1]["debate_id"]) if t.status == "ok"}
    assert again[1]["pid"] == os.getpid() and again[2]["pid"] != os.getpid()  # resumed here; the new one remote


def test_a_killed_driver_writes_nothing_half_and_the_single_process_resume_finishes(cluster, tmp_path):
    from test_concurrency import wait_for

    address, _ = cluster
    db, hold = tmp_path / "kill.db", tmp_path / "hold"
    hold.touch()
    store = Store(db)
    experiment_id = create_experiment(store, sweep(items=2))
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "unit")])}
    driver = subprocess.Popen([sys.executable, "-c", "import sys, test_ray; test_ray.drive(*sys.argv[1:])", str(db),
                               experiment_id, address, str(tmp_path), str(hold)], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: sum(r["status"] == "finished" for r in storage.runs(store, experiment_id)) == 2
                 and sum(r["status"] == "running" for r in storage.runs(store, experiment_id)) == 2,
                 "two debates back and two held", limit_s=600)
    finally:
        driver.kill()  # SIGKILL
        driver.wait()
    hold.unlink()
    rows = debates_by_run(store, experiment_id)
    assert [r["status"] for r in rows] == ["finished", "finished", "running", "running"]
    assert [r["debate"] for r in rows] == ["finished", "finished", None, None]  # nothing half-written
    assert store.query("SELECT COUNT(*) AS n FROM debates")[0]["n"] == 2

    assert ExperimentRunner(experiment_id, db_path=db, embed=cheap_embed).run() == "finished"
    again = every_run_once(store, experiment_id, 4)
    assert [r["debate_id"] for r in again] == [r["debate_id"] for r in rows]  # the planned ids: no duplicate
    assert [r["attempts"] for r in again] == [1, 1, 2, 2]

