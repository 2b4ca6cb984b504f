"""Experiments: define a sweep of debates over a task set (form or YAML), start it in the background,
follow its progress, and study its results (table, plots, CSV; each debate opens in Transcripts)."""
from __future__ import annotations

import streamlit as st

from madlab_ui import experiments
from madlab_ui.page import page_setup

page_setup("Experiments")
st.title("Experiments")
experiments.render_new()
experiments.render_list()
opened = st.session_state.get(experiments.EXP_OPEN)
if opened:
    experiments.render_experiment(opened)
