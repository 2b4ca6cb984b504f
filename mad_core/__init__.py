"""MAD Lab's engine: configure, run, steer and store multi-agent debates.

Public entry points: `debate()` (seed 004's one-call API), `DebateConfig` / `load_config`
(the configuration the CLI and the app share), `DebateEngine` + `Controller` (events and
steering), `components()` (every registered paradigm, protocol, response generator and
ordering). This package never imports streamlit; heavy libraries (litellm, torch,
sentence-transformers) are imported only when first used.
"""
from .api import DebateResult, DebateRound, debate
from .config import AgentConfig, ConfigError, DebateConfig, load_config
from .controller import Controller
from .engine import DebateEngine
from .resume import fork_debate, resume_debate, run_debate
from .registry import UnknownComponent, components

__all__ = [
    "AgentConfig", "ConfigError", "Controller", "DebateConfig", "DebateEngine", "DebateResult", "DebateRound",
    "UnknownComponent", "components", "debate", "fork_debate", "load_config", "resume_debate", "run_debate",
]
