"""Fixtures of the Streamlit AppTest suite: the scripted model, a cheap embedder, held debates."""
from __future__ import annotations

import pytest
from app_helpers import HELD, SCRIPT, Gate, embed, reply

from mad_core import live
from mad_core.models import ensure_registered
from mad_core.models.scripted import Script, register_script, unregister_script


@pytest.fixture(autouse=True)
def scripted(monkeypatch):
    """The scripted model `scripted/apptest`, and a cheap embedder for the diversity plot."""
    import madlab_ui.plots as plots

    ensure_registered()
    register_script(SCRIPT, Script(replies=reply))
    monkeypatch.setattr(plots, "EMBED", embed)
    plots._cache.clear()
    yield SCRIPT
    unregister_script(SCRIPT)


@pytest.fixture
def gate():
    """`scripted/apptest_held`: calls wait until `gate.opened.set()`; any debate left is stopped and joined."""
    held = Gate()
    register_script(HELD, Script(replies=held.reply))
    before = {d.debate_id for d in live.running()}
    yield held
    held.opened.set()
    for debate in live.running():
        if debate.debate_id not in before:
            debate.controller.stop()
            debate.thread.join(timeout=30)
    unregister_script(HELD)
