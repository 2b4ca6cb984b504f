"""Debates out of and into the archive: JSON export/import, a Markdown handout, CSV tables.

`export_debate` is lossless (everything about one debate as plain JSON-able data, with its
metric report); `import_debate` checks an export completely before writing anything
(`export_schema.validate_export`) and scrubs secrets from its configuration. `to_markdown`
renders safely (every stored text escaped: `md_safe`); every CSV cell MAD Lab writes goes
through `csv_safe`, so no spreadsheet runs one as a formula. `annotations_csv` is the
annotation export for inter-rater work. All of it reads and writes through the Store's public
methods and `transaction()`.
"""
from __future__ import annotations

import csv
import datetime
import io
import json
import re
import time
import uuid
from typing import Any, Callable

from .codebook import ensure_tag
from .events import DISCUSSION_KINDS, Turn
from .export_schema import CHILD_TABLES, EXPORT_FORMAT, EXPORT_VERSION, read_export_text, scrub_secrets, validate_export
from .metrics.report import csv_columns, debate_report, markdown_lines
from .store import Store
from .store.rows import insert_turn
from .tasks.answer_types import NO_READABLE, DebateAnswerType, shown_answer
from .view import DebateView

# The annotation export (`annotations_csv`): one row per annotation, its turn (where it stands: round,
# `turn_seq` = its 0-based place in the debate, the N of a fork's "after turn N"; whether a fork copied
# it from its parent) and what came just before it in the transcript (a turn, or a moderator message:
# `previous_kind` "moderator message", `previous_agent` "Moderator", `previous_to` whom it addressed).
ANNOTATION_COLUMNS = ("debate_id", "question", "turn_id", "round", "turn_seq", "agent", "kind", "copied_from_parent",
                      "text", "previous_kind", "previous_agent", "previous_to", "previous_text", "tag", "note",
                      "annotator", "created_at")
MODERATOR_MESSAGE = "moderator message"  # `previous_kind` of a moderator message


def _iso_time(ts: Any) -> str:
    """A timestamp as ISO 8601 UTC to the second ("" when missing): sortable across time zones."""
    if not isinstance(ts, (int, float)) or isinstance(ts, bool):
        return ""
    try:
        return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return ""


_SCRIPT_URL = re.compile(r"(?i)\b(javascript|vbscript)(\s*):")
# A cell a spreadsheet would run: a formula character (= + - @) after any whitespace (space, tab,
# newline, CR, no-break and other Unicode spaces) or invisible format characters (zero-width
# space and joiners, word joiner, byte-order mark), or a cell starting with a tab or a CR.
_FORMULA = re.compile(r"[\s\u200b-\u200f\u2060-\u2064\ufeff]*[=+\-@]")
_CONTROL_START = ("\t", "\r")


def md_safe(text: Any) -> Any:
    """Text that renders literally in Markdown: HTML escaped, link brackets escaped, script URLs broken.

    Non-strings are returned unchanged."""
    if not isinstance(text, str):
        return text
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("[", "\\[").replace("]", "\\]")
    return _SCRIPT_URL.sub(r"\1\2&#58;", text)


def csv_safe(value: Any) -> Any:
    """A CSV cell no spreadsheet runs as a formula (the one rule of every CSV MAD Lab writes): text
    starting with = + - @ tab or CR, or with = + - @ after any whitespace or invisible characters
    (" =1+1", "\\n=1+1", a no-break space), gets a leading apostrophe (OWASP's advice). Text that
    merely looks like a negative number ("-3") is text starting with "-" and gets one too; numbers
    (int, float) are written as they are: -3 stays -3. Non-strings are returned unchanged."""
    if isinstance(value, str) and (value.startswith(_CONTROL_START) or _FORMULA.match(value)):
        return "'" + value
    return value


def records_csv(records: list[dict[str, Any]]) -> str:
    """Records as CSV (columns in the order they first appear); every cell through `csv_safe`, so no
    formula reaches a spreadsheet."""
    out = io.StringIO()
    columns = list(dict.fromkeys(key for record in records for key in record))
    writer = csv.DictWriter(out, fieldnames=columns)
    writer.writeheader()
    for record in records:
        writer.writerow({key: csv_safe(value) for key, value in record.items()})
    return out.getvalue()


def _deep_map(value: Any, fn: Callable[[Any], Any]) -> Any:
    """`fn` applied to every leaf of nested dicts and lists (keys kept)."""
    if isinstance(value, dict):
        return {key: _deep_map(item, fn) for key, item in value.items()}
    if isinstance(value, list):
        return [_deep_map(item, fn) for item in value]
    return fn(value)


