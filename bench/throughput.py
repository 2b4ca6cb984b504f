"""Throughput: 100 debates of 9 calls each, 32 at a time, one shared SQLite store (as in the app).

Each debate is 3 agents x 3 simultaneous rounds (convergence: no other calls) on a model
that takes L = 100 ms per call, all writing to one database file (every turn is written as it
finishes, as the app does). A perfect engine needs 3 waves x L per debate, and ``--concurrency``
debates run at once, so ``ceil(debates / concurrency)`` batches run one after another:

    ideal = ceil(debates / concurrency) x 3 x L

Three rows (``--rows``, default all three):
  streamed     each debate by its own DebateEngine in a thread of a pool of ``--concurrency``
               threads, its replies streamed piece by piece (a debate the app shows)   target <= 1.3
  unstreamed   the same, each reply asked for whole (``DebateEngine(stream=False)``: a sweep,
               ``run --no-stream``)                                                     target <= 2.0
  workers      the same debates as one experiment run by ``--workers N`` processes over one store
               (``experiment --workers N``: unstreamed, the concurrency shared)         target <= 1.5
               wall: from the first debate's start to the last one's end (the workers' start-up,
               spawning and importing, is a fixed cost per sweep, given in a note); CPU: the
               workers' own from their start signal to their end (the parent's in a note).

    .venv/bin/python bench/throughput.py
    .venv/bin/python bench/throughput.py --unstreamed            # the unstreamed row only
    .venv/bin/python bench/throughput.py --rows workers --workers 2
    .venv/bin/python bench/throughput.py --debates 32 --concurrency 8 --latency-ms 500
"""
from __future__ import annotations

import functools
import math
import resource
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (PACINGS, Result, Target, ThreadProfiler, debater_reply, finish,  # noqa: E402
                          fixed_latency_model, parser, warm_up)

TARGETS = {"streamed": 1.3, "unstreamed": 2.0, "workers": 1.5}
ROWS = tuple(TARGETS)
AGENTS, ROUNDS = 3, 3
QUESTION_SET = "ciar"  # number answers: the debaters' "Final answer: 4" reads as one


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("--debates", type=int, default=100)
    cli.add_argument("--concurrency", type=int, default=32, help="debates running at once")
    cli.add_argument("--latency-ms", type=float, default=100.0)
    cli.add_argument("--pacing", choices=PACINGS, default="paced")
    cli.add_argument("--rows", default=",".join(ROWS), help=f"which rows, comma-separated ({', '.join(ROWS)})")
    cli.add_argument("--unstreamed", action="store_true", help="only the unstreamed one-process row")
    cli.add_argument("--workers", type=int, default=2, help="processes of the workers row")
    args = cli.parse_args(argv)
    rows = ["unstreamed"] if args.unstreamed else [row.strip() for row in args.rows.split(",") if row.strip()]
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        cli.error(f"unknown rows {unknown}; rows are {', '.join(ROWS)}")

    from mad_core.models import call_model

    latency = args.latency_ms / 1000
    model, log = fixed_latency_model(latency, args.pacing)
    warm_up(model)
    call_model(model, [{"role": "user", "content": "warm up"}], stream=False)  # litellm's unstreamed path too
    ideal = math.ceil(args.debates / args.concurrency) * ROUNDS * latency
    result = Result("throughput", f"{args.debates} debates x {AGENTS * ROUNDS} calls, {args.concurrency} at a time, "
                                  f"model {args.latency_ms:g} ms per call ({args.pacing}), one SQLite store",
                    ["calls", "processes", "debates", "finished", "calls made", "turns stored", "wall s", "ideal s",
                     "wall / ideal", "calls / s", "CPU s", "CPU ms / call"])
    profiler = ThreadProfiler(enabled=args.profile)
    for row in rows:
        if row == "workers":
            measured = in_workers(args, model, latency)
        else:
            log.clear()
            measured = in_one_process(args, model, stream=row == "streamed", profiler=profiler)
            measured["calls"] = log.calls
        wall, cpu, calls = measured["wall"], measured["cpu"], max(measured["calls"], 1)
        result.rows.append([row, measured["processes"], args.debates, measured["finished"], measured["calls"],
                            measured["stored"], wall, ideal, wall / ideal, measured["calls"] / wall, cpu,
                            1000 * cpu / calls])
        result.targets.append(Target(f"wall / ideal, {row}", wall / ideal, TARGETS[row], "x"))
        result.notes += measured.get("notes", [])
        if measured["finished"] != args.debates:
            result.notes.append(f"{row}: {args.debates - measured['finished']} debates did not finish")
    # What stands in the way, measured: Python runs one thread at a time per process (the GIL), so a
    # process's CPU time per call bounds the wall time from below whatever the concurrency.
    floor = litellm_floor_ms()
    budget = 1000 * ideal * TARGETS["unstreamed"] / max(AGENTS * ROUNDS * args.debates, 1)
    result.notes.append(f"litellm's own floor: litellm.completion(stream=False) alone, one call after another on this "
                        f"in-process model with its latency off, takes {floor:.2f} ms of CPU a call; the unstreamed "
                        f"target (wall <= {TARGETS['unstreamed']:g} x ideal) leaves {budget:.2f} ms of CPU a call in "
                        f"one process, {2 * budget * TARGETS['workers'] / TARGETS['unstreamed']:.2f} ms in two "
                        f"(workers target): litellm alone is {floor / budget:.1f} x the one-process budget")
    result.notes.append(f"CPU-bound: a process runs one thread of Python at a time, so CPU s / processes is a floor "
                        f"under the wall time; the ideal ({ideal:.2f} s) leaves "
                        f"{1000 * ideal / max(AGENTS * ROUNDS * args.debates, 1):.2f} ms of CPU a call per process. "
                        f"streamed: litellm's chunk object per piece; unstreamed: one response a call "
                        f"(mad_core.models.complete); bench/engine_overhead.py's 'call_model alone' row shows litellm's share")
    return finish(result, args, profiler)


