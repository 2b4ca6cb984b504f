"""A debate as a class reads it: the decision and its agreement with the reference, and the
handout (Markdown, and a printable HTML page).

What it is for:
  * `decision_texts(view)`: the decided answer (extracted) and the full text it came from;
    `headline_answer`: that answer cut to a headline at a word, with … (`cut_words`; the whole
    answer stays one click away);
  * `winner_words(view)`: the winner as a decision card names it ("Agent 1's extracted final
    answer" when the answer is that agent's extraction, not its last discussion reply);
  * `reference_agreement(view)`: whether the decision agrees with the reference answer, judged
    with the debate's answer type (mad_core/tasks/answer_types.py: "B" and "(B) Paris" are one
    choice, "0.5" and "1/2" one number), never a plain string compare;
  * `handout_markdown(store, debate_id)` and `handout_html(store, debate_id)`: the question, the
    decision, the class's prediction polls (each poll's round when known, question, answers with
    their counts, which answer was right and who predicted it: `polls.debate_results`; no section
    when the debate had none), the votes, the transcript round by round (moderator messages in place; under each
    turn its answer as the metrics read it, short, never the reply again), the annotations under
    their turns, and the charts as images, each with a caption saying how to
    read it on paper (`PRINT_CAPTIONS`: not its title again, nothing about hovering).

The HTML page is self-contained and printable (A4, a page break before each round, each chart and
its caption one inline block that a page break cannot split) and holds no
script at all: its Content-Security-Policy allows no script either, and the charts are static
images (SVG drawn by plotly through kaleido with Debian's Chromium, embedded as data: URIs; an
<img> never runs what an SVG holds); they are the app's own figures (mad_core/figures.py: the
same builders, answer and measure colours) on plotly's white template (`print_figure`). Every
model or user text goes through `html.escape`; in
the Markdown through `store.md_safe`, so no text can form HTML, a link or an image. Where no
image can be drawn (no kaleido or no Chromium), the handout says so in one line and is complete
otherwise.

What it must not do: import streamlit, call a model, write to the store (beyond the metric
report's cache), or raise on odd model text (every text is escaped, nothing is parsed as markup).
"""
from __future__ import annotations

import asyncio
import base64
import html
import re
import threading
from collections import Counter
from typing import Any

import plotly.graph_objects as go

from . import codebook, figures, polls
from .answers import decided_answer
from .shorten import cut_words  # handout.cut_words: the poll's and the stage's callers use it here too
from .codebook import TAG_COLOURS
from .exports import describe_ballot, format_time, md_safe
from .metrics.report import debate_report
from .store import Store
from .tasks.answer_types import DebateAnswerType, is_correct, read_answer, shown_answer
from .view import DISCUSSION_KINDS, DebateView

IMAGE_WIDTH_PX = 760  # a wide chart: an A4 page's text width
HALF_WIDTH_PX = 480  # a line chart: half the page (drawn wider than it prints so its text stays legible)
WIDE_CHARTS = ("Votes", "Answer timeline")  # charts given the page's whole width
# What each chart shows, under it on paper (its title is in the image: the caption says how to read it).
PRINT_CAPTIONS = {
    "plot_diversity": "How alike the agents' answers are in each round: the cosine similarity of their sentence "
                      "embeddings (SBERT), for the final answers and for the whole replies. Higher = more alike.",
    "plot_entropy": "How spread the readable answers are in each round: 0 bits when they are all the same, "
                    "more when they differ; a round without a readable answer has no point.",
    "plot_agreement": "In each round: whether all agents agree, whether at least half hold one answer, and the "
                      "share of pairs of agents whose answers differ.",
    "plot_accuracy": "In each round, whether the most common answer matches the reference: strict (all of it) "
                     "and smooth (the share of its parts that are right).",
    "plot_votes": "One bar per solution: how much support it got, coloured by its answer (the same colour as in "
                  "the other charts).",
    "plot_timeline": "One row per agent, one column per round, one colour per answer; a black frame marks an "
                     "agent that changed its answer. The cells show the start of each answer: the whole answers "
                     "are in the transcript below.",
}
IMAGE_TIMEOUT_S = 90.0  # the whole set of images (Chromium starts once: about 3 s, then ~0.3 s a chart)
_IMAGE_LOCK = threading.Lock()  # one Chromium at a time on a small machine
_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")
_STANCES = {True: "accepts", False: "challenges", None: "gives no clear stance on"}  # a ChallengeResult's `agrees`


