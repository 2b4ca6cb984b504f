"""Knight-Knave-Spy puzzles (mad_core.tasks.kks): semantics, exact solver, generator, JSON."""
import collections
import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mad_core.tasks import kks
from mad_core.tasks.generated import generated_items
from mad_core.tasks.kks import (
    DifferentRoles,
    ExactlyOne,
    Puzzle,
    RoleCount,
    RoleParity,
    SameRole,
    SameTruthfulness,
    TruthCount,
    TruthParity,
)

ROOT = Path(__file__).resolve().parents[2]

# The paper's example (§3; game 4-1 of its released set) in our JSON format.
PAPER_EXAMPLE = {
    "format": "kks/1",
    "id": "4-1",
    "players": ["Rachel", "Violet", "Olivia", "Peter"],
    "statements": [
        {"speaker": "Rachel", "kind": "same_role", "players": ["Violet", "Rachel"]},
        {"speaker": "Violet", "kind": "truth_count", "players": ["Rachel"],
         "truthfulness": "truthful", "count": 1},
        {"speaker": "Olivia", "kind": "truth_count", "players": ["Violet", "Rachel"],
         "truthfulness": "truthful", "count": 1},
        {"speaker": "Peter", "kind": "exactly_one", "statements": [
            {"kind": "role_parity", "players": "all", "role": "knave", "parity": "even"},
            {"kind": "truth_parity", "players": ["Rachel", "Violet", "Olivia"],
             "truthfulness": "lying", "parity": "odd"}]},
    ],
    "hints": [{"kind": "role_count", "players": "all", "role": "spy", "count": 1}],
    "solution": {"Rachel": "knight", "Violet": "knight", "Olivia": "knave", "Peter": "spy"},
}

# Records of the paper's released set (haolun-wu/ControlMAD groundtruth/4.jsonl game 1 and
# 9.jsonl game 1), the fields the converter reads; text_game reduced to the player names.
def _cm_record(game_id, names, schema, statement, solution):
    text = "".join(f"---\nPlayer name: {n}\nPlayer statement: ...\n" for n in names)
    return {"game_id": game_id, "num_player": len(names), "num_spy": 1, "num_hint": 0,
            "raw_schema": schema, "raw_statement": statement, "raw_solution": solution,
            "text_game": text}


CM_4_1 = _cm_record(
    1, ["Rachel", "Violet", "Olivia", "Peter"], [6, 4, 5, 15, 1],
    [[[0, 1]], [[0], 1, 1], [[1, 0], 1, 1],
     [[11, [[3, 2, 1, 0], 2, 2]], [13, [[0, 1, 2], 2, 1]]], [[0, 1, 2, 3], 1, 3]],
    [1, 1, 2, 3])
CM_9_1 = _cm_record(
    1, ["Jack", "Uma", "David", "Zane", "Xavier", "Hank", "Wendy", "Peter", "Charlie"],
    [2, 3, 12, 4, 9, 13, 4, 15, 5, 1],
    [[[7, 1, 3, 4, 5], 3, 1], [[3, 8, 1, 2, 5, 7, 6, 4, 0], 1, 3],
     [[4, 2, 8, 5, 3, 0, 7, 1, 6], 1, 2], [[2], 1, 1], [[2, 0]], [[4, 3, 1], 1, 1],
     [[1], 1, 2], [[4, [[1, 5, 4], 2, 2]], [1, [[7, 5, 4], 1, 3]]],
     [[6, 2, 5, 4, 7, 3, 0, 1], 1, 1], [[0, 1, 2, 3, 4, 5, 6, 7, 8], 1, 3]],
    [2, 3, 2, 2, 1, 2, 2, 2, 2])

SPY_HINT = RoleCount(("Alice", "Bob", "Carol"), "spy", 1)


def _hand_unique():
    """Alice: "I am a knave." (only a spy can say it) / Bob: "Alice is a spy." /
    Carol: "Bob is lying." With one spy: Alice spy, Bob knight, Carol knave."""
    return Puzzle(names=["Alice", "Bob", "Carol"],
                  statements=[RoleCount(("Alice",), "knave", 1),
                              RoleCount(("Alice",), "spy", 1),
                              TruthCount(("Bob",), "lying", 1)],
                  hints=[SPY_HINT])


def _hand_two_solutions():
    """Alice: "Bob is a knight." / Bob: "Alice is a knight." / Carol: "I am a knave."
    Carol is the spy; Alice and Bob are both knights or both knaves."""
    return Puzzle(names=["Alice", "Bob", "Carol"],
                  statements=[RoleCount(("Bob",), "knight", 1),
                              RoleCount(("Alice",), "knight", 1),
                              RoleCount(("Carol",), "knave", 1)],
                  hints=[SPY_HINT])


# --- the paper's puzzles ------------------------------------------------------------------------

