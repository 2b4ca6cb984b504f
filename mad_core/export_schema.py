"""The shape of a MAD Lab debate export, checked completely before anything of it is written.

`validate_export(data)` takes what `json.load` read from an export file (or what
`exports.export_debate` returned) and either returns a normalised copy that `exports.import_debate`
can write and that `show`/`export` can read back, or raises `ExportError(field, message)`:
`field` says where the problem is ("turns[3].status", "config.agents[1].label",
"annotations[0].turn_id") and the message is short whatever the value.

What is checked: first the whole document's depth and size (`check_document`; an export's JSON
text: `read_export_text`), without recursion, so a document nested 100,000 levels deep is refused
before anything walks it; then the top-level keys and the format/version; the `debate` row; the `config`
(everything `DebateConfig` checks except whether its models can be called on this machine);
every turn (all `Turn` fields, unique ids, the prompt as a list of {role, content} texts); the
rows of every child table (`CHILD_TABLES`): only known columns, each of the right type
(SQLite-sized integers, finite numbers, timestamps `format_time` can print, JSON columns of
the right shape, bounded in depth and size); annotations naming turns that exist.

The changes made: an export of a `running` debate becomes `interrupted` (an imported debate
is never running here; its pid, host and owner are cleared) so that it can be resumed. The
metric report under "metrics" (`exports.export_debate`) must be plain bounded JSON; its numbers
are never trusted: `exports.import_debate` does not write it, the importing store computes its own.
Everything else is returned as it was, so a valid export imports losslessly, and checking an
already checked export again returns an equal copy (it is cheap enough to check twice).
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from .config import MAX_NAME, ConfigError, DebateConfig, clip, field_name, one_line, short_repr
from .events import DEBATE_STATUSES, SEAT_MARKS, TURN_KINDS, TURN_STATUSES, Turn

EXPORT_FORMAT = "madlab-debate"
EXPORT_VERSION = 1
# Tables that hang off a debate (besides turns), in export order (the store writes them).
CHILD_TABLES = ("agents", "votes", "decisions", "challenges", "steering", "errors", "annotations", "rounds")
MAX_ID_CHARS = 128
DEBATE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")  # uuid hex, with or without dashes
MAX_TURN_ID_CHARS = 256
MAX_INT = 2**63 - 1  # SQLite's integers are 64-bit
MIN_INT = -(2**63)
MAX_PID = 2**31 - 1
MAX_TIMESTAMP = 253_402_300_799.0  # 9999-12-31 23:59:59 UTC: later times cannot be printed as dates
MAX_JSON_DEPTH = 32  # levels of nesting inside one JSON column or the config
MAX_JSON_VALUES = 1_000_000  # values inside one JSON column or the config
MAX_MESSAGE_CHARS = 300
# A whole document: deeper or larger ones are refused before anything walks them recursively. An
# export's own structure is a few levels deep around its JSON columns (MAX_JSON_DEPTH each): a
# document this deep can only be refused, and the finer checks below name the field when less.
MAX_DOCUMENT_DEPTH = 64
MAX_DOCUMENT_BYTES = 200_000_000  # as JSON text (a parsed document: its size estimated as JSON)
ExportData = dict[str, Any]
_SECRET_KEY = re.compile(r"(^|_)(api_?key|key|token|secret|password)$", re.IGNORECASE)
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


class ExportError(ValueError):
    """An export that cannot be imported; `field` names where (e.g. "turns[3].status")."""

    def __init__(self, field_name: str, message: str):
        self.field = clip(one_line(str(field_name)), 120)
        self.message = clip(one_line(str(message)), MAX_MESSAGE_CHARS)
        super().__init__(f"{self.field}: {self.message}")


# ----- columns ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Column:
    """How one column's value is checked: `check(where, value)` raises ExportError; None only if nullable."""

    check: Callable[[str, Any], None]
    nullable: bool = False

    def __call__(self, where: str, value: Any) -> None:
        if value is None:
            if not self.nullable:
                raise ExportError(where, "must not be null")
            return
        self.check(where, value)


def _expected(where: str, what: str, value: Any) -> ExportError:
    return ExportError(where, f"expected {what}, got {short_repr(value)}")


