"""A sweep rerun from the response cache: model calls, wall time, whether the tables are the same.

One experiment (``--debates`` debates: generated arithmetic items x seeds, a grid of two protocols
and the ``single`` baseline; 3 agents, 2 simultaneous rounds) runs against a scripted model that
takes ``--latency-ms`` a call, with the sweep's default cache (read-write). Then the same spec
is run again as a new experiment: every call should be answered by the cache (0 model calls),
and its results table and comparisons should be the first run's, byte for byte (the CSVs a
reproduction compares, `experiments.bundle`).

    .venv/bin/python bench/cache_rerun.py
    .venv/bin/python bench/cache_rerun.py --debates 400 --latency-ms 50
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Result, Target, finish, parser  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("--debates", type=int, default=200, help="debates per configuration (items x seeds)")
    cli.add_argument("--items", type=int, default=50)
    cli.add_argument("--latency-ms", type=float, default=100.0)
    cli.add_argument("--concurrency", type=int, default=16)
    args = cli.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MADLAB_HOME"] = tmp
        return measure(args, Path(tmp))


def measure(args, home: Path) -> int:
    from mad_core.experiments import ExperimentConfig, create_experiment, results, uncertainty
    from mad_core.experiments.runner import ExperimentRunner
    from mad_core.models import ensure_registered
    from mad_core.models.response_cache import ResponseCache
    from mad_core.models.scripted import Script, register_script
    from mad_core.store import Store

    ensure_registered()

    def answer(messages: list[dict], info: dict) -> str:
        kind = str(info["metadata"].get("kind", ""))
        if kind == "vote":
            return "1"
        seed = info.get("seed") or 0
        return f"Adding it up carefully.\nFinal answer: {seed % 3}"  # answers differ by call, so do the tables

    script = Script(replies=answer, first_token_delay=args.latency_ms / 1000)
    register_script("bench-cache-rerun", script)
    model = "scripted/bench-cache-rerun"
    seeds = -(-args.debates // args.items)
    spec = {"name": "cache rerun", "task_set": "rg:basic_arithmetic", "items": args.items,
            "seeds": list(range(1, seeds + 1)), "concurrency": args.concurrency, "baselines": ["single"],
            "grid": {"protocol": ["simple_voting", "solution_counting"]},
            "base": {"agents": 3, "models": model, "paradigm": "simultaneous", "rounds": 2, "max_rounds": 2}}
    result = Result("cache_rerun", f"a sweep of {args.debates} items x 3 configurations, then the same spec again "
                                   f"from the response cache (model {args.latency_ms:g} ms a call)",
                    ["run", "debates", "model calls", "cache entries", "wall s"])
    store = Store(home / "madlab.db")
    tables = []
    for name in ("first", "rerun"):
        experiment = ExperimentConfig.from_dict(spec)
        experiment_id = create_experiment(store, experiment)
        before = len(script.history)
        started = time.perf_counter()
        status = ExperimentRunner(experiment_id, db_path=store.path, embed=_cheap).run()
        wall = time.perf_counter() - started
        found = results.experiment_results(store, experiment_id, embed=_cheap)
        tables.append((results.to_csv(results.table_records(found.table, found.statistics)),
                       results.to_csv(uncertainty.comparison_records(found.statistics, found.labels))))
        result.rows.append([f"{name} ({status})", experiment.total, len(script.history) - before,
                            ResponseCache("read").stats()["entries"], round(wall, 2)])
    same = tables[0] == tables[1]
    result.notes.append(f"results table and comparisons identical: {'yes' if same else 'NO'}")
    result.targets.append(Target("model calls of the rerun", float(result.rows[1][2]), 0.0))
    result.targets.append(Target("tables that differ", float(not same), 0.0))
    store.close()
    return finish(result, args)


class _Cheap:
    """A stand-in embedder (the report's similarity is not what this measures)."""

    model_name = "bench-cheap"

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(t) % 7)] for t in texts]


_cheap = _Cheap()

if __name__ == "__main__":
    sys.exit(main())
