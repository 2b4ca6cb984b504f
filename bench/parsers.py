"""Speed check: every reader of model text parses a hostile 100,000-character reply fast.

The parsers in mad_core/answers.py and mad_core/protocols/ballots.py promise linear time
(see their module docstrings). This script times each of them on adversarial replies of
many shapes (random text, digits only, "1:1,1:1,...", "{{{{...", "Solution 1 Solution 2 ...",
unclosed <think> blocks, labels followed by long runs of spaces, single-quoted dictionaries
that never close, nested \\boxed{...}, numbers of 100,000 digits, ...) and fails when the
slowest call takes 50 ms or more, or when any call raises.

    .venv/bin/python bench/parsers.py                 # 100,000 characters, 50 ms limit
    .venv/bin/python bench/parsers.py --size 10000 --limit-ms 5 --verbose

Not a unit test on purpose: timings depend on the machine (the project keeps speed targets
in bench/, never in timed unit tests).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mad_core import answers  # noqa: E402
from mad_core.protocols.ballots import parse_ballot, parse_judge_verdict, read_judge_verdict  # noqa: E402

PROTOCOLS = ("simple_voting", "approval_voting", "ranked_voting", "cumulative_voting", "judge")
TOKENS = [
    "Solution", "solution", "Solutions", "Option", "1", "2", "3", "10", "99", ":", "=", "->",
    "{", "}", "[", "]", '"', "'", " ", "  ", "\n", "\t", "Final answer:", "Confidence:", "/10",
    "AGREE", "DISAGREE", "not", "<think>", "</think>", "-", ".", ",", ";", ">", "points", "yes",
    "no", "answer", "Decision", "verdict", "\\boxed{", "**", "#", "and", "or", "then", "No.",
    "'Supported Side'", "'Whether there is a preference'", "'Yes'", "\\'", "I agree", "but",
    "\\frac{", "B. ", "E. coli", "$", "%", "1,000", "0.50", "e400",
]


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // max(len(unit), 1) + 1))[:size]


def _random(alphabet: Callable[[random.Random], str], size: int, seed: int) -> str:
    rng = random.Random(seed)
    parts, length = [], 0
    while length < size:
        part = alphabet(rng)
        parts.append(part)
        length += len(part)
    return "".join(parts)[:size]


def _counting(separator: str, size: int) -> str:
    """ "1", "2", "3", ... joined by `separator`, cut to `size` characters."""
    parts, length, n = [], 0, 1
    while length < size:
        parts.append(str(n))
        length += len(parts[-1]) + len(separator)
        n += 1
    return separator.join(parts)[:size]


def cases(size: int) -> dict[str, str]:
    """Adversarial replies of `size` characters (about), by name."""
    half = size // 2
    return {
        "random printable": _random(lambda r: chr(r.randrange(32, 127)), size, 1),
        "random code points (surrogates, NUL)": _random(lambda r: chr(r.randrange(0, 0x110000)), size, 2),
        "random tokens": _random(lambda r: r.choice(TOKENS), size, 3),
        "spaces": " " * size,
        "newlines": "\n" * size,
        "NUL": "\x00" * size,
        "lone surrogates": "\ud800" * size,
        "digits": "1" * size,
        "digits then .5": " " + "1" * size + ".5",
        "1.1.1.1": _repeat("1.", size),
        "1,000,000 then x": "1" + _repeat(",000", size) + "x",
        "distinct numbers": _counting(" ", size),
        "distinct numbers >": _counting(" > ", size),
        "1:1,": _repeat("1:1,", size),
        "1: 0, 2: 0, 3: 0, ...": _counting(": 0, ", size),
        '{"1": 0, "2": 0, ...}': '{"' + _counting('": 0, "', size - 8) + '": 0}',
        "Solution 1: 1, ": _repeat("Solution 1: 1, ", size),
        "Solution 1 ": _repeat("Solution 1 ", size),
        "Solution N ": _counting(" Solution ", size),
        "Solutions 1, 2, 3, ...": "Solutions " + _counting(", ", size),
        "Solution + spaces": "Solution" + " " * size + "x",
        "Solution 1, + spaces": "Solution 1," + " " * size + "x",
        "Solution # + spaces": "Solution #" + _repeat(" #", size) + "x",
        "solution_ + spaces key": '{"solution' + " " * size + 'x": 1}',
        "{{{{": "{" * size,
        "{{}}": "{" * half + "}" * half,
        "{[[[ ]]]}": '{"1": ' + "[" * half + "]" * half + "}",
        "[[[[ in object": '{"1": ' + "[" * size + "}",
        '{"}{"}': _repeat('{"}', size),
        "{x}{x}": _repeat("{x}", size),
        '{"1": 1}{"1": 1}': _repeat('{"1": 1}', size),
        "huge points JSON": '{"1": ' + "9" * size + "}",
        "huge points text": "Solution 1: " + "9" * size,
        "huge key JSON": '{"' + "1" * size + '": 1}',
        "<think> unclosed": _repeat("<think>", size),
        "<think> split": _repeat("<think>", half) + "</think>" + _repeat("<think>", half),
        "final answer + spaces": "final answer" + " " * size + "x",
        "Final answer: lines": _repeat("Final answer:\n", size),
        "confidence + spaces": "confidence" + " " * size + "x",
        "confidence: + stars": "confidence:" + "*" * size + "x",
        "Confidence: 9/10 ": _repeat("Confidence: 9/10 ", size),
        "decision + colons": "decision" + ":" * size + "x",
        "verdict + dashes": _repeat("verdict" + "-" * 50, size),
        "answer + dashes": "answer" + "-" * size,
        "answer: + spaces": "answer:" + " " * size + "\n",
        "\\boxed{ unclosed": _repeat("\\boxed{", size),
        "**": "*" * size,
        "AGREE ": _repeat("AGREE ", size),
        "quotes and backslashes": _repeat('"\\', size),
        "single quotes": "'" * size,
        "{' unclosed": _repeat("{'", size),
        "{'a unclosed": _repeat("{'a", size),
        "{'a': 'b', (one dict, never closed)": "{" + _repeat("'a': 'b', ", size),
        "{'a': 'b'}{'a': 'b'}": _repeat("{'a': 'b'}", size),
        "{'decision': 'maybe'} ...": _repeat("{'decision': 'maybe'} ", size),
        "{'answer': 'x', ...} (one dict)": "{" + _repeat("'answer': 'x', ", size - 2) + "}",
        "{'k': 'it\\'s ... (escapes)": "{'k': '" + _repeat("it\\'s ", size),
        "{'k': 'v' + spaces": "{'k': 'v'" + " " * size,
        "MAD verdicts": _repeat("{'Whether there is a preference': 'Yes', 'Supported Side': "
                                "'Negative', 'Reason': 'the negative side's answer', "
                                "'debate_answer': '1.5'} ", size),
        "\\boxed{ then {{{{": "\\boxed{" + "{" * size,
        "\\boxed{{a} unclosed": _repeat("\\boxed{{a}", size),
        "\\boxed{ then {a}{a}...": "\\boxed{" + _repeat("{a}", size),
        "\\frac{ unclosed": _repeat("\\frac{", size),
        "\\frac{1}{2} ": _repeat("\\frac{1}{2} ", size),
        "zeros": "0" * size,
        "0.000...01": "0." + "0" * size + "1",
        "1.5000... then x": "1.5" + "0" * size + " x",
        "1e + digits": "1e" + "9" * size,
        "1.50 words": _repeat("1.50 m ", size),
        "007 words": _repeat("007 x ", size),
        "B. Paris ": _repeat("B. Paris ", size),
        "AGREE lines": _repeat("AGREE\n", size),
        "Confidence: 8/10 lines": _repeat("Confidence: 8/10\n", size),
        "Final answer: then confidence lines": "Final answer:\n" + _repeat("Confidence: 8/10\n", size),
        "I agree but ": _repeat("I agree but ", size),
        "Supported side: + colons": "Supported side" + ":" * size + "x",
        # the JSON forms of constrained output (protocols/schemas.py), huge or nested
        '{"vote": 1, "vote": 1, ...}': "{" + _repeat('"vote": 1, ', size) + '"x": 0}',
        '{"approved": [1, 1, ...]}': '{"approved": [' + _repeat("1, ", size) + "1]}",
        '{"ranking": [1, 2, 3, ...]}': '{"ranking": [' + _counting(", ", size) + "]}",
        '{"vote": [[[...]]]}': '{"vote": ' + "[" * half + "]" * half + "}",
        '{"agree": true, "reason": "xxx...': '{"agree": true, "reason": "' + "x" * size,
        '{"answer": "\\u00e9..."}': '{"answer": "' + _repeat("\\u00e9", size) + '"}',
        '{"decision": "YES", ... long answer}': '{"decision": "YES", "side": "Negative", "answer": "'
                                                 + "4" * size + '", "reason": ""}',
        "```json fence unclosed": "```json\n{" + _repeat('"a": 1, ', size),
        "</think> repeated then JSON": _repeat("</think>", size) + '{"vote": 1}',
    }


def readers() -> dict[str, Callable[[str], object]]:
    """Every public reader of model text, as a function of the text alone."""
    found: dict[str, Callable[[str], object]] = {
        f"parse_ballot({protocol})": (lambda text, p=protocol: parse_ballot(p, text, 3))
        for protocol in PROTOCOLS
    }
    found["parse_judge_verdict"] = parse_judge_verdict
    found["read_judge_verdict"] = read_judge_verdict
    for name in ("final_answer", "normalize_answer", "parse_agreement", "parse_confidence",
                 "strip_final_answer", "strip_confidence", "json_reply", "extracted_answer"):
        found[name] = getattr(answers, name)
    return found


def best_time(reader: Callable[[str], object], text: str, repeats: int) -> float:
    """Best of `repeats` calls, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        reader(text)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="characters per reply")
    parser.add_argument("--limit-ms", type=float, default=50.0, help="slowest call allowed")
    parser.add_argument("--repeats", type=int, default=3, help="calls per case (best counts)")
    parser.add_argument("--verbose", action="store_true", help="print every case, not only the slowest")
    args = parser.parse_args(argv)

    failures: list[str] = []
    inputs = cases(args.size)
    print(f"{'reader':<32} {'slowest ms':>10}  slowest case")
    for name, reader in readers().items():
        timings: dict[str, float] = {}
        for case, text in inputs.items():
            try:
                timings[case] = best_time(reader, text, args.repeats)
            except Exception as exc:  # the contract is broken: report, do not stop
                failures.append(f"{name} raised {type(exc).__name__} on {case!r}")
                continue
            if args.verbose:
                print(f"    {name:<28} {timings[case] * 1000:10.2f}  {case}", flush=True)
        worst = max(timings, key=timings.get, default=None)
        if worst is not None:
            print(f"{name:<32} {timings[worst] * 1000:10.2f}  {worst}", flush=True)
        failures += [f"{name} took {seconds * 1000:.1f} ms on {case!r}"
                     for case, seconds in timings.items() if seconds * 1000 >= args.limit_ms]
    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(inputs)} replies of {args.size:,} characters x {len(readers())} readers: "
          + ("all under " if not failures else f"{len(failures)} failures; limit ")
          + f"{args.limit_ms:g} ms")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