# ----- the decision --------------------------------------------------------------------------------
def decision_texts(view: DebateView) -> tuple[str, str]:
    """(the decided answer, short; the full text it was decided from).

    The answer is the decision's extracted final answer (a convergence winner's whole draft
    reads as its `Final answer:` line) as every display shows it (`answer_types.shown_answer`:
    read with the debate's answer type, "no readable answer" when it holds none). The full text
    is the winning agent's last discussion reply of the deciding round or before, the judge's
    reply when the judge stated the answer, else the decision's own answer."""
    decision = view.decision
    if decision is None:
        return "", ""
    answer = decided_answer(decision.answer, decision.details)
    answer = shown_answer(answer, view.config) if answer.strip() else ""  # the decision card, as every display
    full = ""
    if decision.winner_agent == "judge":
        full = str(decision.details.get("judgment") or "")
    elif decision.winner_agent:
        said = [t.text for t in view.turns if t.agent == decision.winner_agent and t.kind in DISCUSSION_KINDS
                and t.status == "ok" and t.round <= decision.round]
        full = said[-1] if said else ""
    return answer.strip(), (full or decision.answer).strip()


def winner_words(view: DebateView) -> str:
    """Who the decided answer came from, as a decision card names the winner: "Agent 1"; "Agent
    1's final answer" when the answer is the final answer that agent stated when asked
    for it in the deciding round (seed 000 E.1), so that it is not read as contradicting the
    agent's last discussion reply; "" without a winner."""
    decision = view.decision
    winner = decision.winner_agent if decision is not None else None
    if not winner:
        return ""
    if any(t.kind == "extraction" and t.agent == winner and t.round == decision.round and t.status == "ok"
           for t in view.turns):
        return f"{winner}'s final answer"
    return winner


ANSWER_CHARS = 60  # a decision's headline answer: longer answers are cut, the whole one a click away


VOTE_ANSWER_CHARS = 90  # an answer in the handout's vote table
TURN_ANSWER_CHARS = 90  # a turn's "Answer:" line under its reply: the answer as read, never the reply again
ANSWERING_KINDS = (*DISCUSSION_KINDS, "extraction")  # the turns that state an answer


def headline_answer(answer: str) -> str:
    """The decided answer as a headline (decision card, handout, poll): whitespace folded, at most
    ANSWER_CHARS characters, cut at a word with … (a 160-digit number made a three-line heading)."""
    return cut_words(answer, ANSWER_CHARS)


def reference_agreement(view: DebateView) -> tuple[bool | None, str]:
    """(True / False / None when it cannot be judged, a sentence saying so) for the decision
    against the reference answer, read with the debate's answer type. Never raises."""
    config = view.config or {}
    reference = config.get("reference")
    if view.decision is None or not isinstance(reference, str) or not reference.strip():
        return None, "no decision to compare" if view.decision is None else "no reference answer"
    answer_type = DebateAnswerType.of(config)
    kind, keywords = answer_type.kind, answer_type.keywords
    answer = decided_answer(view.decision.answer, view.decision.details)  # the text, not its display
    if not read_answer(kind, reference, **keywords).valid:
        return None, f"the reference cannot be read as a {kind} answer"
    texts = [text for text in (view.decision.answer, answer) if text]
    if not any(read_answer(kind, text, **keywords).valid for text in texts):
        return None, f"the decision's answer cannot be read as a {kind} answer"
    if any(is_correct(kind, text, reference, **keywords) for text in texts):
        return True, f"the decision matches it (read as a {kind} answer)"
    return False, f"the decision differs from it (read as a {kind} answer)"


