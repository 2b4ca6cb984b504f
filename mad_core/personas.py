"""Expert personas (seed 000, after Kim et al.): one short, task-relevant expert per agent, no duplicates.

`generate_personas` asks a model for one persona at a time, each request showing the personas so
far, as JSON (`schemas.persona_list_format(1)`, sent as a `response_format` where the backend
constrains output; the prompt asks for the same JSON in words, and plain lines are read as the
fallback). `read_personas` checks a reply: exactly the descriptions asked for, each short (PERSONA_WORDS words, PERSONA_CHARS characters), not empty,
distinct from each other and from the personas already set, not a copy of the request or of the
question, and not an answer (a line such as "A: 10:1 is not a prime number", or one that uses the
question's numbers or the task's options). A refused list is re-asked at most `retries` times,
the reason told to the model; when the model still cannot do it the result says why
(`PersonaResult.reason`) and the caller decides (the form tells the user, the engine falls back
to neutral participants and records it). A stop (`stopped`, the engine's controller) ends the
requests at once: a stopped result (`PersonaResult.stopped`) is not a failure of the model, and
is never re-asked or reported as one. The model call is injected, so the engine (which
records every call as a turn) and the app's "Suggest expert personas" button share this code.

Seed 000 §3.1 and App. C generate the personas with the agents' own model (after Kim et al.),
one at a time, each request showing the personas generated so far; so does its code (MALLM's
ExpertGenerator, JSON {"role", "description"}, re-asked only when the JSON cannot be read). We
ask the same way, as one "Role: description" entry, and also check what the reply says.

What it must not do: raise on anything a model wrote (every reader returns a result or a
reason), or call a model itself.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable

from . import prompts
from .config import clip
from .protocols.schemas import PERSONA_CHARS, ReplyFormat, persona_list_format

PERSONA_WORDS = 20
MIN_WORDS = 3  # "Mentor 1", "Ava Adamec": a name or a slot, not an expertise
RETRIES = 2  # re-asks after the first request
STOPPED = "stopped by a person during persona generation"

# ask(messages, reply_format) -> (text, error): the model's reply, or None and why the call failed.
Ask = Callable[[list[dict], ReplyFormat], "tuple[str | None, str]"]

_MARKER = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.):]|\(?[a-z][.)])\s+", re.I)  # "- ", "1. ", "2) ", "a) "
_ANSWER = re.compile(r"^\s*(?:a|answer|final answer|solution|result|yes|no|true|false)\b\s*[:=.,)!-]", re.I)
_CHATTER = re.compile(r"^\s*(?:we|i|you|here|sure|okay|ok|certainly|this|these|let|the question|the answer)\b",
                      re.I)
_PLACEHOLDER = re.compile(r"<[^<>]{0,40}>")  # the prompt's "<role>" copied as it is
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_WORD = re.compile(r"\w+")


@dataclass
class PersonaList:
    """What a reply says: the personas, or None and why the reply cannot be used."""

    personas: list[str] | None
    reason: str = ""


@dataclass
class PersonaResult:
    """Personas for every label that has one (those set before are kept), and, when the model's
    list was refused every time, why (`reason`; the labels it was for then have none)."""

    personas: dict[str, str]
    reason: str = ""
    attempts: int = 0
    replies: list[str] = field(default_factory=list)
    stopped: bool = False  # a person stopped the debate while the personas were asked for

    @property
    def ok(self) -> bool:
        return not self.reason


def neutral(index: int) -> str:
    return f"Participant {index + 1}: a careful, neutral thinker"


def title(persona: str) -> str:
    return persona.split(":", 1)[0].strip().casefold()


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def _clean(line: str) -> str:
    """A candidate line without list markers, markdown decoration or surrounding quotes."""
    line = _MARKER.sub("", line.strip())
    return line.strip().strip("`*#\"'").strip().rstrip(",").strip().strip("\"'").strip()


def _json_list(text: str) -> list | None:
    """The persona list of a JSON reply ({"personas": [...]} or a bare list), None if there is none."""
    for candidate in (text, *re.findall(r"\{.*\}|\[.*\]", text, re.S)):
        try:
            data = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict):
            data = data.get("personas")
        if isinstance(data, list):
            return data
    return None


def _entry(item: object) -> str:
    """One entry of a JSON list: a text, or an object {"role", "description"} (MALLM's shape) as "role: description"."""
    if isinstance(item, dict) and isinstance(item.get("role"), str) and isinstance(item.get("description"), str):
        return _clean(f"{item['role']}: {item['description']}")
    return _clean(str(item)) if isinstance(item, (str, int, float)) and not isinstance(item, bool) else ""


def _lines(text: str) -> list[str]:
    """The text fallback: one persona per line; list-marked lines when some are marked (a preamble
    such as "Here are three experts:" is then left out)."""
    lines = [line for line in text.splitlines() if line.strip()]
    marked = [line for line in lines if _MARKER.match(line)]
    return [_clean(line) for line in (marked or lines)]


def _problem(persona: str, where: str, question: str, request: str, numbers: set[str],
             options: list[str]) -> str:
    """Why one description is not an expert persona ("" when it is one)."""
    if not persona:
        return f"{where} is empty"
    words = len(persona.split())
    if words > PERSONA_WORDS or len(persona) > PERSONA_CHARS:
        return (f"{where} is too long ({words} words, {len(persona)} characters; at most {PERSONA_WORDS} words "
                f"and {PERSONA_CHARS} characters)")
    if _PLACEHOLDER.search(persona):
        return f"{where} is a placeholder, not an expert ({clip(persona, 80)!r})"
    if _ANSWER.match(persona):
        return f"{where} reads like an answer, not an expert ({clip(persona, 80)!r})"
    if words < MIN_WORDS:
        return (f"{where} is too short to describe an expert ({clip(persona, 80)!r}; at least {MIN_WORDS} words, "
                f"like \"{prompts.PERSONA_EXAMPLE}\")")
    norm, question_norm = _norm(persona), _norm(question)
    if norm and (norm in question_norm or (len(question_norm.split()) >= 4 and question_norm in norm)):
        return f"{where} repeats the question instead of describing an expert"
    if len(norm.split()) >= 4 and norm in _norm(request):
        return f"{where} copies the request instead of describing an expert ({clip(persona, 80)!r})"
    if _CHATTER.match(persona):
        return f"{where} talks about the task instead of describing an expert ({clip(persona, 80)!r})"
    used = sorted(set(_NUMBER.findall(persona)) & numbers)
    if used:
        return f"{where} uses the question's number {used[0]}: describe an expert, not an answer"
    for option in options:
        if len(option) > 1 and re.search(rf"(?<!\w){re.escape(option.casefold())}(?!\w)", persona.casefold()):
            return f"{where} names the option {option!r}: describe an expert, not an answer"
    return ""


def read_personas(text: str | None, n: int, question: str, task: str = "", *, request: str = "",
                  taken: list[str] | None = None, options: list[str] | None = None) -> PersonaList:
    """Read `n` expert descriptions from a model's reply; never raises.

    `request` is the prompt's text (a reply that copies it is refused), `taken` the personas
    already set (a repeat is refused), `options` the task's answer options (a persona that
    names one reads as an answer)."""
    if not text or not text.strip():
        return PersonaList(None, "the reply was empty")
    found = _json_list(text)
    personas = [_entry(p) for p in found] if found is not None else _lines(text)
    numbers = set(_NUMBER.findall(f"{question}\n{task}"))
    seen: dict[str, str] = {_norm(p): "a persona already on the panel" for p in (taken or [])}
    titles: dict[str, str] = {title(p): "a persona already on the panel" for p in (taken or []) if ":" in p}
    for i, persona in enumerate(personas):  # what is wrong with the lines first: it tells the model most
        on_panel = seen.get(_norm(persona)) or (titles.get(title(persona)) if ":" in persona else None)
        if on_panel:  # before the copy check: the request shows the panel, so a repeat also "copies" it
            return PersonaList(None, f"persona {i + 1} is the same expert as {on_panel}")
        problem = _problem(persona, f"persona {i + 1}", question, request, numbers, [str(o) for o in options or []])
        if problem:
            return PersonaList(None, problem)
    if len(personas) != n:
        return PersonaList(None, f"expected {n} persona{'s' if n != 1 else ''}, one per agent, got {len(personas)}")
    for i, persona in enumerate(personas):
        where = f"persona {i + 1}"
        same = seen.get(_norm(persona)) or (titles.get(title(persona)) if ":" in persona else None)
        if same:
            return PersonaList(None, f"{where} is the same expert as {same}")
        seen[_norm(persona)] = where
        if ":" in persona:
            titles[title(persona)] = where
    return PersonaList(personas)


def generate_personas(question: str, task: str, labels: list[str], ask: Ask, existing: dict[str, str] | None = None,
                      *, options: list[str] | None = None, retries: int = RETRIES,
                      stopped: Callable[[], bool] | None = None) -> PersonaResult:
    """Personas for the labels without one in `existing`, asked for one at a time (seed 000 App. C,
    MALLM's ExpertGenerator): each request shows the personas so far (those set before and those
    generated), and a refused reply is re-asked at most `retries` times with the reason; never raises.
    When one persona cannot be had, nothing more is asked and the result says why (the labels from
    that one on have none). Once `stopped()` says so, nothing more is asked and the result is
    `stopped` (its reason says so): a call cut by the stop is not the model's failure."""
    personas = {label: p for label, p in (existing or {}).items() if p}
    missing = [label for label in labels if not personas.get(label)]
    replies: list[str] = []
    attempts = 0
    for label in missing:
        found, asked, reason = _one_persona(question, task, list(personas.values()), ask, options, retries, stopped,
                                            replies)
        attempts += asked
        if found is None:
            return PersonaResult(personas, reason=reason, attempts=attempts, replies=replies,
                                 stopped=reason == STOPPED)
        personas[label] = found
    return PersonaResult(personas, attempts=attempts, replies=replies)


def _one_persona(question: str, task: str, taken: list[str], ask: Ask, options: list[str] | None, retries: int,
                 stopped: Callable[[], bool] | None, replies: list[str]) -> tuple[str | None, int, str]:
    """(one new persona or None, requests made, why none): one request showing the panel so far,
    re-asked with the reason at most `retries` times. Replies are appended to `replies`."""
    reply = persona_list_format(1)
    first = prompts.persona_list_prompt(question, task, 1, taken, PERSONA_WORDS)
    request = "\n".join(m["content"] for m in first)
    messages, reason = first, ""
    halted = stopped or (lambda: False)
    for attempt in range(1, retries + 2):
        if halted():
            return None, attempt - 1, STOPPED
        text, error = ask(messages, reply)
        if text is None:
            if halted():
                return None, attempt, STOPPED  # the stop cut the call under way: not the model's failure
            reason = f"the model call failed ({error or 'no reply'})"
            continue  # the same request again
        replies.append(text)
        found = read_personas(text, 1, question, task, request=request, taken=taken, options=options)
        if found.personas is not None:
            return found.personas[0], attempt, ""
        reason = found.reason
        messages = [*first, {"role": "assistant", "content": text},
                    {"role": "user", "content": prompts.persona_retry_prompt(reason, 1, PERSONA_WORDS)}]
    return None, retries + 1, reason
