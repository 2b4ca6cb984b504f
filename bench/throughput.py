"""Throughput: 100 debates of 9 calls each, 32 at a time, one shared SQLite store (as in the app).

Each debate is 3 agents x 3 simultaneous rounds (convergence: no other calls) on a model
that takes L = 100 ms per call, run by its own DebateEngine in a thread of a pool of
``--concurrency`` threads, all writing to one database file (every turn is written as it
finishes, as the app does). A perfect engine needs 3 waves x L per debate, and the pool runs
``ceil(debates / concurrency)`` batches of debates one after another:

    ideal = ceil(debates / concurrency) x 3 x L          target: wall / ideal <= 1.3

    .venv/bin/python bench/throughput.py
    .venv/bin/python bench/throughput.py --debates 32 --concurrency 8 --latency-ms 500
"""
from __future__ import annotations

import math
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (PACINGS, Result, Target, ThreadProfiler, finish, fixed_latency_model, parser,  # noqa: E402
                          warm_up)

TARGET = 1.3
AGENTS, ROUNDS = 3, 3


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("--debates", type=int, default=100)
    cli.add_argument("--concurrency", type=int, default=32, help="debates running at once")
    cli.add_argument("--latency-ms", type=float, default=100.0)
    cli.add_argument("--pacing", choices=PACINGS, default="paced")
    args = cli.parse_args(argv)

    from mad_core import DebateConfig, DebateEngine
    from mad_core.store import Store

    latency = args.latency_ms / 1000
    model, log = fixed_latency_model(latency, args.pacing)
    warm_up(model)
    log.clear()
    config = DebateConfig.from_dict({
        "question": "What is 2 + 2?", "agents": [{"label": f"Agent {i + 1}", "model": model} for i in range(AGENTS)],
        "paradigm": "simultaneous", "protocol": "convergence", "rounds": ROUNDS, "max_rounds": ROUNDS,
        "max_concurrency": AGENTS})

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "madlab.db")

        def one_debate(_: int) -> str:
            events = list(DebateEngine(config, store=store).run())
            return events[-1].status

        profiler = ThreadProfiler(enabled=args.profile)
        cpu_started, started = time.process_time(), time.perf_counter()
        with profiler, ThreadPoolExecutor(max_workers=args.concurrency, thread_name_prefix="bench-debate") as pool:
            statuses = list(pool.map(one_debate, range(args.debates)))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        stored = store.query("SELECT COUNT(*) AS n FROM turns")[0]["n"]
        store.close()

    ideal = math.ceil(args.debates / args.concurrency) * ROUNDS * latency
    finished = statuses.count("finished")
    result = Result("throughput", f"{args.debates} debates x {AGENTS * ROUNDS} calls, {args.concurrency} at a time, "
                                  f"model {args.latency_ms:g} ms per call ({args.pacing}), one SQLite store",
                    ["debates", "finished", "calls", "turns stored", "wall s", "ideal s", "wall / ideal",
                     "calls / s", "CPU s", "CPU ms / call"])
    per_call = cpu / max(log.calls, 1)
    result.rows.append([args.debates, finished, log.calls, stored, wall, ideal, wall / ideal, log.calls / wall,
                        cpu, 1000 * per_call])
    result.targets.append(Target("wall / ideal", wall / ideal, TARGET, "x"))
    # What stands in the way, measured: Python runs one thread at a time (the GIL), so the
    # process's CPU time per call bounds the wall time from below whatever the concurrency.
    result.notes.append(f"CPU-bound: the process used {cpu:.1f} s of CPU for {log.calls} calls ({1000 * per_call:.1f} ms "
                        f"a call: litellm's streaming path, the engine's events and threads, the store); with one "
                        f"thread of Python running at a time that alone needs >= {cpu / ideal:.1f} x ideal. "
                        f"The target needs <= {1000 * TARGET * ideal / max(log.calls, 1):.1f} ms of CPU a call; "
                        f"bench/engine_overhead.py's 'call_model alone' row shows litellm's share")
    if finished != args.debates:
        result.notes.append(f"{args.debates - finished} debates did not finish: {sorted(set(statuses))}")
    return finish(result, args, profiler)


if __name__ == "__main__":
    sys.exit(main())
