"""A 10,000-debate sweep: calls per second, memory over the run, kill -9 and resume, the results page.

One experiment of ``--debates`` planned debates (``--items`` generated arithmetic items x seeds;
3 agents, one simultaneous round, the convergence protocol: 3 calls a debate, nothing else) runs
against a fast scripted model (``--latency-ms``, default 0) in a child process, as
``python -m mad_core experiment`` would run it (``--workers N``: N processes over the store).
The benchmark samples the child's resident memory as the sweep goes, kills it with SIGKILL when
``--kill-at`` of the debates are done, starts it again (it resumes: nothing finished runs again),
and checks afterwards that nothing was lost or duplicated:

  * every planned debate finished, each with its own debate, and no debate outside the plan;
  * every debate holds exactly its 3 turns, no (agent, round, kind) twice;
  * the results table counts every debate.

Then it times the results: `experiment_results` (what the page and the CLI compute) in a fresh
process, and the Experiments page itself (Streamlit's AppTest, the experiment opened): the time
the page spends drawing the experiment on its first run in a fresh process (the statistics
libraries are imported then) and again. Targets: memory flat (the first process's last sample at
most 1.25 x its sample at 10 % done), the results page's first view under 2 s.

    .venv/bin/python bench/large_sweep.py                       # 10,000 debates, kill -9 at 50 %
    .venv/bin/python bench/large_sweep.py --debates 500 --kill-at 0.3
    .venv/bin/python bench/large_sweep.py --workers 2
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, Result, Target, debater_reply, finish, parser, rss_mib  # noqa: E402

MODEL = "scripted/bench-large-sweep"
AGENTS = 3


def spec(debates: int, items: int, concurrency: int) -> dict:
    seeds = -(-debates // items)
    return {"name": "large sweep", "task_set": "rg:basic_arithmetic", "items": items,
            "seeds": list(range(1, seeds + 1)), "concurrency": concurrency,
            "base": {"agents": [{"label": f"Agent {i + 1}", "model": MODEL} for i in range(AGENTS)],
                     "paradigm": "simultaneous", "protocol": "convergence", "rounds": 1, "max_rounds": 1,
                     "max_concurrency": AGENTS, "cache": "off"}}


def register_model(latency: float = 0.0) -> None:
    """In the process that runs debates: the fast scripted model every configuration names."""
    from mad_core.models import ensure_registered
    from mad_core.models.scripted import Script, register_script

    def answer(messages: list[dict], info: dict) -> str:
        meta = info["metadata"]
        return debater_reply(str(meta.get("kind", "")), str(meta.get("agent", "")))

    ensure_registered()
    register_script(MODEL.split("/", 1)[1], Script(replies=answer, first_token_delay=latency,
                                                          keep_history=False))


def child(db: str, experiment_id: str, workers: int, latency: float) -> int:
    """Run (or resume) the experiment to its end in this process (and its workers)."""
    from mad_core.experiments.runner import ExperimentRunner
    from mad_core.experiments.workers import WorkersRunner

    register_model(latency)
    if workers > 1:
        setup = _Setup(latency)
        runner: ExperimentRunner = WorkersRunner(experiment_id, workers=workers, db_path=db, setup=setup)
    else:
        runner = ExperimentRunner(experiment_id, db_path=db)
    print(runner.run(), flush=True)
    return 0


class _Setup:
    """Picklable: registers the model in a worker process."""

    def __init__(self, latency: float) -> None:
        self.latency = latency

    def __call__(self) -> None:
        register_model(self.latency)


def family_rss(pid: int) -> float:
    """Resident MiB of a process and its children (the workers)."""
    total = rss_mib(pid) or 0.0
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return total + sum(rss_mib(int(c)) or 0.0 for c in children)


def run_child(db: Path, experiment_id: str, args, kill_at: int | None, samples: list[tuple[int, float]]) -> dict:
    """Start a child that runs the experiment; SIGKILL it once `kill_at` debates are done."""
    from mad_core.experiments.runner import progress_of
    from mad_core.store import Store

    command = [sys.executable, __file__, "--child", str(db), experiment_id, "--workers", str(args.workers),
               "--latency-ms", str(args.latency_ms)]
    env = {**os.environ, "MADLAB_HOME": str(db.parent)}
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    store = Store(db)
    peak, killed, next_sample = 0.0, False, 0
    step = max(1, args.debates // 20)
    while process.poll() is None:
        time.sleep(0.5)
        done = progress_of(store, experiment_id).done
        rss = family_rss(process.pid)
        peak = max(peak, rss)
        if done >= next_sample:
            samples.append((done, rss))
            next_sample = done + step
        if kill_at is not None and done >= kill_at:
            samples.append((done, rss))
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            killed = True
            break
    done = progress_of(store, experiment_id).done
    store.close()
    return {"wall": time.perf_counter() - started, "code": process.returncode, "killed": killed, "done": done,
            "peak": peak}


def growth(samples: list[tuple[int, float]], planned: int) -> float | None:
    """Resident memory at the last sample over that at 10 % of the debates done (the model and the
    embedder are loaded by then): 1.0 is flat."""
    tenth = next((rss for done, rss in samples if done >= planned // 10), None)
    return samples[-1][1] / tenth if tenth and samples and samples[-1][0] > planned // 10 else None


def check_nothing_lost(store, experiment_id: str, planned: int) -> list[str]:
    """What went wrong with the stored sweep ([] when nothing)."""
    problems = []
    runs = store.query("SELECT status, debate_id FROM experiment_runs WHERE experiment_id = ?", [experiment_id])
    statuses = {}
    for run in runs:
        statuses[run["status"]] = statuses.get(run["status"], 0) + 1
    if len(runs) != planned or statuses != {"finished": planned}:
        problems.append(f"runs: {len(runs)} planned, statuses {statuses}")
    linked = {run["debate_id"] for run in runs}
    if len(linked) != planned or None in linked:
        problems.append(f"{len(linked)} distinct debates linked to {planned} runs")
    debates = store.query("SELECT COUNT(*) AS n FROM debates")[0]["n"]
    if debates != planned:
        problems.append(f"{debates} debates stored for {planned} planned (a debate outside the plan?)")
    twice = store.query("SELECT debate_id, agent, round, kind, COUNT(*) AS n FROM turns "
                        "GROUP BY debate_id, agent, round, kind HAVING n > 1 LIMIT 5")
    if twice:
        problems.append(f"turns stored twice: {twice}")
    wrong = store.query("SELECT debate_id, COUNT(*) AS n FROM turns GROUP BY debate_id HAVING n != ? LIMIT 5",
                        [AGENTS])
    if wrong:
        problems.append(f"debates without exactly {AGENTS} turns: {wrong}")
    return problems


def time_results(db: Path, experiment_id: str) -> dict:
    """`experiment_results` in a fresh process, then the Experiments page by AppTest (twice)."""
    code = ("import json, sys, time\nfrom mad_core.store import Store\nfrom mad_core.experiments import results\n"
            "import mad_core.metrics.report\n"
            f"store = Store({str(db)!r})\nstarted = time.perf_counter()\n"
            f"found = results.experiment_results(store, {experiment_id!r})\n"
            "print(json.dumps({'seconds': time.perf_counter() - started, 'problems': len(found.problems), "
            "'counted': sum(r.finished for r in found.table)}))\n")
    env = {**os.environ, "MADLAB_HOME": str(db.parent)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    page = subprocess.run([sys.executable, __file__, "--page", str(db), experiment_id], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    measured.update(json.loads(page.stdout.strip().splitlines()[-1]))
    return measured


def page(db: str, experiment_id: str) -> int:
    """Open the experiment on the Experiments page twice; print the seconds of each script run: the
    page's own work (drawing the opened experiment: its results computed and drawn) and AppTest's
    whole run (which adds its own start-up, e.g. scanning installed packages for components)."""
    from streamlit.testing.v1 import AppTest

    from madlab_ui import experiments

    drawing: list[float] = []
    draw = experiments.render_experiment

    def timed(opened: str) -> None:
        started = time.perf_counter()
        try:
            draw(opened)
        finally:
            drawing.append(time.perf_counter() - started)

    experiments.render_experiment = timed
    seconds, tables = [], 0
    for _ in range(2):
        app = AppTest.from_file(str(ROOT / "pages" / "4_Experiments.py"), default_timeout=300)
        app.session_state[experiments.EXP_OPEN] = experiment_id
        started = time.perf_counter()
        app.run()
        seconds.append(time.perf_counter() - started)
        if app.exception:
            raise RuntimeError(app.exception[0].message)
        tables = len(app.table)
    print(json.dumps({"page_first": drawing[0], "page_again": drawing[1], "apptest_first": seconds[0],
                      "apptest_again": seconds[1], "page_tables": tables}))
    return 0


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("--debates", type=int, default=10_000)
    cli.add_argument("--items", type=int, default=100, help="generated items (the rest are seeds)")
    cli.add_argument("--concurrency", type=int, default=32)
    cli.add_argument("--workers", type=int, default=1)
    cli.add_argument("--latency-ms", type=float, default=0.0)
    cli.add_argument("--kill-at", type=float, default=0.5, help="fraction done when the child is killed (0: never)")
    cli.add_argument("--child", nargs=2, metavar=("DB", "EXPERIMENT"), help=argparse.SUPPRESS)
    cli.add_argument("--page", nargs=2, metavar=("DB", "EXPERIMENT"), help=argparse.SUPPRESS)
    args = cli.parse_args(argv)
    if args.child:
        return child(args.child[0], args.child[1], args.workers, args.latency_ms / 1000)
    if args.page:
        return page(*args.page)

    from mad_core.experiments import ExperimentConfig, create_experiment
    from mad_core.store import Store

    result = Result("large_sweep", f"{args.debates} debates x {AGENTS} calls, {args.concurrency} at a time, "
                                   f"{args.workers} process(es), model {args.latency_ms:g} ms, kill -9 at "
                                   f"{args.kill_at:.0%} then resume",
                    ["part", "debates done", "wall s", "calls / s", "peak RSS MiB"])
    samples: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "madlab.db"
        os.environ["MADLAB_HOME"] = tmp
        register_model()
        store = Store(db)
        experiment = ExperimentConfig.from_dict(spec(args.debates, args.items, args.concurrency))
        experiment_id = create_experiment(store, experiment)
        planned = experiment.total
        store.close()
        parts = []
        kill_at = int(planned * args.kill_at) if 0 < args.kill_at < 1 else None
        first = run_child(db, experiment_id, args, kill_at, samples)
        samples_first = list(samples)
        parts.append(("until kill -9" if first["killed"] else "whole sweep", first))
        if first["killed"]:
            parts.append(("resumed", run_child(db, experiment_id, args, None, samples)))
        before = 0
        for name, part in parts:
            calls = (part["done"] - before) * AGENTS
            result.rows.append([name, part["done"], round(part["wall"], 1), round(calls / part["wall"], 1),
                                round(part["peak"], 1)])
            before = part["done"]
        store = Store(db)
        problems = check_nothing_lost(store, experiment_id, planned)
        store.close()
        timing = time_results(db, experiment_id)
    result.notes.append("resident memory (MiB, child and its workers) by debates done: "
                        + ", ".join(f"{done}: {rss:.0f}" for done, rss in samples))
    result.notes.append(f"nothing lost or duplicated: {'yes' if not problems else 'NO: ' + '; '.join(problems)}")
    result.notes.append(f"results: experiment_results {timing['seconds']:.2f} s in a fresh process, counting "
                        f"{timing['counted']} finished debates ({timing['problems']} problems); the Experiments "
                        f"page drawing the experiment {timing['page_first']:.2f} s on its first run in a fresh "
                        f"process (the statistics libraries imported), {timing['page_again']:.2f} s again; AppTest's "
                        f"whole script run {timing['apptest_first']:.2f} s / {timing['apptest_again']:.2f} s "
                        f"({timing['page_tables']} tables drawn)")
    result.targets.append(Target("memory: growth of the first process from 10 % done to its last sample",
                                 growth(samples_first, planned), 1.25, "x"))
    result.targets.append(Target("results page, first view in a fresh process", timing["page_first"], 2.0, "s"))
    result.targets.append(Target("debates lost or duplicated", float(len(problems)), 0.0))
    return finish(result, args)


if __name__ == "__main__":
    sys.exit(main())
