"""Decision protocols: when a debate may decide, how, and what happens when it cannot.

This module is the interface; each protocol is one small class in its own file of this package,
registered by name there (simple_voting.py, approval_voting.py, ranked_voting.py,
cumulative_voting.py, consensus.py, solution_counting.py, convergence.py, judge.py; the
Knight-Knave-Spy vote in kks_mode.py) and listed once in `registry.BUILTIN`. The engine makes
one per debate, so a protocol keeps its own state (consensus: the current proposal and who
agrees with it). The interface (`Protocol`):

- `observe(turn)`: every finished discussion turn, in the round's order;
- `after_turn(ctx)`: asked after each of them; an `Outcome` ends the discussion there
  (consensus is checked after every answer, seed 000 §3.2 and MALLM);
- `turn_instructions(agent, sees_others)`: what an agent is asked besides the task (consensus:
  agree or disagree with the proposal it is shown);
- `decide(ctx, forced)`: at the end of a round from `first_round(cfg)` on; `reached=False`
  means "discuss one more round" (a tie, no consensus, a judge not yet satisfied);
- `fallback(ctx, last, why)`: the turn cap was hit, or a person forced a decision that could
  not be reached;
- `calls_per_attempt(cfg, agents, extractions)`: the model calls one `decide` makes (the call
  plan, `live.plan_calls`); `check_config(cfg)` (optional): its rule on the rest of the
  configuration; `options`: the settings it reads.

A voting rule is a `Voting`: a protocol that is also a `rule.VotingRule` (its instruction,
ballot schema, readers, scoring and unit); adding one is one file and one test.

A protocol never streams or stores anything itself: it asks the running debate for solutions,
ballots or judge calls through a `DecisionContext` and applies its rule with the pure functions
of `counting`. The fallback rules:

- voting, solution counting, judge selection: the first agent's solution (seed 000 App. C: "the
  solution of the first agent is used");
- consensus: the latest proposal, the one the most recent agreement was about;
- two-sided judge: the judge's extractive answer (seed 002), which always exists.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol as Interface

from ..events import Turn
from .counting import tally
from .rule import Ballot, VotingRule


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


class DecisionContext(Interface):
    """What a protocol may ask of the running debate (`mad_core.context.DebateContext` provides it)."""

    cfg: Any  # the DebateConfig
    round: int  # the current round
    labels: list[str]  # the agents, in configured order
    judge_extracts: bool  # the paradigm's judge states the answer itself (two-sided, seed 002)
    sides: dict[str, str] | None  # label -> the side it argues (two-sided debates), else None

    def solutions(self) -> tuple[list[str], list[str]]:
        """(agents, final solutions) of the latest round: extracted when configured (seed 000 E.1)."""

    def latest_drafts(self) -> tuple[list[str], list[str]]:
        """(agents, each one's latest successful discussion reply)."""

    def collect_ballots(self, protocol: str, solutions: list[str]) -> list[Ballot]:
        """One ballot per agent (re-asked when unreadable), each recorded as a VoteCast."""

    def extract_answer(self, agent: str, text: str, intro: str | None = None) -> str:
        """`agent`'s final solution in `text` (an extraction turn when configured); `intro` says
        what `text` is when it is not the agent's own last reply."""

    def judge_extract(self) -> tuple[str, str]:
        """(the judge's own answer from the whole debate, its raw reply)."""

    def judge_select(self, agents: list[str], drafts: list[str]) -> tuple[Ballot, str]:
        """(the judge's choice among the agents' final drafts, by label, as a 0-based index; its raw reply)."""

    @property
    def turns(self) -> list[Turn]:
        """Every turn so far, in planned order (a protocol that reads replies itself: kks_mode)."""

    def consult(self, label: str, kind: str, messages: list[dict], model: str, reply: Any = None) -> Turn:
        """One call by a participant other than the agents (a supervisor), recorded as a turn."""

    def record_vote(self, agent: str, protocol: str, raw: str, ballot: Any, valid: bool, reason: str | None,
                    attempt: int = 1) -> None:
        """Record a ballot the protocol read itself as a VoteCast (invalid ones with their reason)."""


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

    name = ""  # set by the registry
    needs_turn_order = False  # agents must answer one another in turn (consensus)
    casts_ballots = False  # every agent casts a ballot that `counting.tally` counts (voting)
    score_unit = "score"  # what an attempt's `scores` measure (for plots)
    scores_per_agent = False  # `scores` has one entry per agent (else one per solution)
    options: tuple[str, ...] = ()  # the configuration settings it reads (`DebateConfig` fields)
    ballot: Callable[[], VotingRule] | None = None  # makes the rule of the ballots it asks for, if any

    def first_round(self, cfg) -> int:
        return cfg.rounds

    def calls_per_attempt(self, cfg, agents: int, extractions: int) -> int:
        """The model calls of one decision attempt (`decide`), for the call plan: `agents` agents;
        `extractions` is what asking for the solutions (`DecisionContext.solutions`) costs."""
        raise NotImplementedError(f"protocol {self.name or type(self).__name__!r} does not say how many "
                                  "model calls a decision attempt makes (calls_per_attempt)")

    def observe(self, turn: Turn) -> None:
        """A discussion turn finished (ok or not)."""

    def after_turn(self, ctx: DecisionContext) -> Outcome | None:
        """An outcome to end the discussion right after the latest turn, or None to go on."""
        return None

    def turn_instructions(self, agent: str, sees_others: bool) -> list[str]:
        """What `agent` is asked to do besides answering (shown before the answer format)."""
        return []

    def decide(self, eng: DecisionContext, forced: bool) -> Outcome:
        raise NotImplementedError

    def fallback(self, eng: DecisionContext, last: Outcome | None, why: str) -> Outcome:
        return first_agent_fallback(last, eng, why)


def _tie_reason(scores: list[float], tied: list[int], valid: int) -> str:
    if valid == 0:
        return "no valid ballot"
    return "tie between solutions " + ", ".join(str(i + 1) for i in tied) + f" (scores {scores})"


class Voting(Protocol, VotingRule):
    """A voting rule (`rule.VotingRule`) as a protocol: extract final answers, collect one ballot
    per agent, count them with the rule's `score`; a tie means another round.

    A rule is one subclass, in its own file, registered as a protocol (simple_voting.py)."""

    casts_ballots = True
    options: tuple[str, ...] = ("extract_final_answers", "vote_retries")

    @classmethod
    def ballot(cls) -> VotingRule:
        """A voting rule asks for its own ballots."""
        return cls()

    def calls_per_attempt(self, cfg, agents: int, extractions: int) -> int:
        return extractions + agents  # the solutions, then one ballot per agent

    def decide(self, eng: DecisionContext, forced: bool) -> Outcome:
        agents, solutions = eng.solutions()
        if not solutions:
            return Outcome(False, "no solutions to vote on")
        ballots = eng.collect_ballots(self.name, solutions)
        result = tally(self, [b.value if b.valid else None for b in ballots], len(solutions))
        base: dict[str, Any] = dict(scores=result.scores, solutions=solutions, solution_agents=agents,
                    details={"valid": result.valid, "invalid": result.invalid, "tied": result.tied})
        if result.winner is None:
            return Outcome(False, _tie_reason(result.scores, result.tied, result.valid), **base)
        return Outcome(True, f"solution {result.winner + 1} won", answer=solutions[result.winner],
                       winner_agent=agents[result.winner], winner_index=result.winner, **base)
