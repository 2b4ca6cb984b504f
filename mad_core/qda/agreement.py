"""How well coders agree (issue 22): the figures a researcher reports about a coding project, per
code and overall, for any two or more coders over the units they all coded.

Units (every result names its kind, ``unit``):
  * ``"turn"``: a unit is one turn. A coder applied code c to the turn when any of their codings of
    c lies in it, the whole turn or a passage of it.
  * ``"character"``: a unit is one character position of a turn's text. A coder applied c at that
    character when one of their codings of c covers it (offsets are clipped to the turn's length).
    Characters are far from independent (a passage is many neighbouring characters), so intervals
    over characters are much too narrow: read them as descriptive (each character row says so).
Which units count: the turns of the debates that every compared coder has coded (a coder has coded
a debate when they made at least one coding in it, of any code); "over the units they all coded".
A turn of such a debate with no coding of c by a coder counts as "c absent" for that coder. The
debates only some of them coded are left out, and the note says how many.

Per code, each unit is one binary decision (applied 1 / not 0). Overall: every (unit, code)
decision, over the codes of the table, is pooled as one item (n units x n codes items) and the same
figures are computed on the pooled items; each overall row's note says so. `nominal_agreement` is
the same computation for any units x coders table of nominal values (None/NaN missing), which the
binary path uses too.

Figures (`Figure`: method, value, interval, number of units, note) and who computes them:
  * percent agreement: the share of units (rated by two or more coders) on which every coder gave
    the same value; numpy counting; no interval.
  * Cohen's kappa, exactly two coders only: scikit-learn ``cohen_kappa_score``; its interval from
    statsmodels ``inter_rater.cohens_kappa`` on the coders' contingency table (asymptotic standard
    error, normal interval, not clipped; statsmodels gives 95 % limits, another level is the same
    interval with its own normal quantile), whose kappa is checked against scikit-learn's.
  * Fleiss' kappa: statsmodels ``fleiss_kappa`` on ``aggregate_raters`` when no rating is missing;
    with missing ratings statsmodels has no estimate and irrCAC's (Gwet's generalisation, 2014) is
    given. Its interval: irrCAC ``CAC(...).fleiss()``.
  * Krippendorff's alpha (nominal): the ``krippendorff`` package's ``alpha``; interval: irrCAC
    ``CAC(...).krippendorff()``.
  * Gwet's AC1: irrCAC ``CAC(...).gwet()``, value and interval.
irrCAC's intervals are Student-t intervals with n - 1 degrees of freedom and are clipped at 1; its
numbers come back as numpy types and are turned into floats here. The categories are always given
to irrCAC: it otherwise infers them with ``DataFrame.stack()``, which under pandas 3 keeps NaN and
so counts "missing" as a category (AC1 of Gwet's 12 x 4 example would be 0.7855, not 0.7754).
Only counting and the choice of units are written here; `level` (0.95 unless told) must lie in
[0.90, 0.99], the range irrCAC accepts.

Undefined figures are None, with a plain-words note: fewer than two coders, no unit rated by two
coders, every rating the same value (kappa, alpha and AC1 are 0/0 or 1 by construction), an
interval with no spread between units (low/high None). Odd data (no codings, one coder, a code
nobody used, offsets past a turn's end) never raises; a programming error (an unknown unit kind, a
level out of range, a repeated coder) raises ValueError naming the argument.

Nothing here draws, reads or writes a database, or calls a model.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

import numpy as np

from .model import Code, Coding

# scikit-learn, statsmodels, krippendorff, irrCAC and pandas are imported where a figure is
# computed: importing the coding package must stay cheap for pages that only show passages.

UNIT_KINDS = ("turn", "character")
DEFAULT_LEVEL = 0.95
OVERALL = "overall"
FIGURE_FIELDS = ("percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1")
PERCENT, COHEN, FLEISS = "percent agreement", "Cohen's kappa", "Fleiss' kappa"
KRIPPENDORFF, GWET = "Krippendorff's alpha (nominal)", "Gwet's AC1"
_LIBRARY = {
    PERCENT: "numpy (counting)",
    COHEN: "scikit-learn cohen_kappa_score; interval statsmodels cohens_kappa",
    FLEISS: "statsmodels fleiss_kappa; interval irrCAC fleiss",
    KRIPPENDORFF: "krippendorff alpha; interval irrCAC krippendorff",
    GWET: "irrCAC gwet",
}
_NO_SPREAD = 1e-12  # irrCAC puts a zero standard error at 1e-15


# ----- results -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Figure:
    """One agreement figure; value/low/high None when undefined (the note says why)."""

    method: str
    value: float | None
    low: float | None
    high: float | None
    n_units: int
    note: str = ""
    library: str = ""
    level: float = DEFAULT_LEVEL

    def text(self, digits: int = 2) -> str:
        """"0.62 [0.48, 0.74]"; "n/a (why)" when undefined; the value alone without an interval."""
        if self.value is None:
            return f"n/a ({self.note})" if self.note else "n/a"
        if self.low is None or self.high is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


@dataclass(frozen=True)
class Agreement:
    """The five figures for one units x coders table."""

    n_units: int  # units rated by two or more coders
    n_coders: int
    percent_agreement: Figure
    cohen_kappa: Figure
    fleiss_kappa: Figure
    krippendorff_alpha: Figure
    gwet_ac1: Figure
    note: str = ""

    def figures(self) -> tuple[Figure, ...]:
        return tuple(getattr(self, name) for name in FIGURE_FIELDS)


@dataclass(frozen=True)
class AgreementRow:
    """One line of the agreement table: a code (or the pooled ``overall`` row, code_id None)."""

    code_id: str | None
    code: str
    unit: str
    coders: tuple[str, ...]
    agreement: Agreement
    note: str = ""

    @property
    def n_units(self) -> int:
        return self.agreement.n_units


@dataclass(frozen=True)
class Units:
    """Per-code binary matrices (units x coders; 1 applied, 0 not) over the units all coders coded."""

    unit: str
    coders: tuple[str, ...]
    debates: tuple[str, ...]  # the debates every coder coded
    turns: tuple[str, ...]  # their turns, in `turn_debate`'s order
    n_units: int
    matrices: dict[str, np.ndarray] = field(default_factory=dict)  # code id -> int8 (n_units, n_coders)
    note: str = ""


# ----- arguments -----------------------------------------------------------------------------------
def _check_unit(unit: str) -> str:
    if unit not in UNIT_KINDS:
        raise ValueError(f"unit must be one of {UNIT_KINDS}, not {unit!r}")
    return unit


def _check_level(level: float) -> float:
    if not 0.90 <= float(level) <= 0.99:
        raise ValueError(f"level must lie in [0.90, 0.99] (irrCAC's range), not {level!r}")
    return float(level)


def _check_coders(coder_ids: Sequence[str]) -> tuple[str, ...]:
    if isinstance(coder_ids, str):
        raise ValueError(f"coder_ids must be a sequence of coder ids, not the string {coder_ids!r}")
    coders = tuple(coder_ids)
    if len(set(coders)) != len(coders):
        raise ValueError(f"coder_ids names a coder twice: {coders!r}")
    return coders


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


# ----- units ---------------------------------------------------------------------------------------
def _shared_debates(codings: Sequence[Coding], coders: tuple[str, ...],
                    turn_debate: Mapping[str, str]) -> tuple[tuple[str, ...], str]:
    """The debates every coder coded (in `turn_debate`'s order), and a note on what was left out."""
    coded: dict[str, set[str]] = {coder: set() for coder in coders}
    for coding in codings:
        if coding.coder_id in coded:
            coded[coding.coder_id].add(coding.debate_id)
    if not coders:
        return (), "no coders"
    shared = set.intersection(*coded.values())
    order = list(dict.fromkeys([*turn_debate.values(), *sorted(shared)]))
    notes = [f"coder {coder} has coded no debate" for coder, debates in coded.items() if not debates]
    partial = set.union(*coded.values()) - shared
    if partial and not notes:
        notes.append(f"{len(partial)} debate(s) coded by only some of the coders left out")
    return tuple(d for d in order if d in shared), "; ".join(notes)


def _turn_matrices(codings: Iterable[Coding], index: Mapping[str, int], columns: Mapping[str, int],
                   code_ids: Sequence[str], n_units: int) -> dict[str, np.ndarray]:
    cells: dict[str, tuple[list[int], list[int]]] = {code: ([], []) for code in code_ids}
    for coding in codings:
        if coding.code_id in cells and coding.turn_id in index and coding.coder_id in columns:
            rows, cols = cells[coding.code_id]
            rows.append(index[coding.turn_id])
            cols.append(columns[coding.coder_id])
    matrices = {}
    for code, (rows, cols) in cells.items():
        matrix = np.zeros((n_units, len(columns)), dtype=np.int8)
        matrix[np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)] = 1
        matrices[code] = matrix
    return matrices


