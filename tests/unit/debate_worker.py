"""A debate process for the concurrency, kill and resume tests: `python debate_worker.py ARGS`.

It registers the scripted model `scripted/worker` whose replies depend only on (agent, round,
kind), so any process (a fresh run, or a resume after a kill -9) gives the same continuation,
then hands ARGS to the real command line (`mad_core.cli.main`). With `--token-delay S` the model
streams slowly, so that a test can kill the process mid-debate.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mad_core.cli import main  # noqa: E402
from mad_core.models import ensure_registered  # noqa: E402
from mad_core.models.scripted import Script, register_script  # noqa: E402

ANSWERS = {"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Paris"}


def reply(messages, info) -> str:
    meta = info["metadata"]
    agent, kind, rnd = meta["agent"], meta["kind"], meta["round"]
    if kind == "vote":
        return "I vote for Solution 1." if agent != "Agent 2" else "Solution 2"
    if kind == "extraction":
        return ANSWERS.get(agent, "Paris")
    return f"{agent} in round {rnd} weighs the evidence once more.\nFinal answer: {ANSWERS.get(agent, 'Paris')}"


if __name__ == "__main__":
    args = sys.argv[1:]
    delay = 0.0
    if "--token-delay" in args:
        at = args.index("--token-delay")
        delay = float(args[at + 1])
        del args[at:at + 2]
    ensure_registered()
    register_script("worker", Script(replies=reply, token_delay=delay))
    sys.exit(main(args))
