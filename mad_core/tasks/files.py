"""Task sets from the researcher's own files: "bring your own benchmark" (issue 21, item 6).

What it is for: turning a local JSONL, JSON, CSV, TSV or Parquet file, or a Hugging Face dataset
named by its hub id, into `TaskItem`s (mad_core/tasks/sets.py) that an experiment debates and
scores, each item checked exactly as a written task set's item is (`sets._item`: the answer must
read as its kind, a choice answer is the letter of an option, 2-10 options, ids unique).

The format: an experiment spec's ``task_set`` mapping, the ``source`` of the functions below.

  * ``file: data/qa.jsonl`` (``load_task_file``) or ``hf: org/name`` with optional ``config``,
    ``split`` (default "test") and ``revision`` (``load_hf_dataset``); ``load_task_source``
    takes either. A relative ``file`` is read from ``base_dir`` (the spec file's folder) when
    given, else from the current directory. The format is the extension's: ``.jsonl`` (one JSON
    object a line), ``.json`` (JSON lines, or one array of objects), ``.csv`` / ``.tsv`` (a header
    row, then one row an item; read by the csv module), ``.parquet`` (read by pyarrow).
  * ``columns``: our field -> the file's column, fields ``id``, ``question``, ``answer``,
    ``options``, ``answer_type``. A field not mapped is read from the column of its own name;
    ``question`` and ``answer`` must be there, ``id`` defaults to the row number ("1", "2", ...).
    The columns of a JSON file are the keys of its first row.
  * ``answer_type``: one answer kind for all rows (``answer_type: number``), else the column
    ``columns.answer_type`` (or ``answer_type``) gives it per row. Kinds: answer_types.KINDS.
  * ``options``: a list (JSON, Parquet, datasets), or in a text cell a JSON list
    (``["Paris", "Rome"]``) or ``|``-separated options (``Paris | Rome``); a mapping with a list
    ``text`` (the ARC datasets' ``choices``) gives that list. The options of a "choice" row are its
    choices, of a "kks" row the names of the puzzle's people; other rows have none (empty).
  * ``choice_answer``: how a choice row's answer names its option: ``letter`` (default, "B"),
    ``index0`` (0 is A, as MMLU writes it), ``index1`` (1 is A) or ``option`` (the option's text).
  * ``instruction``: the instruction for every item (default: sets.INSTRUCTIONS of its kind).
  * ``limit``: read only the first N rows (1..MAX_ROWS). Without it a source of more than
    MAX_ROWS rows is refused, never cut silently.

Rows are numbered from 1 in the order read: a CSV's header is no row, blank lines are skipped.
Every problem raises `mad_core.config.ConfigError` whose field says where: ``task_set.file``
(missing, unreadable, unknown extension, empty), ``task_set.columns.answer`` ("column 'gold' not
in the file; columns: qid, prompt, ..."), ``task_set.rows[17].answer`` ("column 'gold': 'lots'
does not read as a number answer (...)"), ``task_set.rows[5].id`` (an id given twice),
``task_set.hf`` (not cached while offline, unknown on the Hub).

What it must not do: evaluate a cell (a CSV cell is text: "=1+1" stays "=1+1"; a JSON number
keeps the digits it was written with), read without bound (MAX_ROWS rows, MAX_CELL_CHARS a cell,
MAX_LINE_CHARS a JSON line, MAX_JSON_BYTES a JSON array file), touch the network at import (the
`datasets` library is imported inside `load_hf_dataset` only) or at all while HF_HUB_OFFLINE /
HF_DATASETS_OFFLINE / TRANSFORMERS_OFFLINE is set (the datasets library is then held to its local
cache for the call, even when it was imported before the variable was set; with no variable set, a
Hub that does not accept a connection within HUB_PROBE_SECONDS is treated the same way, so a machine
without network reads the cache at once instead of half a minute of retries), load a local folder
through ``hf``, call a model, or import streamlit.
"""
from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import re
import socket
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..config import ConfigError
from .answer_types import KINDS, LETTERS, option_key
from .sets import TaskItem, _Checker, _item

