"""Task sets written for MAD Lab: one YAML file each in assets/tasks, read into `TaskItem`s.

What it is for: giving a debate a question with a known answer, the instruction that tells the
agents what form the answer takes, and (for scoring) the answer's kind, read by
mad_core/tasks/answer_types.py. The sets were written for MAD Lab, not copied from a dataset:

  * ``ciar``            counter-intuitive arithmetic in the spirit of CIAR (seed 002, Liang et
                        al.): the intuitive answer (``tempting``) is wrong;
  * ``multiple_choice`` four options each, the answer a letter;
  * ``yes_no``          strategy-style questions needing a short chain of facts, with ``why``.

A file is a mapping: ``title``, ``source``, optional ``instruction`` (the default for its
items) and ``items``, a list of mappings with ``id``, ``type`` (an answer kind), ``question``,
``answer`` and, where relevant, ``choices`` (kind "choice"), ``names`` (kind "kks"),
``tempting``, ``why`` and ``instruction``. Answers are written as quoted strings (a YAML float
would lose digits; a bare yes/no is a YAML bool).

What it must not do: accept a malformed item silently (`load_task_set` raises ValueError naming
the file, the item id and the field), call a model, or import streamlit.
"""
from __future__ import annotations

from dataclasses import dataclass, field as dataclass_field
from pathlib import Path
from typing import Any

import yaml

from .answer_types import KINDS, LETTERS, is_correct, option_key, read_answer

TASK_DIR = Path(__file__).resolve().parents[2] / "assets" / "tasks"

INSTRUCTIONS = {
    "choice": "Answer with the letter of one option.",
    "number": "Answer with a single number.",
    "yes_no": "Answer yes or no.",
    "kks": "Give the role of every person: knight, knave or spy.",
    "text": "Answer in a few words.",
}
_ITEM_KEYS = frozenset("id type question answer choices names tempting why instruction".split())
_FILE_KEYS = frozenset("title source instruction items".split())


@dataclass(frozen=True)
class TaskItem:
    """One question with its answer. `kind` is an answer kind of answer_types.KINDS.

    `data` is the item's source in machine-readable form where it has one (a generated
    Knight-Knave-Spy item keeps its puzzle in the kks/1 JSON format), for showing and export;
    it takes no part in the item's hash.
    """

    id: str
    question: str
    answer: str
    kind: str
    choices: tuple[str, ...] | None = None
    tempting: str | None = None
    why: str | None = None
    instruction: str = ""
    names: tuple[str, ...] | None = None
    data: dict[str, Any] | None = dataclass_field(default=None, hash=False)

    def is_correct(self, answer_text: str) -> bool | None:
        """Whether `answer_text` (a reply) gives this item's answer (answer_types.is_correct)."""
        return is_correct(self.kind, answer_text, self.answer, choices=self.choices, names=self.names)


def task_sets(directory: Path = TASK_DIR) -> list[str]:
    """The names of the task sets (file names without .yaml), sorted."""
    return sorted(path.stem for path in Path(directory).glob("*.yaml"))


def item_prompt(item: TaskItem) -> str:
    """The question as a debate puts it: the question, its options "(A) ...", the instruction."""
    parts = [item.question.strip()]
    if item.choices:
        parts.append("\n".join(f"({LETTERS[i]}) {choice}" for i, choice in enumerate(item.choices)))
    if item.instruction:
        parts.append(item.instruction)
    return "\n\n".join(parts)


