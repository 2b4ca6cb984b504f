"""The app calls madlab_ui.heap.settle() at the end of a full run (tests/unit/test_heap.py: what it does)."""
from __future__ import annotations

from app_helpers import APP
from streamlit.testing.v1 import AppTest

from madlab_ui import heap


def test_the_app_settles_at_the_end_of_a_full_run(monkeypatch):
    runs: list[int] = []
    monkeypatch.setattr(heap, "settle", lambda: runs.append(1) or False)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    assert at.button(key="start")  # the Debate page was drawn before it
    assert runs, "app.py did not call heap.settle() in its run"