FIELD = "task_set"  # the spec field every error is named under
MAX_ROWS = 20_000  # rows read from one source
MAX_CELL_CHARS = 100_000  # characters of one cell (a question with its passage fits)
MAX_LINE_CHARS = 1_000_000  # characters of one JSON line
MAX_JSON_BYTES = 64 * 1024 * 1024  # a .json file holding one array is read whole
FIELDS = ("id", "question", "answer", "options", "answer_type")
REQUIRED = ("question", "answer")
FORMATS = (".csv", ".json", ".jsonl", ".parquet", ".tsv")
CHOICE_ANSWERS = ("letter", "index0", "index1", "option")
_COMMON_KEYS = ("columns", "answer_type", "instruction", "limit", "choice_answer")
FILE_KEYS = ("file", *_COMMON_KEYS)  # the keys a file source may have
HF_KEYS = ("hf", "config", "split", "revision", *_COMMON_KEYS)  # the keys a dataset source may have
DEFAULT_SPLIT = "test"
HUB_PROBE_SECONDS = 3.0  # how long the Hub may take to accept a connection before it counts as unreachable
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(?:/[A-Za-z0-9][\w.-]{0,95})?")
_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
_ITEM_FIELDS = {"id": "id", "type": "answer_type", "question": "question", "answer": "answer",
                "choices": "options", "names": "options", "instruction": "instruction"}

Rows = Callable[[list[str]], Iterator[dict[str, Any]]]  # the columns wanted -> the rows, lazily


@dataclass(frozen=True)
class _Settings:
    """A source's keys that apply to every row, checked."""

    where: str
    columns: dict[str, str]
    answer_type: str | None
    instruction: str | None
    limit: int | None
    choice_answer: str


@dataclass(frozen=True)
class _Loaded:
    items: list[TaskItem]
    label: str
    mapping: dict[str, str]
    answer_type: str | None


class _RowProblem(Exception):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field, self.problem = field, problem


class _RowChecker(_Checker):
    """sets._Checker whose failures name the field only: the row is named by the caller."""

    def __init__(self) -> None:
        super().__init__("")

    def fail(self, item_id: Any, field: str, problem: str) -> None:
        raise _RowProblem(field, problem)


# ----- the public functions ------------------------------------------------------------------------
def load_task_file(source: dict, base_dir: str | Path | None = None, *, field: str = FIELD) -> list[TaskItem]:
    """The items of the file ``source["file"]`` read with ``source``'s mapping (module docstring).

    A relative path is read from `base_dir` when given, else from the current directory. Every
    problem raises ConfigError with a field under `field` ("task_set.rows[17].answer")."""
    return _load_file(source, base_dir, field).items


def load_hf_dataset(source: dict, *, field: str = FIELD) -> list[TaskItem]:
    """The items of the Hugging Face dataset ``source["hf"]`` (``config``, ``split``, ``revision``)
    read with ``source``'s mapping, through `datasets.load_dataset` (its local cache when offline)."""
    return _load_hf(source, field).items


def load_task_source(source: dict, base_dir: str | Path | None = None, *, field: str = FIELD) -> list[TaskItem]:
    """`load_task_file` for a source with ``file``, `load_hf_dataset` for one with ``hf``."""
    return _load_any(source, base_dir, field).items


def is_task_source(value: Any) -> bool:
    """Whether `value` is a source these functions read: a mapping with ``file`` or ``hf``."""
    return isinstance(value, dict) and ("file" in value or "hf" in value)


def describe(source: dict, base_dir: str | Path | None = None, *, items: list[TaskItem] | None = None,
             field: str = FIELD) -> str:
    """One line for logs: "qa.jsonl (120 rows, columns qid→id, prompt→question, gold→answer; answer
    type number)". With `items` (already loaded) the source is not read again and the columns shown
    are the mapped ones; without, it is loaded (and its problems raised) and every column used shown."""
    if items is None:
        loaded = _load_any(source, base_dir, field)
    else:
        given = source.get("columns") if isinstance(source.get("columns"), dict) else {}
        mapping = {name: str(given.get(name, name)) for name in FIELDS if name in given or name in REQUIRED}
        loaded = _Loaded(list(items), _label(source), mapping,
                         source.get("answer_type") if isinstance(source.get("answer_type"), str) else None)
    columns = ", ".join(f"{column}→{name}" for name, column in loaded.mapping.items())
    kind = f"; answer type {loaded.answer_type}" if loaded.answer_type else "; answer type per row"
    count = len(loaded.items)
    return f"{loaded.label} ({count} row{'s' if count != 1 else ''}, columns {columns}{kind})"


