"""madlab_ui.heap.settle: after a run that imported more, one collection then gc.freeze(); otherwise nothing."""
from __future__ import annotations

import gc
import sys

import pytest

from madlab_ui import heap


@pytest.fixture
def calls(monkeypatch):
    """What settle asked of the collector, in order (the real collector is not touched)."""
    done: list[str] = []
    monkeypatch.setattr(heap.gc, "collect", lambda *a: done.append("collect") or 0)
    monkeypatch.setattr(heap.gc, "freeze", lambda: done.append("freeze"))
    return done


def test_a_run_that_imported_enough_collects_then_freezes_once(monkeypatch, calls):
    monkeypatch.setattr(heap, "_frozen_at", len(sys.modules) - heap.MODULES_STEP)
    assert heap.settle() is True
    assert calls == ["collect", "freeze"]  # garbage first: only what is alive is frozen
    assert heap._frozen_at == len(sys.modules)
    # Must not happen: the next run, with no new import, collects again (the cost settle is there to spare).
    assert heap.settle() is False
    assert calls == ["collect", "freeze"]


def test_a_few_new_modules_are_not_enough(monkeypatch, calls):
    monkeypatch.setattr(heap, "_frozen_at", len(sys.modules) - heap.MODULES_STEP + 1)
    assert heap.settle() is False
    assert calls == []


def test_settle_really_freezes_what_is_alive(monkeypatch):
    monkeypatch.setattr(heap, "_frozen_at", len(sys.modules) - heap.MODULES_STEP)
    keep = [[] for _ in range(1000)]  # noqa: F841 - alive at the freeze
    before = gc.get_freeze_count()
    try:
        assert heap.settle() is True
        assert gc.get_freeze_count() >= before + 1000
    finally:
        gc.unfreeze()  # the test process goes back to collecting as before
