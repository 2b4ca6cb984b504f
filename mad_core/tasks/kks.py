"""Knight-Knave-Spy puzzles (seed 001, Wu et al., §3 and App. C): generator, exact solver, JSON.

What it is for: giving MAD Lab a reasoning task with one verifiable answer per player, the task of
the seed paper. Each player is a knight (every statement true), a knave (every statement false)
or a spy (a statement may be either). Each player says one sentence about the roles or the
truthfulness of players; a game manager gives hints that are always true (in the paper and in
its released 1,800-puzzle set: "Among all players, there is exactly one spy."). The solver finds
every role assignment consistent with the statements and hints; a puzzle is fit for a debate
only when exactly one assignment is.

  * ``generate(n_players, seed)``  a puzzle (3-9 players) with exactly one solution; the same
    arguments give the same puzzle. One spy by default, announced by the game manager's hint,
    as in the paper. ``method="authors"`` draws the way the authors' generator does (every
    statement at random, a puzzle kept only when unique: rejection sampling, bounded by
    ``max_attempts``); the default (ours) picks a solution first and leans to knights. Both
    take well under a second for 9 players. ``extra_hints=k`` adds k game-manager hints drawn
    as the authors' generator draws them.
  * ``solve(puzzle)``  every consistent assignment, by brute force over all 3**n assignments
    (19,683 for 9 players): exact, never a heuristic.
  * ``to_json`` / ``from_json``  the documented format below, lossless; ``from_controlmad``
    converts one record of the paper's released set (``groundtruth/<n>.jsonl`` of
    haolun-wu/ControlMAD) into a ``Puzzle``.
  * ``python -m mad_core.tasks.kks solve FILE`` / ``generate N_PLAYERS --seed S``  the solver
    and generator as a command (mad_core/tasks/kks_cli.py; README "Knight-Knave-Spy puzzles").
  * ``statement_text`` / ``Puzzle.text``  the puzzle language of the paper; ``Puzzle.text`` is
    the game info block of the paper's prompts (App. C.1), ready to put into a prompt, and
    ``RULES`` states the game rules for a prompt.

What it must not do: call a model, touch the network or the UI, eval or exec anything from
input, or guess: a puzzle that is not well formed raises ``ValueError`` naming the bad field.

Truthfulness. A player "is telling the truth" when their own statement is true under the
assignment, whatever their role (a spy's statement is simply true or false). Statements about
truthfulness ("X is lying", "among A, B and C exactly two people are telling the truth") may
name only players who spoke EARLIER, as in the paper's generator; this keeps every statement's
truth value well defined (no "this statement is false" loops). Hints are evaluated after all
statements, so a hint may name any player's truthfulness.

JSON format (``"format": "kks/1"``)::

    {
      "format": "kks/1",                 # optional; when present it must be "kks/1"
      "id": "4-1",                       # optional string
      "players": ["Rachel", "Violet", "Olivia", "Peter"],   # speaking order, unique names
      "statements": [                    # exactly one per player, in the same order
        {"speaker": "Rachel", "kind": "same_role", "players": ["Violet", "Rachel"]},
        {"speaker": "Violet", "kind": "truth_count", "players": ["Rachel"],
         "truthfulness": "truthful", "count": 1},
        {"speaker": "Olivia", "kind": "truth_count", "players": ["Violet", "Rachel"],
         "truthfulness": "truthful", "count": 1},
        {"speaker": "Peter", "kind": "exactly_one", "statements": [
          {"kind": "role_parity", "players": "all", "role": "knave", "parity": "even"},
          {"kind": "truth_parity", "players": ["Rachel", "Violet", "Olivia"],
           "truthfulness": "lying", "parity": "odd"}]}
      ],
      "hints": [{"kind": "role_count", "players": "all", "role": "spy", "count": 1}],
      "solution": {"Rachel": "knight", "Violet": "knight", "Olivia": "knave", "Peter": "spy"}
    }

(That is the paper's example puzzle, game 4-1 of its set; its solution is the one shown.)
``"solution"`` is optional (a puzzle to be solved need not carry it); ``"hints"`` may be empty.
``"players"`` inside a statement is a list of player names, or the string ``"all"`` for every
player; ``to_json`` always writes the explicit list. Roles are ``"knight"``, ``"knave"``,
``"spy"``; ``truthfulness`` is ``"truthful"`` or ``"lying"``; ``parity`` is ``"even"`` or
``"odd"``. The statement kinds (the paper's generator schema numbers in brackets):

  ``role_count``  {players, role, count}: exactly ``count`` of the group have ``role`` [1-3].
      "Among Kate and I, there is exactly one knave." / "Hank is a knight." /
      "Charlie, Eve, and I are all knights."
  ``truth_count``  {players, truthfulness, count}: exactly ``count`` of the group (earlier
      speakers only) are telling the truth / lying [4-5].
      "Among Violet and Rachel, exactly one person is telling the truth." / "Zane is lying."
  ``same_role``  {players} (2 or more): they all have the same role [6-7].
      "Violet and I have the same role."
  ``same_truthfulness``  {players} (2 or more, earlier speakers only): they are all telling the
      truth or all lying [8-9]. "Wendy and Mia are either both telling the truth or both lying."
  ``different_roles``  {players} (2 or more): they do NOT all have the same role (for two
      players: different roles) [10]. "Peter and Yara have different roles."
  ``role_parity``  {players, role, parity}: the number of ``role`` in the group is even/odd
      (zero is even) [11-12]. "Among all players, the number of knaves is even."
  ``truth_parity``  {players, truthfulness, parity}: the number of the group (earlier speakers
      only) who are telling the truth / lying is even/odd [13-14].
      "Among Rachel, Violet, and Olivia, the number of people who are lying is odd."
  ``exactly_one``  {statements: [two statements of the kinds above, without "speaker"]}:
      exactly one of the two is true [15]. "Among the following two statements, exactly one
      is true: (1) ... (2) ..."

Inside ``exactly_one`` the two parts are spoken by the same speaker and follow the same rules;
``exactly_one`` does not nest. A statement's ``players`` has no repeated names, and ``count``
lies between 0 and the size of the group.
"""
from __future__ import annotations

import itertools
import operator
import random
import re
import runpy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

