"""Helpers of the Streamlit AppTest suite: a scripted model, finished debates, the app, text lookup.

AppTest has no browser and never fires `run_every` fragments, so these tests cover page logic:
a debate started here runs in the background thread and the test joins that thread (no sleeps).
The SBERT embedder is replaced by a cheap deterministic one (loading the real model takes seconds).
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.testing.v1 import AppTest

from mad_core import live
from mad_core.config import DebateConfig
from mad_core.controller import Controller
from mad_core.engine import DebateEngine
from mad_core.store import Store

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TRANSCRIPTS = "pages/1_Transcripts.py"
COMPARE = "pages/2_Compare.py"
MODELS = "pages/3_Models.py"
SCRIPT = "apptest"
HELD = "apptest_held"


def reply(messages, info) -> str:
    """Discussion turns name their agent and a distinctive word; votes pick solution 1."""
    meta = info["metadata"]
    kind, agent = meta.get("kind", "discussion"), meta.get("agent", "A model")
    if kind == "vote":
        return "1"
    if kind == "extraction":
        return "Paris"
    word = {"Agent 1": "zebrafinch", "Agent 2": "quokka", "Agent 3": "axolotl"}.get(agent, "okapi")
    return f"{agent} thinks about the {word}.\nFinal answer: Paris"


@dataclass
class Gate:
    """A scripted model that blocks every call until the test opens the gate."""

    opened: threading.Event = field(default_factory=threading.Event)

    def reply(self, messages, info) -> str:
        assert self.opened.wait(timeout=60), "the test never opened the gate"
        return reply(messages, info)


def embed(texts):
    """A cheap deterministic stand-in for SBERT."""
    return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]


def config(question: str = "What is the capital of France?", model: str = f"scripted/{SCRIPT}", **changes):
    data = {"question": question, "agents": [{"label": f"Agent {i}", "model": model} for i in (1, 2, 3)],
            "rounds": 1, "max_rounds": 2, "protocol": "simple_voting", **changes}
    return DebateConfig.from_dict(data)


def scripted_debate(name: str, replies, data: dict) -> str:
    """Run the debate `data` (a config dict) to completion with the scripted model `name`
    answering through `replies` (registered only for the run); return its id."""
    from mad_core.models.scripted import Script, register_script, unregister_script

    register_script(name, Script(replies=replies))
    try:
        engine = DebateEngine(DebateConfig.from_dict(data), store=Store())
        list(engine.run())
        return engine.debate_id
    finally:
        unregister_script(name)


def run_debate(question: str = "What is the capital of France?", **changes) -> str:
    """Run a short scripted debate to completion in the test's store; return its id."""
    engine = DebateEngine(config(question, **changes), store=Store())
    list(engine.run())
    return engine.debate_id


class Feed:
    """A live debate, registered like any other, whose events the caller hands over one by one."""

    def __init__(self, debate_id: str):
        self.queue: queue.Queue = queue.Queue()
        self.sent = 0
        self.debate = live._register(live.LiveDebate(debate_id, iter(self.queue.get, None), Controller()))

    def send(self, *events) -> None:
        """Hand these events to the debate's worker and wait until it has folded them."""
        for event in events:
            self.queue.put(event)
        self.sent += len(events)
        deadline = time.monotonic() + 30
        while self.debate.events_since(self.sent)[1] < self.sent:  # a bounded wait for the worker thread
            assert time.monotonic() < deadline, "the live debate's worker did not take the events"
            time.sleep(0.0002)

    def close(self) -> None:
        self.queue.put(None)
        self.debate.thread.join(timeout=30)


def join(debate_id: str) -> None:
    debate = live.get(debate_id)
    assert debate is not None, "the debate was not started in the background"
    debate.thread.join(timeout=30)
    assert debate.done


def app(page: str = APP) -> AppTest:
    """A fresh AppTest on the Debate page, switched to `page` (st.switch_page needs app.py as main)."""
    at = AppTest.from_file(APP, default_timeout=30).run()
    if page != APP:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def open_debate(debate_id: str) -> AppTest:
    """The Transcripts page with this debate opened."""
    at = app(TRANSCRIPTS)
    at.button(key=f"open_{debate_id[:8]}").click().run()
    assert not at.exception, at.exception
    return at


def keys(at: AppTest) -> set[str]:
    return {node.key for node in at.main if getattr(node, "key", None)} | \
        {node.key for node in at.sidebar if getattr(node, "key", None)}


def texts(node) -> str:
    """All markdown / text / caption / error strings under a node, joined."""
    parts = []
    for kind in ("markdown", "text", "caption", "error", "warning", "info", "success", "code"):
        parts += [str(e.value) for e in getattr(node, kind)]
    return "\n".join(parts)