def _label(source: dict) -> str:
    """How logs name a source: the file's name, or "hf:org/name (config) [split]"."""
    if "file" in source:
        return Path(str(source["file"]).strip()).name
    config = f" ({source['config']})" if source.get("config") else ""
    return f"hf:{str(source.get('hf')).strip()}{config} [{source.get('split') or DEFAULT_SPLIT}]"


def _load_any(source: Any, base_dir: str | Path | None, field: str) -> _Loaded:
    if isinstance(source, dict) and "file" in source and "hf" not in source:
        return _load_file(source, base_dir, field)
    if isinstance(source, dict) and "hf" in source and "file" not in source:
        return _load_hf(source, field)
    raise ConfigError(field, "a task source is a mapping with either 'file' (a local file) or 'hf' (a Hugging "
                             "Face dataset)")


# ----- the source's keys ---------------------------------------------------------------------------
def _settings(source: Any, keys: tuple[str, ...], where: str) -> _Settings:
    if not isinstance(source, dict):
        raise ConfigError(where, f"must be a mapping, not {type(source).__name__}")
    for key in source:
        if key not in keys:
            raise ConfigError(f"{where}.{key}", f"unknown field; fields: {', '.join(keys)}")
    columns = source.get("columns") or {}
    if not isinstance(columns, dict):
        raise ConfigError(f"{where}.columns", "must be a mapping of field -> the file's column name")
    for name, column in columns.items():
        if name not in FIELDS:
            raise ConfigError(f"{where}.columns.{name}", f"unknown field; fields: {', '.join(FIELDS)}")
        if not isinstance(column, str) or not column:
            raise ConfigError(f"{where}.columns.{name}", f"must be a column name, not {column!r}")
    answer_type = source.get("answer_type")
    if answer_type is not None and answer_type not in KINDS:
        raise ConfigError(f"{where}.answer_type", f"must be one of {', '.join(KINDS)}, not {answer_type!r}")
    if answer_type is not None and "answer_type" in columns:
        raise ConfigError(f"{where}.answer_type", "give one answer type for all rows or a column "
                                                  "(columns.answer_type), not both")
    instruction = source.get("instruction")
    if instruction is not None and (not isinstance(instruction, str) or not instruction.strip()):
        raise ConfigError(f"{where}.instruction", f"must be a non-empty string, not {instruction!r}")
    limit = source.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_ROWS):
        raise ConfigError(f"{where}.limit", f"must be a whole number from 1 to {MAX_ROWS:,}, not {limit!r}")
    choice_answer = source.get("choice_answer", "letter")
    if choice_answer not in CHOICE_ANSWERS:
        raise ConfigError(f"{where}.choice_answer", f"must be one of {', '.join(CHOICE_ANSWERS)}, "
                                                    f"not {choice_answer!r}")
    return _Settings(where, dict(columns), answer_type, instruction.strip() if instruction else None,
                     limit, choice_answer)


def _mapping(settings: _Settings, columns: list[str], what: str) -> dict[str, str]:
    """Our field -> the source's column, every mapped column checked to be there."""
    where = settings.where
    for name, column in settings.columns.items():
        if column not in columns:
            raise ConfigError(f"{where}.columns.{name}", f"column {column!r} not in the {what}; "
                                                         f"columns: {_listing(columns)}")
    mapping: dict[str, str] = {}
    for name in FIELDS:
        if name in settings.columns:
            mapping[name] = settings.columns[name]
        elif name in columns and not (name == "answer_type" and settings.answer_type):
            mapping[name] = name
        elif name in REQUIRED:
            raise ConfigError(f"{where}.columns.{name}", f"no column {name!r} in the {what} and none mapped "
                                                         f"to {name}; columns: {_listing(columns)}")
    if settings.answer_type is None and "answer_type" not in mapping:
        raise ConfigError(f"{where}.answer_type", "the answer type is not given: set answer_type (one of "
                                                  f"{', '.join(KINDS)}) for all rows, or columns.answer_type")
    return mapping


