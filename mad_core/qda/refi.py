"""REFI-QDA exchange: a coding project written as a QDPX project or a QDC codebook, and read back.

What it is for: a coding project made in MAD Lab can be opened in other qualitative-analysis
software (ATLAS.ti, MAXQDA, NVivo, QDA Miner, ...) and what coders did there can come back. The
format is REFI-QDA's QDA-XML 1.0 (``schema/Project.xsd``, MIT licence inside it):

  * ``qdpx_bytes(project)``: a zip holding ``project.qde`` (XML valid against the Project schema)
    and ``sources/<guid>.txt`` (each debate's plain text, UTF-8);
  * ``qdc_bytes(project)``: a codebook, the ``CodeBook`` element of ``urn:QDA-XML:codebook:1.0``
    holding ``Codes`` (its Code elements are the Project schema's, which checks them);
  * ``read_qdc(data)``: the codes of a QDC file;
  * ``read_qdpx(data, sources, project_id=...)``: the codes, coders, codings and memos of a QDPX
    file, mapped onto this project's debates (``Imported``).

Every export is validated against the schema before it is returned (a failure is a bug and
raises); every import is validated too, and any problem raises `QdaImportError` naming where.

The mapping (MAD Lab -> REFI-QDA):

  * ``Project``  -> ``<Project name origin="MAD Lab" creationDateTime>``;
  * ``Coder``    -> ``<Users><User guid=coder.id name>``;
  * ``Code``     -> ``<CodeBook><Codes><Code guid name isCodable="true" color>``, children nested
                    in their parent (hierarchy); definition/include/exclude/example in one
                    ``<Description>`` (below);
  * ``Source``   -> ``<Sources><TextSource guid=source.id name plainTextPath="internal://<guid>.txt">``
                    and the member ``sources/<guid>.txt``;
  * ``Coding``   -> ``<PlainTextSelection guid startPosition endPosition creatingUser>`` holding
                    ``<Coding guid=coding.id creatingUser creationDateTime><CodeRef targetGUID=code>``;
                    positions are `to_source` offsets (Unicode code points, end exclusive); one
                    selection per coding (its guid derived from the coding's id, so exports are stable);
  * ``Memo``     -> ``<Notes><Note guid=memo.id name=title creatingUser creationDateTime>
                    <PlainTextContent>text``, and a ``<NoteRef targetGUID=memo.id>`` in what it is
                    about: the ``Project`` (project memo), the ``Code``, the ``TextSource`` (debate
                    memo), the ``Coding`` (coding memo), or a turn (below);
  * times        -> xsd:dateTime in UTC ("...Z"), with as many fractional digits as the float
                    needs to come back exactly; a time of 0.0 (unknown) is left out.

Turn memos: REFI-QDA has no turns. A memo on a turn is a ``PlainTextSelection`` over the turn's
whole text (its span in the source), holding no ``Coding``, named "turn <turn id>", carrying the
memo's ``NoteRef``. Reading, a ``NoteRef`` on any selection becomes a memo on the turn the
selection lies in (a note on a passage from another tool lands on its turn: MAD Lab has no
passage memos). A memo on a turn whose text is empty is a selection with startPosition =
endPosition at that turn. A Note no element refers to becomes a memo on the project.

Descriptions: a code's ``<Description>`` is its definition, then each non-empty field as a labelled
section: a blank line, a line ``[Include]`` / ``[Exclude]`` / ``[Example]``, then the text. A line
of a field that reads like a label (``[Include]``, possibly after backslashes) gets one more
leading backslash, removed on reading, so all four fields come back exactly; a description from
another tool without such sections is the definition. Carriage returns are written as ``&#13;``.

Reading trusts nothing: the zip must be a zip, with at most MAX_MEMBERS members, no member path
absolute or with ``..``, no name twice, each member read at most MAX_MEMBER_BYTES (and
MAX_TOTAL_BYTES in all); only ``project.qde`` and the ``sources/`` files named by an
``internal://`` plainTextPath are read. XML is parsed only by defusedxml with DTDs, entities and
external references forbidden, then its depth is bounded and it is validated against the schema.
Sources are matched to this project's debates by guid (with the same text), else by identical
text; a selection must lie within one turn; every CodeRef, creatingUser and NoteRef must resolve.

What it must not do: parse XML with anything but defusedxml, follow a path out of the archive,
read a member it was not pointed to, write anything (the caller stores what it returns, and gets
nothing unless everything checked), touch the database, a UI or the network.
"""
from __future__ import annotations

import io
import math
import re
import uuid
import xml.etree.ElementTree as ET
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import ROUND_FLOOR, Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as DefusedET
import xmlschema
from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden

from .model import DEFAULT_COLOUR, MEMO_TARGETS, Code, Coder, Coding, Memo, Project, Source, from_source, to_source

