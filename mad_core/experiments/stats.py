"""The statistics a researcher publishes about a sweep: accuracy with its confidence interval,
paired comparisons of configurations, multiple-testing correction, and how discussion changed
answers (issue 21). Pure: numbers in, numbers out; nothing is read from or written to the database.

What each figure means:
  * accuracy (`accuracy_interval`): the share of runs that were correct, pooled over all runs; its
    interval is the range of true accuracies compatible with the data at the chosen level.
  * difference (`paired_comparison`): accuracy of configuration a minus that of b over the units
    (item, seed) both ran; its interval says how large the true difference plausibly is.
  * McNemar p (exact): how surprising the split of the discordant pairs (one right, the other
    wrong) would be if both configurations were equally good; pairs that agree carry no evidence.
  * Holm p (`holm`, `compare_all`): the McNemar p adjusted so that the chance of any false
    "significant" result over the whole sweep stays below the level.
  * Cohen's h: the difference of the two accuracies on the arcsine scale, 2·asin(√pa) − 2·asin(√pb)
    (about 0.2 small, 0.5 medium, 0.8 large).
  * discordant odds ratio: (a right, b wrong) / (a wrong, b right): how many times more often a
    wins a disagreement than b does (> 1 favours a).
  * discussion changes (`discussion_changes`): of the runs with a first-round and a final answer,
    how many went right→wrong, wrong→right, stayed right, stayed wrong; net = wrong→right − right→wrong.

Conventions:
  * `level` is the two-sided confidence level, 0.95 unless told (alpha = 1 − level).
  * Values are 0/1 (bool and 1.0/0.0 count too); None (and NaN) means "not judged" and is skipped;
    any other value is a caller's bug and raises ValueError.
  * Items and clustering: a unit key that is a tuple belongs to the item named by its first element,
    ``(item_id, seed)``; any other key is its own item. Runs of one item are not independent (an
    item is easy or hard for every seed), so every bootstrap resamples whole items.
  * One run per item: the Wilson score interval. Some item repeated: a percentile bootstrap
    clustered by item; when every run is right (or every run wrong) each resample is too and the
    bootstrap collapses to [p, p], so the Wilson interval over the items (each item one
    observation, the conservative count) is given instead ("wilson over items"). Fewer than two items under the bootstrap: the estimate without an interval
    (one item's runs say nothing about the spread between items), said in `note`.
  * Bootstrap size `n_boot` = DEFAULT_N_BOOT (2000): the percentile interval's ends are tail
    quantiles, and 2000 resamples (Efron & Tibshirani advise at least 1000 for percentile
    intervals) keep their Monte-Carlo wobble near the third decimal while one call stays in the
    milliseconds. Everything is deterministic given `seed` (a numpy Generator seeded with it).
  * No pairs (no unit that both configurations judged): the comparison says so (`note`), its
    numbers and p are None. All pairs agreeing (ties only): difference 0, McNemar p = 1.0, odds
    ratio None. Empty input never raises: it gives None figures and a note.

Which library computes what:
  * Wilson interval: statsmodels.stats.proportion.proportion_confint(method="wilson").
  * cluster / paired bootstraps: scipy.stats.bootstrap(paired=True, method="percentile").
  * exact McNemar: statsmodels.stats.contingency_tables.mcnemar(exact=True) (a two-sided binomial
    test of the discordant counts at 1/2).
  * Holm: statsmodels.stats.multitest.multipletests(method="holm").
  * Cohen's h: statsmodels.stats.proportion.proportion_effectsize.
Only counting, sums and ratios are written here.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from itertools import combinations
from typing import Any, Hashable, Iterable, Mapping, Sequence

import numpy as np

# scipy and statsmodels are imported where a figure is computed, not with this module: every Store
# loads the experiments package (its migrations), and a debate or the app's start must not pay ~0.8 s
# for libraries only a sweep's results use.

DEFAULT_LEVEL = 0.95
DEFAULT_N_BOOT = 2000


# ----- values and items ------------------------------------------------------------------------------
def _binary(value: Any) -> int | None:
    """0 or 1; None for None / NaN (not judged); ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise ValueError(f"a correctness value must be 0, 1 or None, not {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"a correctness value must be 0, 1 or None, not {value!r}") from None
    if math.isnan(number):
        return None
    if number not in (0.0, 1.0):
        raise ValueError(f"a correctness value must be 0, 1 or None, not {value!r}")
    return int(number)


def item_of(key: Hashable) -> Hashable:
    """The item a unit key belongs to: the first element of a tuple key, else the key itself."""
    return key[0] if isinstance(key, tuple) and key else key


def _check_level(level: float) -> float:
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, not {level!r}")
    return float(level)


def _percentile_bootstrap(columns: Sequence[np.ndarray], statistic: Any, level: float, n_boot: int,
                          seed: int) -> tuple[float, float]:
    """scipy's percentile bootstrap over rows (items) of `columns`, resampled together."""
    from scipy.stats import bootstrap

    result = bootstrap(tuple(columns), statistic, paired=True, vectorized=True, method="percentile",
                       n_resamples=int(n_boot), confidence_level=level, rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _pooled_ratio(correct: np.ndarray, runs: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(correct, axis=axis) / np.sum(runs, axis=axis)


def _pooled_difference(a: np.ndarray, b: np.ndarray, runs: np.ndarray, axis: int = -1) -> np.ndarray:
    return (np.sum(a, axis=axis) - np.sum(b, axis=axis)) / np.sum(runs, axis=axis)


def _number(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


# ----- accuracy ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Interval:
    """An accuracy and its confidence interval (low/high None when there is none; see `note`)."""

    estimate: float | None
    low: float | None
    high: float | None
    n_items: int
    n_runs: int
    method: str  # "wilson", "cluster bootstrap", or "" when there was nothing to estimate
    level: float = DEFAULT_LEVEL
    note: str = ""

    def text(self, digits: int = 2) -> str:
        """"0.62 [0.48, 0.74]"; the estimate alone (with the note) when there is no interval."""
        if self.estimate is None:
            return f"n/a ({self.note})" if self.note else "n/a"
        if self.low is None or self.high is None:
            return f"{self.estimate:.{digits}f}" + (f" ({self.note})" if self.note else "")
        return f"{self.estimate:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


def accuracy_interval(outcomes: Mapping[Hashable, Iterable[Any]], level: float = DEFAULT_LEVEL, *,
                      n_boot: int = DEFAULT_N_BOOT, seed: int = 0) -> Interval:
    """Pooled accuracy of item -> [0/1 per run] with a Wilson (one run per item) or an item-clustered
    percentile bootstrap (some item repeated) interval. Items without a judged run are left out."""
    from statsmodels.stats.proportion import proportion_confint

    level = _check_level(level)
    per_item = []
    for values in outcomes.values():
        judged = [v for v in (_binary(value) for value in values) if v is not None]
        if judged:
            per_item.append((sum(judged), len(judged)))
    if not per_item:
        return Interval(None, None, None, 0, 0, "", level, "no runs")
    correct = np.array([c for c, _ in per_item], dtype=float)
    runs = np.array([n for _, n in per_item], dtype=float)
    total_correct, total_runs = int(correct.sum()), int(runs.sum())
    estimate = total_correct / total_runs
    if total_runs == len(per_item):  # one run per item: independent Bernoulli trials
        low, high = proportion_confint(total_correct, total_runs, alpha=1.0 - level, method="wilson")
        return Interval(estimate, float(low), float(high), len(per_item), total_runs, "wilson", level)
    if len(per_item) < 2:
        return Interval(estimate, None, None, 1, total_runs, "cluster bootstrap", level,
                        "one item: no interval")
    if total_correct in (0, total_runs):  # every run right (or wrong): every resample is too, [p, p] says nothing
        items = len(per_item)  # so the items count as the independent observations they are
        low, high = proportion_confint(items if total_correct else 0, items, alpha=1.0 - level, method="wilson")
        return Interval(estimate, float(low), float(high), items, total_runs, "wilson over items", level,
                        "every run agreed: Wilson over the items")
    low, high = _percentile_bootstrap((correct, runs), _pooled_ratio, level, n_boot, seed)
    return Interval(estimate, low, high, len(per_item), total_runs, "cluster bootstrap", level)


# ----- paired comparison ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """Configuration a against configuration b on the units both judged (figures None without pairs)."""

    n_pairs: int
    n_items: int
    acc_a: float | None
    acc_b: float | None
    diff: float | None  # acc_a - acc_b
    diff_low: float | None
    diff_high: float | None
    p_mcnemar: float | None
    a_right_b_wrong: int
    a_wrong_b_right: int
    both_right: int
    both_wrong: int
    cohens_h: float | None
    odds_ratio: float | None  # a_right_b_wrong / a_wrong_b_right; None when the latter is 0
    level: float = DEFAULT_LEVEL
    note: str = ""
    config_a: Any = None  # set by compare_all
    config_b: Any = None
    p_holm: float | None = None  # set by compare_all

    def to_record(self) -> dict[str, Any]:
        """A flat, CSV-ready dict (configuration keys as text)."""
        record = asdict(self)
        first = ["config_a", "config_b", "n_pairs", "diff", "diff_low", "diff_high", "p_mcnemar", "p_holm",
                 "cohens_h", "odds_ratio", "a_right_b_wrong", "a_wrong_b_right"]
        ordered = {key: record.pop(key) for key in first}
        for key in ("config_a", "config_b"):
            value = ordered[key]
            ordered[key] = value if value is None or isinstance(value, (str, int, float)) else str(value)
        return {**ordered, **record}

    def text(self, digits: int = 2) -> str:
        """"+0.12 [0.03, 0.21], McNemar p = 0.004 (40 pairs)"."""
        if self.diff is None:
            return f"n/a ({self.note})" if self.note else "n/a"
        interval = (f" [{self.diff_low:.{digits}f}, {self.diff_high:.{digits}f}]"
                    if self.diff_low is not None and self.diff_high is not None else "")
        holm = f", Holm p = {_number(self.p_holm, 3)}" if self.p_holm is not None else ""
        return (f"{self.diff:+.{digits}f}{interval}, McNemar p = {_number(self.p_mcnemar, 3)}{holm}"
                f" ({self.n_pairs} pairs)")


def _pairs(a: Mapping[Hashable, Any], b: Mapping[Hashable, Any]) -> list[tuple[Hashable, int, int]]:
    """(key, a value, b value) over the keys both judged, in a's order."""
    pairs = []
    for key, value in a.items():
        if key not in b:
            continue
        left, right = _binary(value), _binary(b[key])
        if left is not None and right is not None:
            pairs.append((key, left, right))
    return pairs


def _mcnemar_p(table: list[list[int]]) -> float:
    if table[0][1] + table[1][0] == 0:
        return 1.0  # ties only: no evidence either way (statsmodels says 1.0 too)
    from statsmodels.stats.contingency_tables import mcnemar

    return float(mcnemar(np.array(table), exact=True).pvalue)


def _paired_interval(pairs: list[tuple[Hashable, int, int]], level: float, n_boot: int,
                     seed: int) -> tuple[float | None, float | None, int]:
    """The item-clustered percentile bootstrap interval of acc_a - acc_b, and the number of items."""
    sums: dict[Hashable, list[int]] = {}
    for key, left, right in pairs:
        row = sums.setdefault(item_of(key), [0, 0, 0])
        row[0] += left
        row[1] += right
        row[2] += 1
    if len(sums) < 2:
        return None, None, len(sums)
    differences = {(right_a - right_b) / runs for right_a, right_b, runs in sums.values()}
    if len(differences) == 1:  # every resample gives the same figure: [d, d] would claim certainty it has not
        return None, None, len(sums)
    columns = np.array(list(sums.values()), dtype=float).T
    low, high = _percentile_bootstrap(tuple(columns), _pooled_difference, level, n_boot, seed)
    return low, high, len(sums)


def paired_comparison(a: Mapping[Hashable, Any], b: Mapping[Hashable, Any], *, level: float = DEFAULT_LEVEL,
                      n_boot: int = DEFAULT_N_BOOT, seed: int = 0) -> Comparison:
    """Configuration a against b over the unit keys (item, seed) both judged: difference a − b with an
    item-clustered paired bootstrap interval, exact McNemar p, Cohen's h, discordant odds ratio."""
    from statsmodels.stats.proportion import proportion_effectsize

    level = _check_level(level)
    pairs = _pairs(a, b)
    if not pairs:
        return Comparison(0, 0, None, None, None, None, None, None, 0, 0, 0, 0, None, None, level, "no pairs")
    n = len(pairs)
    both_right = sum(1 for _, x, y in pairs if x and y)
    a_only = sum(1 for _, x, y in pairs if x and not y)
    b_only = sum(1 for _, x, y in pairs if y and not x)
    both_wrong = n - both_right - a_only - b_only
    acc_a, acc_b = (both_right + a_only) / n, (both_right + b_only) / n
    low, high, n_items = _paired_interval(pairs, level, n_boot, seed)
    note = "" if low is not None else ("one item: no interval" if n_items < 2 else
                                       "every item differed the same way: no spread to resample, no interval")
    return Comparison(
        n_pairs=n, n_items=n_items, acc_a=acc_a, acc_b=acc_b, diff=acc_a - acc_b, diff_low=low, diff_high=high,
        p_mcnemar=_mcnemar_p([[both_right, a_only], [b_only, both_wrong]]),
        a_right_b_wrong=a_only, a_wrong_b_right=b_only, both_right=both_right, both_wrong=both_wrong,
        cohens_h=float(proportion_effectsize(acc_a, acc_b)), odds_ratio=a_only / b_only if b_only else None,
        level=level, note=note)


# ----- multiple comparisons ------------------------------------------------------------------------
def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values in the same order; None (and NaN) entries stay None and are not counted."""
    present = [i for i, p in enumerate(p_values) if p is not None and not math.isnan(float(p))]
    adjusted: list[float | None] = [None] * len(p_values)
    if present:
        from statsmodels.stats.multitest import multipletests

        corrected = multipletests([float(p_values[i]) for i in present], method="holm")[1]
        for index, value in zip(present, corrected):
            adjusted[index] = float(value)
    return adjusted


def comparison_pairs(keys: Sequence[Hashable], baselines: Sequence[Hashable] | None = None
                     ) -> list[tuple[Hashable, Hashable]]:
    """The (a, b) pairs `compare_all` tests, in this order.

    Without baselines: every unordered pair of configurations once, a before b in `keys`' order
    (k·(k−1)/2 comparisons). With baselines: each configuration that is not a baseline against each
    baseline, a = the configuration, b = the baseline (so diff > 0 means better than the baseline),
    then each pair of baselines (earlier first); nothing else, so Holm corrects fewer tests."""
    keys = list(keys)
    if baselines is None:
        return list(combinations(keys, 2))
    unknown = [base for base in baselines if base not in keys]
    if unknown:
        raise ValueError(f"baselines not among the configurations: {unknown!r}")
    bases = list(dict.fromkeys(baselines))
    others = [key for key in keys if key not in bases]
    return [(key, base) for key in others for base in bases] + list(combinations(bases, 2))


def compare_all(per_config: Mapping[Hashable, Mapping[Hashable, Any]], *,
                baselines: Sequence[Hashable] | None = None, level: float = DEFAULT_LEVEL,
                n_boot: int = DEFAULT_N_BOOT, seed: int = 0) -> list[Comparison]:
    """Every comparison of `comparison_pairs` (configuration -> {(item, seed): 0/1}) by
    `paired_comparison` (same seed for each), with Holm applied across all of them (`p_holm`)."""
    results = [replace(paired_comparison(per_config[x], per_config[y], level=level, n_boot=n_boot, seed=seed),
                       config_a=x, config_b=y)
               for x, y in comparison_pairs(list(per_config), baselines)]
    adjusted = holm([result.p_mcnemar for result in results])
    return [replace(result, p_holm=p) for result, p in zip(results, adjusted)]


# ----- discussion ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Changes:
    """How the runs' correctness moved from the first round to the final answer."""

    right_to_wrong: int
    wrong_to_right: int
    stayed_right: int
    stayed_wrong: int
    skipped: int  # runs without both a first and a final judgement

    @property
    def n(self) -> int:
        return self.right_to_wrong + self.wrong_to_right + self.stayed_right + self.stayed_wrong

    @property
    def net(self) -> int:
        """wrong→right − right→wrong: > 0 when discussion helped on balance."""
        return self.wrong_to_right - self.right_to_wrong

    def to_record(self) -> dict[str, Any]:
        return {**asdict(self), "n": self.n, "net": self.net}


def discussion_changes(first: Mapping[Hashable, Any], final: Mapping[Hashable, Any]) -> Changes:
    """Count right→wrong, wrong→right, stayed right, stayed wrong over the run keys with both a
    first-round and a final 0/1 (None or a key on one side only: skipped)."""
    counts = {(1, 0): 0, (0, 1): 0, (1, 1): 0, (0, 0): 0}
    skipped = 0
    for key in dict.fromkeys([*first, *final]):
        start, end = _binary(first.get(key)), _binary(final.get(key))
        if start is None or end is None:
            skipped += 1
        else:
            counts[(start, end)] += 1
    return Changes(counts[(1, 0)], counts[(0, 1)], counts[(1, 1)], counts[(0, 0)], skipped)


__all__ = ["DEFAULT_LEVEL", "DEFAULT_N_BOOT", "Interval", "accuracy_interval", "Comparison", "paired_comparison",
           "holm", "comparison_pairs", "compare_all", "Changes", "discussion_changes", "item_of"]
