"""Better local models on request: a short curated list of small instruct GGUFs (``assets/models/curated.json``,
or the file named by ``MADLAB_MODEL_CATALOGUE``), each pinned to a commit of its Hugging Face repository
with the file's sha256, size and licence; downloading one (``fetch``) into ``$MADLAB_HOME/models/<alias>/``
with ``huggingface_hub.hf_hub_download`` and checking its sha256; and which downloaded files are usable
(``installed``), so that ``local_gguf`` serves them as ``local/<alias>`` like the offline default.

A model counts as usable only once its checksum was verified: then, and only then, a small record
(``madlab-model.json``) is written beside the file; the measured speed is added to that record later
(``record_speed``). Whether the Hub can be reached is asked once in a while (``network_problem``:
HF_HUB_OFFLINE, then a TCP probe of HF_ENDPOINT's host of at most ``PROBE_SECONDS``, its answer kept
for ``PROBE_TTL_S``).

What it must not do: touch the network unless a download (or the probe before one) was asked for;
keep a file whose sha256 or size differs from the pinned one, or a half-downloaded file under the
file's own name (huggingface_hub writes into a temporary ``.incomplete`` file and moves it in place
only when complete; it resumes a broken connection with a range request within one download); list
a model as usable before its checksum was verified; call a model (``installer`` measures the speed)
or import streamlit.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CATALOGUE_ENV = "MADLAB_MODEL_CATALOGUE"
CATALOGUE_FILE = Path(__file__).resolve().parents[2] / "assets" / "models" / "curated.json"
DEFAULT_ENDPOINT = "https://huggingface.co"
RECORD_NAME = "madlab-model.json"
PROBE_SECONDS = 1.5
PROBE_TTL_S = 30.0
_TRUE = ("1", "ON", "YES", "TRUE")
_HEX40 = re.compile(r"[0-9a-f]{40}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ALIAS = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")

Progress = Callable[[int, "int | None"], None]  # (bytes so far, total bytes or None)


class DownloadError(Exception):
    """A download that did not give a verified file; ``str()`` is the message for people."""


@dataclass(frozen=True)
class CuratedModel:
    """One entry of the curated list: where the file is (repo, filename, pinned revision) and what it must be."""

    alias: str
    name: str
    repo: str
    filename: str
    revision: str
    sha256: str
    size: int
    licence: str
    description: str
    source: str

    @property
    def model_name(self) -> str:
        """The name an agent's model box takes once the file is here."""
        return f"local/{self.alias}"


# --------------------------------------------------------------------------- the curated list

def catalogue_file() -> Path:
    """The curated list in use: ``MADLAB_MODEL_CATALOGUE``, else the one shipped in assets/models."""
    named = os.environ.get(CATALOGUE_ENV)
    return Path(named).expanduser() if named else CATALOGUE_FILE


def _entry(raw: Any, index: int) -> CuratedModel:
    """One checked entry; a ValueError names the entry and the field that is wrong."""
    where = f"models[{index}]"
    if not isinstance(raw, dict):
        raise ValueError(f"{where} is not an object")
    fields: dict[str, Any] = {name: raw.get(name) for name in CuratedModel.__dataclass_fields__}
    for name, value in fields.items():
        wanted = int if name == "size" else str
        if not isinstance(value, wanted) or isinstance(value, bool) or value in ("", 0):
            raise ValueError(f"{where}.{name} is missing or not a {wanted.__name__}")
    checks = [("alias", _ALIAS, "lower-case letters, digits, '.', '_' or '-'"),
              ("revision", _HEX40, "a 40-hex commit sha"), ("sha256", _HEX64, "64 lower-case hex digits")]
    for name, pattern, meaning in checks:
        if not pattern.fullmatch(fields[name]):
            raise ValueError(f"{where}.{name} must be {meaning}, not {fields[name]!r}")
    if "/" in fields["filename"] or fields["size"] < 0:
        raise ValueError(f"{where}.filename must be a plain file name and size positive")
    return CuratedModel(**fields)


