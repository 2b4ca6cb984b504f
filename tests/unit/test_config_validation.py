"""Hostile configs: every bad value is a ConfigError naming its field, with a short message, and
never a traceback (DebateConfig.from_dict, load_config, and `python -m mad_core run --config`)."""
from __future__ import annotations

import copy
import math
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mad_core.cli import main
from mad_core.config import MAX_FIELD_CHARS, MAX_MESSAGE_CHARS, ConfigError, DebateConfig, load_config
from mad_core.store import default_db_path

ECHO = "scripted/echo"  # registered by the model layer itself
VALID = {"question": "Is the Moon made of cheese?", "rounds": 2, "max_rounds": 3,
         "agents": [{"label": "Agent 1", "model": ECHO}, {"label": "Agent 2", "model": ECHO}]}
SHORT = MAX_FIELD_CHARS + MAX_MESSAGE_CHARS + 2  # the longest str(ConfigError) can be


def agents(*items: dict) -> list[dict]:
    return [{"model": ECHO, **item} for item in items]


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """YAML "billion laughs": ~300 bytes that expand to width**levels strings."""
    parts, previous = ["&a [" + ",".join(["lol"] * width) + "]"], "a"
    for name in "bcdefghijk"[: levels - 1]:
        parts.append(f"&{name} [" + ",".join([f"*{previous}"] * width) + "]")
        previous = name
    return "[" + ", ".join(parts) + "]"


def refused(data) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        DebateConfig.from_dict(data)
    assert len(str(err.value)) <= SHORT
    return err.value


# ----- a table of hostile configs -------------------------------------------------------------
HOSTILE = [
    # keys
    ({1: "x", "question": "q"}, "1"),
    ({None: "x", "question": "q"}, "None"),
    ({"question": "q", "agents": agents({"label": "A", 2: "x"})}, "agents[0].2"),
    ({"question": "q", "agents": agents({"label": "A", "modle": "x"})}, "agents[0].modle"),
    ([VALID], "config"),
    ("question: q", "config"),
    # agents and their labels
    ({"question": "q", "agents": agents({"label": ["a", "b"]})}, "agents[0].label"),
    ({"question": "q", "agents": agents({"label": {"x": 1}}, {"label": {"x": 1}})}, "agents[0].label"),
    ({"question": "q", "agents": agents({"label": "A"}, {"label": "A"})}, "agents[1].label"),
    ({"question": "q", "agents": agents({"label": "x" * 201})}, "agents[0].label"),
    ({"question": "q", "agents": agents({"label": "   "})}, "agents[0].label"),
    ({"question": "q", "agents": "Agent 1"}, "agents"),
    ({"question": "q", "agents": [1]}, "agents[0]"),
    ({"question": "q", "agents": agents(*({"label": f"A{i}"} for i in range(33)))}, "agents"),
    ({"question": "q", "agents": agents({"label": "A", "model": ["openai/gpt-4o"]})}, "agents[0].model"),
    ({"question": "q", "agents": agents({"label": "A", "model": "x/" + "y" * 300})}, "agents[0].model"),
    ({"question": "q", "agents": agents({"label": "A", "max_tokens": 1_000_001})}, "agents[0].max_tokens"),
    ({"question": "q", "agents": agents({"label": "A", "temperature": math.nan})}, "agents[0].temperature"),
    ({"question": "q", "agents": agents({"label": "A", "temperature": math.inf})}, "agents[0].temperature"),
    ({"question": "q", "agents": agents({"label": "A", "persona": "p" * 100_001})}, "agents[0].persona"),
    # texts
    ({"question": ["what?"]}, "question"),
    ({"question": "x" * 100_001}, "question"),
    ({"question": "half a pair \ud800"}, "question"),
    ({"question": "q", "task": "t" * 100_001}, "task"),
    ({"question": "q", "reference": 42}, "reference"),
    ({"question": "q", "reference": "r" * 100_001}, "reference"),
    ({"question": "q", "judge_model": 5}, "judge_model"),
    # components
    ({"question": "q", "protocol": ["simple_voting"]}, "protocol"),
    ({"question": "q", "paradigm": {"memory": 1}}, "paradigm"),
    ({"question": "q", "ordering": "x" * 10_000}, "ordering"),
    # whole numbers and their bounds
    ({"question": "q", "rounds": 101}, "rounds"),
    ({"question": "q", "rounds": 10**5000}, "rounds"),
    ({"question": "q", "rounds": True}, "rounds"),
    ({"question": "q", "rounds": 2.0}, "rounds"),
    ({"question": "q", "rounds": "3"}, "rounds"),
    ({"question": "q", "max_rounds": 101}, "max_rounds"),
    ({"question": "q", "cumulative_points": 1_000_001}, "cumulative_points"),
    ({"question": "q", "vote_retries": 11}, "vote_retries"),
    ({"question": "q", "retry_attempts": 21}, "retry_attempts"),
    ({"question": "q", "max_concurrency": 65}, "max_concurrency"),
    ({"question": "q", "debate_subrounds": 21}, "debate_subrounds"),
    ({"question": "q", "memory_window": 1001}, "memory_window"),
    ({"question": "q", "tit_for_tat": 4}, "tit_for_tat"),
    ({"question": "q", "seed": 2**63}, "seed"),
    ({"question": "q", "seed": -1}, "seed"),
    # numbers must be finite
    ({"question": "q", "timeout_s": math.inf}, "timeout_s"),
    ({"question": "q", "retry_base_delay": math.nan}, "retry_base_delay"),
    ({"question": "q", "retry_max_wait_s": -math.inf}, "retry_max_wait_s"),
    ({"question": "q", "consensus_threshold": math.nan}, "consensus_threshold"),
    ({"question": "q", "confidence": "yes"}, "confidence"),
]