def _listing(columns: list[str], most: int = 20) -> str:
    shown = ", ".join(str(column) for column in columns[:most])
    return shown + (f", ... ({len(columns) - most} more)" if len(columns) > most else "") if columns else "(none)"


# ----- rows into items -----------------------------------------------------------------------------
def _items(settings: _Settings, columns: list[str], rows: Rows, what: str) -> tuple[list[TaskItem], dict]:
    mapping = _mapping(settings, columns, what)
    wanted = list(dict.fromkeys(mapping.values()))
    cap = settings.limit or MAX_ROWS
    items: list[TaskItem] = []
    seen: dict[str, int] = {}
    check = _RowChecker()
    for number, row in enumerate(rows(wanted), start=1):
        if number > cap:
            if settings.limit:
                break
            raise ConfigError(f"{settings.where}.limit", f"the {what} has more than {MAX_ROWS:,} rows: set limit "
                                                         f"(at most {MAX_ROWS:,}) to take the first rows")
        item = _row_item(check, settings, mapping, row, number)
        if item.id in seen:
            raise ConfigError(f"{settings.where}.rows[{number}].id",
                              f"id {item.id!r} is given twice (rows {seen[item.id]} and {number})")
        seen[item.id] = number
        items.append(item)
    if not items:
        raise ConfigError(f"{settings.where}.{'file' if what == 'file' else 'hf'}", f"the {what} has no rows")
    return items, mapping


def _row_item(check: _RowChecker, settings: _Settings, mapping: dict[str, str], row: dict[str, Any],
              number: int) -> TaskItem:
    where = f"{settings.where}.rows[{number}]"
    if not isinstance(row, dict):
        raise ConfigError(where, f"must be an object (a mapping of column -> value), not {type(row).__name__}")
    item_id: str | None = None

    def problem(name: str, text: str) -> ConfigError:
        column = mapping.get(name)
        about = ", ".join(part for part in (f"id {item_id!r}" if item_id and name != "id" and "id" in mapping else "",
                                            f"column {column!r}" if column else "") if part)
        return ConfigError(f"{where}.{name}", f"{about}: {text}" if about else text)

    try:
        item_id = _cell(row, mapping, "id") if "id" in mapping else str(number)
        kind = settings.answer_type or _cell(row, mapping, "answer_type")
        kind = kind.strip().lower() if isinstance(kind, str) else kind
        if kind not in KINDS:
            raise _RowProblem("answer_type", f"must be one of {', '.join(KINDS)}, not {kind!r}")
        options = _options(row.get(mapping["options"])) if "options" in mapping else None
        if options is not None and kind not in ("choice", "kks"):
            raise _RowProblem("options", f"only rows of type 'choice' or 'kks' have options, not {kind!r}")
        question = _cell(row, mapping, "question")
        answer = _answer(row.get(mapping["answer"]), kind, options, settings.choice_answer)
        if answer is None:
            raise _RowProblem("answer", "the cell is empty or missing")
        raw = {"id": item_id, "type": kind, "question": question, "answer": answer,
               "choices" if kind == "choice" else "names": options}
        return _item(check, raw, number - 1, settings.instruction)
    except _RowProblem as error:
        name = _ITEM_FIELDS.get(error.field, error.field)
        hint = "; map columns.options" if name == "options" and "options" not in mapping else ""
        raise problem(name, error.problem + hint) from None


def _cell(row: dict[str, Any], mapping: dict[str, str], field: str) -> str:
    """The text of `field`'s cell in `row`; an empty or missing cell is a problem."""
    text = _text(row.get(mapping[field]), field)
    if text is None:
        raise _RowProblem(field, "the cell is empty or missing")
    return text


