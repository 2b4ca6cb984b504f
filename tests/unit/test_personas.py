"""Generated expert personas: a structured list, validated, re-asked within a bound, a reason on give-up.

The junk below is what the default model (SmolLM2-135M) gave to the old one-persona prompt: the
prompt's own first line and an answer to the question.
"""
from __future__ import annotations

import json

import pytest

from mad_core import DebateConfig, DebateEngine
from mad_core.events import DebateFinished, ErrorOccurred, PersonasAssigned, TurnFinished
from mad_core.personas import PERSONA_WORDS, generate_personas, neutral, read_personas
from mad_core.prompts import persona_list_prompt, persona_retry_prompt

QUESTION = "Is 10:1 a prime number ratio? Answer yes or no."
GOOD = ["Number theorist: studies primes and divisibility", "Math teacher: explains ratios to students",
        "Logician: checks each step of an argument"]
JUNK_PROMPT = "We are assembling a panel of experts to discuss this question."
JUNK_ANSWER = "A: 10:1 is not a prime number"


def as_json(personas) -> str:
    return json.dumps({"personas": personas})


def request_text(n=3, taken=()):
    return "\n".join(m["content"] for m in persona_list_prompt(QUESTION, "", n, list(taken), PERSONA_WORDS))


def read(text, n=3, **kwargs):
    return read_personas(text, n, QUESTION, request=request_text(n), **kwargs)


# ----- reading one reply ------------------------------------------------------------------------------
def test_a_json_list_of_experts_is_accepted():
    assert read(as_json(GOOD)).personas == GOOD


def test_role_and_description_objects_are_read_as_role_colon_description():
    entries = [{"role": p.split(": ")[0], "description": p.split(": ")[1]} for p in GOOD]
    assert read(json.dumps({"personas": entries})).personas == GOOD


def test_numbered_lines_are_the_fallback_and_a_preamble_is_left_out():
    text = "Here are three experts:\n1. " + GOOD[0] + "\n2) " + GOOD[1] + "\n- " + GOOD[2]
    assert read(text).personas == GOOD


@pytest.mark.parametrize("junk, reason", [
    (JUNK_PROMPT, "persona 1 copies the request"),
    (JUNK_PROMPT.rstrip(".") + "…", "persona 1 copies the request"),
    (JUNK_ANSWER, "persona 1 reads like an answer"),
    ("Answer: no", "persona 1 reads like an answer"),
    ("Ratio expert who knows 10:1 well", "uses the question's number 10:1"),
    ("Is 10:1 a prime number ratio?", "repeats the question"),
    ("I think the answer is no", "talks about the task"),
    ("", "persona 1 is empty"),
    ("<expert 1>", "persona 1 is a placeholder"),  # SmolLM2 copied the prompt's placeholder
    ("Mentor 1", "persona 1 is too short to describe an expert"),  # ...or gave a slot or a bare name
    ("Ava Adamec", "persona 1 is too short to describe an expert"),
    ("Expert " + "very " * 25 + "wise", "persona 1 is too long"),
])
def test_junk_is_refused_with_a_reason(junk, reason):
    found = read(as_json([junk, GOOD[1], GOOD[2]]))
    assert found.personas is None
    assert reason in found.reason


def test_the_wrong_count_duplicates_options_and_taken_experts_are_refused():
    assert read(as_json(GOOD[:2])).reason == "expected 3 personas, one per agent, got 2"
    assert read(as_json([GOOD[0], GOOD[0].upper(), GOOD[2]])).reason == \
        "persona 2 is the same expert as persona 1"
    assert "same expert as persona 1" in read(as_json([GOOD[0], "Number theorist: another one", GOOD[2]])).reason
    assert "same expert as a persona already on the panel" in read(as_json(GOOD), taken=["Logician: a different one"]).reason
    assert "names the option 'Paris'" in read_personas(as_json(["Guide who loves Paris", GOOD[1], GOOD[2]]), 3,
                                                       "Capital of France?", options=["Paris", "Lyon"]).reason


@pytest.mark.parametrize("text", ["null", "{", '{"personas": {"a": 1}}', '{"personas": [null, 3, ["x"]]}',
                                  "[[[[[[[[[[[[]]]]]]]]]]]]" * 50, "\x00\x01", '{"personas": "' + "x" * 10_000 + '"}'])
def test_reading_never_raises(text):
    found = read(text)
    assert found.personas is None and found.reason