def test_paper_example_solves_to_the_papers_solution():
    p = kks.from_json(PAPER_EXAMPLE)
    assert kks.solve(p) == [PAPER_EXAMPLE["solution"]]
    assert kks.has_unique_solution(p)
    assert p.names == ["Rachel", "Violet", "Olivia", "Peter"]


def test_paper_example_text_reads_like_the_paper():
    text = kks.from_json(PAPER_EXAMPLE).text
    assert "Player name: Rachel\nPlayer statement: Violet and I have the same role.\n" in text
    assert "Player statement: Rachel is telling the truth.\n" in text
    assert ("Player statement: Among Violet and Rachel, exactly one person is telling the "
            "truth.\n") in text
    assert ("Player statement: Among the following two statements, exactly one is true: "
            "(1) Among all players, the number of knaves is even. (2) Among Rachel, Violet, and "
            "Olivia, the number of people who are lying is odd.\n") in text
    assert text.rstrip().endswith("Message from the game manager: I am the game manager and "
                                  "here is a hint for you: Among all players, there is exactly "
                                  "one spy.")
    assert text.startswith("---\nPlayer name: Rachel\n")
    assert "is a knight" not in text and "is a spy" not in text  # the solution is not given


@pytest.mark.parametrize("record", [CM_4_1, CM_9_1], ids=["4-1", "9-1"])
def test_released_set_records_convert_and_solve_to_their_solution(record):
    p = kks.from_controlmad(record)
    assert p.id == f"{record['num_player']}-1"
    assert len(p.statements) == record["num_player"] and len(p.hints) == 1
    assert kks.solve(p) == [p.solution]


def test_released_record_converts_to_the_paper_example():
    p = kks.from_controlmad(CM_4_1)
    example = kks.from_json(PAPER_EXAMPLE)
    assert p.text == example.text and p.solution == example.solution
    assert [st.kind for st in p.statements] == [st.kind for st in example.statements]


@pytest.mark.parametrize("mutate, field", [
    (lambda r: r.pop("raw_schema"), "raw_schema"),
    (lambda r: r.update(text_game="no names here"), "text_game"),
    (lambda r: r["raw_statement"][0].__setitem__(0, [0, 7]), "raw_statement[0]"),
    (lambda r: r["raw_schema"].__setitem__(1, 16), "raw_statement[1]"),
    (lambda r: r["raw_statement"][2].__setitem__(2, 9), "raw_statement[2]"),
    (lambda r: r.update(raw_solution=[1, 1, 2]), "raw_solution"),
])
def test_bad_released_records_raise_naming_the_field(mutate, field):
    record = copy.deepcopy(CM_4_1)
    mutate(record)
    with pytest.raises(ValueError, match=re.escape(field)):
        kks.from_controlmad(record)


# --- solver on hand-made puzzles -----------------------------------------------------------------

def test_hand_made_unique_puzzle():
    p = _hand_unique()
    assert kks.solve(p) == [{"Alice": "spy", "Bob": "knight", "Carol": "knave"}]
    assert kks.has_unique_solution(p)
    assert kks.statement_truths(p, {"Alice": "spy", "Bob": "knight", "Carol": "knave"}) == \
        [False, True, False]


def test_hand_made_puzzle_with_two_solutions_returns_both_and_is_rejected():
    p = _hand_two_solutions()
    assert kks.solve(p) == [{"Alice": "knight", "Bob": "knight", "Carol": "spy"},
                            {"Alice": "knave", "Bob": "knave", "Carol": "spy"}]
    assert not kks.has_unique_solution(p)
    assert kks.solve(p, limit=1) == [{"Alice": "knight", "Bob": "knight", "Carol": "spy"}]


def test_solver_assumes_nothing_without_hints():
    p = _hand_unique()
    p.hints = []
    # Alice can only be a spy; Bob's statement is true (knight or spy); Carol's false.
    got = kks.solve(p)
    assert sorted((s["Bob"], s["Carol"]) for s in got) == \
        [("knight", "knave"), ("knight", "spy"), ("spy", "knave"), ("spy", "spy")]
    assert all(s["Alice"] == "spy" for s in got)


def test_hint_about_truthfulness_is_checked_after_the_statements():
    p = _hand_two_solutions()
    p.hints = [SPY_HINT, TruthCount(("Alice",), "truthful", 1)]
    assert kks.solve(p) == [{"Alice": "knight", "Bob": "knight", "Carol": "spy"}]


def test_solve_agrees_with_is_consistent_over_every_assignment():
    import itertools
    p = kks.from_json(PAPER_EXAMPLE)
    every = [dict(zip(p.names, roles)) for roles in itertools.product(kks.ROLES, repeat=4)]
    assert [a for a in every if kks.is_consistent(p, a)] == kks.solve(p)


# --- statement semantics -------------------------------------------------------------------------

ROLES = {"A": "knight", "B": "knave", "C": "spy", "D": "knave"}
TRUTHFUL = {"A": True, "B": False, "C": True}
T_, F_ = RoleCount(("C",), "spy", 1), RoleCount(("A",), "knave", 1)