def _text(value: Any, field: str) -> str | None:
    """A cell as text (None when empty): a string as it is, a whole number's digits, a decimal's
    shortest form; a true/false value, list or mapping is no text."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise _RowProblem(field, f"a true/false value ({value}) is not text")
    if isinstance(value, int):
        value = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _RowProblem(field, f"{value!r} is not a finite number")
        value = str(int(value)) if value.is_integer() and abs(value) < 2 ** 53 else repr(value)
    elif isinstance(value, Decimal):
        value = str(value)
    if not isinstance(value, str):
        raise _RowProblem(field, f"a {type(value).__name__} is not text")
    if len(value) > MAX_CELL_CHARS:
        raise _RowProblem(field, f"a cell of {len(value):,} characters (at most {MAX_CELL_CHARS:,})")
    return value if value.strip() else None


def _options(value: Any) -> list[str] | None:
    """A row's options: a list, a mapping with a list "text", a JSON list or "a | b" in a text cell."""
    if isinstance(value, dict) and isinstance(value.get("text"), (list, tuple)):
        value = value["text"]
    if isinstance(value, str):
        if len(value) > MAX_CELL_CHARS:
            raise _RowProblem("options", f"a cell of {len(value):,} characters (at most {MAX_CELL_CHARS:,})")
        text = value.strip()
        if not text:
            return None
        parsed = None
        if text.startswith("["):
            with contextlib.suppress(ValueError):
                parsed = json.loads(text, parse_float=str, parse_constant=_no_constant)
        value = parsed if isinstance(parsed, list) else text.split("|")
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or hasattr(value, "keys"):
        raise _RowProblem("options", f"must be a list of options, not a {type(value).__name__}")
    if not value:
        return None
    options = []
    for index, option in enumerate(value, start=1):
        text = _text(option, "options")
        if text is None:
            raise _RowProblem("options", f"option {index} is empty")
        options.append(text.strip())
    return options


def _answer(value: Any, kind: str, options: list[str] | None, choice_answer: str) -> str | None:
    """A row's answer as text; a choice answer given by number or by option text made its letter."""
    if isinstance(value, bool):
        if kind != "yes_no":
            raise _RowProblem("answer", f"a true/false value ({value}) is no {kind} answer")
        return "yes" if value else "no"
    answer = _text(value, "answer")
    if answer is None or kind != "choice" or choice_answer == "letter" or not options:
        return answer
    answer = answer.strip()
    if choice_answer == "option":
        letters = [LETTERS[i] for i, option in enumerate(options) if option_key(option) == option_key(answer)]
        if len(letters) != 1:
            raise _RowProblem("answer", f"{answer!r} is none of the options (choice_answer: option)")
        return letters[0]
    first = 0 if choice_answer == "index0" else 1
    last = first + min(len(options), len(LETTERS)) - 1
    if not re.fullmatch(r"[0-9]{1,2}", answer) or not first <= int(answer) <= last:
        raise _RowProblem("answer", f"{answer!r} is not an option's number ({first}-{last}; "
                                    f"choice_answer: {choice_answer})")
    return LETTERS[int(answer) - first]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


# ----- files ---------------------------------------------------------------------------------------
def _load_file(source: Any, base_dir: str | Path | None, field: str) -> _Loaded:
    settings = _settings(source, FILE_KEYS, field)
    path = _file_path(source.get("file"), base_dir, f"{field}.file")
    columns, rows = _open(path, settings)
    items, mapping = _items(settings, columns, rows, "file")
    return _Loaded(items, _label(source), mapping, settings.answer_type)


def _file_path(name: Any, base_dir: str | Path | None, where: str) -> Path:
    if not isinstance(name, (str, Path)) or not str(name).strip():
        raise ConfigError(where, f"must be the path of a file, not {name!r}")
    path = Path(str(name).strip()).expanduser()
    if not path.is_absolute():
        path = Path(base_dir if base_dir is not None else Path.cwd()) / path
    if path.suffix.lower() not in FORMATS:
        raise ConfigError(where, f"{path.name!r}: {path.suffix or 'no extension'!r} is not a task file format; "
                                 f"formats: {', '.join(FORMATS)}")
    if not path.exists():
        raise ConfigError(where, f"no such file: {path}")
    if not path.is_file():
        raise ConfigError(where, f"not a file: {path}")
    return path