__all__ = [
    "ROLES", "RULES", "FORMAT", "NAME_POOL",
    "RoleCount", "TruthCount", "SameRole", "SameTruthfulness", "DifferentRoles",
    "RoleParity", "TruthParity", "ExactlyOne", "Statement", "STATEMENT_KINDS", "Puzzle",
    "GENERATION_METHODS", "MAX_EXTRA_HINTS",
    "generate", "solve", "has_unique_solution", "evaluate", "statement_truths", "is_consistent", "statement_text",
    "to_json", "from_json", "from_controlmad",
]

FORMAT = "kks/1"
ROLES: tuple[str, ...] = ("knight", "knave", "spy")
_ROLE_INDEX = {r: i for i, r in enumerate(ROLES)}
_KNIGHT, _KNAVE, _SPY = 0, 1, 2
TRUTHFULNESS: tuple[str, ...] = ("truthful", "lying")
PARITIES: tuple[str, ...] = ("even", "odd")

RULES = (
    "Each player is a knight, a knave, or a spy.\n"
    "- Knights always tell the truth.\n"
    "- Knaves always lie.\n"
    "- Spies can either tell the truth or lie.\n"
    "- The hints from the game manager are always true.\n"
    "Each player makes one statement. Deduce the role of every player."
)

# The paper's players are named from a pool of 26 first names, A to Z.
NAME_POOL: tuple[str, ...] = (
    "Alice", "Bob", "Charlie", "David", "Eve", "Frank", "Grace", "Hank", "Ivy", "Jack",
    "Kate", "Liam", "Mia", "Noah", "Olivia", "Peter", "Quinn", "Rachel", "Sam", "Tina",
    "Uma", "Violet", "Wendy", "Xavier", "Yara", "Zane",
)

MIN_PLAYERS, MAX_PLAYERS = 3, 9
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                 "ten", "eleven", "twelve")


# --- statements ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class RoleCount:
    """Exactly ``count`` of ``players`` have ``role``."""
    players: tuple[str, ...]
    role: str
    count: int
    kind: ClassVar[str] = "role_count"


@dataclass(frozen=True)
class TruthCount:
    """Exactly ``count`` of ``players`` (earlier speakers) are truthful / lying."""
    players: tuple[str, ...]
    truthfulness: str
    count: int
    kind: ClassVar[str] = "truth_count"


@dataclass(frozen=True)
class SameRole:
    """All of ``players`` have the same role."""
    players: tuple[str, ...]
    kind: ClassVar[str] = "same_role"


@dataclass(frozen=True)
class SameTruthfulness:
    """``players`` (earlier speakers) are all telling the truth or all lying."""
    players: tuple[str, ...]
    kind: ClassVar[str] = "same_truthfulness"


@dataclass(frozen=True)
class DifferentRoles:
    """``players`` do not all have the same role."""
    players: tuple[str, ...]
    kind: ClassVar[str] = "different_roles"


@dataclass(frozen=True)
class RoleParity:
    """The number of ``role`` among ``players`` is ``parity`` ("even" / "odd")."""
    players: tuple[str, ...]
    role: str
    parity: str
    kind: ClassVar[str] = "role_parity"


@dataclass(frozen=True)
class TruthParity:
    """The number of ``players`` (earlier speakers) who are truthful / lying is ``parity``."""
    players: tuple[str, ...]
    truthfulness: str
    parity: str
    kind: ClassVar[str] = "truth_parity"


@dataclass(frozen=True)
class ExactlyOne:
    """Exactly one of the two ``parts`` is true."""
    parts: tuple["Statement", "Statement"]
    kind: ClassVar[str] = "exactly_one"


Statement = Union[RoleCount, TruthCount, SameRole, SameTruthfulness, DifferentRoles, RoleParity,
                  TruthParity, ExactlyOne]
_CLASSES: tuple[type, ...] = (RoleCount, TruthCount, SameRole, SameTruthfulness, DifferentRoles,
                              RoleParity, TruthParity, ExactlyOne)
STATEMENT_KINDS: tuple[str, ...] = tuple(c.kind for c in _CLASSES)
_BY_KIND: dict[str, type] = {c.kind: c for c in _CLASSES}
_TRUTH_KINDS = (TruthCount, SameTruthfulness, TruthParity)


def _referenced_truths(st: Statement) -> tuple[str, ...]:
    """Players whose truthfulness the statement talks about."""
    if isinstance(st, ExactlyOne):
        return tuple(n for p in st.parts for n in _referenced_truths(p))
    return st.players if isinstance(st, _TRUTH_KINDS) else ()


# --- puzzle -------------------------------------------------------------------------------------

@dataclass
class Puzzle:
    """Players in speaking order, one statement each, the game manager's hints, the solution.

    ``statements[i]`` is spoken by ``names[i]``. ``solution`` (name -> role) may be None for a
    puzzle read from elsewhere without one; ``generate`` always fills it with the unique
    solution. Construction validates the puzzle (ValueError naming the bad field).
    """
    names: list[str]
    statements: list[Statement]
    hints: list[Statement] = field(default_factory=list)
    solution: dict[str, str] | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        self.names = list(self.names)
        self.statements = list(self.statements)
        self.hints = list(self.hints)
        if self.solution is not None:
            self.solution = dict(self.solution)
        _validate(self)

    @property
    def text(self) -> str:
        """The game info as the paper's prompts show it (App. C.1)."""
        return puzzle_text(self)

    def statement_texts(self) -> list[str]:
        """Each player's statement in the puzzle language, in speaking order."""
        return [statement_text(st, speaker=n, players=self.names)
                for n, st in zip(self.names, self.statements)]

    def hint_text(self) -> str:
        return " ".join(statement_text(h, players=self.names) for h in self.hints)


def _member(value: Any, table: Mapping[Any, Any]) -> bool:
    """``value in table`` for any JSON value: a list or an object is never a key (no TypeError)."""
    return not isinstance(value, (list, dict, set)) and value in table


