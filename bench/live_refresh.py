"""Speed check: the server-side cost of one refresh of the live Debate page, for a 200-turn debate.

A 200-turn debate is recorded once with the scripted model (4 agents x 50 rounds, simple voting,
every turn streamed word by word), then replayed into a live debate (`mad_core.live`) up to the
middle of its last discussion turn, so that it is still running with one turn streaming. The
page's own functions are timed inside a Streamlit script run (`AppTest`), exactly as the page
calls them (`madlab_ui.live_page`):

  first refresh     a new browser session opens the page: the follower's copy of the debate,
                    the settled part (200 turns, decision card, plots) and the moving part;
  full run          the same for a session that already follows it (after a round or decision);
  tick              the auto-refreshing fragment: fold the events since the last tick (one
                    token each time), check whether the settled part changed, draw what moves;
  idle tick         the same with no new event (nothing is folded, copied or rebuilt);
  redraw all        for reference, what every tick cost before: copy the whole debate and draw
                    all of it (status, decision, transcript, usage, plots).

    target: a tick (median) <= 50 ms of server time

    .venv/bin/python bench/live_refresh.py               # 20 ticks of each kind
    .venv/bin/python bench/live_refresh.py --rounds 100 --agents 4 --json out.json

The SBERT embedder of the diversity plot is replaced by a cheap stand-in (`--sbert` keeps the
real one, whose first use costs seconds): the model is not the page's cost. Not a test on
purpose: timings depend on the machine (speed targets live in bench/, never in tests/).
"""
from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "app"))
TARGET_MS = 50.0  # server time of one refresh of the live page

from app_helpers import Feed  # noqa: E402 - a live debate fed event by event
from bench.common import Result, Target, ThreadProfiler, finish, median, parser  # noqa: E402
from mad_core.config import DebateConfig  # noqa: E402
from mad_core.engine import DebateEngine  # noqa: E402
from mad_core.events import DebateFinished, TokenReceived, TurnStarted  # noqa: E402
from mad_core.models import ensure_registered  # noqa: E402
from mad_core.models.scripted import Script, register_script  # noqa: E402


def reply(messages, info) -> str:
    kind = info["metadata"].get("kind")
    if kind == "vote":
        return "1"
    if kind == "extraction":
        return "42"
    return " ".join(f"c{info['call_index']}w{i}" for i in range(30)) + "\n\nFinal answer: 42"


def record(agents: int, rounds: int) -> list:
    """The events of a finished scripted debate (tokens included)."""
    ensure_registered()
    register_script("bench_live", Script(replies=reply))
    config = DebateConfig.from_dict({"question": "What is six times seven?", "protocol": "simple_voting",
                                     "agents": [{"label": f"Agent {i + 1}", "model": "scripted/bench_live"}
                                                for i in range(agents)],
                                     "rounds": rounds, "max_rounds": rounds})
    return list(DebateEngine(config).run())


def cut(events: list) -> int:
    """Index just after the 10th token of the last discussion turn: the debate still runs there."""
    last = max(i for i, e in enumerate(events) if isinstance(e, TurnStarted) and e.kind == "discussion")
    tokens = [i for i, e in enumerate(events) if i > last and isinstance(e, TokenReceived)
              and e.turn_id == events[last].turn_id]
    return tokens[9] + 1


