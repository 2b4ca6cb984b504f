"""The first call of every page: `page_setup(title)`.

Page config, API keys from secrets.toml (`common.load_secret_keys`), the session token in the URL
with what a reload brings back (`session_memory`), the form-state keeper (`forms.keep_form_state`),
and the page's guard (`access.require`: a visitor from another machine gets one line on a page it
may not open). It lives here, not in `common`, so that `common` imports nothing of madlab_ui
(`session_memory`, `forms` and `access` import `common`: no import circle).

What it must not do: draw anything itself (but the guard's one line), or decide who may do what
(that is `access`'s).
"""
from __future__ import annotations

import streamlit as st

from . import access, session_memory
from .common import load_secret_keys
from .forms import keep_form_state


def page_setup(title: str) -> None:
    """Common page config, API keys, the session token with what a reload brings back, the form-state
    keeper, then the guard of the page called `title` (navigation.PAGES). Call first on every page."""
    st.set_page_config(page_title=f"MAD Lab · {title}", page_icon="🗣️", layout="wide")
    load_secret_keys()
    session_memory.attach()
    keep_form_state()
    session_memory.remember()
    access.require(title)
