"""The per-player Knight-Knave-Spy debate of seed 001 §4.1: paradigm `kks_per_player` and
protocol `kks_player_vote`.

The puzzle is the config's question, its players are `answer_options` (in the puzzle's order)
and its answers are read with `tasks.answer_types.read_answer("kks", ...)`. Rounds, for n
players and `kks_depth` d:

  round 1      every agent's initial proposal, alone: a complete assignment with a confidence
               per player when agents report confidence (seed 001 C.1); with `kks_order`
               "agreed", then every agent's proposed order of the players, having seen all
               proposals (seed 001 Table 1 C4)
  round 1+k    the k-th player of the debate order: d debate passes, the agents one after
               another in the speaking order, each seeing what was said about that player so
               far (seed 001 C.2 debate phase); then every agent's self-adjustment at once: its
               complete assignment again, after deciding whether to revise that player's role
               (C.2 self-adjustment phase)
  round n+2    every agent's final complete assignment, the whole debate in view (C.3)

then `kks_player_vote`: per player, the role most of the agents' latest complete assignments
give; a player whose top count is shared (a tie) is decided by a supervisor model, which reads
the debate and chooses among the tied roles for that player only (§4.1, C.3 supervisor).

Where seed 001 is ambiguous we follow its authors' code (ControlMAD,
debate/chat/debate_system_chat.py, `run_debate_session`):
  * Debate depth (Table 1 "full passes"): the code runs `depth` debate rounds for each player
    and then one self-adjustment (`for depth_round in range(1, self.config.depth + 1)` inside
    the loop over players; control_depth.sh runs depth=2), not whole passes over all players.
  * Final decision: the code asks every agent for a fresh final assignment ("Final Discussion
    and Fresh Voting", the C.3 prompt) and votes on those, not on the last self-adjustments.
  * Fixed order: the puzzle's own player order (the code's ground-truth order).
  * Majority: the code counts each role per player and takes the most common one. A tie
    goes to the supervisor as §4.1 says; the code's own check (`_is_consensus_reached`) never
    calls its supervisor, so there the text is followed.
Our own decisions, where neither says: the "agreed" order is the Borda count (seed 000's
ranked voting, `protocols.counting.tally("ranked_voting")`) of the agents' proposed orders,
ties broken by the puzzle's order (the code asks one extra model, gpt-5-nano, for an order; seed
001 says the agents agree); an agent's unreadable reply counts for nothing (an invalid ballot,
recorded with its reason); the supervisor's unreadable reply is asked again `vote_retries` times,
then each tied player gets the role of the first agent (in configured order) holding one of
its tied roles (seed 000's first-agent fallback), and the decision says so.

Confidence (seed 001 Table 1 C3): asked when `confidence` is on (one 1-10 per player in a
complete assignment, one in a debate reply); shown to the other agents only when
`confidence_visible` (hidden: an agent sees its own confidence only). The supervisor never sees
confidences (its C.3 prompt has none).

What it must not do: call a model itself (every call goes through the engine: `ctx.consult`,
the planned steps), render anything, or raise on a model's reply (every reader returns a value
or an invalid marker with its reason).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from . import prompts
from .answers import json_reply, never_raises, parse_confidence
from .calls import call_problem
from .config import ConfigError, clip
from .events import Turn
from .paradigms import Paradigm, Step
from .protocols.counting import tally
from .protocols.decision import Outcome, Protocol
from .protocols.schemas import (KKS_ROLES, kks_assignment_format, kks_order_format, kks_stance_format,
                                kks_supervisor_format)
from .registry import register
from .tasks.answer_types import read_answer

if TYPE_CHECKING:
    from .ports import ParadigmContext
    from .protocols.decision import DecisionContext

ASSIGNMENT_KINDS = ("proposal", "adjustment", "final")  # turns holding a complete assignment
SUPERVISOR = "supervisor"  # the supervisor's label on its turns and ballots
REASON_CHARS = 300  # an agent's reasoning as quoted to the others


def kks_rounds(cfg) -> int:
    """The rounds of a per-player debate: proposals, one per player, the final assignments."""
    return len(cfg.answer_options or []) + 2


def assignment_text(roles: Mapping[str, str], names: Sequence[str]) -> str:
    """'Ann: knight, Bo: knave' (the players in `names` order), readable by read_answer("kks")."""
    return ", ".join(f"{name}: {roles[name]}" for name in names if name in roles)


def _text_of(turn: Any) -> str:
    """A Turn's content or a view's TurnView text."""
    text = getattr(turn, "content", None)
    return str(text if text is not None else getattr(turn, "text", "") or "")


def _level(value: Any) -> int | None:
    """A confidence 1-10 from a JSON value (a whole number; anything else is none)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    level = round(value)
    return level if 1 <= level <= 10 else None


