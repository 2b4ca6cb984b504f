"""Packaging metadata: pyproject.toml's [project] dependencies are requirements.txt's pins, and the
`madlab` console script names a callable that imports (the command line `python -m mad_core` runs)."""
from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest

import mad_core.cli

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirements(name: str) -> list[str]:
    """The pins of a requirements file, comments and blank lines left out, in file order."""
    lines = (line.split("#", 1)[0].strip() for line in (ROOT / name).read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def test_project_dependencies_are_the_pins_of_requirements_txt():
    pins = _requirements("requirements.txt")
    assert pins and all("==" in pin for pin in pins)  # a positive control: the file is read, and pinned
    assert _pyproject()["project"]["dependencies"] == pins


def test_the_madlab_console_script_is_the_command_line(capsys):
    target = _pyproject()["project"]["scripts"]["madlab"]
    module_name, _, attribute = target.partition(":")
    main = getattr(importlib.import_module(module_name), attribute)
    assert main is mad_core.cli.main  # what `python -m mad_core` runs (mad_core/__main__.py)
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out