PROJECT_NS = "urn:QDA-XML:project:1.0"
CODEBOOK_NS = "urn:QDA-XML:codebook:1.0"
SCHEMA_PATH = Path(__file__).parent / "schema" / "Project.xsd"
ORIGIN = "MAD Lab"
QDE_MEMBER = "project.qde"
MAX_MEMBER_BYTES = 50_000_000
MAX_TOTAL_BYTES = 200_000_000
MAX_MEMBERS = 10_000
MAX_XML_DEPTH = 100  # the schema validator recurses per level; a real project is ~8 deep
MAX_CODE_DEPTH = 64  # levels of the code hierarchy
MAX_MESSAGE_CHARS = 300
SECTIONS = ("Include", "Exclude", "Example")
P = "{" + PROJECT_NS + "}"
CB = "{" + CODEBOOK_NS + "}"
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_COLOUR = re.compile(r"#[0-9A-Fa-f]{6}")
_ILLEGAL_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_MARKER = re.compile(r"\n\n\[(Include|Exclude|Example)\]\n")
_MARKER_LINE = re.compile(r"\\*\[(?:Include|Exclude|Example)\]")
_DATETIME = re.compile(r"(-?\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)?")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_DERIVED = uuid.uuid5(uuid.NAMESPACE_URL, "https://madlab.invalid/qda/refi")
_UNREADABLE = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError,
               NotImplementedError, RuntimeError, ValueError)


class QdaImportError(ValueError):
    """A QDPX or QDC file that cannot be imported: `where` names the member or element, `message` what."""

    def __init__(self, where: str, message: str):
        self.where = _clip(str(where), 200)
        self.message = _clip(str(message), MAX_MESSAGE_CHARS)
        super().__init__(f"{self.where}: {self.message}")


@dataclass
class Imported:
    """What a QDPX file holds, mapped onto this project's debates (`read_qdpx`)."""

    codes: list[Code] = field(default_factory=list)
    coders: list[Coder] = field(default_factory=list)
    codings: list[Coding] = field(default_factory=list)
    memos: list[Memo] = field(default_factory=list)
    matched: dict[str, str] = field(default_factory=dict)  # the file's source guid -> debate_id


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@lru_cache(maxsize=1)
def _schema() -> xmlschema.XMLSchema:
    """The REFI-QDA Project schema, loaded once (it takes a moment)."""
    return xmlschema.XMLSchema(str(SCHEMA_PATH))


# ----- values -------------------------------------------------------------------------------------
def _when(stamp: float, where: str) -> str:
    """A Unix time as xsd:dateTime in UTC, with the digits that bring the float back exactly."""
    if not math.isfinite(stamp):
        raise ValueError(f"{where}: time {stamp!r} is not a date")
    exact = Decimal(repr(float(stamp)))
    whole = int(exact.to_integral_value(rounding=ROUND_FLOOR))
    try:
        moment = _EPOCH + timedelta(seconds=whole)
    except OverflowError:
        raise ValueError(f"{where}: time {stamp!r} is outside the years 1-9999") from None
    text = (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
            f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}")
    fraction = exact - whole
    if fraction:
        text += "." + format(fraction, "f").split(".", 1)[1]
    return text + "Z"


def _timestamp(value: str | None, where: str) -> float:
    """An xsd:dateTime as a Unix time (no zone: UTC); None or missing: 0.0."""
    if value is None:
        return 0.0
    found = _DATETIME.fullmatch(value.strip())
    if found is None:
        raise QdaImportError(where, f"creationDateTime {value[:40]!r} is not a date MAD Lab can store")
    try:
        year, month, day, hour, minute, second = (int(found.group(i)) for i in range(1, 7))
        moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
        whole = (moment - _EPOCH) // timedelta(seconds=1)
        zone = found.group(8)
        if zone and zone != "Z":
            sign = -1 if zone[0] == "-" else 1
            whole -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    except (ValueError, OverflowError):
        raise QdaImportError(where, f"creationDateTime {value[:40]!r} is not a date MAD Lab can store") from None
    fraction = found.group(7)
    return float(Decimal(whole) + Decimal("0." + fraction)) if fraction else float(whole)


def _bare(guid: str | None) -> str:
    """A GUID as written, whitespace and enclosing braces removed (REFI allows "{...}")."""
    value = (guid or "").strip()
    return value[1:-1] if value.startswith("{") and value.endswith("}") else value


def _key(guid: str | None) -> str:
    return _bare(guid).lower()


def _escape_field(value: str) -> str:
    return "\n".join("\\" + line if _MARKER_LINE.fullmatch(line) else line for line in value.split("\n"))


def _unescape_field(value: str) -> str:
    return "\n".join(line[1:] if line.startswith("\\") and _MARKER_LINE.fullmatch(line) else line
                     for line in value.split("\n"))


