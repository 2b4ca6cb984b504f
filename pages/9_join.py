"""Join: the page students open on their phones (`/join`) to type the code on the screen and a
nickname; it then shows what the code opened (a poll, or a seat in the debate)."""
from __future__ import annotations

import streamlit as st

from madlab_ui import join
from madlab_ui.page import page_setup

page_setup("Join")
st.title("🔑 Join the class")
join.render_join_page()
