"""Discussion paradigms: who speaks when, and who sees what.

A paradigm turns a round's speaking order into steps (agents in one step speak at the same
time) and decides which earlier turns each agent sees. Sources: seed 000 Appendix C (memory,
relay, report, debate, collective refinement), Du et al. via seed 004 (simultaneous),
seed 003 / ChatEval (one-by-one), seed 002 (two-sided debate with a judge).

`history` below is every finished, successful discussion turn so far (all rounds, including
the current one), in speaking order. The memory window is applied by the engine afterwards.

A paradigm whose rounds are made of phases of their own (seed 001's per-player debate,
`kks_mode.py`) plans each round itself (`plan`: `Step`s with their turn kind and reply format)
and writes its agents' prompts (`messages`); it may fix the number of rounds (`total_rounds`)
and read its turns' answers itself (`read_turn`). The engine only calls these hooks: it never
tests a paradigm's name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .answers import final_answer, parse_agreement, parse_confidence
from .config import ConfigError
from .events import Turn
from .registry import register

if TYPE_CHECKING:
    from .ports import ParadigmContext


@dataclass(frozen=True)
class Step:
    """Agents who speak at the same time, the kind of their turns and the reply format asked
    (a `protocols.schemas.ReplyFormat`, or None when they write freely); `replies` gives an agent
    a format of its own (e.g. one that names the other agents) and wins over `reply`."""

    agents: tuple[str, ...]
    kind: str = "discussion"
    reply: Any = None
    replies: tuple[tuple[str, Any], ...] = ()

    def reply_for(self, agent: str) -> Any:
        return dict(self.replies).get(agent, self.reply)

MODERATOR_ROLE = ("You are the moderator of this discussion: you see every message. Sum up the points made so "
                  "far and propose the solution the group should consider.")
MEMBER_ROLE = "You speak only with the moderator and see only the moderator's messages besides your own."


class Paradigm:
    """Base: agents speak one after another and see everything said."""

    chat_history = False  # show history as alternating chat messages instead of one block
    default_tit_for_tat: int | None = None
    judge_extracts = False  # a judge states the answer itself at the end (else it selects one)
    summarizes = False  # a summarizer condenses the discussion after every round
    # Everyone in a round answers at once, so the round's speaking order is not who speaks when but
    # where each earlier answer stands in the prompts (seed 003 §3): see `arrange`.
    simultaneous = False

    def __init__(self, cfg) -> None:
        self.cfg = cfg

    def steps(self, order: list[str], cfg) -> list[list[str]]:
        return [[agent] for agent in order]

    def visible(self, agent: str, rnd: int, history: list[Turn], order: list[str]) -> list[Turn]:
        return list(history)

    def role(self, agent: str, order: list[str], cfg) -> str:
        return ""

    def judge_sides(self, cfg) -> dict[str, str] | None:
        """The side each debater argues (label -> side), for a judge that names the side it supports
        (two-sided debates, seed 002); None when the agents take no sides."""
        return None

    def arrange(self, seen: list[Turn], order: list[str]) -> list[Turn]:
        """The turns an agent sees, in the order its prompt shows them (`seen` is in seq order).

        Sequential paradigms keep the order the turns were said in: the speaking order already
        decided who spoke when. Simultaneous ones show every earlier round's answers in the order
        computed for the round being asked (`order`), so the order of round r reaches round r's
        prompts. The paper (seed 003 Algorithm 1) computes the order from the previous round's
        answers and says it positions the agents' viewpoints; where it does not say how a prompt
        shows them, we follow the MADC code, which sorts the other agents' previous-round solutions
        by the new order in each prompt. Other turns (a summary) close their round."""
        if not self.simultaneous:
            return list(seen)
        place = {agent: i for i, agent in enumerate(order)}
        return sorted(seen, key=lambda t: (t.round, place.get(t.agent, len(order)), t.seq))

    # ----- hooks of paradigms that plan their own rounds (see the module docstring) -----------
    def total_rounds(self, cfg) -> int | None:
        """The number of rounds this paradigm always runs, or None: the config's max_rounds."""
        return None

    def plan(self, rnd: int, order: list[str], ctx: ParadigmContext) -> list[Step] | None:
        """Round `rnd`'s steps, or None for the discussion steps of `steps()` with the engine's prompts.

        `ctx` is the running debate as a paradigm sees it (`ports.ParadigmContext`: settings, turns,
        personas, moderator messages)."""
        return None

    def messages(self, agent: str, step: Step, rnd: int, ctx: ParadigmContext) -> list[dict[str, str]]:
        """The prompt of `agent` in a planned step (only asked when `plan` returned steps)."""
        raise NotImplementedError

    def read_turn(self, turn: Turn, cfg, shares_answers: bool) -> None:
        """Fill a finished discussion turn's answer, agreement and confidence from its text."""
        turn.answer = final_answer(turn.content) if shares_answers else None
        turn.agreement = parse_agreement(turn.content)
        turn.confidence = parse_confidence(turn.content) if cfg.confidence else None

    @classmethod
    def round_topics(cls, config: dict[str, Any], turns: list) -> dict[int, str]:
        """What each round is about, for headers ({} when rounds are just rounds). Pure: from the
        stored config and the turns (objects with round, kind, status and text or content)."""
        return {}