def format_time(ts: float | None) -> str:
    """Local time as YYYY-MM-DD HH:MM, or "-"."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def clock_time(ts: Any) -> str:
    """Local time as YYYY-MM-DD HH:MM:SS, or "-" (steering: seconds matter)."""
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not ts:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def steering_times(row: dict[str, Any]) -> str:
    """A steering row's times for people: "applied 10:00:05 (requested 10:00:03)"; an action stored
    before its request time was kept: "applied 10:00:05"."""
    applied = clock_time(row.get("ts"))
    if row.get("requested_at") is None:
        return f"applied {applied}"
    return f"applied {applied} (requested {clock_time(row['requested_at'])})"


# How a ChallengeResult's `agrees` reads.
STANCES = {True: "agrees", False: "challenges", None: "takes no clear stance"}


def describe_ballot(ballot: Any) -> str:
    """A ballot for people: a single 0-based index reads "solution N" (1-based), others as JSON."""
    if isinstance(ballot, int) and not isinstance(ballot, bool):
        return f"solution {ballot + 1}"
    return json.dumps(ballot, ensure_ascii=False)


def _strip_ids(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("id", "debate_id")}


def annotations_csv(store: Store, debate_id: str | None = None) -> str:
    """Annotations for inter-rater work, as CSV (ANNOTATION_COLUMNS; every cell `csv_safe`): one
    row per annotation of the debate (of the whole archive when `debate_id` is None), with its
    turn's text and place, and as context what the transcript shows just before it: the turn
    before it, or the moderator message in between (pause / resume / stop are skipped: they say
    nothing to the agents)."""
    where, args = ("WHERE a.debate_id = ?", [debate_id]) if debate_id else ("", [])
    sql = ("SELECT a.*, d.question, d.created_at AS debate_created FROM annotations a "
           f"LEFT JOIN debates d ON d.id = a.debate_id {where} ORDER BY d.created_at, a.debate_id, a.id")
    notes = store.query(sql, args)
    places: dict[str, dict[str, dict[str, Any]]] = {}
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=ANNOTATION_COLUMNS)
    writer.writeheader()
    for note in notes:
        if note["debate_id"] not in places:
            places[note["debate_id"]] = _turn_places(store, note["debate_id"])
        place = places[note["debate_id"]].get(note["turn_id"], {})
        row = {"debate_id": note["debate_id"], "question": note["question"], "turn_id": note["turn_id"],
               **place,
               "tag": note["tag"], "note": note["note"] or "", "annotator": note.get("annotator") or "",
               "created_at": _iso_time(note["created_at"])}
        writer.writerow({key: csv_safe(row.get(key, "")) for key in ANNOTATION_COLUMNS})
    return out.getvalue()


def _turn_places(store: Store, debate_id: str) -> dict[str, dict[str, Any]]:
    """turn id -> its annotation-CSV columns (turn and context), in the transcript's own order
    (`DebateView.timeline`, the order the Transcripts page draws: turns and moderator messages)."""
    if store.get_debate(debate_id) is None:
        return {}
    view = DebateView.from_store(store, debate_id)
    places: dict[str, dict[str, Any]] = {}
    before: dict[str, Any] = {}
    for kind, item in view.timeline:
        if kind == "steer":
            if item.action == "message":
                before = {"previous_kind": MODERATOR_MESSAGE, "previous_agent": "Moderator",
                          "previous_to": ", ".join(item.targets) if item.targets else "all agents",
                          "previous_text": item.message or ""}
            continue
        turn = view.turns[view.turn_index(item)]
        places[turn.id] = {"round": turn.round, "turn_seq": "" if turn.seq is None else turn.seq,
                           "agent": turn.agent, "kind": turn.kind, "text": turn.text,
                           "copied_from_parent": "yes" if view.from_parent(turn) else "no", **before}
        before = {"previous_kind": turn.kind, "previous_agent": turn.agent, "previous_to": "",
                  "previous_text": turn.text}
    return places


def export_debate(store: Store, debate_id: str, *, embed: Any = None) -> dict[str, Any]:
    """Everything about one debate as plain JSON-able data (lossless; see import_debate), with
    its metric report under "metrics" (`metrics_report`; an import recomputes it)."""
    debate = store.get_debate(debate_id)
    if debate is None:
        raise LookupError(f"no debate with id {debate_id!r}")
    config = debate.pop("config")
    data: dict[str, Any] = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "debate": debate,
                            "config": config, "turns": [t.to_dict() for t in store.turns(debate_id)]}
    for table in CHILD_TABLES:
        data[table] = [_strip_ids(row) for row in store.children(table, debate_id)]
    data["metrics"] = debate_report(store, debate_id, embed=embed)
    return data


def import_debate(store: Store, data: Any, *, new_id: bool = False) -> str:
    """Re-create an exported debate (what `json.load` read from an export, or its JSON text);
    with `new_id` under a fresh id. Returns the id.

    The export is checked completely first (`export_schema.validate_export`: ExportError
    naming the field, and nothing written), its depth and size before anything walks it
    ("nested deeper than 64 levels", "larger than 200 MB"); then secrets are scrubbed from its
    configuration; the imported debate belongs to nobody (never 'running')."""
    data = validate_export(read_export_text(data) if isinstance(data, (str, bytes, bytearray)) else data)
    data = {**data, "config": scrub_secrets(data["config"])}
    debate_id = uuid.uuid4().hex if new_id else data["debate"]["id"]
    with store.transaction():
        if store.get_debate(debate_id) is not None:
            raise ValueError(f"debate {debate_id} already exists; import it with a new id")
        store.insert("debates", {**data["debate"], "id": debate_id, "config": data["config"], "owner": None})
        for turn in data.get("turns", []):
            insert_turn(store, debate_id, Turn.from_dict(turn))
        for table in CHILD_TABLES:
            for row in data.get(table, []):
                if table == "annotations":  # its tag joins the codebook (in the codebook's spelling)
                    row = {**row, "tag": ensure_tag(store, " ".join(row["tag"].split()) or row["tag"])}
                store.insert(table, {**row, "debate_id": debate_id})
    return debate_id


def to_markdown(store: Store, debate_id: str, *, embed: Any = None) -> str:
    """A readable handout, safe to render: every stored text is escaped (`md_safe`), so model
    or user text can produce no HTML, no link and no image; no HTML of our own is produced.
    It ends with a short metrics section (`metrics.report.markdown_lines`)."""
    data = _deep_map(export_debate(store, debate_id, embed=embed), md_safe)
    debate, config = data["debate"], data["config"]
    notes: dict[str, list[dict[str, Any]]] = {}
    for note in data["annotations"]:
        notes.setdefault(note["turn_id"], []).append(note)
    lines = [f"# {debate['question']}", ""]
    if config.get("task"):
        lines += [config["task"], ""]
    lines += [
        f"- **Debate:** `{debate['id']}` · {debate['status']} · started {format_time(debate['created_at'])}",
        f"- **Protocol:** {debate['protocol']} · **Paradigm:** {debate['paradigm']} · "
        f"**Responses:** {config.get('response_generator', '-')} · **Ordering:** {config.get('ordering', '-')} · "
        f"**Rounds:** {config.get('rounds', '-')} (max {config.get('max_rounds', '-')})",
    ]
    for agent in data["agents"]:
        persona = f" — {agent['persona']}" if agent.get("persona") else ""
        lines.append(f"- **{agent['label']}:** {agent['model']}{persona}")
    if config.get("judge_model"):
        lines.append(f"- **Judge:** {config['judge_model']}")
    if debate.get("reference"):
        lines.append(f"- **Reference answer:** {debate['reference']}")
    lines.append(f"- **Final answer:** {debate.get('answer') or '(none)'}")
    rounds = sorted({row["round"] for table in ("turns", "votes", "decisions") for row in data[table]})
    for number in rounds:
        lines += ["", f"## Round {number}"]
        for turn in (t for t in data["turns"] if t["round"] == number):
            lines += ["", f"### {turn['agent']} · {turn['kind']} ({turn['model']})", ""]
            if turn["status"] != "ok" or turn.get("seat") == "stand-in":  # a stand-in's note: it spoke for a person
                lines += [f"*{turn['status']}: {turn.get('error') or 'no detail'}*", ""]
            lines.append(turn["content"] or "(no text)")
            if turn.get("answer"):
                lines += ["", f"**Answer:** {turn['answer']}"]
            lines += [f"> **{n['tag']}**: {n['note']}" for n in notes.get(turn["id"], [])]
        votes = [v for v in data["votes"] if v["round"] == number]
        if votes:
            lines += ["", "**Votes**", ""]
            lines += [f"- {v['agent']}: " + (describe_ballot(v["ballot"]) if v["valid"]
                                             else f"invalid ({v.get('reason') or 'unparseable'})") for v in votes]
        for d in (d for d in data["decisions"] if d["round"] == number):
            if d["final"]:
                winner = f" — {d['winner_agent']}" if d.get("winner_agent") else ""
                how = " (forced)" if d.get("forced") else ""
                lines += ["", f"**Decision ({d['protocol']}){how}:** {d['answer']}{winner}"]
                if d.get("fallback"):
                    lines.append(f"Fallback: {d['fallback']}")
            elif not d["reached"]:
                lines += ["", f"**No decision ({d['protocol']}):** {d.get('reason') or ''}"]
    if data["challenges"]:
        lines += ["", "## Challenges", ""]
        lines += [f"- {c['agent']} {STANCES[c['agrees']]}"
                  + (f" — proposes {c['new_answer']}" if c.get("new_answer") else "") for c in data["challenges"]]
    if data["steering"]:
        lines += ["", "## Steering", "", "Each action: when the engine applied it (at a step boundary), and "
                  "when the moderator asked for it.", ""]
        lines += [f"- {steering_times(s)} {s['action']}"
                  + (f" → {', '.join(s['targets'])}" if s.get("targets") else "")
                  + (f": {s['message']}" if s.get("message") else "") for s in data["steering"]]
    lines += markdown_lines(data["metrics"])
    return "\n".join(lines) + "\n"


# The per-debate CSV's own columns (`to_csv`), before its metric columns `round_*`: every row names
# its debate (question, reference, answer type), so the CSVs of many debates concatenate into one table.
TURN_CSV_COLUMNS = ("debate_id", "question", "reference", "answer_type", "turn_id", "seq", "round", "agent", "kind",
                    "model", "seat", "status", "content", "answer", "answer_read", "confidence", "prompt_tokens",
                    "completion_tokens", "latency_s", "annotations")
# Turns whose own answer `answer_read` reads: the discussion's, the final-answer extraction, the challenge.
ANSWER_READ_KINDS = (*DISCUSSION_KINDS, "extraction", "challenge")


def answer_read(turn: Turn, config: dict[str, Any]) -> str:
    """The turn's own answer as the debate's answer type reads it (`answer_types.shown_answer`, the
    reading every display and the metrics use: "I think 18 apples" -> "18" for a number debate);
    "" for a turn that states no answer (a vote, a judge, a failed turn) or whose answer cannot be
    read as the type (the displays' "no readable answer")."""
    if turn.kind not in ANSWER_READ_KINDS or turn.status != "ok" or not turn.content.strip():
        return ""
    shown = shown_answer(turn.content, config, stated=turn.answer)
    return "" if shown == NO_READABLE else shown


def to_csv(store: Store, debate_id: str, *, embed: Any = None) -> str:
    """One row per turn (TURN_CSV_COLUMNS, then the round's metrics): the debate's id, question,
    reference and answer type on every row (CSVs of several debates concatenate), the turn, its own
    answer as read (`answer_read`), its confidence, usage and annotations ('tag: note; ...'), and for
    discussion turns their round's metrics (`round_*` columns, the same numbers on every turn of a
    round: filter on kind to count rounds once). Every cell goes through `csv_safe`."""
    debate = store.get_debate(debate_id)
    if debate is None:
        raise LookupError(f"no debate with id {debate_id!r}")
    config = debate.get("config") or {}
    notes: dict[str, list[str]] = {}
    for note in store.annotations(debate_id):
        notes.setdefault(note["turn_id"], []).append(f"{note['tag']}: {note['note']}")
    report = debate_report(store, debate_id, embed=embed)
    metric_columns = [name for name in csv_columns(report, "discussion", 0, "") if name not in TURN_CSV_COLUMNS]
    common = {"debate_id": debate_id, "question": debate.get("question"),
              "reference": config.get("reference") or debate.get("reference"),
              "answer_type": DebateAnswerType.of(config).kind}
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[*TURN_CSV_COLUMNS, *metric_columns], extrasaction="ignore")
    writer.writeheader()
    for turn in store.turns(debate_id):
        row = {**turn.to_dict(), **csv_columns(report, turn.kind, turn.round, turn.agent), **common,
               "turn_id": turn.id, "answer_read": answer_read(turn, config),
               "annotations": "; ".join(notes.get(turn.id, []))}
        writer.writerow({key: csv_safe(value) for key, value in row.items()})
    return out.getvalue()
