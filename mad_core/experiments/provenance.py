"""What a sweep ran with, recorded when it is created: the code revision (git commit and whether the
working tree had changes), Python and the versions of the packages MAD Lab pins, and each model's
identity (a local GGUF's file digest, `response_cache.model_identity`).

Like inspect_ai's `EvalRevision`: a number in a paper can be traced to the code and the weights
that made it. Without git (an unpacked copy) the revision is None and says so; nothing here
fails a sweep. What it must not do: send anything anywhere, read a secret, or take long (git is
asked with a short timeout).
"""
from __future__ import annotations

import importlib.metadata
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

from ..models.response_cache import model_identity

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = REPO / "requirements.txt"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==")
_GIT_TIMEOUT_S = 5


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def revision() -> dict[str, Any]:
    """{"commit": sha or None, "dirty": bool or None, "note": why there is none}."""
    commit = _git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None, "note": "not a git checkout (or git is missing)"}
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None, "note": ""}


def package_versions() -> dict[str, str | None]:
    """The installed version of every package requirements.txt pins (None: not installed)."""
    names = []
    if REQUIREMENTS.exists():
        for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines():
            match = _PIN.match(line.strip())
            if match:
                names.append(match.group(1))
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def models_of(configurations: list[dict[str, Any]]) -> list[str]:
    """Every model name the configurations' settings name (agents, judge, personas, summarizer, supervisor)."""
    found: list[str] = []
    for settings in configurations:
        names = [a.get("model") for a in settings.get("agents") or [] if isinstance(a, dict)]
        names += [settings.get(key) for key in ("judge_model", "persona_model", "summarizer_model", "supervisor_model")]
        found += [name for name in names if isinstance(name, str) and name]
    return list(dict.fromkeys(found))


def model_identities(models: list[str]) -> dict[str, str]:
    """model name -> its identity (a local GGUF: "gguf-sha256:..."; other models: the name)."""
    out = {}
    for model in models:
        try:
            out[model] = model_identity(model)
        except OSError as exc:  # a file that went away: say so, do not fail the sweep
            out[model] = f"unreadable: {exc.strerror or exc}"
    return out


def provenance(configuration_settings: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything above, for one sweep about to be stored."""
    return {"revision": revision(), "python": platform.python_version(), "platform": platform.platform(),
            "packages": package_versions(), "models": model_identities(models_of(configuration_settings))}
