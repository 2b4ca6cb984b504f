"""Full-text search over 10,000 stored turns: each query within 50 ms.

The store is filled through its public import path (``exports.import_debate``): a real debate
is run once on a zero-latency scripted model and exported, and its turns are repeated with
generated texts (a fixed vocabulary, seeded) into debates of 1,000 turns each. Then
``mad_core.store.search_turns`` (FTS5 through sqlite-utils, at most 100 results with snippets, as
the Transcripts page asks) is timed for queries of several kinds: a common word, a rare
word, two words, a phrase with punctuation, a word that is nowhere, and hostile input.

    per query: median of --repeats runs        target: the slowest query's median <= 50 ms

    .venv/bin/python bench/search.py
    .venv/bin/python bench/search.py --turns 100000 --repeats 9
"""
from __future__ import annotations

import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Result, Target, finish, fixed_latency_model, median, parser  # noqa: E402

TARGET_MS = 50.0
PER_DEBATE = 1000
WORDS = ("prime number answer reason because therefore agree disagree solution knight knave spy truth lie "
         "capital france paris lyon river mountain sum product divide integer fraction probability vote "
         "round agent moderator judge consensus evidence claim argument premise conclusion").split()
QUERIES = {
    "common word": "answer",
    "rare word": "zyzzyva",
    "two words": "knight spy",
    "phrase with punctuation": '"prime number", because: (therefore)',
    "nowhere": "xylophonist",
    "hostile": 'AND OR NOT " * ^ NEAR( -- ;',
}


def template_export() -> dict:
    """A real (tiny) debate's export, to copy turns and settings from."""
    from mad_core import DebateConfig, DebateEngine, exports
    from mad_core.store import Store

    model, _ = fixed_latency_model(0.0, "burst")
    config = DebateConfig.from_dict({"question": "What is 2 + 2?", "rounds": 1, "max_rounds": 1,
                                     "agents": [{"label": "Agent 1", "model": model}],
                                     "paradigm": "simultaneous", "protocol": "convergence"})
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "t.db") as store:
        engine = DebateEngine(config, store=store)
        list(engine.run())
        return exports.export_debate(store, engine.debate_id)


def fill(store, turns: int, seed: int = 7) -> None:
    from mad_core import exports

    rng = random.Random(seed)
    template = template_export()
    model_turn = next(t for t in template["turns"] if t["kind"] == "discussion")
    written = 0
    while written < turns:
        count = min(PER_DEBATE, turns - written)
        data = {**template, "turns": [], **{key: [] for key in ("votes", "decisions", "challenges", "errors",
                                                               "annotations") if key in template}}
        for seq in range(count):
            words = [rng.choice(WORDS) for _ in range(rng.randint(40, 120))]
            if rng.random() < 0.002:
                words.insert(rng.randrange(len(words)), "zyzzyva")
            data["turns"].append({**model_turn, "id": uuid.uuid4().hex, "seq": seq, "round": 1 + seq // 3,
                                  "agent": f"Agent {seq % 3 + 1}", "content": " ".join(words) + "."})
        exports.import_debate(store, data, new_id=True)
        written += count


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("--turns", type=int, default=10_000)
    cli.add_argument("--repeats", type=int, default=5)
    args = cli.parse_args(argv)

    from mad_core.store import Store, search_turns

    result = Result("search", f"Full-text search over {args.turns:,} turns",
                    ["query", "text", "results", "median ms", "slowest ms"])
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "search.db") as store:
        started = time.perf_counter()
        fill(store, args.turns)
        filled = time.perf_counter() - started
        stored = store.query("SELECT COUNT(*) AS n FROM turns")[0]["n"]
        worst = 0.0
        for label, query in QUERIES.items():
            times, found = [], 0
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                found = len(search_turns(store, query))
                times.append((time.perf_counter() - t0) * 1000)
            result.rows.append([label, query, found, median(times), max(times)])
            worst = max(worst, median(times))
    result.targets.append(Target("slowest query (median)", worst, TARGET_MS, "ms"))
    result.notes.append(f"{stored:,} turns stored in {filled:.1f} s through exports.import_debate; "
                        f"search_turns returns at most 100 results with snippets")
    return finish(result, args)


if __name__ == "__main__":
    sys.exit(main())