# ----- readers (model text in, value or reason out; never raise) ---------------------------------
@dataclass(frozen=True)
class AssignmentReply:
    """A complete assignment as read: `roles` (None when unreadable, with `reason`)."""

    roles: Mapping[str, str] | None
    reason: str = ""
    confidence: dict[str, int] = field(default_factory=dict)
    explanation: str = ""

    @property
    def valid(self) -> bool:
        return self.roles is not None


@dataclass(frozen=True)
class StanceReply:
    """A debate-phase reply as read: the role given to the player under discussion (None when
    unreadable, with `reason`), whom the agent agrees and disagrees with, why, how sure."""

    role: str | None
    reason: str = ""
    agree: tuple[str, ...] = ()
    disagree: tuple[str, ...] = ()
    reasoning: str = ""
    confidence: int | None = None


def _unreadable_assignment(error: Exception) -> AssignmentReply:
    return AssignmentReply(None, f"unreadable ({type(error).__name__})")


def _unreadable_stance(error: Exception) -> StanceReply:
    return StanceReply(None, f"unreadable ({type(error).__name__})")


@never_raises(_unreadable_assignment)
def read_assignment(text: str | None, names: Sequence[str]) -> AssignmentReply:
    """A complete assignment: the JSON form {"roles": {...}, "confidence": {...}, "explanation"}
    first, else any form `read_answer("kks")` reads ("Ann: knight", "Ann is a knave", ...)."""
    text = text or ""
    reading = read_answer("kks", text, names=list(names))
    reply: dict[str, Any] = json_reply(text) or {}
    levels = reply.get("confidence")
    by_fold = {name.casefold(): name for name in names}
    confidence: dict[str, int] = {}
    if isinstance(levels, Mapping):
        for key, value in levels.items():
            name, level = by_fold.get(str(key).strip().casefold()), _level(value)
            if name is not None and level is not None:
                confidence[name] = level
    explanation = reply.get("explanation")
    explanation = explanation.strip() if isinstance(explanation, str) else ("" if reply else text.strip())
    if not reading.valid:
        return AssignmentReply(None, reading.reason, confidence, explanation)
    return AssignmentReply(dict(cast(Mapping[str, str], reading.value)), "", confidence, explanation)


@never_raises(_unreadable_stance)
def read_stance(text: str | None, player: str, others: Sequence[str]) -> StanceReply:
    """A debate reply about `player`: {"role": ..., "agree_with": [...], "disagree_with": [...],
    "reasoning": ..., "confidence": N} first, else a statement of `player`'s role in the text."""
    text = text or ""
    reply: dict[str, Any] = json_reply(text) or {}
    stated = reply.get("role")
    reading = read_answer("kks", f"{player}: {stated}" if isinstance(stated, str) else text, names=[player])
    known = {other.casefold(): other for other in others}

    def peers(key: str) -> tuple[str, ...]:
        listed = reply.get(key)
        if not isinstance(listed, list):
            return ()
        named = [known.get(str(item).strip().casefold()) for item in listed]
        return tuple(dict.fromkeys(name for name in named if name))

    reasoning = reply.get("reasoning")
    reasoning = reasoning.strip() if isinstance(reasoning, str) else ("" if reply else text.strip())
    confidence = _level(reply.get("confidence")) if reply else parse_confidence(text)
    role = cast(Mapping[str, str], reading.value)[player] if reading.valid else None
    return StanceReply(role, "" if role else reading.reason, peers("agree_with"), peers("disagree_with"),
                       reasoning, confidence)


