"""REFI-QDA exchange (mad_core/qda/refi.py): QDPX and QDC exports valid against the REFI-QDA
Project schema and holding the MAD Lab mapping; round trips that lose nothing; and every bad or
hostile file refused with a QdaImportError naming what is wrong, nothing of it returned."""
from __future__ import annotations

import io
import warnings
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import replace
from typing import Callable

import pytest
import xmlschema

from mad_core.qda import refi
from mad_core.qda.model import DEFAULT_COLOUR, Code, Coder, Coding, Memo, Project, Source, new_id, source_of, to_source

P = "{urn:QDA-XML:project:1.0}"
CB = "{urn:QDA-XML:codebook:1.0}"
CAFE = "café — 1.05 $"
HTML = "<b>not html</b>"


# ----- the project -------------------------------------------------------------------------------
def _build() -> Project:
    one = source_of("debate-1", "Debate one: prices", [
        ("turn-1a", "Alice (round 1)", f"I think {CAFE} is fair."),
        ("turn-1b", "Bob (round 1)", f"No: {HTML}\r\nand a second line."),
    ])
    two = source_of("debate-2", "Debate two", [
        ("turn-2a", "Carol", "Ünïcödé 😀 text & more"),
        ("turn-2b", "Dan", "Short."),
        ("turn-2c", "Eve", ""),  # an empty turn (its memo is a zero-length selection)
    ])
    root = Code(new_id(), "Stance", colour="#FF0000", definition="Where a debater stands.\n\n[Include]\nnot a section",
                include="explicit claims\r\n", exclude="\\[Exclude]\nquestions", example=f"{CAFE} & {HTML}")
    child = Code(new_id(), "Agreement", parent=root.id, colour="#00aa00", definition="",
                 include="says yes", exclude="", example="\n\nI agree\n")
    other = Code(new_id(), "Evidence <cites>", colour="#1F77B4", definition="Cites a fact.",
                 include="numbers", exclude="opinions", example="1.05 $")
    ann, ben = Coder(new_id(), "Ann Müller"), Coder(new_id(), "Ben")
    project = Project(new_id(), "Pricing & <debates>", codes=[root, child, other], coders=[ann, ben],
                      sources=[one, two], created_at=1717171717.123456)
    turn_1a = f"I think {CAFE} is fair."
    cafe = turn_1a.index(CAFE)

    def coding(source: Source, turn: str, start: int, end: int, code: Code, coder: Coder, when: float) -> Coding:
        span = source.span(turn)
        assert span is not None
        text = source.text[span.start:span.end]
        return Coding(new_id(), source.debate_id, turn, start, end, text[start:end], code.id, coder.id, when)

    project.codings = [
        coding(one, "turn-1a", 0, len(turn_1a), root, ann, 1717171800.5),  # a whole turn
        coding(one, "turn-1a", cafe, cafe + len(CAFE), other, ann, 1717171801.25),  # overlapping passages ...
        coding(one, "turn-1a", cafe + 5, len(turn_1a), child, ben, 1717171802.0),  # ... by two coders
        coding(one, "turn-1b", 4, 4 + len(HTML), child, ben, 0.0),  # two codes on one passage
        coding(one, "turn-1b", 4, 4 + len(HTML), other, ben, 1.0e9 + 0.1),
        coding(two, "turn-2a", 0, 7, other, ann, 1717171803.999999),
    ]
    project.memos = [
        Memo(new_id(), "project", project.id, ann.id, "About the project", "Two debates on prices.", 1717171900.75),
        Memo(new_id(), "code", child.id, ben.id, "Agreement?", "Maybe split <yes> and \"sure\".", 0.0),
        Memo(new_id(), "debate", "debate-2", None, "", "Debate two has an emoji 😀", 1717171901.0),
        Memo(new_id(), "turn", "turn-1b", ann.id, "Turn memo", "line 1\r\nline 2\n", 1717171902.5),
        Memo(new_id(), "turn", "turn-2c", ben.id, "Empty turn", "Eve said nothing.", 1717171903.0),
        Memo(new_id(), "coding", project.codings[3].id, ben.id, "Why", "Because <b>.", 1717171904.0),
    ]
    return project


