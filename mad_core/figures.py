"""Plotly figures of one debate, shared by the app's charts (madlab_ui/plots.py) and the
printable handout (mad_core/handout.py).

What it is for: turning a `DebateView` and its metric report (mad_core/metrics/report.py) into
figures a class can read: lines per round (lines that often coincide, all agree and majority
agrees, drawn so both show, with a note where they first meet), the vote chart (horizontal bars,
labels shortened and wrapped, automargin, each bar saying its value; consensus ballots diverge:
agrees right, disagrees left; rounds grouped on the axis; no legend) and the answer timeline
(cells that say the answer in 13 px text cut to what fits the cell, the full answer in the
hover; a legend instead when the cells are too narrow for text; a cell without an answer says
"no readable answer" or "did not speak", in grey). Entropy and agreement are over the readable
answers: a round where some could not be read says "1 of 3 answers readable" on the chart and in
the hover, one with none is a gap ("no readable answers"), never a 0. One answer key -> colour
map per debate (`answer_colors`: the report's answer keys, so two texts the metrics count as one
answer share a colour) is used by every chart that colours by answer, and every measure has its
own fixed line colour (`SERIES`), so the app (Streamlit's theme) and the handout (plotly's
template) draw the same colours. Every colour reaches 3:1 against the white background and text
drawn on a colour (a timeline cell, a ballot's bar) is black or white by contrast (`text_color`,
WCAG 2.1: `contrast`).

Readable at the narrowest width a chart is drawn (`CHART_MIN_WIDTH_PX`: one chart per row in the
Debate page's stage column at 1280x720): a chart's title is short (`TITLE_PX`) with the detail in
a subtitle, both clear of the toolbar's camera in the top right corner. Text widths are
estimated with a wide sans-serif's letter widths (`text_px`), so what fits by the estimate fits
in the fonts plotly falls back to.

Plotly reads a few tags in text (<b>, <br>, <a href=...>) as markup, so every piece of model
text that goes into a figure passes through `plot_text` (`<`, `>` and `&` escaped; plotly shows
the entities literally). Our own `<br>` line breaks are added after escaping.

What it must not do: import streamlit, compute a protocol (vote totals come from
`metrics.vote_breakdown`, i.e. the counting code), or draw anything that is not in the view
or its report.
"""
from __future__ import annotations

import html
import unicodedata
from typing import Any

import plotly.graph_objects as go

from . import metrics, registry
from .protocols.consensus import Consensus
from .protocols.decision import Protocol
from .tasks import answer_types
from .view import DebateView

# Every colour reaches 3:1 against the white background (WCAG 2.1 non-text contrast; the app's theme is
# light and the handout prints on white) and 4.5:1 with the cell text drawn on it (`text_color`: black on
# these mid tones). Tableau's hues, darkened where they were too light (yellow was 1.6:1, teal 2.3:1).
BACKGROUND = "#ffffff"
CATEGORY_COLORS = ["#5079b0", "#d97400", "#54a24b", "#e45756", "#339690", "#a88600", "#b279a2", "#d65f7f",
                   "#9d755d", "#7f7fc8"]
NO_ANSWER_COLOR = "#8f8f8f"  # a mid grey: no hue, so never read as an answer's colour
NO_READABLE = answer_types.NO_READABLE  # a timeline cell whose reply holds no answer of the debate's type
NOT_SPOKEN = "did not speak"  # a timeline cell of an agent without a turn that round
CELL_FONT_PX = 13  # the timeline's cell text: legible on a projector
TICK_FONT_PX = 12
TITLE_FONT_PX = 16
SUBTITLE_FONT_PX = 12
CHART_MIN_WIDTH_PX = 460  # the narrowest a chart is drawn: the Debate page's stage column at 1280x720
MODEBAR_PX = 44  # the toolbar's camera, top right: titles end before it
TITLE_PX = CHART_MIN_WIDTH_PX - MODEBAR_PX - 24  # a title's (and a subtitle's) room, after its left pad
CELL_PAD_PX = 6  # the timeline's cell text keeps this far from each side of its cell
CELL_LINES = 2
VOTE_ANSWER_PX = 150  # a vote bar's answer under its label
CELL_GAP_PX = 3  # white between the timeline's cells
FRAME_PX = CELL_GAP_PX + 1  # a changed answer's frame: it fills the gap round its cell
MIN_CELL_TEXT_PX = 36  # a narrower cell holds no text: the timeline gets a legend of answers instead
# Each measure's line: the same colour (and dash) in the app and in the handout, whatever the theme.
SERIES = {"answer_similarity": ("#0068c9", "solid"), "reply_similarity": ("#3d8fd6", "dash"),
          "entropy": ("#0068c9", "solid"), "log_likelihood": ("#c86400", "dash"),
          "agree_all": ("#1f8c7c", "solid"), "agree_majority": ("#0068c9", "dash"),
          "disagreement": ("#ff2b2b", "dot"),
          "accuracy_strict": ("#0068c9", "solid"), "accuracy_smooth": ("#3d8fd6", "dash")}