def _validate(p: Puzzle) -> None:
    if not isinstance(p.names, list) or not p.names:
        raise ValueError("players: must be a non-empty list of names")
    for i, n in enumerate(p.names):
        if not isinstance(n, str) or not n.strip():
            raise ValueError(f"players[{i}]: a player name must be a non-empty string, got {n!r}")
        if n != n.strip() or "\n" in n:
            raise ValueError(f"players[{i}]: name {n!r} has surrounding whitespace or a newline")
    if len(set(p.names)) != len(p.names):
        dup = next(n for n in p.names if p.names.count(n) > 1)
        raise ValueError(f"players: name {dup!r} appears more than once")
    if len(p.statements) != len(p.names):
        raise ValueError(f"statements: {len(p.statements)} statements for {len(p.names)} players; "
                         "each player makes exactly one statement")
    known = set(p.names)
    for i, st in enumerate(p.statements):
        earlier = set(p.names[:i])
        _check_statement(st, f"statements[{i}]", known, earlier, nested=False)
    for i, h in enumerate(p.hints):
        _check_statement(h, f"hints[{i}]", known, known, nested=False)
    if p.solution is not None:
        if set(p.solution) != known:
            missing = sorted(known - set(p.solution))
            extra = sorted(set(p.solution) - known)
            raise ValueError(f"solution: must give a role for every player "
                             f"(missing {missing}, unknown {extra})")
        for n, r in p.solution.items():
            if not _member(r, _ROLE_INDEX):
                raise ValueError(f"solution.{n}: role must be one of {list(ROLES)}, got {r!r}")
    if p.id is not None and not isinstance(p.id, str):
        raise ValueError(f"id: must be a string, got {type(p.id).__name__}")


def _check_statement(st: Any, where: str, known: set[str], earlier: set[str],
                     nested: bool) -> None:
    if not isinstance(st, _CLASSES):
        raise ValueError(f"{where}: not a statement ({type(st).__name__})")
    if isinstance(st, ExactlyOne):
        if nested:
            raise ValueError(f"{where}: exactly_one cannot contain another exactly_one")
        if not isinstance(st.parts, tuple) or len(st.parts) != 2:
            raise ValueError(f"{where}.statements: exactly_one needs exactly two statements")
        for j, part in enumerate(st.parts):
            _check_statement(part, f"{where}.statements[{j}]", known, earlier, nested=True)
        return
    players = st.players
    if not isinstance(players, tuple) or not players:
        raise ValueError(f"{where}.players: must be a non-empty list of player names")
    for j, n in enumerate(players):
        if n not in known:
            raise ValueError(f"{where}.players[{j}]: unknown player {n!r}")
    if len(set(players)) != len(players):
        raise ValueError(f"{where}.players: a player is named twice")
    if isinstance(st, (SameRole, SameTruthfulness, DifferentRoles)) and len(players) < 2:
        raise ValueError(f"{where}.players: {st.kind} needs at least two players")
    if isinstance(st, _TRUTH_KINDS):
        for j, n in enumerate(players):
            if n not in earlier:
                raise ValueError(f"{where}.players[{j}]: {st.kind} may only refer to players "
                                 f"who spoke earlier, not {n!r}")
    if isinstance(st, (RoleCount, RoleParity)) and not _member(st.role, _ROLE_INDEX):
        raise ValueError(f"{where}.role: must be one of {list(ROLES)}, got {st.role!r}")
    if isinstance(st, (TruthCount, TruthParity)) and st.truthfulness not in TRUTHFULNESS:
        raise ValueError(f"{where}.truthfulness: must be one of {list(TRUTHFULNESS)}, "
                         f"got {st.truthfulness!r}")
    if isinstance(st, (RoleParity, TruthParity)) and st.parity not in PARITIES:
        raise ValueError(f"{where}.parity: must be one of {list(PARITIES)}, got {st.parity!r}")
    if isinstance(st, (RoleCount, TruthCount)):
        if isinstance(st.count, bool) or not isinstance(st.count, int) \
                or not 0 <= st.count <= len(players):
            raise ValueError(f"{where}.count: must be an integer from 0 to {len(players)}, "
                             f"got {st.count!r}")


# --- evaluation ---------------------------------------------------------------------------------

_Eval = Callable[[Sequence[int], Sequence[Any]], bool]


