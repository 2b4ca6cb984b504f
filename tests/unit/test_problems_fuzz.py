"""`DebateConfig.problems` keeps its promise for ANY input: it returns ConfigErrors naming fields and
never raises, and it is empty exactly when `DebateConfig.from_dict` accepts the same input (a probe
found UnknownComponent, TypeError and ValueError on 361 of 10,000 fuzzed configs, where from_dict
rightly raised ConfigError)."""
from __future__ import annotations

import math

import pytest
from hypothesis import event, find, given, settings
from hypothesis import strategies as st

from mad_core import registry
from mad_core.config import _AGENT_SETTINGS, _SETTINGS, ConfigError, DebateConfig, short_repr

ECHO = "scripted/echo"
HUGE = 10**5000  # a number too long to print (int -> str refuses more than 4300 digits)
COMPONENTS = [name for kind in ("paradigm", "protocol", "ordering", "response_generator")
              for name in registry.names(kind)]
# Values that fit some setting: a config drawn from them is often accepted, so both answers are tested.
GOOD = {
    "question": ["Is 91 prime?", "Which gas do plants absorb?"], "task": ["", "Answer yes or no."],
    "reference": [None, "no", "B"], "answer_type": ["text", "yes_no", "choice", "number", "kks"],
    "answer_options": [None, ["Paris", "Lyon"], ["Ann", "Bo"]], "paradigm": registry.names("paradigm"),
    "response_generator": registry.names("response_generator"), "protocol": registry.names("protocol"),
    "ordering": registry.names("ordering"), "rounds": [1, 2, 3], "max_rounds": [2, 3, 5],
    "consensus_threshold": [None, 0.5, 1.0], "memory_window": [None, 0, 2], "tit_for_tat": [None, 0, 3],
    "connectivity": ["full", "ring", {"Agent 1": ["Agent 2"]}], "kks_order": ["fixed", "agreed"],
    "judge_model": [None, ECHO], "seed": [None, 0, 7], "kks_depth": [1, 2], "timeout_s": [1.0, 120.0],
    "challenge": [False, True, "history"], "confidence": [False, True],
}
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-2**70, max_value=2**70),
    st.builds(pow, st.just(10), st.just(5000)),  # HUGE (a strategy: hypothesis cannot print it either)
    st.floats(), st.sampled_from([math.nan, math.inf, -math.inf, 1e308]),
    st.text(max_size=8), st.sampled_from([*COMPONENTS, "full", "ring", "kks", ECHO, "x" * 300, "\ud800", "12"]),
)
HOSTILE = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=5) | st.sampled_from(sorted(_AGENT_SETTINGS)),
                                         inner, max_size=3), max_leaves=8)
AGENT = st.fixed_dictionaries({"label": st.sampled_from(["Agent 1", "Agent 2", "Agent 3"]) | HOSTILE},
                              optional={"model": st.just(ECHO) | HOSTILE, "persona": st.just("") | HOSTILE,
                                        "temperature": st.just(0.7) | HOSTILE,
                                        "max_tokens": st.just(256) | HOSTILE,
                                        **{"nonsense": HOSTILE}})
FINE_AGENTS = st.sampled_from([[{"label": "Agent 1", "model": ECHO}, {"label": "Agent 2", "model": ECHO}],
                                [{"label": "Agent 1", "model": ECHO}, {"label": "Agent 2", "model": ECHO},
                                 {"label": "Agent 3", "model": ECHO}]])
AGENTS = st.one_of(FINE_AGENTS, FINE_AGENTS, st.lists(AGENT | HOSTILE, max_size=3), HOSTILE)


def setting(name: str) -> st.SearchStrategy:
    if name == "agents":
        return AGENTS
    if name not in GOOD:
        return HOSTILE
    good = st.sampled_from(GOOD[name])
    return st.one_of(good, good, good, HOSTILE)  # mostly values that fit: many configs are accepted


