"""Transcripts: running debates to reattach, stored debates (search, filters), and one opened
debate with its transcript, annotations, forks, replay, plots, config and exports; the Codebook
section (madlab_ui/codebook.py) above the list holds the shared annotation tags and the CSVs."""
from __future__ import annotations

import streamlit as st

from madlab_ui import browse, codebook
from madlab_ui.common import OPEN_DEBATE, page_setup

page_setup("Transcripts")
st.title("Transcripts")
browse.render_running()
opened = st.session_state.get(OPEN_DEBATE)
codebook.render_codebook(opened)  # the shared tags, who annotates, the annotation CSVs
browse.render_list()
if opened:
    browse.render_debate(opened)
