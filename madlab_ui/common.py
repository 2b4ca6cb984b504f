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

from mad_core.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEBATE_PAGE = "app.py"

# One color per agent position: markdown color name, avatar, hex for the plots.
PALETTE = [
    ("blue", "🟦", "#1f77b4"),
    ("green", "🟩", "#2ca02c"),
    ("orange", "🟧", "#ff7f0e"),
    ("red", "🟥", "#d62728"),
    ("violet", "🟪", "#9467bd"),
    ("gray", "⬛", "#555555"),
    ("yellow", "🟨", "#bcbd22"),
    ("orange", "🟫", "#8c564b"),
]
JUDGE_STYLE = ("gray", "⚖️", "#7f7f7f")
MODERATOR_AVATAR = "📣"

# Session-state keys shared between pages (plain values, not widgets).
DEBATE_ID = "debate_id"  # the debate this browser session watches on the Debate page
FORK_REQUEST = "fork_request"  # {"parent_id", "seq", "turn_index", "config"} set by the Transcripts page
OPEN_DEBATE = "open_debate"  # the debate opened on the Transcripts page
POLL_VOTER = "poll_me"  # the name this session predicted under on the Poll page (kept across reloads)
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


def page_setup(title: str) -> None:
    """Common page config, API keys from secrets.toml, the session token in the URL with what a reload
    brings back, and the form-state keeper. Call first on every page."""
    st.set_page_config(page_title=f"MAD Lab · {title}", page_icon="🗣️", layout="wide")
    load_secret_keys()
    from . import session_memory
    from .forms import keep_form_state

    session_memory.attach()
    keep_form_state()
    session_memory.remember()


def owner_id() -> str:
    """A stable id for this browser session (the `owner` of debates it starts). It is the session's
    token in the URL (set by page_setup), so a reload or a second tab of the same URL owns them too."""
    if OWNER_ID not in st.session_state:
        st.session_state[OWNER_ID] = uuid.uuid4().hex
    return st.session_state[OWNER_ID]


def open_store() -> Store:
    """A Store for the current thread (SQLite connections must not cross threads)."""
    return Store()


def agent_style(label: str, labels: list[str]) -> tuple[str, str, str]:
    """(markdown color, avatar, hex) for an agent: stable by its position in the config."""
    if label == "judge":
        return JUDGE_STYLE
    if label in labels:
        return PALETTE[labels.index(label) % len(PALETTE)]
    return PALETTE[sum(map(ord, label)) % len(PALETTE)]


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~:])")


def md_escape(text: str) -> str:
    """Escape markdown so a label, persona or short answer shows literally inside markup."""
    return _MD_SPECIAL.sub(r"\\\1", str(text or "")).replace("\n", " ")


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def model_markdown(text: str | None) -> str:
    """Model (or moderator) text for st.markdown with its single line breaks kept: Markdown joins
    a line to the next ("...in future\nThe correct answer" read "...in future The correct answer"),
    so every line followed by another non-empty line ends in a hard break (two spaces). Fenced code
    is left as it is (its lines are kept anyway). HTML stays disabled: this only adds spaces."""
    lines = str(text or "").split("\n")
    fence = ""
    for i, line in enumerate(lines[:-1]):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        if line.strip() and lines[i + 1].strip() and not line.endswith(("  ", "\\")):
            lines[i] = line.rstrip() + "  "
    return "\n".join(lines)


def short(text: str | None, limit: int = 80) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def id8(debate_id: str) -> str:
    return debate_id[:8]


def when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"