def _open(path: Path, settings: _Settings) -> tuple[list[str], Rows]:
    """The file's columns and its rows (lazily), by its extension; reading problems as ConfigError."""
    where, suffix = settings.where, path.suffix.lower()
    try:
        if suffix == ".parquet":
            return _parquet(path, where)
        if suffix in (".csv", ".tsv"):
            return _table(path, where, "\t" if suffix == ".tsv" else ",")
        return _json(path, where, array_allowed=suffix == ".json")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{where}.file", f"{path.name} cannot be read: {_reason(error)}") from None


def _reason(error: BaseException) -> str:
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8 text"
    return f"{type(error).__name__}: {error}"


def _guarded(rows: Iterator[dict[str, Any]], path: Path, where: str) -> Iterator[dict[str, Any]]:
    """`rows`, with a reading problem in the middle of the file raised as ConfigError."""
    try:
        yield from rows
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{where}.file", f"{path.name} cannot be read: {_reason(error)}") from None


def _json(path: Path, where: str, *, array_allowed: bool) -> tuple[list[str], Rows]:
    with path.open(encoding="utf-8-sig") as handle:
        start = handle.read(4096).lstrip()
    if array_allowed and start.startswith("["):
        return _json_array(path, where)
    lines = _json_lines(path, where)
    first = next(lines, None)
    if first is None:
        raise ConfigError(f"{where}.file", f"{path.name} has no rows")
    columns = [str(key) for key in first]

    def rows(wanted: list[str]) -> Iterator[dict[str, Any]]:
        yield first
        yield from lines
    return columns, rows


def _json_lines(path: Path, where: str) -> Iterator[dict[str, Any]]:
    def read() -> Iterator[dict[str, Any]]:
        with path.open(encoding="utf-8-sig") as handle:
            number = 0
            while line := handle.readline(MAX_LINE_CHARS + 1):
                if not line.strip():
                    continue
                number += 1
                if len(line) > MAX_LINE_CHARS:
                    raise ConfigError(f"{where}.rows[{number}]", f"a line longer than {MAX_LINE_CHARS:,} characters")
                yield _json_row(line, f"{where}.rows[{number}]")
    return _guarded(read(), path, where)


def _json_row(text: str, where: str) -> dict[str, Any]:
    try:
        row = json.loads(text, parse_float=str, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise ConfigError(where, f"not valid JSON: {error}") from None
    if not isinstance(row, dict):
        raise ConfigError(where, f"must be a JSON object (column -> value), not {type(row).__name__}")
    return row


def _json_array(path: Path, where: str) -> tuple[list[str], Rows]:
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise ConfigError(f"{where}.file", f"{path.name}: a JSON array of {size:,} bytes (at most "
                                           f"{MAX_JSON_BYTES:,}); write it as JSON lines (.jsonl)")
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"), parse_float=str, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise ConfigError(f"{where}.file", f"{path.name} is not valid JSON: {error}") from None
    if not data:
        raise ConfigError(f"{where}.file", f"{path.name} has no rows")
    if not isinstance(data, list) or not isinstance(data[0], dict):
        raise ConfigError(f"{where}.file", f"{path.name}: a JSON array file holds objects (column -> value)")
    columns = [str(key) for key in data[0]]
    return columns, lambda wanted: iter(data)


def _table(path: Path, where: str, delimiter: str) -> tuple[list[str], Rows]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        try:
            header = next(csv.reader(handle, delimiter=delimiter), None)
        except csv.Error as error:
            raise ConfigError(f"{where}.file", f"{path.name}: its header row cannot be read: {error}") from None
    if not header or not any(cell.strip() for cell in header):
        raise ConfigError(f"{where}.file", f"{path.name} has no rows (not even a header row)")
    columns = [cell.strip() for cell in header]
    twice = sorted({column for column in columns if columns.count(column) > 1})
    if twice:
        raise ConfigError(f"{where}.file", f"{path.name}: the header names column {twice[0]!r} twice")

    def rows(wanted: list[str]) -> Iterator[dict[str, Any]]:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle, delimiter=delimiter)
            next(reader, None)
            number = 0
            while True:
                try:
                    cells = next(reader, None)
                except csv.Error as error:
                    raise ConfigError(f"{where}.rows[{number + 1}]", f"line {reader.line_num}: {error}") from None
                if cells is None:
                    return
                if not any(cell.strip() for cell in cells):
                    continue
                number += 1
                if len(cells) != len(columns):
                    raise ConfigError(f"{where}.rows[{number}]", f"line {reader.line_num} has {len(cells)} cells, "
                                                                 f"the header {len(columns)}")
                yield dict(zip(columns, cells))
    return columns, lambda wanted: _guarded(rows(wanted), path, where)