# ----- what the handout holds -------------------------------------------------------------------
def _notes(store: Store, debate_id: str) -> dict[str, list[dict[str, str]]]:
    """turn id -> [{"tag", "note", "color"}]; the colour is the tag's in the shared codebook, kept
    only when it is one of the codebook's colour names or a #rrggbb (it goes into a style)."""
    colours = {row["name"]: str(row.get("colour") or "") for row in codebook.tags(store)}
    notes: dict[str, list[dict[str, str]]] = {}
    for row in store.annotations(debate_id):
        tag = str(row.get("tag") or "")
        color = colours.get(tag, "")
        notes.setdefault(row["turn_id"], []).append({
            "tag": tag, "note": str(row.get("note") or ""),
            "color": color if color in TAG_COLOURS or _COLOR.match(color) else ""})
    return notes


def _rounds(view: DebateView, notes: dict[str, list[dict[str, str]]], report: dict[str, Any]) -> list[dict]:
    """Per round, in order: its title, its items (turns and moderator messages), its votes and tally."""
    tallies = {item["round"]: item for item in figures.vote_rounds(view, report)}
    rounds: list[dict[str, Any]] = []
    by_number: dict[int, dict[str, Any]] = {}

    def round_of(rnd: int) -> dict[str, Any]:
        if rnd not in by_number:
            by_number[rnd] = {"round": rnd, "title": view.round_title(rnd), "items": []}
            rounds.append(by_number[rnd])
        return by_number[rnd]

    current = None
    for kind, item in view.timeline:
        if kind == "steer":
            if item.action != "message":
                continue
            to = ", ".join(item.targets) if item.targets else "all agents"
            round_of(current if current is not None else 0)["items"].append(
                {"type": "steer", "head": f"Moderator → {to}", "text": item.message or ""})
            continue
        turn = view.turn(item)
        if turn is None:
            continue
        current = turn.round
        round_of(turn.round)["items"].append({
            "type": "turn", "agent": turn.agent, "kind": turn.kind, "model": turn.model, "status": turn.status,
            "text": turn.text, "error": turn.error or "", "notes": notes.get(turn.id, []),
            "answer": _turn_answer(view.config, turn)})
    for rnd in sorted({v.round for v in view.votes} | {a.round for a in view.attempts}):
        entry = round_of(rnd)
        entry["votes"] = [(v.agent, describe_ballot(v.ballot) if v.valid else f"invalid ({v.reason or 'unreadable'})")
                          for v in view.votes_of_round(rnd)]
        entry["tally"] = tallies.get(rnd)
        entry["attempts"] = [f"{a.protocol}: {'decision reached' if a.reached else 'no decision'}: {a.reason}"
                             for a in view.attempts if a.round == rnd]
    rounds.sort(key=lambda r: r["round"])
    return rounds


def _turn_answer(config: dict | None, turn: Any) -> str:
    """A turn's answer as every display shows it (`answer_types.shown_answer`: the debate's answer
    type; an extraction's parsed answer), cut to TURN_ANSWER_CHARS; NO_READABLE when its reply
    holds none; "" for a turn that states no answer (a vote, a failed call)."""
    if turn.kind not in ANSWERING_KINDS or turn.status != "ok":
        return ""
    return cut_words(shown_answer(turn.text, config, turn.answer), TURN_ANSWER_CHARS)


