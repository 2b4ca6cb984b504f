"""The steering state of a live debate in words: what a stop or a decision request waits for.

`steering_line` is the controls' line ("Paused: nothing more is generated until Resume · deciding:
collecting 3 votes (1/3)"), `steering_note` the status line's note (`transcript.render_status`). Both
read the controller now, not the folded view. A leaf: the controls and the transcript import it,
so the transcript needs nothing of the controls (no import circle).

What it must not do: draw anything, or steer.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mad_core.controller import Activity
    from mad_core.live import LiveDebate

STOPPING = "stopping: the current turn is cut, and no further turn starts"  # engine: stop cuts at the next piece
PAUSED = "paused: nothing more is generated until Resume"  # engine: a paused stream waits before its next piece
_CALLS = {"voting": "collecting {n} votes", "extraction": "extracting {n} answers", "judge": "asking the judge",
          "summary": "summarizing", "challenge": "asking {n} agents to accept or challenge the answer"}


def _step(activity: Activity) -> str:
    """The calls under way: "collecting 3 votes (1/3)", "discussion (0/1)"."""
    n = activity.expected
    what = _CALLS.get(activity.phase, activity.phase).format(n=n)
    return f"{what} ({activity.received}/{n})" if n else what


def _deciding(activity: Activity) -> str:
    if activity.deciding or activity.phase in ("voting", "extraction", "judge"):
        return f"deciding: {_step(activity)}"
    if activity.phase == "ended":
        return "deciding"
    return "decision requested: the turn under way finishes, then the protocol decides"


def steering_line(debate: LiveDebate | None) -> str:
    """The steering state, read from the controller now: the state asked for and what it waits for."""
    if debate is None:
        return ""
    controller = debate.controller
    if debate.done:
        return f"Debate {debate.status}."
    if controller.stopped:
        return STOPPING.capitalize()
    activity = controller.activity
    parts = []
    if controller.paused:
        parts.append(PAUSED)
    if controller.force_requested:
        parts.append(_deciding(activity))
    if not parts:
        parts.append("running")  # what it is doing: the progress bar (refreshed with the live page)
    line = " · ".join(parts)
    return line[:1].upper() + line[1:]


def steering_note(debate: LiveDebate | None) -> str | None:
    """What a steering request waits for (stop, force decision), or None: for the status line."""
    if debate is None or debate.done:
        return None
    if debate.controller.stopped:
        return STOPPING
    if debate.controller.force_requested:
        return _deciding(debate.controller.activity)
    return None
