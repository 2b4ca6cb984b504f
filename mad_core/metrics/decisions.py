"""Across debates: how many rounds a decision took, and whom a judge sides with.

Sources:
  * `rounds_to_decision_distribution`, `rounds_to_decision_summary`: seed 000 App. A.2,
    Table 2 (share of debates deciding at turn 1..5, turn 5 = terminated by the cap).
  * `judge_side_agreement`: seed 002 §4.2, Table 6 (how often the judge picks each side,
    and its preference for the side whose model is its own).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from ._common import as_list


def _round_number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def rounds_to_decision_distribution(list_of_rounds: Sequence[int | None]) -> dict[int, int]:
    """{round: number of debates decided at that round}, sorted by round (seed 000 Table 2).

    `list_of_rounds` holds, per debate, the round at which the decision was reached, in
    whatever numbering the caller uses. None (no decision), negatives, booleans and other
    non-integers are left out. Empty input gives {}.
    """
    counts = Counter(r for r in (_round_number(v) for v in as_list(list_of_rounds)) if r is not None)
    return dict(sorted(counts.items()))


def rounds_to_decision_summary(list_of_rounds: Sequence[int | None], max_rounds: int | None = None) -> dict:
    """Summary of rounds to decision (seed 000 Table 2 and §4.1's "3.38 rounds on average").

    Returns {"n": debates given, "decided": debates with a round, "undecided": the rest,
    "mean", "min", "max" over decided debates (None if none), "distribution" (as
    `rounds_to_decision_distribution`), "shares": {round: fraction of all n debates}
    (Table 2's percentages / 100), and, with `max_rounds`, "capped": the fraction that
    reached the cap or went undecided (Table 2's footnote: at turn 5 the discussion is
    terminated)}.
    """
    items = as_list(list_of_rounds)
    decided = [r for r in (_round_number(v) for v in items) if r is not None]
    distribution = rounds_to_decision_distribution(decided)
    n = len(items)
    summary = {
        "n": n,
        "decided": len(decided),
        "undecided": n - len(decided),
        "mean": sum(decided) / len(decided) if decided else None,
        "min": min(decided) if decided else None,
        "max": max(decided) if decided else None,
        "distribution": distribution,
        "shares": {r: c / n for r, c in distribution.items()} if n else {},
    }
    if max_rounds is not None:
        capped = sum(1 for r in decided if r >= max_rounds) + (n - len(decided))
        summary["capped"] = capped / n if n else None
    return summary


# --- judge bias (seed 002 Table 6) ----------------------------------------------------------

_AFFIRMATIVE = {"affirmative", "aff", "pro"}
_NEGATIVE = {"negative", "neg", "con"}


def model_family(model: object) -> str:
    """Default family of a model name: lower-cased, provider prefix dropped.

    "openai/GPT-4" and "gpt-4" are one family; "gpt-4" and "gpt-3.5-turbo" are not (seed
    002 compares GPT-4 with GPT-3.5-Turbo as different LLMs). Pass your own `family` to
    `judge_side_agreement` to group coarser (e.g. every "gpt-*" together).
    """
    text = "" if model is None else str(model).strip().lower()
    return text.rsplit("/", 1)[-1]


def _side(value: object) -> str:
    text = "" if value is None else str(value).strip().lower()
    if text in _AFFIRMATIVE:
        return "affirmative"
    if text in _NEGATIVE:
        return "negative"
    return "tie"


def _record(record: object) -> tuple | None:
    if isinstance(record, Mapping):
        side = record.get("winner", record.get("side"))
        return side, record.get("affirmative"), record.get("negative"), record.get("judge")
    if isinstance(record, (list, tuple)) and len(record) >= 4:
        return tuple(record[:4])
    return None


def judge_side_agreement(records: Sequence[object], family: Callable[[object], str] | None = None) -> dict:
    """How often the judge picks each side, and how often the side of its own model family.

    Seed 002 §4.2, Table 6. `records` hold one debate each: a dict with "winner" (or
    "side"), "affirmative", "negative", "judge" (model names), or a tuple (side, affirmative
    model, negative model, judge model). A side other than affirmative/negative (None,
    "tie", "draw") counts as a tie, like the table's Tie column.

    Returns {"rows": one per (judge, affirmative, negative) configuration in first-seen
    order, each {"judge", "affirmative", "negative", "aff", "neg", "tie", "n",
    "same_family_side" ("affirmative", "negative", or None when neither or both sides share
    the judge's family), "same_family_share" (verdicts for that side / n, None when no such
    side)}, "mixed_debates": debates where exactly one side shares the judge's family,
    "same_family_verdicts": their verdicts for that side, "same_family_share": the ratio
    (None without mixed debates)}. Reading taken: ties stay in the denominator ("share of
    verdicts"), so Table 6 row 3 (GPT-4 judge, Turbo vs GPT-4: 52 / 136 / 12) gives 0.68.
    """
    family = family or model_family
    rows: dict[tuple, dict] = {}
    for raw in as_list(records):
        record = _record(raw)
        if record is None:
            continue
        side, aff, neg, judge = record
        key = (judge, aff, neg)
        row = rows.get(key)
        if row is None:
            own = family(judge)
            aff_same, neg_same = family(aff) == own, family(neg) == own
            same = "affirmative" if aff_same and not neg_same else "negative" if neg_same and not aff_same else None
            row = rows[key] = {"judge": judge, "affirmative": aff, "negative": neg,
                               "aff": 0, "neg": 0, "tie": 0, "n": 0,
                               "same_family_side": same, "same_family_share": None}
        verdict = _side(side)
        row[{"affirmative": "aff", "negative": "neg", "tie": "tie"}[verdict]] += 1
        row["n"] += 1
    mixed = same_verdicts = 0
    for row in rows.values():
        same = row["same_family_side"]
        if same is None:
            continue
        hits = row["aff" if same == "affirmative" else "neg"]
        row["same_family_share"] = hits / row["n"]
        mixed += row["n"]
        same_verdicts += hits
    return {
        "rows": list(rows.values()),
        "mixed_debates": mixed,
        "same_family_verdicts": same_verdicts,
        "same_family_share": same_verdicts / mixed if mixed else None,
    }
