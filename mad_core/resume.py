"""Starting debates: new (`run_debate`), resumed (`prepare_resume`, `resume_debate`) or forked (`fork_debate`).

Each builds the debate's `replay.Origin` (its mode: "new", "resume" or "fork") and hands it to a
`DebateEngine`. A resume checks the stored configuration (models available) before it changes
anything, then claims the debate atomically (one resume at a time); a resume that ends failed
before any new turn succeeded puts the debate back exactly as it was (the recorder undoes it).
A fork is a new debate, linked to its parent, that replays the parent's history up to the
chosen turn with what its later prompts depended on (`replay.Inheritance`).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .config import DebateConfig
from .controller import Controller
from .engine import DebateEngine
from .events import Event
from .replay import Inheritance, Origin
from .store import HEARTBEATS, Store, check_resumable, claim_for_resume, new_owner, undo_resume


def run_debate(config: DebateConfig, **kwargs: Any) -> Iterator[Event]:
    """Shorthand: `DebateEngine(config, **kwargs).run()`."""
    return DebateEngine(config, **kwargs).run()


def prepare_resume(debate_id: str, store: Store, controller: Controller | None = None) -> DebateEngine:
    """An engine that continues a stopped, failed or interrupted debate from its last finished turn.

    Checks come first and change nothing: the debate exists and is not finished or running
    (ResumeRefused), and its stored configuration still runs here, models included
    (ConfigError naming the field). Then the debate is claimed for this engine in one atomic
    step, so of two resumes started together exactly one gets it (the other: ResumeRefused)."""
    record = check_resumable(store, debate_id)
    config = DebateConfig.from_dict(record["config"])  # ConfigError when a model is gone
    claim = claim_for_resume(store, debate_id, new_owner())  # checks again, atomically
    try:
        origin = Origin("resume", debate_id=debate_id, history=tuple(store.turns(debate_id)), claim=claim)
        engine = DebateEngine(config, controller=controller, store=store, origin=origin)
    except BaseException:
        undo_resume(store, claim)
        raise
    HEARTBEATS.add(store.path, debate_id, claim.owner)  # until the engine's recorder takes over
    return engine


def resume_debate(debate_id: str, store: Store, controller: Controller | None = None) -> Iterator[Event]:
    """Continue a stopped, failed or interrupted debate (see `prepare_resume`); yields its events."""
    return prepare_resume(debate_id, store, controller).run()


def fork_debate(debate_id: str, upto_seq: int, store: Store, config: DebateConfig | None = None,
                controller: Controller | None = None) -> DebateEngine:
    """A new debate, linked to its parent, that keeps everything of the parent up to turn `upto_seq`:
    its turns (replayed, not called again), the moderator messages sent before that turn (they reach
    the fork's later prompts exactly as they reached the parent's), the rounds' speaking orders, and
    what replaying reproduces (personas, votes, decision attempts). Nothing after the fork point."""
    record = store.get_debate(debate_id)
    if record is None:
        raise KeyError(f"no debate {debate_id!r}")
    turns = store.turns(debate_id)
    history = tuple(t for t in turns if t.seq <= upto_seq)
    config = config or DebateConfig.from_dict(record["config"])
    origin = Origin("fork", history=history, parent_id=debate_id, forked_from_seq=upto_seq,
                    inherited=Inheritance.of_parent(store, debate_id, turns, upto_seq))
    return DebateEngine(config, controller=controller, store=store, origin=origin)