# ----- the request loop ---------------------------------------------------------------------------------
class Asker:
    """An injected model call that answers from a list and records what it was asked."""

    def __init__(self, *replies):
        self.replies, self.asked = list(replies), []

    def __call__(self, messages, reply):
        self.asked.append((messages, reply))
        text = self.replies.pop(0)
        return (None, text[len("FAIL:"):]) if text.startswith("FAIL:") else (text, "")


def test_personas_are_asked_one_at_a_time_each_request_showing_the_panel_so_far():
    """Seed 000 App. C / MALLM's ExpertGenerator: one persona per request, each request showing the
    personas generated so far; a refused reply is re-asked with the reason and the exact prompt."""
    ask = Asker(as_json([JUNK_PROMPT]), as_json([JUNK_ANSWER]), as_json([GOOD[0]]), as_json([GOOD[1]]),
                as_json([GOOD[2]]))
    result = generate_personas(QUESTION, "", ["A", "B", "C"], ask)
    assert result.ok and result.attempts == 5
    assert result.personas == dict(zip("ABC", GOOD))
    first = persona_list_prompt(QUESTION, "", 1, [], PERSONA_WORDS)
    assert ask.asked[0][0] == first
    reason = f"persona 1 copies the request instead of describing an expert ({JUNK_PROMPT!r})"
    assert ask.asked[1][0] == [*first, {"role": "assistant", "content": as_json([JUNK_PROMPT])},
                               {"role": "user", "content": persona_retry_prompt(reason, 1, PERSONA_WORDS)}]
    assert ask.asked[1][0][-1]["content"] == (
        f"That reply cannot be used: {reason}. Try again: one short expert description (at most 20 words), "
        'not an answer or a copy of the question. Reply with JSON only: {"personas": [...]}')
    assert "persona 1 reads like an answer, not an expert ('A: 10:1 is not a prime number')" in \
        ask.asked[2][0][-1]["content"]
    assert ask.asked[3][0] == persona_list_prompt(QUESTION, "", 1, [GOOD[0]], PERSONA_WORDS)
    assert ask.asked[4][0] == persona_list_prompt(QUESTION, "", 1, [GOOD[0], GOOD[1]], PERSONA_WORDS)
    assert f"Experts already on the panel:\n- {GOOD[0]}\n- {GOOD[1]}" in ask.asked[4][0][-1]["content"]
    assert all(reply.name == "persona_list" and reply.schema["properties"]["personas"]["maxItems"] == 1
               for _, reply in ask.asked)


def test_a_persona_already_generated_is_refused_for_the_next_agent():
    ask = Asker(as_json([GOOD[0]]), as_json([GOOD[0]]), as_json([GOOD[1]]))
    result = generate_personas(QUESTION, "", ["A", "B"], ask)
    assert result.personas == {"A": GOOD[0], "B": GOOD[1]} and result.attempts == 3
    assert "the same expert as a persona already on the panel" in ask.asked[2][0][-1]["content"]


def test_gives_up_after_two_re_asks_with_the_last_reason_and_keeps_what_was_set():
    ask = Asker(JUNK_PROMPT, JUNK_ANSWER, "FAIL:rate limited")
    result = generate_personas(QUESTION, "", ["A", "B", "C"], ask, {"B": "Chemist: bonds"})
    assert not result.ok and result.attempts == 3 and len(ask.asked) == 3  # C is never asked
    assert result.reason == "the model call failed (rate limited)"
    assert result.personas == {"B": "Chemist: bonds"}  # only what was set before
    assert "Experts already on the panel:\n- Chemist: bonds" in ask.asked[0][0][-1]["content"]
    assert ask.asked[0][1].schema["properties"]["personas"]["maxItems"] == 1  # one at a time


def test_a_stop_ends_the_requests_and_is_not_reported_as_the_models_failure():
    flag = {"stopped": False}

    def ask(messages, reply):  # the call under way is cut by the stop
        flag["stopped"] = True
        ask.calls += 1
        return None, "interrupted"

    ask.calls = 0
    result = generate_personas(QUESTION, "", ["A", "B"], ask, {"A": GOOD[0]}, stopped=lambda: flag["stopped"])
    assert result.stopped and result.reason == "stopped by a person during persona generation"
    assert result.attempts == 1 and ask.calls == 1  # must not happen: a re-ask after the stop
    assert result.personas == {"A": GOOD[0]}  # what was set is kept; nothing is made up for B
    refused = Asker(as_json([JUNK_PROMPT] * 2))  # stopped between a refused reply and its re-ask
    result = generate_personas(QUESTION, "", ["A", "B"], refused, stopped=lambda: bool(refused.asked))
    assert result.stopped and result.attempts == 1 and len(refused.asked) == 1