@pytest.fixture(scope="module")
def project() -> Project:
    return _build()


@pytest.fixture(scope="module")
def qdpx(project: Project) -> bytes:
    return refi.qdpx_bytes(project)


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(refi.SCHEMA_PATH))  # loaded here, not through the module's cache


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _zip(members: dict[str, bytes] | list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a name twice, on purpose
        for name, blob in (members.items() if isinstance(members, dict) else members):
            archive.writestr(zipfile.ZipInfo(name), blob)
    return buffer.getvalue()


def _qde(data: bytes) -> ET.Element:
    return ET.fromstring(_members(data)["project.qde"])


def _edit(data: bytes, change: Callable[[ET.Element], None]) -> bytes:
    """The QDPX with its project.qde changed by `change` (ElementTree writes ns0: prefixes: still the namespace)."""
    members = _members(data)
    root = ET.fromstring(members["project.qde"])
    change(root)
    members["project.qde"] = ET.tostring(root, encoding="utf-8")
    return _zip(members)


def _selection(root: ET.Element, coding: Coding) -> ET.Element:
    marks = [s for s in root.iter(P + "PlainTextSelection") if s.find(f"{P}Coding[@guid='{coding.id}']") is not None]
    assert len(marks) == 1
    return marks[0]


def _by_id(items: list) -> list:
    return sorted(items, key=lambda item: item.id)


# ----- exports: valid, and holding the mapping ----------------------------------------------------
def test_qdpx_is_valid_against_the_schema_and_holds_the_sources(qdpx: bytes, project: Project, schema):
    members = _members(qdpx)
    assert set(members) == {"project.qde"} | {f"sources/{s.id}.txt" for s in project.sources}
    schema.validate(io.BytesIO(members["project.qde"]))
    for source in project.sources:
        assert members[f"sources/{source.id}.txt"].decode("utf-8") == source.text
    root = ET.fromstring(members["project.qde"])
    assert root.tag == P + "Project" and root.get("name") == project.name and root.get("origin") == "MAD Lab"
    assert root.get("creationDateTime") == "2024-05-31T16:08:37.123456Z"
    assert [(u.get("guid"), u.get("name")) for u in root.iter(P + "User")] == [(c.id, c.name) for c in project.coders]
    sources = root.findall(f"{P}Sources/{P}TextSource")
    assert [(s.get("guid"), s.get("name"), s.get("plainTextPath")) for s in sources] == [
        (s.id, s.name, f"internal://{s.id}.txt") for s in project.sources]
    assert qdpx == refi.qdpx_bytes(project)  # the same project, the same bytes


def test_qdpx_codes_nest_their_children_with_colours_and_descriptions(qdpx: bytes, project: Project):
    root_code, child, other = project.codes
    top = _qde(qdpx).findall(f"{P}CodeBook/{P}Codes/{P}Code")
    assert [c.get("guid") for c in top] == [root_code.id, other.id]
    nested = top[0].findall(P + "Code")
    assert [c.get("guid") for c in nested] == [child.id]
    assert (top[0].get("color"), nested[0].get("color"), top[1].get("color")) == ("#FF0000", "#00aa00", "#1F77B4")
    assert all(c.get("isCodable") == "true" for c in (*top, *nested))
    description = top[1].find(P + "Description")
    assert description is not None
    assert description.text == "Cites a fact.\n\n[Include]\nnumbers\n\n[Exclude]\nopinions\n\n[Example]\n1.05 $"


def test_qdpx_selections_codings_and_note_refs(qdpx: bytes, project: Project):
    root = _qde(qdpx)
    one, two = project.sources
    for coding in project.codings:
        selection = _selection(root, coding)
        source = one if coding.debate_id == one.debate_id else two
        start, end = to_source(source, coding)
        assert (int(selection.get("startPosition", "")), int(selection.get("endPosition", ""))) == (start, end)
        assert source.text[start:end] == coding.quote
        assert selection.get("creatingUser") == coding.coder_id
        mark = selection.find(P + "Coding")
        assert mark is not None and mark.get("creatingUser") == coding.coder_id
        assert [r.get("targetGUID") for r in mark.findall(P + "CodeRef")] == [coding.code_id]
    assert _selection(root, project.codings[1]).get("startPosition") == str(one.text.index(CAFE))
    notes = root.findall(f"{P}Notes/{P}Note")
    assert [n.get("guid") for n in notes] == [m.id for m in project.memos]
    assert notes[2].get("creatingUser") is None and notes[1].get("creationDateTime") is None
    project_memo, code_memo, debate_memo, turn_memo, empty_turn_memo, coding_memo = (m.id for m in project.memos)
    assert [r.get("targetGUID") for r in root.findall(P + "NoteRef")] == [project_memo]
    child = next(c for c in root.iter(P + "Code") if c.get("guid") == project.codes[1].id)
    assert [r.get("targetGUID") for r in child.findall(P + "NoteRef")] == [code_memo]
    second = root.findall(f"{P}Sources/{P}TextSource")[1]
    assert [r.get("targetGUID") for r in second.findall(P + "NoteRef")] == [debate_memo]
    assert [r.get("targetGUID") for r in _selection(root, project.codings[3]).iter(P + "NoteRef")] == [coding_memo]
    span = one.span("turn-1b")
    turn_selection = [s for s in root.iter(P + "PlainTextSelection") if s.find(P + "Coding") is None
                      and s.find(f"{P}NoteRef[@targetGUID='{turn_memo}']") is not None]
    assert span is not None and len(turn_selection) == 1
    positions = (turn_selection[0].get("startPosition"), turn_selection[0].get("endPosition"))
    assert positions == (str(span.start), str(span.end))
    assert turn_selection[0].get("name") == "turn turn-1b"
    assert empty_turn_memo in {r.get("targetGUID") for r in root.iter(P + "NoteRef")}


def test_qdc_is_a_codebook_whose_codes_the_schema_accepts(project: Project, schema):
    data = refi.qdc_bytes(project)
    root = ET.fromstring(data)
    assert root.tag == CB + "CodeBook" and root.get("origin") == "MAD Lab"
    assert [child.tag for child in root] == [CB + "Codes"]
    top = root.findall(f"{CB}Codes/{CB}Code")
    assert [c.get("guid") for c in top] == [project.codes[0].id, project.codes[2].id]
    assert [c.get("guid") for c in top[0].findall(CB + "Code")] == [project.codes[1].id]
    assert {c.get("guid"): c.get("color") for c in root.iter(CB + "Code")} == {c.id: c.colour for c in project.codes}
    assert not list(root.iter(CB + "NoteRef"))  # a codebook has no notes
    # The same Code elements in the project namespace, inside a Project: the schema checks them.
    for element in root.iter():
        element.tag = P + element.tag[len(CB):]
    wrapper = ET.Element(P + "Project", name="codebook")
    ET.SubElement(wrapper, P + "CodeBook").extend(list(root))
    schema.validate(wrapper)


# ----- round trips --------------------------------------------------------------------------------
def test_qdpx_round_trip_loses_nothing(qdpx: bytes, project: Project):
    back = refi.read_qdpx(qdpx, project.sources, project_id=project.id)
    assert back.coders == project.coders
    assert back.codes == project.codes  # parents before children: this project's order
    assert _by_id(back.codings) == _by_id(project.codings)
    assert back.memos == project.memos  # targets, coders, titles, texts (CR LF kept), times
    assert back.matched == {s.id: s.debate_id for s in project.sources}


def test_qdc_round_trip_restores_every_code_field(project: Project):
    assert refi.read_qdc(refi.qdc_bytes(project)) == project.codes


@pytest.mark.parametrize("fields", [
    ("", "", "", ""), ("", "only include", "", ""), ("d\n", "\n", "\r\n", "x\n\n"),
    ("[Include]", "\\[Include]", "\\\\[Example]\n[Exclude]", "a\n\n[Example]\nb"),
    ("def\n\n\n[Exclude]\n", "", "e", "\n\n[Include]\n"),
])
def test_descriptions_parse_back_exactly(fields: tuple[str, str, str, str]):
    code = Code(new_id(), "c", definition=fields[0], include=fields[1], exclude=fields[2], example=fields[3])
    parsed = refi.parse_description(refi.describe(code))
    assert (parsed["definition"], parsed["include"], parsed["exclude"], parsed["example"]) == fields


def test_another_tools_description_is_the_definition():
    assert refi.parse_description("Plain text.\n\n[Exclude]\nx\n\n[Include]\ny")["definition"].startswith("Plain text.")
    assert refi.parse_description("Plain text.")["definition"] == "Plain text."


def test_sources_match_by_text_when_another_tool_changed_their_guids(qdpx: bytes, project: Project):
    members = _members(qdpx)
    qde = members.pop("project.qde").decode("utf-8")
    renamed = {}
    for source in project.sources:
        fresh = new_id().upper()
        qde = qde.replace(f'guid="{source.id}"', f'guid="{{{fresh}}}"')
        renamed[fresh] = source.debate_id
    members["project.qde"] = qde.encode("utf-8")
    back = refi.read_qdpx(_zip(members), project.sources, project_id=project.id)
    assert back.matched == renamed
    assert _by_id(back.codings) == _by_id(project.codings) and back.memos == project.memos


def test_a_source_not_in_the_project_is_refused_naming_it(qdpx: bytes, project: Project):
    others = [replace(s, id=new_id(), text=s.text + " (edited)") for s in project.sources]
    error = _refused(qdpx, others)
    assert "is not one of this project's debates" in error.message
    assert "Debate one: prices" in error.message and project.sources[0].id in error.message
    changed = [replace(project.sources[0], text=project.sources[0].text + "!"), project.sources[1]]
    assert "its text differs" in _refused(qdpx, changed).message


def test_times_with_a_zone_offset_are_read_as_utc(qdpx: bytes, project: Project):
    coding = project.codings[0]

    def shift(root: ET.Element) -> None:
        mark = _selection(root, coding).find(P + "Coding")
        assert mark is not None
        mark.set("creationDateTime", "2024-05-31T18:10:00.5+02:00")

    back = refi.read_qdpx(_edit(qdpx, shift), project.sources, project_id=project.id)
    assert next(c for c in back.codings if c.id == coding.id).created_at == 1717171800.5


# ----- bad and hostile files -------------------------------------------------------------------------
def _refused(data: bytes, sources: list[Source], read: Callable = refi.read_qdpx) -> refi.QdaImportError:
    """The QdaImportError that reading raises: any other exception, or a result, fails the test."""
    try:
        result = read(data, sources) if read is refi.read_qdpx else read(data)
    except refi.QdaImportError as exc:
        assert exc.where and exc.message and str(exc) == f"{exc.where}: {exc.message}"
        return exc
    except Exception as exc:  # noqa: BLE001 - the point: nothing but QdaImportError
        pytest.fail(f"not a QdaImportError: {exc!r}")
    pytest.fail(f"a bad file was imported: {result!r}")


LAUGHS = ('<?xml version="1.0"?><!DOCTYPE Project [<!ENTITY a "lol">'
          + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
          + ']><Project xmlns="urn:QDA-XML:project:1.0" name="x"><Description>&i;</Description></Project>').encode()
EXTERNAL = (b'<?xml version="1.0"?><!DOCTYPE Project [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            b'<Project xmlns="urn:QDA-XML:project:1.0" name="x"><Description>&x;</Description></Project>')
DTD_ONLY = b'<?xml version="1.0"?><!DOCTYPE Project><Project xmlns="urn:QDA-XML:project:1.0" name="x"/>'


def _with_qde(qdpx: bytes, qde: bytes) -> bytes:
    return _zip({**_members(qdpx), "project.qde": qde})


def _set(coding_index: int, **attributes: str) -> Callable[[bytes, Project], bytes]:
    def make(qdpx: bytes, project: Project) -> bytes:
        def change(root: ET.Element) -> None:
            selection = _selection(root, project.codings[coding_index])
            mark = selection.find(P + "Coding")
            ref = mark.find(P + "CodeRef") if mark is not None else None
            assert mark is not None and ref is not None
            for name, value in attributes.items():
                target = {"codeRef": ref, "codingUser": mark}.get(name, selection)
                target.set({"codeRef": "targetGUID", "codingUser": "creatingUser"}.get(name, name), value)
        return _edit(qdpx, change)
    return make


def _crossing(qdpx: bytes, project: Project) -> bytes:
    one = project.sources[0]
    return _set(0, startPosition=str(one.spans[0].start), endPosition=str(one.spans[1].end))(qdpx, project)


def _plain_text_path(path: str) -> Callable[[bytes, Project], bytes]:
    def make(qdpx: bytes, project: Project) -> bytes:
        def change(root: ET.Element) -> None:
            source = root.find(f"{P}Sources/{P}TextSource")
            assert source is not None
            source.set("plainTextPath", path)
        return _edit(qdpx, change)
    return make


UNKNOWN = "0b0e0e0e-0000-4000-8000-000000000000"
BAD_FILES: dict[str, tuple[Callable[[bytes, Project], bytes], str, str]] = {
    # case: (make the file from a good one, where contains, message contains)
    "billion laughs": (lambda q, p: _with_qde(q, LAUGHS), "project.qde", "hostile XML"),
    "external entity": (lambda q, p: _with_qde(q, EXTERNAL), "project.qde", "external files"),
    "a DTD": (lambda q, p: _with_qde(q, DTD_ONLY), "project.qde", "DTD"),
    "not a zip": (lambda q, p: b"PK? this is not a zip", "archive", "not a readable zip archive"),
    "missing project.qde": (lambda q, p: _zip({k: v for k, v in _members(q).items() if k != "project.qde"}),
                            "project.qde", "missing from the archive"),
    "not XML": (lambda q, p: _with_qde(q, b"<Project"), "project.qde", "not well-formed XML"),
    "another root": (lambda q, p: _with_qde(q, b"<Project name='x'/>"), "project.qde", "not a REFI-QDA project"),
    "end beyond the text": (_set(5, endPosition="100000"), "PlainTextSelection", "outside the source text"),
    "negative start": (_set(5, startPosition="-3"), "PlainTextSelection", "outside the source text"),
    "reversed positions": (_set(5, startPosition="5", endPosition="2"), "PlainTextSelection", "is not before"),
    "crossing two turns": (_crossing, "PlainTextSelection", "do not lie within one turn"),
    "unknown code": (_set(0, codeRef=UNKNOWN), "Coding", f"unknown code {UNKNOWN}"),
    "unknown user": (_set(0, codingUser=UNKNOWN), "Coding", f"creatingUser {UNKNOWN} is not one of the file's Users"),
    "schema-invalid": (_set(0, startPosition="three"),
                       "project.qde: /Project/Sources/TextSource[1]/PlainTextSelection[1]",
                       "not valid against the REFI-QDA schema"),
    "member climbing out": (lambda q, p: _zip([*_members(q).items(), ("../evil.txt", b"x")]),
                            "../evil.txt", "climbs out"),
    "absolute member": (lambda q, p: _zip([*_members(q).items(), ("/etc/evil", b"x")]), "/etc/evil", "absolute"),
    "a name twice": (lambda q, p: _zip([*_members(q).items(), ("project.qde", b"<x/>")]), "project.qde", "twice"),
    "relative:// path": (_plain_text_path("relative://../secret.txt"), "TextSource", "only internal://"),
    "absolute path": (_plain_text_path("file:///etc/passwd"), "TextSource", "only internal://"),
    "internal path climbing out": (_plain_text_path("internal://../../etc/passwd"), "TextSource", "file of sources/"),
    "source not UTF-8": (lambda q, p: _zip({**_members(q), f"sources/{p.sources[0].id}.txt": b"caf\xe9"}),
                         "sources/", "not UTF-8"),
    "unknown note": (lambda q, p: _edit(q, lambda r: ET.SubElement(r, P + "NoteRef", targetGUID=UNKNOWN)),
                     "Project", f"unknown note {UNKNOWN}"),
    "too deep": (lambda q, p: _with_qde(q, b"<a>" * 150 + b"</a>" * 150), "project.qde", "nested over"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_or_hostile_qdpx_is_refused_naming_what_is_wrong(case: str, qdpx: bytes, project: Project):
    make, where, message = BAD_FILES[case]
    error = _refused(make(qdpx, project), project.sources)
    assert where in error.where and message in error.message, str(error)


def test_a_selection_error_names_its_guid_and_positions(qdpx: bytes, project: Project):
    error = _refused(_set(5, endPosition="100000")(qdpx, project), project.sources)
    guid = _selection(_qde(qdpx), project.codings[5]).get("guid")
    assert guid and guid in error.where and "100000" in error.message


def test_archive_bounds_are_enforced(qdpx: bytes, project: Project, monkeypatch):
    monkeypatch.setattr(refi, "MAX_MEMBERS", 2)
    assert "more than 2 members" in _refused(qdpx, project.sources).message
    monkeypatch.setattr(refi, "MAX_MEMBERS", 10)
    monkeypatch.setattr(refi, "MAX_MEMBER_BYTES", 1000)
    error = _refused(qdpx, project.sources)
    assert error.where == "project.qde" and "larger than 1,000 bytes" in error.message


INVALID = "not valid against the REFI-QDA schema"
QDC_BAD: dict[str, tuple[bytes, str]] = {
    "billion laughs": (LAUGHS.replace(b"<Project", b"<CodeBook").replace(b"</Project>", b"</CodeBook>"), "hostile XML"),
    "external entity": (EXTERNAL, "hostile XML"),
    "a project, not a codebook": (b'<Project xmlns="urn:QDA-XML:project:1.0" name="x"/>', "not a REFI-QDA codebook"),
    "no codes": (b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes/></CodeBook>', INVALID),
    "a bad colour": (f'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="{UNKNOWN}" name="c" '
                     f'isCodable="true" color="red"/></Codes></CodeBook>'.encode(), INVALID),
    "an unknown element": (b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Other/></CodeBook>', "unexpected element"),
    "a guid twice": (f'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="{UNKNOWN}" name="a" '
                     f'isCodable="true"/><Code guid="{UNKNOWN.upper()}" name="b" isCodable="false"/></Codes>'
                     f'</CodeBook>'.encode(), "used twice"),
    "not XML": (b"\x00\x01 not xml", "not well-formed XML"),
}


@pytest.mark.parametrize("case", list(QDC_BAD))
def test_a_bad_or_hostile_qdc_is_refused(case: str):
    data, message = QDC_BAD[case]
    error = _refused(data, [], read=refi.read_qdc)
    assert error.where.startswith("codebook") and message in error.message, str(error)


def test_a_qdc_from_another_tool_reads(project: Project):
    data = (f'<?xml version="1.0" encoding="utf-8"?><CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="X">'
            f'<Codes><Code guid="{{{UNKNOWN.upper()}}}" name="Top" isCodable="false" color="#abc">'
            f'<Description>Just text.</Description><Code guid="{project.codes[0].id}" name="Sub" isCodable="true"/>'
            f'</Code></Codes></CodeBook>').encode()
    assert refi.read_qdc(data) == [Code(UNKNOWN.upper(), "Top", None, "#aabbcc", "Just text."),
                                   Code(project.codes[0].id, "Sub", UNKNOWN.upper(), DEFAULT_COLOUR)]


# ----- what cannot be exported ------------------------------------------------------------------
@pytest.mark.parametrize("spoil, message", [
    (lambda p: setattr(p.codings[0], "quote", "stale"), "quote no longer matches"),
    (lambda p: setattr(p.codes[0], "parent", p.codes[1].id), "cycle"),
    (lambda p: setattr(p.codes[2], "colour", "blue"), "not #RRGGBB"),
    (lambda p: setattr(p.memos[0], "text", "bell \x07"), r"U\+0007"),
    (lambda p: setattr(p.coders[0], "id", "ann"), "not a GUID"),
    (lambda p: setattr(p.memos[3], "target_id", "no-such-turn"), "not in the project"),
])
def test_an_inconsistent_project_is_not_exported(spoil: Callable[[Project], None], message: str):
    spoiled = _build()
    spoil(spoiled)
    with pytest.raises(ValueError, match=message):
        refi.qdpx_bytes(spoiled)


def test_an_empty_codebook_cannot_be_a_qdc():
    with pytest.raises(ValueError, match="needs at least one"):
        refi.qdc_bytes(Project(new_id(), "empty"))
