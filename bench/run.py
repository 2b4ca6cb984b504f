"""Run MAD Lab's benchmarks (all, or some by name) and write their results to BENCHMARKS.md.

Each benchmark runs in a process of its own (cold starts stay cold, memory stays its own),
prints its table as it finishes, and gets a section in BENCHMARKS.md: the machine, the
command, the date, its table and, for each target, whether it is met. Running only some
benchmarks replaces only their sections; the others are kept as they were.

    .venv/bin/python bench/run.py                        # every benchmark (the local_* ones are slow)
    .venv/bin/python bench/run.py engine_overhead search # a selection
    .venv/bin/python -m bench --list                     # the names
    .venv/bin/python bench/run.py --fast                 # all but the local-model ones

Timings depend on the machine and its load: take the figures that count on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, Result, Target, machine, machine_line, render_markdown  # noqa: E402

# name -> (script, its arguments, one line on what it measures)
BENCHMARKS: dict[str, tuple[str, list[str], str]] = {
    "engine_overhead": ("engine_overhead.py", [], "engine overhead against a fixed-latency model (target <= 2 %)"),
    "simultaneous_round": ("simultaneous_round.py", [], "N agents speaking at once vs one call (<= 1.15 at N = 5)"),
    "throughput": ("throughput.py", [], "100 debates x 9 calls, 32 at a time, one store (wall / ideal <= 1.3)"),
    "large_sweep": ("large_sweep.py", [], "10,000-debate sweep: calls/s, flat memory, kill -9 and resume, results page (< 2 s)"),
    "cache_rerun": ("cache_rerun.py", [], "a sweep rerun from the response cache: 0 model calls, identical tables"),
    "search": ("search.py", [], "full-text search over 10,000 turns (<= 50 ms a query)"),
    "sbert": ("sbert.py", [], "SBERT diversity of 50 messages, cold and warm"),
    "parsers": ("parsers.py", [], "every reader of model text on hostile 100,000-character replies (< 50 ms)"),
    "live_refresh": ("live_refresh.py", [], "server time of one live-page refresh, 200-turn debate (<= 50 ms)"),
    "browser": ("browser.py", [], "token-to-Chromium latency (median <= 300 ms); watched / unwatched (<= 1.1)"),
    "steering": ("steering.py", [], "steering controls, click to visible change in Chromium (<= 0.5 s each)"),
    "class_phones": ("class_phones.py", [], "30 phones join, predict, reload while the teacher steers (clicks <= 0.5 s, "
                     "0 predictions lost, tick cost with / without <= 1.1)"),
    "memory": ("memory.py", [], "peak RSS of the default offline debate (process and model server)"),
    "memory_day": ("memory_day.py", [], "a compressed class day in Chromium: app and model-server RSS stay flat"),
    "memory_prompt_cache": ("memory_prompt_cache.py", [], "llama-server RSS as slots change hands, --cache-ram bounded"),
    "local_debate": ("local_model.py", ["debate"], "default debate on the local server: prefill / decode share"),
    "local_prompt_cache": ("local_model.py", ["prompt_cache"], "prefill of a second turn with the prompt cache"),
    "local_parallel": ("local_model.py", ["parallel"], "3-agent round on the local server: parallel vs serial"),
    "local_ballots": ("local_model.py", ["ballots"], "invalid-ballot rate over 20 default debates"),
    "hf_speed": ("hf_speed.py", [], "the same debate through llama.cpp and through the in-process hf provider"),
}
SLOW = {"large_sweep", "browser", "steering", "class_phones", "hf_speed", "memory", "memory_day", "memory_prompt_cache", "local_debate", "local_prompt_cache", "local_parallel", "local_ballots"}
HEADER = """# Benchmarks