def _content(store: Store, debate_id: str, embed: Any, image_format: str | None) -> dict[str, Any]:
    record = store.get_debate(debate_id)
    if record is None:
        raise LookupError(f"no debate with id {debate_id!r}")
    view = DebateView.from_store(store, debate_id)
    report = debate_report(store, debate_id, embed=embed)
    notes = _notes(store, debate_id)
    answer, full = decision_texts(view)
    headline = headline_answer(answer)  # the decision's answer, cut to ANSWER_CHARS
    charts = [(key, title, fig) for key, (title, fig) in figures.debate_figures(view, report).items() if fig is not None]
    widths = [IMAGE_WIDTH_PX if title in WIDE_CHARTS else HALF_WIDTH_PX for _, title, _ in charts]
    images, problem = figure_images([fig for _, _, fig in charts], image_format, widths) if image_format else ([], None)
    config = view.config or {}
    return {
        "question": record["question"], "task": config.get("task") or "", "id": debate_id,
        "facts": [("Debate", f"{debate_id[:8]} · {record['status']} · {format_time(record.get('created_at'))}"),
                  ("Protocol", record["protocol"]), ("Paradigm", record["paradigm"])],
        "agents": [(a.get("label", ""), a.get("model", ""), view.personas.get(a.get("label", "")) or a.get("persona") or "")
                   for a in config.get("agents", [])],
        "decision": view.decision, "answer": answer, "headline": headline, "winner": winner_words(view),
        "cut": headline != " ".join(answer.split()), "full": full,
        "reference": config.get("reference") or "",
        "agreement": reference_agreement(view), "rounds": _rounds(view, notes, report),
        "challenges": view.challenges,
        "images": [(title, PRINT_CAPTIONS.get(key, ""), data) for (key, title, _), data in zip(charts, images) if data],
        "image_problem": problem,
        "tags": Counter(n["tag"] for turn_notes in notes.values() for n in turn_notes),
        "polls": [_poll_entry(i, result) for i, result in enumerate(polls.debate_results(store, debate_id), 1)],
    }


POLL_STATUS = {"open": "still open", "closed": "closed, not revealed in class",
               "decided": "closed when the debate decided, not revealed in class", "revealed": "revealed in class"}


def _poll_entry(number: int, result: dict[str, Any]) -> dict[str, Any]:
    """One prediction poll as the handout shows it (its texts unescaped: each format escapes them)."""
    poll, right = result["poll"], result["right_options"]
    decision = result["decision"]
    rnd = poll.get("round")
    title = f"Poll {number}" + ("" if rnd is None else " · before the debate" if rnd == 0 else f" · round {rnd}")
    if decision is None:
        decided = "No decision was reached."
    else:
        named = any(polls.matches(option, decision) for option in poll["options"])
        decided = (f"The debate decided: {headline_answer(decision)}"
                   + ("" if named else " (none of the listed answers)"))
    marked = " (the teacher's choice)" if poll.get("marked_right") in right else ""
    return {"title": title, "question": poll["question"], "status": POLL_STATUS.get(poll["status"], poll["status"]),
            "rows": [(option, count, f"right{marked}" if option in right else "")
                     for option, count in result["counts"].items()],
            "decided": decided, "right": f"Predicted right: {len(result['right'])} of {result['total']}",
            "names": ", ".join(result["right"])}


# ----- charts as images ----------------------------------------------------------------------------
def print_figure(fig: Any) -> go.Figure:
    """A copy of one of the app's figures (mad_core/figures.py, the same builders and answer ->
    colour map) as the handout draws it: plotly's white template for paper. Every colour that
    means something (a measure's line, an answer's cells and bars) is set in the figure itself,
    so the template changes the background and grid only; a subtitle's hint to hover is dropped."""
    copy = go.Figure(fig)
    copy.update_layout(template="plotly_white")
    subtitle = copy.layout.title.subtitle.text or ""
    if "; hover" in subtitle:  # paper has no hover: the timeline's "; hover: whole answer" goes
        copy.update_layout(title_subtitle_text=subtitle.split("; hover")[0])
    return copy


