"""Presets: debate settings that reproduce a paper's setup, one YAML file each in assets/presets.

A preset file is a config mapping plus two keys of its own, `title` and `source` (the paper
and section it follows); every other key is a `DebateConfig` field. Shared by the app's
preset picker and the CLI (`run --preset NAME`, or `run --config assets/presets/NAME.yaml`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import ConfigError, read_config_data

PRESET_DIR = Path(__file__).resolve().parents[1] / "assets" / "presets"
PRESET_KEYS = ("title", "source")  # a preset's own keys, not debate settings


def split_preset(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the config part, the preset's own keys) of a settings mapping."""
    return ({k: v for k, v in data.items() if k not in PRESET_KEYS},
            {k: data[k] for k in PRESET_KEYS if k in data})


def load_presets(directory: Path = PRESET_DIR) -> dict[str, dict[str, Any]]:
    """{preset id: {"title", "source", "config"}} from directory/*.yaml, sorted by title."""
    presets = {}
    for path in sorted(directory.glob("*.yaml")):
        config, own = split_preset(read_config_data(path))
        presets[path.stem] = {"title": own.get("title", path.stem), "source": own.get("source", ""),
                              "config": config}
    return dict(sorted(presets.items(), key=lambda item: item[1]["title"]))


def preset_config(name: str, directory: Path = PRESET_DIR) -> dict[str, Any]:
    """The settings of preset `name` (its file name without .yaml); ConfigError("preset") if unknown."""
    presets = load_presets(directory)
    if name not in presets:
        raise ConfigError("preset", f"unknown preset {name!r}; presets: {', '.join(sorted(presets))}")
    return dict(presets[name]["config"])