def _parquet(path: Path, where: str) -> tuple[list[str], Rows]:
    import pyarrow
    import pyarrow.parquet

    try:
        parquet = pyarrow.parquet.ParquetFile(path)
    except (pyarrow.ArrowException, ValueError) as error:
        raise ConfigError(f"{where}.file", f"{path.name} is not a Parquet file: {error}") from None
    columns = list(parquet.schema_arrow.names)

    def rows(wanted: list[str]) -> Iterator[dict[str, Any]]:
        try:
            for batch in parquet.iter_batches(batch_size=1024, columns=wanted):
                yield from batch.to_pylist()
        except (pyarrow.ArrowException, ValueError, OSError) as error:
            raise ConfigError(f"{where}.file", f"{path.name} cannot be read: {error}") from None
    return columns, rows


# ----- Hugging Face datasets -----------------------------------------------------------------------
def _load_hf(source: Any, field: str) -> _Loaded:
    settings = _settings(source, HF_KEYS, field)
    hub_id = source.get("hf")
    if not isinstance(hub_id, str) or not _HUB_ID.fullmatch(hub_id.strip()) or ".." in hub_id:
        raise ConfigError(f"{field}.hf", f"must be a dataset id on the Hugging Face Hub ('name' or 'org/name'), "
                                         f"not {hub_id!r}")
    hub_id = hub_id.strip()
    for key in ("config", "split", "revision"):
        value = source.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{field}.{key}", f"must be a non-empty string, not {value!r}")
    split = source.get("split") or DEFAULT_SPLIT
    dataset = _hf_dataset(hub_id, source.get("config"), split, source.get("revision"), field)
    columns = [str(column) for column in dataset.column_names]

    def rows(wanted: list[str]) -> Iterator[dict[str, Any]]:
        count = min(len(dataset), (settings.limit or MAX_ROWS) + 1)
        return iter(dataset.select_columns(wanted).select(range(count)))
    items, mapping = _items(settings, columns, rows, "dataset")
    return _Loaded(items, _label(source), mapping, settings.answer_type)


