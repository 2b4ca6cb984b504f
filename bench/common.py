"""What every benchmark in bench/ shares: the machine, the result table, targets, a fixed-latency model.

A benchmark script builds a ``Result`` (its rows, and the targets it checks) and hands it to
``finish``, which prints the machine, the command and a small table, writes the result as JSON
when ``--json PATH`` was given (``bench/run.py`` collects those into BENCHMARKS.md), and exits 0:
a missed target is a finding to read, not a crash. Timings depend on the machine and its load,
so the machine line names the CPU, the core count and the load average at the start.

``fixed_latency_model`` registers a scripted model (mad_core/models/scripted.py) whose every
call takes a known time (fixed waits before and between pieces) and records when each call
began, so ``LatencyLog.model_time`` can tell the model's own time: the calls it served at the
same time form a wave, and each wave costs its longest call.
"""
from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import json
import os
import platform
import pstats
import shlex
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


# ----- machine and results ------------------------------------------------------------------
def machine() -> dict[str, Any]:
    """CPU model, core count, load average, Python: what a timing needs next to it."""
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {"cpu": cpu, "cores": os.cpu_count(), "load_1m": load, "python": platform.python_version()}


def machine_line(info: dict[str, Any]) -> str:
    load = "" if info.get("load_1m") is None else f", load {info['load_1m']:.2f}"
    return f"{info['cpu']}, {info['cores']} cores{load}, Python {info['python']}"


@dataclass
class Target:
    """One target: ``value`` must be at most ``limit`` (in ``unit``)."""

    what: str
    value: float | None
    limit: float
    unit: str = ""

    @property
    def met(self) -> bool | None:
        return None if self.value is None else self.value <= self.limit


@dataclass
class Result:
    """What one benchmark measured: a table, the targets it checks, notes; or why it was skipped."""

    name: str
    title: str
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    command: str = ""
    machine: dict[str, Any] = field(default_factory=machine)
    date: str = field(default_factory=lambda: datetime.datetime.now().strftime("%Y-%m-%d %H:%M"))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["targets"] = [{**asdict(t), "met": t.met} for t in self.targets]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Result":
        data = dict(data)
        data["targets"] = [Target(t["what"], t["value"], t["limit"], t.get("unit", "")) for t in data["targets"]]
        return cls(**data)


def cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def verdict(target: Target) -> str:
    if target.met is None:
        return "not measured"
    return "met" if target.met else "NOT met"


def render_text(result: Result) -> str:
    lines = [f"== {result.title} ({result.name})", f"machine: {machine_line(result.machine)}",
             f"command: {result.command}", f"date:    {result.date}"]
    if result.skipped:
        return "\n".join(lines + [f"skipped: {result.skipped}"])
    widths = [max(len(str(c)), *(len(cell(r[i])) for r in result.rows)) for i, c in enumerate(result.columns)]

    def line(values: list[Any]) -> str:  # text left, numbers right
        return "  ".join(cell(v).ljust(w) if isinstance(v, str) else cell(v).rjust(w)
                         for v, w in zip(values, widths)).rstrip()

    lines.append(line([str(c) for c in result.columns]))
    lines += [line(row) for row in result.rows]
    for t in result.targets:
        value = "-" if t.value is None else f"{t.value:.3g}"
        lines.append(f"target: {t.what}: {value} {t.unit} <= {t.limit:g} {t.unit}: {verdict(t)}")
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines)


def render_markdown(result: Result) -> str:
    lines = [f"### {result.title} (`{result.name}`)", "",
             f"- machine: {machine_line(result.machine)}", f"- command: `{result.command}`",
             f"- date: {result.date}", ""]
    if result.skipped:
        return "\n".join(lines + [f"Skipped: {result.skipped}", ""])
    lines.append("| " + " | ".join(str(c) for c in result.columns) + " |")
    lines.append("|" + "---|" * len(result.columns))
    lines += ["| " + " | ".join(cell(v).replace("|", "\\|") for v in row) + " |" for row in result.rows]
    if result.targets:
        lines += ["", "| target | measured | limit | |", "|---|---|---|---|"]
        for t in result.targets:
            value = "-" if t.value is None else f"{t.value:.3g} {t.unit}"
            mark = {True: "✅ met", False: "❌ not met", None: "not measured"}[t.met]
            lines.append(f"| {t.what} | {value} | ≤ {t.limit:g} {t.unit} | {mark} |")
    if result.notes:
        lines += [""] + [f"- {note}" for note in result.notes]
    return "\n".join(lines + [""])


def parser(doc: str) -> argparse.ArgumentParser:
    """The common options: ``--json PATH`` (write the result there) and ``--profile`` (cProfile all threads)."""
    parsed = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parsed.add_argument("--json", help="also write the result as JSON to this file (bench/run.py uses it)")
    parsed.add_argument("--profile", action="store_true",
                        help="profile every thread with cProfile and print where the time goes")
    return parsed


def command_line() -> str:
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    return shlex.join([".venv/bin/python", str(shown), *[a for a in _without_json(sys.argv[1:])]])


def _without_json(args: list[str]) -> list[str]:
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--json":
            skip = True
        elif not arg.startswith("--json="):
            out.append(arg)
    return out


def finish(result: Result, args: argparse.Namespace, profiler: "ThreadProfiler | None" = None) -> int:
    """Print the result (and the profile, if one was taken), write its JSON if asked; always 0."""
    result.command = result.command or command_line()
    print(render_text(result), flush=True)
    if profiler is not None and profiler.enabled:
        print(profiler.report(), flush=True)
    if getattr(args, "json", None):
        Path(args.json).write_text(json.dumps(result.to_json(), indent=1))
    return 0