def test_nothing_is_asked_when_every_agent_has_a_persona():
    ask = Asker()
    assert generate_personas(QUESTION, "", ["A"], ask, {"A": "Chemist: bonds"}).personas == {"A": "Chemist: bonds"}
    assert ask.asked == []


# ----- the engine, with the scripted model through litellm ----------------------------------------------
def persona_debate(script, roles, replies, **options):
    replies = iter(replies)
    model, s = script(roles(persona=lambda m, meta: next(replies)), **options)
    agents = [{"label": f"Agent {i + 1}", "model": model} for i in range(3)]
    cfg = DebateConfig.from_dict({"question": QUESTION, "agents": agents, "auto_personas": True, "rounds": 1,
                                  "max_rounds": 1})
    events = list(DebateEngine(cfg).run())
    return events, s


def test_engine_refuses_the_default_models_junk_and_re_asks(script, roles):
    events, s = persona_debate(script, roles, [JUNK_PROMPT, as_json([JUNK_ANSWER]), *(as_json([g]) for g in GOOD)],
                               json_schema=True)
    assert [e for e in events if isinstance(e, PersonasAssigned)][0].personas == dict(
        zip(["Agent 1", "Agent 2", "Agent 3"], GOOD))
    calls = [c for c in s.history if c["metadata"]["kind"] == "persona"]
    assert len(calls) == 5
    assert calls[0]["response_format"]["json_schema"]["name"] == "persona_list"  # the structured request
    assert "persona 1 copies the request" in calls[1]["messages"][-1]["content"]
    assert "persona 1 reads like an answer" in calls[2]["messages"][-1]["content"]
    assert f"Experts already on the panel:\n- {GOOD[0]}\n- {GOOD[1]}" in calls[4]["messages"][-1]["content"]
    assert not [e for e in events if isinstance(e, ErrorOccurred)]


def test_engine_records_its_fallback_when_the_model_cannot_do_it(script, roles):
    events, _ = persona_debate(script, roles, [JUNK_PROMPT] * 3)
    assigned = [e for e in events if isinstance(e, PersonasAssigned)][0].personas
    assert assigned == {f"Agent {i + 1}": neutral(i) for i in range(3)}
    errors = [e.message for e in events if isinstance(e, ErrorOccurred)]
    assert errors == ["Personas: the model could not suggest usable personas in 3 requests (persona 1 copies the "
                      f"request instead of describing an expert ({JUNK_PROMPT!r})); Agent 1, Agent 2, Agent 3 got "
                      "a neutral persona."]
    persona_turns = [e.turn for e in events if isinstance(e, TurnFinished) and e.turn.kind == "persona"]
    assert len(persona_turns) == 3  # every request is a recorded turn


def test_engine_stopped_during_persona_generation_says_so(script, roles):
    """Stop while the persona list is being generated: the debate says it was stopped then, and
    nothing says the model could not suggest personas."""
    import threading

    model, s = script(roles(persona=lambda m, meta: as_json(GOOD)), faults={0: "hang"})
    agents = [{"label": f"Agent {i + 1}", "model": model} for i in range(3)]
    engine = DebateEngine(DebateConfig.from_dict({"question": QUESTION, "agents": agents, "auto_personas": True,
                                                  "rounds": 1, "max_rounds": 1}))

    def stop_while_asked() -> None:  # the persona call waits for its first piece: stop, then let it come
        assert s.hanging.wait(10)
        engine.controller.stop()
        s.release()

    stopper = threading.Thread(target=stop_while_asked)
    stopper.start()
    events = list(engine.run())
    stopper.join()
    finished = [e for e in events if isinstance(e, DebateFinished)]
    assert [(e.status, e.reason) for e in finished] == [("stopped", "stopped by a person during persona generation")]
    # Must not happen: a "could not suggest" error (or any error), a re-ask, a neutral persona made up.
    assert not [e.message for e in events if isinstance(e, ErrorOccurred)]
    assert len([c for c in s.history if c["metadata"]["kind"] == "persona"]) == 1
    assert not any([e for e in events if isinstance(e, PersonasAssigned)][0].personas.values())
