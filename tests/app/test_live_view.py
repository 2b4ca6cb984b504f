"""The live Debate page refreshes incrementally and still shows exactly what a full redraw shows.

A recorded debate (streamed tokens, a retried call, a failed turn, moderator messages, votes, a
decision; or one stopped mid-turn) is handed to a live debate event by event:
  - every follower (one per viewer, joining at different moments) holds, after every event,
    the same view as folding the events so far from scratch: same turns, texts, statuses;
  - after every event the page (its settled part as drawn at the last full run, plus the moving
    part drawn now) shows the same transcript and decision card as a full redraw;
  - a refresh with no new event folds, copies and redraws nothing settled (calls are counted).
Timings are not asserted here: bench/live_refresh.py measures them.
"""
from __future__ import annotations

import copy
import dataclasses
from collections import Counter

import pytest
from app_helpers import Feed, config
from streamlit.testing.v1 import AppTest

from mad_core import live
from mad_core.engine import DebateEngine
from mad_core.events import (DecisionReached, SteeringApplied, TokenReceived, TurnFinished, TurnRetried, TurnStarted,
                             VoteCast)
from mad_core.view import DebateView
from madlab_ui import live_page, transcript


def record(script, roles, kind: str) -> list:
    """The events of a scripted debate, tokens included."""
    if kind == "stopped":
        model, _ = script(roles())

        def stop(event):  # a listener, as Agent 2's turn starts: the turn is cut, it ends interrupted
            if isinstance(event, TurnStarted) and event.agent == "Agent 2":
                engine.controller.stop()

        engine = DebateEngine(config(model=model), listeners=[stop])
        return list(engine.run())
    # A server error on call 1 (retried), a hard failure on call 3 (a failed turn).
    model, _ = script(roles(answers={"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Paris"}),
                      faults={1: "server_error", 3: "exception"})

    def say(event):  # a listener: at the step boundary where the first turn finished
        if isinstance(event, TurnFinished) and event.turn.seq == 0:
            engine.controller.say("Think about Lyon.", ["Agent 2"])
            engine.controller.say("Everyone: be brief.")

    engine = DebateEngine(config(model=model, rounds=2, max_rounds=2, retry_base_delay=0, all_agents_drafting=True),
                          listeners=[say])
    return list(engine.run())


@pytest.fixture(params=["finished", "stopped"])
def recorded(request, script, roles):
    events = record(script, roles, request.param)
    assert any(isinstance(e, TokenReceived) for e in events)
    if request.param == "finished":
        kinds = {type(e) for e in events}
        assert {TurnRetried, SteeringApplied, VoteCast, DecisionReached} <= kinds
    return events


def folded(events) -> dict:
    view = DebateView()
    for event in events:
        view.apply(event)
    return dataclasses.asdict(view)