def _unreadable_pair(error: Exception) -> tuple[Any, str]:
    return None, f"unreadable ({type(error).__name__})"


@never_raises(_unreadable_pair)
def read_order(text: str | None, names: Sequence[str]) -> tuple[list[str] | None, str]:
    """A proposed debate order: every player exactly once. JSON {"order": [...]} first, else the
    players in the order the text first names them."""
    text = text or ""
    reply = json_reply(text)
    by_fold = {name.casefold(): name for name in names}
    if reply is not None and isinstance(reply.get("order"), list):
        order = [by_fold.get(str(item).strip().casefold(), str(item)) for item in reply["order"]]
    else:
        pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                             + r")(?!\w)", re.IGNORECASE)
        order = list(dict.fromkeys(by_fold[m.group(1).casefold()] for m in pattern.finditer(text[:20_000])))
    unknown = [item for item in order if item not in names]
    if unknown:
        return None, f"{clip(', '.join(unknown), 80)} is not a player"
    if len(set(order)) != len(order):
        return None, "a player is named more than once"
    missing = [name for name in names if name not in order]
    if missing:
        return None, f"the order leaves out {', '.join(missing)}"
    return order, ""


@never_raises(_unreadable_pair)
def read_supervisor(text: str | None, tied: Mapping[str, Sequence[str]]) -> tuple[dict[str, str] | None, str]:
    """The supervisor's roles for the tied players; each must be one of the roles tied for it."""
    reading = read_answer("kks", text or "", names=list(tied))
    if not reading.valid:
        return None, reading.reason
    roles = cast(Mapping[str, str], reading.value)
    for name, role in roles.items():
        if role not in tied[name]:
            return None, f"{name}: {role} is not one of the tied roles ({', '.join(tied[name])})"
    return dict(roles), ""


# ----- counting (pure) ---------------------------------------------------------------------
def borda_order(names: Sequence[str], rankings: Sequence[Sequence[str]]) -> list[str]:
    """The agreed debate order: Borda points of the agents' rankings (seed 000's ranked voting
    count), ties broken by the puzzle's order; no ranking at all keeps the puzzle's order."""
    names = list(names)
    if not rankings:
        return names
    scores = tally("ranked_voting", [[names.index(n) for n in ranking] for ranking in rankings], len(names)).scores
    return [names[i] for i in sorted(range(len(names)), key=lambda i: (-scores[i], i))]


def debate_order(names: Sequence[str], kks_order: str, order_replies: Sequence[str]) -> list[str]:
    """The order the players are discussed in: the puzzle's ("fixed"), or agreed from the
    agents' order replies ("agreed"; unreadable ones count for nothing)."""
    if kks_order != "agreed":
        return list(names)
    rankings = [order for order, _ in (read_order(text, names) for text in order_replies) if order]
    return borda_order(names, rankings)


def player_votes(ballots: Sequence[Mapping[str, str] | None], names: Sequence[str]) -> dict[str, Counter]:
    """For each player, how many valid ballots give each role."""
    return {name: Counter(b[name] for b in ballots if b is not None and name in b) for name in names}


