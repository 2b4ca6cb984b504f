"""What each agent is asked in the engine's own discussion turns, and who it sees.

`Discussion` builds a round's speaking order (the ordering, or a fork's inherited order), the
turns an agent is shown (paradigm, sparse connectivity, memory window, in the paradigm's order),
their rendering (the response generator), the discussion prompt (one block, or chat messages for
a paradigm that keeps chat history), and the summarizer's prompt. Pure prompt building over
the debate's state: it makes no model call and never imports the engine.
"""
from __future__ import annotations

from typing import Any

from . import prompts
from .calls import DebateState
from .config import DebateConfig
from .events import DISCUSSION_KINDS, Turn
from .paradigms import Paradigm, visible_authors
from .replay import Replay

SEEN_KINDS = (*DISCUSSION_KINDS, "summary")  # turns an agent may be shown


class Discussion:
    """Orders, visibility and prompts of the discussion (see the module docstring)."""

    def __init__(self, cfg: DebateConfig, state: DebateState, paradigm: Paradigm, generator: Any,
                 protocol: Any, ordering: Any, replay: Replay):
        self.cfg, self.state, self.paradigm, self.generator = cfg, state, paradigm, generator
        self.protocol, self.ordering, self.replay = protocol, ordering, replay
        self.tit_for_tat = cfg.tit_for_tat if cfg.tit_for_tat is not None else paradigm.default_tit_for_tat

    def round_order(self, rnd: int) -> list[str]:
        """Round `rnd`'s speaking order, from the previous round's answers (a fork keeps its parent's)."""
        previous = {t.agent: t.answer or "" for t in self.state.turns
                    if t.round == rnd - 1 and t.kind in DISCUSSION_KINDS and t.status == "ok"}
        order = self.ordering.order([a.label for a in self.cfg.agents], previous)
        return self.replay.order(rnd, order)

    def seen(self, agent: str, rnd: int) -> list[Turn]:
        """The discussion turns `agent` sees when it speaks in round `rnd` (paradigm, memory window).

        In the order the paradigm shows them (`Paradigm.arrange`): in seq order, the order each turn
        was planned in, for sequential talk; by the order of round `rnd` in simultaneous talk (seed
        003), never the order in which the calls of one simultaneous step happened to finish."""
        order = self.state.order
        history = sorted((t for t in self.state.turns if t.kind in SEEN_KINDS and t.status == "ok"),
                         key=lambda t: t.seq)
        authors = visible_authors(self.cfg, agent)
        if authors is not None:  # sparse connectivity: only the neighbours' turns (and summaries)
            history = [t for t in history if t.agent in authors or t.kind == "summary"]
        seen = self.paradigm.visible(agent, rnd, history, order)
        if self.cfg.memory_window is not None:
            seen = [t for t in seen if t.round >= rnd - self.cfg.memory_window]
        return self.paradigm.arrange(seen, order)

    def render(self, turn: Turn, viewer: str) -> str:
        return self.generator.render(turn, viewer, self.cfg.confidence_visible)

    def plain_system(self, agent: str) -> str:
        """The system prompt of a call outside the discussion (votes, extraction, challenge)."""
        return prompts.system_prompt(agent, len(self.cfg.agents), self.state.personas.get(agent, ""), None)

    def messages(self, agent: str, rnd: int, kind: str) -> list[dict[str, str]]:
        """The prompt of `agent`'s discussion (or, with kind "draft", independent draft) turn."""
        cfg, order = self.cfg, self.state.order
        seen = [] if kind == "draft" else self.seen(agent, rnd)
        formats = [*self.protocol.turn_instructions(agent, bool(seen)),
                   *([prompts.FINAL_ANSWER_FORMAT] if self.generator.shares_answers else [])]
        if cfg.confidence:
            formats.append(prompts.CONFIDENCE_FORMAT)
        system = prompts.system_prompt(agent, len(cfg.agents), self.state.personas.get(agent, ""), self.tit_for_tat,
                                       self.paradigm.role(agent, order, cfg))
        moderator = self.state.pending.pop(agent, [])
        instruction = self.generator.instruction
        if self.paradigm.chat_history:
            return self._chat_messages(agent, system, seen, moderator, instruction, formats)
        rendered = [self.render(t, agent) for t in seen]
        return prompts.turn_prompt(system, cfg.question, cfg.task, rendered, moderator, instruction, formats)

    def _chat_messages(self, agent: str, system: str, seen: list[Turn], moderator: list[str], instruction: str,
                       formats: list[str]) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": prompts.task_block(self.cfg.question, self.cfg.task)}]
        for turn in seen:
            if turn.agent == agent:
                messages.append({"role": "assistant", "content": turn.content})
            else:
                messages.append({"role": "user", "content": self.render(turn, agent)})
        closing = [prompts.moderator_block(moderator)] if moderator else []
        messages.append({"role": "user", "content": "\n\n".join(closing + [" ".join([instruction, *formats])])})
        return messages

    def summary_messages(self) -> list[dict[str, str]]:
        """The summarizer's prompt: everything said so far (simultaneous talk with a summarizer)."""
        said = [self.render(t, "summarizer") for t in sorted(self.state.turns, key=lambda t: t.seq)
                if t.kind in SEEN_KINDS and t.status == "ok"]
        return prompts.summary_prompt(self.cfg.question, self.cfg.task, said)