@pytest.mark.parametrize("statement, expected", [
    (RoleCount(("A", "B", "D"), "knave", 2), True),
    (RoleCount(("A", "B", "D"), "knave", 1), False),
    (RoleCount(("A", "B", "C", "D"), "spy", 1), True),
    (RoleCount(("B", "D"), "knight", 0), True),
    (RoleCount(("A",), "knight", 1), True),
    (TruthCount(("A", "B", "C"), "truthful", 2), True),
    (TruthCount(("A", "B", "C"), "lying", 1), True),
    (TruthCount(("A", "B", "C"), "lying", 2), False),
    (TruthCount(("B",), "truthful", 1), False),
    (SameRole(("B", "D")), True),
    (SameRole(("A", "B")), False),
    (SameRole(("B", "D", "C")), False),
    (SameTruthfulness(("A", "C")), True),
    (SameTruthfulness(("A", "B")), False),
    (SameTruthfulness(("A", "B", "C")), False),
    (DifferentRoles(("B", "D")), False),
    (DifferentRoles(("A", "B")), True),
    (DifferentRoles(("A", "B", "D")), True),
    (RoleParity(("A", "B", "C", "D"), "knave", "even"), True),
    (RoleParity(("A", "B", "C", "D"), "knave", "odd"), False),
    (RoleParity(("A", "B", "C", "D"), "knight", "odd"), True),
    (RoleParity(("A", "C"), "knave", "even"), True),  # zero is even
    (TruthParity(("A", "B", "C"), "lying", "odd"), True),
    (TruthParity(("A", "B", "C"), "truthful", "odd"), False),
    (TruthParity(("A", "B", "C"), "truthful", "even"), True),
    (ExactlyOne((T_, F_)), True),
    (ExactlyOne((F_, T_)), True),
    (ExactlyOne((T_, T_)), False),
    (ExactlyOne((F_, F_)), False),
    (ExactlyOne((TruthCount(("B",), "lying", 1), SameRole(("B", "D")))), False),
], ids=lambda v: v.kind if hasattr(v, "kind") else str(v))
def test_every_statement_kind_on_hand_computed_cases(statement, expected):
    assert kks.evaluate(statement, ROLES, TRUTHFUL) is expected


def test_evaluate_needs_the_truthfulness_it_talks_about():
    with pytest.raises(ValueError, match="'B'"):
        kks.evaluate(TruthCount(("B",), "lying", 1), ROLES, {"A": True})
    with pytest.raises(ValueError, match="'E'"):
        kks.evaluate(SameRole(("A", "E")), ROLES)


# --- text ----------------------------------------------------------------------------------------

ALL = ["Rachel", "Violet", "Olivia", "Peter"]


@pytest.mark.parametrize("statement, speaker, expected", [
    (RoleCount(("Peter",), "knave", 1), "Peter", "I am a knave."),
    (RoleCount(("Violet",), "spy", 1), "Peter", "Violet is a spy."),
    (RoleCount(("Violet", "Peter"), "knave", 1), "Peter",
     "Among Violet and I, there is exactly one knave."),
    (RoleCount(("Violet", "Olivia", "Peter"), "knave", 2), "Peter",
     "Among Violet, Olivia, and I, there are exactly two knaves."),
    (RoleCount(("Violet", "Olivia"), "spy", 2), "Peter", "Violet and Olivia are both spies."),
    (RoleCount(("Peter", "Violet", "Olivia"), "knight", 3), "Peter",
     "Violet, Olivia, and I are all knights."),
    (RoleCount(tuple(ALL), "spy", 1), None, "Among all players, there is exactly one spy."),
    (TruthCount(("Rachel",), "truthful", 1), "Violet", "Rachel is telling the truth."),
    (TruthCount(("Rachel", "Violet"), "lying", 1), "Olivia",
     "Among Rachel and Violet, exactly one person is lying."),
    (TruthCount(("Rachel", "Violet", "Olivia"), "truthful", 2), "Peter",
     "Among Rachel, Violet, and Olivia, exactly two people are telling the truth."),
    (TruthCount(("Rachel", "Violet"), "lying", 2), "Olivia", "Rachel and Violet are both lying."),
    (SameRole(("Violet", "Rachel")), "Rachel", "Violet and I have the same role."),
    (SameRole(("Violet", "Olivia", "Peter")), "Rachel",
     "Violet, Olivia, and Peter all have the same role."),
    (SameTruthfulness(("Rachel", "Violet")), "Olivia",
     "Rachel and Violet are either both telling the truth or both lying."),
    (SameTruthfulness(("Rachel", "Violet", "Olivia")), "Peter",
     "Rachel, Violet, and Olivia are either all telling the truth or all lying."),
    (DifferentRoles(("Olivia", "Peter")), "Rachel", "Olivia and Peter have different roles."),
    (DifferentRoles(("Rachel", "Olivia", "Peter")), "Rachel",
     "Olivia, Peter, and I do not all have the same role."),
    (RoleParity(tuple(ALL), "knight", "odd"), "Rachel",
     "Among all players, the number of knights is odd."),
    (TruthParity(("Rachel", "Violet", "Olivia"), "truthful", "even"), "Peter",
     "Among Rachel, Violet, and Olivia, the number of people who are telling the truth is even."),
    (ExactlyOne((RoleCount(("Peter",), "knave", 1), TruthCount(("Rachel",), "lying", 1))),
     "Peter", "Among the following two statements, exactly one is true: (1) I am a knave. "
              "(2) Rachel is lying."),
])
def test_statement_text(statement, speaker, expected):
    assert kks.statement_text(statement, speaker=speaker, players=ALL) == expected


