"""Typed, validated debate configuration: the one object the API, the CLI and the app share.

`DebateConfig.from_dict` / `load_config` read YAML or JSON; `validate()` checks every field
and raises `ConfigError` naming the field (and the valid choices) before anything runs.
Validation never calls a model and never writes anything.

Hostile input is refused the same way: types are checked before anything looks inside a
value (a YAML alias bomb is never expanded), absurd sizes are refused (see the bounds
below), and every error text stays short whatever the value (`short_repr`).
`from_dict(data, check_models=False)` checks everything except whether the models can be
called here (imports of debates run elsewhere use it).
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
import reprlib
from dataclasses import dataclass, field
from pathlib import Path
from functools import partial
from typing import Any, Callable, Iterator

from . import registry  # a leaf: it imports the components only when one is first looked up
from .challenge import CHALLENGE_SETTINGS
from .events import PERSON

DEFAULT_MODEL = "local/smollm2-135m"
# An agent whose model is PERSON is a seat: a person types its turns (mad_core/seats.py). At its time
# limit (`time_limit_s`) the turn is skipped or a stand-in model speaks in the seat's place
# (`at_time_limit`: one of AT_TIME_LIMIT; "model" needs `stand_in_model`).
AT_TIME_LIMIT = ("skip", "model")
SEAT_TIME_LIMIT_S = (5.0, 3600.0)
SEAT_FIELDS = ("time_limit_s", "at_time_limit", "stand_in_model")

# ----- bounds: absurd values are refused before anything runs --------------------------------
MAX_AGENTS = 32
MAX_TEXT = 100_000  # characters of a question, task, persona or reference answer
MAX_NAME = 200  # characters of an agent label or a model name (and of each answer option)
MAX_ANSWER_OPTIONS = 26  # entries of answer_options (choice: at most the letters answer_types reads)
MAX_CONFIG_BYTES = 10_000_000  # larger config files are refused unread
MAX_PATH_CHARS = 4096  # longer text given to load_config is YAML text, never a path
# Whole-number settings: (lowest, highest). Those in OPTIONAL_SETTINGS may also be None.
INT_RANGES: dict[str, tuple[int, int]] = {
    "rounds": (1, 100), "max_rounds": (1, 100), "cumulative_points": (1, 1_000_000), "vote_retries": (0, 10),
    "memory_window": (0, 1000), "tit_for_tat": (0, 3), "debate_subrounds": (1, 20), "seed": (0, 2**63 - 1),
    "max_concurrency": (1, 64), "retry_attempts": (1, 20), "kks_depth": (1, 3),
}
# Number settings (finite, int or float): (lowest, highest).
NUMBER_RANGES: dict[str, tuple[float, float]] = {
    "consensus_threshold": (0.0, 1.0), "retry_base_delay": (0.0, 600.0), "retry_max_wait_s": (0.0, 3600.0),
    "timeout_s": (0.001, 86400.0),
}
OPTIONAL_SETTINGS = ("memory_window", "tit_for_tat", "seed", "consensus_threshold")
AGENT_MAX_TOKENS = (1, 1_000_000)
AGENT_TEMPERATURE = (0.0, 2.0)
# Error texts are cut to these lengths (a message may list the valid choices).
MAX_FIELD_CHARS = 100
MAX_MESSAGE_CHARS = 480
# Settings naming a registered component, and yes/no settings.
COMPONENT_SETTINGS = ("paradigm", "response_generator", "protocol", "ordering")
# The response cache's modes (mad_core/models/response_cache.py): "off" neither reads nor writes,
# "read" takes stored replies and stores none, "readwrite" takes and stores them.
CACHE_MODES = ("off", "read", "readwrite")
FLAG_SETTINGS = ("extract_final_answers", "all_agents_drafting", "confidence", "confidence_visible",
                 "judge_adaptive_break", "auto_personas")
# The challenge step's settings (seed 000 §5 and App. E.3; MALLM's challenge_solution calls): what
# the agents see when they are asked to accept or challenge an answer. "solution": the final answer
# only; "history": with the discussion as the agent saw it; "information": with additional background
# information; "wrong" / "irrelevant": a planted wrong or irrelevant answer instead of the decision
# (the paper's baselines). `challenge: true` (configs and debates stored before the settings) is
# "solution"; false is no challenge step.

# ----- generation settings -----------------------------------------------------------------------
# The most tokens a reply may have, by what a call asks for. Turns in which an agent writes
# or reasons (drafts, discussion, a summary, a persona, a reasoning agent's own solution, a
# challenger's answer, the judge's own answer) use the agent's `max_tokens`. The short replies
# below (their JSON shapes: protocols/schemas.py) use this table, and never more than the
# agent's `max_tokens`: enough for the JSON form and for a terse text answer, too little for
# a small model to wander off. A ballot gets BALLOT_TOKENS_PER_SOLUTION more per solution on
# it (a ranking or a points mapping grows with them). A model that thinks aloud before it
# answers (<think>...</think>) needs more: give it its own, larger table.
PHASE_MAX_TOKENS: dict[str, int] = {
    "ballot": 24,  # {"vote": 2} / "Solution 2" / "2 3 1" / {"1": 6, "2": 4, "3": 0}, + per solution
    "agreement": 48,  # {"agree": false, "reason": "..."} / "DISAGREE"
    "extraction": 64,  # {"answer": "..."} / the bare answer (at most 160 characters)
    "choice": 32,  # the judge names the best participant: {"choice": "Agent 2"}
    "verdict": 192,  # the judge's decision, side, answer and a short reason
}
BALLOT_TOKENS_PER_SOLUTION = 8

# Sampling fields sent to local models only (llama.cpp's server reads them from the request
# body; hosted APIs would refuse unknown fields), with the turns in which an agent writes:
# llama.cpp's default repeat_penalty is 1.0 (off), and a small model such as SmolLM2-135M
# then repeats a phrase until its token limit. 1.15 stops those loops; much above 1.3 it
# starts to push a model off words it must repeat (a name, a number). Short constrained
# replies get none: the penalty window reaches into the prompt, where the solution numbers
# a ballot must repeat stand.
LOCAL_SAMPLING: dict[str, float] = {"repeat_penalty": 1.15}


def reply_max_tokens(phase: str | None, agent_max_tokens: int, solutions: int = 0) -> int:
    """The token limit of a reply in `phase` (None or an unknown phase: the agent's own)."""
    limit = PHASE_MAX_TOKENS.get(phase) if phase is not None else None
    if limit is None:
        return agent_max_tokens
    if phase == "ballot":
        limit += BALLOT_TOKENS_PER_SOLUTION * solutions
    return min(limit, agent_max_tokens)


class ConfigError(ValueError):
    """A configuration value that cannot run; `field` names where it is (e.g. "agents[1].label").
    `depends_on`: the other fields a rule over several compares it with (`problems` leaves the rule
    out while one of them is at fault itself: its first cause is reported, not this consequence)."""

    def __init__(self, field_name: str, message: str, depends_on: tuple[str, ...] = ()):
        self.field = clip(one_line(str(field_name)), MAX_FIELD_CHARS)
        self.message = clip(one_line(str(message)), MAX_MESSAGE_CHARS)
        self.depends_on = tuple(depends_on)
        super().__init__(f"{self.field}: {self.message}")


@dataclass
class AgentConfig:
    """One debater: who it is and which model speaks for it."""

    label: str
    model: str = DEFAULT_MODEL
    persona: str = ""
    temperature: float = 0.7
    max_tokens: int = 256
    # A seat's settings (read only when `model` is PERSON; see SEAT_FIELDS above).
    time_limit_s: float = 120.0
    at_time_limit: str = "skip"
    stand_in_model: str | None = None

    @property
    def is_person(self) -> bool:
        return self.model == PERSON


@dataclass
class DebateConfig:
    """Everything that defines a debate. Field comments say which paper a knob comes from."""

    question: str
    agents: list[AgentConfig] = field(default_factory=lambda: default_agents(3))
    task: str = ""  # task instruction shown with the question (e.g. "Answer with the letter.")
    reference: str | None = None  # known correct answer (truth_first / truth_last, accuracy)
    answer_type: str = "text"  # how answers and the reference are read for metrics (tasks/answer_types.KINDS)
    answer_options: list[str] | None = None  # "choice": option texts in letter order; "kks": player names
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
    challenge: bool | str = False  # challenge step (seed 000 E.3): False or a CHALLENGE_SETTINGS name; True = "solution"
    judge_model: str | None = None  # judge protocol / two_sided paradigm (seed 002)
    judge_adaptive_break: bool = True  # judge may end the debate after any round (seed 002)
    debate_subrounds: int = 2  # exchanges between moderator turns in the `debate` paradigm
    # The per-player Knight-Knave-Spy mode (paradigm kks_per_player, seed 001 §4.1 and Table 1):
    kks_depth: int = 1  # debate passes over each player before its self-adjustment (1-3; seed 001 C5)
    kks_order: str = "fixed"  # order the players are discussed in: "fixed" (puzzle order) | "agreed" (seed 001 C4)
    supervisor_model: str | None = None  # breaks per-player ties of the final vote (seed 001 §4.1; default: first agent's)
    auto_personas: bool = False  # generate task-relevant expert personas (seed 000)
    persona_model: str | None = None  # model for persona generation (default: first agent's)
    summarizer_model: str | None = None  # simultaneous_summarizer paradigm (seed 003 App.; default: first agent's)
    connectivity: Any = "full"  # who sees whom (seed 003): "full", "ring", or {agent: [agents it sees]}
    seed: int | None = None  # orderings, scripted model and backends that accept one
    max_concurrency: int = 4  # agents called at once when they speak in the same step
    retry_attempts: int = 3  # attempts per model call on transient failures
    retry_base_delay: float = 0.5  # seconds, doubled per retry
    retry_max_wait_s: float = 60.0  # longest wait before a retry, a server's Retry-After included
    timeout_s: float = 120.0  # the longest one attempt may wait for a remote model's whole reply (local/: see models.RetryPolicy)
    cache: str = "off"  # the response cache: "off" | "read" (stored replies, none stored) | "readwrite" (CACHE_MODES)

    # ----- conversion -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The settings as a mapping; an agent that is not a person leaves out its seat settings
        while they are the defaults (a config of model agents reads as it did before seats)."""
        data = dataclasses.asdict(self)
        for agent in data["agents"] if isinstance(data.get("agents"), list) else ():
            if isinstance(agent, dict) and agent.get("model") != PERSON:
                for name in SEAT_FIELDS:
                    if name in agent and agent[name] == _SEAT_DEFAULTS[name]:
                        del agent[name]
        return data

    @classmethod
    def from_dict(cls, data: Any, *, check_models: bool = True) -> "DebateConfig":
        """Build and validate a config; every problem is a ConfigError naming its field.

        With `check_models=False` model names are only checked to be non-empty text of a sane
        length, not that they can be called here (see `validate`)."""
        return cls._build(data).validate(check_models=check_models)

    @classmethod
    def _build(cls, data: Any) -> "DebateConfig":
        """The config `data` describes, its fields not yet checked (ConfigError: not a mapping of
        known settings with a question, or a malformed agent list)."""
        if not isinstance(data, dict):
            raise ConfigError("config", f"expected a mapping of settings, got {type(data).__name__}")
        _check_keys(data, _SETTINGS, "")
        if "question" not in data:
            raise ConfigError("question", "missing: every debate needs a question")
        values = dict(data)
        if "agents" in values:
            values["agents"] = _parse_agents(values["agents"])
        return cls(**values)

    @classmethod
    def problems(cls, data: Any, *, check_models: bool = True) -> list[ConfigError]:
        """Every problem of `data`, in `validate`'s order (empty: `from_dict` accepts it).

        For a form that shows them all at once. The rules are `validate`'s own (`_checks`); a
        rule over a field already at fault (e.g. max_rounds >= rounds when rounds is not a
        number) is skipped, and a field has at most one problem (its first). A malformed agent list is reported and the other settings are
        checked with the default agents, leaving out what those would say about agents.

        Never raises, whatever `data` holds (tests/unit/test_problems_fuzz.py): a rule that breaks
        on a value it did not expect is a problem of the field it checks ("cannot be checked")."""
        found: list[ConfigError] = []
        if isinstance(data, dict) and "agents" in data:
            try:
                _parse_agents(data["agents"])
            except ConfigError as exc:
                found.append(exc)
                data = {k: v for k, v in data.items() if k != "agents"}
        try:
            cfg = cls._build(data)
        except ConfigError as exc:
            return found + [exc]
        agents_broken = bool(found)
        for check in _each_rule(cfg._checks(check_models), found):
            try:
                check()
            except ConfigError as exc:
                if agents_broken and exc.field.startswith(("agents", "connectivity")):
                    continue
                if any(seen.field in exc.depends_on for seen in found):
                    continue  # a rule over a field that is wrong itself: its first cause is reported
                if all(exc.field != seen.field for seen in found):  # one problem a field: the first
                    found.append(exc)
            except Exception as exc:  # noqa: BLE001 - a rule that broke on a value it did not expect
                if not found:  # never raised: reported as a problem of the rule's field
                    found.append(ConfigError(_rule_field(check), f"cannot be checked ({type(exc).__name__})"))
        return found

    def copy(self, **changes: Any) -> "DebateConfig":
        return DebateConfig.from_dict({**self.to_dict(), **changes})

    # ----- validation -------------------------------------------------------------------
    def validate(self, *, check_models: bool = True) -> "DebateConfig":
        """Check every field; raise ConfigError naming the first one at fault (`problems`
        lists them all).

        `check_models=False` skips asking the model layer whether each model can be called
        on this machine (its providers, scripts and files): a stored debate may name models
        that only exist where it ran."""
        for check in self._checks(check_models):
            check()
        return self

    def _checks(self, check_models: bool) -> Iterator[Callable[[], None]]:
        """validate's rules, one field or rule each, in order; each raises a ConfigError.

        A generator: each rule is made after the ones before it ran, so a rule may assume
        what `validate` has checked by then (`problems` goes on past a failed one). Making a rule
        looks at no value: every lookup happens when the rule runs (a list or an unknown name as
        the paradigm is the paradigm's problem, never an exception here)."""
        check_model = _check_model if check_models else _check_model_name
        yield partial(_check_text, "question", self.question, MAX_TEXT, required=True)
        yield partial(_check_text, "task", self.task, MAX_TEXT)
        yield from self._agent_checks(check_model)
        for name in COMPONENT_SETTINGS:
            yield partial(_check_component, name, getattr(self, name), registry.names(name))
        for name, (low, high) in INT_RANGES.items():
            if getattr(self, name) is not None or name not in OPTIONAL_SETTINGS:
                yield partial(_check_int, name, getattr(self, name), low, high)
        yield self._check_round_limits
        for name, (low, high) in NUMBER_RANGES.items():
            if getattr(self, name) is not None or name not in OPTIONAL_SETTINGS:
                yield partial(_check_number, name, getattr(self, name), low, high)
        for name in FLAG_SETTINGS:
            yield partial(_check_type, name, getattr(self, name), bool)
        yield partial(_check_challenge, self.challenge)
        yield partial(_check_connectivity, self.connectivity,
                      [a.label for a in self.agents if isinstance(a, AgentConfig)])
        yield partial(_check_component, "kks_order", self.kks_order, KKS_ORDERS, "order")
        yield partial(_check_component, "cache", self.cache, CACHE_MODES, "cache mode")
        for name in ("judge_model", "persona_model", "summarizer_model", "supervisor_model"):
            if getattr(self, name) is not None:
                yield partial(check_model, name, getattr(self, name))
        if self.reference is not None:
            yield partial(_check_text, "reference", self.reference, MAX_TEXT)
        yield partial(_check_answer_reading, self.answer_type, self.answer_options)
        # Component-specific rules (e.g. two_sided needs two agents and a judge).
        for kind in ("paradigm", "protocol", "ordering"):
            yield partial(_component_rule, kind, self)

    def _check_round_limits(self) -> None:
        if self.max_rounds < self.rounds:
            raise ConfigError("max_rounds", f"must be at least rounds ({self.rounds}), got {self.max_rounds}",
                              depends_on=("rounds",))

    def _agent_checks(self, check_model: Callable[[str, Any], None]) -> Iterator[Callable[[], None]]:
        if not isinstance(self.agents, list) or not self.agents:
            yield partial(_fail, "agents", "at least one agent is needed")
            return
        if len(self.agents) > MAX_AGENTS:
            yield partial(_fail, "agents", f"at most {MAX_AGENTS} agents, got {len(self.agents)}")
            return
        first_with: dict[str, int] = {}  # label -> index of the agent that has it
        for i, agent in enumerate(self.agents):
            where = f"agents[{i}]"
            if not isinstance(agent, AgentConfig):
                yield partial(_fail, where, f"expected an agent (label, model, persona, ...), got {short_repr(agent)}")
                continue
            yield partial(_check_text, f"{where}.label", agent.label, MAX_NAME, required=True)
            if isinstance(agent.label, str) and agent.label in first_with:
                yield partial(_fail, f"{where}.label", f"agent labels must be unique: {short_repr(agent.label)} "
                                                       f"is also the label of agents[{first_with[agent.label]}]")
            elif isinstance(agent.label, str):
                first_with[agent.label] = i
            yield partial(_check_text, f"{where}.persona", agent.persona, MAX_TEXT)
            yield partial(_check_number, f"{where}.temperature", agent.temperature, *AGENT_TEMPERATURE)
            yield partial(_check_int, f"{where}.max_tokens", agent.max_tokens, *AGENT_MAX_TOKENS)
            if agent.model != PERSON:  # a person has no model to check
                yield partial(check_model, f"{where}.model", agent.model)
            yield partial(_check_seat, where, agent, check_model)
        if all(isinstance(a, AgentConfig) and a.model == PERSON for a in self.agents):
            yield partial(_fail, "agents[0].model", "at least one agent must be a model: every agent is a "
                                                   "person, and the judge, persona writer and summarizer "
                                                   "fall back to the first model agent's model")


_SETTINGS = frozenset(f.name for f in dataclasses.fields(DebateConfig))
_SEAT_DEFAULTS = {f.name: f.default for f in dataclasses.fields(AgentConfig) if f.name in SEAT_FIELDS}


def _check_seat(where: str, agent: AgentConfig, check_model: Callable[[str, Any], None]) -> None:
    """A seat's settings (checked on every agent, needed only by a person's): a time limit in range, what
    happens at it, and a stand-in model (any model name but a person) when a model is to speak in the
    seat's place."""
    _check_number(f"{where}.time_limit_s", agent.time_limit_s, *SEAT_TIME_LIMIT_S)
    _check_component(f"{where}.at_time_limit", agent.at_time_limit, AT_TIME_LIMIT, "action at the time limit")
    if agent.stand_in_model is None:
        if agent.at_time_limit == "model" and agent.model == PERSON:
            raise ConfigError(f"{where}.stand_in_model", "name the model that speaks in the seat's place "
                                                         "at the time limit")
        return
    if agent.stand_in_model == PERSON:
        raise ConfigError(f"{where}.stand_in_model", "a stand-in must be a model, not a person")
    check_model(f"{where}.stand_in_model", agent.stand_in_model)
_AGENT_SETTINGS = frozenset(f.name for f in dataclasses.fields(AgentConfig))


def _component_rule(kind: str, cfg: DebateConfig) -> None:
    """The rule of the component `cfg` names as its `kind` (`check_config`), if it has one; nothing
    when the name is not a registered one (`_check_component` reports that)."""
    name = getattr(cfg, kind)
    if not isinstance(name, str) or name not in registry.names(kind):
        return
    check = getattr(registry.get(kind, name), "check_config", None)
    if check is not None:
        check(cfg)


def _each_rule(rules: Iterator[Callable[[], None]], found: list[ConfigError]) -> Iterator[Callable[[], None]]:
    """`rules` as they come, ending where making the next one fails (reported in `found` when nothing
    is yet: `problems` never raises)."""
    while True:
        try:
            rule = next(rules)
        except StopIteration:
            return
        except Exception as exc:  # noqa: BLE001 - a rule that could not be made
            if not found:
                found.append(ConfigError("config", f"cannot be checked ({type(exc).__name__})"))
            return
        yield rule


def _rule_field(rule: Callable[[], None]) -> str:
    """The field a rule checks: its first argument when that is a field name, else "config"."""
    args = getattr(rule, "args", ())
    return args[0] if args and isinstance(args[0], str) else "config"


CONNECTIVITY_NAMES = ("full", "ring")
KKS_ORDERS = ("fixed", "agreed")  # seed 001 Table 1 "Debate order": fixed, or agreed by the agents (C4)


def _check_connectivity(value: Any, labels: list[str]) -> None:
    """"full", "ring", or a mapping from each agent label to the labels it sees."""
    if isinstance(value, str):
        if value not in CONNECTIVITY_NAMES:
            raise ConfigError("connectivity", f"expected one of {', '.join(CONNECTIVITY_NAMES)} or a mapping "
                                              f"agent -> agents it sees, got {short_repr(value)}")
        return
    if not isinstance(value, dict):
        raise ConfigError("connectivity", f"expected a name or a mapping, got {short_repr(value)}")
    for viewer, seen in value.items():
        if viewer not in labels:
            raise ConfigError("connectivity", f"{short_repr(viewer)} is not an agent; agents: {', '.join(labels)}")
        if not isinstance(seen, list) or any(s not in labels for s in seen):
            raise ConfigError(f"connectivity.{viewer}", f"expected a list of agent labels, got {short_repr(seen)}")


def _check_answer_reading(answer_type: Any, options: Any) -> None:
    """`answer_type` is a known kind; `answer_options` is None or a short list of distinct texts."""
    from .tasks.answer_types import KINDS, LETTERS

    if not isinstance(answer_type, str) or answer_type not in KINDS:
        raise ConfigError("answer_type", f"unknown answer type {short_repr(answer_type)}; "
                                         f"valid choices: {', '.join(KINDS)}")
    if options is None:
        return
    if not isinstance(options, list):
        raise ConfigError("answer_options", f"expected a list of texts or null, got {short_repr(options)}")
    most = len(LETTERS) if answer_type == "choice" else MAX_ANSWER_OPTIONS
    if len(options) > most:
        raise ConfigError("answer_options", f"at most {most} entries for answer type {answer_type}, "
                                            f"got {len(options)}")
    for i, option in enumerate(options):
        _check_text(f"answer_options[{i}]", option, MAX_NAME, required=True)
    if answer_type == "kks":
        seen = [o.casefold() for o in options]
        if len(set(seen)) != len(seen):
            raise ConfigError("answer_options", "player names must be distinct (compared ignoring case)")


def _check_challenge(value: Any) -> None:
    """`challenge` is true/false or the name of one of the paper's settings."""
    if isinstance(value, bool) or (isinstance(value, str) and value in CHALLENGE_SETTINGS):
        return
    raise ConfigError("challenge", f"expected true, false or one of {', '.join(CHALLENGE_SETTINGS)}, "
                                   f"got {short_repr(value)}")


def default_agents(n: int, model: str = DEFAULT_MODEL) -> list[AgentConfig]:
    return [AgentConfig(label=f"Agent {i + 1}", model=model) for i in range(n)]


# ----- reading configs ------------------------------------------------------------------------
def load_config(source: str | Path) -> DebateConfig:
    """Read a YAML or JSON config from a path (or from the text itself) and validate it."""
    return DebateConfig.from_dict(read_config_data(source))


def read_config_data(source: str | Path | bytes) -> dict[str, Any]:
    """The settings mapping in a YAML/JSON file or text, not yet validated (ConfigError "config").

    `source` is a path when it is a Path, or a single-line string of a sane length naming an
    existing file; any other string is the YAML/JSON text itself."""
    import yaml

    text: str | bytes = source
    named = _as_path(source)
    where = f"{short_repr(str(named))}: " if named is not None else ""
    if named is not None:
        try:
            text = read_text_file(named, MAX_CONFIG_BYTES)
        except ValueError as exc:
            raise ConfigError("config", f"{where}{exc}") from None
    elif not isinstance(source, (str, bytes)):
        raise ConfigError("config", f"expected a file path or YAML/JSON text, got {type(source).__name__}")
    try:
        data = yaml.safe_load(text)  # YAML is a superset of JSON
    except yaml.YAMLError as exc:
        raise ConfigError("config", f"{where}not valid YAML/JSON: {exc}") from None
    except RecursionError:
        raise ConfigError("config", f"{where}nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - e.g. an integer of 5000 digits, a date like 2024-13-45
        raise ConfigError("config", f"{where}holds a value that cannot be read: {exc}") from None
    if not isinstance(data, dict):
        hint = " (or the path of an existing file)" if named is None and isinstance(data, str) else ""
        raise ConfigError("config", f"{where}must hold a mapping of settings{hint}, got {type(data).__name__}")
    return data


def _as_path(source: Any) -> Path | None:
    if isinstance(source, Path):
        return source
    if not isinstance(source, str) or "\n" in source or not source.strip() or len(source) > MAX_PATH_CHARS:
        return None
    try:
        return Path(source) if Path(source).is_file() else None
    except (OSError, ValueError):  # e.g. "File name too long", an embedded NUL
        return None


def read_text_file(path: str | Path, max_bytes: int) -> str:
    """The UTF-8 text of a file of at most `max_bytes` (a byte-order mark is dropped).

    Raises ValueError with a short message (without the file's name) when the file cannot be
    read, is larger, or is not UTF-8."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if len(raw) > max_bytes:
        raise ValueError(f"larger than {max_bytes:,} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start:,})") from None


def dump_config(cfg: DebateConfig, fmt: str = "yaml") -> str:
    if fmt == "json":
        return json.dumps(cfg.to_dict(), indent=2)
    import yaml

    return yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True)


# ----- short texts for error messages -------------------------------------------------------------
_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = _REPR.maxdict = 4
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlong = 40
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_SURROGATE = re.compile("[\ud800-\udfff]")  # half of a UTF-16 pair: no UTF-8 text can hold it


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters (the last one an ellipsis when cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def short_repr(value: Any, limit: int = 80) -> str:
    """A repr of `value` of at most `limit` characters, whatever its size or depth (never expands it)."""
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - e.g. an int too long to print
        text = f"<{type(value).__name__}>"
    return clip(text, limit)


def field_name(key: Any) -> str:
    """How a mapping key reads in a field name: plain names as they are, anything else as a short repr."""
    return key if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) else short_repr(key, 40)


# ----- helpers ------------------------------------------------------------------------------
def _check_keys(data: dict[Any, Any], known: frozenset[str], where: str) -> None:
    """Every key of `data` is a known setting name (a ConfigError names the first that is not)."""
    for key in data:
        if not isinstance(key, str):
            raise ConfigError(where + field_name(key),
                              f"setting names must be text, got {type(key).__name__} {short_repr(key)}")
    unknown = sorted(key for key in data if key not in known)
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=1) if len(unknown[0]) <= MAX_NAME else []
        hint = f"did you mean {close[0]!r}?" if close else f"valid settings: {', '.join(sorted(known))}"
        raise ConfigError(where + field_name(unknown[0]), f"unknown setting; {hint}")


def _parse_agents(raw: Any) -> list[AgentConfig]:
    if not isinstance(raw, list):
        raise ConfigError("agents", f"expected a non-empty list of agents, got {short_repr(raw)}")
    if not raw:
        return []  # validate says "at least one agent is needed"
    if len(raw) > MAX_AGENTS:
        raise ConfigError("agents", f"at most {MAX_AGENTS} agents, got {len(raw)}")
    agents = []
    for i, item in enumerate(raw):
        if isinstance(item, AgentConfig):
            agents.append(item)
            continue
        if not isinstance(item, dict):
            raise ConfigError(f"agents[{i}]", f"expected a mapping with label/model/persona, got {short_repr(item)}")
        _check_keys(item, _AGENT_SETTINGS, f"agents[{i}].")
        agents.append(AgentConfig(**{"label": f"Agent {i + 1}", **item}))
    return agents


def _check_type(name: str, value: Any, kind: type) -> None:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(name, f"expected {kind.__name__}, got {short_repr(value)}")


def _fail(name: str, message: str) -> None:
    raise ConfigError(name, message)


def _check_component(name: str, value: Any, valid: Any, noun: str | None = None) -> None:
    """`value` is one of the `valid` names (a paradigm, protocol, ordering, ...)."""
    if not isinstance(value, str) or value not in valid:
        choices = ", ".join(sorted(valid)) if noun is None else ", ".join(valid)
        raise ConfigError(name, f"unknown {noun or name} {short_repr(value)}; valid choices: {choices}")


def _check_text(name: str, value: Any, max_chars: int, required: bool = False) -> None:
    _check_type(name, value, str)
    if required and not value.strip():
        raise ConfigError(name, "must not be empty")
    if len(value) > max_chars:
        raise ConfigError(name, f"at most {max_chars:,} characters, got {len(value):,}")
    broken = _SURROGATE.search(value)
    if broken:
        raise ConfigError(name, f"not valid Unicode text (a lone surrogate at character {broken.start():,})")


def _check_int(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, f"expected a whole number, got {short_repr(value)}")
    if value < low:
        raise ConfigError(name, f"must be at least {low}, got {short_repr(value)}")
    if value > high:
        raise ConfigError(name, f"must be at most {high:,}, got {short_repr(value)}")


def _check_number(name: str, value: Any, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(name, f"expected a number, got {short_repr(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(name, f"must be a finite number, got {value}")
    if not low <= value <= high:
        raise ConfigError(name, f"must be between {low:g} and {high:g}, got {short_repr(value)}")


def _check_model_name(name: str, value: Any) -> None:
    """A model name's shape only: non-empty text of at most MAX_NAME characters."""
    _check_text(name, value, MAX_NAME, required=True)


def _check_model(name: str, value: Any) -> None:
    """A model name that can be called on this machine (asks the model layer; no network)."""
    from .models import validate_model_name

    _check_model_name(name, value)
    problem = validate_model_name(value)
    if problem:
        raise ConfigError(name, problem)
