"""The running debate as its components see it: `DebateContext`, the engine side of the ports.

It implements the protocols' `protocols.decision.DecisionContext` (settings, round, agents,
and the services a protocol may ask for: solutions, drafts, ballots, extraction, the judge's
calls, a supervisor's consultation, recording a ballot it read itself) and the paradigms'
`ports.ParadigmContext` (turns, personas, moderator messages). It is built from the engine's
collaborators (the shared state, the calls, the discussion's prompts, `emit`), never from the
engine itself, so nothing of the engine is reachable from a protocol or a paradigm.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import prompts
from .answers import extracted_answer, final_answer, json_reply
from .calls import Calls, DebateState, Request, call_problem
from .config import DebateConfig, clip, short_repr
from .discussion import Discussion
from .events import DISCUSSION_KINDS, SEAT_SKIPPED, Turn, VoteCast
from .ports import Emit
from .protocols.ballots import Ballot, parse_ballot
from .protocols.schemas import ReplyFormat, ballot_format, choice_format, extraction_format


class DebateContext:
    """The running debate for protocols and paradigms (see the module docstring)."""

    def __init__(self, cfg: DebateConfig, state: DebateState, calls: Calls, discussion: Discussion,
                 emit: Emit):
        self.cfg, self._state, self.calls, self.discussion, self.emit = cfg, state, calls, discussion, emit
        self.labels: list[str] = [a.label for a in cfg.agents]
        self.judge_extracts: bool = discussion.paradigm.judge_extracts
        self.sides: dict[str, str] | None = discussion.paradigm.judge_sides(cfg)
        self._last_solutions: tuple[int, list[str], list[str]] | None = None

    # ----- what the debate is (ParadigmContext and DecisionContext) ---------------------------
    @property
    def round(self) -> int:
        return self._state.round

    @round.setter
    def round(self, rnd: int) -> None:  # the engine moves the debate on (`DecisionContext.round` is settable)
        self._state.round = rnd

    @property
    def turns(self) -> list[Turn]:
        """Every turn so far (any kind, any status), in the order they were planned."""
        return sorted(self._state.turns, key=lambda t: t.seq)

    @property
    def personas(self) -> dict[str, str]:
        return dict(self._state.personas)

    @property
    def stopped(self) -> bool:
        return self.calls.controller.stopped

    def take_moderator(self, agent: str) -> list[str]:
        """The moderator messages waiting for `agent` (handed over once: they reach its next prompt)."""
        return self._state.pending.pop(agent, [])

    # ----- calls a protocol may ask for ---------------------------------------------------------
    def consult(self, label: str, kind: str, messages: list[dict], model: str,
                reply: ReplyFormat | None = None) -> Turn:
        """One call by a participant other than the agents (a supervisor), recorded as a turn."""
        return self.calls.ask(label, kind, messages, model, reply)

    def record_vote(self, agent: str, protocol: str, raw: str, ballot: Any, valid: bool, reason: str | None,
                    attempt: int = 1) -> None:
        """Record a ballot a protocol read itself (from an agent's reply) as a VoteCast."""
        self.emit(VoteCast(self._state.round, agent, protocol, raw, ballot, valid, reason, attempt))

    def latest_drafts(self) -> tuple[list[str], list[str]]:
        """Each agent's latest successful draft or discussion reply, in configured agent order."""
        latest: dict[str, str] = {}
        for turn in self._state.turns:
            if turn.kind in DISCUSSION_KINDS and turn.status == "ok":
                latest[turn.agent] = turn.content
        agents = [label for label in self.labels if label in latest]
        return agents, [latest[a] for a in agents]

    def solutions(self) -> tuple[list[str], list[str]]:
        """Each agent's final solution this round (seed 000 E.1 extraction when enabled); cached per round."""
        rnd = self._state.round
        if self._last_solutions and self._last_solutions[0] == rnd:
            return self._last_solutions[1], self._last_solutions[2]
        agents, drafts = self.latest_drafts()
        requests: list[Request]
        if not self.discussion.generator.shares_answers:  # each agent forms its own solution now
            requests = [(a, "extraction", self._own_solution_messages(a), None) for a in agents]
            pairs = [(t.agent, final_answer(t.content)) for t in self.calls.ask_many(requests)]
        elif self.cfg.extract_final_answers:
            # A person's solution is read from what they typed (the same reader as without extraction):
            # the extraction is a model's step (seed 000 E.1), not a second question to the person.
            models = [(a, d) for a, d in zip(agents, drafts) if not self._is_person(a)]
            requests = [(a, "extraction", self._extraction_messages(a, d), None, extraction_format()) for a, d in models]
            extracted = {t.agent: extracted_answer(t.content) for t in self.calls.ask_many(requests)}
            pairs = [(a, extracted.get(a) or final_answer(d)) for a, d in zip(agents, drafts)]
        else:
            pairs = [(a, final_answer(d)) for a, d in zip(agents, drafts)]
        agents, solutions = [a for a, _ in pairs], [s for _, s in pairs]
        self._last_solutions = (rnd, agents, solutions)
        return agents, solutions

    def _own_solution_messages(self, agent: str) -> list[dict[str, str]]:
        seen = self.discussion.seen(agent, self._state.round + 1)  # all the discussion this agent can see
        return prompts.own_solution_prompt(self.discussion.plain_system(agent), self.cfg.question, self.cfg.task,
                                           [self.discussion.render(t, agent) for t in seen])

    def extract_answer(self, agent: str, text: str, intro: str | None = None) -> str:
        """`agent`'s final solution in `text`: its own last reply, or (with `intro`) other messages."""
        if not self.cfg.extract_final_answers or self._is_person(agent):
            return final_answer(text)
        extracted = self.calls.ask(agent, "extraction", self._extraction_messages(agent, text, intro),
                                   reply=extraction_format())
        return extracted_answer(extracted.content) or final_answer(text)

    def _is_person(self, agent: str) -> bool:
        """Does a person speak for `agent` (a seat, mad_core/seats.py)?"""
        return any(a.label == agent and a.is_person for a in self.cfg.agents)

    def _extraction_messages(self, agent: str, draft: str, intro: str | None = None) -> list[dict[str, str]]:
        return prompts.extraction_prompt(self.discussion.plain_system(agent), self.cfg.question, self.cfg.task,
                                         draft, *([intro] if intro else []))

    def collect_ballots(self, protocol: str, solutions: list[str]) -> list[Ballot]:
        """One ballot per agent; an unparseable one is re-asked up to `vote_retries` times. A person's
        seat that let its time limit pass (its turn skipped) is not asked again: it abstains."""
        cfg, labels = self.cfg, self.labels
        reply = ballot_format(protocol, len(solutions), cfg.cumulative_points)
        ballots: dict[str, Ballot] = {}
        reasons: dict[str, str | None] = {label: None for label in labels}
        abstained: set[str] = set()
        for attempt in range(1, cfg.vote_retries + 2):
            todo = [label for label in labels
                    if label not in abstained and (label not in ballots or not ballots[label].valid)]
            if not todo or self.stopped:
                break
            requests: list[Request] = [
                (label, "vote", prompts.vote_prompt(self.discussion.plain_system(label), protocol, cfg.question,
                                                    cfg.task, solutions, cfg.cumulative_points, reasons[label]),
                 None, reply) for label in todo]

            def count(turn: Turn, attempt: int = attempt) -> None:
                if turn.seat == SEAT_SKIPPED:
                    abstained.add(turn.agent)
                if turn.status != "ok":
                    ballot = Ballot(None, False, call_problem(turn, "vote"))
                else:
                    ballot = parse_ballot(protocol, turn.content, len(solutions), points=cfg.cumulative_points)
                ballots[turn.agent], reasons[turn.agent] = ballot, ballot.reason
                self.emit(VoteCast(self._state.round, turn.agent, protocol, turn.content, ballot.value, ballot.valid,
                                   ballot.reason, attempt))

            self.calls.ask_many(requests, on_done=count)
        return [ballots[label] for label in labels if label in ballots]

    # ----- the judge ----------------------------------------------------------------------------
    def _judge_model(self) -> str:
        return self.cfg.judge_model or self.cfg.agents[0].model

    def judge_extract(self) -> tuple[str, str]:
        transcript = [f"[{t.agent}] (round {t.round}): {t.content.strip()}" for t in self._state.turns
                      if t.kind in DISCUSSION_KINDS and t.status == "ok"]
        messages = prompts.judge_extract_prompt(self.cfg.question, self.cfg.task, transcript, len(self.cfg.agents))
        turn = self.calls.ask("judge", "judge", messages, self._judge_model())
        return final_answer(turn.content) if turn.content else "", turn.content

    def judge_select(self, agents: list[str], drafts: list[str]) -> tuple[Ballot, str]:
        """The judge names the best draft by its agent's label (or its number); re-asked `vote_retries` times."""
        cfg = self.cfg
        messages = prompts.judge_select_prompt(cfg.question, cfg.task, agents, drafts, len(cfg.agents))
        ballot, raw = Ballot(None, False, "the judge did not answer"), ""
        for attempt in range(1, cfg.vote_retries + 2):
            turn = self.calls.ask("judge", "judge", messages, self._judge_model(), choice_format(agents))
            raw = turn.content
            ballot = read_label_choice(raw, agents) if turn.status == "ok" else \
                Ballot(None, False, call_problem(turn, "judge"))
            self.emit(VoteCast(self._state.round, "judge", "judge", raw, ballot.value, ballot.valid, ballot.reason,
                               attempt))
            if ballot.valid or self.stopped or attempt > cfg.vote_retries:
                break
            messages = prompts.judge_select_prompt(cfg.question, cfg.task, agents, drafts, len(cfg.agents))
            messages[-1]["content"] += (f"\n\nYour previous reply could not be counted ({ballot.reason}). "
                                        "Answer again in exactly the format asked.")
        return ballot, raw


def read_label_choice(text: str, labels: list[str]) -> Ballot:
    """The judge's choice: {"choice": "<label>"} (its constrained form, `schemas.choice_format`)
    first; else the one agent label its reply names, else a solution number. Never raises."""
    try:
        reply = json_reply(text)
        if reply is not None and "choice" in reply:
            choice = reply["choice"].strip() if isinstance(reply["choice"], str) else None
            if choice in labels:
                return Ballot(labels.index(choice), True)
            named = [i for i, label in enumerate(labels)
                     if choice is not None and choice.casefold() == label.casefold()]
            if len(named) == 1:
                return Ballot(named[0], True)
            return Ballot(None, False, f"{short_repr(reply['choice'], 40)} is not one of the participants "
                                       f"({clip(', '.join(labels), 200)})")
        head = (text or "")[:2000]
        named = [i for i, label in enumerate(labels)
                 if re.search(rf"(?<![\w]){re.escape(label)}(?![\w])", head, re.IGNORECASE)]
        # "Agent 1" inside "Agent 12" is excluded by the word boundaries; several names are ambiguous.
        if len(named) == 1:
            return Ballot(named[0], True)
        if len(named) > 1:
            return Ballot(None, False, f"the reply names several participants ({', '.join(labels[i] for i in named)})")
        return parse_ballot("judge", text, len(labels))
    except Exception as exc:  # noqa: BLE001 - model text never raises
        return Ballot(None, False, f"unreadable reply ({type(exc).__name__})")


if TYPE_CHECKING:  # mypy checks that the engine side implements both ports
    from .ports import ParadigmContext
    from .protocols.decision import DecisionContext

    def _implements_the_ports(ctx: DebateContext) -> tuple[DecisionContext, ParadigmContext]:
        return ctx, ctx
