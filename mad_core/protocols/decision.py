"""Decision protocols: when a debate may decide, how, and what happens when it cannot.

One small class per protocol, registered by name; the engine makes one per debate, so a
protocol keeps its own state (consensus: the current proposal and who agrees with it). The
interface (`Protocol`):

- `observe(turn)`: every finished discussion turn, in the round's order;
- `after_turn(ctx)`: asked after each of them; an `Outcome` ends the discussion there
  (consensus is checked after every answer, seed 000 §3.2 and MALLM);
- `turn_instructions(agent, sees_others)`: what an agent is asked besides the task (consensus:
  agree or disagree with the proposal it is shown);
- `decide(ctx, forced)`: at the end of a round from `first_round(cfg)` on; `reached=False`
  means "discuss one more round" (a tie, no consensus, a judge not yet satisfied);
- `fallback(ctx, last, why)`: the turn cap was hit, or a person forced a decision that could
  not be reached.

A protocol never streams or stores anything itself: it asks the running debate for solutions,
ballots or judge calls through a `DecisionContext` and applies its rule with the pure functions
of `counting`. The fallback rules:

- voting, solution counting, judge selection: the first agent's solution (seed 000 App. C: "the
  solution of the first agent is used");
- consensus: the latest proposal, the one the most recent agreement was about;
- two-sided judge: the judge's extractive answer (seed 002), which always exists.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol as Interface

from ..answers import final_answer
from ..events import DISCUSSION_KINDS, Turn
from ..metrics import convergence_winner
from ..prompts import AGREEMENT_FORMAT, judge_break_prompt, proposal_block
from ..registry import register
from ..tasks.answer_types import answer_key, shown_answer
from .ballots import Ballot, Verdict, read_judge_verdict
from .counting import consensus_reached, tally
from .schemas import verdict_format


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
    """What a protocol may ask of the running debate (the engine's `EngineContext` provides it)."""

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

    def first_round(self, cfg) -> int:
        return cfg.rounds

    def observe(self, turn: Turn) -> None:
        """A discussion turn finished (ok or not)."""

    def after_turn(self, ctx: DecisionContext) -> Outcome | None:
        """An outcome to end the discussion right after the latest turn, or None to go on."""
        return None

    def turn_instructions(self, agent: str, sees_others: bool) -> list[str]:
        """What `agent` is asked to do besides answering (shown before the answer format)."""
        return []

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

    casts_ballots = True

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
    """Each agent ranks up to 5 solutions; the most rank points win (MALLM's count: the solution ranked
    at position p, 0 = best, earns min(5, solutions) - p; see `counting._ranked_points`)."""


@register("protocol", "cumulative_voting")
class CumulativeVoting(Voting):
    """Each agent shares a budget of points; most points wins."""


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

    def __init__(self) -> None:
        self.proposal: Turn | None = None
        self.since: list[Turn] = []  # the proposal and the turns after it

    def first_round(self, cfg) -> int:
        return 1

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
        if not consensus_reached(self.name, agree, ctx.cfg.consensus_threshold):
            return None
        return self._accept(ctx, agree, detail, f"{sum(agree)} of {len(agree)} agree")

    def decide(self, ctx: DecisionContext, forced: bool) -> Outcome:
        if self.proposal is None:
            return Outcome(False, "no proposal yet")
        agree, detail = self._state(ctx)
        if not consensus_reached(self.name, agree, ctx.cfg.consensus_threshold):
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
        latest = "\n\n".join(f"[{t.agent}]: {t.content.strip()}" for t in self.since)
        answer = ctx.extract_answer(self.since[-1].agent, latest, "The discussion ended with these messages:")
        return Outcome(True, reason, answer=answer, winner_agent=self.proposal.agent,
                       winner_index=ctx.labels.index(self.proposal.agent), scores=[float(a) for a in agree],
                       solutions=[answer], solution_agents=[self.proposal.agent], details=detail)


@register("protocol", "majority_consensus")
class MajorityConsensus(Consensus):
    """At least half agree (MALLM's majority consensus; see `counting` for seed 000's two
    wordings). Not Yin et al.'s hybrid rule (unanimity while turns < 5 or agents <= 3), which
    MALLM keeps apart as `hybrid_majority_consensus`: with it, "A proposes and B agrees"
    would not end a three-agent discussion as seed 000 §3.2 describes."""


@register("protocol", "supermajority_consensus")
class SupermajorityConsensus(Consensus):
    """At least 66 % agree (2 of 3 suffice)."""


@register("protocol", "unanimity_consensus")
class UnanimityConsensus(Consensus):
    """Everyone agrees."""


@register("protocol", "solution_counting")
class SolutionCounting(Protocol):
    """The answer given most often wins (seed 000 App. D); a tie means another round."""

    score_unit = "agents giving this answer"

    def decide(self, eng, forced: bool) -> Outcome:
        agents, solutions = eng.solutions()
        if not solutions:
            return Outcome(False, "no solutions to count")
        # Answers are counted as the debate's answer type reads them, as the metrics count them: "18
        # apples" and "18" are one answer of a number debate (free text: normalize_answer, as always).
        # An unreadable solution is counted for no answer.
        kind, options = eng.cfg.answer_type or "text", eng.cfg.answer_options
        keys = [answer_key(kind, s, options) for s in solutions]
        counts = Counter(k for k in keys if k is not None)
        scores = [float(counts[k]) if k is not None else 0.0 for k in keys]
        shown = {k: shown_answer(solutions[keys.index(k)], {"answer_type": kind, "answer_options": options})
                 for k in counts}
        base = dict(scores=scores, solutions=solutions, solution_agents=agents,
                    details={"counts": {shown[k]: c for k, c in counts.items()}})
        if not counts:
            return Outcome(False, f"no readable {kind} answer among the {len(solutions)} solutions", **base)
        top = max(counts.values())
        leaders = [k for k, c in counts.items() if c == top]
        if len(leaders) > 1:
            return Outcome(False, f"tie: {len(leaders)} answers are each given {top} time(s)", **base)
        index = keys.index(leaders[0])
        answer = solutions[index] if kind == "text" else shown[leaders[0]]
        return Outcome(True, f"{shown[leaders[0]]}: given by {top} of {len(solutions)} agents", answer=answer,
                       winner_agent=agents[index], winner_index=index, **base)


@register("protocol", "convergence")
class Convergence(Protocol):
    """Seed 004 without a judge: the final draft most similar to the others (token overlap) wins."""

    score_unit = "mean token overlap"

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
        last = eng.round >= eng.cfg.rounds or forced  # `rounds` is the length of a judged debate
        if eng.cfg.judge_adaptive_break:
            # Seed 002 (and the MAD code): the discriminative judge is asked after every round, the
            # last one included; only when it never finds an answer does it extract one.
            verdict, raw, latest = self._break(eng)
            details = {"judgment": raw, "mode": "discriminative", **self._side(eng, verdict)}
            # The judge's answer in its own words; when it says YES and names whom it supports without
            # one, that speaker's final answer. Here we follow the paper (Eq. 1: True ends the debate)
            # over MAD's code, which goes on while its moderator's debate_answer is empty.
            named = final_answer(latest.get(details.get("side_agent") or "", ""))
            answer = verdict.answer.strip() or named
            if verdict.decision and answer:
                return Outcome(True, "the judge found a correct answer (adaptive break)", answer=answer,
                               winner_agent="judge", details=details)
            if not last:
                return Outcome(False, "the judge wants the debate to go on", details=details)
        if eng.judge_extracts:
            return self._extract(eng, "no verdict by the last round" if eng.cfg.judge_adaptive_break
                                 else "round limit reached")
        return self._select(eng)

    def fallback(self, eng, last: Outcome | None, why: str) -> Outcome:
        if eng.judge_extracts:
            return self._extract(eng, why)
        return first_agent_fallback(last, eng, why)

    @staticmethod
    def _break(eng) -> tuple[Verdict, str, dict[str, str]]:
        """Seed 002's discriminative mode: the judge reads the debate, each speaker's latest reply
        listed by label, and says whether a correct answer is reached and whom it supports. In a
        two-sided debate it names the debater whose side it supports (MAD's moderator reads both
        sides' arguments of the round); in any other paradigm it names the participant whose answer
        is right, or none, and states the answer in its own words (never "affirmative or negative":
        those agents took no sides). Returns (verdict, raw reply, label -> latest reply)."""
        said = [t for t in eng.turns if t.kind in DISCUSSION_KINDS and t.status == "ok"]
        latest = {t.agent: t for t in said}  # each speaker's last reply (turns come in planned order)
        earlier = [f"[{t.agent}] (round {t.round}): {t.content.strip()}" for t in said if latest[t.agent] is not t]
        shown = [(label, latest[label].content) for label in eng.labels if label in latest]
        messages = judge_break_prompt(eng.cfg.question, eng.cfg.task, earlier, shown, len(eng.labels), eng.sides)
        reply = verdict_format(list(eng.labels), sided=bool(eng.sides))
        turn = eng.consult("judge", "judge", messages, eng.cfg.judge_model or eng.cfg.agents[0].model, reply)
        verdict = read_judge_verdict(turn.content, eng.labels) if turn.status == "ok" else Verdict(None, "", None, "")
        return verdict, turn.content, {label: t.content for label, t in latest.items()}

    @staticmethod
    def _side(eng, verdict: Verdict) -> dict[str, Any]:
        """Whom the judge supported: the side (two-sided debates; seed 002 Table 6 counts the judge's
        bias by model family) and the agent who argued it, with its model; in other paradigms the
        participant it named (no side). A MAD-style "Affirmative" / "Negative" verdict names the
        debater who argued that side."""
        sides = eng.sides or {}
        agent = verdict.agent
        if agent is None and verdict.side in ("affirmative", "negative"):
            agent = next((label for label, side in sides.items() if side == verdict.side), None)
        model = next((a.model for a in eng.cfg.agents if a.label == agent), None)
        if agent is None or model is None:
            return {"side": verdict.side if sides else None, "reason": verdict.reason}
        return {"side": sides.get(agent), "side_agent": agent, "side_model": model, "reason": verdict.reason}

    @classmethod
    def _extract(cls, eng, why: str) -> Outcome:
        answer, raw = eng.judge_extract()
        return Outcome(True, why + ": the judge states the answer (extractive mode)", answer=answer,
                       winner_agent="judge",
                       details={"judgment": raw, "mode": "extractive",
                                **cls._side(eng, read_judge_verdict(raw, eng.labels))})

    @staticmethod
    def _select(eng) -> Outcome:
        """Seed 004: the judge reads the final drafts under their labels and names the winner.

        An unreadable choice falls back to the convergence winner (seed 004's rule without a
        judge), and the outcome says so."""
        agents, solutions = eng.solutions()
        drafters, drafts = eng.latest_drafts()
        if not solutions or not drafts:
            return Outcome(False, "no solutions to judge")
        ballot, raw = eng.judge_select(drafters, drafts)
        details = {"judgment": raw, "mode": "selection"}
        if ballot.valid:
            winner, reason, fallback = drafters[ballot.value], f"the judge chose {drafters[ballot.value]}", None
        else:
            index, _ = convergence_winner(drafts)
            winner, reason = drafters[index], "the judge's choice could not be read"
            fallback = f"the judge's choice could not be read ({ballot.reason}); the convergence winner is used"
        index = agents.index(winner) if winner in agents else 0
        scores = [1.0 if a == winner else 0.0 for a in agents]
        return Outcome(True, reason, answer=solutions[index], winner_agent=agents[index], winner_index=index,
                       scores=scores, solutions=solutions, solution_agents=agents, fallback=fallback,
                       details=details)
