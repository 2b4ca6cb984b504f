"""Transcripts: running debates to reattach, stored debates (search, filters), and one opened
debate with its transcript, annotations, forks, replay, plots, config and exports."""
from __future__ import annotations

import streamlit as st

from madlab_ui import browse
from madlab_ui.common import OPEN_DEBATE, page_setup

page_setup("Transcripts")
st.title("Transcripts")
browse.render_running()
browse.render_list()
opened = st.session_state.get(OPEN_DEBATE)
if opened:
    browse.render_debate(opened)