class _Checker:
    """Raises ValueError("<file>: item <id>: field <field>: <problem>")."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, item_id: Any, field: str, problem: str) -> None:
        where = f"{self.file}: " + (f"item {item_id!r}: " if item_id is not None else "")
        raise ValueError(f"{where}field {field!r}: {problem}")

    def text(self, item_id: Any, field: str, value: Any, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(item_id, field, f"must be a non-empty string, not {value!r}")
        return value.strip()

    def answer(self, item_id: Any, field: str, value: Any, kind: str) -> str:
        if isinstance(value, bool):
            if kind != "yes_no":
                self.fail(item_id, field, f"{value!r} is a YAML bool; quote it")
            return "yes" if value else "no"
        if isinstance(value, float):
            self.fail(item_id, field, f"{value!r} is a YAML float; write the number in quotes")
        if isinstance(value, int):
            return str(value)
        return self.text(item_id, field, value)

    def strings(self, item_id: Any, field: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            self.fail(item_id, field, "must be a non-empty list")
        return tuple(self.answer(item_id, field, one, "text") for one in value)


def _item(check: _Checker, raw: Any, index: int, default_instruction: str | None) -> TaskItem:
    if not isinstance(raw, dict):
        check.fail(f"#{index + 1}", "items", "each item must be a mapping")
    item_id = raw.get("id")
    if isinstance(item_id, int) and not isinstance(item_id, bool):
        item_id = str(item_id)
    if not isinstance(item_id, str) or not item_id.strip():
        check.fail(f"#{index + 1}", "id", f"must be a non-empty string, not {item_id!r}")
    item_id = item_id.strip()
    unknown = sorted(set(map(str, raw)) - _ITEM_KEYS)
    if unknown:
        check.fail(item_id, unknown[0], f"unknown field (fields: {', '.join(sorted(_ITEM_KEYS))})")
    kind = raw.get("type")
    if kind not in KINDS:
        check.fail(item_id, "type", f"must be one of {', '.join(KINDS)}, not {kind!r}")
    question = check.text(item_id, "question", raw.get("question"))
    answer = check.answer(item_id, "answer", raw.get("answer"), kind)

    choices = None
    if raw.get("choices") is not None:
        if kind != "choice":
            check.fail(item_id, "choices", f"only items of type 'choice' have choices, not {kind!r}")
        choices = check.strings(item_id, "choices", raw["choices"])
        if not 2 <= len(choices) <= len(LETTERS):
            check.fail(item_id, "choices", f"must have 2 to {len(LETTERS)} options, not {len(choices)}")
        if len({option_key(choice) for choice in choices}) != len(choices):
            check.fail(item_id, "choices", "two options read the same")
    elif kind == "choice":
        check.fail(item_id, "choices", "an item of type 'choice' needs its options")
    if kind == "choice" and answer.upper() not in LETTERS[:len(choices)]:
        check.fail(item_id, "answer", f"must be the letter of an option (A-{LETTERS[len(choices) - 1]}), "
                                      f"not {answer!r}")

    names = None
    if raw.get("names") is not None:
        if kind != "kks":
            check.fail(item_id, "names", f"only items of type 'kks' have names, not {kind!r}")
        names = check.strings(item_id, "names", raw["names"])

    reading = read_answer(kind, answer, choices=choices, names=names)
    if not reading.valid:
        check.fail(item_id, "answer", f"{answer!r} does not read as a {kind} answer ({reading.reason})")
    tempting = None
    if raw.get("tempting") is not None:
        tempting = check.answer(item_id, "tempting", raw["tempting"], kind)
        if not read_answer(kind, tempting, choices=choices, names=names).valid:
            check.fail(item_id, "tempting", f"{tempting!r} does not read as a {kind} answer")
        if is_correct(kind, tempting, answer, choices=choices, names=names):
            check.fail(item_id, "tempting", f"{tempting!r} is the answer itself")
    why = check.text(item_id, "why", raw.get("why"), optional=True)
    instruction = check.text(item_id, "instruction", raw.get("instruction"), optional=True)
    return TaskItem(
        id=item_id, question=question, answer=answer if kind != "choice" else answer.upper(),
        kind=kind, choices=choices, tempting=tempting, why=why,
        instruction=instruction or default_instruction or INSTRUCTIONS[kind], names=names,
    )


def _path(name: str | Path, directory: Path) -> Path:
    if isinstance(name, Path) or str(name).endswith((".yaml", ".yml")):
        return Path(name)
    path = Path(directory) / f"{name}.yaml"
    if not path.is_file():
        raise ValueError(f"unknown task set {name!r}; task sets: {', '.join(task_sets(directory))}")
    return path


def load_task_set(name: str | Path, directory: Path = TASK_DIR) -> list[TaskItem]:
    """The items of task set `name` (a name of `task_sets()`, or a path to a YAML file).

    Every item is validated; a problem raises ValueError naming the file, the item id and the
    field. Ids must be unique within the file.
    """
    path = _path(name, directory)
    check = _Checker(path.name)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ValueError(f"{path.name}: cannot be read: {error}") from error
    if not isinstance(data, dict):
        check.fail(None, "items", "the file must be a mapping with a list 'items'")
    unknown = sorted(set(map(str, data)) - _FILE_KEYS)
    if unknown:
        check.fail(None, unknown[0], f"unknown field (fields: {', '.join(sorted(_FILE_KEYS))})")
    raw_items = data.get("items")
    if not isinstance(raw_items, list) or not raw_items:
        check.fail(None, "items", "must be a non-empty list")
    default_instruction = check.text(None, "instruction", data.get("instruction"), optional=True)
    items: list[TaskItem] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_items):
        item = _item(check, raw, index, default_instruction)
        if item.id in seen:
            check.fail(item.id, "id", "this id is given twice")
        seen.add(item.id)
        items.append(item)
    return items
