"""Decision protocols: when a debate may decide, how, and what happens when it cannot.

One small class per protocol, registered by name. A protocol never streams or stores
anything itself: it asks the engine for solutions, ballots or judge calls (`eng`) and applies
its rule with the pure functions of `counting`. `decide` returns an `Outcome`; `reached=False`
means "discuss one more round" (a tie, no consensus, a judge not yet satisfied). When the
turn cap is hit, or a person forces a decision that cannot be reached, `fallback` applies the
documented rule:

- voting, solution counting, judge selection: the first agent's solution (seed 000 App. C: "the
  solution of the first agent is used");
- consensus: the latest proposal, the one the most recent agreement was about;
- two-sided judge: the judge's extractive answer (seed 002), which always exists.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..answers import final_answer, normalize_answer
from ..metrics import convergence_winner
from ..registry import register
from .counting import consensus_reached, tally


@dataclass
class Outcome:
    """What one decision attempt produced."""

    reached: bool
    reason: str
    answer: str = ""
    winner_agent: str | None = None
    winner_index: int | None = None
    scores: list[float] = field(default_factory=list)
    solutions: list[str] = field(default_factory=list)
    solution_agents: list[str] = field(default_factory=list)
    fallback: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def first_agent_fallback(last: Outcome | None, eng, why: str) -> Outcome:
    """Seed 000's rule when voting cannot decide in time: take the first agent's solution."""
    agents, solutions = (last.solution_agents, last.solutions) if last and last.solutions else eng.solutions()
    if not solutions:
        return Outcome(True, why, answer="", fallback=why + "; no agent produced a solution")
    return Outcome(True, why, answer=solutions[0], winner_agent=agents[0], winner_index=0,
                   scores=last.scores if last else [], solutions=solutions, solution_agents=agents,
                   fallback=why + "; the first agent's solution is used")


class Protocol:
    """Base protocol: decide once the configured number of rounds has passed."""

    def first_round(self, cfg) -> int:
        return cfg.rounds

    def decide(self, eng, forced: bool) -> Outcome:
        raise NotImplementedError

    def fallback(self, eng, last: Outcome | None, why: str) -> Outcome:
        return first_agent_fallback(last, eng, why)


def _tie_reason(scores: list[float], tied: list[int], valid: int) -> str:
    if valid == 0:
        return "no valid ballot"
    return "tie between solutions " + ", ".join(str(i + 1) for i in tied) + f" (scores {scores})"


class Voting(Protocol):
    """Extract final answers, collect one ballot per agent, tally; a tie means another round."""

    def decide(self, eng, forced: bool) -> Outcome:
        agents, solutions = eng.solutions()
        if not solutions:
            return Outcome(False, "no solutions to vote on")
        ballots = eng.collect_ballots(self.name, solutions)
        result = tally(self.name, [b.value if b.valid else None for b in ballots], len(solutions))
        base = dict(scores=result.scores, solutions=solutions, solution_agents=agents,
                    details={"valid": result.valid, "invalid": result.invalid, "tied": result.tied})
        if result.winner is None:
            return Outcome(False, _tie_reason(result.scores, result.tied, result.valid), **base)
        return Outcome(True, f"solution {result.winner + 1} won", answer=solutions[result.winner],
                       winner_agent=agents[result.winner], winner_index=result.winner, **base)


@register("protocol", "simple_voting")
class SimpleVoting(Voting):
    """One vote per agent; most votes wins."""


@register("protocol", "approval_voting")
class ApprovalVoting(Voting):
    """Each agent approves any number of solutions; most approvals wins."""


@register("protocol", "ranked_voting")
class RankedVoting(Voting):
    """Each agent ranks all solutions; best total rank (Borda points) wins."""


@register("protocol", "cumulative_voting")
class CumulativeVoting(Voting):
    """Each agent shares a budget of points; most points wins."""


class Consensus(Protocol):
    """Agents say AGREE / DISAGREE with the current proposal; decide once enough agree."""

    def first_round(self, cfg) -> int:
        return 1

    def decide(self, eng, forced: bool) -> Outcome:
        proposal, supporters = eng.proposal()
        if proposal is None:
            return Outcome(False, "no proposal yet")
        labels = eng.agent_labels()
        agree = [label in supporters for label in labels]
        detail = {"agree": dict(zip(labels, agree)), "proposer": proposal.agent}
        if not consensus_reached(self.name, agree, eng.cfg.consensus_threshold):
            return Outcome(False, f"{sum(agree)} of {len(agree)} agree: not enough for {self.name}",
                           scores=[float(a) for a in agree], details=detail)
        return self._accept(eng, proposal, agree, detail, f"{sum(agree)} of {len(agree)} agree")

    def fallback(self, eng, last: Outcome | None, why: str) -> Outcome:
        proposal, supporters = eng.proposal()
        if proposal is None:
            return first_agent_fallback(last, eng, why)
        labels = eng.agent_labels()
        agree = [label in supporters for label in labels]
        outcome = self._accept(eng, proposal, agree, {"agree": dict(zip(labels, agree))}, why)
        outcome.fallback = why + "; the latest proposal is used"
        return outcome

    def _accept(self, eng, proposal, agree, detail, reason) -> Outcome:
        answer = eng.extract_answer(proposal)
        return Outcome(True, reason, answer=answer, winner_agent=proposal.agent,
                       winner_index=eng.agent_labels().index(proposal.agent), scores=[float(a) for a in agree],
                       solutions=[answer], solution_agents=[proposal.agent], details=detail)


@register("protocol", "majority_consensus")
class MajorityConsensus(Consensus):
    """More than half agree."""


@register("protocol", "supermajority_consensus")
class SupermajorityConsensus(Consensus):
    """More than 66 % agree (2 of 3 suffice)."""


@register("protocol", "unanimity_consensus")
class UnanimityConsensus(Consensus):
    """Everyone agrees."""


@register("protocol", "solution_counting")
class SolutionCounting(Protocol):
    """The answer given most often wins (seed 000 App. D); a tie means another round."""

    def decide(self, eng, forced: bool) -> Outcome:
        agents, solutions = eng.solutions()
        if not solutions:
            return Outcome(False, "no solutions to count")
        keys = [normalize_answer(s) for s in solutions]
        counts = Counter(keys)
        scores = [float(counts[k]) for k in keys]
        top = max(counts.values())
        leaders = [k for k, c in counts.items() if c == top]
        base = dict(scores=scores, solutions=solutions, solution_agents=agents, details={"counts": dict(counts)})
        if len(leaders) > 1:
            return Outcome(False, f"tie: {len(leaders)} answers are each given {top} time(s)", **base)
        index = keys.index(leaders[0])
        return Outcome(True, f"given by {top} of {len(solutions)} agents", answer=solutions[index],
                       winner_agent=agents[index], winner_index=index, **base)


@register("protocol", "convergence")
class Convergence(Protocol):
    """Seed 004 without a judge: the final draft most similar to the others (token overlap) wins."""

    def decide(self, eng, forced: bool) -> Outcome:
        agents, drafts = eng.latest_drafts()
        if not drafts:
            return Outcome(False, "no drafts yet")
        index, scores = convergence_winner(drafts)
        tie = sum(1 for s in scores if s == scores[index]) > 1
        note = "convergence winner by mean token overlap" + ("; tie broken by agent order" if tie else "")
        return Outcome(True, note, answer=drafts[index], winner_agent=agents[index], winner_index=index,
                       scores=scores, solutions=drafts, solution_agents=agents,
                       details={"final_answer": final_answer(drafts[index]), "tie_broken": tie})


@register("protocol", "judge")
class Judge(Protocol):
    """A judge model decides (seed 002 / seed 004).

    With `judge_adaptive_break`, the judge is asked after every round whether a correct answer
    has been reached and may end the debate early (discriminative mode). At the round limit it
    picks the best final answer (selection) or, in the two-sided paradigm, states the answer
    itself from the whole debate (extractive mode).
    """

    def first_round(self, cfg) -> int:
        return 1 if cfg.judge_adaptive_break else cfg.rounds

    def decide(self, eng, forced: bool) -> Outcome:
        if eng.round < eng.cfg.rounds and not forced:
            verdict, answer, raw = eng.judge_break()
            if verdict:
                return Outcome(True, "the judge found a correct answer (adaptive break)", answer=answer,
                               winner_agent="judge", details={"judgment": raw, "mode": "discriminative"})
            return Outcome(False, "the judge wants the debate to go on", details={"judgment": raw})
        if eng.cfg.paradigm == "two_sided":
            return self._extract(eng, "round limit reached")
        return self._select(eng)

    def fallback(self, eng, last: Outcome | None, why: str) -> Outcome:
        if eng.cfg.paradigm == "two_sided":
            return self._extract(eng, why)
        return first_agent_fallback(last, eng, why)

    @staticmethod
    def _extract(eng, why: str) -> Outcome:
        answer, raw = eng.judge_extract()
        return Outcome(True, why + ": the judge states the answer (extractive mode)", answer=answer,
                       winner_agent="judge", details={"judgment": raw, "mode": "extractive"})

    @staticmethod
    def _select(eng) -> Outcome:
        agents, solutions = eng.solutions()
        if not solutions:
            return Outcome(False, "no solutions to judge")
        ballot, raw = eng.judge_select(solutions)
        scores = [0.0] * len(solutions)
        base = dict(solutions=solutions, solution_agents=agents, details={"judgment": raw, "mode": "selection"})
        if not ballot.valid:
            return first_agent_fallback(Outcome(False, "", **base), eng, f"the judge's choice was invalid ({ballot.reason})")
        scores[ballot.value] = 1.0
        return Outcome(True, f"the judge chose solution {ballot.value + 1}", answer=solutions[ballot.value],
                       winner_agent=agents[ballot.value], winner_index=ballot.value, scores=scores, **base)
