"""Shared fixtures: every test gets its own MADLAB_HOME, and the model providers registered."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def madlab_home(tmp_path, monkeypatch):
    """Point MAD Lab's data directory at a fresh temporary folder (as llm does with LLM_USER_PATH)."""
    home = tmp_path / "madlab-home"
    monkeypatch.setenv("MADLAB_HOME", str(home))
    return home