def hub_offline() -> bool:
    """Whether the environment asks for no network (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE or
    TRANSFORMERS_OFFLINE set to 1 / true / yes / on)."""
    return any(os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE") for name in _OFFLINE_VARIABLES)


def _hub_reachable(timeout: float = HUB_PROBE_SECONDS) -> bool:
    """Whether a TCP connection to the Hub's host opens within `timeout` seconds (HF_ENDPOINT's host;
    True without a try when a proxy is set, which only the library knows how to go through). Without
    it, the library retries an unreachable Hub for about half a minute before it reads its cache."""
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    import huggingface_hub.constants

    address = urllib.parse.urlsplit(huggingface_hub.constants.ENDPOINT)
    if not address.hostname:
        return True
    port = address.port or (80 if address.scheme == "http" else 443)
    result: list[bool] = []

    def connect() -> None:  # in a thread: name resolution has no timeout of its own
        try:
            socket.create_connection((address.hostname, port), timeout=timeout).close()
            result.append(True)
        except OSError:
            result.append(False)
    probe = threading.Thread(target=connect, name="hub-probe", daemon=True)
    probe.start()
    probe.join(timeout)
    return bool(result and result[0])


@contextlib.contextmanager
def _held_offline(hold: bool) -> Iterator[None]:
    """While inside, the datasets library and huggingface_hub are in offline mode when `hold`: both
    read their offline flag from the environment once, at import, and may have been imported before
    the variable was set. The flags are put back as they were."""
    if not hold:
        yield
        return
    import datasets.config
    import huggingface_hub.constants

    flags = [(datasets.config, "HF_HUB_OFFLINE"), (datasets.config, "HF_DATASETS_OFFLINE"),
             (huggingface_hub.constants, "HF_HUB_OFFLINE")]
    before = [getattr(module, name, None) for module, name in flags]
    try:
        for module, name in flags:
            setattr(module, name, True)
        yield
    finally:
        for (module, name), value in zip(flags, before):
            setattr(module, name, value)


def _hf_dataset(hub_id: str, config: str | None, split: str, revision: str | None, field: str) -> Any:
    """`datasets.load_dataset(hub_id, config, split=split)`, its failures as ConfigError."""
    try:
        import datasets
    except ImportError:
        raise ConfigError(f"{field}.hf", "reading a Hugging Face dataset needs the 'datasets' package "
                                         "(pip install -r requirements.txt)") from None
    why_offline = "HF_HUB_OFFLINE is set" if hub_offline() else None
    if why_offline is None and not _hub_reachable():
        why_offline = "the Hugging Face Hub cannot be reached"
    try:
        with _held_offline(why_offline is not None):
            dataset = datasets.load_dataset(hub_id, name=config, split=split, revision=revision)
    except Exception as error:  # the library raises many kinds; each becomes a ConfigError naming the field
        raise _hf_error(error, hub_id, config, split, why_offline, field) from None
    if not hasattr(dataset, "column_names") or not hasattr(dataset, "select_columns"):
        raise ConfigError(f"{field}.split", f"{hub_id}: split {split!r} did not give one table of rows")
    return dataset


def _hf_error(error: Exception, hub_id: str, config: str | None, split: str, why_offline: str | None,
              field: str) -> ConfigError:
    text = " ".join(str(error).split())[:300]
    call = f"load_dataset({hub_id!r}" + (f", {config!r}" if config else "") + f", split={split!r})"
    download = f'python -c "from datasets import load_dataset; {call}"'
    if isinstance(error, (ConnectionError, FileNotFoundError, TimeoutError)) or _is_network_error(error):
        if why_offline:
            return ConfigError(f"{field}.hf", f"{hub_id} is not in the local cache and the network is off "
                                              f"({why_offline}): run once with the network, or download it with "
                                              f"{download}")
        if isinstance(error, FileNotFoundError) and not isinstance(error, ConnectionError):
            return ConfigError(f"{field}.hf", f"{hub_id}: no such dataset on the Hugging Face Hub, or it is gated "
                                              f"or private and not in the local cache ({text})")
        return ConfigError(f"{field}.hf", f"{hub_id} is not in the local cache and the Hugging Face Hub cannot be "
                                          f"reached ({text}): run once with the network, or download it with "
                                          f"{download}")
    if isinstance(error, ValueError) and "split" in text.lower():
        return ConfigError(f"{field}.split", f"{hub_id}: {text}")
    if isinstance(error, ValueError) and "config" in text.lower():
        return ConfigError(f"{field}.config", f"{hub_id}: {text}")
    return ConfigError(f"{field}.hf", f"{hub_id} cannot be loaded: {type(error).__name__}: {text}")


def _is_network_error(error: BaseException) -> bool:
    """Whether `error` (or what caused it) is the Hub being unreachable or offline mode refusing a call."""
    names = {"OfflineModeIsEnabled", "LocalEntryNotFoundError", "ConnectError", "ConnectTimeout",
             "TimeoutException", "ReadTimeout"}
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(cls.__name__ in names for cls in type(current).__mro__):
            return True
        current = current.__cause__ or current.__context__
    return False

