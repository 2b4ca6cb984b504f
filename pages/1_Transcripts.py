"""Transcripts: running debates to reattach, stored debates (search, filters), and one opened
debate (kept in the URL: `?open=<id>`) with its transcript, annotations, forks, replay, plots,
config and exports; the Codebook section (madlab_ui/codebook.py) holds the shared annotation tags
and the CSVs. While a debate is open the list folds away (madlab_ui/browse.py's `render_page`)."""
from __future__ import annotations

import streamlit as st

from madlab_ui import browse
from madlab_ui.page import page_setup

page_setup("Transcripts")
st.title("Transcripts")
browse.render_page()