def test_statement_text_without_context_writes_names_out():
    assert kks.statement_text(SameRole(("Violet", "Rachel"))) == \
        "Violet and Rachel have the same role."


# --- generator -----------------------------------------------------------------------------------

SEEDS = {3: 40, 4: 40, 5: 40, 6: 40, 7: 40, 8: 20, 9: 20}  # 240 puzzles


@pytest.fixture(scope="module")
def generated():
    return [(n, s, kks.generate(n, s)) for n, count in SEEDS.items() for s in range(count)]


def test_generated_puzzles_have_exactly_one_solution(generated):
    assert len(generated) == sum(SEEDS.values())
    for n, seed, p in generated:
        assert len(p.names) == n == len(p.statements), (n, seed)
        assert kks.solve(p) == [p.solution], (n, seed)
        assert list(p.solution.values()).count("spy") == 1, (n, seed)
        assert p.hints == [RoleCount(tuple(p.names), "spy", 1)]
        assert set(p.names) <= set(kks.NAME_POOL)
        assert all(f"Player name: {name}\n" in p.text for name in p.names)


def test_every_statement_kind_appears_in_generated_puzzles(generated):
    seen = {st.kind for _, _, p in generated for st in p.statements}
    assert seen == set(kks.STATEMENT_KINDS)
    parts = {part.kind for _, _, p in generated for st in p.statements
             if isinstance(st, ExactlyOne) for part in st.parts}
    assert "exactly_one" not in parts and len(parts) >= 6


def test_generated_truth_statements_name_only_earlier_speakers(generated):
    for _, _, p in generated:
        for i, st in enumerate(p.statements):
            assert set(kks._referenced_truths(st)) <= set(p.names[:i])


def test_generation_is_deterministic_by_seed():
    a, b = kks.generate(6, 11), kks.generate(6, 11)
    assert kks.to_json(a) == kks.to_json(b) and a.text == b.text
    texts = {kks.generate(6, s).text for s in range(5)}
    assert len(texts) == 5
    assert kks.generate(6, 11).text != kks.generate(7, 11).text


@pytest.mark.parametrize("options", [{}, {"method": "authors", "extra_hints": 2}])
def test_generation_is_deterministic_across_processes(options):
    code = ("import json; from mad_core.tasks import kks; "
            f"print(json.dumps(kks.to_json(kks.generate(5, 3, **{options!r})), sort_keys=True))")
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=ROOT, check=True).stdout.strip()
    assert json.loads(out) == kks.to_json(kks.generate(5, 3, **options))


def test_generate_with_more_spies_announces_them():
    p = kks.generate(5, 2, n_spies=2)
    assert p.hints == [RoleCount(tuple(p.names), "spy", 2)]
    assert list(p.solution.values()).count("spy") == 2
    assert kks.solve(p) == [p.solution]


def test_generate_gives_up_after_max_attempts():
    with pytest.raises(ValueError, match="max_attempts=0"):
        kks.generate(4, 0, max_attempts=0)
    failures = 0
    for seed in range(20):
        try:
            p = kks.generate(9, seed, max_attempts=1)
        except ValueError as exc:
            assert "exactly one solution" in str(exc) and "max_attempts=1" in str(exc)
            failures += 1
        else:
            assert kks.solve(p) == [p.solution]
    assert failures > 0


