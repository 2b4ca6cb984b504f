"""The offline default model on its llama.cpp server: where a debate's time goes, and how well it votes.

Each case is a separate entry of bench/run.py; all read the server's Prometheus counters
(``/metrics`` of the llama-server that ``mad_core.models.llama_server`` supervises):
``llamacpp:prompt_tokens_total`` / ``prompt_seconds_total`` (prefill) and
``llamacpp:tokens_predicted_total`` / ``tokens_predicted_seconds_total`` (decode), and
``prompt_tokens_cached_total`` when the server reports it.

  debate        the default debate (``DebateConfig(question)``: 3 agents on local/smollm2-135m,
                memory paradigm, simple voting) end to end: wall time, calls, prefill and
                decode tokens and seconds, and their shares of the server's time; the median of
                ``--repeats`` debates, each on a fresh server, the client warmed as the app's is
  prompt_cache  an agent's second turn (its first prompt + its reply + a new message): tokens
                prefilled and prefill seconds on the agent's own slot (the prompt cache holds
                the first turn) and on a slot that never saw it
  parallel      one simultaneous round of 3 agents, the 3 calls at once (the server's
                parallel slots) and one after another (max_concurrency 1): wall and tokens/s;
                then the same requests straight to the server, at once and one after another:
                the share of the server's own gain that MAD Lab keeps (target >= 90 %); after one
                uncounted warm-up round, the median of ``--repeats`` interleaved rounds
  ballots       the invalid-ballot rate of simple voting over N default debates (first
                ballots, and after the re-asks)

    .venv/bin/python bench/local_model.py debate
    .venv/bin/python bench/local_model.py ballots --debates 20
    .venv/bin/python bench/local_model.py parallel --max-tokens 96 --repeats 5

Skipped, with the reason, when the default model or llama-server is not installed. Slow on a
CPU: the default model decodes ~80 tokens/s on 2 idle cores and reads a prompt at 450-550 tokens/s
(its Q8_0 copy; ~300 from the packaged Q4_1 file: README, Models).
"""
from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Result, Target, finish, median, parser  # noqa: E402

QUESTION = "A farmer has 17 sheep. All but 9 run away. How many sheep are left?"
PREFILL, DECODE = "llamacpp:prompt_seconds_total", "llamacpp:tokens_predicted_seconds_total"
PROMPT_TOKENS, DECODED = "llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total"
CACHED = "llamacpp:prompt_tokens_cached_total"
CASES = ("debate", "prompt_cache", "parallel", "ballots")


def server():
    """The default model's LlamaServer, started; or a str saying why there is none."""
    from mad_core.models import DEFAULT_MODEL, validate_model_name

    problem = validate_model_name(DEFAULT_MODEL)
    if problem:
        return problem
    try:
        from mad_core.models import llama_server, local_gguf

        found = llama_server.server_for(local_gguf.resolve(DEFAULT_MODEL.split("/", 1)[1]))
        found.ensure_running()
    except Exception as exc:  # noqa: BLE001 - the server's interface is young: say what failed
        return f"the default model's llama-server is not usable here ({type(exc).__name__}: {exc})"
    return found


def counters(srv) -> dict[str, float]:
    return srv.metrics()


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {key: after.get(key, 0.0) - before.get(key, 0.0) for key in after}


def server_rows(d: dict[str, float]) -> list[list]:
    """Prefill and decode rows from a metrics delta, with their shares of the server's time."""
    busy = d.get(PREFILL, 0.0) + d.get(DECODE, 0.0)
    rows = [["prefill", int(d.get(PROMPT_TOKENS, 0)), d.get(PREFILL, 0.0),
             100 * d.get(PREFILL, 0.0) / busy if busy else 0.0],
            ["decode", int(d.get(DECODED, 0)), d.get(DECODE, 0.0), 100 * d.get(DECODE, 0.0) / busy if busy else 0.0]]
    if CACHED in d:
        rows.append(["prompt tokens from the cache", int(d[CACHED]), "", ""])
    return rows


# The default offline debate as issue 8 times it: the app's defaults (3 agents on the offline
# model, memory paradigm, simple voting) for 2 discussion rounds, and no more (issue 23: "3 agents x 2
# rounds"): with the default max_rounds a vote without a majority adds rounds, and one run measured
# 30 calls in 117 s where the 2-round debate makes 12.
DEFAULT_DEBATE = {"rounds": 2, "max_rounds": 2}