@register("paradigm", "memory")
class Memory(Paradigm):
    """One after another; every answer is visible to everyone (within the memory window)."""


@register("paradigm", "one_by_one")
class OneByOne(Paradigm):
    """ChatEval's one-by-one talk: each speaker gets the whole conversation as chat messages."""

    chat_history = True


@register("paradigm", "relay")
class Relay(Paradigm):
    """One after another; each agent sees only the previous speaker's answer."""

    def visible(self, agent: str, rnd: int, history: list[Turn], order: list[str]) -> list[Turn]:
        others = [t for t in history if t.agent != agent]
        return others[-1:]


@register("paradigm", "report")
class Report(Paradigm):
    """The first configured agent moderates and sees all; the others see only the moderator (and themselves).

    The moderator is a role, not a position: whatever the speaking order, it stays the first
    configured agent (seed 000 App. C); the order arranges the members."""

    @property
    def moderator(self) -> str:
        return self.cfg.agents[0].label

    def members(self, order: list[str]) -> list[str]:
        return [agent for agent in order if agent != self.moderator]

    def steps(self, order: list[str], cfg) -> list[list[str]]:
        members = self.members(order)
        # Members cannot see each other, so they answer the moderator at the same time.
        return [[self.moderator], members] if members else [[self.moderator]]

    def visible(self, agent: str, rnd: int, history: list[Turn], order: list[str]) -> list[Turn]:
        moderator = self.moderator
        if agent == moderator:
            return list(history)
        return [t for t in history if t.agent in (moderator, agent)]

    def role(self, agent: str, order: list[str], cfg) -> str:
        return MODERATOR_ROLE if agent == cfg.agents[0].label else MEMBER_ROLE


@register("paradigm", "debate")
class Debate(Report):
    """Members debate among themselves for `debate_subrounds` exchanges, then the moderator speaks again."""

    def steps(self, order: list[str], cfg) -> list[list[str]]:
        members = [[agent] for agent in self.members(order)]
        return [[self.moderator]] + members * cfg.debate_subrounds

    def visible(self, agent: str, rnd: int, history: list[Turn], order: list[str]) -> list[Turn]:
        if agent == self.moderator:
            return list(history)
        return [t for t in history if t.agent in (self.moderator, agent) or t.round == rnd]

    def role(self, agent: str, order: list[str], cfg) -> str:
        if agent == self.moderator:
            return MODERATOR_ROLE
        return "You debate with the other members this round; the moderator then reads your exchange."


@register("paradigm", "simultaneous")
class Simultaneous(Paradigm):
    """Du et al.: everyone answers at once, having seen all answers of the earlier rounds."""

    simultaneous = True

    def steps(self, order: list[str], cfg) -> list[list[str]]:
        return [list(order)]

    def visible(self, agent: str, rnd: int, history: list[Turn], order: list[str]) -> list[Turn]:
        return [t for t in history if t.round < rnd]


@register("paradigm", "simultaneous_summarizer")
class SimultaneousWithSummarizer(Simultaneous):
    """Simultaneous talk with a summarizer (ChatEval, seed 003 Appendix): everyone answers at once;
    after every round another model summarizes the messages so far, and that summary is what each
    agent sees of the others, beside its own earlier replies."""

    summarizes = True

    def visible(self, agent: str, rnd: int, history: list[Turn], order: list[str]) -> list[Turn]:
        return [t for t in history if t.round < rnd and (t.agent == agent or t.kind == "summary")]

    @staticmethod
    def check_config(cfg) -> None:
        # The summary condenses every agent's messages for everyone, so a sparse graph would
        # change nothing: seed 003 studies the two as separate settings.
        if cfg.connectivity != "full":
            raise ConfigError("connectivity", "the summarizer shares everyone's messages with everyone; "
                                              "use connectivity 'full' or another paradigm")


