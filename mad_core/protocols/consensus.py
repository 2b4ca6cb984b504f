"""Consensus protocols (seed 000 §3.2, MALLM): the discussion ends as soon as enough agents agree.

Agents are shown the current proposal and agree or disagree with it; consensus is checked after
every answer. The share of agents that must agree is each protocol's `fraction` (at least 0.5,
0.66 or 1.0: MALLM's ThresholdConsensus, see `counting`), or the configuration's
`consensus_threshold` when set. When the turn cap is hit, the latest proposal is used.
"""
from __future__ import annotations

from typing import Any

from ..answers import final_answer
from ..events import DISCUSSION_KINDS, Turn
from ..prompts import AGREEMENT_FORMAT, proposal_block
from ..registry import register
from .counting import share_reached
from .decision import DecisionContext, Outcome, Protocol, first_agent_fallback


class Consensus(Protocol):
    """Each agent agrees or disagrees with the current proposal; the discussion ends as soon as
    enough agree (seed 000 §3.2; MALLM checks after every answer, not after a full round).

    The proposal is the latest answer that did not agree: its author supports it, and so does
    every later speaker who agrees. A reply that does not agree (a disagreement, or no stance)
    is a new proposal. Agents are shown the proposal they are asked about. The final answer is
    then solved by the last speaker from the latest messages (seed 000: the last agent solves
    the task), i.e. from the proposal and the agreements that followed it."""

    needs_turn_order = True
    score_unit = "agrees (1) or not (0)"
    scores_per_agent = True
    options = ("consensus_threshold", "extract_final_answers")
    fraction: float  # the share of agents that must agree (each protocol's own; `consensus_threshold` overrides it)

    def __init__(self) -> None:
        self.proposal: Turn | None = None
        self.since: list[Turn] = []  # the proposal and the turns after it

    def first_round(self, cfg) -> int:
        return 1

    def calls_per_attempt(self, cfg, agents: int, extractions: int) -> int:
        return 1 if cfg.extract_final_answers else 0  # the last speaker's answer, once

    def observe(self, turn: Turn) -> None:
        if turn.kind not in DISCUSSION_KINDS or turn.status != "ok":
            return
        if self.proposal is not None and turn.agreement is True:
            self.since.append(turn)
        else:
            self.proposal, self.since = turn, [turn]

    def supporters(self) -> set[str]:
        return {self.proposal.agent} | {t.agent for t in self.since[1:]} if self.proposal else set()

    def turn_instructions(self, agent: str, sees_others: bool) -> list[str]:
        if self.proposal is None or not sees_others:
            return []
        answer = self.proposal.answer or final_answer(self.proposal.content)
        return [proposal_block(self.proposal.agent, answer), AGREEMENT_FORMAT]

    def _state(self, ctx: DecisionContext) -> tuple[list[bool], dict[str, Any]]:
        supporters = self.supporters()
        agree = [label in supporters for label in ctx.labels]
        return agree, {"agree": dict(zip(ctx.labels, agree)),
                       "proposer": self.proposal.agent if self.proposal else None}

    def after_turn(self, ctx: DecisionContext) -> Outcome | None:
        if self.proposal is None:
            return None
        agree, detail = self._state(ctx)
        if not share_reached(agree, self.fraction, ctx.cfg.consensus_threshold):
            return None
        return self._accept(ctx, agree, detail, f"{sum(agree)} of {len(agree)} agree")

    def decide(self, ctx: DecisionContext, forced: bool) -> Outcome:
        if self.proposal is None:
            return Outcome(False, "no proposal yet")
        agree, detail = self._state(ctx)
        if not share_reached(agree, self.fraction, ctx.cfg.consensus_threshold):
            return Outcome(False, f"{sum(agree)} of {len(agree)} agree: not enough for {self.name}",
                           scores=[float(a) for a in agree], details=detail)
        return self._accept(ctx, agree, detail, f"{sum(agree)} of {len(agree)} agree")

    def fallback(self, ctx: DecisionContext, last: Outcome | None, why: str) -> Outcome:
        if self.proposal is None:
            return first_agent_fallback(last, ctx, why)
        agree, detail = self._state(ctx)
        outcome = self._accept(ctx, agree, detail, why)
        outcome.fallback = why + "; the latest proposal is used"
        return outcome

    def _accept(self, ctx: DecisionContext, agree: list[bool], detail: dict[str, Any], reason: str) -> Outcome:
        assert self.proposal is not None  # asked only once there is a proposal
        proposer = self.proposal.agent
        latest = "\n\n".join(f"[{t.agent}]: {t.content.strip()}" for t in self.since)
        answer = ctx.extract_answer(self.since[-1].agent, latest, "The discussion ended with these messages:")
        return Outcome(True, reason, answer=answer, winner_agent=proposer, winner_index=ctx.labels.index(proposer),
                       scores=[float(a) for a in agree], solutions=[answer], solution_agents=[proposer], details=detail)


@register("protocol", "majority_consensus")
class MajorityConsensus(Consensus):
    """At least half agree (MALLM's majority consensus; see `counting` for seed 000's two
    wordings). Not Yin et al.'s hybrid rule (unanimity while turns < 5 or agents <= 3), which
    MALLM keeps apart as `hybrid_majority_consensus`: with it, "A proposes and B agrees"
    would not end a three-agent discussion as seed 000 §3.2 describes."""

    fraction = 0.5


@register("protocol", "supermajority_consensus")
class SupermajorityConsensus(Consensus):
    """At least 66 % agree (2 of 3 suffice)."""

    # 0.66, not 2/3: as in the paper and MALLM, 2 of 3 agents (0.6667) is a supermajority.
    fraction = 0.66


@register("protocol", "unanimity_consensus")
class UnanimityConsensus(Consensus):
    """Everyone agrees."""

    fraction = 1.0
