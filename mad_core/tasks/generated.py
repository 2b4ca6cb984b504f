"""Generated task sets: n items drawn by a seeded generator instead of read from a YAML file.

What it is for: an experiment asks ``generated_items(name, n, seed, **options)`` for its items
when its task set is not one of the written sets of sets.py:

  * ``"kks"``  Knight-Knave-Spy puzzles (seed 001) from ``kks.generate``. Options: ``players``
    (3-9, default 4), ``spies`` (0 to players, default 1: the paper's one spy, announced
    by the game manager), ``method`` ("default", ours, or "authors": drawn at random and kept
    when unique, as the authors' generator does; kks.GENERATION_METHODS) and ``extra_hints``
    (0-10, default 0: more game-manager hints, drawn as the authors' generator draws them).
    Item ``i`` has the id ``kks-<players>p-s<seed>-<i>`` (after ``p``: ``-<spies>spy`` when
    spies is not 1, ``-authors`` for that method, ``-<k>hints`` for extra hints), the rules and
    the puzzle text as its question, the answer "Name: role" per line in speaking order,
    ``names`` the players in speaking order and ``data`` the puzzle in the kks/1 JSON format
    (kks.to_json).

  * ``"rg:<dataset>"``  items of a reasoning-gym dataset (reasoning-gym==0.1.25, Apache-2.0,
    procedural generators that run offline), for the datasets whose answers map onto our
    answer kinds: gsm_symbolic, basic_arithmetic, chain_sum, leg_counting -> "number";
    syllogism -> "yes_no"; zebra_puzzles -> "text" (a name); knights_knaves -> "kks" (the
    island words, hero/villain and the like, read as knight/knave: answer_types). Options are
    the dataset's own configuration fields (e.g. ``n_people`` for knights_knaves); ``size``
    and ``seed`` are ours. Item ``i`` is the dataset's entry ``i`` for ``seed``, its id
    ``rg-<dataset>-s<seed>-<i>``, its question the dataset's question as written (with the
    dataset's own answer format line), its answer the dataset's answer and ``data`` the
    dataset, seed, index, options, answer and the entry's metadata. Datasets whose answer is
    not one value (propositional_logic: any valid conclusion is right) are refused.
    reasoning-gym is imported only when an rg: set is asked for (it takes about a second and
    pulls in sympy and matplotlib); ``import mad_core`` never imports it.

The same (name, n, seed, options) always give the same items, in any process, and the first k
items of a set of n are the set of k (an experiment can grow). Within one set no puzzle repeats.

What it must not do: call a model, touch the network, import streamlit, or accept an unknown
option silently: a bad name, count, seed or option raises ValueError naming it before anything
is generated.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from typing import Any

from . import kks
from .answer_types import read_answer
from .sets import INSTRUCTIONS, TaskItem

__all__ = ["generated_items", "GENERATED_SETS", "MAX_ITEMS", "RG_KINDS", "kks_item", "kks_answer"]

MAX_ITEMS = 10_000
# Item j of seed s is drawn with generator seed s * _STRIDE + j: distinct for distinct (s, j)
# as long as j < _STRIDE (duplicates are skipped, so j may pass n).
_STRIDE = 1_000_000


def _integer(field: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{field}: must be an integer, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise ValueError(f"{field}: must be an integer {span}, got {value!r}")
    return value


def _options(name: str, given: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(given) - set(known))
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise ValueError(f"{unknown[0]}: unknown option for {name!r} (options: {allowed})")
    return {**known, **given}


def kks_answer(solution: dict[str, str], names: list[str] | tuple[str, ...]) -> str:
    """The written answer of a KKS item: one "Name: role" line per player, in speaking order."""
    return "\n".join(f"{name}: {solution[name]}" for name in names)


def kks_item(puzzle: kks.Puzzle, item_id: str) -> TaskItem:
    """A TaskItem for one solved puzzle (its ``solution`` set): rules + puzzle text as question."""
    if puzzle.solution is None:
        raise ValueError(f"{item_id}: the puzzle has no solution to score against")
    names = tuple(puzzle.names)
    data = kks.to_json(puzzle)
    data["id"] = item_id
    return TaskItem(id=item_id, question=f"{kks.RULES}\n\n{puzzle.text}".rstrip(),
                    answer=kks_answer(puzzle.solution, names), kind="kks",
                    instruction=INSTRUCTIONS["kks"], names=names, data=data)


def _kks_items(n: int, seed: int, options: dict[str, Any]) -> list[TaskItem]:
    opts = _options("kks", options, {"players": 4, "spies": 1, "method": "default",
                                     "extra_hints": 0})
    players = _integer("players", opts["players"], kks.MIN_PLAYERS, kks.MAX_PLAYERS)
    spies = _integer("spies", opts["spies"], 0, players)
    method = opts["method"]
    if not isinstance(method, str) or method not in kks.GENERATION_METHODS:
        raise ValueError(f"method: must be one of {', '.join(kks.GENERATION_METHODS)}, "
                         f"got {method!r}")
    hints = _integer("extra_hints", opts["extra_hints"], 0, kks.MAX_EXTRA_HINTS)
    tag = f"{players}p" + ("" if spies == 1 else f"-{spies}spy") + \
        ("" if method == "default" else f"-{method}") + (f"-{hints}hints" if hints else "")
    items: list[TaskItem] = []
    seen: set[str] = set()
    for j in range(_STRIDE):
        if len(items) == n:
            break
        puzzle = kks.generate(players, seed * _STRIDE + j, n_spies=spies, method=method,
                              extra_hints=hints)
        key = repr((puzzle.names, puzzle.statements, puzzle.hints))
        if key in seen:  # small puzzles (3 players) can repeat under another seed
            continue
        seen.add(key)
        items.append(kks_item(puzzle, f"kks-{tag}-s{seed}-{len(items)}"))
    if len(items) < n:  # pragma: no cover - 3 players alone give thousands of distinct puzzles
        raise ValueError(f"n: only {len(items)} distinct puzzles of {players} players found")
    return items


RG_PREFIX = "rg:"
# reasoning-gym datasets whose answer is one value of one of our answer kinds.
RG_KINDS: dict[str, str] = {
    "gsm_symbolic": "number", "basic_arithmetic": "number", "chain_sum": "number",
    "leg_counting": "number", "syllogism": "yes_no", "zebra_puzzles": "text",
    "knights_knaves": "kks",
}
_RG_INSTRUCTIONS = {**INSTRUCTIONS, "kks": "Give the role of every person, in the words of the question."}


def _json_safe(value: Any) -> Any:
    """The entry's metadata as plain JSON (tuples become lists, anything else its str)."""
    return json.loads(json.dumps(value, default=str))