def visible_authors(cfg, agent: str) -> set[str] | None:
    """The agents whose turns `agent` may see (seed 003's connectivity); None means everyone.

    "ring": each agent sees its two neighbours in the configured order (one with two agents);
    a mapping names them explicitly. An agent always sees its own turns."""
    if cfg.connectivity == "full":
        return None
    labels = [a.label for a in cfg.agents]
    if cfg.connectivity == "ring":
        at = labels.index(agent)
        return {agent, labels[at - 1], labels[(at + 1) % len(labels)]}
    return {agent, *cfg.connectivity.get(agent, [])}


@register("paradigm", "collective_refinement")
class CollectiveRefinement(Simultaneous):
    """Collective Improvement (seed 000 §5): no turn order and no exchange within a round; each
    agent sees only the previous round's responses, in full, its own included (MALLM shows the
    previous round's full responses, not just their answers)."""

    def visible(self, agent: str, rnd: int, history: list[Turn], order: list[str]) -> list[Turn]:
        return [t for t in history if t.round == rnd - 1]

    @staticmethod
    def check_config(cfg) -> None:
        from .registry import get

        if get("protocol", cfg.protocol).needs_turn_order:
            raise ConfigError("protocol", f"collective_refinement works only with voting protocols (seed 000 §5: it "
                                          f"removes the turn order, so no agreement can form), not {cfg.protocol!r}")


@register("paradigm", "two_sided")
class TwoSided(Paradigm):
    """Seed 002: two to four debaters argue one by one in a fixed order (the configured one); a judge decides.

    Debater 1 argues the affirmative side, debater 2 the negative side (seed 002 §2). Seed 002 §4.3
    (Table 7) runs MAD with three and four debaters ("N debaters ... speak one by one in a fixed order
    and express their arguments based on the previous debate history") but says nothing of what the
    others argue, and the authors' code (Skytliang/Multi-Agents-Debate, code/debate4tran.py) has only
    the affirmative and the negative player. Our choice: each later debater weighs every position
    argued before it, disputes the points it finds wrong and gives its own answer (a third and a
    fourth voice against the earlier ones, as the negative side is against the affirmative)."""

    default_tit_for_tat = 2
    judge_extracts = True  # seed 002: at the round limit the judge extracts the answer itself
    MIN_DEBATERS, MAX_DEBATERS = 2, 4  # seed 002 Table 7: 2 (the default), 3 and 4 debaters
    SIDES = ("affirmative", "negative", "third debater", "fourth debater")  # how the judge sees each
    ROLES = (
        "You argue the affirmative side: state your answer and defend it with reasons.",
        "You argue the negative side: dispute the affirmative side's points, give your reasons and your own answer.",
        "You are the third debater: weigh the positions argued before you, dispute the points you find wrong, "
        "give your reasons and your own answer.",
        "You are the fourth debater: weigh the positions argued before you, dispute the points you find wrong, "
        "give your reasons and your own answer.",
    )

    def steps(self, order: list[str], cfg) -> list[list[str]]:
        return [[agent.label] for agent in cfg.agents]

    def role(self, agent: str, order: list[str], cfg) -> str:
        labels = [a.label for a in cfg.agents]
        return self.ROLES[labels.index(agent)] if agent in labels[:len(self.ROLES)] else ""

    def judge_sides(self, cfg) -> dict[str, str] | None:
        return {agent.label: side for agent, side in zip(cfg.agents, self.SIDES)}

    @classmethod
    def check_config(cls, cfg) -> None:
        if not cls.MIN_DEBATERS <= len(cfg.agents) <= cls.MAX_DEBATERS:
            raise ConfigError("agents", f"two_sided needs {cls.MIN_DEBATERS} to {cls.MAX_DEBATERS} debaters "
                                        f"(affirmative, negative, and up to two more), got {len(cfg.agents)}")
        if cfg.protocol != "judge":
            raise ConfigError("protocol", f"two_sided debates are decided by a judge: set protocol to 'judge', not {cfg.protocol!r}")
        if not cfg.judge_model and len({agent.model for agent in cfg.agents}) > 1:
            # Seed 002 warns that a judge favours its own model family: with debaters of two
            # models, which one judges must be a choice, not a default.
            raise ConfigError("judge_model", "the debaters use different models: name the judge's model "
                                             "(a judge favours its own model family, seed 002)")
