"""Coded passages drawn in a turn's text: Markdown that shows the text literally, each passage behind
its code's colour (`highlighted`), used by the Coding page and the Transcripts page.

What it must not do: let any of the text act as Markdown or HTML (every sign is escaped, `]` and `&`
too, so nothing closes a colour directive early or names an entity).
"""
from __future__ import annotations

import re
from typing import Any

from .common import md_escape

# Streamlit's Markdown colours (a background directive takes a name, not a hex): their usual RGB.
NAMED_RGB = {"blue": (31, 119, 180), "orange": (255, 127, 14), "green": (44, 160, 44), "red": (214, 39, 40),
             "violet": (148, 103, 189), "gray": (127, 127, 127), "yellow": (188, 189, 34)}
_HEX = re.compile(r"#?([0-9A-Fa-f]{6})\Z")


def named_colour(hex_colour: str | None) -> str:
    """The Markdown colour name nearest to "#RRGGBB" (gray when it is not one)."""
    found = _HEX.match(str(hex_colour or ""))
    if not found:
        return "gray"
    rgb = tuple(int(found.group(1)[i:i + 2], 16) for i in (0, 2, 4))
    return min(NAMED_RGB, key=lambda name: sum((a - b) ** 2 for a, b in zip(rgb, NAMED_RGB[name])))


def literal(text: str) -> str:
    """A piece of one line as Markdown shown literally, also inside a `:colour-background[...]`
    directive: every Markdown sign escaped (`]` too, so nothing closes the directive early) and `&`
    (no entity)."""
    return md_escape(text).replace("&", "\\&")


def highlighted(text: str, spans: list[tuple[int, int, str]]) -> str:
    """A turn's text as Markdown drawn literally, each passage of `spans` (start, end, colour name)
    behind its colour (where passages overlap, the later one's); line breaks kept."""
    lines, offset = [], 0
    for line in text.split("\n"):
        cuts = sorted({0, len(line)} | {min(max(at - offset, 0), len(line)) for s, e, _ in spans for at in (s, e)})
        runs: list[list[Any]] = []  # [colour or None, text]: neighbours of one colour joined
        for a, b in zip(cuts, cuts[1:]):
            colour = next((c for s, e, c in reversed(spans) if s <= offset + a and offset + b <= e), None)
            if runs and runs[-1][0] == colour:
                runs[-1][1] += line[a:b]
            else:
                runs.append([colour, line[a:b]])
        joined = "".join(f":{c}-background[{literal(t)}]" if c and t.strip() else literal(t) for c, t in runs)
        lines.append("\\" + joined if joined.startswith("=") else joined)  # no heading underline
        offset += len(line) + 1
    return "  \n".join(lines)
