"""Presets: debate settings, one YAML file each in assets/presets.

Two kinds:
  * classroom presets, named for what a lesson shows ("Does arguing fix a wrong answer?"): a
    short question the small default model can take, its reference answer and answer type set, and
    a `lesson` key (what to watch, what to change and run again). They come first in the picker.
  * paper presets, which reproduce a paper's setup (`source`: the paper and section it follows).

A preset file is a config mapping plus keys of its own, `title`, `source` and (classroom presets)
`lesson`; every other key is a `DebateConfig` field. Shared by the app's preset picker and the CLI
(`run --preset NAME`, or `run --config assets/presets/NAME.yaml`). Reading only: nothing here runs
a debate or writes anything.
"""
from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from .config import ConfigError, read_config_data

PRESET_DIR = Path(__file__).resolve().parents[1] / "assets" / "presets"
PRESET_KEYS = ("title", "source", "lesson")  # a preset's own keys, not debate settings


def split_preset(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the config part, the preset's own keys) of a settings mapping."""
    return ({k: v for k, v in data.items() if k not in PRESET_KEYS},
            {k: data[k] for k in PRESET_KEYS if k in data})


def load_presets(directory: Path = PRESET_DIR) -> dict[str, dict[str, Any]]:
    """{preset id: {"title", "source", "lesson", "config"}} from directory/*.yaml: the classroom presets
    (those with a `lesson`) first, each kind sorted by title; "lesson" is "" for a paper preset.

    The files are parsed again only when one is added, removed or changed (name, size, mtime): the
    Debate page asks on every full run, and parsing the YAML was ~50 ms of each (a third of a full
    run while a debate streams, which a steering click then waits for). A deep copy each time, so
    a caller may change what it gets."""
    stamp = tuple((path.name, stat.st_mtime_ns, stat.st_size)
                  for path in sorted(directory.glob("*.yaml")) for stat in (path.stat(),))
    return copy.deepcopy(_parsed(directory, stamp))


@functools.lru_cache(maxsize=8)
def _parsed(directory: Path, stamp: tuple) -> dict[str, dict[str, Any]]:
    """The presets of `directory` as they were at `stamp` (see load_presets)."""
    presets = {}
    for name, _mtime, _size in stamp:
        path = directory / name
        config, own = split_preset(read_config_data(path))
        presets[path.stem] = {"title": own.get("title", path.stem), "source": own.get("source", ""),
                              "lesson": str(own.get("lesson") or "").strip(), "config": config}
    return dict(sorted(presets.items(), key=lambda item: (not item[1]["lesson"], item[1]["title"])))


def preset_config(name: str, directory: Path = PRESET_DIR) -> dict[str, Any]:
    """The settings of preset `name` (its file name without .yaml); ConfigError("preset") if unknown."""
    presets = load_presets(directory)
    if name not in presets:
        raise ConfigError("preset", f"unknown preset {name!r}; presets: {', '.join(sorted(presets))}")
    return dict(presets[name]["config"])