@pytest.mark.parametrize("kwargs, field", [
    ({"n_players": 2, "seed": 0}, "n_players"),
    ({"n_players": 10, "seed": 0}, "n_players"),
    ({"n_players": "5", "seed": 0}, "n_players"),
    ({"n_players": 5, "seed": "x"}, "seed"),
    ({"n_players": 5, "seed": 0, "n_spies": 6}, "n_spies"),
    ({"n_players": 5, "seed": 0, "method": "paper"}, "method"),
    ({"n_players": 5, "seed": 0, "method": ["authors"]}, "method"),
    ({"n_players": 5, "seed": 0, "extra_hints": -1}, "extra_hints"),
    ({"n_players": 5, "seed": 0, "extra_hints": 11}, "extra_hints"),
    ({"n_players": 5, "seed": 0, "extra_hints": True}, "extra_hints"),
    ({"n_players": 5, "seed": 0, "max_attempts": -1}, "max_attempts"),
])
def test_generate_rejects_bad_arguments(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        kks.generate(**kwargs)


# The authors' way (ControlMAD utils/generator.py): statements drawn at random, kept when unique.
# tests/unit/test_kks_methods.py compares it with the default statistically.

def test_authors_method_is_deterministic_by_seed_and_not_the_default():
    a, b = kks.generate(5, 7, method="authors"), kks.generate(5, 7, method="authors")
    assert kks.to_json(a) == kks.to_json(b) and a.id == "gen-5-7-authors"
    assert kks.solve(a) == [a.solution]
    assert len({kks.generate(5, s, method="authors").text for s in range(6)}) == 6
    assert kks.to_json(kks.generate(5, 7)) != kks.to_json(a)  # another method, another puzzle
    assert kks.generate(5, 7).id == "gen-5-7"  # the default's ids are unchanged


def test_authors_method_stops_at_its_bound_with_a_clear_error():
    # Three spies among seven players may say anything: a random draw is almost never unique.
    with pytest.raises(ValueError) as info:
        kks.generate(7, 0, n_spies=3, method="authors", max_attempts=30)
    message = str(info.value)
    assert "exactly one solution" in message and "max_attempts=30" in message
    assert "method 'authors'" in message and "raise max_attempts" in message
    with pytest.raises(ValueError, match="max_attempts=0"):
        kks.generate(4, 0, method="authors", max_attempts=0)
    # Within a bound a unique draw is found and kept as drawn: the same puzzle as unbounded.
    assert kks.generate(4, 3, method="authors", max_attempts=2000) == kks.generate(4, 3, method="authors")


def test_authors_method_may_repeat_a_part_of_exactly_one_as_the_authors_do():
    repeats = [st for s in range(300) for st in kks.generate(3, s, method="authors").statements
               if isinstance(st, ExactlyOne) and st.parts[0] == st.parts[1]]
    assert repeats  # the authors' generator does not redraw an equal second part
    default = [st for s in range(100) for st in kks.generate(3, s).statements
               if isinstance(st, ExactlyOne)]
    assert default and all(st.parts[0] != st.parts[1] for st in default)


_HINT_KINDS = {"role_count", "truth_count", "same_role", "same_truthfulness", "different_roles"}


@pytest.mark.parametrize("method", kks.GENERATION_METHODS)
def test_extra_hints_are_of_the_authors_hint_kinds(method):
    puzzles = [kks.generate(5, s, method=method, extra_hints=2) for s in range(25)]
    kinds = collections.Counter(h.kind for p in puzzles for h in p.hints[1:])
    assert set(kinds) <= _HINT_KINDS and len(kinds) >= 4
    for p in puzzles:
        assert len(p.hints) == 3 and p.hints[0] == RoleCount(tuple(p.names), "spy", 1)
        assert p.id.endswith("-2hints")
        for h in p.hints[1:]:  # never the number of spies again: the first hint gives it
            assert not (isinstance(h, RoleCount) and h.role == "spy" and len(h.players) == 5)
        assert kks.solve(p) == [p.solution]
        assert kks.is_consistent(p, p.solution)
    # Hints about truthfulness may name any player, the last speaker included.
    named = {n for p in puzzles for h in p.hints if isinstance(h, (TruthCount, SameTruthfulness))
             for n in h.players}
    assert {p.names[-1] for p in puzzles} & named
    assert "here are some hints for you" in puzzles[0].text


def test_default_extra_hints_add_information_without_changing_the_puzzle():
    for seed in range(10):
        plain, hinted = kks.generate(6, seed), kks.generate(6, seed, extra_hints=3)
        assert hinted.statements == plain.statements and hinted.solution == plain.solution
        assert hinted.hints[:1] == plain.hints and len(hinted.hints) == 4
        assert kks.solve(hinted) == [hinted.solution]


def test_authors_extra_hints_take_part_in_the_uniqueness():
    # Drawn at random, a hint can be what makes a puzzle unique: without the extra hints some
    # puzzles of the authors' method with hints would have several solutions.
    several = 0
    for seed in range(40):
        p = kks.generate(6, seed, method="authors", extra_hints=2)
        bare = Puzzle(names=p.names, statements=p.statements, hints=p.hints[:1])
        solutions = kks.solve(bare)
        assert p.solution in solutions
        several += len(solutions) > 1
    assert several > 0


# --- JSON ----------------------------------------------------------------------------------------

def test_json_round_trip_of_generated_puzzles(generated):
    for _, _, p in generated[::7]:
        data = kks.to_json(p)
        again = kks.from_json(json.loads(json.dumps(data)))
        assert again == p
        assert kks.to_json(again) == data
        assert again.text == p.text


def test_json_of_the_paper_example_writes_explicit_player_lists():
    p = kks.from_json(PAPER_EXAMPLE)
    data = kks.to_json(p)
    assert data["hints"] == [{"kind": "role_count", "players": ALL, "role": "spy", "count": 1}]
    assert data["statements"][3]["statements"][0]["players"] == ALL
    assert data["statements"][1] == PAPER_EXAMPLE["statements"][1]
    assert kks.from_json(data) == p


def test_json_without_solution_or_format():
    data = copy.deepcopy(PAPER_EXAMPLE)
    del data["solution"], data["format"], data["id"]
    p = kks.from_json(data)
    assert p.solution is None and "solution" not in kks.to_json(p)
    assert kks.solve(p) == [PAPER_EXAMPLE["solution"]]


def _bad(path, value):
    """PAPER_EXAMPLE with the item at ``path`` set to ``value`` (deleted when value is DEL)."""
    data = copy.deepcopy(PAPER_EXAMPLE)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is DEL:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


DEL = object()


@pytest.mark.parametrize("data, field", [
    ([1, 2], "puzzle"),
    (_bad(["players"], DEL), "players"),
    (_bad(["players"], "all"), "players"),
    (_bad(["players", 1], "Rachel"), "players"),
    (_bad(["players", 2], 7), "players[2]"),
    (_bad(["format"], "kks/2"), "format"),
    (_bad(["colour"], "red"), "colour"),
    (_bad(["id"], 41), "id"),
    (_bad(["statements"], PAPER_EXAMPLE["statements"][:3]), "statements"),
    (_bad(["statements", 1, "kind"], "__import__('os')"), "statements[1].kind"),
    (_bad(["statements", 0, "speaker"], "Violet"), "statements[0].speaker"),
    (_bad(["statements", 0, "players"], ["Mallory", "Rachel"]), "statements[0].players[0]"),
    (_bad(["statements", 0, "players"], ["Rachel"]), "statements[0].players"),
    (_bad(["statements", 0, "players"], "Violet"), "statements[0].players"),
    (_bad(["statements", 1, "players"], ["Olivia"]), "statements[1].players[0]"),
    (_bad(["statements", 1, "truthfulness"], "honest"), "statements[1].truthfulness"),
    (_bad(["statements", 1, "count"], True), "statements[1].count"),
    (_bad(["statements", 1, "count"], "1"), "statements[1].count"),
    (_bad(["statements", 2, "count"], 3), "statements[2].count"),
    (_bad(["statements", 2, "count"], DEL), "statements[2].count"),
    (_bad(["statements", 0, "role"], "knight"), "statements[0].role"),
    (_bad(["statements", 3, "statements", 0, "parity"], "many"),
     "statements[3].statements[0].parity"),
    (_bad(["statements", 3, "statements", 0, "role"], "wizard"),
     "statements[3].statements[0].role"),
    (_bad(["statements", 3, "statements"], [PAPER_EXAMPLE["statements"][3]["statements"][0]]),
     "statements[3].statements"),
    (_bad(["statements", 3, "statements", 1], {"kind": "exactly_one", "statements": []}),
     "statements[3].statements[1].kind"),
    (_bad(["statements", 3, "statements", 1, "speaker"], "Peter"),
     "statements[3].statements[1].speaker"),
    (_bad(["hints"], {"kind": "role_count"}), "hints"),
    (_bad(["hints", 0, "players"], ["Rachel", "Rachel"]), "hints[0].players"),
    (_bad(["solution"], {"Rachel": "knight"}), "solution"),
    (_bad(["solution", "Peter"], "traitor"), "solution.Peter"),
])
def test_bad_json_raises_value_error_naming_the_field(data, field):
    with pytest.raises(ValueError, match=re.escape(field)):
        kks.from_json(data)


def test_module_documents_every_statement_kind():
    doc = kks.__doc__
    for kind in kks.STATEMENT_KINDS:
        assert f"``{kind}``" in doc
    # The documented example is the paper's example and parses as written.
    block = doc[doc.index("    {\n      \"format\""):doc.index("(That is the paper")]
    data = json.loads(re.sub(r"#[^\n]*", "", block))
    assert kks.solve(kks.from_json(data)) == [data["solution"]]


# --- the command: python -m mad_core.tasks.kks -----------------------------------------------------

def _cli(args, tmp_path=None, stdin=None):
    """Run the command as a user would; (exit status, stdout, stderr)."""
    out = subprocess.run([sys.executable, "-m", "mad_core.tasks.kks", *args], capture_output=True,
                         text=True, cwd=ROOT, input=stdin, timeout=120)
    return out.returncode, out.stdout, out.stderr


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_cli_solve_a_json_list_reports_each_puzzle_and_the_count(tmp_path):
    unique = kks.to_json(_hand_unique())
    unique["id"] = "hand-1"
    two = kks.to_json(_hand_two_solutions())  # no id: named by its place
    rc, out, err = _cli(["solve", _write(tmp_path, "p.json", json.dumps([PAPER_EXAMPLE, unique, two]))])
    lines = out.splitlines()
    assert lines[0] == ("4-1: one solution: Rachel: knight, Violet: knight, Olivia: knave, Peter: spy"
                        " -- matches the published solution")
    assert lines[1] == "hand-1: one solution: Alice: spy, Bob: knight, Carol: knave"
    assert lines[2] == ("#3: 2 solutions: Alice: knight, Bob: knight, Carol: spy | "
                        "Alice: knave, Bob: knave, Carol: spy")
    assert lines[3] == ("3 puzzles: 2 with one solution, 1 with several, 0 with none, 0 unreadable; "
                        "published solutions: 1 match, 0 differ, 2 not given")
    assert rc == 1 and err == ""  # a puzzle with two solutions fails the file


def test_cli_solve_jsonl_all_unique_and_matching_exits_0(tmp_path):
    rc, out, _ = _cli(["generate", "5", "--seed", "3", "--count", "4"])
    assert rc == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in records] == [f"kks-5p-s3-{i}" for i in range(4)]
    assert all(r["format"] == "kks/1" and len(r["players"]) == 5 for r in records)
    assert records == [item.data for item in generated_items("kks", 4, 3, players=5)]
    rc, out, _ = _cli(["solve", _write(tmp_path, "p.jsonl", out)])
    assert rc == 0
    assert out.count("-- matches the published solution") == 4
    assert out.splitlines()[-1].startswith("4 puzzles: 4 with one solution")