def litellm_floor_ms(calls: int = 300) -> float:
    """CPU ms per call of ``litellm.completion(stream=False)`` alone (no engine, no store, no retries,
    no helper thread) on the same kind of scripted model with no latency: what any engine built on
    litellm pays per call."""
    from mad_core.models.loader import load_litellm

    model, _ = fixed_latency_model(0.0, "burst")
    completion = load_litellm().completion
    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    metadata = {"kind": "discussion", "agent": "Agent 1"}
    for _ in range(20):
        completion(model=model, messages=messages, stream=False, metadata=metadata)
    started = time.process_time()
    for _ in range(calls):
        completion(model=model, messages=messages, stream=False, metadata=metadata)
    return 1000 * (time.process_time() - started) / calls


def config_dict(model: str) -> dict:
    return {"agents": [{"label": f"Agent {i + 1}", "model": model} for i in range(AGENTS)], "paradigm": "simultaneous",
            "protocol": "convergence", "rounds": ROUNDS, "max_rounds": ROUNDS, "max_concurrency": AGENTS}


def in_one_process(args, model: str, *, stream: bool, profiler: ThreadProfiler) -> dict:
    """The debates by DebateEngines in a pool of threads of this process (streamed or not)."""
    from mad_core import DebateConfig, DebateEngine
    from mad_core.store import Store

    config = DebateConfig.from_dict({"question": "What is 2 + 2?", **config_dict(model)})
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "madlab.db")

        def one_debate(_: int) -> str:
            events = list(DebateEngine(config, store=store, stream=stream).run())
            return events[-1].status

        cpu_started, started = time.process_time(), time.perf_counter()
        with profiler, ThreadPoolExecutor(max_workers=args.concurrency, thread_name_prefix="bench-debate") as pool:
            statuses = list(pool.map(one_debate, range(args.debates)))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        stored = store.query("SELECT COUNT(*) AS n FROM turns")[0]["n"]
        store.close()
    return {"processes": 1, "finished": statuses.count("finished"), "stored": stored, "wall": wall, "cpu": cpu}


