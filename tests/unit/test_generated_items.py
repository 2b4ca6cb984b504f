"""Generated task sets (mad_core/tasks/generated.py): KKS and reasoning-gym items for experiments."""
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from mad_core.tasks import kks
from mad_core.tasks.answer_types import is_correct
from mad_core.tasks.generated import generated_items
from mad_core.tasks.sets import INSTRUCTIONS, TaskItem, item_prompt


@pytest.fixture(scope="module")
def items():
    return generated_items("kks", 60, 3, players=4)


def test_kks_items_have_ids_names_answers_and_the_puzzle(items):
    assert len(items) == 60
    assert [item.id for item in items[:3]] == ["kks-4p-s3-0", "kks-4p-s3-1", "kks-4p-s3-2"]
    for item in items:
        assert isinstance(item, TaskItem) and item.kind == "kks"
        puzzle = kks.from_json(item.data)
        assert item.data["format"] == "kks/1" and item.data["id"] == item.id
        assert item.names == tuple(puzzle.names)
        assert puzzle.text.strip() in item.question and item.question.startswith(kks.RULES)
        assert "Message from the game manager" in item.question
        assert item.instruction == INSTRUCTIONS["kks"]
        assert item_prompt(item).endswith(INSTRUCTIONS["kks"])
        assert item.answer == "\n".join(f"{n}: {puzzle.solution[n]}" for n in puzzle.names)
        json.dumps(item.data)  # exportable as it is


def test_every_generated_puzzle_has_exactly_one_solution_which_is_the_answer(items):
    for item in items:
        puzzle = kks.from_json(item.data)
        assert kks.solve(puzzle) == [puzzle.solution], item.id


def test_no_puzzle_repeats_within_a_set(items):
    keys = {json.dumps({k: v for k, v in item.data.items() if k != "id"}, sort_keys=True) for item in items}
    assert len(keys) == len(items)
    small = generated_items("kks", 200, 0, players=3)
    assert len({json.dumps(i.data["statements"]) for i in small}) == 200


def test_answer_round_trips_through_is_correct(items):
    for item in items[:20]:
        names = list(item.names)
        solution = kks.from_json(item.data).solution
        reply = "We argued a lot.\nFinal answer: " + ", ".join(f"{n} is a {solution[n]}" for n in names)
        assert is_correct("kks", reply, item.answer, names=names) is True
        assert item.is_correct(reply) is True
        assert item.is_correct(json.dumps({"answer": solution})) is True
        wrong = dict(solution)
        wrong[names[0]] = "knave" if solution[names[0]] != "knave" else "knight"
        assert item.is_correct("Final answer: " + ", ".join(f"{n}: {wrong[n]}" for n in names)) is False
        partial = "Final answer: " + ", ".join(f"{n}: {solution[n]}" for n in names[:-1])
        assert item.is_correct(partial) is False


def test_deterministic_and_prefix_stable():
    a = generated_items("kks", 8, 11, players=5)
    b = generated_items("kks", 8, 11, players=5)
    assert a == b and [x.data for x in a] == [x.data for x in b]
    assert generated_items("kks", 3, 11, players=5) == a[:3]
    other = generated_items("kks", 8, 12, players=5)
    assert {repr(x.data["statements"]) for x in a}.isdisjoint({repr(x.data["statements"]) for x in other})


def test_deterministic_across_processes():
    code = ("import json; from mad_core.tasks.generated import generated_items; "
            "print(json.dumps([i.data for i in generated_items('kks', 3, 5, players=6)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": ""}, cwd=str(Path(__file__).parents[2]))
    assert json.loads(out.stdout) == [i.data for i in generated_items("kks", 3, 5, players=6)]


def test_spies_option_is_announced_and_named_in_the_id():
    items = generated_items("kks", 3, 0, players=5, spies=2)
    assert items[0].id == "kks-5p-2spy-s0-0"
    for item in items:
        assert item.data["hints"] == [{"kind": "role_count", "players": list(item.names), "role": "spy", "count": 2}]
        assert list(item.data["solution"].values()).count("spy") == 2


def test_defaults_are_four_players_and_one_spy():
    item = generated_items("kks", 1, 0)[0]
    assert item.id == "kks-4p-s0-0" and len(item.names) == 4
    assert list(item.data["solution"].values()).count("spy") == 1


def test_authors_method_and_extra_hints_are_options_named_in_the_id():
    plain = generated_items("kks", 3, 4, players=5)
    authors = generated_items("kks", 3, 4, players=5, method="authors")
    hinted = generated_items("kks", 3, 4, players=5, method="authors", extra_hints=2)
    assert [i.id for i in authors] == [f"kks-5p-authors-s4-{j}" for j in range(3)]
    assert hinted[0].id == "kks-5p-authors-2hints-s4-0"
    assert generated_items("kks", 1, 4, players=5, spies=0, extra_hints=1)[0].id == "kks-5p-0spy-1hints-s4-0"
    assert generated_items("kks", 3, 4, players=5, method="default") == plain  # the default, named
    assert {repr(i.data["statements"]) for i in authors}.isdisjoint({repr(i.data["statements"]) for i in plain})
    for item in authors + hinted:
        puzzle = kks.from_json(item.data)
        assert kks.solve(puzzle) == [puzzle.solution], item.id
        assert len(puzzle.hints) == (3 if "hints" in item.id else 1)
    # Same options, same items; a prefix of the set is the smaller set.
    assert generated_items("kks", 2, 4, players=5, method="authors", extra_hints=2) == hinted[:2]