@pytest.mark.parametrize("data, field", HOSTILE, ids=[f"{i}-{field[:20]}" for i, (_, field) in enumerate(HOSTILE)])
def test_hostile_configs_name_the_field_in_a_short_message(data, field):
    error = refused(data)
    assert error.field == field
    assert str(error).startswith(f"{field}: ") and "\n" not in str(error)


def test_hints_name_the_setting_meant():
    assert "did you mean 'model'?" in refused({"question": "q", "agents": agents({"label": "A", "modle": "x"})}).message
    assert "setting names must be text" in refused({1: "x", "question": "q"}).message
    assert "also the label of agents[0]" in refused({"question": "q", "agents": agents({"label": "A"},
                                                                                       {"label": "A"})}).message


@pytest.mark.parametrize("change", [
    {"rounds": 100, "max_rounds": 100}, {"seed": 0}, {"seed": 2**63 - 1}, {"memory_window": 1000},
    {"cumulative_points": 1_000_000}, {"vote_retries": 10}, {"retry_attempts": 20}, {"max_concurrency": 64},
    {"debate_subrounds": 20}, {"question": "x" * 100_000, "task": "t" * 100_000},
    {"agents": agents(*({"label": f"A{i}", "max_tokens": 1_000_000, "persona": "p" * 100_000} for i in range(32)))},
])
def test_values_at_the_bounds_are_accepted(change):
    cfg = DebateConfig.from_dict({**VALID, **change})
    assert DebateConfig.from_dict(cfg.to_dict()) == cfg


def test_check_models_false_checks_everything_but_model_availability():
    unknown = {**VALID, "agents": agents({"label": "A", "model": "openai/gpt-4o"},
                                         {"label": "B", "model": "scripted/gone"})}
    assert refused(unknown).field == "agents[1].model"
    cfg = DebateConfig.from_dict(unknown, check_models=False)
    assert [a.model for a in cfg.agents] == ["openai/gpt-4o", "scripted/gone"]
    with pytest.raises(ConfigError) as err:
        DebateConfig.from_dict({**unknown, "agents": agents({"label": "A", "model": ""})}, check_models=False)
    assert err.value.field == "agents[0].model"
    with pytest.raises(ConfigError) as err:
        DebateConfig.from_dict({**unknown, "rounds": 0}, check_models=False)
    assert err.value.field == "rounds"