def describe(code: Code) -> str:
    """A code's definition, include, exclude and example as one REFI-QDA Description ("" if all empty)."""
    parts = [_escape_field(code.definition)]
    for label, value in zip(SECTIONS, (code.include, code.exclude, code.example)):
        if value:
            parts.append(f"[{label}]\n{_escape_field(value)}")
    return "\n\n".join(parts)


def parse_description(text: str) -> dict[str, str]:
    """`describe`'s inverse: {"definition", "include", "exclude", "example"}; a description without
    MAD Lab's sections (another tool's) is all definition."""
    pieces = _MARKER.split(text)
    labels, values = pieces[1::2], pieces[2::2]
    fields = {"definition": _unescape_field(pieces[0]), "include": "", "exclude": "", "example": ""}
    if labels != sorted(set(labels), key=SECTIONS.index):
        return {**fields, "definition": text}
    for label, value in zip(labels, values):
        fields[label.lower()] = _unescape_field(value)
    return fields


def _colour(value: str | None) -> str:
    colour = (value or "").strip()
    if not colour:
        return DEFAULT_COLOUR
    return "#" + "".join(c * 2 for c in colour[1:]) if len(colour) == 4 else colour


# ----- checking a project before it is written ---------------------------------------------------
def _check_text(where: str, value: str) -> None:
    bad = _ILLEGAL_XML.search(value)
    if bad:
        raise ValueError(f"{where}: holds U+{ord(bad.group()):04X}, a character XML cannot carry")


def _check_ids(kind: str, ids: list[str]) -> None:
    seen: set[str] = set()
    for value in ids:
        if not isinstance(value, str) or not _GUID.fullmatch(value):
            raise ValueError(f"{kind} {value!r}: its id is not a GUID (REFI-QDA needs one)")
        if value.lower() in seen:
            raise ValueError(f"{kind} {value}: the id is used twice")
        seen.add(value.lower())


def _check_codes(codes: list[Code]) -> None:
    _check_ids("code", [code.id for code in codes])
    by_id = {code.id: code for code in codes}
    for code in codes:
        if not _COLOUR.fullmatch(code.colour or ""):
            raise ValueError(f"code {code.id}: colour {code.colour!r} is not #RRGGBB")
        for name in ("name", "definition", "include", "exclude", "example"):
            _check_text(f"code {code.id} {name}", getattr(code, name))
        seen, parent, depth = {code.id}, code.parent, 1
        while parent is not None:
            if parent not in by_id:
                raise ValueError(f"code {code.id}: its parent {parent} is not a code of the project")
            if parent in seen or depth >= MAX_CODE_DEPTH:
                raise ValueError(f"code {code.id}: its parents form a cycle or are over {MAX_CODE_DEPTH} levels deep")
            seen.add(parent)
            parent, depth = by_id[parent].parent, depth + 1


def _check_codings(project: Project, sources: dict[str, Source]) -> None:
    codes = {code.id for code in project.codes}
    coders = {coder.id for coder in project.coders}
    _check_ids("coding", [coding.id for coding in project.codings])
    for coding in project.codings:
        where = f"coding {coding.id}"
        source = sources.get(coding.debate_id)
        if source is None:
            raise ValueError(f"{where}: debate {coding.debate_id} has no source in the project")
        span = source.span(coding.turn_id)
        if span is None:
            raise ValueError(f"{where}: turn {coding.turn_id} is not in debate {coding.debate_id}")
        turn = source.text[span.start:span.end]
        if not 0 <= coding.start < coding.end <= len(turn):
            raise ValueError(f"{where}: offsets {coding.start}..{coding.end} are not a passage of its turn")
        if turn[coding.start:coding.end] != coding.quote:
            raise ValueError(f"{where}: its quote no longer matches the turn's text")
        if coding.code_id not in codes or coding.coder_id not in coders:
            raise ValueError(f"{where}: its code {coding.code_id} or coder {coding.coder_id} is not in the project")
        _when(coding.created_at, where)


def _check_memos(project: Project, sources: dict[str, Source]) -> None:
    _check_ids("memo", [memo.id for memo in project.memos])
    coders = {coder.id for coder in project.coders}
    known = {"code": {code.id for code in project.codes}, "debate": set(sources),
             "turn": {span.turn_id for source in project.sources for span in source.spans},
             "coding": {coding.id for coding in project.codings}}
    for memo in project.memos:
        where = f"memo {memo.id}"
        if memo.target not in MEMO_TARGETS:
            raise ValueError(f"{where}: unknown target kind {memo.target!r}")
        if memo.target != "project" and memo.target_id not in known[memo.target]:
            raise ValueError(f"{where}: its {memo.target} {memo.target_id} is not in the project")
        if memo.coder_id is not None and memo.coder_id not in coders:
            raise ValueError(f"{where}: its coder {memo.coder_id} is not in the project")
        _check_text(f"{where} title", memo.title)
        _check_text(f"{where} text", memo.text)
        _when(memo.created_at, where)


