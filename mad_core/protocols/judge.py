"""The judge protocol (seed 002 / seed 004): a judge model decides.

Discriminative mode (`judge_adaptive_break`): the judge is asked after every round whether a
correct answer is reached and may end the debate; at the round limit it picks the best final
draft (selection) or, in the two-sided paradigm, states the answer itself (extractive mode).
A judge that picks a solution by its number casts one simple vote (`JudgeVote`).
"""
from __future__ import annotations

from typing import Any

from ..answers import final_answer
from ..events import DISCUSSION_KINDS
from ..metrics import convergence_winner
from ..prompts import judge_break_prompt
from ..registry import register
from .ballots import Verdict, read_judge_verdict
from .decision import DecisionContext, Outcome, Protocol, first_agent_fallback
from .schemas import verdict_format
from .simple_voting import SimpleVoting


class JudgeVote(SimpleVoting):
    """The judge's pick among numbered solutions: one simple vote, read as `simple_voting` reads one."""

    name = "judge"
    instruction = "Pick the solution that answers the question best. Reply with its number only."
    ballot_name = "vote"


@register("protocol", "judge")
class Judge(Protocol):
    """A judge model decides (seed 002 / seed 004).

    With `judge_adaptive_break`, the judge is asked after every round whether a correct answer
    has been reached and may end the debate early (discriminative mode). At the round limit it
    picks the best final answer (selection) or, in the two-sided paradigm, states the answer
    itself from the whole debate (extractive mode).
    """

    options = ("judge_model", "judge_adaptive_break", "vote_retries")
    ballot = JudgeVote  # a pick among numbered solutions (`engine.read_label_choice`'s last reading)

    def first_round(self, cfg) -> int:
        return 1 if cfg.judge_adaptive_break else cfg.rounds

    def calls_per_attempt(self, cfg, agents: int, extractions: int) -> int:
        return 1  # one judge call

    def decide(self, eng: DecisionContext, forced: bool) -> Outcome:
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

    def fallback(self, eng: DecisionContext, last: Outcome | None, why: str) -> Outcome:
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
