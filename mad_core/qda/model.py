"""The plain data of a coding project, shared by its storage, agreement and REFI-QDA exchange.

A project holds debates (each one plain-text ``Source``), a codebook (``Code``s in a hierarchy:
``parent`` is another code's id or None), its ``Coder``s, their ``Coding``s and ``Memo``s. Ids
are GUIDs (``new_id``), as REFI-QDA requires of every element.

A coding applies one code to a passage of one turn: ``start``/``end`` are character offsets
into the turn's stored text (``end`` exclusive; the whole turn is ``0..len(text)``), and
``quote`` is the text they cover, kept so that a passage can be checked against the turn it
came from. A debate becomes one source text (`source_of`): each turn, in order, as a header line
and its text, separated by a blank line; ``TurnSpan`` says where each turn's text lies in it,
so a passage's offsets in the source (REFI-QDA's ``startPosition``/``endPosition``) are its
turn's ``start`` plus its own (`to_source`, `from_source`).

Nothing here touches the database, XML or a model.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

MEMO_TARGETS = ("project", "code", "debate", "turn", "coding")
DEFAULT_COLOUR = "#4C78A8"


def new_id() -> str:
    """A GUID (REFI-QDA's form: 8-4-4-4-12 hexadecimal digits)."""
    return str(uuid.uuid4())


@dataclass
class Code:
    id: str
    name: str
    parent: str | None = None  # another code's id: the hierarchy
    colour: str = DEFAULT_COLOUR  # "#RRGGBB"
    definition: str = ""
    include: str = ""  # when to apply it
    exclude: str = ""  # when not to
    example: str = ""


@dataclass
class Coder:
    id: str
    name: str


@dataclass
class TurnSpan:
    """Where one turn's text lies in its debate's source text: ``text[start:end]``."""

    turn_id: str
    start: int
    end: int


@dataclass
class Source:
    """One debate as plain text (see `source_of`)."""

    id: str
    debate_id: str
    name: str
    text: str
    spans: list[TurnSpan] = field(default_factory=list)

    def span(self, turn_id: str) -> TurnSpan | None:
        return next((s for s in self.spans if s.turn_id == turn_id), None)


@dataclass
class Coding:
    """One code applied by one coder to ``turn text[start:end]`` of one debate."""

    id: str
    debate_id: str
    turn_id: str
    start: int
    end: int
    quote: str
    code_id: str
    coder_id: str
    created_at: float = 0.0


@dataclass
class Memo:
    """A note on the project, a code, a debate, a turn or a coding (``target`` kind and id)."""

    id: str
    target: str  # one of MEMO_TARGETS
    target_id: str
    coder_id: str | None
    title: str
    text: str
    created_at: float = 0.0


@dataclass
class Project:
    id: str
    name: str
    codes: list[Code] = field(default_factory=list)
    coders: list[Coder] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    codings: list[Coding] = field(default_factory=list)
    memos: list[Memo] = field(default_factory=list)
    created_at: float = 0.0


def source_of(debate_id: str, name: str, turns: list[tuple[str, str, str]], source_id: str | None = None) -> Source:
    """A debate's source text from its turns in order, each ``(turn id, header, text)``: the header
    on a line of its own, then the text, turns separated by a blank line."""
    parts: list[str] = []
    spans: list[TurnSpan] = []
    position = 0
    for index, (turn_id, header, text) in enumerate(turns):
        lead = ("\n\n" if index else "") + header + "\n"
        parts.append(lead)
        position += len(lead)
        spans.append(TurnSpan(turn_id, position, position + len(text)))
        parts.append(text)
        position += len(text)
    return Source(source_id or new_id(), debate_id, name, "".join(parts), spans)


def to_source(source: Source, coding: Coding) -> tuple[int, int]:
    """A coding's offsets in its debate's source text."""
    span = source.span(coding.turn_id)
    if span is None:
        raise ValueError(f"coding {coding.id}: turn {coding.turn_id} is not in source {source.id}")
    return span.start + coding.start, span.start + coding.end


def from_source(source: Source, start: int, end: int) -> tuple[str, int, int] | None:
    """The turn a passage of the source text lies in, and its offsets in that turn's text; None
    when it does not lie within one turn's text (it crosses a header or two turns)."""
    if not 0 <= start < end <= len(source.text):
        return None
    for span in source.spans:
        if span.start <= start and end <= span.end:
            return span.turn_id, start - span.start, end - span.start
    return None