def _check_project(project: Project) -> dict[str, Source]:
    """Everything an export needs, or ValueError naming what is wrong; the sources by debate id."""
    _check_text("project name", project.name)
    _when(project.created_at, "project")
    _check_codes(project.codes)
    _check_ids("coder", [coder.id for coder in project.coders])
    for coder in project.coders:
        _check_text(f"coder {coder.id} name", coder.name)
    _check_ids("source", [source.id for source in project.sources])
    sources: dict[str, Source] = {}
    for source in project.sources:
        _check_text(f"source {source.id} name", source.name)
        if source.debate_id in sources:
            raise ValueError(f"source {source.id}: debate {source.debate_id} has two sources")
        try:
            source.text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"source {source.id}: its text is not valid Unicode") from None
        sources[source.debate_id] = source
    _check_codings(project, sources)
    _check_memos(project, sources)
    return sources


# ----- writing ------------------------------------------------------------------------------------
def _element(parent: ET.Element | None, tag: str, **attributes: str) -> ET.Element:
    if parent is None:
        return ET.Element(tag, attributes)
    return ET.SubElement(parent, tag, attributes)


def _dated(attributes: dict[str, str], stamp: float, where: str) -> dict[str, str]:
    return {**attributes, "creationDateTime": _when(stamp, where)} if stamp else attributes


def _note_refs(parent: ET.Element, ns: str, memo_ids: list[str]) -> None:
    for memo_id in memo_ids:
        _element(parent, ns + "NoteRef", targetGUID=memo_id)


def _codes_element(ns: str, codes: list[Code], notes: dict[tuple[str, str], list[str]]) -> ET.Element:
    """``<Codes>``: the hierarchy as nested Code elements, siblings in the project's order."""
    children: dict[str | None, list[Code]] = {}
    for code in codes:
        children.setdefault(code.parent, []).append(code)
    top = _element(None, ns + "Codes")
    stack = [(top, code) for code in reversed(children.get(None, []))]
    while stack:
        parent, code = stack.pop()
        element = _element(parent, ns + "Code", guid=code.id, name=code.name, isCodable="true", color=code.colour)
        description = describe(code)
        if description:
            _element(element, ns + "Description").text = description
        _note_refs(element, ns, notes.get(("code", code.id), []))
        stack.extend((element, child) for child in reversed(children.get(code.id, [])))
    return top


def _selection_id(kind: str, value: str) -> str:
    return str(uuid.uuid5(_DERIVED, f"{kind}:{value}"))


def _source_element(parent: ET.Element, source: Source, codings: list[Coding],
                    notes: dict[tuple[str, str], list[str]]) -> None:
    element = _element(parent, P + "TextSource", guid=source.id, name=source.name,
                       plainTextPath=f"internal://{source.id}.txt")
    for coding in codings:
        start, end = to_source(source, coding)
        selection = _element(element, P + "PlainTextSelection", guid=_selection_id("coding", coding.id),
                             startPosition=str(start), endPosition=str(end), creatingUser=coding.coder_id)
        mark = _element(selection, P + "Coding", **_dated({"guid": coding.id, "creatingUser": coding.coder_id},
                                                          coding.created_at, f"coding {coding.id}"))
        _element(mark, P + "CodeRef", targetGUID=coding.code_id)
        _note_refs(mark, P, notes.get(("coding", coding.id), []))
    for span in source.spans:
        memo_ids = notes.get(("turn", span.turn_id), [])
        if memo_ids:
            selection = _element(element, P + "PlainTextSelection",
                                 guid=_selection_id("turn", f"{source.id}:{span.turn_id}"),
                                 name=_ILLEGAL_XML.sub("?", f"turn {span.turn_id}"),
                                 startPosition=str(span.start), endPosition=str(span.end))
            _note_refs(selection, P, memo_ids)
    _note_refs(element, P, notes.get(("debate", source.debate_id), []))


def _project_element(project: Project) -> ET.Element:
    notes: dict[tuple[str, str], list[str]] = {}
    for memo in project.memos:  # every memo on the project hangs off <Project>, whatever its target_id
        notes.setdefault((memo.target, "" if memo.target == "project" else memo.target_id), []).append(memo.id)
    attributes = _dated({"name": project.name, "origin": ORIGIN}, project.created_at, "project")
    root = _element(None, P + "Project", **attributes)
    if project.coders:
        users = _element(root, P + "Users")
        for coder in project.coders:
            _element(users, P + "User", guid=coder.id, name=coder.name)
    if project.codes:
        _element(root, P + "CodeBook").append(_codes_element(P, project.codes, notes))
    if project.sources:
        by_debate: dict[str, list[Coding]] = {}
        for coding in project.codings:
            by_debate.setdefault(coding.debate_id, []).append(coding)
        sources = _element(root, P + "Sources")
        for source in project.sources:
            _source_element(sources, source, by_debate.get(source.debate_id, []), notes)
            for span in source.spans:  # a turn id in two debates: its memos go to the first only
                notes.pop(("turn", span.turn_id), None)
    if project.memos:
        notes_element = _element(root, P + "Notes")
        for memo in project.memos:
            attributes = {"guid": memo.id, "name": memo.title}
            if memo.coder_id is not None:
                attributes["creatingUser"] = memo.coder_id
            note = _element(notes_element, P + "Note", **_dated(attributes, memo.created_at, f"memo {memo.id}"))
            _element(note, P + "PlainTextContent").text = memo.text
    _note_refs(root, P, notes.get(("project", ""), []))
    return root


