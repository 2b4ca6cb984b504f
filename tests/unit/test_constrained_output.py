"""Constrained output and generation settings (issue 8), through the scripted model and litellm.

For every short reply (ballots of each voting protocol, agreements, final-answer extractions,
the judge's verdicts and choices): the exact JSON-schema `response_format` a backend with
constrained output receives, none for a backend without it, JSON replies read right, JSON
that breaks the schema recorded as an invalid ballot with its reason, and the text readers
unchanged as the fallback. Then the per-phase token limits (`config.PHASE_MAX_TOKENS`) and
the repeat penalty that only local models get.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import mad_core.models
from mad_core import DebateConfig
from mad_core.answers import extracted_answer, json_reply, parse_agreement
from mad_core.config import LOCAL_SAMPLING, PHASE_MAX_TOKENS, reply_max_tokens
from mad_core.context import read_label_choice
from mad_core.events import ChallengeResult, DecisionReached, VoteCast
from mad_core.models import call_model, response_format_support
from mad_core.protocols.ballots import Ballot, Verdict, parse_ballot, read_judge_verdict
from mad_core.protocols.schemas import ballot_format, extraction_format, portable, worst_case_tokens
from tests import builders
from tests.builders import of, run

sys.path.insert(0, str(Path(__file__).parent))
from openai_server import OpenAIServer  # noqa: E402

LABELS = ["Agent 1", "Agent 2", "Agent 3"]
ANSWERS = {"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Nice"}


def _format(name: str, properties: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": {
        "type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}}}


NUMBER = {"type": "integer", "enum": [1, 2, 3]}
SIMPLE = _format("simple_ballot", {"vote": NUMBER})
APPROVAL = _format("approval_ballot", {"approved": {"type": "array", "items": NUMBER, "minItems": 1, "maxItems": 3,
                                                    "uniqueItems": True}})
RANKED = _format("ranked_ballot", {"ranking": {"type": "array", "items": NUMBER, "minItems": 1, "maxItems": 3,
                                               "uniqueItems": True}})
CUMULATIVE = _format("cumulative_ballot", {str(n): {"type": "integer", "minimum": 0, "maximum": 10} for n in (1, 2, 3)})
EXTRACTION = _format("final_answer", {"answer": {"type": "string", "maxLength": 160}})
AGREEMENT = _format("agreement", {"agree": {"type": "boolean"}, "reason": {"type": "string", "maxLength": 100}})
# A judge outside two-sided debates names a participant (or none), never a side (tests/unit/test_mad_debaters.py).
VERDICT = _format("judge_verdict", {"decision": {"type": "string", "enum": ["YES", "NO"]},
                                    "participant": {"type": "string", "enum": [*LABELS, "none"]},
                                    "answer": {"type": "string", "maxLength": 160},
                                    "reason": {"type": "string", "maxLength": 240}})
CHOICE = _format("judge_choice", {"choice": {"type": "string", "enum": LABELS}})


def replies(**by_format):
    """A debater that answers in JSON when it gets a schema (by_format: schema name -> reply, or a
    function agent -> reply) and in text otherwise; discussion turns end with `Final answer: X`."""
    def reply(messages, info):
        meta, response_format = info["metadata"], info["response_format"]
        agent = meta["agent"]
        if response_format is not None:
            chosen = by_format[response_format["json_schema"]["name"]]
            return chosen(agent) if callable(chosen) else chosen
        if meta["kind"] == "extraction":
            return ANSWERS.get(agent, "Paris")
        if meta["kind"] == "vote":
            return "2"
        if meta["kind"] == "challenge":
            return "AGREE"
        if meta["kind"] == "judge":
            return "Decision: YES\nChosen participant: Agent 2\nAnswer: Lyon"
        return f"My reasoning as {agent}, at some length.\nFinal answer: {ANSWERS.get(agent, 'Paris')}"
    return reply


JSON_REPLIES = {
    "simple_ballot": '{"vote": 2}',
    "approval_ballot": '{"approved": [2, 3]}',
    "ranked_ballot": '{"ranking": [2, 1, 3]}',
    "cumulative_ballot": '{"1": 3, "2": 7, "3": 0}',
    "final_answer": lambda agent: json.dumps({"answer": ANSWERS[agent]}),
    "agreement": '{"agree": false, "reason": "Lyon is not the capital."}',
    "judge_verdict": '{"decision": "YES", "participant": "Agent 2", "answer": "Lyon", '
                     '"reason": "Agent 2 argued it."}',
    "judge_choice": '{"choice": "Agent 2"}',
}


def config(model: str, **settings) -> DebateConfig:
    agents = [{"label": label, "model": model, "max_tokens": 200} for label in LABELS]
    return builders.config(model, **{"agents": agents, "rounds": 1, "max_rounds": 1, "vote_retries": 0, **settings})


def sent(script, kind: str) -> list:
    """The response_format of each call of `kind`."""
    return [call["response_format"] for call in script.history if call["metadata"]["kind"] == kind]


# ----- the exact schema per kind, and none without support ---------------------------------------
SCENARIOS = {  # name: (settings, {kind: the response_format of its calls})
    "simple_voting": ({"protocol": "simple_voting"}, {"vote": SIMPLE, "extraction": EXTRACTION}),
    "approval_voting": ({"protocol": "approval_voting"}, {"vote": APPROVAL, "extraction": EXTRACTION}),
    "ranked_voting": ({"protocol": "ranked_voting"}, {"vote": RANKED, "extraction": EXTRACTION}),
    "cumulative_voting": ({"protocol": "cumulative_voting"}, {"vote": CUMULATIVE, "extraction": EXTRACTION}),
    "challenge": ({"protocol": "solution_counting", "challenge": True, "extract_final_answers": False},
                  {"challenge": AGREEMENT}),
    "judge_verdict": ({"protocol": "judge"}, {"judge": VERDICT}),
    "judge_choice": ({"protocol": "judge", "judge_adaptive_break": False}, {"judge": CHOICE, "extraction": EXTRACTION}),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_short_reply_gets_its_exact_schema_and_discussion_turns_none(script, name):
    settings, expected = SCENARIOS[name]
    model, scripted = script(replies(**JSON_REPLIES), json_schema=True)
    run(config(model, judge_model=model, **settings))
    for kind, response_format in expected.items():  # (a challenger's own answer follows in words: below)
        formats = sent(scripted, kind)
        if kind == "challenge":
            formats = formats[:3]
        assert formats == [response_format] * len(LABELS if kind in ("vote", "extraction", "challenge") else [1])
    assert set(sent(scripted, "discussion")) == {None}  # agents write freely


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_backend_without_constrained_output_gets_no_schema(script, name):
    settings, expected = SCENARIOS[name]
    model, scripted = script(replies(**JSON_REPLIES))  # json_schema not declared
    run(config(model, judge_model=model, **settings))
    assert all(sent(scripted, kind) for kind in expected)
    assert {call["response_format"] for call in scripted.history} == {None}


def test_the_challengers_own_answer_is_free_text(script):
    model, scripted = script(replies(**JSON_REPLIES), json_schema=True)
    events = run(config(model, protocol="solution_counting", challenge=True, extract_final_answers=False))
    assert sent(scripted, "challenge") == [AGREEMENT] * 3 + [None] * 3  # the dissenters then answer in words
    assert [(c.agent, c.agrees) for c in of(events, ChallengeResult)] == [(a, False) for a in LABELS]


# ----- JSON replies are read ---------------------------------------------------------------------
@pytest.mark.parametrize("protocol, ballots, winner", [
    ("simple_voting", [1, 1, 1], 1),
    ("approval_voting", [[1, 2]] * 3, None),  # 2 and 3 tie: another round is needed, none is left
    ("ranked_voting", [[1, 0, 2]] * 3, 1),
    ("cumulative_voting", [{0: 3, 1: 7, 2: 0}] * 3, 1),
])
def test_json_ballots_are_read(script, protocol, ballots, winner):
    model, _ = script(replies(**JSON_REPLIES), json_schema=True)
    events = run(config(model, protocol=protocol))
    votes = of(events, VoteCast)
    assert [v.ballot for v in votes] == ballots and all(v.valid for v in votes)
    decision = of(events, DecisionReached)[0]
    assert decision.solutions == ["Paris", "Lyon", "Nice"]  # {"answer": ...} extractions
    if winner is not None:
        assert (decision.winner_index, decision.answer, decision.fallback) == (winner, "Lyon", None)


def test_json_verdict_and_choice_are_read(script):
    model, _ = script(replies(**JSON_REPLIES), json_schema=True)
    verdict = of(run(config(model, judge_model=model, protocol="judge")), DecisionReached)[0]
    assert (verdict.answer, verdict.winner_agent) == ("Lyon", "judge")
    assert {k: verdict.details[k] for k in ("side", "side_agent", "reason")} == \
        {"side": None, "side_agent": "Agent 2", "reason": "Agent 2 argued it."}
    choice = of(run(config(model, judge_model=model, protocol="judge", judge_adaptive_break=False)),
                DecisionReached)[0]
    assert (choice.winner_agent, choice.answer, choice.fallback) == ("Agent 2", "Lyon", None)


# ----- JSON that breaks the schema is an invalid ballot with its reason -------------------------
@pytest.mark.parametrize("protocol, reply, reason", [
    ("simple_voting", '{"vote": 7}', "solution 7 does not exist (there are 3)"),
    ("simple_voting", '{"vote": "second"}', "'second' is not a solution number"),
    ("approval_voting", '{"approved": [1, 3, 1]}', "solution 1 is approved more than once"),
    ("approval_voting", '{"approved": []}', "no solution approved"),
    ("ranked_voting", '{"ranking": [2, 2, 1]}', "solution 2 is ranked more than once"),
    ("cumulative_voting", '{"1": 6, "2": 6, "3": 0}', "points sum to 12, more than the 10 allowed"),
    ("cumulative_voting", '{"1": 6, "2": -1, "3": 0}', "solution 2 is given negative points (-1)"),
])
def test_json_that_breaks_the_schema_is_recorded_invalid(script, protocol, reply, reason):
    name = ballot_format(protocol, 3, 10).name
    model, _ = script(replies(**{**JSON_REPLIES, name: reply}), json_schema=True)
    votes = of(run(config(model, protocol=protocol)), VoteCast)
    assert [(v.valid, v.ballot, v.reason) for v in votes] == [(False, None, reason)] * 3


def test_an_unreadable_constrained_reply_is_re_asked(script):
    """The vote re-ask stays: a reply cut off mid-JSON (token limit) is invalid, then asked again."""
    calls = []

    def vote(agent):
        calls.append(agent)
        return '{"vote": ' if calls.count(agent) == 1 else '{"vote": 3}'
    model, _ = script(replies(**{**JSON_REPLIES, "simple_ballot": vote}), json_schema=True)
    votes = of(run(config(model, protocol="simple_voting", vote_retries=1)), VoteCast)
    assert [(v.attempt, v.valid, v.ballot) for v in votes] == [(1, False, None)] * 3 + [(2, True, 2)] * 3
    assert votes[0].reason == "no solution number found"


def test_a_backend_that_ignores_the_schema_is_read_as_text(script):
    text = replies()
    model, _ = script(lambda messages, info: text(messages, {**info, "response_format": None}),
                      json_schema=True)  # text replies although a schema is sent
    events = run(config(model, protocol="simple_voting"))
    assert [v.ballot for v in of(events, VoteCast)] == [1, 1, 1]
    assert of(events, DecisionReached)[0].answer == "Lyon"


# ----- parsers: JSON first, text as the fallback ---------------------------------------------------
@pytest.mark.parametrize("protocol, reply, ballot", [
    ("simple_voting", '{"vote": 2}', Ballot(1, True)),
    ("simple_voting", '```json\n{"vote": 3}\n```', Ballot(2, True)),
    ("simple_voting", '<think>1 or 3?</think>{"vote": 1}', Ballot(0, True)),
    ("judge", '{"vote": 2}', Ballot(1, True)),
    ("approval_voting", '{"approved": [3, 1]}', Ballot([2, 0], True)),
    ("ranked_voting", '{"ranking": [3, 1, 2]}', Ballot([2, 0, 1], True)),
    ("cumulative_voting", '{"1": 10, "2": 0, "3": 0}', Ballot({0: 10, 1: 0, 2: 0}, True)),
    ("simple_voting", '{"vote": 2, "vote": 3}', Ballot(None, False, "ambiguous vote: the reply names several "
                                                                     "solutions (2, 3)")),  # no JSON: text
    ("approval_voting", '{"approved": "1, 2"}', Ballot(None, False, "\"approved\" must be a list of solution "
                                                                    "numbers, got '1, 2'")),
    ("ranked_voting", '{"ranking": [1, 2, 4]}', Ballot(None, False, "solution 4 does not exist (there are 3)")),
])
def test_parse_ballot_reads_the_json_form_first(protocol, reply, ballot):
    assert parse_ballot(protocol, reply, 3) == ballot


@pytest.mark.parametrize("protocol, reply, ballot", [  # the text readers, unchanged
    ("simple_voting", "I vote for Solution 2.", Ballot(1, True)),
    ("approval_voting", "1, 3", Ballot([0, 2], True)),
    ("approval_voting", "1, 3, 1", Ballot([0, 2], True)),  # a repeated approval in text still counts once
    ("ranked_voting", "2 > 3 > 1", Ballot([1, 2, 0], True)),
    ("cumulative_voting", 'Here: {"1": 6, "2": 4}', Ballot({0: 6, 1: 4}, True)),
    ("simple_voting", 'I pick {"vote": 2} or maybe 3', Ballot(None, False, "ambiguous vote: the reply names "
                                                                           "several solutions (2, 3)")),
])
def test_text_replies_are_read_as_before(protocol, reply, ballot):
    assert parse_ballot(protocol, reply, 3) == ballot


def test_verdicts_agreements_extractions_and_choices_read_json_first():
    assert read_judge_verdict('{"decision": "NO", "side": "Affirmative", "answer": "", "reason": "not yet"}') == \
        Verdict(False, "", "affirmative", "not yet")
    assert read_judge_verdict('{"decision": "YES", "side": "Negative", "answer": "say \\"42\\"", "reason": ""}') == \
        Verdict(True, 'say "42"', "negative", "")
    assert read_judge_verdict("Decision: YES\nAnswer: 4") == Verdict(True, "4", None, "")  # text, as before
    assert parse_agreement('{"agree": false, "reason": "I agree with none of it"}') is False
    assert parse_agreement('{"agree": true, "reason": "It is corr') is True  # cut off by the token limit
    assert parse_agreement('{"agree": false, "reason": "') is False
    assert parse_agreement("I agree.") is True and parse_agreement("DISAGREE, it is Lyon.") is False
    assert extracted_answer('{"answer": "  Paris "}') == "Paris"
    assert extracted_answer('{"answer": "Par') == ""  # unreadable: the caller falls back on the draft
    assert extracted_answer("  Paris\n") == "Paris"  # text, as before
    assert read_label_choice('{"choice": "Agent 2"}', LABELS) == Ballot(1, True)
    assert read_label_choice('{"choice": "agent 3"}', LABELS) == Ballot(2, True)
    assert read_label_choice('{"choice": "Agent 9"}', LABELS) == \
        Ballot(None, False, "'Agent 9' is not one of the participants (Agent 1, Agent 2, Agent 3)")
    assert read_label_choice("Agent 3 wrote the best draft.", LABELS) == Ballot(2, True)


@pytest.mark.parametrize("text", ['{"a": 1', '[1]', '{"a": 1} and more', "{" * 5000 + "}" * 5000,
                                  '{"a": ' + "9" * 5000 + "}", '{"a": 1, "a": 2}', "", None, "\ud800{}"])
def test_json_reply_is_none_unless_the_whole_reply_is_one_object(text):
    assert json_reply(text) is None


def test_an_unreadable_extraction_falls_back_on_the_draft(script):
    model, _ = script(replies(**{**JSON_REPLIES, "final_answer": '{"answer": "Lyo'}), json_schema=True)
    decision = of(run(config(model, protocol="simple_voting")), DecisionReached)[0]
    assert decision.solutions == ["Paris", "Lyon", "Nice"]  # each draft's `Final answer:` line


# ----- which backends get a schema, and which schema -----------------------------------------------
def test_response_format_support_by_backend(script):
    plain, _ = script(["x"])
    constrained, _ = script(["x"], json_schema=True)
    assert [response_format_support(m) for m in (
        "local/smollm2-135m", "hosted_vllm/my-model", constrained, plain, "hf/tiny", "callable/f",
        "openai/gpt-4o-mini", "ollama/llama3.2", "nosuchprovider/x")] == \
        ["full", "full", "full", None, None, None, "subset", None, None]


def test_a_hosted_strict_mode_gets_the_schema_without_length_and_size_keywords():
    schema = ballot_format("approval_voting", 3, 10)
    assert schema.response_format("subset") == _format("approval_ballot", {"approved": {"type": "array",
                                                                                        "items": NUMBER}})
    assert extraction_format().response_format("subset") == _format("final_answer", {"answer": {"type": "string"}})
    assert schema.response_format(None) is None and schema.response_format("full") == APPROVAL
    assert portable({"enum": [1], "maxLength": 3, "minimum": 0}) == {"enum": [1]}


def test_call_model_sends_response_format_and_extra_to_a_custom_provider(script):
    model, scripted = script(["{}"])
    call_model(model, [{"role": "user", "content": "?"}], response_format=SIMPLE, extra={"repeat_penalty": 1.2})
    call_model(model, [{"role": "user", "content": "?"}])
    assert [(c["response_format"], c["extra"]) for c in scripted.history] == \
        [(SIMPLE, {"repeat_penalty": 1.2}), (None, {})]


# litellm's stream wrapper reads pydantic fields the deprecated way (litellm 1.106.2).
remote = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")


@pytest.fixture
def server(monkeypatch):
    """A fake OpenAI-compatible server behind openai/ and hosted_vllm/ model names."""
    with OpenAIServer("fake", lambda messages: '{"vote": 2}') as fake:
        monkeypatch.setenv("OPENAI_API_BASE", fake.api_base)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key-0000")
        monkeypatch.setenv("HOSTED_VLLM_API_BASE", fake.api_base)
        yield fake


@remote
def test_remote_models_get_response_format_and_never_the_local_extras(server, monkeypatch):
    for model in ("openai/gpt-4o-mini", "hosted_vllm/my-model"):
        result = call_model(model, [{"role": "user", "content": "?"}], response_format=SIMPLE,
                            extra={"repeat_penalty": 1.2}, max_tokens=48)
        assert (result.status, result.text) == ("ok", '{"vote": 2}')
        body = server.requests[-1]["body"]
        assert (body["response_format"], body["max_tokens"]) == (SIMPLE, 48)
        assert "repeat_penalty" not in json.dumps(body)


@remote
def test_a_local_model_gets_the_extras_in_its_request_body(server, monkeypatch):
    """`local/` goes to llama.cpp's server through litellm's OpenAI provider (models.stream._route); here
    the route is pointed at the fake server, so the request body llama.cpp would get is checked."""
    from mad_core.models import local_gguf

    monkeypatch.setattr(local_gguf, "route", lambda name, options: (
        "openai/" + name, {**options, "api_base": server.api_base, "api_key": "local"}))
    result = call_model("local/smollm2-135m", [{"role": "user", "content": "?"}], response_format=SIMPLE,
                        extra=dict(LOCAL_SAMPLING))
    assert result.status == "ok"
    body = server.requests[-1]["body"]
    assert (body["repeat_penalty"], body["response_format"]) == (1.15, SIMPLE)


# ----- per-phase token limits and the local repeat penalty --------------------------------------------
def max_tokens_by_kind(script, agent_max_tokens: int, json_schema: bool = False, **settings) -> dict[str, set[int]]:
    model, scripted = script(replies(**JSON_REPLIES), json_schema=json_schema)
    cfg = config(model, judge_model=model, **settings)
    run(cfg.copy(agents=[{"label": a.label, "model": model, "max_tokens": agent_max_tokens} for a in cfg.agents]))
    found: dict[str, set[int]] = {}
    for call in scripted.history:
        found.setdefault(call["metadata"]["kind"], set()).add(call["max_tokens"])
    return found


def test_each_phase_gets_its_token_limit(script):
    assert PHASE_MAX_TOKENS == {"ballot": 24, "agreement": 48, "extraction": 64, "choice": 32, "verdict": 192}
    assert max_tokens_by_kind(script, 200, protocol="cumulative_voting", challenge=True) == \
        {"discussion": {200}, "extraction": {64}, "vote": {24 + 8 * 3}, "challenge": {48}}  # all agree
    assert max_tokens_by_kind(script, 200, protocol="judge") == {"discussion": {200}, "judge": {192}}
    assert max_tokens_by_kind(script, 200, protocol="judge", judge_adaptive_break=False) == \
        {"discussion": {200}, "extraction": {64}, "judge": {32}}


def test_no_phase_gets_more_than_the_agents_max_tokens(script):
    assert max_tokens_by_kind(script, 40, protocol="simple_voting") == \
        {"discussion": {40}, "extraction": {40}, "vote": {40}}
    assert reply_max_tokens(None, 300) == 300 and reply_max_tokens("ballot", 300, 5) == 64


def test_a_grammar_backend_gets_room_for_the_longest_reply_its_schema_allows(script):
    # llama.cpp / vLLM enforce maxLength: a reply can be no longer than the schema allows, so the
    # limit is that length (one token per character), never one that cuts the JSON mid-string.
    assert worst_case_tokens(EXTRACTION["json_schema"]["schema"]) >= 2 + 160 + len('{"answer": }')
    assert max_tokens_by_kind(script, 96, json_schema=True, protocol="judge") == \
        {"discussion": {96}, "judge": {worst_case_tokens(VERDICT["json_schema"]["schema"])}}
    assert max_tokens_by_kind(script, 96, json_schema=True, protocol="simple_voting") == \
        {"discussion": {96}, "extraction": {worst_case_tokens(EXTRACTION["json_schema"]["schema"])}, "vote": {48}}


@pytest.mark.parametrize("reply, answer", [
    ('{"decision": "YES", "side": "Affirmative", "answer": "1.1.1.1.1.1.1.1.1.1.1.1', ""),  # cut inside the answer
    ('{"decision": "YES", "side": "Affirmative", "answer": "1.5 m/s", "reason": "The harmonic mean of 1', "1.5 m/s"),
    ('{"decision": "YES", "side": "Affirmative", ', ""),
])
def test_a_verdict_cut_off_by_the_token_limit_gives_its_finished_fields_only(reply, answer):
    verdict = read_judge_verdict(reply)
    assert (verdict.decision, verdict.side) == (True, "affirmative")
    assert verdict.answer == answer  # a finished answer whole, a cut one not at all
    assert verdict.reason == ""  # never half a sentence


@pytest.mark.parametrize("text, pairs", [
    ('{"vote": 2', {}),  # the number may be cut ("2" of "25")
    ('{"vote": 2,', {"vote": 2}),
    ('{"agree": false, "reason": "Lyon is', {"agree": False}),
    ('{"a": [1, 2], "b": {"c": "d"}, "e": "f', {"a": [1, 2], "b": {"c": "d"}}),
    ('{', {}),
    ('{"a": 1, "a": 2, ', {"a": 1}),
])
def test_json_reply_partial_keeps_only_finished_pairs(text, pairs):
    assert json_reply(text, partial=True) == pairs
    assert json_reply(text) is None
    assert json_reply("Sure: " + text, partial=True) is None  # not a JSON reply at all


@pytest.mark.parametrize("text", [
    "{'decision': 'Yes', 'side': 'Negative'}\nAnswer: 9",  # MAD's Python dict, then a labelled line
    '{"decision": "YES"} and then Answer: 9',  # a whole object followed by text
    "{decision: YES",
])
def test_json_reply_partial_is_none_for_what_is_not_a_cut_off_json_object(text):
    assert json_reply(text, partial=True) is None


def test_the_repeat_penalty_reaches_local_models_free_text_turns_only(script, monkeypatch):
    model, scripted = script(replies(**JSON_REPLIES), json_schema=True)
    run(config(model, protocol="simple_voting"))
    assert {json.dumps(call["extra"]) for call in scripted.history} == {"{}"}  # not a local model: nothing

    scripted.history.clear()
    monkeypatch.setattr(mad_core.models, "is_local", lambda name: name == model)  # as if it were local/...
    run(config(model, protocol="simple_voting"))
    extras = {(call["metadata"]["kind"], json.dumps(call["extra"])) for call in scripted.history}
    assert extras == {("discussion", '{"repeat_penalty": 1.15}'), ("extraction", "{}"), ("vote", "{}")}
