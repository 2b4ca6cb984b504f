"""Each stored round's topic and step plan, for debates recorded before rounds carried them.

Since migration m008 a round is stored with what it is about (`RoundStarted.topic`, seed 001's
per-player debate: the player discussed) and who speaks together in it (`RoundStarted.steps`),
as the engine announced them, so the view and the metric report read them from the round and
never need the paradigm that made them. `m009_round_plans` fills both in once for the rounds of
debates stored earlier, the way the report used to derive them at every read: the paradigm's
`round_topics` from the stored config and turns, and its `steps` for the round's speaking order
(none for a paradigm that plans its own rounds, as the engine records them now). A debate whose
config no longer reads, or whose paradigm this version lacks, keeps rounds without them.
"""
from __future__ import annotations

import json
from typing import Any

from sqlite_utils import Database

from . import registry
from .config import DebateConfig
from .paradigms import Paradigm
from .store.migrations import feature_migrations
from .store.rows import turn_from_row

MIGRATIONS = feature_migrations()


def _paradigm(config: dict[str, Any]) -> tuple[Paradigm, DebateConfig] | None:
    try:
        cfg = DebateConfig.from_dict(config, check_models=False)
        return registry.get("paradigm", cfg.paradigm)(cfg), cfg
    except Exception:  # noqa: BLE001 - an old or odd config: its rounds keep no plan
        return None


def _steps(paradigm: Paradigm, cfg: DebateConfig, rnd: int, order: list[str], turns: list) -> list[list[str]] | None:
    """Who spoke together in round `rnd`, as the engine records it (engine._run_round)."""
    if any(t.kind == "draft" and t.round == rnd for t in turns):  # AAD's drafts: everyone at once
        return [list(order)]
    if type(paradigm).plan is not Paradigm.plan:  # a paradigm that plans its own rounds
        return None
    try:
        return [list(group) for group in paradigm.steps(list(order), cfg)]
    except Exception:  # noqa: BLE001 - a paradigm that cannot plan this order
        return None


def backfill(db: Database, debate_id: str, config: dict[str, Any]) -> None:
    """Fill in the topic and step plan of one stored debate's rounds that have none."""
    made = _paradigm(config)
    if made is None:
        return
    paradigm, cfg = made
    turns = [turn_from_row(row) for row in db.query("select * from turns where debate_id = ? order by seq",
                                                    [debate_id])]
    try:
        topics = paradigm.round_topics(config, turns)
    except Exception:  # noqa: BLE001 - topics are a heading's nicety
        topics = {}
    labels = [agent.label for agent in cfg.agents]
    for row in list(db.query("select id, round, speakers from rounds where debate_id = ?", [debate_id])):
        order = json.loads(row["speakers"] or "null") or labels
        steps = _steps(paradigm, cfg, row["round"], order, turns)
        db["rounds"].update(row["id"], {"topic": topics.get(row["round"]),
                                        "steps": json.dumps(steps) if steps is not None else None})


@MIGRATIONS()
def m009_round_plans(db: Database) -> None:
    """The rounds of debates stored before m008 get their topic and step plan."""
    for row in list(db.query("select id, config from debates")):
        try:
            config = json.loads(row["config"] or "{}")
        except ValueError:
            continue
        if isinstance(config, dict):
            backfill(db, row["id"], config)
