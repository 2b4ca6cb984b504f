"""Supervises llama.cpp's own server (``llama-server``), one process per GGUF file.

What it is for:
  * ``server_for(path)`` gives the ``LlamaServer`` of a GGUF file; ``ensure_running()``
    starts it on first use (and again if it has died) on a free loopback port and waits,
    at most ``MADLAB_LLAMA_START_TIMEOUT`` seconds (default 120), until ``/health`` says it
    is ready; it returns the server's base URL. The ``local`` provider (``local_gguf``)
    then reaches it through litellm's OpenAI-compatible path like any remote model.
  * The server has ``MADLAB_LLAMA_SLOTS`` parallel slots (default 4) with continuous
    batching and one KV cache they share (``--kv-unified``) of ``MADLAB_N_CTX`` tokens per
    slot (default 4096; ``-c`` is their product): a single long call (a memory debate's
    last rounds) may use the whole pool instead of failing at one slot's share; idle slots
    keep their prompts there (``--no-cache-idle-slots``) until the pool runs short, when
    llama.cpp drops them first.
    A slot's conversation that another caller takes over is saved to a prompt cache in the
    server's RAM, at most ``MADLAB_LLAMA_CACHE_RAM`` MiB (default 256; 0 turns it off;
    ``--cache-ram``): llama.cpp's own default, 8 GiB, let the server grow by gigabytes over a
    day of class debates.
    ``/metrics`` on, one thread per core that is free when the server starts
    (``MADLAB_LLAMA_THREADS`` overrides; see ``free_cores``), every layer on the GPU when the binary was
    built with one (``MADLAB_LLAMA_GPU_LAYERS`` overrides), no web UI; ``MADLAB_LLAMA_ARGS``
    adds flags of your own (e.g. ``--flash-attn on``), after ours.
  * ``slot_for(key)`` keeps a slot per caller key (a debate's agent), so the server's
    prompt cache holds that caller's conversation and its next turn pays prefill only for
    what is new. Keys share slots once there are more keys than slots.
  * The server's output goes to a log file (``$MADLAB_HOME/logs``, else the temp dir);
    an error that says the server could not start names that file.
  * Servers stop when the interpreter exits (atexit) and die with it even when it is
    killed (``PR_SET_PDEATHSIG`` on Linux).

What it must not do:
  * import llama_cpp, torch or litellm: llama.cpp runs only in the server process, so it
    never shares a process with torch (their CUDA runtimes crash each other),
  * listen anywhere but 127.0.0.1, or fetch anything,
  * print the server's output to the console,
  * hold a lock while a model generates: calls run side by side on the server's slots.

The binary is ``MADLAB_LLAMA_SERVER`` if set, else ``llama-server`` next to the running
Python (``.venv/bin``, where ``scripts/setup.sh`` installs it), else on ``PATH``.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import ctypes
import functools
import os
import queue
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Hashable
from pathlib import Path

DEFAULT_SLOTS = 4
# 4096: a per-player KKS debate (seed 001; 3 agents, 5 players) keeps each agent's whole history
# in its slot; at 2048 x 4 its three concurrent final calls (~2,000 prompt tokens each, with the
# other slots' caches) ran out of the pool. SmolLM2-135M's KV cache is ~23 KB a token (f16):
# 16,384 tokens are ~380 MB.
DEFAULT_CTX_PER_SLOT = 4096
DEFAULT_START_TIMEOUT_S = 120.0
# The prompt cache in the server's RAM (--cache-ram, MiB; llama.cpp's default is 8192). SmolLM2-135M's
# ~23 KB a token: 256 MiB hold ~11,000 tokens, several agents' conversations.
DEFAULT_CACHE_RAM_MIB = 256
_START_TRIES = 3  # a server that lost its port to another process is started again on a new one
_LOG_HEADER = "=== MAD Lab starts llama-server at "

_servers: dict[str, LlamaServer] = {}
_servers_lock = threading.Lock()
_atexit_registered = False


class LlamaServerError(RuntimeError):
    """The llama-server binary is missing, or the server could not be started."""


# --------------------------------------------------------------------------- settings


def binary() -> str | None:
    """The llama-server executable to run, or None when there is none."""
    named = os.environ.get("MADLAB_LLAMA_SERVER")
    if named:
        return named
    beside_python = Path(sys.prefix) / "bin" / "llama-server"
    if os.access(beside_python, os.X_OK):
        return str(beside_python)
    return shutil.which("llama-server")


def _env_int(name: str, default: int, minimum: int = 1) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise LlamaServerError(f"{name} must be a whole number of at least {minimum}, not {value!r}")
    return number


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _cpu_times() -> tuple[float, float] | None:
    """(busy, total) jiffies of the whole machine from /proc/stat, or None where there is none."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        numbers = [float(f) for f in fields[:8]]
    except (OSError, ValueError, IndexError):
        return None
    idle = numbers[3] + (numbers[4] if len(numbers) > 4 else 0.0)  # idle + iowait
    return sum(numbers) - idle, sum(numbers)


