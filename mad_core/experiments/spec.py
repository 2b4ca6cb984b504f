"""An experiment's definition: a typed, validated sweep and the debates it plans.

What it is for: reading an experiment (YAML/JSON file or text, or a mapping from the app),
checking EVERY field before anything runs, expanding the grid (a cartesian product) into
configurations, and planning one debate per configuration × task item × seed.

The format (see assets/experiments/ for examples)::

    name: KKS protocols            # shown in lists
    task_set: kks                  # a written set (ciar, multiple_choice, yes_no) or a generated one
                                   # (mad_core.tasks.generated.GENERATED_SETS: kks, ...), or your own
                                   # file or dataset: {file: data/qa.jsonl, columns: {...}, answer_type: number}
                                   # or {hf: org/name, split: test, columns: {...}} (mad_core/tasks/files.py)
    items: 5                       # hand-written sets: the FIRST n items in file order;
                                   # generated sets: n items from generated_items(name, n, task_seed)
    task_seed: 0                   # generated sets only: which puzzles (the same for every debate seed)
    task_options: {players: 4}     # generated sets only (kks: players 3-9)
    seeds: [1, 2]                  # each debate of a configuration and item runs once per seed
    repeats: 1                     # runs of each item per seed, each with its own derived seed
    baselines: [single, self_consistency, independent_vote]   # mad_core/experiments/baselines.py
    concurrency: 2                 # debates at once
    base: {rounds: 2, agents: 3, models: local/smollm2-135m}   # settings shared by every debate
    grid:                          # axis -> list of values; every combination is one configuration
      protocol: [simple_voting, majority_consensus, judge]

`base` and `grid` take any `DebateConfig` setting but the ones each item sets (question,
task, reference, seed and the answer's type and options), plus: `agents` (a count or a list of
agent mappings), `models` (one model for every agent, or a list with one model per agent,
by position; a router group name is a model name), `aad` (= all_agents_drafting),
`generator` (= response_generator), `cache` (the response cache: readwrite unless given; off or
read), and `ci` (true: MALLM's Collective Improvement, i.e. the
`collective_refinement` paradigm with All-Agents Drafting, seed 000 §4.3; not with a
`paradigm` axis).

Every problem is a `ConfigError` naming its place, e.g. `grid.protocol[1]`, `base.rounds`,
`seeds[0]`, `task_set`; every debate config of the sweep (each configuration with each item)
is built and validated by `DebateConfig` first. Nothing here writes or calls a model.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import (MAX_NAME, ConfigError, DebateConfig, _check_int, _check_keys, _check_text, read_config_data,
                      short_repr)
from ..tasks.files import is_task_source, load_task_source
from ..tasks.sets import TaskItem, item_prompt, load_task_set, task_sets
from . import baselines as baseline_rules

# ----- bounds ------------------------------------------------------------------------------------
MAX_ITEMS = 1000
MAX_SEEDS = 100
MAX_AXIS_VALUES = 100
MAX_CONFIGURATIONS = 1000
MAX_RUNS = 20_000
MAX_CONCURRENCY = 64
MAX_REPEATS = 100
# Sweeps use the response cache (mad_core/models/response_cache.py) by default: a rerun of a finished
# sweep asks no model again and gives the same tables. `base: {cache: off}` (or read) changes it.
SWEEP_CACHE = "readwrite"

_TOP_KEYS = frozenset("name task_set items task_seed task_options seeds repeats baselines concurrency base grid".split())
# Settings that every task item sets for its debates (never in base or grid).
ITEM_SETTINGS = ("question", "task", "reference", "seed", "answer_type", "answer_options")
# Grid/base keys that are not DebateConfig fields, and the fields two of them stand for.
ALIASES = {"aad": "all_agents_drafting", "generator": "response_generator"}
EXTRA_KEYS = ("agents", "models", "ci", *ALIASES)
_DEBATE_FIELDS = frozenset(f.name for f in dataclasses.fields(DebateConfig))


@dataclass(frozen=True)
class Configuration:
    """One point of the grid: its axis values and the debate settings they give (no item yet)."""

    index: int
    values: dict[str, Any]  # axis -> value, in grid order (a baseline: {"baseline": name, ...})
    choice: dict[str, int]  # axis -> index of the value in its axis list (a baseline: {})
    settings: dict[str, Any]  # DebateConfig fields (question etc. come from the item)
    baseline_key: str | None = None  # a baseline's key ("b1", ...); None for a configuration of the grid
    step_by_step: bool = False  # the item's instruction asks to reason step by step (baselines.STEP_BY_STEP)
    compared_with: dict[str, str] = field(default_factory=dict)  # baseline name -> key of this one's baseline

    @property
    def key(self) -> str:
        return self.baseline_key or f"c{self.index + 1}"

    @property
    def label(self) -> str:
        """`protocol=judge · agents=3`, or `all` when the grid is empty."""
        return " · ".join(f"{axis}={_value_text(value)}" for axis, value in self.values.items()) or "all"


@dataclass(frozen=True)
class Run:
    """One planned debate: a configuration on one item with one seed (a repeat's derived seed)."""

    index: int
    configuration: Configuration
    item: TaskItem
    item_index: int
    seed: int
    repeat: int = 0

    def debate_config(self) -> DebateConfig:
        return DebateConfig.from_dict(debate_settings(self.configuration.settings, self.item, self.seed,
                                                      self.configuration.step_by_step))


@dataclass
class ExperimentConfig:
    """A validated experiment: `from_dict` / `load` check everything and expand the grid."""

    name: str
    task_set: Any  # a set's name, or a file / Hugging Face source (tasks/files.py: {file: ...} or {hf: ...})
    items: int
    seeds: list[int]
    concurrency: int = 2
    task_seed: int = 0
    task_options: dict[str, Any] = field(default_factory=dict)
    base: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    repeats: int = 1
    baselines: list[Any] = field(default_factory=list)  # as given (baselines.read_baselines reads them)
    configurations: list[Configuration] = field(default_factory=list, repr=False)  # the grid's, then baselines
    task_items: list[TaskItem] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The experiment as given (what is stored and what `from_dict` reads back)."""
        data = {"name": self.name, "task_set": self.task_set, "items": self.items, "task_seed": self.task_seed,
                "task_options": dict(self.task_options), "seeds": list(self.seeds),
                "concurrency": self.concurrency, "base": dict(self.base), "grid": dict(self.grid)}
        if self.repeats != 1:
            data["repeats"] = self.repeats
        if self.baselines:
            data["baselines"] = list(self.baselines)
        return data

    @classmethod
    def load(cls, source: str | Path) -> "ExperimentConfig":
        """Read a YAML/JSON file (or text) and validate it."""
        base_dir = Path(source).parent if isinstance(source, Path) else None
        return cls.from_dict(read_config_data(source), base_dir=base_dir)

    @classmethod
    def from_dict(cls, data: Any, *, base_dir: str | Path | None = None) -> "ExperimentConfig":
        """Check and plan a sweep; `base_dir`: where a task file's relative path starts (the spec
        file's folder; stored as an absolute path, so the stored spec reads back anywhere)."""
        if not isinstance(data, dict):
            raise ConfigError("experiment", f"expected a mapping, got {type(data).__name__}")
        _check_keys(data, _TOP_KEYS, "")
        for required in ("task_set", "items", "seeds"):
            if required not in data:
                raise ConfigError(required, "missing: an experiment needs task_set, items and seeds")
        name = data.get("name", "experiment")
        _check_text("name", name, MAX_NAME, required=True)
        task_set = _task_set(data["task_set"], base_dir)
        _check_int("items", data["items"], 1, MAX_ITEMS)
        _check_int("task_seed", data.get("task_seed", 0), 0, 2**63 - 1)
        _check_int("concurrency", data.get("concurrency", 2), 1, MAX_CONCURRENCY)
        _check_int("repeats", data.get("repeats", 1), 1, MAX_REPEATS)
        seeds = _seeds(data["seeds"])
        options = _mapping("task_options", data.get("task_options") or {})
        base = _mapping("base", data.get("base") or {})
        grid = _grid(data.get("grid") or {})
        wanted = baseline_rules.read_baselines(data.get("baselines"))
        _check_setting_keys("base", base)
        experiment = cls(name=name, task_set=task_set, items=data["items"], seeds=seeds,
                         concurrency=data.get("concurrency", 2), task_seed=data.get("task_seed", 0),
                         task_options=options, base=base, grid=grid, repeats=data.get("repeats", 1),
                         baselines=list(data.get("baselines") or []))
        experiment.task_items = _load_items(experiment)
        probe = debate_settings({}, experiment.task_items[0], seeds[0])
        # A sweep reads and writes the response cache unless its base or grid says otherwise (`cache`).
        experiment.configurations = with_baselines(expand_grid({"cache": SWEEP_CACHE, **base}, grid), wanted, probe)
        total = experiment.total
        if total > MAX_RUNS:
            raise ConfigError("grid", f"{total:,} debates planned; at most {MAX_RUNS:,}")
        _validate_debates(experiment)
        return experiment

    # ----- the plan ------------------------------------------------------------------------
    def runs(self) -> list[Run]:
        """Every debate, seed by seed (and repeat by repeat), item by item, each configuration in turn
        (so that partial results cover every configuration early). Repeat r > 0 of seed s runs with
        `repeat_seed(s, r)`: every configuration gets the same seeds, so their runs pair up."""
        plan = []
        for seed in self.seeds:
            for repeat in range(self.repeats):
                for item_index, item in enumerate(self.task_items):
                    for configuration in self.configurations:
                        plan.append(Run(len(plan), configuration, item, item_index, repeat_seed(seed, repeat),
                                        repeat))
        return plan

    @property
    def total(self) -> int:
        return len(self.configurations) * len(self.task_items) * len(self.seeds) * self.repeats


# ----- pieces of validation -------------------------------------------------------------------
def _mapping(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(name, f"expected a mapping, got {short_repr(value)}")
    return dict(value)


def _seeds(value: Any) -> list[int]:
    if not isinstance(value, list) or not value:
        raise ConfigError("seeds", f"expected a non-empty list of whole numbers, got {short_repr(value)}")
    if len(value) > MAX_SEEDS:
        raise ConfigError("seeds", f"at most {MAX_SEEDS} seeds, got {len(value)}")
    for i, seed in enumerate(value):
        _check_int(f"seeds[{i}]", seed, 0, 2**63 - 1)
        if seed in value[:i]:
            raise ConfigError(f"seeds[{i}]", f"seed {seed} is given twice")
    return list(value)


def _check_setting_keys(where: str, settings: dict[str, Any]) -> None:
    _check_keys(settings, _DEBATE_FIELDS | set(EXTRA_KEYS), f"{where}.")
    for key in settings:
        if key in ITEM_SETTINGS:
            raise ConfigError(f"{where}.{key}", "set by each task item (its question, instruction, answer) "
                                                "or by `seeds`; it cannot be given here")
        target = ALIASES.get(key)
        if target is not None and target in settings:
            raise ConfigError(f"{where}.{key}", f"{key} and {target} are the same setting: give one")


def _grid(value: Any) -> dict[str, list[Any]]:
    grid = _mapping("grid", value)
    _check_setting_keys("grid", grid)
    if "ci" in grid and "paradigm" in grid:
        raise ConfigError("grid.ci", "ci sets the paradigm (collective_refinement): give ci or paradigm, not both")
    for axis, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"grid.{axis}", f"expected a non-empty list of values, got {short_repr(values)}")
        if len(values) > MAX_AXIS_VALUES:
            raise ConfigError(f"grid.{axis}", f"at most {MAX_AXIS_VALUES} values, got {len(values)}")
        for i, one in enumerate(values):
            if one in values[:i]:
                raise ConfigError(f"grid.{axis}[{i}]", f"{short_repr(one)} is given twice")
    count = 1
    for values in grid.values():
        count *= len(values)
    if count > MAX_CONFIGURATIONS:
        raise ConfigError("grid", f"{count:,} configurations; at most {MAX_CONFIGURATIONS:,}")
    return grid


def _task_set(value: Any, base_dir: str | Path | None) -> Any:
    """A set's name (text), or a file / dataset source with a relative file made absolute."""
    if is_task_source(value):
        source = dict(value)
        if "file" in source and isinstance(source["file"], str) and base_dir is not None:
            source["file"] = str((Path(base_dir) / source["file"]).resolve())
        return source
    if isinstance(value, dict):
        raise ConfigError("task_set", "a task source needs `file` (JSONL, CSV or Parquet) or `hf` (a dataset name)")
    _check_text("task_set", value, MAX_NAME, required=True)
    return value


def _load_items(experiment: ExperimentConfig) -> list[TaskItem]:
    name, n = experiment.task_set, experiment.items
    if is_task_source(name):
        if experiment.task_options:
            raise ConfigError("task_options", "only generated task sets (e.g. kks) take options")
        items = load_task_source(name)[:n]
    elif name not in task_sets():
        from ..tasks.generated import generated_items

        try:
            items = generated_items(name, n, experiment.task_seed, **experiment.task_options)
        except (ValueError, TypeError, KeyError) as exc:  # "<field>: <problem>", the field named by D's module
            where, _, problem = str(exc).partition(": ")
            field_name = {"name": "task_set", "n": "items", "seed": "task_seed"}.get(where, f"task_options.{where}")
            if field_name == "task_set":
                problem += f"; written sets: {', '.join(task_sets())}"
            raise ConfigError(field_name, problem or str(exc)) from None
    else:
        if experiment.task_options:
            raise ConfigError("task_options", "only generated task sets (e.g. kks) take options")
        items = load_task_set(name)[:n]
    if len(items) < n:
        what = (name.get("file") or name.get("hf")) if isinstance(name, dict) else name
        raise ConfigError("items", f"the task set {what!r} has only {len(items)} items, {n} asked for")
    return list(items)


# ----- the grid ---------------------------------------------------------------------------------
def _agent_list(value: Any, where: str) -> list[Any]:
    """`agents` as a list of agent mappings: a count gives `Agent 1..n`, a list is taken as it is."""
    if isinstance(value, list):
        return [dict(a) if isinstance(a, dict) else a for a in value]
    _check_int(where, value, 1, 32)
    return [{"label": f"Agent {i + 1}"} for i in range(value)]


def _apply(settings: dict[str, Any], key: str, value: Any, where: str) -> None:
    """Lay one base/grid value over the debate settings."""
    if key == "agents":
        models = [a.get("model") for a in settings.get("agents") or [] if isinstance(a, dict)]
        agents = _agent_list(value, where)
        if not isinstance(value, list) and models:  # a count keeps the model the agents had
            agents = [{**a, "model": models[min(i, len(models) - 1)]} for i, a in enumerate(agents)]
        settings["agents"] = agents
    elif key == "models":
        agents = settings.get("agents")
        if agents is None:
            agents = DebateConfig(question="-").to_dict()["agents"]
        agents = [dict(a) if isinstance(a, dict) else a for a in agents]
        if isinstance(value, str):
            models = [value] * len(agents)
        elif isinstance(value, list) and all(isinstance(m, str) for m in value):
            if len(value) != len(agents):
                raise ConfigError(where, f"{len(value)} models for {len(agents)} agents: give one model per "
                                         "agent, or one model name for all")
            models = list(value)
        else:
            raise ConfigError(where, f"expected a model name or a list of names, got {short_repr(value)}")
        settings["agents"] = [{**a, "model": m} if isinstance(a, dict) else a for a, m in zip(agents, models)]
    elif key == "ci":
        if not isinstance(value, bool):
            raise ConfigError(where, f"expected true or false, got {short_repr(value)}")
        if value:  # seed 000 §4.3: CI starts like AAD, then shows only the previous round's solutions
            settings.update(paradigm="collective_refinement", all_agents_drafting=True)
    else:
        settings[ALIASES.get(key, key)] = value


def _ordered(settings: dict[str, Any]) -> list[str]:
    """Keys in the order they are applied: `agents` before `models` before the rest."""
    return sorted(settings, key=lambda k: {"agents": 0, "models": 1}.get(k, 2))


def expand_grid(base: dict[str, Any], grid: dict[str, list[Any]]) -> list[Configuration]:
    """The configurations of a sweep: `base` with every combination of the grid's values laid over it."""
    common: dict[str, Any] = {}
    for key in _ordered(base):
        _apply(common, key, base[key], f"base.{key}")
    axes = list(grid)  # the product runs in the grid's order, as written (the last axis fastest)
    configurations = []
    for index, combo in enumerate(itertools.product(*(range(len(grid[a])) for a in axes))):
        settings = json.loads(json.dumps(common))  # a deep copy of plain data
        choice = dict(zip(axes, combo))
        for axis in _ordered(grid):
            _apply(settings, axis, grid[axis][choice[axis]], f"grid.{axis}[{choice[axis]}]")
        configurations.append(Configuration(index, {a: grid[a][i] for a, i in choice.items()}, choice, settings))
    return configurations


def with_baselines(configurations: list[Configuration], wanted: list[baseline_rules.BaselineSpec],
                   probe: dict[str, Any]) -> list[Configuration]:
    """The grid's configurations, each knowing its baseline of every kind, then the baselines: each
    derived from each configuration (`baselines.derive`), the same derivation run once."""
    found: dict[str, Configuration] = {}
    compared: list[dict[str, str]] = [{} for _ in configurations]
    served: dict[str, list[str]] = {}
    for i, spec in enumerate(wanted):
        for configuration, mine in zip(configurations, compared):
            derived = baseline_rules.derive(spec, configuration.settings, probe, f"baselines[{i}]")
            if derived.identity not in found:
                key = f"b{len(found) + 1}"
                found[derived.identity] = Configuration(len(configurations) + len(found), derived.values, {},
                                                        derived.settings, key, derived.step_by_step)
            mine[spec.name] = found[derived.identity].key
            served.setdefault(found[derived.identity].key, []).append(configuration.key)
    kinds = [b.values["baseline"] for b in found.values()]
    made = []
    for baseline in found.values():  # several of one kind: say which configurations each serves
        values = dict(baseline.values)
        if kinds.count(values["baseline"]) > 1:
            values["for"] = ", ".join(served[baseline.key])
        made.append(dataclasses.replace(baseline, values=values))
    return [dataclasses.replace(c, compared_with=mine) for c, mine in zip(configurations, compared)] + made


def repeat_seed(seed: int, repeat: int) -> int:
    """Seed of repeat `repeat` of a debate seeded `seed`: the seed itself for the first, then a
    derived one (sha256 of both; the same on every machine), distinct from the sweep's others."""
    if repeat == 0:
        return seed
    digest = hashlib.sha256(f"{seed}\x1frepeat\x1f{repeat}".encode()).digest()
    return int.from_bytes(digest[:7], "big")


def debate_settings(settings: dict[str, Any], item: TaskItem, seed: int, step_by_step: bool = False) -> dict[str, Any]:
    """A configuration's settings for one item and seed: the item gives the question and the answer
    (`step_by_step`: its instruction asks to reason step by step, the baselines' `STEP_BY_STEP`)."""
    question = item_prompt(dataclasses.replace(item, instruction=""))  # the instruction goes in `task`
    options = item.choices or item.names
    task = " ".join(part for part in (item.instruction, baseline_rules.STEP_BY_STEP if step_by_step else "") if part)
    return {**settings, "question": question, "task": task, "reference": item.answer, "seed": seed,
            "answer_type": item.kind, "answer_options": list(options) if options else None}


def _blame(error: ConfigError, configuration: Configuration, base: dict[str, Any], item: TaskItem) -> ConfigError:
    """The error of one debate config, named by where the bad value was given."""
    top = error.field.split(".")[0].split("[")[0]
    sources = {"agents": ("models", "agents"), "all_agents_drafting": ("ci", "aad", "all_agents_drafting"),
               "paradigm": ("ci", "paradigm"), "response_generator": ("generator", "response_generator"),
               "connectivity": ("connectivity", "agents")}.get(top, (top,))
    for axis in sources:
        if axis in configuration.choice:
            return ConfigError(f"grid.{axis}[{configuration.choice[axis]}]",
                               f"{error.field}: {error.message} (configuration {configuration.label})")
    if configuration.choice:  # the base alone was valid: this combination of values is not
        return ConfigError("grid", f"configuration {configuration.label}: {error.field}: {error.message}")
    for key in sources:
        if key in base:
            return ConfigError(f"base.{key}", f"{error.field}: {error.message}")
    if top in ITEM_SETTINGS:
        return ConfigError(f"items[{item.id}].{top}", error.message)
    return ConfigError(f"base.{error.field}", error.message)


def _validate_debates(experiment: ExperimentConfig) -> None:
    """Build and validate the debate config of every configuration with every item (seeds only
    change `seed`, whose range `_seeds` checked): the first problem is raised, named by its source.

    The base is checked on its own first, so an error that only a combination of grid values
    makes (e.g. paradigm two_sided with 3 agents) is named `grid` with that configuration."""
    seed = experiment.seeds[0]
    checked_models: dict[str, str | None] = {}
    alone = expand_grid(experiment.base, {})  # the base on its own first: its errors are the base's
    for configuration in alone + experiment.configurations:
        for item in experiment.task_items:
            try:
                _check_cached(configuration.settings, checked_models)
                DebateConfig.from_dict(debate_settings(configuration.settings, item, seed, configuration.step_by_step),
                                       check_models=False)
            except ConfigError as error:
                if configuration.baseline_key:  # named by the baseline's entry
                    name = configuration.values["baseline"]
                    names = [b.name for b in baseline_rules.read_baselines(experiment.baselines)]
                    raise ConfigError(f"baselines[{names.index(name)}]", f"{name} cannot run with these settings: "
                                      f"{error.field}: {error.message}") from None
                raise _blame(error, configuration, experiment.base, item) from None


def _check_cached(settings: dict[str, Any], cache: dict[str, str | None]) -> None:
    """Whether each model can be called here, asked once per name (the model layer looks at files)."""
    from ..models import validate_model_name

    names = [("agents[%d].model" % i, a.get("model")) for i, a in enumerate(settings.get("agents") or [])
             if isinstance(a, dict) and isinstance(a.get("model"), str)]
    names += [(key, settings[key]) for key in ("judge_model", "persona_model", "summarizer_model")
              if isinstance(settings.get(key), str)]
    for where, name in names:
        if name not in cache:
            cache[name] = validate_model_name(name)
        if cache[name]:
            raise ConfigError(where, cache[name])


def _value_text(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return "[" + ", ".join(str(v.get("label", "?")) for v in value) + "]"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
