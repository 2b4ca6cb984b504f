"""The written task sets (assets/tasks/*.yaml) and their loader (mad_core/tasks/sets.py)."""
import pytest

from mad_core.tasks.answer_types import LETTERS, is_correct, read_answer
from mad_core.tasks.sets import INSTRUCTIONS, TaskItem, item_prompt, load_task_set, task_sets

SETS = ["ciar", "multiple_choice", "yes_no"]


def test_the_sets_are_there():
    assert set(SETS) <= set(task_sets())


@pytest.mark.parametrize("name", SETS)
def test_every_set_loads_and_reads_back(name):
    items = load_task_set(name)
    assert len(items) >= 30
    assert len({item.id for item in items}) == len(items)
    for item in items:
        assert isinstance(item, TaskItem)
        reading = read_answer(item.kind, item.answer, choices=item.choices, names=item.names)
        assert reading.valid, (item.id, reading.reason)
        assert item.is_correct(item.answer) is True
        assert item.is_correct(f"Some reasoning.\nFinal answer: {item.answer}") is True
        assert item.instruction
        prompt = item_prompt(item)
        assert prompt.startswith(item.question) and prompt.endswith(item.instruction)


def test_ciar_tempting_answers_are_wrong():
    items = load_task_set("ciar")
    for item in items:
        assert item.kind == "number" and item.tempting and item.why
        assert read_answer("number", item.tempting).valid
        assert read_answer("number", item.tempting).value != read_answer("number", item.answer).value
        assert is_correct("number", item.tempting, item.answer) is False, item.id


def test_multiple_choice_answers_are_option_letters():
    for item in load_task_set("multiple_choice"):
        assert item.kind == "choice" and len(item.choices) == 4
        assert item.answer in LETTERS[:len(item.choices)]
        assert item.is_correct(item.choices[LETTERS.index(item.answer)]) is True  # the option's text
        if item.tempting:
            assert item.tempting != item.answer and item.is_correct(item.tempting) is False
        prompt = item_prompt(item)
        assert "(A) " in prompt and "(D) " in prompt and INSTRUCTIONS["choice"] in prompt


def test_yes_no_items_have_reasons():
    items = load_task_set("yes_no")
    assert {item.answer for item in items} == {"yes", "no"}
    assert all(item.why for item in items)


# --- validation -------------------------------------------------------------------------------

GOOD_ITEM = """
  - id: q1
    type: number
    question: What is 2 + 2?
    answer: '4'
"""


def write(tmp_path, text, name="bad.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("item, field", [
    ("  - id: q2\n    type: number\n    question: Q?\n    answer: 'lots'\n", "answer"),
    ("  - id: q2\n    type: number\n    question: Q?\n    answer: 1.5\n", "answer"),
    ("  - id: q2\n    type: nonsense\n    question: Q?\n    answer: '1'\n", "type"),
    ("  - id: q2\n    type: number\n    question: ''\n    answer: '1'\n", "question"),
    ("  - id: q2\n    type: number\n    question: Q?\n    answer: '1'\n    colour: red\n", "colour"),
    ("  - id: q2\n    type: number\n    question: Q?\n    answer: '1'\n    tempting: '1.0'\n", "tempting"),
    ("  - id: q2\n    type: choice\n    question: Q?\n    answer: E\n    choices: [a, b, c, d]\n", "answer"),
    ("  - id: q2\n    type: choice\n    question: Q?\n    answer: A\n", "choices"),
    ("  - id: q2\n    type: choice\n    question: Q?\n    answer: A\n    choices: [x, X]\n", "choices"),
    ("  - id: q2\n    type: yes_no\n    question: Q?\n    answer: perhaps\n", "answer"),
    ("  - id: q2\n    type: yes_no\n    question: Q?\n    answer: '1'\n    choices: [a, b]\n", "choices"),
    ("  - id: q1\n    type: number\n    question: Q?\n    answer: '1'\n", "id"),
])
def test_a_bad_item_names_file_id_and_field(tmp_path, item, field):
    path = write(tmp_path, "title: t\nitems:\n" + GOOD_ITEM + item)
    with pytest.raises(ValueError) as error:
        load_task_set(path)
    message = str(error.value)
    item_id = "q1" if field == "id" else "q2"  # the duplicate is the second "q1"
    assert "bad.yaml" in message and repr(item_id) in message and repr(field) in message


def test_bad_files(tmp_path):
    with pytest.raises(ValueError, match="bad.yaml.*items"):
        load_task_set(write(tmp_path, "title: t\nitems: []\n"))
    with pytest.raises(ValueError, match="bad.yaml.*items"):
        load_task_set(write(tmp_path, "- just a list\n"))
    with pytest.raises(ValueError, match="bad.yaml.*cannot be read"):
        load_task_set(write(tmp_path, "items: [unclosed\n"))
    with pytest.raises(ValueError, match="unknown task set"):
        load_task_set("no_such_set")


def test_a_good_file_and_yaml_bools(tmp_path):
    path = write(tmp_path, "title: t\ninstruction: Be brief.\nitems:\n" + GOOD_ITEM
                 + "  - id: q2\n    type: yes_no\n    question: Is 4 even?\n    answer: yes\n", "good.yaml")
    first, second = load_task_set(path)
    assert first.answer == "4" and first.instruction == "Be brief."
    assert second.answer == "yes" and second.is_correct("Yes, it is.") is True
    assert load_task_set("good", directory=tmp_path)[0].id == "q1"
    assert task_sets(tmp_path) == ["good"]