def rss_mib(pid: int | None, field: str = "VmRSS") -> float | None:
    """Resident memory of ``pid`` in MiB: now (VmRSS in /proc/<pid>/status), or its peak with
    ``field="VmHWM"``; None when it cannot be read."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def stop_process(process: "subprocess.Popen", grace: float = 15.0) -> None:
    """Stop a server this benchmark started: SIGTERM, then SIGKILL after ``grace`` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace)


# ----- profiling every thread -----------------------------------------------------------------
class ThreadProfiler:
    """cProfile for every thread started while active (the engine works in threads), merged at the end.

    ``with profiler:`` may be entered several times; a disabled one (``enabled=False``) does nothing.
    Each thread is timed by its own CPU clock (``time.thread_time``), so the report shows where the
    CPU goes, not where threads wait (a blocked ``queue.get`` costs nothing).
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()
        self._original_run = threading.Thread.run

    def __enter__(self) -> "ThreadProfiler":
        if not self.enabled:
            return self
        profiler = self
        original = self._original_run

        def run(thread_self) -> None:
            profile = cProfile.Profile(time.thread_time)
            with profiler._lock:
                profiler._profiles.append(profile)
            profile.enable()
            try:
                original(thread_self)
            finally:
                profile.disable()

        threading.Thread.run = run
        self._main = cProfile.Profile(time.thread_time)
        self._profiles.append(self._main)
        self._main.enable()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._main.disable()
            threading.Thread.run = self._original_run

    def report(self, top: int = 30, sort: str = "tottime") -> str:
        out = io.StringIO()
        stats = pstats.Stats(self._profiles[0], stream=out)
        for profile in self._profiles[1:]:
            try:
                stats.add(profile)
            except TypeError:  # a profile still running in a daemon thread
                continue
        stats.sort_stats(sort).print_stats(top)
        return out.getvalue()


# ----- a fixed-latency model ------------------------------------------------------------------
@dataclass
class LatencyLog:
    """When each call of a fixed-latency model began, and how long the model took for it (seconds)."""

    starts: list[tuple[float, float]] = field(default_factory=list)  # (perf_counter at start, duration)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self.lock:
            self.starts.clear()

    @property
    def calls(self) -> int:
        with self.lock:
            return len(self.starts)

    def waves(self) -> list[list[tuple[float, float]]]:
        """The calls in groups that overlapped in time, one group after another."""
        with self.lock:
            calls = sorted(self.starts)
        groups: list[list[tuple[float, float]]] = []
        end = None
        for start, duration in calls:
            if end is None or start >= end:
                groups.append([])
                end = start + duration
            else:
                end = max(end, start + duration)
            groups[-1].append((start, duration))
        return groups

    def model_time(self) -> float:
        """The model's own time: per wave, its longest call (calls served together count once)."""
        return sum(max(duration for _, duration in wave) for wave in self.waves())


def debater_reply(kind: str, agent: str) -> str:
    """What a well-behaved debater says for each kind of turn (votes for solution 1, answers 4)."""
    if kind == "vote":
        return "1"
    if kind in ("extraction", "judge"):
        return "4"
    return (f"As {agent} I checked the sum twice: two plus two makes four, and nothing in the question "
            "suggests another reading of it. Final answer: 4")


PACINGS = ("paced", "burst")


def fixed_latency_model(latency: float, pacing: str = "paced",
                        reply: Callable[[str, str], str] = debater_reply) -> tuple[str, LatencyLog]:
    """Register ``scripted/bench-...``, a model taking ``latency`` s for a discussion reply.

    "burst": every reply comes at once after ``latency`` s (the worst case for what happens per
    piece: nothing of it overlaps the model's own time). "paced": half the latency before the
    first piece and the rest spread over the pieces of a discussion reply, as a real model
    streams (a one-word vote then takes half the latency). Returns (model name, its log).
    """
    from mad_core.models import ensure_registered, split_pieces
    from mad_core.models.scripted import Script, register_script

    if pacing not in PACINGS:
        raise ValueError(f"pacing must be one of {PACINGS}")
    ensure_registered()
    log = LatencyLog()
    pieces = len(split_pieces(reply("discussion", "Agent 1")))
    first, gap = (latency, 0.0) if pacing == "burst" else (latency / 2, latency / 2 / max(pieces - 1, 1))

    def answer(messages: list[dict], info: dict) -> str:
        meta = info["metadata"]
        text = reply(str(meta.get("kind", "")), str(meta.get("agent", "")))
        duration = first + gap * (len(split_pieces(text)) - 1)
        with log.lock:
            log.starts.append((time.perf_counter(), duration))
        return text

    name = f"bench-{uuid.uuid4().hex[:8]}"
    # steady: the pieces are due on the model's clock, not after the caller took the last one,
    # as from a server that generates while its client reads; the caller's time per piece is
    # then overhead only where it cannot keep up.
    register_script(name, Script(replies=answer, first_token_delay=first, token_delay=gap, steady=True,
                                 keep_history=False))
    return f"scripted/{name}", log


def warm_up(model: str) -> None:
    """One call through litellm first: importing litellm is not what a benchmark measures."""
    from mad_core.models import call_model

    call_model(model, [{"role": "user", "content": "warm up"}])


def run_debate(config, store=None) -> tuple[float, list]:
    """Run one debate to its end; (wall seconds from engine creation to DebateFinished, events)."""
    from mad_core import DebateEngine

    started = time.perf_counter()
    events = list(DebateEngine(config, store=store).run())
    return time.perf_counter() - started, events


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
