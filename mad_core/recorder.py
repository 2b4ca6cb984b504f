"""The store's side of one running debate: the engine's first listener (`Recorder`).

The engine takes a `Store` or a factory of them (`StoreSource`), never a path. In the engine's
worker thread the recorder gets the Store it writes through (`open`): a factory is called
there with the engine's owner; a Store of a database file gets a connection of the worker's
own on that same file (SQLite connections belong to one thread, and the caller may close its
Store while the debate runs); an in-memory Store (`Store(":memory:")`) cannot be opened twice,
so the worker writes through that very Store. It creates the debate (or finds the resumed one)
and keeps its claim alive (`begin`), writes each event before the consumer sees it
(`record`), and lets go at the end (`end`): a resume that failed before any new turn succeeded
is undone, and the claim is released. The engine knows nothing of SQL.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union

from .events import Event
from .store import HEARTBEATS, ResumeClaim, Store, release, undo_resume

StoreFactory = Callable[..., Store]  # called as factory(owner=...) in the engine's worker thread
StoreSource = Union[Store, StoreFactory]


def worker_store(source: StoreSource, owner: str) -> Store:
    """The Store the engine's worker writes through (see the module docstring)."""
    if isinstance(source, Store):
        if str(source.path) == ":memory:":
            return source  # one database per connection: share it (its writes are serialized)
        return Store(source.path, owner=owner)
    return source(owner=owner)


class Recorder:
    """Writes one debate's recorded events to the store, in the engine's worker thread."""

    def __init__(self, source: StoreSource, debate_id: str, owner: str, claim: ResumeClaim | None = None):
        if not isinstance(source, Store) and not callable(source):  # a path is not reopened here
            raise TypeError(f"store must be a Store or a factory of Stores, not {type(source).__name__} "
                            "(for a database file: functools.partial(Store, path))")
        self.source, self.debate_id, self.owner, self.claim = source, debate_id, owner, claim
        self.store: Store | None = None
        self.broken = False  # the database refused a write: nothing more is attempted

    def open(self) -> None:
        self.store = worker_store(self.source, self.owner)

    def begin(self, config: dict[str, Any], *, parent_id: str | None, forked_from_seq: int | None,
              created_at: float, resumed: bool) -> None:
        assert self.store is not None, "open() first"
        if not resumed:
            self.store.create_debate(self.debate_id, config, parent_id=parent_id, forked_from_seq=forked_from_seq,
                                     created_at=created_at)
        HEARTBEATS.add(self.store.path, self.debate_id, self.owner)

    def record(self, event: Event) -> None:
        """Write one event (raises what the database raised: the engine then ends the debate)."""
        assert self.store is not None, "open() first"
        self.store.record(event, self.debate_id)

    def record_failure(self, events: list[Event], claim_lost: bool) -> None:
        """Best effort: the failure's events, unless the claim was lost or the database refuses."""
        if self.store is None or claim_lost:
            return
        try:
            for event in events:
                self.store.record(event, self.debate_id)
        except Exception:  # noqa: BLE001 - the consumer still hears it; the claim expires
            self.broken = True

    def end(self, failed: bool, progressed: bool) -> None:
        """Stop beating and let go of the debate (a resume that got nowhere is put back as it was)."""
        path = self.store.path if self.store is not None else getattr(self.source, "path", None)
        if path is not None:
            HEARTBEATS.remove(path, self.debate_id)
        if self.store is None:
            return
        try:
            if self.claim is not None and failed and not progressed:
                undo_resume(self.store, self.claim)
            release(self.store, self.debate_id, self.owner)
        except Exception:  # noqa: BLE001 - an unreleased claim expires on its own
            pass