# ----- the YAML alias bomb ----------------------------------------------------------------------
@pytest.mark.parametrize("where, field", [
    ("question: {bomb}", "question"),
    ("question: q\ntask: {bomb}", "task"),
    ("question: q\nagents: {bomb}", "agents[0]"),
    ("question: q\nagents: [{{label: {bomb}}}]", "agents[0].label"),
    ("question: q\nagents: [{{label: A, model: {bomb}}}]", "agents[0].model"),
    ("question: q\nagents: [{{label: A, persona: {bomb}}}]", "agents[0].persona"),
    ("question: q\nprotocol: {bomb}", "protocol"),
    ("question: q\nrounds: {bomb}", "rounds"),
    ("question: q\njudge_model: {bomb}", "judge_model"),
    ("question: q\nsurprise: {bomb}", "surprise"),
    ("{bomb}: 1\nquestion: q", "config"),  # a list as a key: YAML itself refuses it
])
def test_an_alias_bomb_is_never_expanded(where, field):
    DebateConfig.from_dict(VALID)  # load the model layer first: the time bound is for the bomb alone
    text = where.format(bomb=alias_bomb())
    assert len(text) < 400
    started = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        load_config(text)
    assert time.perf_counter() - started < 1.0
    assert err.value.field == field and len(str(err.value)) < 500


# ----- load_config: files and text ---------------------------------------------------------------
def test_load_config_reads_a_path_or_text(tmp_path):
    path = tmp_path / "debate.yaml"
    path.write_text("question: From a file?\nagents: [{label: A, model: scripted/echo}]\n", encoding="utf-8")
    assert load_config(path).question == "From a file?"
    assert load_config(str(path)).question == "From a file?"
    # A long single line is YAML/JSON text, not a path ("File name too long" must not escape).
    line = '{"question": "' + "Why " * 200 + '?", "agents": [{"label": "A", "model": "scripted/echo"}]}'
    assert len(line.encode()) > 255 and load_config(line).question.startswith("Why Why")


def test_field_names_stay_short_whatever_the_key():
    error = refused({"question": "q", "x" * 10_000: 1})
    assert error.field.startswith("'xxx") and len(error.field) <= 40 and "unknown setting" in error.message


@pytest.mark.parametrize("source, words", [
    ("nope.yaml", "or the path of an existing file"),
    ("[unclosed", "not valid YAML/JSON"),
    ("rounds: " + "9" * 5000 + "\nquestion: q", "cannot be read"),
    ("[" * 5000, "nested too deeply"),
    ("a: " + "{b: " * 3000, "nested too deeply"),
    ("x" * 300, "must hold a mapping"),
    (b"question: \xff\xfe", "not valid YAML/JSON"),
    (42, "expected a file path or YAML/JSON text"),
    ("- a\n- list\n", "must hold a mapping"),
])
def test_unreadable_sources_are_config_errors(source, words):
    error = refused_source(source)
    assert error.field == "config" and words in error.message


def refused_source(source) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load_config(source)
    assert len(str(err.value)) <= SHORT and "\n" not in str(err.value)
    return err.value


def test_unreadable_files_are_config_errors(tmp_path, monkeypatch):
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes("question: Café?\n".encode("latin-1"))
    assert "not UTF-8 text (byte 0xe9 at offset 13)" in refused_source(latin).message
    assert "cannot read" in refused_source(tmp_path / "missing.yaml").message
    assert "cannot read" in refused_source(tmp_path).message  # a directory
    monkeypatch.setattr("mad_core.config.MAX_CONFIG_BYTES", 100)
    big = tmp_path / "big.yaml"
    big.write_text("question: " + "x" * 200, encoding="utf-8")
    assert "larger than 100 bytes" in refused_source(big).message
    with_bom = tmp_path / "bom.yaml"
    with_bom.write_bytes("\ufeffquestion: q\nagents: [{label: A, model: scripted/echo}]\n".encode("utf-8"))
    monkeypatch.setattr("mad_core.config.MAX_CONFIG_BYTES", 10_000)
    assert load_config(with_bom).question == "q"