def test_cli_solve_reports_a_differing_published_solution(tmp_path):
    wrong = copy.deepcopy(PAPER_EXAMPLE)
    wrong["solution"]["Peter"], wrong["solution"]["Olivia"] = "knave", "spy"
    rc, out, _ = _cli(["solve", "-"], stdin=json.dumps(wrong))
    assert rc == 1
    assert "4-1: one solution: Rachel: knight, Violet: knight, Olivia: knave, Peter: spy -- DIFFERS " \
           "from the published solution (Rachel: knight, Violet: knight, Olivia: spy, Peter: knave)" in out
    assert "1 differ" in out


def test_cli_solve_controlmad_records(tmp_path):
    text = "\n".join(json.dumps(r) for r in (CM_4_1, CM_9_1)) + "\n"
    path = _write(tmp_path, "gt.jsonl", text)
    rc, out, _ = _cli(["solve", path, "--format", "controlmad"])
    assert rc == 0, out
    assert out.splitlines()[0].startswith("4-1: one solution: Rachel: knight")
    assert out.splitlines()[1].startswith("9-1: one solution: Jack: knave, Uma: spy")
    assert "2 match, 0 differ" in out
    rc, out, _ = _cli(["solve", path])  # forgot --format: told which one
    assert rc == 1 and "record 1: cannot be read: raw_schema: this is a record of the paper's " \
                       "released set; use --format controlmad" in out