def _rg_dataset(dataset: str, n: int, seed: int, options: dict[str, Any]) -> Any:
    """reasoning-gym's dataset object; its configuration errors as ValueError naming options."""
    try:
        import reasoning_gym
        from reasoning_gym.factory import DATASETS
    except ImportError as exc:
        raise ValueError(f"name: {RG_PREFIX}{dataset} needs reasoning-gym, which is not "
                         f"installed here ({exc})") from None
    fields = {f.name for f in dataclasses.fields(DATASETS[dataset][1])} - {"size", "seed"}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown option for {RG_PREFIX}{dataset} "
                         f"(options: {', '.join(sorted(fields)) or 'none'})")
    try:
        return reasoning_gym.create_dataset(dataset, size=n, seed=seed, **options)
    except (AssertionError, TypeError, ValueError) as exc:
        named = ", ".join(sorted(options)) or "options"
        raise ValueError(f"{named}: reasoning-gym's {dataset} refused them: {exc}") from None


def _rg_items(dataset: str, n: int, seed: int, options: dict[str, Any]) -> list[TaskItem]:
    kind = RG_KINDS[dataset]
    data = _rg_dataset(dataset, n, seed, options)
    items: list[TaskItem] = []
    for i in range(n):
        entry = data[i]
        item_id = f"rg-{dataset}-s{seed}-{i}"
        answer = entry["answer"]
        names = tuple(str(name) for name in entry["metadata"]["names"]) if kind == "kks" else None
        item = TaskItem(
            id=item_id, question=entry["question"].strip(), answer=str(answer), kind=kind,
            instruction=_RG_INSTRUCTIONS[kind], names=names,
            data={"format": "reasoning-gym", "dataset": dataset, "seed": seed, "index": i,
                  "options": _json_safe(options), "answer": entry["answer"],
                  "metadata": _json_safe(entry["metadata"])})
        if not read_answer(kind, item.answer, names=names).valid:  # pragma: no cover - a new release
            raise ValueError(f"{item_id}: reasoning-gym's answer {answer!r} does not read as {kind}")
        items.append(item)
    return items


_GENERATORS: dict[str, Callable[[int, int, dict[str, Any]], list[TaskItem]]] = {
    "kks": _kks_items,
    **{RG_PREFIX + dataset: functools.partial(_rg_items, dataset) for dataset in RG_KINDS},
}
GENERATED_SETS: tuple[str, ...] = tuple(_GENERATORS)


def generated_items(name: str, n: int, seed: int, **options: Any) -> list[TaskItem]:
    """``n`` items of the generated set ``name`` for ``seed`` (see the module docstring).

    Raises ValueError naming the field (``name``, ``n``, ``seed`` or the option) on bad input.
    """
    if isinstance(name, str) and name.startswith(RG_PREFIX) and name not in _GENERATORS:
        raise ValueError(f"name: reasoning-gym dataset {name[len(RG_PREFIX):]!r} is not supported "
                         f"(its answers must map onto an answer kind; supported: "
                         f"{', '.join(RG_PREFIX + d for d in RG_KINDS)})")
    if not isinstance(name, str) or name not in _GENERATORS:
        raise ValueError(f"name: unknown generated task set {name!r} "
                         f"(generated sets: {', '.join(GENERATED_SETS)})")
    n = _integer("n", n, 1, MAX_ITEMS)
    seed = _integer("seed", seed, 0)
    return _GENERATORS[name](n, seed, options)