def default_debate(**settings):
    from mad_core import DebateConfig, DebateEngine

    config = DebateConfig.from_dict({"question": QUESTION, **DEFAULT_DEBATE, **settings})
    started = time.perf_counter()
    events = list(DebateEngine(config).run())
    return time.perf_counter() - started, events


def case_debate(srv, args, result: Result) -> None:
    """The default debate ``--repeats`` times, each on a server started afresh (so no debate reads the
    prompt cache another filled); the row and the target are the median debate's.

    The client is warmed first by one 1-token call through MAD Lab's own call path: a first model call
    imports the OpenAI SDK and its HTTP stack (~450 modules, ~2 s of CPU here), which the app has done
    by the time its Debate page shows, so a teacher's debate never pays it.
    """
    from mad_core.events import TurnFinished
    from mad_core.models import DEFAULT_MODEL, call_model

    warm = call_model(DEFAULT_MODEL, [{"role": "user", "content": "Hello"}], max_tokens=1, temperature=0.0)
    debates = []
    for _ in range(args.repeats or 3):
        srv.stop()
        srv.ensure_running()
        before = counters(srv)
        wall, events = default_debate()
        turns = [e.turn for e in events if isinstance(e, TurnFinished)]
        debates.append((wall, delta(before, counters(srv)), len(turns), events[-1].status))
    wall, d, calls, status = sorted(debates, key=lambda debate: debate[0])[len(debates) // 2]
    result.columns = ["part", "tokens", "seconds", "% of server time"]
    result.rows = server_rows(d)
    result.rows.append(["whole debate (wall)", "", wall, ""])
    result.targets.append(Target("default debate, end to end (the median debate)", wall, 30.0, "s"))
    busy = d.get(PREFILL, 0.0) + d.get(DECODE, 0.0)
    result.notes.append(f"the median of {len(debates)} debates: {calls} calls, status {status}; the server was busy "
                        f"{100 * busy / wall:.0f} % of the wall time (its seconds add up over parallel slots)")
    result.notes.append("every debate (wall s, decoded tokens, calls): " + "; ".join(
        f"{w:.1f} s, {int(x.get(DECODED, 0))}, {n}" for w, x, n, _ in debates))
    result.notes.append(f"client warmed by one 1-token call first ({warm.status}), as the app is when its Debate "
                        "page shows; each debate on a server started afresh (no prompt cache from another debate)")


def case_prompt_cache(srv, args, result: Result) -> None:
    from mad_core.models import call_model

    debate = uuid.uuid4().hex
    first = [{"role": "system", "content": "You are Agent 1, one of three debaters. Be brief."},
             {"role": "user", "content": f"Question: {QUESTION}\nGive your answer with one reason."}]
    reply = call_model("local/smollm2-135m", first, max_tokens=args.max_tokens, temperature=0.0,
                       metadata={"agent": "Agent 1", "debate_id": debate})
    second = first + [{"role": "assistant", "content": reply.text},
                      {"role": "user", "content": "Agent 2 says 8. Do you agree? Answer in one sentence."}]
    result.columns = ["second turn on", "prompt tokens", "prefilled", "from cache", "prefill s"]
    for label, agent in (("the agent's own slot (cached)", "Agent 1"), ("a slot that never saw it", "Agent 9")):
        before = counters(srv)
        call_model("local/smollm2-135m", second, max_tokens=1, temperature=0.0,
                   metadata={"agent": agent, "debate_id": debate})
        d = delta(before, counters(srv))
        cached = d.get(CACHED)
        total = int(d.get(PROMPT_TOKENS, 0) + (cached or 0))
        result.rows.append([label, total, int(d.get(PROMPT_TOKENS, 0)), "" if cached is None else int(cached),
                            d.get(PREFILL, 0.0)])
    # What is new since the agent's last turn: the second prompt beyond the first prompt and the
    # reply the slot generated after it (the chat template's end-of-turn marks included).
    new = result.rows[0][1] - reply.prompt_tokens - reply.completion_tokens
    prefilled = result.rows[0][2]
    result.targets.append(Target("prefilled on the agent's own slot / tokens new since its last turn",
                                 prefilled / new if new > 0 else None, 1.1, "x"))
    result.notes.append(f"{new} tokens are new since the agent's last turn (the second prompt, {result.rows[0][1]} "
                        f"tokens, less the first prompt, {reply.prompt_tokens}, and the reply, "
                        f"{reply.completion_tokens})")
    result.notes.append("the second call decodes 1 token: its time is the prefill; 'prompt tokens' = prefilled + "
                        "from cache (llama.cpp counts only evaluated tokens in prompt_tokens_total)")


def case_parallel(srv, args, result: Result) -> None:
    """One simultaneous round of 3 agents through MAD Lab, the calls at once and one after another; then
    the very requests MAD Lab sent (the same messages, token cap, temperature and sampling) straight to
    the server over HTTP, at once and one after another: the server's own gain on the same work.

    Both sides are timed warm: one round through MAD Lab first, not counted (it pays the process's
    first imports, the store's opening and the server's first requests, which the server-alone rows
    never pay). Then ``--repeats`` rounds of the four runs, interleaved so that a drift of this
    machine's speed falls on all four alike; each row is the median run, each speed-up the median of
    the rounds' own ratios.
    """
    from mad_core.config import LOCAL_SAMPLING

    result.columns = ["3-agent simultaneous round", "wall s", "prompt tokens", "prefill s", "decoded tokens",
                      "decode s", "tokens / s (wall)"]
    warm_up, _ = madlab_round(srv, args.max_tokens, 3)
    body = {"max_tokens": args.max_tokens, "temperature": 0.0, **LOCAL_SAMPLING, "cache_prompt": False}
    labels = {("MAD Lab", True): "MAD Lab: 3 calls at once", ("MAD Lab", False): "MAD Lab: one after another",
              ("server", True): "server alone, the same requests: at once",
              ("server", False): "server alone, the same requests: one after another"}
    runs: dict[str, list[list]] = {label: [] for label in labels.values()}
    sent: list[list[dict]] = []
    for _ in range(args.repeats or 5):
        for (side, at_once), label in labels.items():
            before = counters(srv)
            if side == "MAD Lab":
                wall, prompts = madlab_round(srv, args.max_tokens, 3 if at_once else 1)
                sent = sent or prompts
                d = delta(before, counters(srv))
                tokens = int(d.get(DECODED, 0))
            else:
                wall, tokens = raw_requests(srv.url, sent, body, at_once)
                d = delta(before, counters(srv))
            runs[label].append([wall, int(d.get(PROMPT_TOKENS, 0)), d.get(PREFILL, 0.0), tokens, d.get(DECODE, 0.0)])
    for label, measured in runs.items():
        row = sorted(measured, key=lambda run: run[0])[len(measured) // 2]  # the median run, whole
        result.rows.append([label, *row, row[3] / row[0]])
    # Each speed-up is the median of the rounds' own ratios (a round's four runs are minutes apart at most).
    ours, theirs = (median([serial[0] / at_once[0] for serial, at_once in zip(runs[labels[side, False]],
                                                                                runs[labels[side, True]])])
                    for side in ("MAD Lab", "server"))
    kept = (ours - 1) / (theirs - 1) if theirs > 1 else None
    result.targets.append(Target("share of the server's own gain (3 at once vs one after another) lost through "
                                 "MAD Lab (it keeps >= 90 %)", None if kept is None else 1 - kept, 0.1, ""))
    result.notes.append(f"speed-up through MAD Lab (median of the rounds' ratios): {ours:.2f}x; the server alone on the same {len(sent)} requests "
                        f"(the messages MAD Lab sent, {args.max_tokens} tokens at most, temperature 0, its sampling, "
                        f"no prompt cache): {theirs:.2f}x; kept share of the gain = (MAD Lab's - 1) / (server's - 1)")
    result.notes.append(f"each row: the median of {len(runs[labels['server', True]])} runs, the four runs interleaved; walls in order: "
                        + "; ".join(f"{label}: {', '.join(f'{run[0]:.2f}' for run in measured)}"
                                    for label, measured in runs.items()))
    result.notes.append(f"warm-up round through MAD Lab (3 at once), not counted: {warm_up:.2f} s")


def madlab_round(srv, max_tokens: int, concurrency: int) -> tuple[float, list[list[dict]]]:
    """One simultaneous round of 3 agents through MAD Lab, ``concurrency`` calls at a time, each agent
    with a persona never used before (so no run reads another's prompt cache); (wall s, the prompts)."""
    from mad_core.events import TurnFinished

    fresh = uuid.uuid4().hex[:8]
    agents = [{"label": f"Agent {i + 1}", "max_tokens": max_tokens, "temperature": 0.0,
               "persona": f"A careful thinker ({fresh})."} for i in range(3)]
    wall, events = default_debate(agents=agents, paradigm="simultaneous", protocol="convergence", rounds=1,
                                  max_rounds=1, max_concurrency=concurrency, seed=1)
    turns = [e.turn for e in events if isinstance(e, TurnFinished)]
    assert len(turns) == 3 and all(t.status == "ok" for t in turns), events[-1]
    return wall, [t.prompt for t in turns]


def raw_requests(url: str, messages: list[list[dict]], body: dict, at_once: bool) -> tuple[float, int]:
    """The chat completions of ``messages`` straight to the server (no streaming, no litellm), each with
    ``body``'s settings; (wall seconds, tokens generated)."""
    import json
    import threading
    import urllib.request

    done: list[int] = []

    def one(i: int) -> None:
        data = json.dumps({"messages": messages[i], **body}).encode()
        request = urllib.request.Request(f"{url}/v1/chat/completions", data, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as response:
            done.append(json.load(response)["usage"]["completion_tokens"])

    started = time.perf_counter()
    if at_once:
        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(messages))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    else:
        for i in range(len(messages)):
            one(i)
    return time.perf_counter() - started, sum(done)


def case_ballots(srv, args, result: Result) -> None:
    from mad_core.events import VoteCast

    first = first_invalid = final = final_invalid = finished = 0
    unfinished: list[str] = []
    started = time.perf_counter()
    for i in range(args.debates):
        _, events = default_debate(seed=i)
        finished += events[-1].status == "finished"
        if events[-1].status != "finished":
            unfinished.append(f"seed {i}: {events[-1].status} ({getattr(events[-1], 'reason', '') or 'no reason'})")
        votes = [e for e in events if isinstance(e, VoteCast)]
        last: dict[tuple, VoteCast] = {}
        for vote in votes:
            if vote.attempt == 1:
                first += 1
                first_invalid += not vote.valid
            last[(vote.round, vote.agent)] = vote
        final += len(last)
        final_invalid += sum(not v.valid for v in last.values())
    result.columns = ["ballots", "count", "invalid", "invalid %"]
    result.rows = [["first ballots", first, first_invalid, 100 * first_invalid / first if first else 0.0],
                   ["after re-asks (vote_retries = 2)", final, final_invalid,
                    100 * final_invalid / final if final else 0.0]]
    if first:
        result.targets.append(Target("invalid ballots, as first cast", 100 * first_invalid / first, 2.0, "%"))
    result.notes.append(f"{args.debates} default debates (seeds 0..{args.debates - 1}), {finished} finished, "
                        f"{time.perf_counter() - started:.0f} s")
    if unfinished:
        result.notes.append("not finished: " + "; ".join(unfinished))


def main(argv: list[str] | None = None) -> int:
    cli = parser(__doc__)
    cli.add_argument("case", choices=CASES)
    cli.add_argument("--debates", type=int, default=20, help="ballots: debates to run")
    cli.add_argument("--max-tokens", type=int, default=64, help="prompt_cache, parallel: reply length cap")
    cli.add_argument("--repeats", type=int, default=None,
                     help="debate: debates (default 3); parallel: rounds of the four runs (default 5); rows are medians")
    args = cli.parse_args(argv)

    titles = {"debate": "Default offline debate on the llama.cpp server: prefill and decode",
              "prompt_cache": "Prompt cache: prefill of an agent's second turn",
              "parallel": "3-agent simultaneous round on the local server: parallel slots vs serial",
              "ballots": f"Invalid ballots over {args.debates} default debates (simple voting)"}
    result = Result(f"local_{args.case}", titles[args.case])
    srv = server()
    if isinstance(srv, str):
        result.skipped = srv
    else:
        {"debate": case_debate, "prompt_cache": case_prompt_cache, "parallel": case_parallel,
         "ballots": case_ballots}[args.case](srv, args, result)
    return finish(result, args)


if __name__ == "__main__":
    sys.exit(main())