Written by `bench/run.py` (see `bench/`); each section says the machine, the command and the
date it was measured. Timings depend on the machine and its load: compare figures taken on the
same machine, and take the ones that count on a quiet one.
"""
MIN_TIMEOUT_S = {"memory_day": 3 * 3600.0}  # a whole class day, compressed, on a 2-core machine
PARSER_LINE = re.compile(r"^(\S.*?)\s+(\d+\.\d+)  (.*)$")


def parsers_result(output: str, command: str, code: int) -> Result:
    """bench/parsers.py prints its own table: read it back into a Result."""
    result = Result("parsers", "Parsers on hostile 100,000-character replies",
                    ["reader", "slowest ms", "slowest case"], command=command)
    for line in output.splitlines():
        match = PARSER_LINE.match(line)
        if match and not line.startswith(("FAIL", "reader")):
            result.rows.append([match.group(1), float(match.group(2)), match.group(3)])
    slowest = max((row[1] for row in result.rows), default=None)
    result.targets.append(Target("slowest call", slowest, 50.0, "ms"))
    result.notes += [line for line in output.splitlines() if line.startswith("FAIL")]
    if code not in (0, 1) or not result.rows:
        result.skipped = f"bench/parsers.py exited with {code}: {output.strip().splitlines()[-1:]}"
    return result


def run_one(name: str, timeout: float) -> Result:
    script, extra, _ = BENCHMARKS[name]
    path = Path(__file__).with_name(script)
    command = " ".join([".venv/bin/python", f"bench/{script}", *extra])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        args = [sys.executable, str(path), *extra] + ([] if name == "parsers" else ["--json", str(out)])
        try:
            timeout = max(timeout, MIN_TIMEOUT_S.get(name, 0.0))
            done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Result(name, BENCHMARKS[name][2], command=command, skipped=f"did not finish within {timeout:g} s")
        print(done.stdout, end="", flush=True)
        if name == "parsers":
            return parsers_result(done.stdout, command, done.returncode)
        if done.returncode != 0 or not out.exists():
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            return Result(name, BENCHMARKS[name][2], command=command,
                          skipped=f"failed (exit {done.returncode}): {tail}")
        result = Result.from_json(json.loads(out.read_text()))
        result.command = command
        return result


def update_markdown(path: Path, results: list[Result]) -> None:
    """Replace (or add) each result's section in ``path``, keeping the others."""
    text = path.read_text() if path.exists() else HEADER
    for result in results:
        begin, end = f"<!-- bench:{result.name} -->", f"<!-- /bench:{result.name} -->"
        section = f"{begin}\n{render_markdown(result)}{end}\n"
        pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", re.DOTALL)
        text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("names", nargs="*", help=f"benchmarks to run (default: all): {', '.join(BENCHMARKS)}")
    cli.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    cli.add_argument("--fast", action="store_true", help="leave out the local-model ones: " + ", ".join(sorted(SLOW)))
    cli.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"), help="the Markdown file to update")
    cli.add_argument("--timeout", type=float, default=3600.0, help="seconds one benchmark may take")
    args = cli.parse_args(argv)

    if args.list:
        for name, (_, _, what) in BENCHMARKS.items():
            print(f"{name:<20} {what}")
        return 0
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        cli.error(f"unknown benchmark(s) {unknown}; known: {', '.join(BENCHMARKS)}")
    names = args.names or [n for n in BENCHMARKS if not (args.fast and n in SLOW)]
    print(f"machine: {machine_line(machine())}", flush=True)
    results = []
    for name in names:
        started = time.perf_counter()
        print(f"\n--- {name}", flush=True)
        results.append(run_one(name, args.timeout))
        print(f"--- {name}: {time.perf_counter() - started:.0f} s", flush=True)
        update_markdown(Path(args.out), results[-1:])  # written as each one finishes
    print("\nsummary:")
    for result in results:
        if result.skipped:
            print(f"  {result.name:<20} skipped: {result.skipped}")
        for target in result.targets:
            value = "-" if target.value is None else f"{target.value:.3g}"
            mark = {True: "met", False: "NOT met", None: "not measured"}[target.met]
            print(f"  {result.name:<20} {target.what}: {value} {target.unit} (<= {target.limit:g}): {mark}")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