def player_majority(ballots: Sequence[Mapping[str, str] | None],
                    names: Sequence[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(player -> the role most ballots give, player -> the roles tied at the top) (seed 001 §4.1).

    A player no valid ballot names is tied among all three roles."""
    winners: dict[str, str] = {}
    tied: dict[str, list[str]] = {}
    for name, counts in player_votes(ballots, names).items():
        top = max(counts.values(), default=0)
        leaders = [role for role in KKS_ROLES if counts[role] == top]
        if len(leaders) == 1:
            winners[name] = leaders[0]
        else:
            tied[name] = leaders
    return winners, tied


# ----- the debate as the prompts quote it ------------------------------------------------------
class History:
    """The turns of a per-player debate, read and rendered for one viewer's prompt.

    `viewer` None (the supervisor) sees no confidence; an agent sees its own, and the others'
    only when confidence is visible."""

    def __init__(self, cfg, turns: Sequence[Turn], topics: Mapping[int, str], viewer: str | None):
        self.cfg, self.names, self.viewer = cfg, list(cfg.answer_options or []), viewer
        self.labels = [a.label for a in cfg.agents]
        self.topics = topics
        self.turns = [t for t in sorted(turns, key=lambda t: t.seq) if t.status == "ok"]

    def _shows_confidence(self, author: str) -> bool:
        return bool(self.cfg.confidence) and self.viewer is not None and (
            self.cfg.confidence_visible or author == self.viewer)

    def _you(self, author: str) -> bool:
        return author == self.viewer

    def of(self, kinds: tuple[str, ...], rnd: int | None = None) -> list[Turn]:
        return [t for t in self.turns if t.kind in kinds and (rnd is None or t.round == rnd)]

    def latest_assignments(self, before_seq: int | None = None) -> dict[str, Turn]:
        """Each agent's latest complete assignment (proposal, adjustment or final)."""
        latest: dict[str, Turn] = {}
        for turn in self.of(ASSIGNMENT_KINDS):
            if before_seq is None or turn.seq < before_seq:
                latest[turn.agent] = turn
        return latest

    def assignment_entry(self, turn: Turn, head_player: str | None = None) -> str:
        """An agent's complete assignment (or, with `head_player`, its role for that player)."""
        reply = read_assignment(turn.content, self.names)
        if head_player is not None:
            head = reply.roles[head_player] if reply.roles is not None else f"unclear ({reply.reason})"
            level: int | dict[str, int] | None = reply.confidence.get(head_player)
        else:
            head = assignment_text(reply.roles, self.names) if reply.roles is not None \
                else f"unreadable ({reply.reason})"
            level = reply.confidence or None
        shown = level if self._shows_confidence(turn.agent) else None
        return prompts.kks_entry(turn.agent, self._you(turn.agent), head,
                                 [prompts.kks_detail("Reasoning", clip(reply.explanation, REASON_CHARS)),
                                  prompts.kks_confidence(shown)])

    def stance_entry(self, turn: Turn, player: str) -> str:
        others = [label for label in self.labels if label != turn.agent]
        stance = read_stance(turn.content, player, others)
        shown = stance.confidence if self._shows_confidence(turn.agent) else None
        return prompts.kks_entry(turn.agent, self._you(turn.agent), stance.role or f"unclear ({stance.reason})",
                                 [prompts.kks_detail("Agrees with", ", ".join(stance.agree)),
                                  prompts.kks_detail("Disagrees with", ", ".join(stance.disagree)),
                                  prompts.kks_detail("Reasoning", clip(stance.reasoning, REASON_CHARS)),
                                  prompts.kks_confidence(shown)])

    def majority_line(self, rnd: int, player: str) -> str:
        ballots = [read_assignment(t.content, self.names).roles for t in self.of(("adjustment",), rnd)]
        winners, tied = player_majority(ballots, [player])
        role = winners.get(player) or "no majority (" + ", ".join(tied.get(player, [])) + ")"
        return f"Majority after the self-adjustment: {role}"

    def player_round(self, rnd: int, with_adjustments: bool) -> str:
        """One player's round: the debate replies, optionally the adjustments, the majority."""
        player = self.topics.get(rnd, "?")
        lines = [f"Round {rnd}, {player}:"]
        lines += [self.stance_entry(t, player) for t in self.of(("debate",), rnd)]
        if with_adjustments:
            lines += [self.assignment_entry(t).replace("- ", "- self-adjustment of ", 1)
                      for t in self.of(("adjustment",), rnd)]
        lines.append(self.majority_line(rnd, player))
        return "\n".join(lines)


# ----- the paradigm --------------------------------------------------------------------------
@register("paradigm", "kks_per_player")
class KksPerPlayer(Paradigm):
    """Seed 001 §4.1: Knight-Knave-Spy, player by player: proposals, a debate and a self-adjustment per player, final assignments."""

    def __init__(self, cfg) -> None:
        super().__init__(cfg)
        self.names = list(cfg.answer_options or [])
        self._order: list[str] | None = None
        self.topics: dict[int, str] = {}  # round -> the player discussed in it

    @staticmethod
    def check_config(cfg) -> None:
        if cfg.answer_type != "kks":
            raise ConfigError("answer_type", "kks_per_player debates a Knight-Knave-Spy puzzle: set answer_type "
                                             f"to 'kks', not {cfg.answer_type!r}")
        if not cfg.answer_options:
            raise ConfigError("answer_options", "kks_per_player needs the puzzle's player names, one per entry, "
                                                "in the puzzle's order")
        if cfg.protocol != "kks_player_vote":
            raise ConfigError("protocol", "kks_per_player ends in the per-player vote of seed 001 §4.1: set "
                                          f"protocol to 'kks_player_vote', not {cfg.protocol!r}")
        if cfg.all_agents_drafting:
            raise ConfigError("all_agents_drafting", "kks_per_player opens with the agents' independent "
                                                     "proposals already: switch all_agents_drafting off")
        if cfg.connectivity != "full":
            raise ConfigError("connectivity", "in seed 001's debate every agent hears every other: use "
                                              "connectivity 'full'")

    def total_rounds(self, cfg) -> int:
        return kks_rounds(cfg)

    def player_order(self, ctx: ParadigmContext) -> list[str]:
        if self._order is None:
            replies = [t.content for t in ctx.turns if t.kind == "order" and t.round == 1 and t.status == "ok"]
            self._order = debate_order(self.names, self.cfg.kks_order, replies)
        return self._order

    def plan(self, rnd: int, order: list[str], ctx: ParadigmContext) -> list[Step]:
        cfg, agents = self.cfg, tuple(order)
        assignment = kks_assignment_format(self.names, cfg.confidence)
        if rnd == 1:
            steps = [Step(agents, "proposal", assignment)]
            if cfg.kks_order == "agreed":
                steps.append(Step(agents, "order", kks_order_format(self.names)))
            return steps
        if rnd > len(self.names) + 1:
            return [Step(agents, "final", assignment)]
        player = self.player_order(ctx)[rnd - 2]
        self.topics[rnd] = player
        # One pass of the debate asks every agent at once from the same state: the positions at the
        # start of the player's debate and the replies of the earlier passes, never a reply of the same
        # pass (seed 001 App. C.2's debate prompt has only those; ControlMAD asks all agents at once).
        stances = tuple((agent, kks_stance_format(player, [a for a in agents if a != agent], cfg.confidence))
                        for agent in agents)
        debate = [Step(agents, "debate", replies=stances) for _ in range(cfg.kks_depth)]
        return [*debate, Step(agents, "adjustment", assignment)]

    def messages(self, agent: str, step: Step, rnd: int, ctx: ParadigmContext) -> list[dict[str, str]]:
        cfg = self.cfg
        system = prompts.kks_system_prompt(agent, len(cfg.agents), ctx.personas.get(agent, ""), cfg.tit_for_tat)
        common = (system, cfg.question, cfg.task)
        moderator = ctx.take_moderator(agent)
        seen = History(cfg, ctx.turns, self.topics, agent)
        proposals = [seen.assignment_entry(t) for t in seen.of(("proposal",))]
        if step.kind == "proposal":
            return prompts.kks_proposal_prompt(*common, self.names, cfg.confidence, moderator)
        if step.kind == "order":
            return prompts.kks_order_prompt(*common, self.names, proposals, moderator)
        if step.kind == "final":
            rounds = [seen.player_round(r, True) for r in sorted(self.topics)]
            return prompts.kks_final_prompt(*common, proposals, rounds, self.names, cfg.confidence, moderator)
        player = self.topics[rnd]
        earlier = [seen.player_round(r, False) for r in sorted(self.topics) if r < rnd]
        said = [seen.stance_entry(t, player) for t in seen.of(("debate",), rnd)]
        first_debate = min((t.seq for t in seen.of(("debate",), rnd)), default=None)
        if step.kind == "debate":
            before = seen.latest_assignments(first_debate)
            positions = [seen.assignment_entry(before[label], player) for label in seen.labels if label in before]
            others = [label for label in seen.labels if label != agent]
            return prompts.kks_debate_prompt(*common, player, positions, earlier, said, others, cfg.confidence,
                                             moderator)
        latest = seen.latest_assignments()
        latest_entries = [seen.assignment_entry(latest[label]) for label in seen.labels if label in latest]
        return prompts.kks_adjustment_prompt(*common, player, said, earlier, latest_entries, self.names,
                                             cfg.confidence, moderator)

    def read_turn(self, turn: Turn, cfg, shares_answers: bool) -> None:
        turn.agreement = None
        if turn.kind == "debate":
            player = self.topics.get(turn.round, "")
            stance = read_stance(turn.content, player, [a.label for a in cfg.agents if a.label != turn.agent])
            turn.answer = f"{player}: {stance.role}" if stance.role else None
            turn.confidence = stance.confidence if cfg.confidence else None
            return
        reply = read_assignment(turn.content, self.names)
        turn.answer = assignment_text(reply.roles, self.names) if reply.roles is not None else None
        levels = reply.confidence if cfg.confidence else {}
        focus = self.topics.get(turn.round) if turn.kind == "adjustment" else None
        if focus is not None:  # the player just discussed
            turn.confidence = levels.get(focus)
        else:  # proposal / final: the mean over the players
            turn.confidence = round(sum(levels.values()) / len(levels)) if levels else None

    @classmethod
    def round_topics(cls, config: dict[str, Any], turns: list) -> dict[int, str]:
        names = list(config.get("answer_options") or [])
        replies = [_text_of(t) for t in turns if t.kind == "order" and t.round == 1 and t.status == "ok"]
        order = debate_order(names, config.get("kks_order", "fixed"), replies)
        topics = {1: "initial proposals", len(names) + 2: "final assignments"}
        topics.update({k + 2: name for k, name in enumerate(order)})
        return topics


# ----- the protocol ----------------------------------------------------------------------------
@register("protocol", "kks_player_vote")
class KksPlayerVote(Protocol):
    """Seed 001 §4.1: per-player majority of the agents' final assignments; a supervisor model breaks ties."""

    # Every agent's latest complete assignment is its ballot (recorded as a VoteCast); the counting
    # is per player (`player_majority`), not `counting.tally`, so a per-solution vote chart has no bars
    # to show for it and leaves it out.
    casts_ballots = True
    supervisor_calls = True  # a tie costs one supervisor call, re-asked vote_retries times (live.plan_calls)
    score_unit = "players on which the agent's assignment matches the decision"
    scores_per_agent = True

    @staticmethod
    def check_config(cfg) -> None:
        if cfg.paradigm != "kks_per_player":
            raise ConfigError("paradigm", "kks_player_vote counts the complete assignments of the per-player "
                                          f"Knight-Knave-Spy debate: set paradigm to 'kks_per_player', not "
                                          f"{cfg.paradigm!r}")

    def first_round(self, cfg) -> int:
        return kks_rounds(cfg)

    def calls_per_attempt(self, cfg, agents: int, extractions: int) -> int:
        return 0  # the ballots are the last round's assignments; a tie's supervisor is `supervisor_calls`

    def decide(self, ctx: DecisionContext, forced: bool) -> Outcome:
        cfg = ctx.cfg
        names = list(cfg.answer_options or [])
        history = History(cfg, ctx.turns, self._topics(ctx), None)
        latest = history.latest_assignments()
        ballots: list[Mapping[str, str] | None] = []
        texts: list[str] = []
        for agent in ctx.labels:  # the latest complete assignment of each agent: its ballot
            turn = latest.get(agent)
            reply = read_assignment(turn.content, names) if turn else AssignmentReply(None, "no complete assignment")
            ballot = assignment_text(reply.roles, names) if reply.roles is not None else None
            ctx.record_vote(agent, self.name, turn.content if turn else "", ballot, reply.valid,
                            None if reply.valid else reply.reason)
            ballots.append(reply.roles)
            texts.append(ballot or f"(invalid: {reply.reason})")
        winners, tied = player_majority(ballots, names)
        votes = player_votes(ballots, names)
        details: dict[str, Any] = {
            "votes": {name: dict(votes[name]) for name in names},
            "tied": tied, "supervised": {}, "invalid": sum(b is None for b in ballots)}
        fallback = None
        if tied:
            chosen, problem = self._supervise(ctx, history, tied, texts, votes)
            if chosen is None:
                chosen = {name: next((b[name] for b in ballots if b is not None and b.get(name) in roles), roles[0])
                          for name, roles in tied.items()}
                fallback = (f"the supervisor's reply could not be read ({problem}); each tied player gets the "
                            "first agent's role among the tied ones")
            details["supervised"] = chosen
            winners.update(chosen)
        roles = {name: winners[name] for name in names}
        answer = assignment_text(roles, names)
        details["final_answer"] = answer
        scores = [float(sum(b is not None and b.get(n) == roles[n] for n in names)) for b in ballots]
        reason = "per-player majority" + (f"; the supervisor decided {', '.join(tied)}" if tied and not fallback
                                          else "")
        return Outcome(True, reason, answer=answer, scores=scores, solutions=texts, solution_agents=list(ctx.labels),
                       fallback=fallback, details=details)

    def fallback(self, ctx: DecisionContext, last: Outcome | None, why: str) -> Outcome:
        return self.decide(ctx, True)  # the vote always decides (ties go to the supervisor)

    @staticmethod
    def _topics(ctx: DecisionContext) -> dict[int, str]:
        return KksPerPlayer.round_topics(ctx.cfg.to_dict(), ctx.turns)

    def _supervise(self, ctx: DecisionContext, history: History, tied: dict[str, list[str]], texts: list[str],
                   votes: dict[str, Counter]) -> tuple[dict[str, str] | None, str]:
        """Ask the supervisor (re-asked `vote_retries` times) for the tied players' roles.

        Its model is `supervisor_model`, by default the first agent's: then it shares the
        agents' model family, and seed 002 (Table 6) finds a judge favours its own family.
        Seed 001 used a separate, stronger model (gpt-5) as its supervisor."""
        cfg = ctx.cfg
        model = cfg.supervisor_model or cfg.agents[0].model
        proposals = [history.assignment_entry(t) for t in history.of(("proposal",))]
        rounds = [history.player_round(r, True) for r in sorted(history.topics)
                  if 1 < r < len(history.names) + 2 and history.of(("debate", "adjustment"), r)]
        finals = [prompts.kks_entry(agent, False, text, []) for agent, text in zip(ctx.labels, texts)]
        splits = [prompts.kks_entry(name, False, ", ".join(f"{role} {votes[name][role]}" for role in KKS_ROLES), [])
                  for name in tied]
        messages = prompts.kks_supervisor_prompt(cfg.question, cfg.task, proposals, rounds, finals, tied, splits)

        problem = "the supervisor did not answer"
        for attempt in range(1, cfg.vote_retries + 2):
            turn = ctx.consult(SUPERVISOR, "supervisor", messages, model, kks_supervisor_format(tied))
            chosen, problem = read_supervisor(turn.content, tied) if turn.status == "ok" else \
                (None, call_problem(turn, "supervisor"))
            ctx.record_vote(SUPERVISOR, self.name, turn.content, assignment_text(chosen, list(tied)) if chosen
                            else None, chosen is not None, problem or None, attempt)
            if chosen is not None:
                return chosen, ""
            messages = [*messages[:-1], {"role": "user", "content": messages[-1]["content"] +
                        f"\n\nYour previous reply could not be used ({problem}). Answer again in exactly the "
                        "format asked."}]
        return None, problem
