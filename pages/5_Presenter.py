"""Presenter: a debate for a projector (big type, agents side by side, the speaker highlighted,
controls in the collapsed sidebar and on keys), live or in replay, with a prediction poll."""
from __future__ import annotations

import streamlit as st

from madlab_ui import presenter
from madlab_ui.page import page_setup

page_setup("Presenter")
st.set_page_config(initial_sidebar_state="collapsed")
presenter.render()
