"""Installing a curated model when someone asks: the download runs in a background thread (``start``),
its progress and outcome kept in a ``Job`` that a page polls (``job``, ``jobs``); once the file is
verified, how fast the model generates on this machine is measured with one short call through
the ordinary ``local/<alias>`` path (``measure_speed``) and kept in the model's record.

What it must not do: start a download nobody asked for, run two downloads of one model at once,
report a model as ready before its checksum was verified, raise from the thread (every failure
ends in the job's ``message``), or import streamlit.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mad_core.models import downloads
from mad_core.models.calling import call_model
from mad_core.models.catalogue import validate_model_name
from mad_core.models.error_text import describe

SPEED_PROMPT = [{"role": "user", "content": "Count from one to twenty in words, separated by commas."}]
SPEED_TOKENS = 48
RUNNING = ("starting", "downloading", "verifying", "measuring")

Measure = Callable[[str], "tuple[float | None, str | None]"]


def measure_speed(model: str, max_tokens: int = SPEED_TOKENS) -> tuple[float | None, str | None]:
    """(decode tokens per second, None) for ``model`` on this machine, or (None, why not).

    One short call at temperature 0; the time to the first piece (loading the model, reading the
    prompt) is left out, so the number is the speed at which a turn's words appear."""
    problem = validate_model_name(model)
    if problem:
        return None, f"not measured: {problem}"
    result = call_model(model, SPEED_PROMPT, max_tokens=max_tokens, temperature=0.0)
    if result.status != "ok":
        return None, f"not measured: {result.error or result.status}"
    decoding = result.latency_s - (result.first_token_s or 0.0)
    if result.completion_tokens < 2 or decoding <= 0:
        return None, "not measured: the model answered with fewer than two tokens"
    return (result.completion_tokens - 1) / decoding, None


@dataclass
class Job:
    """One model's installation: where it stands, the bytes so far, and how it ended."""

    alias: str
    name: str
    state: str = "starting"  # starting | downloading | verifying | measuring | done | failed
    done_bytes: int = 0
    total_bytes: int | None = None
    message: str | None = None
    tokens_per_s: float | None = None
    started_at: float = field(default_factory=time.time)
    _finished: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def running(self) -> bool:
        return self.state in RUNNING

    def fraction(self) -> float:
        """How much of the file is here, 0 to 1 (0 while the size is unknown)."""
        if not self.total_bytes:
            return 0.0
        return max(0.0, min(1.0, self.done_bytes / self.total_bytes))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job ended (for scripts and tests); False if it is still running."""
        return self._finished.wait(timeout)

    def _progress(self, done: int, total: int | None) -> None:
        self.done_bytes, self.total_bytes = done, total or self.total_bytes
        self.state = "verifying" if total and done >= total else "downloading"

    def _end(self, state: str, message: str | None) -> None:
        self.state, self.message = state, message
        self._finished.set()


_jobs: dict[str, Job] = {}
_lock = threading.Lock()


def _run(job: Job, entry: downloads.CuratedModel, measure: Measure) -> None:
    try:
        downloads.fetch(entry, on_progress=job._progress)
    except downloads.DownloadError as error:
        job._end("failed", str(error))
        return
    except Exception as error:  # noqa: BLE001 - the thread must end with a message, whatever happened
        job._end("failed", f"The download of {entry.name} failed: {describe(error)}")
        return
    job.state = "measuring"
    try:
        speed, note = measure(entry.model_name)
        downloads.record_speed(entry.alias, speed, note)
    except Exception as error:  # noqa: BLE001 - the model is verified and usable; only its speed is unknown
        speed, note = None, f"not measured: {describe(error)}"
    job.tokens_per_s = speed
    said = f"{speed:.1f} tokens/s on this machine" if speed is not None else note
    job._end("done", f"{entry.name} is ready as {entry.model_name} ({said}).")


def start(alias: str, measure: Measure | None = None) -> Job:
    """Start installing the curated model ``alias`` in the background (or return its running job).

    ``measure(model)`` gives (tokens/s or None, note); by default ``measure_speed``."""
    entry = downloads.find(alias)
    if entry is None:
        raise KeyError(f"{alias!r} is not in the curated model list")
    with _lock:
        current = _jobs.get(alias)
        if current is not None and current.running:
            return current
        job = _jobs[alias] = Job(alias=alias, name=entry.name)
    threading.Thread(target=_run, args=(job, entry, measure or measure_speed), name=f"install-{alias}",
                     daemon=True).start()
    return job


def job(alias: str) -> Job | None:
    """The latest installation of ``alias`` in this process, running or ended, or None."""
    with _lock:
        return _jobs.get(alias)


def jobs() -> list[Job]:
    """Every installation started in this process, oldest first."""
    with _lock:
        return list(_jobs.values())


def forget(alias: str) -> None:
    """Drop an ended job (its message is no longer shown); a running one is kept."""
    with _lock:
        current = _jobs.get(alias)
        if current is not None and not current.running:
            del _jobs[alias]