def _serialise(root: ET.Element, ns: str) -> bytes:
    prefix = "{" + ns + "}"
    for element in root.iter():  # unprefixed tags in a default namespace (ElementTree's own option
        if element.tag.startswith(prefix):  # refuses unqualified attributes)
            element.tag = element.tag[len(prefix):]
    root.set("xmlns", ns)
    xml = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return xml.replace(b"\r", b"&#13;")  # XML parsers turn a raw CR into LF: keep it exact


def _check_export(xml: bytes, where: str, codebook: bool = False) -> None:
    try:
        root = _parse(xml, where)
        _validate(_codebook_as_project(root, where) if codebook else root, where)
    except QdaImportError as exc:
        raise RuntimeError(f"the REFI-QDA export does not validate (a bug): {exc}") from None


def _stored(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # fixed: the same project, the same bytes
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def qdpx_bytes(project: Project) -> bytes:
    """The project as a QDPX file (zip: project.qde and sources/<guid>.txt), validated against the
    REFI-QDA schema; ValueError naming what in the project cannot be written."""
    _check_project(project)
    xml = _serialise(_project_element(project), PROJECT_NS)
    _check_export(xml, QDE_MEMBER)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(_stored(QDE_MEMBER), xml)
        for source in project.sources:
            archive.writestr(_stored(f"sources/{source.id}.txt"), source.text.encode("utf-8"))
    return buffer.getvalue()


def qdc_bytes(project: Project) -> bytes:
    """The project's codebook as a QDC file (``CodeBook`` in urn:QDA-XML:codebook:1.0); its Code
    elements are validated against the Project schema's. ValueError if there is nothing to write
    (the schema needs at least one code) or a code cannot be written."""
    if not project.codes:
        raise ValueError("the codebook has no codes: a REFI-QDA codebook needs at least one")
    _check_codes(project.codes)
    root = _element(None, CB + "CodeBook", origin=ORIGIN)
    root.append(_codes_element(CB, project.codes, {}))
    xml = _serialise(root, CODEBOOK_NS)
    _check_export(xml, "codebook", codebook=True)
    return xml


# ----- reading: XML and the archive ---------------------------------------------------------------
def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _parse(blob: bytes, where: str) -> ET.Element:
    """XML parsed by defusedxml (no DTD, entities or external references), its depth bounded."""
    try:
        root = DefusedET.fromstring(blob, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DTDForbidden:
        raise QdaImportError(where, "refused: hostile XML: it has a DTD (<!DOCTYPE>), which can declare entities that "
                                    "expand without bound (billion laughs) or read external files; QDA-XML needs none"
                             ) from None
    except EntitiesForbidden:
        raise QdaImportError(where, "refused: hostile XML: it declares entities (entity expansion)") from None
    except ExternalReferenceForbidden:
        raise QdaImportError(where, "refused: hostile XML: it refers to an external entity or file") from None
    except ET.ParseError as exc:
        raise QdaImportError(where, f"not well-formed XML ({exc})") from None
    except (LookupError, UnicodeError) as exc:
        raise QdaImportError(where, f"not XML MAD Lab can read: its encoding ({exc})") from None
    stack = [(root, 1)]
    while stack:
        element, depth = stack.pop()
        if depth > MAX_XML_DEPTH:
            raise QdaImportError(where, f"refused: elements nested over {MAX_XML_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in element)
    return root


def _validate(root: ET.Element, where: str) -> None:
    """QdaImportError naming the first element that the REFI-QDA Project schema refuses."""
    try:
        error = next(iter(_schema().iter_errors(root)), None)
    except RecursionError:
        raise QdaImportError(where, "refused: nested too deeply to validate") from None
    if error is None:
        return
    path = re.sub(r"\{[^}]*\}", "", error.path or "")
    if where == "codebook":
        path = re.sub(r"^/Project(/CodeBook)?", "/CodeBook", path)
    element = getattr(error, "elem", None)
    guid = element.get("guid") if element is not None and hasattr(element, "get") else None
    reason = re.sub(r"\{[^}]*\}", "", str(error.reason or error.message))
    raise QdaImportError(f"{where}: {path}" + (f" (guid {guid})" if guid else ""),
                         f"not valid against the REFI-QDA schema: {reason}")


def _codebook_as_project(root: ET.Element, where: str) -> ET.Element:
    """A QDC's CodeBook as a Project holding it, in the project namespace, for the schema to check."""
    if root.tag != CB + "CodeBook":
        raise QdaImportError(where, f"not a REFI-QDA codebook: the root element is {root.tag!r}, "
                                    f"expected CodeBook in {CODEBOOK_NS}")
    for element in root.iter():
        if element.tag.startswith(CB):
            element.tag = P + element.tag[len(CB):]
    project = _element(None, P + "Project", name="codebook")
    codebook = _element(project, P + "CodeBook")
    for child in root:
        if child.tag == P + "Codes":
            codebook.append(child)
        elif child.tag == P + "Sets":
            project.append(child)
        else:
            raise QdaImportError(f"{where}: /CodeBook", f"unexpected element {_local(child.tag)!r}")
    return project


class _Archive:
    """A QDPX zip, checked as a whole on opening; members read bounded, by name only."""

    def __init__(self, data: bytes):
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except _UNREADABLE as exc:
            raise QdaImportError("archive", f"not a QDPX file: not a readable zip archive ({exc})") from None
        if len(infos) > MAX_MEMBERS:
            raise QdaImportError("archive", f"refused: more than {MAX_MEMBERS:,} members")
        seen: set[str] = set()
        for info in infos:
            name = info.filename
            parts = re.split(r"[/\\]", name)
            if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name) or ".." in parts:
                raise QdaImportError(f"archive: member {name[:100]!r}",
                                     "refused: its path is absolute or climbs out with '..'")
            if name in seen:
                raise QdaImportError(f"archive: member {name[:100]!r}", "refused: the name appears twice")
            seen.add(name)
        self.total = 0

    def read(self, name: str) -> bytes:
        try:
            info = self.zip.getinfo(name)
        except KeyError:
            raise QdaImportError(name, "missing from the archive") from None
        if info.file_size > MAX_MEMBER_BYTES:
            raise QdaImportError(name, f"refused: larger than {MAX_MEMBER_BYTES:,} bytes")
        try:
            with self.zip.open(info) as stream:
                blob = stream.read(MAX_MEMBER_BYTES + 1)
        except _UNREADABLE as exc:
            raise QdaImportError(name, f"cannot be read from the archive ({exc})") from None
        if len(blob) > MAX_MEMBER_BYTES:
            raise QdaImportError(name, f"refused: larger than {MAX_MEMBER_BYTES:,} bytes")
        self.total += len(blob)
        if self.total > MAX_TOTAL_BYTES:
            raise QdaImportError(name, f"refused: the members read exceed {MAX_TOTAL_BYTES:,} bytes in all")
        return blob

    def text(self, path: str, where: str) -> str:
        """The UTF-8 text of a ``sources/`` member named by an ``internal://`` plainTextPath."""
        if not path.startswith("internal://"):
            raise QdaImportError(where, f"plainTextPath {path[:100]!r} refused: only internal:// files inside "
                                        "the archive are read (relative:// and absolute paths point outside it)")
        name = path[len("internal://"):]
        if not name or name in (".", "..") or any(c in name for c in "/\\\x00"):
            raise QdaImportError(where, f"plainTextPath {path[:100]!r} refused: it must name a file of sources/")
        member = "sources/" + name
        try:
            return self.read(member).decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            raise QdaImportError(member, f"not UTF-8 text (bad byte at {exc.start})") from None


# ----- reading: the project -----------------------------------------------------------------------
class _ProjectReader:
    """Interprets a validated project.qde; every method raises QdaImportError naming the element."""

    def __init__(self, root: ET.Element, archive: _Archive, sources: list[Source], project_id: str):
        self.root, self.archive, self.sources, self.project_id = root, archive, sources, project_id
        self.coders: dict[str, Coder] = {}
        self.codes: dict[str, Code] = {}
        self.codings: dict[str, Coding] = {}
        self.notes: dict[str, ET.Element] = {}
        self.refs: list[tuple[str, str, str, str]] = []  # (note guid, target kind, target id, where)
        self.matched: dict[str, str] = {}
        self.source_keys: dict[str, None] = {}

    def _unique(self, seen: dict[str, Any], guid: str, where: str) -> str:
        if _key(guid) in seen:
            raise QdaImportError(where, f"the guid {guid} is used twice")
        return _key(guid)

    def _refs(self, element: ET.Element, kind: str, target_id: str, where: str) -> None:
        for ref in element.findall(P + "NoteRef"):
            self.refs.append((ref.get("targetGUID", ""), kind, target_id, where))

    def _coder(self, guid: str | None, where: str) -> Coder:
        if guid is None:
            raise QdaImportError(where, "has no creatingUser: a MAD Lab coding belongs to a coder")
        coder = self.coders.get(_key(guid))
        if coder is None:
            raise QdaImportError(where, f"creatingUser {guid} is not one of the file's Users")
        return coder

    def read(self) -> Imported:
        for user in self.root.findall(f"{P}Users/{P}User"):
            guid = _bare(user.get("guid"))
            name = user.get("name")
            key = self._unique(self.coders, guid, f"{QDE_MEMBER}: User {guid}")
            self.coders[key] = Coder(guid, name if name is not None else user.get("id") or guid)
        codebook = self.root.find(P + "CodeBook")
        if codebook is not None:
            for code in _read_codes(codebook, QDE_MEMBER, self.refs):
                self.codes[self._unique(self.codes, code.id, f"{QDE_MEMBER}: Code {code.id}")] = code
        for note in self.root.findall(f"{P}Notes/{P}Note"):
            guid = _bare(note.get("guid"))
            self.notes[self._unique(self.notes, guid, f"{QDE_MEMBER}: Note {guid}")] = note
        for source in self.root.findall(f"{P}Sources/*"):
            self._source(source)
        self._refs(self.root, "project", self.project_id, f"{QDE_MEMBER}: Project")
        return Imported(list(self.codes.values()), list(self.coders.values()), list(self.codings.values()),
                        self._memos(), self.matched)

    def _match(self, guid: str, name: str, text: str, where: str) -> Source:
        same_guid = next((s for s in self.sources if _key(s.id) == _key(guid)), None)
        if same_guid is not None and same_guid.text == text:
            return same_guid
        same_text = next((s for s in self.sources if s.text == text), None)
        if same_text is not None:
            return same_text
        if same_guid is not None:
            raise QdaImportError(where, f"source {name!r} (guid {guid}): its text differs from debate "
                                        f"{same_guid.debate_id}'s, so its positions would not match")
        raise QdaImportError(where, f"source {name!r} (guid {guid}) is not one of this project's debates")

    def _source(self, element: ET.Element) -> None:
        guid = _bare(element.get("guid"))
        where = f"{QDE_MEMBER}: {_local(element.tag)} {guid}"
        if element.tag != P + "TextSource":
            raise QdaImportError(where, f"a {_local(element.tag)}: MAD Lab imports only text sources (its debates)")
        if element.find(P + "Coding") is not None:
            raise QdaImportError(where, "codes the whole source: MAD Lab codes passages within one turn")
        name = element.get("name", "")
        self.source_keys[self._unique(self.source_keys, guid, where)] = None
        source = self._match(guid, name, _text_of(element, self.archive, where, required=True), where)
        self.matched[guid] = source.debate_id
        for selection in element.findall(P + "PlainTextSelection"):
            self._selection(selection, source)
        self._refs(element, "debate", source.debate_id, where)

    def _selection(self, element: ET.Element, source: Source) -> None:
        guid = _bare(element.get("guid"))
        start, end = int(element.get("startPosition", "0")), int(element.get("endPosition", "0"))
        where = f"{QDE_MEMBER}: PlainTextSelection {guid}"
        codings = element.findall(P + "Coding")
        place = from_source(source, start, end)
        if place is None and not codings and start == end:  # a memo on a turn whose text is empty
            span = next((s for s in source.spans if s.start == s.end == start), None)
            place = (span.turn_id, 0, 0) if span is not None else None
        if place is None:
            if start >= end:
                problem = f"startPosition {start} is not before endPosition {end}"
            elif start < 0 or end > len(source.text):
                problem = f"positions {start}..{end} are outside the source text ({len(source.text)} characters)"
            else:
                problem = (f"positions {start}..{end} do not lie within one turn's text "
                           "(they cross a header or two turns)")
            raise QdaImportError(where, problem)
        turn_id, turn_start, turn_end = place
        for mark in codings:
            coding_id = _bare(mark.get("guid"))
            coding_where = f"{QDE_MEMBER}: Coding {coding_id}"
            key = self._unique(self.codings, coding_id, coding_where)
            ref = mark.find(P + "CodeRef")
            target = _bare(ref.get("targetGUID") if ref is not None else None)
            code = self.codes.get(_key(target))
            if code is None:
                raise QdaImportError(coding_where, f"CodeRef to unknown code {target}")
            coder = self._coder(mark.get("creatingUser", element.get("creatingUser")), coding_where)
            stamp = _timestamp(mark.get("creationDateTime", element.get("creationDateTime")), coding_where)
            self.codings[key] = Coding(coding_id, source.debate_id, turn_id, turn_start, turn_end,
                                       source.text[start:end], code.id, coder.id, stamp)
            self._refs(mark, "coding", coding_id, coding_where)
        self._refs(element, "turn", turn_id, where)

    def _memos(self) -> list[Memo]:
        targets: dict[str, list[tuple[str, str, str]]] = {}
        for guid, kind, target_id, where in self.refs:
            if _key(guid) not in self.notes:
                raise QdaImportError(where, f"NoteRef to unknown note {guid}")
            targets.setdefault(_key(guid), []).append((kind, target_id, where))
        memos = []
        for key, note in self.notes.items():
            guid = _bare(note.get("guid"))
            where = f"{QDE_MEMBER}: Note {guid}"
            found = targets.get(key, [])
            if len(found) > 1:
                raise QdaImportError(where, f"is attached to {len(found)} elements ({found[0][2]}, "
                                            f"{found[1][2]}, ...): a MAD Lab memo is about one thing")
            kind, target_id = found[0][:2] if found else ("project", self.project_id)
            creator = note.get("creatingUser")
            coder_id = self._coder(creator, where).id if creator is not None else None
            memos.append(Memo(guid, kind, target_id, coder_id, note.get("name", ""),
                              _text_of(note, self.archive, where, required=False),
                              _timestamp(note.get("creationDateTime"), where)))
        return memos


def _text_of(element: ET.Element, archive: _Archive | None, where: str, *, required: bool) -> str:
    """A TextSource's or Note's text: its plainTextPath's file, else its PlainTextContent."""
    path = element.get("plainTextPath")
    if path is not None and archive is not None:
        return archive.text(path, where)
    inline = element.find(P + "PlainTextContent")
    if inline is None and required:
        raise QdaImportError(where, "has neither a plainTextPath nor PlainTextContent: no text to match")
    return (inline.text or "") if inline is not None else ""


def _read_codes(codebook: ET.Element, where: str, refs: list[tuple[str, str, str, str]]) -> list[Code]:
    """A CodeBook's codes, parents before children (the hierarchy from the nesting); the NoteRefs
    of codes go to `refs`."""
    codes: list[Code] = []
    top = codebook.findall(f"{P}Codes/{P}Code")
    stack: list[tuple[str | None, ET.Element]] = [(None, code) for code in reversed(top)]
    while stack:
        parent, element = stack.pop()
        guid = _bare(element.get("guid"))
        description = element.find(P + "Description")
        fields = parse_description((description.text or "") if description is not None else "")
        code = Code(guid, element.get("name", ""), parent, _colour(element.get("color")), **fields)
        codes.append(code)
        for ref in element.findall(P + "NoteRef"):
            refs.append((ref.get("targetGUID", ""), "code", guid, f"{where}: Code {guid}"))
        stack.extend((guid, child) for child in reversed(element.findall(P + "Code")))
    return codes


def _guarded(where: str, read: Any) -> Any:
    """`read()`, any failure other than QdaImportError reported as one: hostile input gets no other."""
    try:
        return read()
    except QdaImportError:
        raise
    except (RecursionError, MemoryError, xmlschema.XMLSchemaException, *_UNREADABLE, KeyError, TypeError,
            IndexError, AttributeError, LookupError) as exc:
        raise QdaImportError(where, f"cannot be read ({type(exc).__name__}: {exc})") from exc


def read_qdc(data: bytes) -> list[Code]:
    """The codes of a QDC codebook (parents before children), or QdaImportError naming what is wrong."""
    def read() -> list[Code]:
        if len(data) > MAX_MEMBER_BYTES:
            raise QdaImportError("codebook", f"refused: larger than {MAX_MEMBER_BYTES:,} bytes")
        project = _codebook_as_project(_parse(bytes(data), "codebook"), "codebook")
        _validate(project, "codebook")
        codebook = project.find(P + "CodeBook")
        codes = _read_codes(codebook, "codebook", []) if codebook is not None else []
        seen: set[str] = set()
        for code in codes:
            if _key(code.id) in seen:
                raise QdaImportError(f"codebook: Code {code.id}", f"the guid {code.id} is used twice")
            seen.add(_key(code.id))
        return codes

    result: list[Code] = _guarded("codebook", read)
    return result


def read_qdpx(data: bytes, sources: list[Source], *, project_id: str = "") -> Imported:
    """A QDPX project's codes, coders, codings and memos on this project's debates (`sources`),
    or QdaImportError naming what is wrong; memos on the project get `project_id` as target_id."""
    def read() -> Imported:
        archive = _Archive(bytes(data))
        with archive.zip:
            root = _parse(archive.read(QDE_MEMBER), QDE_MEMBER)
            if root.tag != P + "Project":
                raise QdaImportError(QDE_MEMBER, f"not a REFI-QDA project: the root element is {root.tag!r}, "
                                                 f"expected Project in {PROJECT_NS}")
            _validate(root, QDE_MEMBER)
            return _ProjectReader(root, archive, sources, project_id).read()

    result: Imported = _guarded("archive", read)
    return result
