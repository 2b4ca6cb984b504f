"""Typed, validated debate configuration: the one object the API, the CLI and the app share.

`DebateConfig.from_dict` / `load_config` read YAML or JSON; `validate()` checks every field
and raises `ConfigError` naming the field (and the valid choices) before anything runs.
Validation never calls a model and never writes anything.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "local/smollm2-135m"


class ConfigError(ValueError):
    """A configuration value that cannot run; `field` names where it is."""

    def __init__(self, field_name: str, message: str):
        self.field = field_name
        self.message = message
        super().__init__(f"{field_name}: {message}")


@dataclass
class AgentConfig:
    """One debater: who it is and which model speaks for it."""

    label: str
    model: str = DEFAULT_MODEL
    persona: str = ""
    temperature: float = 0.7
    max_tokens: int = 256


@dataclass
class DebateConfig:
    """Everything that defines a debate. Field comments say which paper a knob comes from."""

    question: str
    agents: list[AgentConfig] = field(default_factory=lambda: default_agents(3))
    task: str = ""  # task instruction shown with the question (e.g. "Answer with the letter.")
    reference: str | None = None  # known correct answer (truth_first / truth_last, accuracy)
    paradigm: str = "memory"  # who speaks when and sees what (seed 000 App. C, seed 003)
    response_generator: str = "simple"  # simple | critical | reasoning (seed 000 §3.2)
    protocol: str = "simple_voting"  # decision protocol (seed 000, seed 002 judge, seed 004)
    rounds: int = 3  # discussion rounds before the first decision attempt (seed 000: 3)
    max_rounds: int = 5  # turn cap: no discussion round beyond this one
    consensus_threshold: float | None = None  # overrides the consensus protocol's fraction
    cumulative_points: int = 10  # points each agent distributes in cumulative voting
    vote_retries: int = 2  # re-asks for an unparseable ballot before it counts as invalid
    extract_final_answers: bool = True  # seed 000 E.1 before voting
    all_agents_drafting: bool = False  # AAD: every agent drafts independently first (seed 000)
    memory_window: int | None = None  # rounds of history visible besides the current one
    tit_for_tat: int | None = None  # 0-3 (seed 002 Table 11); None = no debate meta prompt
    ordering: str = "fixed"  # speaking order (seed 003)
    confidence: bool = False  # agents report confidence 1-10 (seed 001)
    confidence_visible: bool = True  # whether other agents see it
    challenge: bool = False  # agents may challenge the final answer (seed 000 E.3)
    judge_model: str | None = None  # judge protocol / two_sided paradigm (seed 002)
    judge_adaptive_break: bool = True  # judge may end the debate after any round (seed 002)
    debate_subrounds: int = 2  # exchanges between moderator turns in the `debate` paradigm
    auto_personas: bool = False  # generate task-relevant expert personas (seed 000)
    persona_model: str | None = None  # model for persona generation (default: first agent's)
    seed: int | None = None  # orderings, scripted model and backends that accept one
    max_concurrency: int = 4  # agents called at once when they speak in the same step
    retry_attempts: int = 3  # attempts per model call on transient failures
    retry_base_delay: float = 0.5  # seconds, doubled per retry
    retry_max_wait_s: float = 60.0  # longest wait before a retry, a server's Retry-After included
    timeout_s: float = 120.0  # per model call attempt

    # ----- conversion -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DebateConfig":
        """Build and validate a config; every problem is a ConfigError naming its field."""
        if not isinstance(data, dict):
            raise ConfigError("config", f"expected a mapping of settings, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(unknown[0], f"unknown setting; valid settings: {', '.join(sorted(known))}")
        if "question" not in data:
            raise ConfigError("question", "missing: every debate needs a question")
        values = dict(data)
        if "agents" in values:
            values["agents"] = _parse_agents(values["agents"])
        cfg = cls(**values)
        cfg.validate()
        return cfg

    def copy(self, **changes: Any) -> "DebateConfig":
        return DebateConfig.from_dict({**self.to_dict(), **changes})

    # ----- validation -------------------------------------------------------------------
    def validate(self) -> "DebateConfig":
        """Check every field; raise ConfigError naming the first one at fault."""
        from . import registry
        from .models import validate_model_name

        _check_type("question", self.question, str)
        if not self.question.strip():
            raise ConfigError("question", "must not be empty")
        _check_type("task", self.task, str)
        if not isinstance(self.agents, list) or not self.agents:
            raise ConfigError("agents", "at least one agent is needed")
        labels = [a.label for a in self.agents]
        if len(set(labels)) != len(labels):
            raise ConfigError("agents", f"agent labels must be unique, got {labels}")
        for i, agent in enumerate(self.agents):
            where = f"agents[{i}]"
            _check_type(f"{where}.label", agent.label, str)
            if not agent.label.strip():
                raise ConfigError(f"{where}.label", "must not be empty")
            _check_type(f"{where}.persona", agent.persona, str)
            _check_number(f"{where}.temperature", agent.temperature, 0.0, 2.0)
            _check_int(f"{where}.max_tokens", agent.max_tokens, 1)
            _check_model(f"{where}.model", agent.model, validate_model_name)
        for kind, name_field in (
            ("paradigm", "paradigm"),
            ("response_generator", "response_generator"),
            ("protocol", "protocol"),
            ("ordering", "ordering"),
        ):
            value = getattr(self, name_field)
            if value not in registry.names(kind):
                raise ConfigError(name_field, str(registry.UnknownComponent(kind, value)))
        _check_int("rounds", self.rounds, 1)
        _check_int("max_rounds", self.max_rounds, 1)
        if self.max_rounds < self.rounds:
            raise ConfigError("max_rounds", f"must be at least rounds ({self.rounds}), got {self.max_rounds}")
        if self.consensus_threshold is not None:
            _check_number("consensus_threshold", self.consensus_threshold, 0.0, 1.0)
        _check_int("cumulative_points", self.cumulative_points, 1)
        _check_int("vote_retries", self.vote_retries, 0)
        if self.memory_window is not None:
            _check_int("memory_window", self.memory_window, 0)
        if self.tit_for_tat is not None:
            _check_int("tit_for_tat", self.tit_for_tat, 0)
            if self.tit_for_tat > 3:
                raise ConfigError("tit_for_tat", f"must be 0, 1, 2 or 3, got {self.tit_for_tat}")
        _check_int("debate_subrounds", self.debate_subrounds, 1)
        _check_int("max_concurrency", self.max_concurrency, 1)
        _check_int("retry_attempts", self.retry_attempts, 1)
        _check_number("retry_base_delay", self.retry_base_delay, 0.0, 600.0)
        _check_number("retry_max_wait_s", self.retry_max_wait_s, 0.0, 3600.0)
        _check_number("timeout_s", self.timeout_s, 0.001, 86400.0)
        if self.seed is not None:
            _check_int("seed", self.seed, None)
        for flag in ("extract_final_answers", "all_agents_drafting", "confidence", "confidence_visible",
                     "challenge", "judge_adaptive_break", "auto_personas"):
            _check_type(flag, getattr(self, flag), bool)
        for name_field in ("judge_model", "persona_model"):
            value = getattr(self, name_field)
            if value is not None:
                _check_model(name_field, value, validate_model_name)
        if self.reference is not None:
            _check_type("reference", self.reference, str)
        # Component-specific rules (e.g. two_sided needs two agents and a judge).
        for kind, name_field in (("paradigm", "paradigm"), ("protocol", "protocol"), ("ordering", "ordering")):
            check = getattr(registry.get(kind, getattr(self, name_field)), "check_config", None)
            if check is not None:
                check(self)
        return self


def default_agents(n: int, model: str = DEFAULT_MODEL) -> list[AgentConfig]:
    return [AgentConfig(label=f"Agent {i + 1}", model=model) for i in range(n)]


def load_config(source: str | Path) -> DebateConfig:
    """Read a YAML or JSON config from a path (or from the text itself) and validate it."""
    import yaml

    text = source
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and Path(source).exists()):
        text = Path(source).read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)  # YAML is a superset of JSON
    except yaml.YAMLError as exc:
        raise ConfigError("config", f"not valid YAML/JSON: {exc}") from None
    return DebateConfig.from_dict(data)


def dump_config(cfg: DebateConfig, fmt: str = "yaml") -> str:
    if fmt == "json":
        return json.dumps(cfg.to_dict(), indent=2)
    import yaml

    return yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True)


# ----- helpers ------------------------------------------------------------------------------
def _parse_agents(raw: Any) -> list[AgentConfig]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError("agents", "expected a non-empty list of agents")
    agents = []
    known = {f.name for f in dataclasses.fields(AgentConfig)}
    for i, item in enumerate(raw):
        if isinstance(item, AgentConfig):
            agents.append(item)
            continue
        if not isinstance(item, dict):
            raise ConfigError(f"agents[{i}]", f"expected a mapping with label/model/persona, got {item!r}")
        unknown = sorted(set(item) - known)
        if unknown:
            raise ConfigError(f"agents[{i}].{unknown[0]}", f"unknown setting; valid: {', '.join(sorted(known))}")
        item = {"label": f"Agent {i + 1}", **item}
        agents.append(AgentConfig(**item))
    return agents


def _check_type(name: str, value: Any, kind: type) -> None:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(name, f"expected {kind.__name__}, got {value!r}")


def _check_int(name: str, value: Any, minimum: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, f"expected a whole number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(name, f"must be at least {minimum}, got {value}")


def _check_number(name: str, value: Any, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(name, f"expected a number, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(name, f"must be between {low:g} and {high:g}, got {value}")


def _check_model(name: str, value: Any, validate) -> None:
    _check_type(name, value, str)
    problem = validate(value)
    if problem:
        raise ConfigError(name, problem)