def page_script(debate_id: str) -> None:
    """One Streamlit run: does what st.session_state["bench_mode"] says and records its seconds."""
    import time

    import streamlit as st

    from mad_core import live
    from madlab_ui import live_page, plots, transcript

    mode = st.session_state.get("bench_mode", "full")
    debate = live.get(debate_id)
    start = time.perf_counter()
    if mode == "full":  # what a full run of the page does for the debate (the form aside)
        page = live_page.current_page(debate_id, debate)
        live_page.watch(page, "reveal")
    elif mode == "tick":  # the fragment's body, on its own as a fragment rerun runs it
        slots = live_page.Slots(st.empty(), None)
        box = st.container(height=640, key="transcript")
        slots.usage = st.empty()
        page = st.session_state[live_page.SESSION_KEY]
        page.in_full_run = False
        with box:
            live_page.tick(page, slots)
    else:  # "all": copy the debate and draw everything, as every refresh did before
        view = debate.view()
        transcript.render_status(view, debate)
        transcript.render_decision(view)
        with st.container(height=640, key="transcript"):
            transcript.render_transcript(view)
        transcript.render_usage(view)
        plots.render_plots(view)
    st.session_state.setdefault("bench_seconds", []).append(time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    options = parser(__doc__)
    options.add_argument("--agents", type=int, default=4)
    options.add_argument("--rounds", type=int, default=50)
    options.add_argument("--ticks", type=int, default=20, help="ticks of each kind to time (at most 20 with a token)")
    options.add_argument("--sbert", action="store_true", help="keep the real SBERT embedder")
    args = options.parse_args(argv)
    os.environ.setdefault("MADLAB_HOME", tempfile.mkdtemp(prefix="madlab-bench-live-"))
    from streamlit.testing.v1 import AppTest

    # Setting AppTest's session state from this thread makes Streamlit warn that it has no script run.
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").disabled = True

    import madlab_ui.plots as plots
    from madlab_ui import live_page

    if not args.sbert:
        plots.EMBED = lambda texts: [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]
    events = record(args.agents, args.rounds)
    at_cut = cut(events)
    turns = sum(isinstance(e, TurnStarted) for e in events[:at_cut])
    feed = Feed(events[0].debate_id)
    feed.send(*events[:at_cut])
    tokens = [e for e in events[at_cut:] if isinstance(e, TokenReceived) and e.turn_id == events[at_cut - 1].turn_id]

    def run(at: AppTest, mode: str) -> float:
        at.session_state["bench_mode"] = mode
        at.run()
        if at.exception:
            raise SystemExit(f"the page raised: {at.exception}")
        return at.session_state["bench_seconds"][-1] * 1000

    with ThreadProfiler(args.profile) as profiler:
        reference = AppTest.from_function(page_script, args=(feed.debate.debate_id,), default_timeout=600)
        run(reference, "all")  # warms the process up (plotly loads its validators on a first figure), not timed
        at = AppTest.from_function(page_script, args=(feed.debate.debate_id,), default_timeout=600)
        first = run(at, "full")
        full = [run(at, "full") for _ in range(max(3, args.ticks // 4))]
        page = at.session_state[live_page.SESSION_KEY]
        snapshots, draws = page.follower.snapshots, page.full_draws
        ticks = []
        for token in tokens[:args.ticks]:
            feed.send(token)
            ticks.append(run(at, "tick"))
        folded = page.follower.folded
        idle = [run(at, "tick") for _ in range(args.ticks)]
        redraw = [run(reference, "all") for _ in range(max(3, args.ticks // 4))]
    feed.send(DebateFinished("stopped", None, reason="bench over"))
    feed.close()

    result = Result("live_refresh", f"Live Debate page refresh, {turns}-turn debate",
                    ["refresh", "median ms", "max ms", "runs"])
    result.rows = [["first refresh (a new session opens the page)", first, first, 1],
                   ["full run (settled part drawn again)", median(full), max(full), len(full)],
                   ["tick, one new token", median(ticks), max(ticks), len(ticks)],
                   ["idle tick, no new event", median(idle), max(idle), len(idle)],
                   ["redraw all (what every tick did before)", median(redraw), max(redraw), len(redraw)]]
    result.targets = [Target("tick with one new token (median)", median(ticks), TARGET_MS, "ms"),
                      Target("idle tick (median)", median(idle), TARGET_MS, "ms")]
    result.notes = [f"{turns} turns, {at_cut} events so far, one turn streaming; "
                    f"{'real SBERT' if args.sbert else 'a cheap stand-in for SBERT'} in the diversity plot",
                    f"idle ticks: {page.follower.folded - folded} events folded, "
                    f"{page.follower.snapshots - snapshots} copies of the debate, "
                    f"{page.full_draws - draws} full draws",
                    "a full run happens when a round, vote or decision changes the settled part"]
    return finish(result, args, profiler)


if __name__ == "__main__":
    sys.exit(main())
