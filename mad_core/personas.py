"""Expert personas (seed 000, after Kim et al.): one task-relevant expert per agent, no duplicates.

`generate_personas` asks a model for one persona at a time, showing the ones already taken, and
retries a bounded number of times when the answer repeats an expert (compared by title) or is
empty; an agent that still has none gets a neutral participant. The model call is injected, so
the engine (which records every call as a turn) and the app's "generate" button share this code.
"""
from __future__ import annotations

from typing import Callable

from . import prompts

ATTEMPTS = 3


def first_line(text: str | None) -> str:
    """The first non-empty line, without markdown decoration, at most 300 characters."""
    for line in (text or "").splitlines():
        line = line.strip().strip("`*-# ").strip()
        if line:
            return line[:300]
    return ""


def title(persona: str) -> str:
    return persona.split(":", 1)[0].strip().lower()


def neutral(index: int) -> str:
    return f"Participant {index + 1}: a careful, neutral thinker"


def generate_personas(question: str, task: str, labels: list[str], ask: Callable[[str, list[dict]], str | None],
                      existing: dict[str, str] | None = None, attempts: int = ATTEMPTS) -> dict[str, str]:
    """Personas for every label; `ask(label, messages)` returns the model's reply (None if it failed)."""
    personas = dict(existing or {})
    taken = [p for p in personas.values() if p]
    for index, label in enumerate(labels):
        if personas.get(label):
            continue
        chosen = ""
        for _ in range(attempts):
            candidate = first_line(ask(label, prompts.persona_prompt(question, task, taken)))
            if candidate and title(candidate) and all(title(candidate) != title(p) for p in taken):
                chosen = candidate
                break
        personas[label] = chosen or neutral(index)
        taken.append(personas[label])
    return personas