# A config of fitting values with at most two settings of any value: near the line between the two answers.
MOSTLY_FINE = st.builds(
    lambda fine, odd: {**fine, **odd},
    st.fixed_dictionaries({"question": st.sampled_from(GOOD["question"]), "agents": FINE_AGENTS},
                          optional={name: st.sampled_from(values) for name, values in GOOD.items()
                                    if name != "question"}),
    st.dictionaries(st.sampled_from(sorted(_SETTINGS)), HOSTILE, max_size=2))
CONFIGS = st.one_of(
    MOSTLY_FINE,
    st.fixed_dictionaries({"question": setting("question")},
                          optional={name: setting(name) for name in sorted(_SETTINGS) if name != "question"}),
    st.dictionaries(st.text(max_size=6) | SCALARS.filter(lambda k: not isinstance(k, str) and k == k),
                    HOSTILE, max_size=3),  # unknown or non-text keys, no question
    HOSTILE,  # not a mapping at all
)


def accepted(data, check_models: bool) -> bool:
    """Whether from_dict accepts `data` (False: it raised ConfigError; anything else fails the test)."""
    try:
        DebateConfig.from_dict(data, check_models=check_models)
    except ConfigError:
        return False
    return True


def check_agrees(data, check_models: bool) -> None:
    found = DebateConfig.problems(data, check_models=check_models)  # must not raise
    assert isinstance(found, list) and all(isinstance(exc, ConfigError) for exc in found)
    assert all(exc.field and exc.message for exc in found)  # every problem names a field and says why
    ok = accepted(data, check_models)
    event("accepted" if ok else "refused")
    # Must not happen: problems listed for a config that runs, or none for one that is refused.
    assert (found == []) == ok, (short_repr(data, 300), [str(e) for e in found])


@settings(max_examples=400, deadline=None)
@given(CONFIGS)
def test_problems_never_raise_and_agree_with_from_dict(data):
    check_agrees(data, check_models=False)


@settings(max_examples=60, deadline=None)
@given(CONFIGS)
def test_problems_agree_with_from_dict_when_models_are_looked_up(data):
    check_agrees(data, check_models=True)


def test_the_fuzzed_configs_hold_both_accepted_and_refused_ones():
    """The property above is only worth something when the strategy reaches both answers."""
    assert accepted(find(CONFIGS, lambda d: accepted(d, False)), False)
    assert not accepted(find(CONFIGS, lambda d: not accepted(d, False) and isinstance(d, dict)
                             and "question" in d), False)


@pytest.mark.parametrize("value, field", [
    (["memory"], "paradigm"),  # unhashable: raised TypeError from the registry
    ("no_such_paradigm", "paradigm"),  # raised UnknownComponent
    (HUGE, "paradigm"),  # UnknownComponent's own message raised ValueError (int too long to print)
    ({"a": 1}, "paradigm"),
], ids=["list", "unknown", "huge-int", "mapping"])
def test_a_bad_component_name_is_a_problem_of_its_field_not_an_exception(value, field):
    for data in ({"question": "q", "paradigm": value},
                 {"question": "q", "paradigm": value, "protocol": ["judge"], "ordering": HUGE}):
        found = DebateConfig.problems(data, check_models=False)
        assert field in [exc.field for exc in found]
        with pytest.raises(ConfigError):
            DebateConfig.from_dict(data, check_models=False)


def test_nan_infinity_and_huge_numbers_are_problems_of_their_fields():
    data = {"question": "q", "consensus_threshold": math.nan, "timeout_s": math.inf, "rounds": HUGE,
            "max_rounds": "5", "seed": -HUGE}
    assert sorted(exc.field for exc in DebateConfig.problems(data, check_models=False)) == [
        "consensus_threshold", "max_rounds", "rounds", "seed", "timeout_s"]


def test_a_valid_config_has_no_problems_and_a_rule_of_a_component_still_applies():
    fine = {"question": "q", "agents": [{"label": "Agent 1", "model": ECHO}, {"label": "Agent 2", "model": ECHO}]}
    assert DebateConfig.problems(fine, check_models=False) == []
    # The component rules run at check time: two_sided still asks for a judge protocol.
    found = DebateConfig.problems({**fine, "paradigm": "two_sided"}, check_models=False)
    assert [exc.field for exc in found] == ["protocol"]
