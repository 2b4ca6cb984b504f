"""Select a passage of a turn with the mouse: a small Streamlit component (components v2) for the
Coding page.

What it is for: `pick_passage(text, spans, key)` draws a turn's text, its coded passages behind
their codes' colours, and reports the passage a person selects in it with the mouse (or the
keyboard) as character offsets into that text, in Python's way of counting (Unicode code points,
end exclusive), or None while nothing is selected. The Coding page codes exactly those offsets.

How it stays safe: the text reaches the browser as data and is put on the page with
`textContent` only, piece by piece (never `innerHTML`), so a turn that reads `<b>x</b>` or
`<img onerror=...>` is drawn as those characters. A colour is used only when it reads `#RRGGBB`.
The offsets coming back are checked here (whole numbers, inside the text, start before end);
anything else reads as no selection.

What it must not do: render any text as HTML, trust what the browser sends, or store anything.
"""
from __future__ import annotations

import re
from typing import Any

import streamlit as st

HEX = re.compile(r"#[0-9A-Fa-f]{6}\Z")
CSS = """
.madlab-passage { white-space: pre-wrap; line-height: 1.6; padding: 0.4rem 0.6rem; border-radius: 0.4rem;
                  border: 1px dashed rgba(128, 128, 128, 0.5); cursor: text; user-select: text; }
.madlab-passage mark { color: inherit; border-radius: 0.2rem; padding: 0 0.05rem; }
"""
# The offsets are counted in code points (Array.from), as Python counts them, not UTF-16 units.
JS = """
export default function(component) {
  const { data, setStateValue, parentElement } = component;
  let box = parentElement.querySelector('.madlab-passage');
  if (!box) {
    box = document.createElement('div');
    box.className = 'madlab-passage';
    box.setAttribute('data-testid', 'madlab-passage');
    parentElement.appendChild(box);
  }
  box.replaceChildren();
  const chars = Array.from((data && data.text) || '');
  const spans = (data && data.spans) || [];
  const cuts = new Set([0, chars.length]);
  for (const [s, e] of spans) {
    cuts.add(Math.max(0, Math.min(s, chars.length)));
    cuts.add(Math.max(0, Math.min(e, chars.length)));
  }
  const points = [...cuts].sort((a, b) => a - b);
  for (let i = 0; i < points.length - 1; i++) {
    const a = points[i], b = points[i + 1];
    let colour = null;
    for (const [s, e, c] of spans) { if (s <= a && b <= e) { colour = c; } }
    const piece = document.createElement(colour ? 'mark' : 'span');
    piece.textContent = chars.slice(a, b).join('');
    if (colour) { piece.style.backgroundColor = colour + '55'; }
    box.appendChild(piece);
  }
  const report = () => {
    const selection = document.getSelection();
    if (!selection || selection.rangeCount === 0 || selection.isCollapsed) { return; }
    const range = selection.getRangeAt(0);
    if (!box.contains(range.startContainer) || !box.contains(range.endContainer)) { return; }
    const before = document.createRange();
    before.selectNodeContents(box);
    before.setEnd(range.startContainer, range.startOffset);
    const start = Array.from(before.toString()).length;
    const end = start + Array.from(range.toString()).length;
    setStateValue('selection', { start: start, end: end });
  };
  box.onmouseup = report;
  box.onkeyup = report;
  return () => { box.onmouseup = null; box.onkeyup = null; };
}
"""

_PICKER = st.components.v2.component("madlab_passage_picker", css=CSS, js=JS, isolate_styles=False)


def checked_selection(value: Any, text: str) -> tuple[int, int] | None:
    """The offsets a browser reported, when they are whole numbers with 0 <= start < end <= len(text)."""
    if not isinstance(value, dict):
        return None
    start, end = value.get("start"), value.get("end")
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (start, end)):
        return None
    return (start, end) if 0 <= start < end <= len(text) else None


def pick_passage(text: str, spans: list[tuple[int, int, str]], key: str) -> tuple[int, int] | None:
    """Draw `text` with `spans` (start, end, "#RRGGBB") highlighted; return the selected passage's
    offsets, or None while nothing (valid) is selected."""
    shown = [[int(s), int(e), c] for s, e, c in spans if isinstance(c, str) and HEX.match(c)]
    result = _PICKER(data={"text": text, "spans": shown}, key=key, default={"selection": None},
                     on_selection_change=lambda: None)
    return checked_selection(getattr(result, "selection", None), text)