def figure_images(figs: list, image_format: str = "svg",
                  widths: list[int] | None = None) -> tuple[list[bytes | None], str | None]:
    """The figures drawn as `image_format` ("svg" or "png"), `widths` pixels wide (default
    IMAGE_WIDTH_PX), by kaleido with the system's Chromium in one browser session; ([], the
    reason) when that cannot be done. Never raises."""
    if not figs:
        return [], None
    try:
        from kaleido import Kaleido, PageGenerator
    except ImportError:
        return [], "the charts are left out: kaleido is not installed (pip install -r requirements.txt)"

    async def draw() -> list[bytes | None]:
        out: list[bytes | None] = []
        # mathjax=False: no request for MathJax from a CDN (this machine is offline).
        async with Kaleido(n=1, page_generator=PageGenerator(mathjax=False), timeout=IMAGE_TIMEOUT_S) as k:
            for fig, width in zip(figs, widths or [IMAGE_WIDTH_PX] * len(figs)):
                copy = print_figure(fig)
                height = int(copy.layout.height or 320)
                out.append(await k.calc_fig(copy, opts={"format": image_format, "width": width,
                                                        "height": height}))
        return out

    result: dict[str, Any] = {}

    def run() -> None:  # its own thread: asyncio.run needs a thread without a running event loop
        try:
            result["images"] = asyncio.run(draw())
        except BaseException as exc:  # noqa: BLE001 - no Chromium, a crash: the handout goes on
            result["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"

    with _IMAGE_LOCK:
        worker = threading.Thread(target=run, name="madlab-handout-images", daemon=True)
        worker.start()
        worker.join(IMAGE_TIMEOUT_S + 30)
    if "images" in result:
        return result["images"], None
    reason = result.get("error") or f"no answer from Chromium within {IMAGE_TIMEOUT_S + 30:.0f} s"
    return [], f"the charts are left out: they could not be drawn ({reason})"


def _data_uri(data: bytes, image_format: str) -> str:
    mime = "image/svg+xml" if image_format == "svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def handout_file(db_path: Any, debate_id: str, file_format: str, *, embed: Any = None) -> str:
    """The "md" or "html" handout of a debate in the database at `db_path`, read through a Store
    of the calling thread's own (the app builds a download in another thread, when clicked)."""
    store = Store(db_path)
    try:
        build = handout_html if file_format == "html" else handout_markdown
        return build(store, debate_id, embed=embed)
    finally:
        store.close()


# ----- Markdown ------------------------------------------------------------------------------------
def _md(text: Any) -> str:
    return md_safe(str(text if text is not None else ""))


def _md_line(text: Any) -> str:
    return " ".join(_md(text).split())


def handout_markdown(store: Store, debate_id: str, *, embed: Any = None, images: bool = True) -> str:
    """The handout in Markdown (charts as PNG data: URIs when `images`); every text md_safe."""
    c = _content(store, debate_id, embed, "png" if images else None)
    lines = [f"# {_md_line(c['question'])}", ""]
    if c["task"]:
        lines += [_md(c["task"]), ""]
    lines += [f"- **{label}:** {_md_line(value)}" for label, value in c["facts"]]
    lines += [f"- **{_md_line(label)}:** {_md_line(model)}" + (f" — {_md_line(persona)}" if persona else "")
              for label, model, persona in c["agents"]]
    lines += ["", "## Decision", ""] + _md_decision(c)
    if c["polls"]:
        lines += ["", "## Class polls"]
        for entry in c["polls"]:
            lines += [""] + _md_poll(entry)
    votes = [r for r in c["rounds"] if r.get("votes") or r.get("tally")]
    if votes:
        lines += ["", "## Votes"]
        for r in votes:
            lines += ["", f"**{_md_line(r['title'])}**", ""] + _md_votes(r)
    lines += ["", "## Transcript"]
    for r in c["rounds"]:
        lines += ["", f"### {_md_line(r['title'])}"]
        for item in r["items"]:
            lines += [""] + _md_item(item)
    lines += ["", "## Charts", ""] + _md_images(c)
    if c["tags"]:
        lines += ["", "## Annotation tags", ""]
        lines += [f"- **{_md_line(tag)}**: {count}" for tag, count in sorted(c["tags"].items())]
    return "\n".join(lines) + "\n"


def _md_decision(c: dict[str, Any]) -> list[str]:
    decision = c["decision"]
    if decision is None:
        return ["No decision was reached."]
    lines = [f"**Answer:** {_md_line(c['headline']) or '(empty)'}", ""]
    if c["cut"]:  # the whole answer in a quote below
        lines += [f"> Whole answer ({len(c['answer'])} characters): {_md_line(c['answer'])}", ""]
    facts = [f"protocol {_md_line(decision.protocol)}", f"round {decision.round}"]
    if decision.winner_agent:
        facts.append(f"winner {_md_line(c['winner'])}")
    if decision.forced:
        facts.append("forced by a person")
    lines.append(" · ".join(facts))
    if decision.fallback:
        lines += ["", f"Fallback rule: {_md_line(decision.fallback)}"]
    if c["reference"]:
        lines += ["", f"**Reference answer:** {_md_line(c['reference'])} — {_md_line(c['agreement'][1])}"]
    lines += [f"- {_md_line(ch.agent)} {_STANCES[ch.agrees]} the answer"
              + (f" and proposes {_md_line(ch.new_answer)}" if ch.new_answer else "") for ch in c["challenges"]]
    return lines


def _md_poll(entry: dict[str, Any]) -> list[str]:
    lines = [f"### {_md_line(entry['title'])}: {_md_line(entry['question'])}", "", f"*{entry['status']}*", ""]
    lines += [f"- {_md_line(option)}: {count}" + (f" — ✅ {mark}" if mark else "")
              for option, count, mark in entry["rows"]]
    lines += ["", _md_line(entry["decided"]), "",
              f"**{entry['right']}**" + (f": {_md_line(entry['names'])}" if entry["names"] else "")]
    return lines


def _md_votes(r: dict[str, Any]) -> list[str]:
    lines = [f"- {_md_line(agent)}: {_md_line(ballot)}" for agent, ballot in r.get("votes") or []]
    tally = r.get("tally")
    if tally:
        lines.append(f"- **{_md_line(tally['unit'])}:** " + "; ".join(
            f"{_md_line(label)}{' → ' + _md_line(cut_words(answer, VOTE_ANSWER_CHARS)) if answer else ''}: {count:g}"
            for label, answer, count in zip(tally["labels"], tally["answers"], tally["counts"])))
    lines += [f"- {_md_line(a)}" for a in r.get("attempts") or []]
    return lines


def _md_item(item: dict[str, Any]) -> list[str]:
    if item["type"] == "steer":
        return [f"**{_md_line(item['head'])}**", "", _md(item["text"])]
    head = f"**{_md_line(item['agent'])}** · {_md_line(item['kind'])} · {_md_line(item['model'])}"
    lines = [head + (f" · {_md_line(item['status'])}" if item["status"] != "ok" else ""), ""]
    lines.append(_md(item["text"]).replace("\n", "  \n") or "(no text)")  # the reply's line breaks kept
    if item["error"]:
        lines += ["", f"*{_md_line(item['error'])}*"]
    if item["answer"]:
        lines += ["", f"**Answer:** {_md_line(item['answer'])}"]
    lines += [f"\n> 🏷️ **{_md_line(n['tag'])}**" + (f": {_md_line(n['note'])}" if n["note"] else "") for n in item["notes"]]
    return lines


def _md_images(c: dict[str, Any]) -> list[str]:
    if c["image_problem"]:
        return [_md_line(c["image_problem"])]
    if not c["images"]:
        return ["(no charts: the debate has no complete round)"]
    return [f"![{_md_line(title)}]({_data_uri(data, 'png')})\n\n*{_md_line(caption)}*\n" for title, caption, data in c["images"]]


# ----- HTML ----------------------------------------------------------------------------------------
_CSS = """
:root { font-family: Georgia, 'DejaVu Serif', serif; color: #111; }
body { max-width: 190mm; margin: 0 auto; padding: 8mm; line-height: 1.4; }
h1 { font-size: 22pt; margin: 0 0 4mm; } h2 { font-size: 16pt; border-bottom: 1px solid #999; }
h3 { font-size: 12pt; margin: 0 0 1mm; } .facts { color: #444; font-size: 10pt; }
.answer { font-size: 18pt; font-weight: bold; } .verdict { font-size: 12pt; }
.turn, .steer { border-left: 4px solid #4c78a8; padding: 1mm 3mm; margin: 3mm 0; }
.steer { border-color: #e45756; background: #fff4f4; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 10.5pt; }
.turn-answer { font-size: 10.5pt; margin: 1mm 0; } /* the reply's size: the answer line is no heading */
.persona, .meta { color: #555; font-size: 9.5pt; } .note { font-size: 10pt; margin: 1mm 0; }
.tag { border: 1px solid #888; border-radius: 3px; padding: 0 2mm; font-weight: bold; }
table { border-collapse: collapse; font-size: 10pt; } td, th { border: 1px solid #bbb; padding: 1mm 2mm; }
.figures { font-size: 0; } /* two half-width charts side by side, a wide one alone (inline blocks) */
figure.chart { display: inline-block; vertical-align: top; width: calc(50% - 2mm); margin: 0 0 4mm;
  font-size: 10.5pt; break-inside: avoid; page-break-inside: avoid; }
figure.chart:nth-child(odd of :not(.wide)) { margin-right: 4mm; } figure.chart.wide { width: 100%; margin-right: 0; }
figure img { display: block; width: 100%; height: auto; } figcaption { font-size: 9pt; color: #555; margin-top: 1mm; }
.yes { color: #1a7f37; font-weight: bold; } .no { color: #c62828; font-weight: bold; } .unsure { color: #8a6d00; }
@page { size: A4; margin: 14mm 12mm; }
@media print {
  body { padding: 0; max-width: none; }
  section.round { break-before: page; }
  .turn, .steer, figure, table { break-inside: avoid; page-break-inside: avoid; }
  h2, h3 { break-after: avoid; }
}
"""
# No script may run in the page, whatever it holds: images only from data: URIs, our own CSS only.
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def _e(text: Any) -> str:
    return html.escape(str(text if text is not None else ""), quote=True)


def handout_html(store: Store, debate_id: str, *, embed: Any = None, images: bool = True) -> str:
    """The handout as one printable, self-contained HTML page without scripts (charts as SVG
    data: URIs when `images`); every model or user text html.escape'd."""
    c = _content(store, debate_id, embed, "svg" if images else None)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
             f"<title>{_e(c['question'])}</title><style>{_CSS}</style></head><body>",
             f"<header><h1>{_e(c['question'])}</h1>"]
    if c["task"]:
        parts.append(f'<p class="text">{_e(c["task"])}</p>')
    parts.append('<p class="facts">' + " · ".join(f"<b>{label}:</b> {_e(value)}" for label, value in c["facts"])
                 + "</p>")
    personas = any(persona for _, _, persona in c["agents"])
    parts.append("<table><tr><th>agent</th><th>model</th>" + ("<th>persona</th>" if personas else "") + "</tr>"
                 + "".join(f"<tr><td>{_e(label)}</td><td>{_e(model)}</td>"
                           + (f"<td>{_e(persona)}</td>" if personas else "") + "</tr>"
                           for label, model, persona in c["agents"]) + "</table></header>")
    parts += ['<section class="decision"><h2>Decision</h2>'] + _html_decision(c) + ["</section>"]
    if c["polls"]:
        parts += ['<section class="polls"><h2>Class polls</h2>'] + [_html_poll(e) for e in c["polls"]] + ["</section>"]
    votes = [r for r in c["rounds"] if r.get("votes") or r.get("tally")]
    if votes:
        parts.append('<section class="votes"><h2>Votes</h2>')
        for r in votes:
            parts += [f"<h3>{_e(r['title'])}</h3>"] + _html_votes(r)
        parts.append("</section>")
    parts.append('<section class="charts"><h2>Charts</h2>')
    if c["image_problem"]:
        parts.append(f"<p>{_e(c['image_problem'])}</p>")
    elif not c["images"]:
        parts.append("<p>(no charts: the debate has no complete round)</p>")
    parts.append('<div class="figures">')
    for title, caption, data in c["images"]:  # a figure is one unbreakable box: its caption stays with it
        wide = " wide" if title in WIDE_CHARTS else ""
        parts.append(f'<figure class="chart{wide}"><img src="{_data_uri(data, "svg")}" alt="{_e(title)}">'
                     f"<figcaption>{_e(caption)}</figcaption></figure>")
    parts.append("</div></section>")
    for r in c["rounds"]:
        parts.append(f'<section class="round"><h2>{_e(r["title"])}</h2>')
        parts += [_html_item(item) for item in r["items"]]
        parts.append("</section>")
    if c["tags"]:
        parts.append('<section class="tags"><h2>Annotation tags</h2><ul>' + "".join(
            f"<li><b>{_e(tag)}</b>: {count}</li>" for tag, count in sorted(c["tags"].items())) + "</ul></section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_decision(c: dict[str, Any]) -> list[str]:
    decision = c["decision"]
    if decision is None:
        return ["<p>No decision was reached.</p>"]
    facts = [f"protocol {_e(decision.protocol)}", f"round {decision.round}"]
    if decision.winner_agent:
        facts.append(f"winner {_e(c['winner'])}")
    if decision.forced:
        facts.append("forced by a person")
    out = [f'<p class="answer">{_e(c["headline"]) or "(empty)"}</p>']
    if c["cut"]:  # the whole answer one click away
        out.append(f'<details><summary>Whole answer ({len(c["answer"])} characters)</summary>'
                   f'<p class="text">{_e(c["answer"])}</p></details>')
    out.append(f'<p class="meta">{" · ".join(facts)}</p>')
    if decision.fallback:
        out.append(f"<p>Fallback rule: {_e(decision.fallback)}</p>")
    if c["reference"]:
        verdict, sentence = c["agreement"]
        mark = {True: "yes", False: "no", None: "unsure"}[verdict]
        out.append(f'<p class="verdict"><b>Reference answer:</b> {_e(c["reference"])} — '
                   f'<span class="{mark}">{_e(sentence)}</span></p>')
    for ch in c["challenges"]:
        extra = f" and proposes {_e(ch.new_answer)}" if ch.new_answer else ""
        out.append(f'<p class="meta">{_e(ch.agent)} {_STANCES[ch.agrees]} the answer{extra}</p>')
    return out


def _html_poll(entry: dict[str, Any]) -> str:
    rows = "".join(f"<tr><td>{_e(option)}</td><td>{count}</td><td>{'✅ ' + _e(mark) if mark else ''}</td></tr>"
                   for option, count, mark in entry["rows"])
    names = f": {_e(entry['names'])}" if entry["names"] else ""
    return (f'<div class="poll"><h3>{_e(entry["title"])}: {_e(entry["question"])}</h3>'
            f'<p class="meta">{_e(entry["status"])}</p>'
            f"<table><tr><th>answer</th><th>predictions</th><th>right</th></tr>{rows}</table>"
            f"<p>{_e(entry['decided'])}</p><p><b>{_e(entry['right'])}</b>{names}</p></div>")


def _html_votes(r: dict[str, Any]) -> list[str]:
    out = ["<ul>" + "".join(f"<li>{_e(agent)}: {_e(ballot)}</li>" for agent, ballot in r.get("votes") or []) + "</ul>"]
    tally = r.get("tally")
    if tally:
        out.append(f"<table><tr><th>solution</th><th>answer</th><th>{_e(tally['unit'])}</th></tr>" + "".join(
            f"<tr><td>{_e(label)}</td><td>{_e(cut_words(answer, VOTE_ANSWER_CHARS) or '-')}</td><td>{count:g}</td></tr>"
            for label, answer, count in zip(tally["labels"], tally["answers"], tally["counts"])) + "</table>")
    out += [f'<p class="meta">{_e(a)}</p>' for a in r.get("attempts") or []]
    return out


def _html_item(item: dict[str, Any]) -> str:
    if item["type"] == "steer":
        return f'<div class="steer"><h3>{_e(item["head"])}</h3><div class="text">{_e(item["text"])}</div></div>'
    status = f" · {_e(item['status'])}" if item["status"] != "ok" else ""
    out = [f'<article class="turn"><h3>{_e(item["agent"])} <span class="meta">· {_e(item["kind"])} · '
           f'{_e(item["model"])}{status}</span></h3>']
    out.append(f'<div class="text">{_e(item["text"]) or "(no text)"}</div>')
    if item["error"]:
        out.append(f'<p class="meta">{_e(item["error"])}</p>')
    if item["answer"]:
        out.append(f'<p class="turn-answer"><b>Answer:</b> {_e(item["answer"])}</p>')
    for n in item["notes"]:
        style = f' style="border: 2px solid {n["color"]}"' if n["color"] else ""
        note = f" {_e(n['note'])}" if n["note"] else ""
        out.append(f'<p class="note">Annotation: <span class="tag"{style}>{_e(n["tag"])}</span>{note}</p>')
    out.append("</article>")
    return "".join(out)
