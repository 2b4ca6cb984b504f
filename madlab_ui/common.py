"""Page setup and small shared helpers: the store, the session's owner id, colors, escaping.

What it must not do: run a debate, call a model, or render model text as HTML.
"""
from __future__ import annotations

import os
import re
import time
import uuid
from pathlib import Path

import streamlit as st

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not stall on the network
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from mad_core.store import Store, mark_dead_interrupted  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEBATE_PAGE = "app.py"

# One color per agent position: markdown color name, avatar, hex for the plots (each hex at least 3:1
# against the white background, WCAG 2.1: the orange and yellow were 2.5:1 and 2.0:1).
PALETTE = [
    ("blue", "🟦", "#1f77b4"),
    ("green", "🟩", "#2ca02c"),
    ("orange", "🟧", "#d26a00"),
    ("red", "🟥", "#d62728"),
    ("violet", "🟪", "#9467bd"),
    ("gray", "⬛", "#555555"),
    ("yellow", "🟨", "#8f8f00"),
    ("orange", "🟫", "#8c564b"),
]
JUDGE_STYLE = ("gray", "⚖️", "#7f7f7f")
MODERATOR_AVATAR = "📣"

# Session-state keys shared between pages (plain values, not widgets).
DEBATE_ID = "debate_id"  # the debate this browser session watches on the Debate page
FORK_REQUEST = "fork_request"  # {"parent_id", "seq", "turn_index", "config"} set by the Transcripts page
OPEN_DEBATE = "open_debate"  # the debate opened on the Transcripts page
POLL_VOTER = "poll_me"  # the name this session predicted under on the Poll page (kept across reloads)
ANNOTATOR_KEPT = "annotator_name"  # the reading room's annotator name (madlab_ui.codebook; kept across reloads)
OWNER_ID = "owner_id"  # the session's owner id, also its token in the URL (madlab_ui.session_memory)


_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*_(API_KEY|KEY|TOKEN|API_BASE|BASE_URL|API_VERSION)$")


def load_secret_keys() -> list[str]:
    """Copy provider settings from `.streamlit/secrets.toml` into the environment, where litellm
    reads them (OPENAI_API_KEY, ANTHROPIC_API_KEY, HOSTED_VLLM_API_BASE, ...). The environment
    wins over the file. Returns the names copied; values are never shown, stored or logged."""
    try:
        items = {name: st.secrets[name] for name in st.secrets}
    except Exception:  # noqa: BLE001 - no secrets file: nothing to load
        return []
    copied = []
    for name, value in items.items():
        if _ENV_NAME.match(name) and isinstance(value, str) and value and not os.environ.get(name):
            os.environ[name] = value
            copied.append(name)
    return copied


def owner_id() -> str:
    """A stable id for this browser session (the `owner` of debates it starts). It is the session's
    token in the URL (set by `page.page_setup`), so a reload or a second tab of the same URL owns them too."""
    if OWNER_ID not in st.session_state:
        st.session_state[OWNER_ID] = uuid.uuid4().hex
    return st.session_state[OWNER_ID]


def open_store() -> Store:
    """A Store for the current thread (SQLite connections must not cross threads); running debates whose
    owner is gone are marked interrupted first, so every page shows how they stand."""
    store = Store()
    mark_dead_interrupted(store)
    return store


def agent_style(label: str, labels: list[str]) -> tuple[str, str, str]:
    """(markdown color, avatar, hex) for an agent: stable by its position in the config."""
    if label == "judge":
        return JUDGE_STYLE
    if label in labels:
        return PALETTE[labels.index(label) % len(PALETTE)]
    return PALETTE[sum(map(ord, label)) % len(PALETTE)]


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~:])")


def md_escape(text: str) -> str:
    """Escape markdown so a label, persona or short answer shows literally inside markup: no image,
    link, heading, math (`$`) or Streamlit directive can form from it (so nothing is fetched)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text or "")).replace("\n", " ")


def plain_markdown(text: str | None) -> str:
    """Any text (a question, a persona) as Markdown that shows it literally line by line: every
    Markdown sign escaped (a "---" or "# ..." line is text, never a rule or a heading; `$` is a
    dollar; an image is its own words), each line break kept as a hard break."""
    return "  \n".join(md_escape(line) for line in str(text or "").split("\n"))


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# An inline image ![alt](target "title"): drawn as "[image: alt]" (the target is never fetched).
_IMAGE = re.compile(r"!\[((?:[^\[\]\\\n]|\\.)*)\]\((?:[^()\\\n]|\\.|\([^()\n]*\))*\)")
_IMAGE_OPEN = re.compile(r"!(?=\[)")  # what is left of an image (reference style, nested brackets)
_DOLLAR = re.compile(r"(?<!\\)((?:\\\\)*)\$")  # a `$` not already escaped
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


def _neutral(text: str) -> str:
    """Markdown outside code with its images as words and its dollars literal (see model_markdown)."""
    text = _IMAGE.sub(lambda m: "\\[image: " + md_escape(m.group(1).replace("\\", "")) + "\\]", text)
    text = _IMAGE_OPEN.sub(r"\\!", text)
    return _DOLLAR.sub(r"\1\\$", text)


def _neutral_outside_code(text: str) -> str:
    """`_neutral` on everything but inline code spans (whose text is shown as it is anyway)."""
    out, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [_neutral(text[last:span.start()]), span.group(0)]
        last = span.end()
    return "".join(out + [_neutral(text[last:])])


def model_markdown(text: str | None) -> str:
    """Model, moderator or user text for st.markdown, the one place such text becomes Markdown.

    - Nothing reaches out: an image (`![x](http://host/pixel.png)`, a reference-style one too) is
      drawn as the words "[image: x]", never fetched; links stay links (nothing fetches them); HTML
      stays disabled (st.markdown's default).
    - Dollars stay dollars: every `$` is escaped (`\\$`), so "$1.00 ... $1.05" is never KaTeX math.
    - Single line breaks are kept: Markdown joins a line to the next ("...in future\\nThe correct
      answer" read "...in future The correct answer"), so every line followed by another non-empty
      line ends in a hard break (two spaces).
    Fenced code and inline code spans are left as they are (shown literally anyway)."""
    lines = str(text or "").split("\n")
    fence = ""
    blocks: list[tuple[bool, list[str]]] = []  # (inside a fence, its lines)
    for i, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            blocks[-1][1].append(line)
            continue
        if opened:
            fence = opened.group(1)
            blocks.append((True, [line]))
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and following.strip() and not line.endswith(("  ", "\\")):
            line = line.rstrip() + "  "
        if not blocks or blocks[-1][0]:
            blocks.append((False, []))
        blocks[-1][1].append(line)
    return "\n".join("\n".join(block) if code else _neutral_outside_code("\n".join(block))
                     for code, block in blocks)


def short(text: str | None, limit: int = 80) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def id8(debate_id: str) -> str:
    return debate_id[:8]


def when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"
