"""Chart colours a class can tell apart on a projector (issue 18): every colour at least 3:1 against the
app's background (WCAG 2.1 non-text contrast), text drawn on a colour at least 4.5:1. The ratio is
computed here from the WCAG formula, not with the code under test."""
from __future__ import annotations

import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from mad_core import figures
from madlab_ui.common import JUDGE_STYLE, PALETTE

ROOT = Path(__file__).resolve().parents[2]
WHITE = "#ffffff"


def luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance of "#rrggbb"."""
    rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return sum(weight * c for weight, c in zip((0.2126, 0.7152, 0.0722), linear))


def wcag(first: str, second: str) -> float:
    light, dark = sorted((luminance(first), luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


CHART_COLOURS = sorted({*figures.CATEGORY_COLORS, figures.NO_ANSWER_COLOR,
                        *(colour for colour, _ in figures.SERIES.values()),
                        *(hexcode for _, _, hexcode in PALETTE), JUDGE_STYLE[2]})


def test_the_app_draws_on_a_light_background_only():
    # The charts are checked against white: the app sets no dark theme (were one added, check it too).
    theme = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8")).get("theme", {})
    assert theme.get("base", "light") == "light" and "backgroundColor" not in theme


@pytest.mark.parametrize("colour", CHART_COLOURS)
def test_every_chart_colour_reaches_3_to_1_against_the_background(colour):
    assert wcag(colour, WHITE) >= 3.0, colour


REPORT = {"rounds": [{"round": r, "answers": {f"Agent {a}": (None if a == r == 3 else f"answer {a + r}")
                                             for a in range(1, 4)}} for r in range(1, 5)], "agents": {}}


def test_timeline_cell_text_reaches_4_5_to_1_on_every_cell():
    cells = figures.timeline_figure(SimpleNamespace(agents=["Agent 1", "Agent 2", "Agent 3"]), REPORT).data[0]
    ink = cells.textfont.color
    backgrounds = {colour for _, colour in cells.colorscale}
    assert figures.NO_ANSWER_COLOR in backgrounds and len(backgrounds) >= 6
    assert all(wcag(ink, colour) >= 4.5 for colour in backgrounds), (ink, backgrounds)
    # every answer colour would take the same text colour: none of them needs the other
    assert all(wcag(ink, colour) >= 4.5 for colour in figures.CATEGORY_COLORS)


def test_text_on_a_colour_is_black_or_white_by_contrast():
    assert figures.text_color("#eeca3b") == "#000000"  # must not happen: white on yellow (1.6:1)
    assert figures.text_color("#1a237e") == "#ffffff"
    assert figures.text_color("#1a237e", "#eeca3b") in ("#000000", "#ffffff")
    assert abs(figures.contrast("#777777", WHITE) - wcag("#777777", WHITE)) < 1e-9
    stances = [{"round": 1, "unit": "agrees (1) or not (0)", "labels": ["Agent 1", "Agent 2"], "counts": [1.0, 0.0],
                "answers": ["yes", "no"], "keys": ["k0", "k1"], "stances": True}]
    bars = figures.votes_figure(stances, "majority_consensus", {"k0": "#eeca3b", "k1": "#1a237e"}).data[0]
    assert list(bars.insidetextfont.color) == ["#000000", "#ffffff"]  # a ballot's word on its bar, readable