def curated() -> list[CuratedModel]:
    """The curated list, checked (a ValueError names the file, entry and field that is wrong)."""
    path = catalogue_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = [_entry(raw, i) for i, raw in enumerate(data["models"])]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"the curated model list {path} cannot be used: {error}") from None
    aliases = [entry.alias for entry in entries]
    if len(set(aliases)) != len(aliases):
        raise ValueError(f"the curated model list {path} names an alias twice")
    return entries


def find(alias: str) -> CuratedModel | None:
    """The curated entry called ``alias``, or None."""
    return next((entry for entry in curated() if entry.alias == alias), None)


# --------------------------------------------------------------------------- files here

def models_dir() -> Path:
    """Where downloaded models live: ``$MADLAB_HOME/models`` (default ~/.madlab/models)."""
    return Path(os.environ.get("MADLAB_HOME") or Path.home() / ".madlab").expanduser() / "models"


def file_path(entry: CuratedModel) -> Path:
    """Where ``entry``'s file is once downloaded."""
    return models_dir() / entry.alias / entry.filename


def read_record(alias: str) -> dict | None:
    """The record written when ``alias``'s file was verified (with its measured speed), or None."""
    try:
        record = json.loads((models_dir() / alias / RECORD_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _write_record(alias: str, record: dict) -> None:
    """Write the record atomically (a reader sees the old one or the new one, never half of one)."""
    path = models_dir() / alias / RECORD_NAME
    temporary = path.with_name(f".{RECORD_NAME}.{os.getpid()}.{threading.get_ident()}")
    temporary.write_text(json.dumps(record, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)


def installed() -> dict[str, str]:
    """alias -> path of every downloaded model whose checksum was verified and whose file is still whole."""
    found: dict[str, str] = {}
    root = models_dir()
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        record = read_record(folder.name)
        if not record or not record.get("sha256") or not isinstance(record.get("filename"), str):
            continue
        path = folder / record["filename"]
        try:
            whole = path.stat().st_size == record.get("size")
        except OSError:
            continue
        if whole and _ALIAS.fullmatch(folder.name):
            found[folder.name] = str(path)
    return found


def record_speed(alias: str, tokens_per_s: float | None, note: str | None = None) -> None:
    """Keep the speed measured on this machine in ``alias``'s record (None with a note: not measured)."""
    record = read_record(alias)
    if record is None:
        raise KeyError(f"{alias} is not downloaded")
    rounded = None if tokens_per_s is None else round(float(tokens_per_s), 1)
    record["speed"] = {"tokens_per_s": rounded, "note": note, "measured_at": time.time()}
    _write_record(alias, record)


def remove(alias: str) -> None:
    """Delete ``alias``'s folder (the file, its record and huggingface_hub's bookkeeping)."""
    if not _ALIAS.fullmatch(alias):
        raise ValueError(f"invalid alias {alias!r}")
    shutil.rmtree(models_dir() / alias, ignore_errors=True)


# --------------------------------------------------------------------------- the network

def endpoint() -> str:
    """The Hub's address: ``HF_ENDPOINT`` (read now, not at import), else https://huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def offline_reason() -> str | None:
    """Why huggingface_hub will not go to the network (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE), or None."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    if value.strip().upper() in _TRUE:
        return "HF_HUB_OFFLINE is set (start MAD Lab with HF_HUB_OFFLINE=0 to download models)"
    import huggingface_hub.constants as hub  # read at its import: a value set later is not seen there

    if hub.HF_HUB_OFFLINE:
        return "huggingface_hub was loaded in offline mode (restart MAD Lab with HF_HUB_OFFLINE=0)"
    return None


_probes: dict[str, tuple[float, bool]] = {}
_probes_lock = threading.Lock()


def _reachable(url: str, timeout: float) -> bool:
    """Whether a TCP connection to ``url``'s host opens within ``timeout`` seconds (True when a proxy is set).
    Run in a helper thread, so that a name lookup that hangs is given up after ``timeout`` too."""
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:
        return False
    target = (parts.hostname, parts.port or (80 if parts.scheme == "http" else 443))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="hub-probe")
    try:
        pool.submit(socket.create_connection, target, timeout).result(timeout).close()
        return True
    except (OSError, concurrent.futures.TimeoutError):
        return False
    finally:
        pool.shutdown(wait=False)


def network_problem(max_age: float | None = None) -> str | None:
    """``"no network: ..."`` when a download cannot start now, else None. Offline settings are read at
    once and make no request; otherwise the Hub's host is probed (at most ``PROBE_SECONDS``) and the
    answer kept ``max_age`` seconds (default ``PROBE_TTL_S``), so a page that asks on every rerun does
    not wait each time."""
    reason = offline_reason()
    if reason:
        return f"no network: {reason}."
    url = endpoint()
    with _probes_lock:
        checked = _probes.get(url)
    if checked is None or time.monotonic() - checked[0] > (PROBE_TTL_S if max_age is None else max_age):
        checked = (time.monotonic(), _reachable(url, PROBE_SECONDS))
        with _probes_lock:
            _probes[url] = checked
    if checked[1]:
        return None
    return f"no network: the Hugging Face Hub at {url} cannot be reached (no answer within {PROBE_SECONDS:g} s)."


def forget_probes() -> None:
    """Forget the kept reachability answers (the next ``network_problem`` probes again)."""
    with _probes_lock:
        _probes.clear()


# --------------------------------------------------------------------------- downloading

def _progress_class(on_progress: Progress):
    """A silent tqdm class that hands huggingface_hub's byte counts to ``on_progress``."""
    from tqdm import tqdm

    class _Progress(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)
            self.seen, self.expected = int(kwargs.get("initial") or 0), kwargs.get("total")
            on_progress(self.seen, self.expected)

        def update(self, n=1):
            self.seen += int(n or 0)  # negative when the server ignored a range and the file starts over
            on_progress(self.seen, self.expected)
            return super().update(n)

    return _Progress


def sha256_of(path: str | os.PathLike) -> str:
    """The file's sha256 (hex), read in 1 MiB pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _discard(entry: CuratedModel) -> None:
    """Remove the file and huggingface_hub's note of it, so nothing of a bad download is kept or reused."""
    folder = models_dir() / entry.alias
    (folder / entry.filename).unlink(missing_ok=True)
    (folder / RECORD_NAME).unlink(missing_ok=True)
    shutil.rmtree(folder / ".cache", ignore_errors=True)


def _download(entry: CuratedModel, on_progress: Progress | None) -> str:
    """``hf_hub_download`` of the pinned file into the model's folder; its failures as DownloadError."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import OfflineModeIsEnabled

    folder = models_dir() / entry.alias
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return hf_hub_download(entry.repo, entry.filename, revision=entry.revision, local_dir=folder,
                               endpoint=endpoint(), etag_timeout=10,
                               tqdm_class=_progress_class(on_progress) if on_progress else None)
    except OfflineModeIsEnabled:
        raise DownloadError(f"no network: {offline_reason() or 'huggingface_hub is in offline mode'}.") from None
    except Exception as error:  # noqa: BLE001 - httpx, OSError and the hub's own errors: each is said
        (folder / entry.filename).unlink(missing_ok=True)
        text = " ".join(f"{type(error).__name__}: {error}".split())[:300]
        raise DownloadError(f"The download of {entry.name} stopped ({text}). Nothing was kept: "
                            "click Download again to start over.") from None


def fetch(entry: CuratedModel, on_progress: Progress | None = None) -> str:
    """Download ``entry`` (unless already verified here), check its size and sha256, write its record and
    return the file's path. A DownloadError says what went wrong; then nothing usable is left behind."""
    if entry.alias in installed():
        return installed()[entry.alias]
    problem = network_problem()
    if problem:
        raise DownloadError(problem)
    path = _download(entry, on_progress)
    size = os.path.getsize(path)
    digest = sha256_of(path) if size == entry.size else None
    if digest != entry.sha256:
        _discard(entry)
        got = f"sha256 {digest}" if digest else f"{size} bytes instead of {entry.size}"
        raise DownloadError(f"Checksum mismatch for {entry.name}: the file has {got}, not the pinned "
                            f"sha256 {entry.sha256}. The file was deleted; nothing was kept.")
    record = {**asdict(entry), "verified_at": time.time(), "speed": None}
    record.pop("source")
    _write_record(entry.alias, record)
    return path