def text(nullable: bool = False, *, nonempty: bool = False, max_chars: int | None = None,
         choices: tuple[str, ...] | None = None, pattern: re.Pattern[str] | None = None) -> Column:
    def check(where: str, value: Any) -> None:
        if not isinstance(value, str):
            raise _expected(where, "text", value)
        if nonempty and not value.strip():
            raise ExportError(where, "must not be empty")
        if max_chars is not None and len(value) > max_chars:
            raise ExportError(where, f"at most {max_chars:,} characters, got {len(value):,}")
        if choices is not None and value not in choices:
            raise ExportError(where, f"unknown value {short_repr(value)}; valid: {', '.join(choices)}")
        if pattern is not None and not pattern.fullmatch(value):
            raise ExportError(where, f"{short_repr(value)} is not a valid id (letters, digits, _ . : -)")

    return Column(check, nullable)


def whole(low: int = 0, high: int = MAX_INT, nullable: bool = False) -> Column:
    def check(where: str, value: Any) -> None:
        _check_int(where, value, low, high)

    return Column(check, nullable)


def number(low: float = 0.0, high: float = MAX_TIMESTAMP, nullable: bool = False) -> Column:
    def check(where: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _expected(where, "a number", value)
        if isinstance(value, float) and not math.isfinite(value) or not low <= value <= high:
            raise ExportError(where, f"must be between {low:g} and {high:g}, got {short_repr(value)}")

    return Column(check, nullable)


def flag(nullable: bool = False) -> Column:
    def check(where: str, value: Any) -> None:
        if not isinstance(value, bool):
            raise _expected(where, "true or false", value)

    return Column(check, nullable)


def list_of(item: Column, nullable: bool = False) -> Column:
    def check(where: str, value: Any) -> None:
        if not isinstance(value, list):
            raise _expected(where, "a list", value)
        for i, element in enumerate(value):
            item(f"{where}[{i}]", element)

    return Column(check, nullable)


def _check_int(where: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _expected(where, "a whole number", value)
    if not low <= value <= high:
        raise ExportError(where, f"must be between {low:,} and {high:,}, got {short_repr(value)}")


_KKS_ROLE = r"[^:,\n]+: (?:knight|knave|spy)"
_KKS_BALLOT = re.compile(f"{_KKS_ROLE}(?:, {_KKS_ROLE})*")  # kks_mode.assignment_text


def _check_ballot(where: str, value: Any) -> None:
    """A parsed ballot: a solution index, a list of them, {index: points} (JSON keys are text),
    or a text (a Knight-Knave-Spy assignment, kks_mode's per-player vote)."""
    if isinstance(value, str):
        TEXT(where, value)
        if not _KKS_BALLOT.fullmatch(value):
            raise ExportError(where, "a text ballot must be a Knight-Knave-Spy assignment ('Ann: knight, Bo: spy')")
    elif isinstance(value, list):
        for i, index in enumerate(value):
            _check_int(f"{where}[{i}]", index, 0, MAX_INT)
    elif isinstance(value, dict):
        for key, points in value.items():
            if not (isinstance(key, int) and not isinstance(key, bool)
                    or isinstance(key, str) and key.isascii() and key.isdigit() and len(key) < 19):
                raise ExportError(f"{where}.{field_name(key)}", "expected a solution number as the key")
            NUMBER(f"{where}.{field_name(key)}", points)
    else:
        _check_int(where, value, 0, MAX_INT)


def _check_prompt(where: str, value: Any) -> None:
    """The messages a turn received: a list of {role, content, ...} mappings of texts."""
    if not isinstance(value, list):
        raise _expected(where, "a list of messages", value)
    for i, message in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(message, dict):
            raise _expected(at, "a message {role, content}", message)
        for key in ("role", "content"):
            if key not in message:
                raise ExportError(f"{at}.{key}", "missing")
        for key, part in message.items():
            if not isinstance(key, str):
                raise ExportError(f"{at}.{field_name(key)}", "message keys must be text")
            TEXT(f"{at}.{field_name(key)}", part)


def _check_json(where: str, value: Any) -> None:
    """Plain JSON data: text keys, finite numbers, SQLite-sized integers, bounded depth and size."""
    budget = [MAX_JSON_VALUES]
    trail: list[str] = []

    def here() -> str:
        return where + "".join(trail)

    def walk(item: Any, depth: int) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise ExportError(where, f"more than {MAX_JSON_VALUES:,} values")
        if item is None or isinstance(item, (bool, str)):
            return
        if isinstance(item, int):
            _check_int(here(), item, MIN_INT, MAX_INT)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ExportError(here(), f"must be a finite number, got {item}")
        elif isinstance(item, (list, dict)):
            if depth >= MAX_JSON_DEPTH:
                raise ExportError(here(), f"nested more than {MAX_JSON_DEPTH} levels deep")
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, element in pairs:
                if isinstance(item, dict) and not isinstance(key, str):
                    raise ExportError(f"{here()}.{field_name(key)}", "keys must be text")
                trail.append(f".{field_name(key)}" if isinstance(item, dict) else f"[{key}]")
                walk(element, depth + 1)
                trail.pop()
        else:
            raise ExportError(here(), f"not a JSON value: {type(item).__name__}")

    walk(value, 0)


def _check_details(where: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise _expected(where, "a mapping", value)
    _check_json(where, value)


TEXT = text()
TEXT_OR_NULL = text(nullable=True)
NUMBER = number(-float(MAX_INT), float(MAX_INT))
TIME = number(0.0, MAX_TIMESTAMP, nullable=True)
INDEX = whole()
INDEX_OR_NULL = whole(nullable=True)
ID = text(pattern=DEBATE_ID)
NAME_OR_NULL = text(nullable=True, max_chars=MAX_NAME)

DEBATE_COLUMNS: dict[str, Column] = {
    "id": ID, "question": TEXT, "protocol": NAME_OR_NULL, "paradigm": NAME_OR_NULL, "models": TEXT_OR_NULL,
    "status": text(choices=DEBATE_STATUSES), "answer": TEXT_OR_NULL, "reference": TEXT_OR_NULL,
    "reason": TEXT_OR_NULL, "parent_id": text(nullable=True, pattern=DEBATE_ID), "forked_from_seq": INDEX_OR_NULL,
    "pid": whole(0, MAX_PID, nullable=True), "host": text(nullable=True, max_chars=255),
    "owner": text(nullable=True, max_chars=512), "created_at": TIME, "updated_at": TIME, "finished_at": TIME,
    "heartbeat_at": TIME,
}
TURN_COLUMNS: dict[str, Column] = {
    "id": text(nonempty=True, max_chars=MAX_TURN_ID_CHARS), "seq": INDEX, "round": INDEX, "agent": TEXT,
    "kind": text(choices=TURN_KINDS), "model": TEXT, "prompt": Column(_check_prompt), "content": TEXT,
    "status": text(choices=TURN_STATUSES), "error": TEXT_OR_NULL, "answer": TEXT_OR_NULL,
    "agreement": flag(nullable=True), "confidence": whole(MIN_INT, MAX_INT, nullable=True),
    "prompt_tokens": INDEX, "completion_tokens": INDEX, "latency_s": number(), "first_token_s": number(nullable=True),
    "attempts": INDEX, "started_at": number(), "finished_at": number(),
    "seat": text(nullable=True, choices=SEAT_MARKS),  # a seat's turn (Turn.seat; absent in older exports)
}
# Turn fields without a default must be present; the others default as in `Turn`.
TURN_REQUIRED = frozenset(f.name for f in dataclasses.fields(Turn)
                          if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
# Rows of the child tables (without their id and debate_id). Columns that are not nullable must be present.
CHILD_COLUMNS: dict[str, dict[str, Column]] = {
    "agents": {"label": text(nonempty=True), "model": TEXT_OR_NULL, "persona": TEXT_OR_NULL,
               "position": INDEX_OR_NULL},
    "votes": {"round": INDEX, "agent": TEXT, "protocol": TEXT, "raw": TEXT_OR_NULL,
              "ballot": Column(_check_ballot, nullable=True), "valid": flag(), "reason": TEXT_OR_NULL,
              "attempt": INDEX_OR_NULL, "ts": TIME},
    "decisions": {"round": INDEX, "protocol": TEXT, "reached": flag(), "final": flag(), "answer": TEXT_OR_NULL,
                  "winner_agent": TEXT_OR_NULL, "winner_index": INDEX_OR_NULL,
                  "scores": list_of(NUMBER, nullable=True), "solutions": list_of(TEXT, nullable=True),
                  "solution_agents": list_of(TEXT_OR_NULL, nullable=True), "forced": flag(nullable=True),
                  "fallback": TEXT_OR_NULL, "reason": TEXT_OR_NULL, "details": Column(_check_details, nullable=True),
                  "ts": TIME},
    "challenges": {"agent": TEXT, "agrees": flag(nullable=True), "new_answer": TEXT_OR_NULL, "ts": TIME},
    # ts: when the engine applied it; requested_at: when the person acted (absent in older exports)
    "steering": {"action": TEXT, "targets": list_of(TEXT, nullable=True), "message": TEXT_OR_NULL, "ts": TIME,
                 "requested_at": TIME},
    "errors": {"message": TEXT, "agent": TEXT_OR_NULL, "turn_id": TEXT_OR_NULL, "ts": TIME},
    "annotations": {"turn_id": TEXT, "tag": text(nonempty=True), "note": TEXT_OR_NULL, "created_at": TIME,
                    "annotator": TEXT_OR_NULL},
    "rounds": {"round": INDEX, "speakers": list_of(TEXT, nullable=True), "topic": TEXT_OR_NULL,
               "steps": list_of(list_of(TEXT), nullable=True), "ts": TIME},
}


# ----- the whole document, before anything recursive ---------------------------------------------
def _too_large() -> ExportError:
    return ExportError("export", f"larger than {MAX_DOCUMENT_BYTES / 1_000_000:g} MB")


def _too_deep() -> ExportError:
    return ExportError("export", f"nested deeper than {MAX_DOCUMENT_DEPTH} levels")


def read_export_text(text: str | bytes | bytearray) -> Any:
    """The JSON document in an export's text, or ExportError("export", ...) when it is larger than
    MAX_DOCUMENT_BYTES, nested deeper than MAX_DOCUMENT_DEPTH (both found on the text itself, without
    recursion, before it is parsed), not UTF-8 or not JSON."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > MAX_DOCUMENT_BYTES:
            raise _too_large()
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ExportError("export", f"not UTF-8 text (byte offset {exc.start:,})") from None
    if len(text) > MAX_DOCUMENT_BYTES or (not text.isascii()
                                          and len(text.encode("utf-8", "surrogatepass")) > MAX_DOCUMENT_BYTES):
        raise _too_large()
    depth = 0
    for bracket in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):  # brackets outside strings
        depth += 1 if bracket.group() in "[{" else -1
        if depth > MAX_DOCUMENT_DEPTH:
            raise _too_deep()
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # a syntax error, a number too long to read
        raise ExportError("export", f"not JSON: {exc}") from None


def check_document(data: Any) -> None:
    """ExportError("export", ...) when `data` (a parsed document) is nested deeper than
    MAX_DOCUMENT_DEPTH or larger than MAX_DOCUMENT_BYTES as JSON (estimated). Iterative: a document
    nested 100,000 levels deep, even one that holds itself, is refused without recursion."""
    size = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > MAX_DOCUMENT_DEPTH:
                raise _too_deep()
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            size += 2
            for key, value in pairs:
                size += (len(key) + 4 if isinstance(key, str) else 8) if isinstance(item, dict) else 1
                stack.append((value, depth + 1))
        elif isinstance(item, str):
            size += 2 + (len(item) if item.isascii() else len(item.encode("utf-8", "surrogatepass")))
        else:
            size += 8
        if size > MAX_DOCUMENT_BYTES:
            raise _too_large()


def scrub_secrets(value: Any) -> Any:
    """A copy of `value` without any mapping key named like an API key, token or secret.
    (Recursive: give it a checked document, see `check_document`.)"""
    if isinstance(value, dict):
        return {k: scrub_secrets(v) for k, v in value.items() if not _SECRET_KEY.search(str(k))}
    if isinstance(value, (list, tuple)):
        return [scrub_secrets(v) for v in value]
    return value


# ----- the export -------------------------------------------------------------------------------
def validate_export(data: Any) -> ExportData:
    """Check a whole export; return the normalised copy to import, or raise ExportError.

    The whole document's depth and size are checked first (`check_document`), before anything
    walks it recursively. The copy is a new top-level mapping (and a new `debate` row when it was
    running); every other value is the caller's own, unchanged."""
    check_document(data)
    if not isinstance(data, dict):
        raise _expected("export", "a JSON object (a MAD Lab debate export)", data)
    if data.get("format") != EXPORT_FORMAT:
        raise ExportError("format", f"not a MAD Lab debate export: expected {EXPORT_FORMAT!r}, "
                                    f"got {short_repr(data.get('format'))}")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= EXPORT_VERSION:
        raise ExportError("version", f"unsupported export version {short_repr(version)}; "
                                     f"this MAD Lab reads versions 1 to {EXPORT_VERSION}")
    _check_keys("", data, ("format", "version", "debate", "config", "turns", *CHILD_TABLES, "metrics"), "key")
    for key in ("debate", "config"):
        if key not in data:
            raise ExportError(key, "missing")
    debate = data["debate"]
    _check_row("debate", debate, DEBATE_COLUMNS, _non_null(DEBATE_COLUMNS))
    _check_config(data["config"])
    turn_ids = _check_turns(data.get("turns", []))
    for table in CHILD_TABLES:
        columns = CHILD_COLUMNS.get(table)
        if columns is None:  # a table this module was not told about: refuse rather than guess
            raise ExportError(table, "this MAD Lab cannot check this table")
        for i, row in enumerate(_rows(table, data.get(table, []))):
            _check_row(f"{table}[{i}]", row, columns, _non_null(columns))
    _check_references(data, turn_ids)
    if "metrics" in data:  # the exporter's report: plain JSON; import_debate never writes it
        _check_details("metrics", data["metrics"])
    copy = dict(data)
    if debate["status"] == "running":
        copy["debate"] = {**debate, "status": "interrupted",
                          **{key: None for key in ("pid", "host", "owner") if key in debate}}
    return copy


def _non_null(columns: dict[str, Column]) -> frozenset[str]:
    return frozenset(name for name, column in columns.items() if not column.nullable)


def _check_keys(where: str, row: dict[Any, Any], known: Any, what: str) -> None:
    for key in row:
        if not isinstance(key, str) or key not in known:
            at = f"{where}.{field_name(key)}" if where else field_name(key)
            raise ExportError(at, f"unknown {what}; valid: {', '.join(known)}")


def _rows(where: str, rows: Any) -> list[Any]:
    if not isinstance(rows, list):
        raise _expected(where, "a list of rows", rows)
    return rows


def _check_row(where: str, row: Any, columns: dict[str, Column], required: frozenset[str]) -> None:
    if not isinstance(row, dict):
        raise _expected(where, "a mapping of columns", row)
    _check_keys(where, row, columns, "column")
    for name in columns:
        if name in required and name not in row:
            raise ExportError(f"{where}.{name}", "missing")
    for name, value in row.items():
        columns[name](f"{where}.{name}", value)


def _check_turns(turns: Any) -> dict[str, int]:
    """Check every turn; return turn id -> index."""
    ids: dict[str, int] = {}
    for i, turn in enumerate(_rows("turns", turns)):
        _check_row(f"turns[{i}]", turn, TURN_COLUMNS, TURN_REQUIRED)
        if turn["id"] in ids:
            raise ExportError(f"turns[{i}].id", f"duplicate turn id {short_repr(turn['id'])} "
                                                f"(also turns[{ids[turn['id']]}].id)")
        ids[turn["id"]] = i
    return ids


def _check_references(data: ExportData, turn_ids: dict[str, int]) -> None:
    """Annotations name turns of this debate; agent labels are unique (the agents table's key)."""
    for i, note in enumerate(data.get("annotations", [])):
        if note["turn_id"] not in turn_ids:
            raise ExportError(f"annotations[{i}].turn_id",
                              f"names no turn of this debate: {short_repr(note['turn_id'])}")
    labels: dict[str, int] = {}
    for i, agent in enumerate(data.get("agents", [])):
        if agent["label"] in labels:
            raise ExportError(f"agents[{i}].label", f"duplicate label {short_repr(agent['label'])} "
                                                    f"(also agents[{labels[agent['label']]}].label)")
        labels[agent["label"]] = i


def _check_config(config: Any) -> None:
    """The settings DebateConfig would accept (secrets are dropped on import), models not looked up."""
    if not isinstance(config, dict):
        raise _expected("config", "a mapping of settings", config)
    _check_json("config", config)
    try:
        DebateConfig.from_dict(scrub_secrets(config), check_models=False)
    except ConfigError as exc:
        raise ExportError("config" if exc.field == "config" else f"config.{exc.field}", exc.message) from None