def _character_matrices(codings: Iterable[Coding], turns: Sequence[str], lengths: np.ndarray,
                        columns: Mapping[str, int], code_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """Covered characters by a difference array: +1 at each passage's start, -1 at its end, then a
    running sum per coder; a character is covered where the sum is positive."""
    base = np.concatenate(([0], np.cumsum(lengths)))
    where = {turn: i for i, turn in enumerate(turns)}
    spans: dict[str, list[tuple[int, int, int, int]]] = {code: [] for code in code_ids}
    for coding in codings:
        if coding.code_id in spans and coding.turn_id in where and coding.coder_id in columns:
            spans[coding.code_id].append((where[coding.turn_id], coding.start, coding.end,
                                          columns[coding.coder_id]))
    total, k = int(base[-1]), len(columns)
    matrices = {}
    for code, found in spans.items():
        delta = np.zeros((total + 1, k), dtype=np.int32)
        if found:
            turn, start, end, col = (np.asarray(part, dtype=np.int64) for part in zip(*found))
            start = np.clip(start, 0, lengths[turn]) + base[turn]
            end = np.clip(end, 0, lengths[turn]) + base[turn]
            keep = start < end
            np.add.at(delta, (start[keep], col[keep]), 1)
            np.add.at(delta, (end[keep], col[keep]), -1)
        matrices[code] = (np.cumsum(delta, axis=0)[:-1] > 0).astype(np.int8)
    return matrices


def coding_units(codings: Sequence[Coding], turn_lengths: Mapping[str, int], turn_debate: Mapping[str, str],
                 coder_ids: Sequence[str], unit: str = "turn", code_ids: Sequence[str] | None = None) -> Units:
    """The per-code binary matrices (units x coders, in `coder_ids`' order) over the turns of the
    debates every coder coded: one row per turn (``"turn"``) or per character of those turns'
    texts, turn after turn (``"character"``; a turn's length is ``turn_lengths[turn]``, 0 when
    unknown). `code_ids`: the codes to build, in this order (default: every code the coders used,
    in order of first use); a code nobody used gets a matrix of zeros. Codings by other coders or
    in turns not listed in `turn_debate` are ignored."""
    unit, coders = _check_unit(unit), _check_coders(coder_ids)
    mine = [c for c in codings if c.coder_id in coders]
    codes = list(dict.fromkeys(c.code_id for c in mine)) if code_ids is None else list(dict.fromkeys(code_ids))
    debates, note = _shared_debates(mine, coders, turn_debate)
    chosen = set(debates)
    turns = tuple(turn for turn, debate in turn_debate.items() if debate in chosen)
    columns = {coder: j for j, coder in enumerate(coders)}
    if unit == "turn":
        matrices = _turn_matrices(mine, {t: i for i, t in enumerate(turns)}, columns, codes, len(turns))
        return Units(unit, coders, debates, turns, len(turns), matrices, note)
    lengths = np.array([max(int(turn_lengths.get(turn, 0)), 0) for turn in turns], dtype=np.int64)
    unknown = sum(1 for turn in turns if turn not in turn_lengths)
    if unknown:
        note = "; ".join(filter(None, [note, f"{unknown} turn(s) without a known length: no characters"]))
    matrices = _character_matrices(mine, turns, lengths, columns, codes)
    return Units(unit, coders, debates, turns, int(lengths.sum()), matrices, note)


# ----- figures -------------------------------------------------------------------------------------
def _blank(method: str, n_units: int, note: str, level: float) -> Figure:
    return Figure(method, None, None, None, n_units, note, _LIBRARY[method], level)


def _all_blank(n_units: int, n_coders: int, note: str, level: float) -> Agreement:
    percent, cohen, fleiss, alpha, ac1 = (_blank(m, n_units, note, level)
                                          for m in (PERCENT, COHEN, FLEISS, KRIPPENDORFF, GWET))
    return Agreement(n_units, n_coders, percent, cohen, fleiss, alpha, ac1, note)


def _guarded(method: str, n_units: int, level: float, compute: Callable[[], Figure]) -> Figure:
    """A library's figure, or None with the library's complaint as the note: never raises."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return compute()
    except Exception as exc:  # a library refusing odd data must not break the page
        return _blank(method, n_units, f"{_LIBRARY[method]} failed: {exc}", level)


def _interval(low: Any, high: Any, se: Any, n_units: int) -> tuple[float | None, float | None, str]:
    if n_units < 2:
        return None, None, "one unit: no interval"
    spread = _finite(se)
    if spread is None or spread <= _NO_SPREAD:
        return None, None, "no spread between units: no interval"
    return _finite(low), _finite(high), ""


def _irrcac(cac: Any, method: str, figure: str, n_units: int, level: float, value: float | None = None,
            note: str = "") -> Figure:
    """irrCAC's estimate (or `value`, checked against it) with irrCAC's interval."""
    est = getattr(cac, method)()["est"]
    theirs = _finite(est["coefficient_value"])
    ends = est["confidence_interval"]
    low, high, why = _interval(ends[0], ends[1], est["se"], n_units)
    notes = [note, why]
    if value is None:
        value = theirs
    elif theirs is None or abs(theirs - value) > 1e-6:
        notes.append(f"irrCAC gives {theirs}")
    return Figure(figure, value, low, high, n_units, "; ".join(filter(None, notes)), _LIBRARY[figure], level)


def _cohen(x: np.ndarray, level: float) -> Figure:
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import cohens_kappa

    both = ~np.isnan(x).any(axis=1)
    a, b = x[both, 0].astype(np.int64), x[both, 1].astype(np.int64)
    n = int(both.sum())
    if n == 0:
        return _blank(COHEN, 0, "no unit rated by both coders", level)
    seen = np.unique(np.concatenate((a, b)))
    if seen.size < 2:
        return _blank(COHEN, n, "every unit has the same value from both coders: kappa is undefined (0/0)", level)
    value = float(cohen_kappa_score(a, b, labels=seen))
    table = np.zeros((seen.size, seen.size), dtype=np.int64)
    np.add.at(table, (np.searchsorted(seen, a), np.searchsorted(seen, b)), 1)
    result = cohens_kappa(table)  # its limits are 95 % ones; another level: the same normal interval
    low, high = result.kappa_low, result.kappa_upp
    if abs(level - 0.95) > 1e-12:
        from scipy.stats import norm

        half = float(norm.isf((1.0 - level) / 2.0)) * float(result.std_kappa)
        low, high = float(result.kappa) - half, float(result.kappa) + half
    low, high, note = _interval(low, high, result.std_kappa, n)
    if abs(float(result.kappa) - value) > 1e-9:
        note = "; ".join(filter(None, [note, f"statsmodels gives {float(result.kappa)}"]))
    return Figure(COHEN, value, low, high, n, note, _LIBRARY[COHEN], level)


def _percent(x: np.ndarray, pairable: np.ndarray, level: float) -> Figure:
    rows = x[pairable]
    same = np.nanmin(rows, axis=1) == np.nanmax(rows, axis=1)
    return Figure(PERCENT, float(same.mean()), None, None, int(rows.shape[0]), "", _LIBRARY[PERCENT], level)


def _patterns(x: np.ndarray, n_categories: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of an integer matrix and each row's index among them (np.unique(axis=0)
    without its sort when the rows fit a small base-q number)."""
    k = x.shape[1]
    if n_categories ** k > 1 << 20:
        patterns, which = np.unique(x, axis=0, return_inverse=True)
        return patterns, np.ravel(which)
    powers = n_categories ** np.arange(k, dtype=np.int64)
    number = x @ powers
    present = np.flatnonzero(np.bincount(number, minlength=n_categories ** k))
    position = np.zeros(n_categories ** k, dtype=np.int64)
    position[present] = np.arange(present.size)
    return (present[:, None] // powers) % n_categories, position[number]


def _fleiss_value(x: np.ndarray, n_categories: int) -> tuple[float | None, str]:
    """statsmodels' Fleiss kappa when every rated unit has all ratings; else None (irrCAC's is used)."""
    rated = x[~np.isnan(x).all(axis=1)]
    if np.isnan(rated).any():
        return None, "ratings missing: Gwet's generalisation of Fleiss' kappa (irrCAC)"
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    # aggregate_raters loops over rows in Python: count each distinct rating pattern once, then
    # give every unit its pattern's counts (the same table, in the same order)
    patterns, which = _patterns(rated.astype(np.int64), n_categories)
    counts = aggregate_raters(patterns, n_cat=n_categories)[0][which]
    return _finite(fleiss_kappa(counts)), ""


def _kappa_figures(x: np.ndarray, n: int, n_categories: int, level: float) -> tuple[Figure, Figure, Figure]:
    """Fleiss' kappa, Krippendorff's alpha and Gwet's AC1 (irrCAC given every category)."""
    import krippendorff
    import pandas as pd
    from irrCAC.raw import CAC

    rated = x[~np.isnan(x).all(axis=1)]
    try:  # the categories are always given: irrCAC's own guess counts NaN as one under pandas 3
        cac = CAC(pd.DataFrame(rated), categories=[float(c) for c in range(n_categories)],
                  confidence_level=level, digits=15)
    except Exception as exc:  # never raise on odd data
        fleiss_, alpha_, ac1_ = (_blank(m, n, f"irrCAC failed: {exc}", level) for m in (FLEISS, KRIPPENDORFF, GWET))
        return fleiss_, alpha_, ac1_

    def fleiss() -> Figure:
        value, note = _fleiss_value(x, n_categories)
        return _irrcac(cac, "fleiss", FLEISS, n, level, value, note)

    def alpha() -> Figure:
        value = krippendorff.alpha(reliability_data=x.T, level_of_measurement="nominal")
        return _irrcac(cac, "krippendorff", KRIPPENDORFF, n, level, _finite(value))

    return (_guarded(FLEISS, n, level, fleiss), _guarded(KRIPPENDORFF, n, level, alpha),
            _guarded(GWET, n, level, lambda: _irrcac(cac, "gwet", GWET, n, level)))


def _agreement(x: np.ndarray, n_categories: int, level: float, labels: Sequence[Any] | None = None) -> Agreement:
    """The five figures of a float units x coders matrix of category indices (NaN missing)."""
    n_coders = int(x.shape[1]) if x.ndim == 2 else 0
    if n_coders < 2:
        return _all_blank(0, n_coders, f"fewer than two coders ({n_coders}): agreement needs at least two", level)
    pairable = (~np.isnan(x)).sum(axis=1) >= 2
    n = int(pairable.sum())
    if n == 0:
        return _all_blank(0, n_coders, "no unit rated by two or more coders", level)
    singles = int(((~np.isnan(x)).sum(axis=1) == 1).sum())
    note = (f"{singles} unit(s) rated by one coder only: unpairable, left out of the counts "
            "(irrCAC's Fleiss and AC1 use them for the category shares)") if singles else ""
    percent = _percent(x, pairable, level)
    values = x[pairable]
    seen = np.flatnonzero(np.bincount(values[~np.isnan(values)].astype(np.int64), minlength=n_categories))
    if seen.size < 2:
        value = labels[int(seen[0])] if labels is not None else seen[0]
        why = (f"every unit has the same value ({value}) from every coder: kappa, alpha and AC1 are "
               f"undefined (0/0, or 1 by construction); percent agreement is {percent.value:.2f}")
        blank = _all_blank(n, n_coders, why, level)
        return Agreement(n, n_coders, percent, blank.cohen_kappa, blank.fleiss_kappa, blank.krippendorff_alpha,
                         blank.gwet_ac1, "; ".join(filter(None, [note, why])))
    cohen = (_guarded(COHEN, n, level, lambda: _cohen(x, level)) if n_coders == 2 else
             _blank(COHEN, n, f"Cohen's kappa compares two coders, not {n_coders}: see Fleiss' kappa", level))
    fleiss, alpha, ac1 = _kappa_figures(x, n, n_categories, level)
    return Agreement(n, n_coders, percent, cohen, fleiss, alpha, ac1, note)


def _category_matrix(ratings: Any, categories: Sequence[Hashable] | None) -> tuple[np.ndarray, list[Any]]:
    """Ratings as float category indices (NaN missing) and the category labels, in index order."""
    import pandas as pd

    try:
        table = np.asarray(ratings, dtype=object)
    except ValueError:
        raise ValueError("ratings must be a units x coders table (equal-length rows)") from None
    if table.size == 0:
        return np.zeros((0, table.shape[1] if table.ndim == 2 else 0)), list(categories or [])
    if table.ndim != 2:
        raise ValueError(f"ratings must be a units x coders table, not {table.ndim}-dimensional")
    flat = table.ravel()
    missing = np.asarray(pd.isna(flat), dtype=bool)
    if categories is None:
        found = list(pd.unique(pd.Series(flat[~missing], dtype=object)))
        try:
            labels = sorted(found)
        except TypeError:
            labels = found
    else:
        labels = list(dict.fromkeys(categories))
    codes = pd.Index(labels, dtype=object).get_indexer(flat).astype(np.float64)  # -1: missing or unknown
    if bool(((codes < 0) & ~missing).any()):
        raise ValueError("categories does not list every value in ratings")
    codes[codes < 0] = np.nan
    return codes.reshape(table.shape), labels


def nominal_agreement(ratings: Any, *, categories: Sequence[Hashable] | None = None,
                      level: float = DEFAULT_LEVEL) -> Agreement:
    """The five figures for a units x coders table of nominal values (rows units, columns coders;
    None or NaN where a coder did not rate a unit). `categories`: every possible value (default:
    the values that occur); a category nobody used still counts in AC1's chance agreement."""
    level = _check_level(level)
    x, labels = _category_matrix(ratings, categories)
    return _agreement(x, max(len(labels), 1), level, labels)


def binary_agreement(matrix: np.ndarray, *, level: float = DEFAULT_LEVEL) -> Agreement:
    """The five figures for a units x coders 0/1 matrix (a code applied or not; no missing values),
    with both categories known (AC1 counts two)."""
    level = _check_level(level)
    x = np.asarray(matrix, dtype=np.float64)
    if x.ndim != 2:
        x = x.reshape(0, 0) if x.size == 0 else x.reshape(-1, 1)
    return _agreement(x, 2, level, ["absent", "applied"])


# ----- the table -----------------------------------------------------------------------------------
def _units_note(units: Units) -> str:
    notes = [units.note]
    if units.unit == "character" and units.n_units:
        notes.append("characters are not independent units: intervals are far too narrow, read them as descriptive")
    return "; ".join(filter(None, notes))


def agreement_table(codings: Sequence[Coding], codes: Sequence[Code], coder_ids: Sequence[str],
                    turn_lengths: Mapping[str, int], turn_debate: Mapping[str, str], unit: str = "turn", *,
                    level: float = DEFAULT_LEVEL) -> list[AgreementRow]:
    """One row per code of `codes` (codebook order), then the ``overall`` row: the five figures for
    `coder_ids` (two or more, any subset of the project's coders) over `unit` units of the debates
    they all coded (`coding_units`). Overall pools every (unit, code) decision as one item."""
    level = _check_level(level)
    units = coding_units(codings, turn_lengths, turn_debate, coder_ids, unit, [code.id for code in codes])
    base = _units_note(units)
    rows = [AgreementRow(code.id, code.name, units.unit, units.coders,
                         binary_agreement(units.matrices[code.id], level=level), base)
            for code in codes]
    k = len(units.coders)
    pooled = (np.vstack([units.matrices[code.id] for code in codes]) if codes
              else np.zeros((0, k), dtype=np.int8))
    overall = (f"overall: every ({units.unit}, code) decision pooled as one item "
               f"({units.n_units} {units.unit}s x {len(codes)} codes = {pooled.shape[0]} items)")
    rows.append(AgreementRow(None, OVERALL, units.unit, units.coders, binary_agreement(pooled, level=level),
                             "; ".join(filter(None, [overall, base]))))
    return rows


def gold_agreement(codings: Sequence[Coding], codes: Sequence[Code], coder_id: str, gold_id: str,
                   turn_lengths: Mapping[str, int], turn_debate: Mapping[str, str], unit: str = "turn", *,
                   level: float = DEFAULT_LEVEL) -> list[AgreementRow]:
    """One coder against a gold (adjudicated) coding, which is just another coder id: the table of
    `agreement_table` for the two, the coder first."""
    if coder_id == gold_id:
        raise ValueError(f"gold_id must differ from coder_id ({coder_id!r})")
    return agreement_table(codings, codes, [coder_id, gold_id], turn_lengths, turn_debate, unit, level=level)


def agreement_records(rows: Iterable[AgreementRow]) -> list[dict[str, Any]]:
    """Flat, CSV-ready records, one per row: code, code_id, unit, coders ("a; b"), n_coders, n_units,
    percent_agreement, then value, _low and _high of each kappa/alpha/AC1, level and note
    (the row's note, then each figure's note named by its method). Numbers are floats or None."""
    records = []
    for row in rows:
        agreement = row.agreement
        record: dict[str, Any] = {"code": row.code, "code_id": row.code_id, "unit": row.unit,
                                  "coders": "; ".join(row.coders), "n_coders": agreement.n_coders,
                                  "n_units": agreement.n_units,
                                  "percent_agreement": agreement.percent_agreement.value}
        for name in FIGURE_FIELDS[1:]:
            figure = getattr(agreement, name)
            record.update({name: figure.value, f"{name}_low": figure.low, f"{name}_high": figure.high})
        notes = [row.note, agreement.note] + [f"{f.method}: {f.note}" for f in agreement.figures()
                                              if f.note and f.note not in row.note and f.note not in agreement.note]
        record["level"] = agreement.percent_agreement.level
        record["note"] = "; ".join(dict.fromkeys(filter(None, notes)))
        records.append(record)
    return records


__all__ = ["UNIT_KINDS", "DEFAULT_LEVEL", "OVERALL", "FIGURE_FIELDS", "Figure", "Agreement", "AgreementRow",
           "Units", "coding_units", "nominal_agreement", "binary_agreement", "agreement_table", "gold_agreement",
           "agreement_records"]