# ----- the CLI ----------------------------------------------------------------------------------
@pytest.mark.parametrize("content, field, words", [
    ("question: Café?\n".encode("latin-1"), "config", "not UTF-8 text"),
    (f"question: {alias_bomb()}\n".encode(), "question", "expected str"),
    (b"question: q\n1: x\n", "1", "setting names must be text"),
    (b"question: q\nagents: [{label: [a, b]}]\n", "agents[0].label", "expected str"),
    (b"question: q\nagents: [{label: A, 2: x}]\n", "agents[0].2", "setting names must be text"),
    (b"question: q\nseed: 1e400\n", "seed", "expected a whole number"),
    (b"question: q\ntimeout_s: .inf\n", "timeout_s", "finite"),
])
def test_cli_run_refuses_a_bad_config_file_in_one_line(capsys, tmp_path, content, field, words):
    path = tmp_path / "debate.yaml"
    path.write_bytes(content)
    code = main(["run", "--config", str(path), "--model", ECHO])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"error: {field}: ") and words in err
    assert err.count("\n") == 1 and len(err) < 500
    assert not default_db_path().exists()  # nothing was written, not even an empty database


# ----- properties --------------------------------------------------------------------------------
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
           | st.sampled_from([2**63, -(2**63) - 1, 10**400, "x" * 100_001, "\ud800", "scripted/echo", "Agent 1"]))
JSON_LIKE = st.recursive(
    SCALARS,
    lambda inner: (st.lists(inner, max_size=5)
                   | st.dictionaries(st.text(max_size=12) | st.integers(), inner, max_size=5)),
    max_leaves=25,
)
AGENT_FIELDS = ("label", "model", "persona", "temperature", "max_tokens")


def outcome(data) -> DebateConfig | None:
    """from_dict's result (None when refused); anything but a short ConfigError fails the test."""
    try:
        cfg = DebateConfig.from_dict(data)
    except ConfigError as exc:
        assert exc.field and len(str(exc)) <= SHORT and "\n" not in str(exc)
        return None
    assert DebateConfig.from_dict(cfg.to_dict()) == cfg  # what was accepted stays valid
    return cfg


@given(JSON_LIKE)
def test_any_json_like_value_is_a_config_or_a_config_error(value):
    outcome(value)
    outcome({"question": "q", "agents": value})
    outcome({"question": value, "agents": agents({"label": "A"})})


@given(st.data())
def test_any_mutation_of_a_valid_config_is_a_config_or_a_config_error(data):
    config = copy.deepcopy(VALID)
    names = sorted(DebateConfig.__dataclass_fields__) + ["surprise"]
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        if data.draw(st.booleans(), label="in an agent"):
            agent = config["agents"][data.draw(st.integers(0, len(config["agents"]) - 1), label="agent")]
            target, key = agent, data.draw(st.sampled_from(AGENT_FIELDS + ("surprise", 7)), label="agent key")
        else:
            target, key = config, data.draw(st.sampled_from(names), label="key")
        if data.draw(st.integers(0, 4), label="delete?") == 0:
            target.pop(key, None)
        else:
            target[key] = data.draw(JSON_LIKE, label="value")
        agents_now = config.get("agents")
        if not isinstance(agents_now, list) or not agents_now or not all(isinstance(a, dict) for a in agents_now):
            break
    outcome(config)


def test_problems_give_the_first_cause_not_the_rule_over_a_field_already_at_fault():
    data = {"question": "q", "agents": [{"label": "A", "model": "scripted/x"}], "rounds": 100000000, "max_rounds": 2}
    assert [exc.field for exc in DebateConfig.problems(data, check_models=False)] == ["rounds"]
    # the rule itself still holds when rounds is fine
    fine = {**data, "rounds": 3}
    assert [(e.field, e.message) for e in DebateConfig.problems(fine, check_models=False)] == [
        ("max_rounds", "must be at least rounds (3), got 2")]