def _getter(idx: tuple[int, ...]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """seq -> the tuple of seq's items at ``idx`` (a 1-tuple for one index)."""
    if len(idx) == 1:
        i = idx[0]
        return lambda seq: (seq[i],)
    return operator.itemgetter(*idx)


def _compile(st: Statement, index: Mapping[str, int]) -> _Eval:
    """A function (roles, truths) -> bool; roles are 0 knight / 1 knave / 2 spy by position,
    truths[i] is whether player i's statement is true (only earlier speakers are read)."""
    if isinstance(st, ExactlyOne):
        a, b = (_compile(p, index) for p in st.parts)
        return lambda R, T: a(R, T) != b(R, T)
    idx = tuple(index[n] for n in st.players)
    get = _getter(idx)
    if isinstance(st, RoleCount):
        r, c = _ROLE_INDEX[st.role], st.count
        return lambda R, T: get(R).count(r) == c
    if isinstance(st, TruthCount):
        want, c = st.truthfulness == "truthful", st.count
        return lambda R, T: get(T).count(want) == c
    if isinstance(st, SameRole):
        return lambda R, T: len(set(get(R))) == 1
    if isinstance(st, SameTruthfulness):
        return lambda R, T: len(set(get(T))) == 1
    if isinstance(st, DifferentRoles):
        return lambda R, T: len(set(get(R))) > 1
    if isinstance(st, RoleParity):
        r, odd = _ROLE_INDEX[st.role], int(st.parity == "odd")
        return lambda R, T: get(R).count(r) % 2 == odd
    if isinstance(st, TruthParity):
        want, odd = st.truthfulness == "truthful", int(st.parity == "odd")
        return lambda R, T: get(T).count(want) % 2 == odd
    raise ValueError(f"unknown statement {st!r}")  # pragma: no cover - _validate rejects these


def evaluate(statement: Statement, roles: Mapping[str, str],
             truthful: Mapping[str, bool] | None = None) -> bool:
    """Whether ``statement`` is true when players have ``roles`` and, for statements about
    truthfulness, the named players' statements are true/false as in ``truthful``."""
    names = list(roles)
    index = {n: i for i, n in enumerate(names)}
    for n in _referenced_truths(statement) + _all_players(statement):
        if n not in index:
            raise ValueError(f"evaluate: no role given for {n!r}")
    R = []
    for n in names:
        if not _member(roles[n], _ROLE_INDEX):
            raise ValueError(f"evaluate: role of {n!r} must be one of {list(ROLES)}")
        R.append(_ROLE_INDEX[roles[n]])
    T: list[Any] = [None] * len(names)
    for n in _referenced_truths(statement):
        if truthful is None or n not in truthful:
            raise ValueError(f"evaluate: the statement needs whether {n!r} is telling the truth")
        T[index[n]] = bool(truthful[n])
    return bool(_compile(statement, index)(R, T))


def _all_players(st: Statement) -> tuple[str, ...]:
    if isinstance(st, ExactlyOne):
        return tuple(n for p in st.parts for n in _all_players(p))
    return st.players


def _allowed(R: Sequence[int], t: bool, i: int) -> bool:
    r = R[i]
    return r == _SPY or (r == _KNIGHT) == t


def statement_truths(puzzle: Puzzle, assignment: Mapping[str, str]) -> list[bool]:
    """Whether each player's statement is true under ``assignment`` (speaking order)."""
    R = _roles_tuple(puzzle, assignment)
    index = {n: i for i, n in enumerate(puzzle.names)}
    T: list[bool] = []
    for st in puzzle.statements:
        T.append(_compile(st, index)(R, T))
    return T


def is_consistent(puzzle: Puzzle, assignment: Mapping[str, str]) -> bool:
    """Whether ``assignment`` satisfies every statement (by role) and every hint."""
    R = _roles_tuple(puzzle, assignment)
    index = {n: i for i, n in enumerate(puzzle.names)}
    T = statement_truths(puzzle, assignment)
    return all(_allowed(R, t, i) for i, t in enumerate(T)) and \
        all(_compile(h, index)(R, T) for h in puzzle.hints)


def _roles_tuple(puzzle: Puzzle, assignment: Mapping[str, str]) -> tuple[int, ...]:
    if set(assignment) != set(puzzle.names):
        raise ValueError("assignment: must give a role for every player of the puzzle")
    try:
        return tuple(_ROLE_INDEX[assignment[n]] for n in puzzle.names)
    except KeyError as exc:
        raise ValueError(f"assignment: roles must be one of {list(ROLES)}") from exc


# --- solver -------------------------------------------------------------------------------------

def _hint_filtered(n: int, role_hints: list[_Eval]) -> list[tuple[int, ...]]:
    empty: list[bool] = []
    return [R for R in itertools.product(range(3), repeat=n)
            if all(h(R, empty) for h in role_hints)]


def solve(puzzle: Puzzle, limit: int | None = None) -> list[dict[str, str]]:
    """Every assignment (name -> role) consistent with the statements and the hints.

    Brute force over all 3**n assignments: a knight's statement must be true, a knave's false,
    a spy's may be either; every hint must be true. Nothing else is assumed (no hint, no
    constraint on the number of spies). Order: assignments in lexicographic order of roles
    (knight < knave < spy) in speaking order. ``limit`` stops after that many assignments.
    """
    names = puzzle.names
    index = {n: i for i, n in enumerate(names)}
    fs = [_compile(st, index) for st in puzzle.statements]
    role_hints = [_compile(h, index) for h in puzzle.hints if not _referenced_truths(h)]
    truth_hints = [_compile(h, index) for h in puzzle.hints if _referenced_truths(h)]
    out: list[dict[str, str]] = []
    for R in _hint_filtered(len(names), role_hints):
        T: list[bool] = []
        for i, f in enumerate(fs):
            t = f(R, T)
            if not _allowed(R, t, i):
                break
            T.append(t)
        else:
            if all(h(R, T) for h in truth_hints):
                out.append({n: ROLES[r] for n, r in zip(names, R)})
                if limit is not None and len(out) >= limit:
                    break
    return out


def has_unique_solution(puzzle: Puzzle) -> bool:
    """Whether exactly one assignment is consistent (the check a puzzle for debate must pass)."""
    return len(solve(puzzle, limit=2)) == 1


# --- text ---------------------------------------------------------------------------------------

def _number(k: int) -> str:
    return _NUMBER_WORDS[k] if k < len(_NUMBER_WORDS) else str(k)


def _plural(role: str) -> str:
    return "spies" if role == "spy" else role + "s"


def _group(players: Sequence[str], speaker: str | None, all_players: Sequence[str] | None) -> str:
    """'Violet and I', 'Charlie, Eve, and I', 'all players'."""
    if all_players is not None and len(players) == len(all_players) > 1 \
            and set(players) == set(all_players):
        return "all players"
    items = [p for p in players if p != speaker]
    if speaker is not None and speaker in players:
        items.append("I")
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    return ", ".join(items[:-1]) + ", and " + items[-1]


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def statement_text(statement: Statement, speaker: str | None = None,
                   players: Sequence[str] | None = None) -> str:
    """The statement in the puzzle language of the paper.

    ``speaker`` turns the speaker's own name into "I"; ``players`` (all players of the puzzle)
    lets a group of everyone read "all players". Without them names are written out.
    """
    st = statement
    if isinstance(st, ExactlyOne):
        a, b = (statement_text(p, speaker, players) for p in st.parts)
        return f"Among the following two statements, exactly one is true: (1) {a} (2) {b}"
    g = _group(st.players, speaker, players)
    single = len(st.players) == 1
    is_i = single and st.players[0] == speaker
    be = "am" if is_i else "is"
    if isinstance(st, RoleCount):
        role, c = st.role, st.count
        if single:
            return f"{_cap(g)} {be} {'not ' if c == 0 else ''}a {role}."
        if c == len(st.players):
            if g == "all players":
                return f"All players are {_plural(role)}."
            both = "both" if c == 2 else "all"
            return f"{_cap(g)} are {both} {_plural(role)}."
        if c == 0:
            return f"Among {g}, there are no {_plural(role)}."
        if c == 1:
            return f"Among {g}, there is exactly one {role}."
        return f"Among {g}, there are exactly {_number(c)} {_plural(role)}."
    if isinstance(st, TruthCount):
        what = "telling the truth" if st.truthfulness == "truthful" else "lying"
        c = st.count
        if single:
            return f"{_cap(g)} {be} {'not ' if c == 0 else ''}{what}."
        if c == len(st.players):
            if g == "all players":
                return f"All players are {what}."
            both = "both" if c == 2 else "all"
            return f"{_cap(g)} are {both} {what}."
        if c == 0:
            return f"Among {g}, no one is {what}."
        if c == 1:
            return f"Among {g}, exactly one person is {what}."
        return f"Among {g}, exactly {_number(c)} people are {what}."
    if isinstance(st, SameRole):
        return f"{_cap(g)} {'have' if len(st.players) == 2 else 'all have'} the same role."
    if isinstance(st, SameTruthfulness):
        w = "both" if len(st.players) == 2 else "all"
        return f"{_cap(g)} are either {w} telling the truth or {w} lying."
    if isinstance(st, DifferentRoles):
        if len(st.players) == 2:
            return f"{_cap(g)} have different roles."
        return f"{_cap(g)} do not all have the same role."
    if isinstance(st, RoleParity):
        return f"Among {g}, the number of {_plural(st.role)} is {st.parity}."
    if isinstance(st, TruthParity):
        what = "telling the truth" if st.truthfulness == "truthful" else "lying"
        return f"Among {g}, the number of people who are {what} is {st.parity}."
    raise ValueError(f"unknown statement {st!r}")  # pragma: no cover


def puzzle_text(puzzle: Puzzle) -> str:
    """The game info block of the paper's prompts: each player's name and statement, then the
    game manager's message."""
    lines: list[str] = []
    for name, text in zip(puzzle.names, puzzle.statement_texts()):
        lines += ["---", f"Player name: {name}", f"Player statement: {text}"]
    lines.append("---")
    if puzzle.hints:
        lead = "here is a hint for you" if len(puzzle.hints) == 1 else "here are some hints for you"
        lines.append(f"Message from the game manager: I am the game manager and {lead}: "
                     f"{puzzle.hint_text()}")
    else:
        lines.append("Message from the game manager: I have no hint for you.")
    return "\n".join(lines) + "\n"


# --- JSON ---------------------------------------------------------------------------------------

def _statement_json(st: Statement, speaker: str | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if speaker is not None:
        d["speaker"] = speaker
    d["kind"] = st.kind
    if isinstance(st, ExactlyOne):
        d["statements"] = [_statement_json(p) for p in st.parts]
        return d
    d["players"] = list(st.players)
    for attr in ("role", "truthfulness", "count", "parity"):
        if hasattr(st, attr):
            d[attr] = getattr(st, attr)
    return d


def to_json(puzzle: Puzzle) -> dict[str, Any]:
    """The puzzle as a JSON-ready dict in the format of the module docstring."""
    d: dict[str, Any] = {"format": FORMAT}
    if puzzle.id is not None:
        d["id"] = puzzle.id
    d["players"] = list(puzzle.names)
    d["statements"] = [_statement_json(st, n) for n, st in zip(puzzle.names, puzzle.statements)]
    d["hints"] = [_statement_json(h) for h in puzzle.hints]
    if puzzle.solution is not None:
        d["solution"] = {n: puzzle.solution[n] for n in puzzle.names}
    return d


_FIELDS: dict[str, tuple[str, ...]] = {
    "role_count": ("players", "role", "count"),
    "truth_count": ("players", "truthfulness", "count"),
    "same_role": ("players",),
    "same_truthfulness": ("players",),
    "different_roles": ("players",),
    "role_parity": ("players", "role", "parity"),
    "truth_parity": ("players", "truthfulness", "parity"),
    "exactly_one": ("statements",),
}


def _parse_statement(d: Any, where: str, names: list[str], nested: bool,
                     speaker: str | None) -> Statement:
    if not isinstance(d, dict):
        raise ValueError(f"{where}: must be an object, got {type(d).__name__}")
    kind = d.get("kind")
    if not _member(kind, _FIELDS):
        raise ValueError(f"{where}.kind: must be one of {list(STATEMENT_KINDS)}, got {kind!r}")
    allowed = set(_FIELDS[kind]) | {"kind"} | ({"speaker"} if speaker is not None else set())
    for key in d:
        if key not in allowed:
            raise ValueError(f"{where}.{key}: unexpected field for kind {kind!r} "
                             f"(expected {sorted(allowed)})")
    for key in _FIELDS[kind]:
        if key not in d:
            raise ValueError(f"{where}.{key}: missing (kind {kind!r} needs {list(_FIELDS[kind])})")
    if speaker is not None and d.get("speaker") != speaker:
        raise ValueError(f"{where}.speaker: expected {speaker!r} (statements follow the order "
                         f"of players), got {d.get('speaker')!r}")
    if kind == "exactly_one":
        if nested:
            raise ValueError(f"{where}.kind: exactly_one cannot contain another exactly_one")
        parts = d["statements"]
        if not isinstance(parts, list) or len(parts) != 2:
            raise ValueError(f"{where}.statements: must be a list of exactly two statements")
        return ExactlyOne(tuple(_parse_statement(p, f"{where}.statements[{j}]", names, True, None)
                                for j, p in enumerate(parts)))  # type: ignore[arg-type]
    players = d["players"]
    if players == "all":
        players = list(names)
    if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
        raise ValueError(f'{where}.players: must be a list of player names or "all"')
    kw: dict[str, Any] = {"players": tuple(players)}
    for key in _FIELDS[kind][1:]:
        val = d[key]
        if key == "count":
            if isinstance(val, bool) or not isinstance(val, int):
                raise ValueError(f"{where}.count: must be an integer, got {val!r}")
        elif not isinstance(val, str):
            raise ValueError(f"{where}.{key}: must be a string, got {val!r}")
        kw[key] = val
    return _BY_KIND[kind](**kw)


def from_json(data: Any) -> Puzzle:
    """A ``Puzzle`` from the JSON format of the module docstring (a dict, as ``json.loads``
    gives). Raises ValueError naming the bad field; never evaluates any text."""
    if not isinstance(data, dict):
        raise ValueError(f"puzzle: must be a JSON object, got {type(data).__name__}")
    allowed = {"format", "id", "players", "statements", "hints", "solution"}
    for key in data:
        if key not in allowed:
            raise ValueError(f"{key}: unexpected field (expected {sorted(allowed)})")
    if "format" in data and data["format"] != FORMAT:
        raise ValueError(f"format: must be {FORMAT!r}, got {data['format']!r}")
    for key in ("players", "statements"):
        if key not in data:
            raise ValueError(f"{key}: missing")
    names = data["players"]
    if not isinstance(names, list) or not names:
        raise ValueError("players: must be a non-empty list of names")
    for i, n in enumerate(names):
        if not isinstance(n, str) or not n.strip():
            raise ValueError(f"players[{i}]: a player name must be a non-empty string, got {n!r}")
    stmts = data["statements"]
    if not isinstance(stmts, list):
        raise ValueError("statements: must be a list")
    if len(stmts) != len(names):
        raise ValueError(f"statements: {len(stmts)} statements for {len(names)} players; "
                         "each player makes exactly one statement")
    hints = data.get("hints", [])
    if not isinstance(hints, list):
        raise ValueError("hints: must be a list")
    solution = data.get("solution")
    if solution is not None and not isinstance(solution, dict):
        raise ValueError("solution: must be an object mapping each player to a role")
    pid = data.get("id")
    if pid is not None and not isinstance(pid, str):
        raise ValueError(f"id: must be a string, got {pid!r}")
    statements = [_parse_statement(s, f"statements[{i}]", names, False, names[i])
                  for i, s in enumerate(stmts)]
    parsed_hints = [_parse_statement(h, f"hints[{i}]", names, False, None)
                    for i, h in enumerate(hints)]
    return Puzzle(names=list(names), statements=statements, hints=parsed_hints,
                  solution=solution, id=pid)


# --- the paper's released set -------------------------------------------------------------------

_CM_ROLE = {1: "knight", 2: "knave", 3: "spy"}
_CM_TF = {1: "truthful", 2: "lying"}
_CM_EO = {1: "odd", 2: "even"}


def _cm_statement(schema: Any, raw: Any, names: list[str], where: str) -> Statement:
    def group(v: Any) -> tuple[str, ...]:
        if not isinstance(v, list) or not all(isinstance(i, int) and 0 <= i < len(names)
                                              for i in v):
            raise ValueError(f"{where}: player indices must be integers below {len(names)}")
        return tuple(names[i] for i in v)

    def code(table: dict[int, str], v: Any, what: str) -> str:
        if isinstance(v, bool) or not _member(v, table):
            raise ValueError(f"{where}: bad {what} code {v!r}")
        return table[v]

    if not isinstance(schema, int) or isinstance(schema, bool) or not 1 <= schema <= 15:
        raise ValueError(f"{where}: schema must be an integer from 1 to 15, got {schema!r}")
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: statement must be a non-empty list")
    try:
        if schema <= 3:
            return RoleCount(group(raw[0]), code(_CM_ROLE, raw[2], "role"), raw[1])
        if schema <= 5:
            return TruthCount(group(raw[0]), code(_CM_TF, raw[2], "truthfulness"), raw[1])
        if schema <= 7:
            return SameRole(group(raw[0]))
        if schema <= 9:
            return SameTruthfulness(group(raw[0]))
        if schema == 10:
            return DifferentRoles(group(raw[0]))
        if schema <= 12:
            return RoleParity(group(raw[0]), code(_CM_ROLE, raw[1], "role"),
                              code(_CM_EO, raw[2], "parity"))
        if schema <= 14:
            return TruthParity(group(raw[0]), code(_CM_TF, raw[1], "truthfulness"),
                               code(_CM_EO, raw[2], "parity"))
        parts = tuple(_cm_statement(p[0], p[1], names, f"{where}.part[{j}]")
                      for j, p in enumerate(raw))
        if len(parts) != 2:
            raise ValueError(f"{where}: schema 15 needs exactly two parts")
        return ExactlyOne(parts)  # type: ignore[arg-type]
    except (IndexError, KeyError, TypeError) as exc:
        raise ValueError(f"{where}: malformed statement {raw!r} for schema {schema}") from exc


def from_controlmad(record: Mapping[str, Any]) -> Puzzle:
    """Convert one record (one line of ``groundtruth/<n>.jsonl``) of the paper's released set.

    Players are read in order from ``text_game`` ("Player name: ..."); ``raw_schema`` /
    ``raw_statement`` hold one entry per player followed by the game manager's hints;
    ``raw_solution`` codes roles 1 knight, 2 knave, 3 spy; parity codes are 1 odd, 2 even.
    """
    if not isinstance(record, Mapping):
        raise ValueError("record: must be an object")
    for key in ("text_game", "raw_schema", "raw_statement"):
        if key not in record:
            raise ValueError(f"{key}: missing")
    if not isinstance(record["text_game"], str):
        raise ValueError("text_game: must be a string")
    names = re.findall(r"^Player name: (.+?)\s*$", record["text_game"], flags=re.M)
    n = record.get("num_player", len(names))
    if not names or len(names) != n:
        raise ValueError(f"text_game: found {len(names)} player names, num_player says {n}")
    schemas, raws = record["raw_schema"], record["raw_statement"]
    if not isinstance(schemas, list) or not isinstance(raws, list) or len(schemas) != len(raws) \
            or len(raws) < len(names):
        raise ValueError("raw_statement: must be a list aligned with raw_schema, one entry per "
                         "player followed by the hints")
    stmts = [_cm_statement(s, r, names, f"raw_statement[{i}]")
             for i, (s, r) in enumerate(zip(schemas, raws))]
    solution = None
    if record.get("raw_solution") is not None:
        rs = record["raw_solution"]
        if not isinstance(rs, list) or len(rs) != len(names) or any(isinstance(v, bool) or not _member(v, _CM_ROLE) for v in rs):
            raise ValueError("raw_solution: must list one role code (1, 2, 3) per player")
        solution = {nm: _CM_ROLE[v] for nm, v in zip(names, rs)}
    pid = f"{len(names)}-{record['game_id']}" if "game_id" in record else None
    return Puzzle(names=names, statements=stmts[:len(names)], hints=stmts[len(names):],
                  solution=solution, id=pid)


# --- generator ----------------------------------------------------------------------------------

# Two ways to generate (``method``):
#   "default"  ours: a hidden solution first, then statements that solution allows, keeping the
#              more constraining of two draws (its sets lean to knights and to other statement
#              kinds, measurably unlike the released set: tests/unit/test_kks_methods.py).
#   "authors"  the authors' (ControlMAD utils/generator.py + utils/groundTruth.py,
#              generate_ground_truth): every statement drawn at random with no solution in mind,
#              the whole puzzle solved, and kept only when exactly one assignment is consistent
#              (rejection sampling, at most ``max_attempts`` puzzles drawn).
GENERATION_METHODS: tuple[str, ...] = ("default", "authors")
MAX_EXTRA_HINTS = 10

# Kinds drawn with the weights of the paper's generator (its schema numbers 1-15 are drawn
# uniformly, and several numbers share one kind).
_KIND_WEIGHTS: tuple[tuple[str, int], ...] = (
    ("role_count", 3), ("truth_count", 2), ("same_role", 2), ("same_truthfulness", 2),
    ("different_roles", 1), ("role_parity", 2), ("truth_parity", 2), ("exactly_one", 1),
)
# Extra game-manager hints as the authors' generator draws them (ControlMAD utils/generator.py,
# generate_single_game_abstract, ``num_hint``): after the hint on the number of spies, each
# extra hint is of a schema drawn uniformly from 1-10 (role_count 1-3, truth_count 4-5,
# same_role 6-7, same_truthfulness 8-9, different_roles 10; never a parity or an exactly_one),
# with the arguments a player's statement of that schema gets, except that hints about
# truthfulness may name every player (the authors draw them as an extra speaker after the
# last); a count of spies among all players is drawn again (the first hint already gives it).
_HINT_KIND_WEIGHTS: tuple[tuple[str, int], ...] = (
    ("role_count", 3), ("truth_count", 2), ("same_role", 2), ("same_truthfulness", 2),
    ("different_roles", 1),
)
_CANDIDATES = 2  # statements the role allows, drawn per speaker; the most informative is kept
_LAST_CANDIDATES = 40
_MAX_DRAWS = 200
_DEFAULT_MAX_ATTEMPTS = {"default": 1000, "authors": 2000}
# Fewest earlier speakers a kind needs (statements about truthfulness name earlier speakers).
_MIN_EARLIER = {"truth_count": 1, "same_truthfulness": 2, "truth_parity": 3}

_Drawn = tuple[list[Statement], list[Statement], tuple[int, ...]]  # statements, extra hints, solution
_Live = list[tuple[tuple[int, ...], list[bool]]]  # consistent (roles, truths so far) pairs


def _draw_kind(rng: random.Random, i: int, allow_xor: bool,
               weights: tuple[tuple[str, int], ...] = _KIND_WEIGHTS) -> str:
    kinds = [(k, w) for k, w in weights
             if i >= _MIN_EARLIER.get(k, 0) and (allow_xor or k != "exactly_one")]
    return rng.choices([k for k, _ in kinds], weights=[w for _, w in kinds])[0]


def _draw_statement(rng: random.Random, names: list[str], i: int, n_spies: int,
                    allow_xor: bool = True, *, kind: str | None = None,
                    distinct_parts: bool = True) -> Statement:
    """A random statement for speaker ``i`` (``i == len(names)``: a hint, after every speaker).
    ``distinct_parts=False`` lets an exactly_one repeat a part, as the authors' generator does."""
    n = len(names)
    kind = kind or _draw_kind(rng, i, allow_xor)
    earlier = names[:i]
    if kind == "role_count":
        group = tuple(rng.sample(names, rng.randint(1, n)))
        role = rng.choice(ROLES if n_spies > 0 else ROLES[:2])
        top = min(n_spies, len(group)) if role == "spy" else len(group)
        return RoleCount(group, role, rng.randint(1, top))
    if kind == "truth_count":
        group = tuple(rng.sample(earlier, rng.randint(1, i)))
        return TruthCount(group, rng.choice(TRUTHFULNESS), rng.randint(1, len(group)))
    if kind == "same_role":
        return SameRole(tuple(rng.sample(names, rng.randint(2, n - 1))))
    if kind == "same_truthfulness":
        return SameTruthfulness(tuple(rng.sample(earlier, rng.randint(2, i))))
    if kind == "different_roles":
        return DifferentRoles(tuple(rng.sample(names, rng.randint(2, n))))
    if kind == "role_parity":
        return RoleParity(tuple(rng.sample(names, rng.randint(3, n))), rng.choice(ROLES),
                          rng.choice(PARITIES))
    if kind == "truth_parity":
        return TruthParity(tuple(rng.sample(earlier, rng.randint(3, i))),
                           rng.choice(TRUTHFULNESS), rng.choice(PARITIES))
    a = _draw_statement(rng, names, i, n_spies, allow_xor=False)
    b = _draw_statement(rng, names, i, n_spies, allow_xor=False)
    while distinct_parts and b == a:
        b = _draw_statement(rng, names, i, n_spies, allow_xor=False)
    return ExactlyOne((a, b))


def _draw_hint(rng: random.Random, names: list[str], n_spies: int) -> Statement:
    """One extra game-manager hint, drawn as the authors' generator draws it (_HINT_KIND_WEIGHTS)."""
    n = len(names)
    kind = _draw_kind(rng, n, False, _HINT_KIND_WEIGHTS)
    while True:  # ends: a group smaller than all players comes with probability at least 2/3
        hint = _draw_statement(rng, names, n, n_spies, kind=kind)
        if not (isinstance(hint, RoleCount) and hint.role == "spy" and len(hint.players) == n):
            return hint


def _keep_allowed(live: _Live, f: _Eval, i: int) -> _Live:
    """The assignments of ``live`` under which speaker ``i``'s statement ``f`` fits their role."""
    out = []
    for R, T in live:
        t = f(R, T)
        if _allowed(R, t, i):
            out.append((R, T + [t]))
    return out


def _authors_draw(rng: random.Random, names: list[str], index: dict[str, int],
                  base: list[tuple[int, ...]], n_spies: int, extra_hints: int) -> _Drawn | None:
    """One puzzle drawn the authors' way: every statement and hint at random, no solution in mind.
    None unless exactly one assignment is consistent. Stopping as soon as none is left keeps the
    accepted puzzles distributed exactly as when every draw is completed and then solved."""
    live: _Live = [(R, []) for R in base]
    statements: list[Statement] = []
    for i in range(len(names)):
        st = _draw_statement(rng, names, i, n_spies, distinct_parts=False)
        live = _keep_allowed(live, _compile(st, index), i)
        if not live:
            return None
        statements.append(st)
    hints = [_draw_hint(rng, names, n_spies) for _ in range(extra_hints)]
    for h in hints:
        f = _compile(h, index)
        live = [(R, T) for R, T in live if f(R, T)]
    return (statements, hints, live[0][0]) if len(live) == 1 else None


def _true_hints(rng: random.Random, names: list[str], index: dict[str, int], n_spies: int,
                secret: tuple[int, ...], truths: list[bool], k: int) -> list[Statement] | None:
    """``k`` extra hints drawn as the authors draw them, each redrawn until true of ``secret``."""
    hints: list[Statement] = []
    for _ in range(k):
        for _tries in range(_MAX_DRAWS):
            h = _draw_hint(rng, names, n_spies)
            if _compile(h, index)(secret, truths):
                hints.append(h)
                break
        else:  # pragma: no cover - about one random hint in three is true
            return None
    return hints


def _default_draw(rng: random.Random, names: list[str], index: dict[str, int],
                  base: list[tuple[int, ...]], n_spies: int, extra_hints: int) -> _Drawn | None:
    """One attempt of our generator (see ``generate``); None when it does not end unique."""
    n_players = len(names)
    spies = set(rng.sample(range(n_players), n_spies))
    secret = tuple(_SPY if i in spies else rng.choice((_KNIGHT, _KNAVE)) for i in range(n_players))
    secret_truths: list[bool] = []
    statements: list[Statement] = []
    live: _Live = [(R, []) for R in base]
    for i in range(n_players):
        best: tuple[Statement, bool, _Live] | None = None
        drawn = 0
        for _tries in range(_MAX_DRAWS):
            st = _draw_statement(rng, names, i, n_spies)
            f = _compile(st, index)
            t = f(secret, secret_truths)
            if not _allowed(secret, t, i):
                continue
            nxt = _keep_allowed(live, f, i)
            if best is None or len(nxt) < len(best[2]):
                best = (st, t, nxt)
            drawn += 1
            # The last speaker keeps drawing until the puzzle is unique (or draws run out).
            if drawn >= _CANDIDATES and (i < n_players - 1 or len(best[2]) == 1
                                         or drawn >= _LAST_CANDIDATES):
                break
        if best is None:  # pragma: no cover - true and false statements are easy to draw
            return None
        statements.append(best[0])
        secret_truths.append(best[1])
        live = best[2]
    if len(live) != 1:
        return None
    assert live[0][0] == secret
    # Extra hints come after the statements, true of the hidden solution: they add information
    # without changing the puzzle's statements or its solution.
    hints = _true_hints(rng, names, index, n_spies, secret, secret_truths, extra_hints)
    return None if hints is None else (statements, hints, secret)


def _check_generate_args(n_players: Any, seed: Any, n_spies: Any, max_attempts: Any,
                         method: Any, extra_hints: Any) -> None:
    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if not is_int(n_players) or not MIN_PLAYERS <= n_players <= MAX_PLAYERS:
        raise ValueError(f"n_players: must be an integer from {MIN_PLAYERS} to {MAX_PLAYERS}, "
                         f"got {n_players!r}")
    if not is_int(seed):
        raise ValueError(f"seed: must be an integer, got {seed!r}")
    if not is_int(n_spies) or not 0 <= n_spies <= n_players:
        raise ValueError(f"n_spies: must be an integer from 0 to {n_players}, got {n_spies!r}")
    if max_attempts is not None and (not is_int(max_attempts) or max_attempts < 0):
        raise ValueError(f"max_attempts: must be a non-negative integer, got {max_attempts!r}")
    if not _member(method, dict.fromkeys(GENERATION_METHODS)):
        raise ValueError(f"method: must be one of {list(GENERATION_METHODS)}, got {method!r}")
    if not is_int(extra_hints) or not 0 <= extra_hints <= MAX_EXTRA_HINTS:
        raise ValueError(f"extra_hints: must be an integer from 0 to {MAX_EXTRA_HINTS}, "
                         f"got {extra_hints!r}")


def generate(n_players: int, seed: int, *, n_spies: int = 1, max_attempts: int | None = None,
             method: str = "default", extra_hints: int = 0) -> Puzzle:
    """A puzzle of ``n_players`` (3-9) with exactly one solution, the same for the same arguments.

    As in the paper, the game manager's first hint is the number of spies among all players
    (one by default); ``extra_hints`` (0-10) more follow, drawn as the authors' generator draws
    them (_HINT_KIND_WEIGHTS).

    ``method="default"`` (ours): each attempt draws a hidden role assignment and, speaker by
    speaker, random statements of the paper's kinds (with the weights of its generator) that
    the speaker's role allows (true for a knight, false for a knave, either for a spy); of two
    such draws the one leaving fewer consistent assignments is kept, and the last speaker draws
    up to 40 until exactly one is left. Extra hints are then drawn true of the hidden solution.
    ``max_attempts`` defaults to 1000 attempts.

    ``method="authors"`` (ControlMAD's): statements and extra hints are all drawn at random
    with no solution in mind, and the puzzle is kept only when exactly one assignment is
    consistent; ``max_attempts`` (default 2000) bounds the puzzles drawn. About 1 draw in 9 is
    unique for 3 players and 1 in 40 for 6-9 with one spy (about 0.4 s for 9 players); with two
    or more spies among 5 or more players hardly any is (1 in 1,000 for 5 players, none seen
    for 7), and the bound is hit. Extra hints drawn at random can make a draw unique or
    contradictory.

    Raises ValueError naming the argument on bad input, and when ``max_attempts`` is spent.
    """
    _check_generate_args(n_players, seed, n_spies, max_attempts, method, extra_hints)
    attempts = _DEFAULT_MAX_ATTEMPTS[method] if max_attempts is None else max_attempts
    stream = "kks" if method == "default" else f"kks/{method}"
    rng = random.Random(f"{stream}/{n_players}/{n_spies}/{seed}")
    names = rng.sample(NAME_POOL, n_players)
    index = {nm: i for i, nm in enumerate(names)}
    hint = RoleCount(tuple(names), "spy", n_spies)
    base = _hint_filtered(n_players, [_compile(hint, index)])
    draw = _authors_draw if method == "authors" else _default_draw
    for _ in range(attempts):
        drawn = draw(rng, names, index, base, n_spies, extra_hints)
        if drawn is not None:
            statements, extra, secret = drawn
            suffix = ("" if method == "default" else f"-{method}") + \
                (f"-{extra_hints}hints" if extra_hints else "")
            return Puzzle(names=names, statements=statements, hints=[hint, *extra],
                          solution={nm: ROLES[r] for nm, r in zip(names, secret)},
                          id=f"gen-{n_players}-{seed}{suffix}")
    how = "attempts" if method == "default" else "puzzles drawn at random (method 'authors')"
    raise ValueError(f"generate: no puzzle with exactly one solution for n_players={n_players}, "
                     f"seed={seed}, n_spies={n_spies}, extra_hints={extra_hints} within "
                     f"max_attempts={attempts} {how}; raise max_attempts or try another seed")


if __name__ == "__main__":  # python -m mad_core.tasks.kks: the command is kks_cli's, which
    # imports this module; run as a script, never imported, so the library needs no command.
    runpy.run_module("mad_core.tasks.kks_cli", run_name="__main__", alter_sys=True)