def test_cli_labels_repeated_game_ids_uniquely(tmp_path):
    # The released 7-player file repeats 40 game ids; here game 4-1 three times.
    records = [CM_4_1, CM_9_1, CM_4_1, CM_4_1]
    path = _write(tmp_path, "gt.jsonl", "\n".join(json.dumps(r) for r in records) + "\n")
    rc, out, _ = _cli(["solve", path, "--format", "controlmad"])
    lines = out.splitlines()
    labels = [line.split(": ", 1)[0] for line in lines[:4]]
    assert labels == ["4-1", "9-1", "4-1 (2)", "4-1 (3)"]
    assert len(set(labels)) == len(labels)  # no two puzzles share a label
    assert lines[4] == ("note: 2 labels repeated an earlier id of the file; each repeat is shown as "
                        "'ID (2)', 'ID (3)', ... in file order")
    assert lines[5].startswith("4 puzzles: 4 with one solution") and rc == 0
    # kks/1 records: a repeated id, and an id that is already what a repeat would be called.
    a, b, c = (dict(PAPER_EXAMPLE, id=i) for i in ("x", "x", "x (2)"))
    rc, out, _ = _cli(["solve", "-"], stdin=json.dumps([a, b, c]))
    labels = [line.split(": ", 1)[0] for line in out.splitlines()[:3]]
    assert labels == ["x", "x (2)", "x (2) (2)"]


def test_cli_prints_no_note_when_every_id_is_new(tmp_path):
    path = _write(tmp_path, "gt.jsonl", "\n".join(json.dumps(r) for r in (CM_4_1, CM_9_1)))
    rc, out, _ = _cli(["solve", path, "--format", "controlmad"])
    assert rc == 0 and "note:" not in out and "(2)" not in out


