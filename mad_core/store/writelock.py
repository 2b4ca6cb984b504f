"""The turn-taking of one database file's writers: threads of this process, then processes.

A writer takes `WriteLock` around its whole write transaction (`Store.transaction`): first the lock
this process's threads share (a Python lock hands over the moment it is free), then an advisory
`flock` on a file beside the database (``<database>-writers``), which the kernel hands to a waiting
process the moment its holder lets go.

Why not SQLite's busy timeout alone: a writer that finds the file locked sleeps 1, 2, 5, ... up to
100 ms between tries and is not woken when the lock frees. Between the threads of one process that
queued dozens of debates for seconds, hence the Python lock; between processes it let the threads of
one hand the file to each other while another process slept: bench/throughput.py's two workers ran
73 and 27 of 100 debates, the second one busy 32 % of its time. SQLite's busy timeout stays as the
last resort (a writer that does not take this lock: another program, an older MAD Lab).

Never the database file itself: closing any descriptor of it would drop the POSIX locks SQLite holds
on it in this process. A child made by fork opens the file anew (a lock taken through the parent's
descriptor would be the parent's). Where `fcntl` does not exist (Windows), or the lock file cannot be
opened (a folder not made yet, or not writable), processes fall back to SQLite's busy timeout.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class WriteLock:
    """Held by one writer of a database file at a time, across the threads and processes that take it."""

    def __init__(self, path: Path | None) -> None:
        """`path`: the database file (None: an in-memory database, whose writers are this process's)."""
        self._threads = threading.Lock()
        self._path = None if path is None or fcntl is None else f"{path}-writers"
        self._fd: int | None = None
        self._pid = 0

    def __enter__(self) -> "WriteLock":
        self._threads.acquire()
        try:
            if self._path is not None and (fd := self._descriptor()) is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            self._threads.release()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._path is not None and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._threads.release()

    def _descriptor(self) -> int | None:
        """This process's descriptor of the lock file (opened on first use, anew after a fork); None
        when it cannot be opened now (tried again next time)."""
        if self._fd is None or self._pid != os.getpid():
            assert self._path is not None
            try:
                self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            except OSError:
                self._fd = None
                return None
            self._pid = os.getpid()
        return self._fd
