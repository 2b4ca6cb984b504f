"""A simultaneous round: do N agents that speak at once take the time of one call?

One round of the simultaneous paradigm with N = 2, 5, 10 agents (``max_concurrency`` = N) on
a model that takes L = 300 ms per call. The round's wall time runs from the engine's
RoundStarted to the round's last TurnFinished, as a consumer sees them, and is divided by L:
1.0 means the N calls cost exactly one call.

    round wall / L        target: <= 1.15 at N = 5

    .venv/bin/python bench/simultaneous_round.py
    .venv/bin/python bench/simultaneous_round.py --agents 5 --latency-ms 1000 --pacing burst
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import PACINGS, Result, Target, finish, fixed_latency_model, parser, warm_up  # noqa: E402

TARGET_AGENTS, TARGET = 5, 1.15


def round_time(model: str, agents: int) -> tuple[float, int]:
    """(seconds from RoundStarted to the last TurnFinished of round 1, turns that finished ok)."""
    from mad_core import DebateConfig, DebateEngine
    from mad_core.events import RoundStarted, TurnFinished

    config = DebateConfig.from_dict({
        "question": "What is 2 + 2?", "agents": [{"label": f"Agent {i + 1}", "model": model} for i in range(agents)],
        "paradigm": "simultaneous", "protocol": "convergence", "rounds": 1, "max_rounds": 1,
        "max_concurrency": agents})
    started = ended = None
    ok = 0
    for event in DebateEngine(config).run():
        if isinstance(event, RoundStarted) and event.round == 1:
            started = time.perf_counter()
        elif isinstance(event, TurnFinished) and event.turn.round == 1 and event.turn.kind == "discussion":
            ended = time.perf_counter()
            ok += event.turn.status == "ok"
    return ended - started, ok


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("--agents", type=int, action="append", help="N (repeatable; default 2, 5, 10)")
    cli.add_argument("--latency-ms", type=float, default=300.0)
    cli.add_argument("--repeats", type=int, default=3, help="rounds per N (the best counts)")
    cli.add_argument("--pacing", choices=PACINGS, default="paced",
                     help="paced: pieces stream over the call's time (default); burst: all at the end")
    args = cli.parse_args(argv)

    latency = args.latency_ms / 1000
    model, log = fixed_latency_model(latency, args.pacing)
    warm_up(model)
    result = Result("simultaneous_round", f"One simultaneous round, model {args.latency_ms:g} ms per call "
                                          f"({args.pacing})", ["agents", "round wall s", "wall / one call", "ok turns"])
    for agents in args.agents or [2, 5, 10]:
        best, ok = min(round_time(model, agents) for _ in range(args.repeats))
        result.rows.append([agents, best, best / latency, ok])
        if agents == TARGET_AGENTS:
            result.targets.append(Target(f"round wall / one call at N = {agents}", best / latency, TARGET, "x"))
    result.notes.append(f"best of {args.repeats} rounds per N; a consumer's view (events as they arrive)")
    return finish(result, args)


if __name__ == "__main__":
    sys.exit(main())