def test_authors_sets_do_not_repeat_a_puzzle():
    small = generated_items("kks", 150, 0, players=3, method="authors")
    assert len({json.dumps(i.data["statements"]) for i in small}) == 150


@pytest.mark.parametrize("args, options, field", [
    (("kks", 2, 0), {"method": "paper"}, "method"),
    (("kks", 2, 0), {"method": None}, "method"),
    (("kks", 2, 0), {"extra_hints": 11}, "extra_hints"),
    (("kks", 2, 0), {"extra_hints": "1"}, "extra_hints"),
    (("kks", 2, 0), {"players": 2}, "players"),
    (("kks", 2, 0), {"players": 10}, "players"),
    (("kks", 2, 0), {"players": "4"}, "players"),
    (("kks", 2, 0), {"players": True}, "players"),
    (("kks", 2, 0), {"players": 4, "spies": 5}, "spies"),
    (("kks", 2, 0), {"spies": -1}, "spies"),
    (("kks", 2, 0), {"player": 4}, "player"),
    (("kks", 0, 0), {}, "n"),
    (("kks", 2.0, 0), {}, "n"),
    (("kks", 2, -1), {}, "seed"),
    (("kks", 2, "0"), {}, "seed"),
    (("nope", 2, 0), {}, "name"),
    ((None, 2, 0), {}, "name"),
])
def test_bad_arguments_raise_value_error_naming_the_field(args, options, field):
    with pytest.raises(ValueError) as info:
        generated_items(*args, **options)
    assert str(info.value).startswith(f"{field}:")


# --- reasoning-gym ------------------------------------------------------------------------------

def _wrong(kind, item):
    """A wrong answer of the item's kind."""
    if kind == "number":
        return str(Fraction(item.answer) + 1)
    if kind == "yes_no":
        return "No" if item.answer.lower() == "yes" else "Yes"
    if kind == "text":
        return "nobody"
    solution = item.data["metadata"]["solution"]  # True = truth-teller, per name
    flipped = [not solution[0]] + solution[1:]
    terms = item.data["metadata"]["knight_knave_terms"]
    return ", ".join(f"{n} is {terms['a_knight'] if t else terms['a_knave']}" for n, t in zip(item.names, flipped))


@pytest.mark.parametrize("dataset, kind", [
    ("gsm_symbolic", "number"), ("basic_arithmetic", "number"), ("syllogism", "yes_no"),
    ("knights_knaves", "kks"), ("zebra_puzzles", "text"),
])
def test_reasoning_gym_items_are_its_entries_and_scored_like_its_own_scorer(dataset, kind):
    import reasoning_gym

    items = generated_items(f"rg:{dataset}", 12, 7)
    source = reasoning_gym.create_dataset(dataset, size=12, seed=7)
    assert [item.id for item in items[:2]] == [f"rg-{dataset}-s7-0", f"rg-{dataset}-s7-1"]
    for i, item in enumerate(items):
        entry = source[i]
        assert item.kind == kind and item.question == entry["question"].strip()
        assert item.answer == entry["answer"] and item.data["dataset"] == dataset
        json.dumps(item.data)
        # the dataset's answer, as a reply, is right for both scorers; a wrong one for neither
        assert source.score_answer(item.answer, entry) == 1.0
        assert item.is_correct(f"Let me think.\nFinal answer: {item.answer}") is True
        wrong = _wrong(kind, item)
        assert source.score_answer(wrong, entry) < 1.0
        assert item.is_correct(f"Final answer: {wrong}") is False, (item.id, wrong)
    assert generated_items(f"rg:{dataset}", 12, 7) == items
    assert generated_items(f"rg:{dataset}", 4, 7) == items[:4]


def test_reasoning_gym_knights_knaves_reads_the_island_words():
    for item in generated_items("rg:knights_knaves", 20, 1, n_people=3):
        assert len(item.names) == 3 and all(type(n) is str for n in item.names)
        terms = item.data["metadata"]["knight_knave_terms"]
        solution = item.data["metadata"]["solution"]
        reply = "\n".join(f"{n}: {terms['knight'] if t else terms['knave']}" for n, t in zip(item.names, solution))
        assert item.is_correct(reply) is True
        as_kks = ", ".join(f"{n} is a {'knight' if t else 'knave'}" for n, t in zip(item.names, solution))
        assert item.is_correct(as_kks) is True


@pytest.mark.parametrize("name, options, field", [
    ("rg:knights_knaves", {"bogus": 1}, "bogus"),
    ("rg:knights_knaves", {"size": 5}, "size"),
    ("rg:knights_knaves", {"n_people": 0}, "n_people"),
    ("rg:propositional_logic", {}, "name"),
    ("rg:", {}, "name"),
])
def test_reasoning_gym_bad_options_are_named(name, options, field):
    with pytest.raises(ValueError) as info:
        generated_items(name, 2, 0, **options)
    assert str(info.value).startswith(f"{field}:")


def test_reasoning_gym_is_imported_only_for_rg_sets_and_never_reaches_the_network():
    code = """
import socket, sys
def refuse(*args, **kwargs):
    raise RuntimeError("network")
socket.socket.connect = socket.create_connection = socket.getaddrinfo = refuse
import mad_core, mad_core.tasks, mad_core.tasks.generated
from mad_core.tasks.generated import generated_items
generated_items("kks", 2, 0)
assert "reasoning_gym" not in sys.modules and "matplotlib" not in sys.modules
items = generated_items("rg:gsm_symbolic", 3, 0) + generated_items("rg:knights_knaves", 3, 0)
assert "reasoning_gym" in sys.modules
print(len(items))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(Path(__file__).parents[2]))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "6"
