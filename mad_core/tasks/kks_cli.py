"""The Knight-Knave-Spy solver and generator as a command: ``python -m mad_core.tasks.kks``.

What it is for: letting a researcher check their own puzzle sets with our exact solver, and
write puzzles of our generator to a file:

  * ``solve FILE [--format kks|controlmad]``  FILE holds puzzles as a JSON list, one JSON
    object, or JSON Lines (one object a line; ``-`` reads standard input). ``kks`` (the
    default) is the kks/1 format of mad_core/tasks/kks.py; ``controlmad`` is a record of the
    paper's released set (``groundtruth/<n>.jsonl``), converted by ``kks.from_controlmad``.
    For each puzzle one line: its id (or ``#<n>``, its place in the file), its solutions, and
    when the record carries a published solution whether ours matches it; then a summary.
    Labels are unique: an id seen before in the file gets its occurrence, ``7-12 (2)`` (the
    paper's released 7-player file repeats 40 game ids), and a note before the summary says so.
    Exit status 0 when every puzzle has exactly one solution that matches its published one
    (where given), 1 otherwise (a record that cannot be read counts as a failure, named by its
    place, id and field), 2 when the file itself cannot be read or the arguments are wrong.
  * ``generate N_PLAYERS --seed S [--count K] [--spies M] [--method default|authors]
    [--extra-hints H]``  K puzzles (default 1) as kks/1 JSON Lines: the puzzles an experiment
    with task set ``kks``, ``task_seed: S`` and ``players: N_PLAYERS`` (and ``spies``,
    ``method``, ``extra_hints``) debates (mad_core/tasks/generated.py), ids included.
    ``--method authors`` draws puzzles the authors' way (at random, kept when unique);
    ``--extra-hints`` adds game-manager hints as the authors' generator does (kks.generate).

What it must not do: print a traceback for bad input, write any file, or call a model.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from . import kks
from .generated import generated_items

__all__ = ["main", "read_records", "solve_records"]

_SHOWN_SOLUTIONS = 3  # a puzzle with many solutions shows this many and a count
_ARGUMENTS = {"players": "N_PLAYERS", "n": "--count", "seed": "--seed", "spies": "--spies",
              "method": "--method", "extra_hints": "--extra-hints"}


class InputError(Exception):
    """The file cannot be read at all (exit status 2)."""


def read_records(text: str, source: str = "FILE") -> list[Any]:
    """The records of a JSON list, one JSON object, or JSON Lines text."""
    stripped = text.strip()
    if not stripped:
        raise InputError(f"{source}: empty, no puzzles")
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    else:
        return whole if isinstance(whole, list) else [whole]
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputError(f"{source} line {number}: not JSON ({exc.msg}, column {exc.colno}); "
                             "expected a JSON list, one JSON object or one JSON object a line") from None
    return records


def _assignment(names: Sequence[str], solution: dict[str, str]) -> str:
    return ", ".join(f"{name}: {solution[name]}" for name in names)


def _label(index: int, record: Any, puzzle: kks.Puzzle | None) -> str:
    if puzzle is not None and puzzle.id:
        return puzzle.id
    if isinstance(record, dict) and isinstance(record.get("id"), str):
        return record["id"]
    return f"#{index}"


def _unique(label: str, used: set[str]) -> str:
    """``label``, or when the file already used it ``label (2)``, ``label (3)``, ..."""
    unique, occurrence = label, 1
    while unique in used:
        occurrence += 1
        unique = f"{label} ({occurrence})"
    used.add(unique)
    return unique


def _puzzle(record: Any, fmt: str) -> kks.Puzzle:
    if fmt == "controlmad":
        return kks.from_controlmad(record)
    try:
        return kks.from_json(record)
    except ValueError:
        if isinstance(record, dict) and "raw_schema" in record:
            raise ValueError("raw_schema: this is a record of the paper's released set; "
                             "use --format controlmad") from None
        raise


def solve_records(records: Sequence[Any], fmt: str, out: TextIO) -> bool:
    """Solve each record and print one line per puzzle and a summary; True when all pass."""
    unique = several = none = unreadable = matches = differs = 0
    used: set[str] = set()
    repeated = 0
    for index, record in enumerate(records, 1):
        puzzle = None
        try:
            puzzle = _puzzle(record, fmt)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # a parser gap is bad input too
            if not isinstance(exc, ValueError):
                exc = ValueError(f"malformed ({type(exc).__name__}: {exc})")
            where = f"record {index}" + (f" (id {record['id']!r})" if isinstance(record, dict)
                                         and isinstance(record.get("id"), str) else "")
            print(f"{where}: cannot be read: {exc}", file=out)
            unreadable += 1
            continue
        first = _label(index, record, puzzle)
        label = _unique(first, used)
        repeated += label != first
        solutions = kks.solve(puzzle)
        if len(solutions) == 1:
            unique += 1
            line = f"{label}: one solution: {_assignment(puzzle.names, solutions[0])}"
        elif solutions:
            several += 1
            shown = " | ".join(_assignment(puzzle.names, s) for s in solutions[:_SHOWN_SOLUTIONS])
            more = len(solutions) - _SHOWN_SOLUTIONS
            line = f"{label}: {len(solutions)} solutions: {shown}" + (f" | ... {more} more" if more > 0 else "")
        else:
            none += 1
            line = f"{label}: no solution"
        if puzzle.solution is not None:
            if solutions == [puzzle.solution]:
                matches += 1
                line += " -- matches the published solution"
            else:
                differs += 1
                line += f" -- DIFFERS from the published solution ({_assignment(puzzle.names, puzzle.solution)})"
        print(line, file=out)
    total = len(records)
    if repeated:
        print(f"note: {repeated} label{'s' if repeated != 1 else ''} repeated an earlier id of "
              "the file; each repeat is shown as 'ID (2)', 'ID (3)', ... in file order", file=out)
    print(f"{total} puzzle{'s' if total != 1 else ''}: {unique} with one solution, {several} with "
          f"several, {none} with none, {unreadable} unreadable; published solutions: {matches} "
          f"match, {differs} differ, {total - unreadable - matches - differs} not given", file=out)
    return unique == total and differs == 0


def _generate(args: argparse.Namespace, out: TextIO) -> None:
    options: dict[str, Any] = {"players": args.n_players, "method": args.method,
                               "extra_hints": args.extra_hints}
    if args.spies is not None:
        options["spies"] = args.spies
    try:
        items = generated_items("kks", args.count, args.seed, **options)
    except ValueError as exc:  # name the command's own argument, not the library's
        field, _, problem = str(exc).partition(": ")
        raise ValueError(f"{_ARGUMENTS.get(field, field)}: {problem}") from None
    for item in items:
        print(json.dumps(item.data), file=out)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mad_core.tasks.kks",
        description="Knight-Knave-Spy puzzles (seed 001): solve puzzle files exactly, or generate "
                    "puzzles with exactly one solution. The kks/1 JSON format is documented in "
                    "mad_core/tasks/kks.py and the README.")
    commands = parser.add_subparsers(dest="command", required=True)
    solve = commands.add_parser("solve", help="solve every puzzle of FILE and compare with the "
                                              "published solutions")
    solve.add_argument("file", metavar="FILE", help="a JSON list, one JSON object or JSON Lines; - for stdin")
    solve.add_argument("--format", choices=("kks", "controlmad"), default="kks",
                       help="kks: the kks/1 format (default); controlmad: records of the paper's "
                            "released set (groundtruth/<n>.jsonl)")
    gen = commands.add_parser("generate", help="print generated puzzles as kks/1 JSON Lines")
    gen.add_argument("n_players", metavar="N_PLAYERS", type=int, help="3 to 9")
    gen.add_argument("--seed", type=int, required=True)
    gen.add_argument("--count", type=int, default=1, help="how many puzzles (default 1)")
    gen.add_argument("--spies", type=int, default=None, help="how many spies (default 1)")
    gen.add_argument("--method", choices=kks.GENERATION_METHODS, default="default",
                     help="default: ours (a hidden solution first, then statements it allows); "
                          "authors: the authors' way, statements drawn at random and a puzzle "
                          "kept only when it has exactly one solution")
    gen.add_argument("--extra-hints", type=int, default=0, metavar="H",
                     help=f"extra game-manager hints after the number of spies, drawn as the "
                          f"authors' generator draws them (0-{kks.MAX_EXTRA_HINTS}, default 0)")
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; returns the exit status (see the module docstring)."""
    out = out if out is not None else sys.stdout
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "generate":
            _generate(args, out)
            return 0
        try:
            text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{args.file}: cannot be read ({exc})") from None
        records = read_records(text, args.file)
        return 0 if solve_records(records, args.format, out) else 1
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