def test_every_follower_equals_a_full_rebuild_after_every_event(recorded):
    feed = Feed(recorded[0].debate_id)
    followers = {}
    joins = {0, len(recorded) // 3, 2 * len(recorded) // 3}
    for n, event in enumerate(recorded, start=1):
        if n - 1 in joins:
            followers[n - 1] = live.Follower(feed.debate)  # a viewer opens the page now
        feed.send(event)
        expected = folded(recorded[:n])
        for joined, follower in followers.items():
            follower.refresh()
            assert dataclasses.asdict(follower.view) == expected, (joined, n, type(event).__name__)
        assert dataclasses.asdict(feed.debate.view()) == expected
    view = followers[0].view
    assert view.status in ("finished", "stopped") and view.turns
    assert {t.status for t in view.turns} <= {"ok", "failed", "interrupted"}
    assert all(f.snapshots == 1 for f in followers.values())  # one copy each, when it joined
    assert followers[0].folded == len(recorded)
    feed.close()


# ----- what the page shows -------------------------------------------------------------------------
def page_script() -> None:
    """Draws what st.session_state["mode"] says: a full run, a tick as the browser shows it (the
    settled part kept from the last full run), the fragment's work alone, or a full redraw."""
    import streamlit as st

    from madlab_ui import live_page, transcript
    from madlab_ui.transcript import Walk

    page, mode = st.session_state["page"], st.session_state["mode"]
    shown = st.session_state["settled_view"] if mode == "tick" else page.view
    transcript.render_decision(shown)
    slots = live_page.Slots(st.empty(), None)
    box = st.container(key="transcript")
    slots.usage = st.empty()
    with box:
        if mode == "full":  # a full run: the settled part, then the fragment's first call
            live_page.draw_settled(page)
            live_page.tick(page, slots)
        elif mode == "tick":  # the browser still shows the settled part of the last full run
            transcript.render_timeline(shown, Walk(), page.settled.position)
            live_page.tick(page, slots)
        elif mode == "fragment":  # only the fragment's own work
            live_page.tick(page, slots)
        else:
            transcript.render_transcript(page.view)


def drawn(at: AppTest) -> list[tuple]:
    """What the transcript and the decision card show, in order: (type, key, text) of every node."""
    keys = {getattr(node, "key", None) for node in at.main}
    return [(node.type, getattr(node, "key", None), _text(node))
            for name in ("transcript", "decision_card") if name in keys for node in at.get_by_key(name)]


def _text(node) -> str | None:
    for attr in ("value", "label", "name"):
        try:
            value = getattr(node, attr)
        except Exception:  # noqa: BLE001 - blocks have no value
            continue
        if value is not None and not callable(value):
            return str(value)
    return None


def test_the_page_shows_what_a_full_redraw_shows_after_every_event(recorded):
    feed = Feed(recorded[0].debate_id)
    page = live_page.LivePage(feed.debate.debate_id, follower=live.Follower(feed.debate))
    at = AppTest.from_function(page_script, default_timeout=30)
    reference = AppTest.from_function(page_script, default_timeout=30)
    at.session_state["page"], reference.session_state["page"] = page, page
    full_runs = 0
    for n, event in enumerate(recorded, start=1):
        feed.send(event)
        page.refresh()  # the fragment's tick folds what is new, then asks whether to run in full
        if n == 1 or page.stale():
            at.session_state["mode"] = "full"  # what the fragment asks for when the settled part changed
            at.run()
            at.session_state["settled_view"] = copy.deepcopy(page.view)
            full_runs += 1
        else:
            at.session_state["mode"] = "tick"
            at.run()
        reference.session_state["mode"] = "all"
        reference.run()
        assert not at.exception and not reference.exception, (at.exception, reference.exception)
        assert drawn(at) == drawn(reference), (n, type(event).__name__)
    assert full_runs < len(recorded) / 3  # most events were drawn by ticks alone
    feed.close()


def test_a_refresh_without_new_events_rebuilds_nothing(script, roles, monkeypatch):
    events = record(script, roles, "finished")
    last = max(i for i, e in enumerate(events) if isinstance(e, TurnStarted) and e.kind == "discussion")
    cut = next(i for i, e in enumerate(events) if i > last + 2 and isinstance(e, TokenReceived)) + 1
    feed = Feed(events[0].debate_id)
    feed.send(*events[:cut])  # the last discussion turn is streaming
    page = live_page.LivePage(feed.debate.debate_id, follower=live.Follower(feed.debate))
    at = AppTest.from_function(page_script, default_timeout=30)
    at.session_state["page"], at.session_state["mode"] = page, "full"
    at.run()
    settled = [t.id for t in page.view.turns if t.id in page.settled_ids]
    assert len(settled) >= 5 and page.view.running_turns  # most of the debate is settled, one turn moves

    calls: Counter = Counter()
    bubbles: list[str] = []

    def spy(owner, name: str, counts=lambda *args: True) -> None:
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls[name] += bool(counts(*args))
            return original(*args, **kwargs)
        monkeypatch.setattr(owner, name, wrapper)

    spy(DebateView, "apply", lambda view, event: view is page.view)  # this page's copy, not the worker's
    spy(live.LiveDebate, "snapshot")
    spy(live_page, "draw_settled")
    spy(transcript, "_bubble", lambda view, turn, k, *_: bubbles.append(turn.id) or True)
    at.session_state["mode"] = "fragment"
    for _ in range(3):
        at.run()  # a tick with no new event
    assert not at.exception, at.exception
    assert (calls["apply"], calls["snapshot"], calls["draw_settled"]) == (0, 0, 0)
    assert not page.stale()
    assert bubbles == [page.view.running_turns[0].id] * 3  # only the streaming turn is drawn again

    feed.send(events[cut])  # one more token: one event folded, still no full run
    bubbles.clear()
    at.run()
    assert (calls["apply"], calls["snapshot"], calls["draw_settled"]) == (1, 0, 0)
    assert bubbles == [page.view.running_turns[0].id]
    feed.send(*events[cut + 1:])
    feed.close()
