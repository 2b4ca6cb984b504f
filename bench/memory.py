"""Peak memory (RSS) of a process running the default offline debate, and of its model server.

Runs the default debate (3 agents on local/smollm2-135m, 2 rounds) to its end in this process,
then reads the peak resident set size of this process (``getrusage``) and of the llama.cpp
server that served it (``VmHWM`` in ``/proc/<pid>/status``; the model runs there, not in
this process). ``peak_rss_mb(pid)`` is the hook: any benchmark or test can call it for the
current process or another one.

    .venv/bin/python bench/memory.py
    .venv/bin/python bench/memory.py --model scripted/echo     # the engine alone, no model server

No target yet: the figure is recorded for comparison between versions.
"""
from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Result, finish, parser, rss_mib  # noqa: E402
from bench.local_model import DEFAULT_DEBATE, QUESTION  # noqa: E402


def peak_rss_mb(pid: int | None = None) -> float | None:
    """Peak resident memory in MiB of ``pid`` (None: this process); None when it cannot be read."""
    if pid is None or pid == os.getpid():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return rss_mib(pid, "VmHWM")


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("--model", help="model for every agent (default: the offline default)")
    args = cli.parse_args(argv)

    from mad_core import DebateConfig, DebateEngine
    from mad_core.models import DEFAULT_MODEL, validate_model_name

    model = args.model or DEFAULT_MODEL
    result = Result("memory", f"Peak memory of a default debate on {model}", ["process", "peak RSS MiB"])
    problem = validate_model_name(model)
    if problem:
        result.skipped = problem
        return finish(result, args)
    start = peak_rss_mb()
    settings = {} if args.model is None else {"agents": [{"label": f"Agent {i + 1}", "model": model}
                                                         for i in range(3)]}
    events = list(DebateEngine(DebateConfig.from_dict({"question": QUESTION, **DEFAULT_DEBATE, **settings})).run())
    result.rows.append(["this process (engine, litellm, store)", peak_rss_mb()])
    result.notes.append(f"debate {events[-1].status}; this process peaked at {start:.0f} MiB before the debate "
                        "(imports)")
    if model.startswith("local/"):
        try:
            from mad_core.models import llama_server, local_gguf

            server = llama_server.server_for(local_gguf.resolve(model.split("/", 1)[1]))
            result.rows.append([f"llama-server (pid {server.pid})", peak_rss_mb(server.pid)])
        except Exception as exc:  # noqa: BLE001 - the server's interface is young: report, don't crash
            result.notes.append(f"the model server's memory could not be read ({type(exc).__name__}: {exc})")
    return finish(result, args)


if __name__ == "__main__":
    sys.exit(main())