def free_cores(sample_s: float = 0.3) -> int:
    """How many of this process's cores are free now: at least 1, at most all of them.

    llama.cpp's compute threads meet at a barrier after every operation, so a thread that
    another process keeps off its core stalls the others. Measured on 2 cores with two other
    busy processes: SmolLM2-135M decoded 2-10 tokens/s with 2 threads and 22-25 with 1
    (45 with 2 on a quiet machine). A server therefore takes one thread per core that was free
    over a short sample (a core counts as busy when more than half of it was used) when it starts.
    """
    cores = _cores()
    first = _cpu_times()
    if first is None or cores <= 1:
        return cores
    time.sleep(sample_s)
    second = _cpu_times()
    if second is None or second[1] <= first[1]:
        return cores
    busy_share = (second[0] - first[0]) / (second[1] - first[1])
    busy_cores = busy_share * (os.cpu_count() or cores)
    return max(1, min(cores, cores - int(busy_cores + 0.5)))


@functools.cache
def _has_gpu(executable: str) -> bool:
    """True when ``executable --list-devices`` lists a device (a CUDA, Metal, ... build on a machine with one)."""
    try:
        listed = subprocess.run([executable, "--list-devices"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    lines = (listed.stdout + listed.stderr).splitlines()
    return any(line.startswith("  ") and ":" in line for line in lines)


def _gpu_layers(executable: str) -> int | None:
    named = os.environ.get("MADLAB_LLAMA_GPU_LAYERS", "").strip()
    if named:
        return int(named)
    return 99 if _has_gpu(executable) else None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log_dir() -> Path:
    """Where server logs go: ``$MADLAB_HOME/logs``, else ``<temp dir>/madlab-logs``."""
    home = os.environ.get("MADLAB_HOME")
    folder = Path(home).expanduser() / "logs" if home else Path(tempfile.gettempdir()) / "madlab-logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# --------------------------------------------------------------------------- processes


def _prctl():
    """libc's ``prctl`` on Linux, else None (resolved before any fork: the child only calls it)."""
    if not sys.platform.startswith("linux"):
        return None
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None, use_errno=True).prctl
    return None


_PR_SET_PDEATHSIG = 1


def _die_with_parent(prctl, parent: int):
    """A ``preexec_fn``: SIGTERM the child when its parent dies (even by SIGKILL)."""

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the line above took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


class _Spawner:
    """Starts child processes from one long-lived thread.

    ``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child ends, not the
    process. ``call_model`` opens streams in short-lived helper threads: a server forked
    there would be killed when that call ended. Forking from this thread ties the server
    to the life of the process.
    """

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, args: list[str], **kwargs) -> subprocess.Popen:
        prctl = _prctl()
        if prctl is not None:
            kwargs["preexec_fn"] = _die_with_parent(prctl, os.getpid())
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="madlab-llama-spawner", daemon=True)
                self._thread.start()
        self._requests.put((future, args, kwargs))
        return future.result()

    def _serve(self) -> None:
        while True:
            future, args, kwargs = self._requests.get()
            try:
                future.set_result(subprocess.Popen(args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)


_spawner = _Spawner()


# --------------------------------------------------------------------------- slots


class SlotTable:
    """Gives each key a slot of its own while there are enough, then shares the least used.

    A key keeps its slot for as long as it is remembered (the ``max_keys`` most recently
    used keys), so the server's cache for that slot stays the key's conversation. A new key
    takes the slot with the fewest keys; among those, the one used least recently.
    """

    def __init__(self, slots: int, max_keys: int | None = None):
        self.slots = slots
        self.max_keys = max_keys or 16 * slots
        self._keys: OrderedDict[Hashable, int] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()

    def slot_for(self, key: Hashable) -> int:
        with self._lock:
            if key in self._keys:
                self._keys.move_to_end(key)
                return self._keys[key]
            if len(self._keys) >= self.max_keys:
                self._keys.popitem(last=False)
            load = [0] * self.slots
            last_used = [-1] * self.slots
            for rank, slot in enumerate(self._keys.values()):
                load[slot] += 1
                last_used[slot] = rank
            slot = min(range(self.slots), key=lambda s: (load[s], last_used[s], s))
            self._keys[key] = slot
            return slot


# --------------------------------------------------------------------------- the server


class LlamaServer:
    """One llama-server process for one GGUF file, started on demand (see the module docstring)."""

    def __init__(
        self,
        model_path: str,
        *,
        executable: str,
        slots: int = DEFAULT_SLOTS,
        ctx_per_slot: int = DEFAULT_CTX_PER_SLOT,
        threads: int | None = None,
        gpu_layers: int | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT_S,
        extra_args: list[str] | None = None,
        cache_ram_mib: int = DEFAULT_CACHE_RAM_MIB,
    ):
        self.model_path = model_path
        self.executable = executable
        self.slots = slots
        self.ctx_per_slot = ctx_per_slot
        self.threads = threads  # None: one per core free at each start (free_cores)
        self.started_threads: int | None = None  # what the running server was started with
        self.gpu_layers = gpu_layers
        self.start_timeout = start_timeout
        self.extra_args = list(extra_args or [])
        self.cache_ram_mib = cache_ram_mib
        self.log_path = log_dir() / f"llama-server-{Path(model_path).stem}-{os.getpid()}.log"
        self.port: int | None = None
        self.starts = 0
        self._process: subprocess.Popen | None = None
        self._table = SlotTable(slots)
        self._lock = threading.Lock()

    def command(self, port: int, threads: int | None = None) -> list[str]:
        """The command line that starts this server on ``port`` with ``threads`` (else its own setting, else all cores)."""
        threads = threads or self.threads or _cores()
        cmd = [
            self.executable,
            "--model", self.model_path,
            "--alias", Path(self.model_path).name,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--parallel", str(self.slots),
            "--ctx-size", str(self.slots * self.ctx_per_slot),
            "--kv-unified",
            # Keep each idle slot's prompt in the pool: by default a unified server saves idle
            # slots to host RAM and clears them on every new task, so an agent's next turn found
            # its slot empty (measured: 110 of 4,485 prompt tokens reused in a default debate).
            "--no-cache-idle-slots",
            # A bounded prompt cache in RAM (llama.cpp's default of 8 GiB grew the server by gigabytes).
            "--cache-ram", str(self.cache_ram_mib),
            "--cont-batching",
            "--metrics",
            "--threads", str(threads),
            "--no-webui",
        ]
        if self.gpu_layers is not None:
            cmd += ["--n-gpu-layers", str(self.gpu_layers)]
        return cmd + self.extra_args

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def ensure_running(self) -> str:
        """Start the server unless it runs (again, if it died); return its base URL once ready."""
        with self._lock:
            if self.alive():
                return self.url
            self._register_stop_at_exit()
            tries = 0
            while True:
                tries += 1
                port = free_port()
                process = self._start(port)
                problem = self._wait_ready(process, port)
                if problem is None:
                    self._process, self.port = process, port
                    self.starts += 1
                    return self.url
                _stop(process)
                tail = self._log_tail()
                if "couldn't bind" not in tail or tries >= _START_TRIES:
                    tail = "\n".join(tail.splitlines()[-5:])
                    raise LlamaServerError(f"llama-server for {self.model_path} {problem}; see its log "
                                           f"{self.log_path}" + (f". It ends:\n{tail}" if tail else ""))

    def slot_for(self, key: Hashable) -> int:
        """The slot that serves ``key`` (the same one every time while there are slots enough)."""
        return self._table.slot_for(key)

    def metrics(self) -> dict[str, float]:
        """The server's Prometheus counters (``llamacpp:prompt_tokens_total``, ...) by name."""
        text = _get(f"{self.url}/metrics", timeout=5)[1]
        values = {}
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name and not name.startswith("#"):
                with contextlib.suppress(ValueError):
                    values[name] = float(value)
        return values

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s)."""
        with self._lock:
            if self._process is not None:
                _stop(self._process)
                self._process = None

    def _start(self, port: int) -> subprocess.Popen:
        self.started_threads = self.threads or free_cores()
        cmd = self.command(port, self.started_threads)
        why = "" if self.threads else f" ({self.started_threads} of {_cores()} cores free at start)"
        with open(self.log_path, "ab") as log:
            log.write(f"\n{_LOG_HEADER}{time.strftime('%Y-%m-%d %H:%M:%S')}{why}: {' '.join(cmd)}\n".encode())
            log.flush()
            try:
                return _spawner.popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            except OSError as exc:
                raise LlamaServerError(f"could not run llama-server ({self.executable}): {exc}") from exc

    def _wait_ready(self, process: subprocess.Popen, port: int) -> str | None:
        """None once ``/health`` answers 200, else what went wrong."""
        deadline = time.monotonic() + self.start_timeout
        pause = 0.02
        while True:
            code = process.poll()
            if code is not None:
                return f"exited with code {code} before it was ready"
            with contextlib.suppress(OSError):
                if _get(f"http://127.0.0.1:{port}/health", timeout=2)[0] == 200:
                    return None
            if time.monotonic() >= deadline:
                return f"was not ready within {self.start_timeout:g} s"
            time.sleep(pause)
            pause = min(pause * 2, 0.25)

    def _log_tail(self) -> str:
        """What the last start wrote to the log."""
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace").rpartition(_LOG_HEADER)[2].strip()
        return ""

    @staticmethod
    def _register_stop_at_exit() -> None:
        global _atexit_registered
        with _servers_lock:
            if not _atexit_registered:
                atexit.register(stop_all)
                _atexit_registered = True


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get(url: str, timeout: float) -> tuple[int, str]:
    """(status, body) of a GET on loopback, never through a proxy; raises OSError if unreachable."""
    try:
        with _NO_PROXY.open(url, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:  # e.g. 503 while the model loads
        return exc.code, ""


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --------------------------------------------------------------------------- the registry


def server_for(model_path: str) -> LlamaServer:
    """The (not yet started) server of the GGUF file ``model_path``, one per file and process.

    Settings are read from the environment when a file's server is first asked for.
    """
    model_path = os.path.realpath(model_path)
    with _servers_lock:
        server = _servers.get(model_path)
        if server is None:
            executable = binary()
            if executable is None:
                raise LlamaServerError(missing_binary_message())
            server = LlamaServer(
                model_path,
                executable=executable,
                slots=_env_int("MADLAB_LLAMA_SLOTS", DEFAULT_SLOTS),
                ctx_per_slot=_env_int("MADLAB_N_CTX", DEFAULT_CTX_PER_SLOT),
                threads=_env_int("MADLAB_LLAMA_THREADS", 0) or None,
                gpu_layers=_gpu_layers(executable),
                start_timeout=float(os.environ.get("MADLAB_LLAMA_START_TIMEOUT") or DEFAULT_START_TIMEOUT_S),
                extra_args=shlex.split(os.environ.get("MADLAB_LLAMA_ARGS", "")),
                cache_ram_mib=_env_int("MADLAB_LLAMA_CACHE_RAM", DEFAULT_CACHE_RAM_MIB, minimum=0),
            )
            _servers[model_path] = server
        return server


def missing_binary_message() -> str:
    return ("llama.cpp's server (llama-server) is not installed: run scripts/setup.sh, "
            "or set MADLAB_LLAMA_SERVER to its path.")


def stop_all() -> None:
    """Stop every server this process started (registered with atexit on the first start)."""
    with _servers_lock:
        servers = list(_servers.values())
    for server in servers:
        server.stop()