def test_cli_generates_the_authors_way_with_extra_hints(tmp_path):
    rc, out, err = _cli(["generate", "4", "--seed", "2", "--count", "3", "--method", "authors",
                         "--extra-hints", "1"])
    assert rc == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in records] == [f"kks-4p-authors-1hints-s2-{i}" for i in range(3)]
    assert records == [item.data for item in
                       generated_items("kks", 3, 2, players=4, method="authors", extra_hints=1)]
    assert all(len(r["hints"]) == 2 for r in records)
    rc, out, _ = _cli(["solve", _write(tmp_path, "p.jsonl", "\n".join(map(json.dumps, records)))])
    assert rc == 0 and out.count("-- matches the published solution") == 3
    rc, _, err = _cli(["generate", "4", "--seed", "0", "--extra-hints", "11"])
    assert rc == 2 and "--extra-hints: must be an integer from 0 to 10" in err
    rc, _, err = _cli(["generate", "4", "--seed", "0", "--method", "paper"])
    assert rc == 2 and "--method" in err and "Traceback" not in err


def test_cli_names_the_bad_record_and_field_and_goes_on_without_a_traceback(tmp_path):
    bad = copy.deepcopy(PAPER_EXAMPLE)
    bad["statements"][2]["players"] = ["Violet", "Nobody"]
    records = [bad, {"players": "x"}, [1, 2], PAPER_EXAMPLE,
               {"players": ["A", "B", "C"], "statements": [{"kind": "same_role", "players": {}}] * 3}]
    rc, out, err = _cli(["solve", _write(tmp_path, "p.json", json.dumps(records))])
    lines = out.splitlines()
    assert lines[0] == "record 1 (id '4-1'): cannot be read: statements[2].players[1]: unknown player 'Nobody'"
    assert lines[1] == "record 2: cannot be read: statements: missing"
    assert lines[2].startswith("record 3: cannot be read: puzzle: must be a JSON object")
    assert lines[3].startswith("4-1: one solution")
    assert lines[4].startswith("record 5: cannot be read: statements[0]")
    assert "4 unreadable" in lines[5] and rc == 1
    assert "Traceback" not in out + err


@pytest.mark.parametrize("args, text, message", [
    (["solve", "{path}"], "", "empty, no puzzles"),
    (["solve", "{path}"], '{"a": 1}\n{oops\n', "line 2: not JSON"),
    (["solve", "{path}/missing.json"], None, "cannot be read"),
    (["generate", "12", "--seed", "0"], None, "N_PLAYERS: must be an integer from 3 to 9"),
    (["generate", "4", "--seed", "0", "--count", "0"], None, "--count: must be an integer from 1"),
    (["generate", "4", "--seed", "-1"], None, "--seed: must be an integer at least 0"),
    (["generate", "4", "--seed", "0", "--spies", "5"], None, "--spies: must be an integer from 0 to 4"),
])
def test_cli_bad_input_exits_2_with_a_message_and_no_traceback(tmp_path, args, text, message):
    path = _write(tmp_path, "f.json", text) if text is not None else str(tmp_path)
    rc, out, err = _cli([a.replace("{path}", path) for a in args])
    assert rc == 2 and message in err and out == ""
    assert "Traceback" not in err


def test_cli_usage_errors_come_from_argparse():
    rc, _, err = _cli(["generate", "4"])
    assert rc == 2 and "--seed" in err and "Traceback" not in err
    rc, out, _ = _cli(["--help"])
    assert rc == 0 and "solve" in out and "generate" in out


def test_readme_documents_the_format_and_the_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Knight-Knave-Spy puzzles"):]
    section = section[:section.index("\n## ", 5)]
    for kind in kks.STATEMENT_KINDS:
        assert f"`{kind}`" in section
    assert "python -m mad_core.tasks.kks solve" in section and "--format controlmad" in section
    assert "python -m mad_core.tasks.kks generate" in section
    example = section[section.index("```json") + 7:section.index("```", section.index("```json") + 7)]
    assert kks.solve(kks.from_json(json.loads(example))) == [PAPER_EXAMPLE["solution"]]


_JUNK = [None, 1, -1, 1.5, True, "x", "all", [], [None], {}, {"a": 1}, [1, 2], ["Rachel"], 10**30,
         [[0]], [[0], 1, 9]]


def _leaf_paths(data, prefix=()):
    if prefix:
        yield prefix
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield from _leaf_paths(value, prefix + (key,))


@pytest.mark.parametrize("base, read", [(PAPER_EXAMPLE, kks.from_json), (CM_4_1, kks.from_controlmad),
                                        (CM_9_1, kks.from_controlmad)], ids=["kks1", "cm4", "cm9"])
def test_any_junk_anywhere_gives_value_error_never_another_exception(base, read):
    """Every field of a good record replaced by each JSON value of _JUNK: the reader accepts the
    record or raises ValueError (which the command reports with the field), nothing else."""
    raised = 0
    for path in _leaf_paths(base):
        for junk in _JUNK:
            record = copy.deepcopy(base)
            node = record
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = copy.deepcopy(junk)
            try:
                read(record)
            except ValueError:
                raised += 1
    assert raised > 100