# Lines that often coincide (all agree implies majority agrees) stay apart: the one drawn first is
# wide under big open markers, the next dashed and thin on top with small ones: (symbol, size, width).
MARKS = {"agree_all": ("circle-open", 13, 6), "agree_majority": ("diamond", 7, 2), "disagreement": ("x", 8, 2)}
LINE_CHARS = 22  # a wrapped label's line
LABEL_LINES = 2  # at most this many lines per label; the rest is in the hover
HOVER_CHARS = 400


# ----- contrast (WCAG 2.1) -----------------------------------------------------------------------
def _channel(value: int) -> float:
    value /= 255
    return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4


def luminance(color: str) -> float:
    """The relative luminance of a "#rrggbb" colour (WCAG 2.1), 0 (black) to 1 (white)."""
    red, green, blue = (int(color.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4))
    return 0.2126 * _channel(red) + 0.7152 * _channel(green) + 0.0722 * _channel(blue)


def contrast(first: str, second: str) -> float:
    """The WCAG contrast ratio of two "#rrggbb" colours, 1 to 21."""
    light, dark = sorted((luminance(first), luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def text_color(*backgrounds: str) -> str:
    """Black or white, whichever contrasts more with the least contrasting of `backgrounds` (one
    colour for text drawn on any of them: a heatmap's cells share one text colour)."""
    backgrounds = backgrounds or (BACKGROUND,)
    return max(("#000000", "#ffffff"), key=lambda text: min(contrast(text, bg) for bg in backgrounds))


# ----- text inside figures -----------------------------------------------------------------------
def _short(text: Any, limit: int) -> str:
    text = " ".join(str(text if text is not None else "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plot_text(text: Any, limit: int = HOVER_CHARS) -> str:
    """Model text as plotly shows it literally: whitespace folded, at most `limit` characters,
    `<` `>` `&` escaped (shortened first, so no entity is cut)."""
    return html.escape(_short(text, limit), quote=False)


def _wrapped(text: Any, width: int = LINE_CHARS, lines: int = LABEL_LINES) -> list[str]:
    out: list[str] = []
    for word in str(text if text is not None else "").split():
        if out and len(out[-1]) + 1 + len(word) <= width:
            out[-1] += " " + word
        else:
            out.append(word)
    if len(out) > lines:
        out = out[:lines]
        out[-1] = _short(out[-1] + " …", width)
    return [_short(part, width) for part in out]


def wrap_label(text: Any, width: int = LINE_CHARS, lines: int = LABEL_LINES) -> str:
    """A label in at most `lines` lines of at most `width` characters (words kept whole where
    they fit; the last line ends with … when text was left out), each line escaped, joined
    with plotly's <br>."""
    return "<br>".join(html.escape(part, quote=False) for part in _wrapped(text, width, lines))


# Letter widths in em of a wide sans-serif (DejaVu Sans, Verdana: wider than Open Sans and Arial,
# the other fonts of plotly's "Open Sans, verdana, arial, sans-serif"): a text that fits by these
# widths fits in any of them.
_EM = {**{c: 0.32 for c in "ijlI.,:;'|! "}, **{c: 0.42 for c in "frt()[]{}-/\\\"`"},
       **{c: 1.0 for c in "mwMW%@&…"}}


def _em(ch: str) -> float:
    if ch in _EM:
        return _EM[ch]
    if ch.isdigit() or ch.islower():
        return 0.64
    if ch.isupper():
        return 0.79
    if ch.isascii():
        return 0.84
    return 1.3 if unicodedata.east_asian_width(ch) in "WF" else 1.0


def text_px(text: str, size: float) -> float:
    """How wide `text` (unescaped, one line) is drawn at `size` px, at most."""
    return size * sum(_em(ch) for ch in text)


def _fitting(text: str, width_px: float, size: float) -> int:
    """How many of `text`'s first letters fit in `width_px` at `size` px."""
    n = 0
    while n < len(text) and text_px(text[:n + 1], size) <= width_px:
        n += 1
    return n


def fit_lines(text: Any, width_px: float, size: float = CELL_FONT_PX, lines: int = CELL_LINES) -> list[str]:
    """`text` in at most `lines` lines, each at most `width_px` wide at `size` px (unescaped):
    words kept whole where they fit, a word longer than a line broken, the last line ending
    with … when text was left out; [] when not even one letter and … fit."""
    out: list[str] = []
    for word in str(text if text is not None else "").split():
        if out and text_px(f"{out[-1]} {word}", size) <= width_px:
            out[-1] = f"{out[-1]} {word}"
            continue
        if out and text_px(word, size) > width_px:  # a word longer than a line: its start ends this line
            cut = _fitting(f"{out[-1]} {word}", width_px, size) - len(out[-1]) - 1
            if cut > 0:
                out[-1], word = f"{out[-1]} {word[:cut]}", word[cut:]
        while text_px(word, size) > width_px and len(out) <= lines:  # a long number or word: broken
            cut = _fitting(word, width_px, size)
            if cut == 0:
                return []
            out.append(word[:cut])
            word = word[cut:]
        out.append(word)
        if len(out) > lines:
            break
    if len(out) > lines:
        kept = out[lines - 1]
        kept = kept[:_fitting(kept, width_px - text_px("…", size), size)].rstrip()
        if not kept:
            return []
        out = out[:lines - 1] + [kept + "…"]
    return out


def fit_text(text: Any, width_px: float, size: float) -> str:
    """`text` in one line at most `width_px` wide at `size` px (cut with …), escaped for plotly."""
    return html.escape("".join(fit_lines(text, width_px, size, lines=1)), quote=False)


# ----- colours ---------------------------------------------------------------------------------
def answer_key(row: dict[str, Any], agent: str) -> str | None:
    """`agent`'s answer in report round `row` as the metrics count it: the report's answer key
    (two texts the reader holds for one answer, e.g. free text clustered by SBERT, share a key);
    the display text for a report that predates the keys; None when it gave no readable answer."""
    keys = row.get("keys")
    return keys.get(agent) if isinstance(keys, dict) else (row.get("answers") or {}).get(agent)


def answer_colors(report: dict[str, Any], agents: list[str] | None = None) -> dict[str, str]:
    """The debate's answer key -> colour map (`answer_key`: one colour per answer the metrics
    count, whatever words each agent used), keys in order of first appearance, round by round
    and agent by agent in the configured order."""
    colors: dict[str, str] = {}
    order = list(agents or [])
    for row in report.get("rounds") or []:
        answers = row.get("answers") or {}
        for agent in [a for a in order if a in answers] + [a for a in answers if a not in order]:
            color_of(colors, answer_key(row, agent))
    return colors


def color_of(colors: dict[str, str], answer: str | None) -> str:
    """The colour of answer key `answer` in `colors`, giving a new one the next free colour."""
    if answer is None:
        return NO_ANSWER_COLOR
    if answer not in colors:
        colors[answer] = CATEGORY_COLORS[len(colors) % len(CATEGORY_COLORS)]
    return colors[answer]


# ----- series and layout -------------------------------------------------------------------------
def round_series(report: dict[str, Any], name: str) -> list[tuple[int, float | None]]:
    return [(row["round"], row.get(name)) for row in report.get("rounds") or []]


def titles(title: str, subtitle: str = "") -> tuple[str, str]:
    """(title, subtitle) that fit `TITLE_PX`, escaped for plotly. A long title without a subtitle
    is split at its first ": " or " (" (a caller's "Agreement (share holding ...)"): the head
    stays the title, the rest becomes the subtitle; what still does not fit is cut with …."""
    title, subtitle = " ".join(str(title).split()), " ".join(str(subtitle).split())
    if not subtitle and text_px(title, TITLE_FONT_PX * 1.1) > TITLE_PX:
        for sep in (": ", " ("):
            head, found, rest = title.partition(sep)
            if found and head:
                title, subtitle = head, rest.removesuffix(")") if sep == " (" else rest
                break
    return fit_text(title, TITLE_PX, TITLE_FONT_PX * 1.1), fit_text(subtitle, TITLE_PX, SUBTITLE_FONT_PX)


def styled(traces: Any, base: dict[str, Any], title: str, ytitle: str, *, xtitle: str = "round",
           height: int = 300, subtitle: str = "") -> go.Figure:
    """A figure of `traces` whose layout is `base` (a chart's own settings) with the shared layout
    on top: a short title with its subtitle (`titles`) at the top left, clear of the camera at the
    top right; axes with automargin and legible ticks; the legend below.

    Built once from plain settings: plotly validates and copies the whole layout on every
    `update_layout`/`update_xaxes`/`add_trace` call (~1 ms per nested setting; a chart built that
    way took ~25 ms here, now ~6), and the Debate page draws its charts on every full run, which a
    steering click waits for."""
    head, sub = titles(title, subtitle)
    axis = {"automargin": True, "tickfont": {"size": TICK_FONT_PX}}
    shared = {"title": {"text": head, "x": 0, "xref": "container", "xanchor": "left", "pad": {"l": 12},
                        "font": {"size": TITLE_FONT_PX},
                        "subtitle": {"text": sub, "font": {"size": SUBTITLE_FONT_PX}}},
              "height": height, "margin": {"l": 10, "r": 10, "t": 72 if sub else 48, "b": 10},
              "xaxis": {**axis, "title": {"text": xtitle}}, "yaxis": {**axis, "title": {"text": ytitle}},
              "legend": {"orientation": "h", "yanchor": "top", "y": -0.3, "x": 0}}
    return go.Figure(data=traces, layout=_merged(base, shared))


def _merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` updated by `changes` the way plotly's `update_layout` does: mappings merged key by key."""
    merged = dict(base)
    for key, value in changes.items():
        merged[key] = _merged(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) \
            else value
    return merged


def line_figure(series: dict[str, list[tuple[int, float | None]]], title: str, ytitle: str,
                styles: dict[str, tuple[str, str]] | None = None, subtitle: str = "") -> go.Figure:
    """One line per named series of (round, value); `styles`: a series' (colour, dash), else the
    next of CATEGORY_COLORS (always explicit: a theme or template never recolours a measure)."""
    return styled(_lines(series, styles), {"xaxis": {"dtick": 1}, "yaxis": {"rangemode": "tozero"}}, title, ytitle,
                  subtitle=subtitle)


def _lines(series: dict[str, list[tuple[int, float | None]]],
           styles: dict[str, tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """`line_figure`'s traces as plain settings (a chart may add to them before the figure is built)."""
    traces = []
    for i, (name, points) in enumerate(series.items()):
        color, dash = (styles or {}).get(name) or (CATEGORY_COLORS[i % len(CATEGORY_COLORS)], "solid")
        traces.append({"type": "scatter", "x": [r for r, _ in points], "y": [v for _, v in points],
                       "mode": "lines+markers", "name": plot_text(name, 60), "connectgaps": False,
                       "line": {"color": color, "dash": dash}, "marker": {"color": color}})
    return traces


def readable_note(row: dict[str, Any]) -> str | None:
    """How many of a round's answers could be read ("1 of 3 answers readable", "no readable
    answers"), or None when all were (or the report predates the count)."""
    readable, agents = row.get("readable"), row.get("agents")
    if readable is None or agents is None or readable >= agents:
        return None
    return "no readable answers" if readable == 0 else f"{readable} of {agents} answers readable"


def report_figure(report: dict[str, Any], traces: dict[str, str], title: str, ytitle: str,
                  subtitle: str = "", readable: bool = False) -> go.Figure | None:
    """A line per report column (`traces`: legend name -> per-round key), each in its measure's
    colour (`SERIES`); None before any round. `readable`: the measures are over the readable
    answers, so each round where some answer could not be read says how many could, on the
    chart (under its point, or where a round without any has a gap) and in the hover."""
    rows = report.get("rounds") or []
    if not rows:
        return None
    lines = _lines({name: round_series(report, column) for name, column in traces.items()},
                   styles={name: SERIES[column] for name, column in traces.items() if column in SERIES})
    negative = any(v is not None and v < 0 for line in lines for v in line["y"])
    base: dict[str, Any] = {"xaxis": {"dtick": 1},
                            "yaxis": {"rangemode": "normal" if negative else "tozero"},  # log-likelihood is <= 0
                            "annotations": []}
    marked = [line for line, column in zip(lines, traces.values()) if column in MARKS]
    for line, column in zip(lines, traces.values()):
        if column in MARKS:
            symbol, size, width = MARKS[column]
            line["marker"].update(symbol=symbol, size=size, line={"width": 2, "color": line["line"]["color"]})
            line["line"]["width"] = width
    base["annotations"] += _say_equal(marked)
    if readable:
        found = [readable_note(row) for row in rows]
        notes = [note or "all answers readable" for note in found]
        for line in lines:
            line["customdata"] = notes
            line["hovertemplate"] = "round %{x}: %{y:.3g}<br>%{customdata}<extra>%{fullData.name}</extra>"
        base["annotations"] += [{"x": row["round"], "y": 0, "yref": "y", "text": note, "showarrow": False,
                                 "yanchor": "bottom", "yshift": 6, "font": {"size": SUBTITLE_FONT_PX, "color": "#555555"}}
                                for row, note in zip(rows, found) if note]
    return styled(lines, base, title, ytitle, subtitle=subtitle)


def _say_equal(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where two of `lines` (the agreement chart's) first take the same value, one note says so
    ("all agree = majority agrees", arrowed at the point), so the line underneath is not read as
    missing: the notes, as annotations."""
    notes = []
    for i, under in enumerate(lines):
        for over in lines[i + 1:]:
            same = next(((x, y) for x, y, v in zip(under["x"], under["y"], over["y"])
                         if y is not None and v is not None and abs(y - v) < 1e-9), None)
            if same is None:
                continue
            x, y = same
            last = x == max(under["x"])
            notes.append({"x": x, "y": y, "text": f"{under['name']} = {over['name']}", "showarrow": True,
                          "arrowhead": 0, "ax": -40 if last else 40, "ay": 36 if y >= 0.5 else -36,
                          "xanchor": "right" if last else "left",
                          "font": {"size": SUBTITLE_FONT_PX, "color": "#333333"}, "bgcolor": "rgba(255,255,255,0.8)"})
    return notes


# ----- votes ---------------------------------------------------------------------------------------
def _answer_in_round(report: dict[str, Any], agent: str, rnd: int) -> tuple[str | None, str | None]:
    """`agent`'s answer as the metrics read it (display, key), in round `rnd` or the latest
    round before it; (None, None) when it has none."""
    found: tuple[str | None, str | None] = (None, None)
    for row in report.get("rounds") or []:
        if row["round"] <= rnd and (row.get("answers") or {}).get(agent) is not None:
            found = (row["answers"][agent], answer_key(row, agent))
    return found


def vote_rounds(view: DebateView, report: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per round with votes or decision attempts: {"round", "unit", "labels", "counts", "answers",
    "keys", "stances"} ("answers": each bar's answer as the metrics read it, None where unknown;
    "keys": the answer keys that colour the bars (`answer_key`; a solution's own text where the
    report has none); needs `report`. "stances": the counts are agree (1) / disagree (0) ballots
    of a consensus protocol, one per agent)."""
    protocol = view.config.get("protocol", "")
    try:
        traits = registry.get("protocol", protocol)
    except Exception:  # noqa: BLE001 - a debate stored with a protocol this version lacks
        traits = Protocol
    report = report or {}
    rounds = sorted({v.round for v in view.votes} | {a.round for a in view.attempts})
    out = []
    for rnd in rounds:
        attempt = next((a for a in reversed(view.attempts) if a.round == rnd), None)
        votes = view.votes_of_round(rnd)
        solutions = attempt.solution_agents if attempt and attempt.solution_agents else view.agents
        n = max(1, len(solutions))
        names = [f"Solution {i + 1} ({solutions[i]})" if i < len(solutions) else f"Solution {i + 1}"
                 for i in range(n)]
        owners: list[str | None] = [solutions[i] if i < len(solutions) else None for i in range(n)]
        if traits.casts_ballots and votes:
            ballots = [v.ballot if v.valid else None for v in votes if v.protocol == protocol]
            try:
                breakdown = metrics.vote_breakdown(protocol, ballots, n)
            except ValueError:
                continue
            item = {"round": rnd, "unit": breakdown["unit"], "labels": names, "counts": breakdown["counts"]}
        elif votes:  # no agent ballots: a judge's picks
            counts = [0.0] * n
            for v in votes:
                if v.valid and isinstance(v.ballot, int) and v.ballot < n:
                    counts[v.ballot] += 1
            item = {"round": rnd, "unit": "judge's pick", "labels": names, "counts": counts}
        elif attempt and attempt.scores:
            labels = (view.agents if traits.scores_per_agent else attempt.solution_agents) or names
            labels = list(labels)[:len(attempt.scores)]
            owners = [label if label in view.agents else None for label in labels]
            item = {"round": rnd, "unit": traits.score_unit, "labels": labels, "counts": list(attempt.scores),
                    "stances": isinstance(traits, type) and issubclass(traits, Consensus)}
        else:
            continue
        texts = list(attempt.solutions) if attempt else []
        read = [_answer_in_round(report, owner, rnd) if owner else (None, None)
                for owner in owners[:len(item["labels"])]]
        own = [_short(texts[i], 60) if i < len(texts) and texts[i] else None for i in range(len(read))]
        item["answers"] = [shown or text for (shown, _), text in zip(read, own)]
        item["keys"] = [key if shown else text for (shown, key), text in zip(read, own)]
        item.setdefault("stances", False)
        out.append(item)
    return out


def votes_figure(rounds: list[dict[str, Any]], protocol: str, colors: dict[str, str] | None = None) -> go.Figure:
    """Horizontal bars, one per solution (label: who and what it answered, wrapped), coloured by
    the answer's key (`colors`: the debate's answer key -> colour map), each saying its value in
    text (a 0 still shows "0"). With several rounds the bars are grouped under their round ("R2")
    on the left. Consensus ballots (`stances`) diverge from 0: agrees to the right, disagrees to
    the left, each bar saying which, so no ballot is an empty row. No legend: the colour's answer
    is in each bar's label, and the round beside it."""
    colors = {} if colors is None else colors
    traces = []
    stances = bool(rounds) and all(item.get("stances") for item in rounds)
    for item in rounds:
        answers = item.get("answers") or [None] * len(item["labels"])
        keys = item.get("keys") or answers
        # the answer's line: its start cut to what fits (a long number is broken, never dropped)
        ticks = [wrap_label(label, lines=1) + ("<br>" + fit_text(f"→ {answer}", VOTE_ANSWER_PX, TICK_FONT_PX)
                                               if answer else "")
                 for label, answer in zip(item["labels"], answers)]
        counts = list(item["counts"])
        if stances:
            said = ["agrees" if c else "disagrees" for c in counts]
            x: list[Any] = [1 if c else -1 for c in counts]
        else:
            said, x = [format(float(c), ".3g") if c is not None else "" for c in counts], counts
        traces.append(go.Bar(
            y=[[f"R{item['round']}"] * len(ticks), ticks] if len(rounds) > 1 else ticks, x=x, orientation="h",
            name=f"round {item['round']}", showlegend=False, text=said, texttemplate="%{text}",
            textposition="inside" if stances else "outside", insidetextanchor="middle", cliponaxis=False,
            textfont=dict(size=TICK_FONT_PX),
            insidetextfont=dict(color=[text_color(color_of(colors, k)) for k in keys]),  # a word on its bar
            marker=dict(color=[color_of(colors, k) for k in keys]),
            customdata=[[plot_text(label), plot_text(answer if answer else "-"), word]
                        for label, answer, word in zip(item["labels"], answers, said)],
            hovertemplate="%{customdata[0]}<br>answer: %{customdata[1]}<br>%{customdata[2]}"
                          "<extra>%{fullData.name}</extra>"))
    unit = rounds[-1]["unit"] if rounds else ""
    bars = sum(len(item["labels"]) for item in rounds) or 1
    base: dict[str, Any] = {"barmode": "overlay",  # each bar its own row (rounds never share one)
                            "yaxis": {"autorange": "reversed"}}
    if stances:
        base["xaxis"] = {"range": [-1.15, 1.15], "tickvals": [-1, 0, 1], "ticktext": ["disagrees", "", "agrees"],
                         "zeroline": True, "zerolinecolor": "#555555", "zerolinewidth": 2}
        subtitle = "each agent's ballot; colour = its answer"
    else:
        base["xaxis"] = {"rangemode": "tozero"}
        subtitle = f"{_short(unit, 30)}; colour = the answer"
    return styled(traces, base, f"Votes: {protocol}", "", xtitle="" if stances else plot_text(unit, 60),
                  height=max(300, 120 + 34 * bars), subtitle=subtitle)


# ----- answer timeline -----------------------------------------------------------------------------
ROW_LABEL_CHARS = 18  # an agent's label on the timeline, per line


def cell_width_px(rounds: int, row_labels: list[str]) -> float:
    """The room for text in one timeline cell when the chart is CHART_MIN_WIDTH_PX wide: the plot
    area (less the agents' labels on the left, which automargin makes room for) shared by the
    rounds, less the gap between cells and the cell's own padding."""
    labels = max((text_px(line, TICK_FONT_PX) for label in row_labels for line in _wrapped(label, ROW_LABEL_CHARS)),
                 default=0.0)
    plot = CHART_MIN_WIDTH_PX - 20 - (labels + 16)
    return plot / max(1, rounds) - 3 - 2 * CELL_PAD_PX


def timeline_figure(view: DebateView, report: dict[str, Any], colors: dict[str, str] | None = None) -> go.Figure | None:
    """Rows = agents, columns = rounds, colour = the answer as the metrics count it (its key,
    `answer_key`: "B" and "(B) Paris" are one colour, and so are two free-text answers SBERT
    holds for one), the cell's text (its own words) = the answer cut to what
    fits the cell at CHART_MIN_WIDTH_PX (`fit_lines`, CELL_FONT_PX; never into the next cell),
    the hover = the whole answer; changed answers are framed. When the cells are too narrow for
    text (many rounds), they hold none and a legend names each answer's colour."""
    rounds = report.get("rounds") or []
    if not rounds:
        return None
    colors = answer_colors(report, view.agents) if colors is None else colors
    round_names = [f"R{row['round']}" for row in rounds]
    seen = list(dict.fromkeys(label for row in rounds for label in row["answers"]))
    labels = [label for label in view.agents if label in seen] + [label for label in seen if label not in view.agents]
    answers = {label: [row["answers"].get(label) for row in rounds] for label in labels}
    # A cell without an answer says why, in grey: the agent spoke but nothing in its reply reads
    # as an answer of the debate's type, or it did not speak that round.
    missing = {label: [(NO_READABLE if label in row["answers"] else NOT_SPOKEN) for row in rounds]
               for label in labels}
    keys = {label: [answer_key(row, label) for row in rounds] for label in labels}
    categories = list(dict.fromkeys(k for label in labels for k in keys[label] if k is not None))
    empty = len(categories)  # the grey category of the cells without an answer
    z = [[empty if k is None else categories.index(k) for k in keys[label]] for label in labels]
    named: dict[str, Any] = {}  # a key's name in the legend: the words it was first read from
    for label in labels:
        for k, a in zip(keys[label], answers[label]):
            if k is not None:
                named.setdefault(k, a)
    room = cell_width_px(len(rounds), labels)
    legend = room < MIN_CELL_TEXT_PX
    text = [["" if legend else "<br>".join(html.escape(line, quote=False)
                                          for line in fit_lines(missing[label][i] if a is None else a, room))
             for i, a in enumerate(answers[label])] for label in labels]
    full = [[plot_text(a) if a is not None else missing[label][i] for i, a in enumerate(answers[label])]
            for label in labels]
    n = len(categories) + 1
    scale = []
    for i in range(n):
        color = color_of(colors, categories[i]) if i < empty else NO_ANSWER_COLOR
        scale += [[i / n, color], [(i + 1) / n, color]]
    ink = text_color(*(color for _, color in scale))  # the cells' text: black or white, by contrast
    rows = [wrap_label(label, width=ROW_LABEL_CHARS) for label in labels]
    traces: list[Any] = [go.Heatmap(z=z, x=round_names, y=rows, text=text, meta=[empty], customdata=full,
                               texttemplate="%{text}", textfont=dict(size=CELL_FONT_PX, color=ink),
                               zmin=-0.5, zmax=n - 0.5, colorscale=scale, showscale=False, xgap=CELL_GAP_PX,
                               ygap=CELL_GAP_PX,
                               hovertemplate="%{y}, %{x}: %{customdata}<extra></extra>", name="answers")]
    if legend:  # one legend entry per answer, in its colour (the heatmap itself has no legend)
        grey = [NO_READABLE] if any(a is None for label in labels for a in answers[label]) else []
        for key in categories + grey:
            color = NO_ANSWER_COLOR if key is NO_READABLE else color_of(colors, key)
            traces.append(go.Scatter(x=[None], y=[None], mode="markers", name=plot_text(named.get(key, key), 40),
                                     marker=dict(symbol="square", size=14, color=color),
                                     hoverinfo="skip", showlegend=True))
    changes = [c for agent in (report.get("agents") or {}).values() for c in agent.get("changes") or []
               if f"R{c['round']}" in round_names and c["agent"] in labels]
    shapes = []
    if changes:
        # A changed answer gets a black frame round its cell (a mark on the cell would cover its
        # text); the invisible markers carry the hover that says what changed.
        traces.append(go.Scatter(
            x=[f"R{c['round']}" for c in changes], y=[rows[labels.index(c["agent"])] for c in changes],
            mode="markers", name="changed answer", marker=dict(size=24, opacity=0), showlegend=False,
            customdata=[[plot_text(c.get("from"), 80), plot_text(c.get("to"), 80)] for c in changes],
            hovertemplate="%{y} changed in %{x}: %{customdata[0]} → %{customdata[1]}<extra></extra>"))
        for c in changes:
            x, y = round_names.index(f"R{c['round']}"), labels.index(c["agent"])
            # On the cell's border, i.e. in the gap round it: a frame inside the cell left a strip
            # of the cell's colour outside it, read as a sliver of the next cell.
            shapes.append(dict(type="rect", xref="x", yref="y", x0=x - 0.5, x1=x + 0.5, y0=y - 0.5, y1=y + 0.5,
                               line=dict(color="black", width=FRAME_PX)))
    hint = "black frame: changed answer" if changes else "one colour per answer"
    return styled(traces, {"yaxis": {"autorange": "reversed"}, "shapes": shapes}, "Answer timeline", "", xtitle="",
                  height=max(300, 110 + 56 * len(labels)) + (24 * len(categories) if legend else 0),
                  subtitle=hint + ("; legend: the answers" if legend else "; hover: whole answer"))


def cell_color(trace: Any, row: int, col: int) -> str | None:
    """The colour a timeline heatmap trace paints cell (row, col) with (None: a cell without an
    answer, drawn in NO_ANSWER_COLOR with the reason as its text)."""
    value = trace["z"][row][col]
    meta = trace["meta"]
    if value is None or (meta and int(value) == meta[0]):
        return None
    return trace["colorscale"][2 * int(value)][1]


# ----- files ---------------------------------------------------------------------------------------
def figure_html(fig: go.Figure, config: dict[str, Any] | None = None) -> str:
    """A standalone HTML page of `fig` that works offline: plotly.js is embedded (no CDN), and the
    model text inside the figure was escaped when the figure was built (`plot_text`)."""
    return fig.to_html(full_html=True, include_plotlyjs=True, include_mathjax=False, config=config or {},
                       validate=False)


# ----- every chart of a debate ---------------------------------------------------------------------
def debate_figures(view: DebateView, report: dict[str, Any],
                   revealed: bool = True) -> dict[str, tuple[str, go.Figure | None]]:
    """{chart key: (title, figure or None before there is anything to draw)}, in reading order.

    What depends on the reference (accuracy, log-likelihood) is drawn only when the debate is
    over and the reference `revealed` (a page reveals it on request; the handout shows all)."""
    referenced = revealed and view.status != "running" and bool((view.config or {}).get("reference"))
    colors = answer_colors(report, view.agents)
    votes = vote_rounds(view, report)
    entropy = {"entropy (bits)": "entropy"}
    if referenced:
        entropy["log-likelihood of the reference (log2)"] = "log_likelihood"
    charts: dict[str, tuple[str, go.Figure | None]] = {
        "plot_diversity": ("Answer similarity (SBERT)", report_figure(
            report, {"final answers": "answer_similarity", "whole replies": "reply_similarity"},
            "Answer similarity (SBERT)", "cosine similarity", "cosine: final answers and whole replies")),
        "plot_entropy": ("Entropy of answers", report_figure(
            report, entropy, "Entropy of answers", "bits",
            "readable answers; and log-likelihood" if referenced else "of readable answers; 0 bits: all agree",
            readable=True)),
        "plot_agreement": ("Agreement", report_figure(
            report, {"all agree": "agree_all", "majority agrees": "agree_majority", "disagreement": "disagreement"},
            "Agreement", "share", "share of agents, per round; unreadable agrees with none", readable=True)),
    }
    if referenced:
        charts["plot_accuracy"] = ("Accuracy", report_figure(
            report, {"strict": "accuracy_strict", "smooth (per part)": "accuracy_smooth"},
            "Accuracy", "accuracy", "the round's majority answer vs the reference"))
    charts["plot_votes"] = ("Votes", votes_figure(votes, view.config.get("protocol", ""), colors) if votes else None)
    charts["plot_timeline"] = ("Answer timeline", timeline_figure(view, report, colors))
    return charts
