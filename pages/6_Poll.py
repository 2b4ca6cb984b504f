"""Poll: the page students open on their own devices (`/Poll?poll=<id>`) to predict which answer a
debate will decide on; the counts and who predicted right appear once the teacher reveals them."""
from __future__ import annotations

import streamlit as st

from madlab_ui import poll
from madlab_ui.page import page_setup

page_setup("Poll")
st.title("🗳️ Prediction poll")
poll.render_student_page()
