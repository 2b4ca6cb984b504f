"""Short display texts: a long answer or name cut at a word with an ellipsis.

What it is for: one rule for every place that shows a long text in little room (the handout's
answer lines, poll options, the presenter's stage), importable from any floor of mad_core (it
imports nothing of the project).

What it must not do: parse, escape or judge the text (escaping is the caller's: `exports.md_safe`,
`html.escape`), or import anything of the project.
"""
from __future__ import annotations

from typing import Any


def cut_words(text: Any, limit: int) -> str:
    """`text` with its whitespace folded, at most `limit` characters: a longer one is cut at the
    last word boundary that fits and ends with … ("…but also" read as if the answer ended there);
    a word longer than half the room (a 160-digit number) is cut inside."""
    text = " ".join(str(text if text is not None else "").split())
    if len(text) <= limit:
        return text
    room = text[:limit - 1]  # the … takes the last character
    space = len(room) if text[limit - 1] == " " else room.rfind(" ")  # room ends a word / the last whole word
    kept = room[:space] if space >= limit // 2 else room
    return kept.rstrip(" ,;:.-–—") + "…"
