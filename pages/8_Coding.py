"""Coding: qualitative coding projects of stored debates (codebook, coders, codings, memos, agreement,
adjudication, REFI-QDA exchange); the page's parts are madlab_ui/coding.py."""
from __future__ import annotations

import streamlit as st

from madlab_ui import coding
from madlab_ui.page import page_setup

page_setup("Coding")
st.title("Coding")
coding.render_page()