def in_workers(args, model: str, latency: float) -> dict:
    """The debates as one experiment run by ``args.workers`` processes over one store (unstreamed)."""
    from mad_core.experiments import ExperimentConfig, create_experiment, storage
    from mad_core.experiments.workers import WorkersRunner
    from mad_core.store import Store

    class Runner(WorkersRunner):
        def _report(self, store, debate_id) -> None:
            """Left out: the one-process rows compute no metric report either."""

    seeds = min(args.debates, 100)
    spec = {"name": "throughput", "task_set": QUESTION_SET, "items": math.ceil(args.debates / seeds),
            "seeds": list(range(1, seeds + 1)), "concurrency": args.concurrency,
            "base": {**config_dict(model), "agents": AGENTS, "models": model, "cache": "off"}}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "madlab.db")
        experiment = ExperimentConfig.from_dict(spec)
        experiment_id = create_experiment(store, experiment)
        setup = functools.partial(worker_model, model.split("/", 1)[1], latency, args.pacing)
        runner = Runner(experiment_id, workers=args.workers, db_path=store.path, setup=setup)
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_started, started = time.process_time(), time.perf_counter()
        runner.run()
        total_wall, parent_cpu = time.perf_counter() - started, time.process_time() - cpu_started
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = storage.runs(store, experiment_id)
        stored = store.query("SELECT COUNT(*) AS n FROM turns")[0]["n"]
        store.close()
    span = max(r["finished_at"] for r in rows) - min(r["started_at"] for r in rows)
    cpu = sum(s["cpu_s"] for s in runner.worker_stats)
    shares = ", ".join("{:.2f} s / {} debates, busy {:.0%} of its time".format(s["cpu_s"], s["debates"],
                                                                            s["cpu_s"] / max(s["wall_s"], 1e-9))
                       for s in runner.worker_stats)
    children_cpu = (children.ru_utime + children.ru_stime) - (children_before.ru_utime + children_before.ru_stime)
    notes = [f"workers: {experiment.total} debates planned, {args.workers} processes of "
             f"{math.ceil(args.concurrency / args.workers)} debates at once; wall {span:.2f} s from the first "
             f"debate's start to the last one's end, {total_wall:.2f} s with the workers' start-up (spawn, imports, "
             f"one warm-up call each); CPU {cpu:.2f} s in the workers during the sweep "
             f"({shares}), "
             f"{children_cpu:.2f} s with their start-up, {parent_cpu:.2f} s in the parent"]
    if runner.error:
        notes.append(f"workers: {runner.error}")
    return {"processes": args.workers, "finished": sum(r["status"] == "finished" for r in rows), "stored": stored,
            "calls": stored, "wall": span, "cpu": cpu, "notes": notes}


def _debater(messages: list[dict], info: dict) -> str:
    meta = info["metadata"]
    return debater_reply(str(meta.get("kind", "")), str(meta.get("agent", "")))


def worker_model(name: str, latency: float, pacing: str) -> None:
    """In a worker process: register ``scripted/<name>`` as ``fixed_latency_model`` does in this one
    (the same waits before and between pieces), and make one call each way (litellm's first call in a
    process imports more of it: not what the sweep measures)."""
    from mad_core.models import call_model, ensure_registered, split_pieces
    from mad_core.models.scripted import Script, register_script

    ensure_registered()
    pieces = len(split_pieces(debater_reply("discussion", "Agent 1")))
    first, gap = (latency, 0.0) if pacing == "burst" else (latency / 2, latency / 2 / max(pieces - 1, 1))
    register_script(name, Script(replies=_debater, first_token_delay=first, token_delay=gap, steady=True,
                                 keep_history=False))
    for stream in (True, False):
        call_model(f"scripted/{name}", [{"role": "user", "content": "warm up"}], stream=stream)


if __name__ == "__main__":
    sys.exit(main())
