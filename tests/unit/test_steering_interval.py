"""madlab_ui.controls.steering_interval: the steering line refreshes as often as the live page, but at
most once every STEERING_REFRESH_S (each fragment run costs the browser a pass over the whole page)."""
from __future__ import annotations

from types import SimpleNamespace

from madlab_ui import controls
from madlab_ui.live_page import LIVE_REFRESH_S, SESSION_KEY, LivePage, refresh_interval


def page_with(settled: int) -> LivePage:
    page = LivePage.__new__(LivePage)  # only its settled turns matter to the intervals
    page.settled_ids = {f"t{i}" for i in range(settled)}
    return page


def interval(monkeypatch, page: LivePage, done: bool = False):
    monkeypatch.setattr(controls, "st", SimpleNamespace(session_state={SESSION_KEY: page}))
    return controls.steering_interval(SimpleNamespace(done=done))


def test_a_short_debate_refreshes_the_line_once_a_second_not_at_the_ticks_pace(monkeypatch):
    page = page_with(0)
    assert refresh_interval(page) == LIVE_REFRESH_S < controls.STEERING_REFRESH_S
    assert interval(monkeypatch, page) == controls.STEERING_REFRESH_S


def test_a_long_debate_refreshes_the_line_with_the_live_page(monkeypatch):
    page = page_with(200)
    assert refresh_interval(page) > controls.STEERING_REFRESH_S
    assert interval(monkeypatch, page) == refresh_interval(page)


def test_an_ended_debate_never_refreshes_the_line(monkeypatch):
    assert interval(monkeypatch, page_with(0), done=True) is None
