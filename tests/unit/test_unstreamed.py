"""Debates nobody watches ask for each reply whole (issue 21, item 7): `call_model(..., stream=False)`.

An unstreamed call gives what a streamed one gives (text, usage, the CallResult), hands the whole
text to `on_token` once, retries server errors and rate limits (Retry-After honoured), is bounded by
the timeout, asks `should_stop` before each attempt and before the reply is delivered, and cuts a
reply that repeats one piece. The experiment runner's debates (new and resumed) and `run --no-stream`
make unstreamed calls; a debate in the app (a plain `DebateEngine`) still streams piece by piece.

Waits are recorded through call_model's injectable `sleep`; hangs are scripted faults released by
the timeout's cancellation, never real sleeps.
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

import mad_core.models as models
from mad_core import cli
from mad_core.events import TokenReceived, TurnFinished
from mad_core.experiments import ExperimentConfig, ExperimentRunner, create_experiment, storage
from mad_core.models import RetryPolicy, call_model
from mad_core.replay import Origin
from mad_core.store import Store
from tests import builders

sys.path.insert(0, str(Path(__file__).parent))
from openai_server import OpenAIServer  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ASK = [{"role": "user", "content": "What is 2+2?"}]
REPLY = "Two plus two makes four, as anyone can check on their fingers.\nFinal answer: 4"
RATE_LIMITED = "RateLimitError: scripted fault: rate_limit"


@pytest.fixture(scope="module", autouse=True)
def _warm_litellm():
    """litellm's first completion in a process imports more of it: done here, not in a timed test."""
    assert call_model("scripted/echo", ASK, stream=False).status == "ok"


class _Sleeps(list):
    """An injectable `sleep` that records the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _call(model: str, **options):
    sleeps, retries, pieces = _Sleeps(), [], []
    result = call_model(model, ASK, stream=False, sleep=sleeps, on_token=pieces.append,
                        on_retry=lambda n, error: retries.append((n, error)), **options)
    return result, sleeps, retries, pieces


@pytest.fixture
def spy(monkeypatch):
    """Records the `stream` argument of every call_model call the engine makes (then calls it)."""
    seen: list[bool] = []
    real = models.call_model

    def recording(*args, **kwargs):
        seen.append(kwargs.get("stream", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(models, "call_model", recording)
    return seen


# ----- one call ----------------------------------------------------------------------------------------
def test_an_unstreamed_call_gives_the_streamed_text_and_usage_and_the_whole_text_once(script):
    model, s = script([REPLY], token_delay=0.001)
    streamed_pieces: list[str] = []
    streamed = call_model(model, ASK, on_token=streamed_pieces.append)
    whole, sleeps, retries, pieces = _call(model)
    assert len(streamed_pieces) > 5  # the streamed reply came piece by piece
    assert pieces == [REPLY]  # the unstreamed one in one piece, once
    assert (whole.status, whole.text, whole.error, whole.note, whole.attempts) == ("ok", REPLY, None, None, 1)
    assert (whole.prompt_tokens, whole.completion_tokens) == (streamed.prompt_tokens, streamed.completion_tokens)
    assert whole.completion_tokens > 0 and whole.prompt_tokens > 0
    assert whole.first_token_s is not None and 0 < whole.first_token_s <= whole.latency_s
    assert (sleeps, retries) == ([], [])
    assert s.wait_idle(5) and [c["outcome"] for c in s.history] == ["finished", "finished"]


def test_a_servers_usage_is_read_from_the_response_and_no_stream_option_is_sent(monkeypatch):
    with OpenAIServer("whole", reply=lambda messages: REPLY) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
        monkeypatch.setenv("OPENAI_API_BASE", server.api_base)
        streamed = call_model("openai/whole", ASK, retry=RetryPolicy(timeout=60))
        whole = call_model("openai/whole", ASK, stream=False, retry=RetryPolicy(timeout=60))
    assert (whole.status, whole.text) == (streamed.status, streamed.text) == ("ok", REPLY)
    assert (whole.prompt_tokens, whole.completion_tokens) == (streamed.prompt_tokens, streamed.completion_tokens)
    assert whole.completion_tokens == len(REPLY.split(" "))  # the server's count, not ours
    unstreamed_body = server.requests[1]["body"]
    assert not unstreamed_body.get("stream") and "stream_options" not in unstreamed_body


def test_a_server_error_is_retried(script):
    model, s = script([REPLY], faults={0: "server_error"})
    result, sleeps, retries, pieces = _call(model, retry=RetryPolicy(max_attempts=3, base_delay=0.25))
    assert (result.status, result.text, result.attempts) == ("ok", REPLY, 2)
    assert sleeps == [0.25] and [n for n, _ in retries] == [1]
    assert retries[0][1].startswith("InternalServerError")
    assert pieces == [REPLY]  # the failed attempt delivered nothing


def test_a_rate_limit_waits_what_retry_after_asks(script):
    model, s = script([REPLY], faults={0: "rate_limit", 1: "rate_limit"}, retry_after=2)
    result, sleeps, retries, _ = _call(model, retry=RetryPolicy(max_attempts=3, base_delay=0.25, max_delay=10))
    assert (result.status, result.text, result.attempts) == ("ok", REPLY, 3)
    assert sleeps == [2.0, 2.0]  # not the backoff's 0.25 and 0.5
    assert retries == [(1, f"{RATE_LIMITED} (server asked to retry after 2 s)"),
                       (2, f"{RATE_LIMITED} (server asked to retry after 2 s)")]


def test_a_retry_after_longer_than_max_delay_gives_up_at_once_and_says_why(script):
    model, _ = script([REPLY], faults={0: "rate_limit"}, retry_after=30)
    result, sleeps, _, _ = _call(model, retry=RetryPolicy(max_attempts=3, max_delay=8))
    assert (result.status, result.attempts, sleeps) == ("failed", 1, [])
    assert result.error == (f"{RATE_LIMITED} (server asked to retry after 30 s, more than retry_max_wait_s = 8 s, "
                            "so not retried; 1 attempt)")


def test_a_hang_times_out_on_every_attempt_and_lets_the_backend_go(script):
    model, s = script([REPLY], faults={0: "hang", 1: "hang"})
    result, sleeps, _, pieces = _call(model, retry=RetryPolicy(max_attempts=2, base_delay=0.1, timeout=0.2))
    assert (result.status, result.attempts, pieces) == ("failed", 2, [])
    assert result.error == "Timeout: no reply within 0.2 s (2 attempts)"  # as a streamed call says it
    assert s.wait_idle(5) and [c["outcome"] for c in s.history] == ["cancelled", "cancelled"]


def test_an_empty_reply_is_retried(script):
    model, _ = script([REPLY], faults={0: "empty"})
    result, _, retries, pieces = _call(model)
    assert (result.status, result.text, result.attempts, pieces) == ("ok", REPLY, 2, [REPLY])
    assert retries[0][1].startswith("EmptyReplyError")


def test_a_stop_before_the_call_is_interrupted_and_calls_no_model(script):
    model, s = script([REPLY])
    result, _, _, pieces = _call(model, should_stop=lambda: True)
    assert (result.status, result.text, result.attempts, pieces) == ("interrupted", "", 0, [])
    assert s.history == []


def test_a_stop_while_the_model_answers_delivers_nothing(script):
    model, s = script([REPLY])
    asked = []

    def should_stop() -> bool:  # not before the attempt; stopped by the time the reply is in
        asked.append(len(s.history))
        return len(asked) > 1

    result, _, _, pieces = _call(model, should_stop=should_stop)
    assert (result.status, result.text, result.attempts, pieces) == ("interrupted", "", 1, [])
    assert asked == [0, 1]  # before the attempt (no call yet), then once the reply was in


def test_a_pause_holds_the_reply_back_and_is_not_the_models_time(script):
    model, _ = script([REPLY])
    paused, asked = threading.Event(), threading.Event()
    released: list[str] = []

    def should_stop() -> bool:  # the second ask (the reply is in) waits for the person to resume
        if asked.is_set():
            paused.wait(10)
        asked.set()
        return False

    thread = threading.Thread(target=lambda: released.append(
        call_model(model, ASK, stream=False, should_stop=should_stop, on_token=released.append,
                   retry=RetryPolicy(timeout=0.5)).status))
    thread.start()
    assert asked.wait(10)
    thread.join(0.8)  # longer than the timeout: a paused debate is not a slow model
    assert thread.is_alive() and released == []
    paused.set()
    thread.join(10)
    assert released == [REPLY, "ok"]


def test_a_reply_repeating_one_piece_is_cut_and_kept(script):
    model, _ = script(["Paris is the capital." + " again" * 150])
    result, _, _, pieces = _call(model, retry=RetryPolicy(repeat_limit=100))
    assert (result.status, result.attempts) == ("ok", 1)
    assert result.text == pieces[0] == "Paris is the capital." + " again" * 100
    assert result.note == "cut: the model repeated itself (the same piece 100 times in a row)"


# ----- debates --------------------------------------------------------------------------------------
def test_a_debate_in_the_app_streams_and_one_nobody_watches_does_not(script, roles, spy):
    model, _ = script(roles(), token_delay=0.001)
    watched = builders.run(builders.config(model, rounds=1, max_rounds=1))
    assert watched.engine.status == "finished" and spy and set(spy) == {True}
    turns = builders.of(watched, TurnFinished)
    tokens = builders.of(watched, TokenReceived)
    first = turns[0].turn
    assert len([t for t in tokens if t.turn_id == first.id]) > 3  # a multi-piece reply, piece by piece

    spy.clear()
    unwatched = builders.run(builders.config(model, rounds=1, max_rounds=1), stream=False)
    assert unwatched.engine.status == "finished" and spy and set(spy) == {False}
    for finished in builders.of(unwatched, TurnFinished):
        texts = [t.text for t in builders.of(unwatched, TokenReceived) if t.turn_id == finished.turn.id]
        assert texts == [finished.turn.content]  # the whole text once
    assert [t.turn.content for t in builders.of(unwatched, TurnFinished)] == [t.content for t in
                                                                            (e.turn for e in turns)]


def _experiment(script, roles, items: int = 2) -> tuple[Store, str, str]:
    model, _ = script(roles(default_answer="yes"))
    experiment = ExperimentConfig.from_dict({
        "name": "unstreamed", "task_set": "yes_no", "items": items, "seeds": [1], "concurrency": 1,
        "base": {"models": model, "rounds": 1, "max_rounds": 2, "cache": "off"},
        "grid": {"protocol": ["majority_consensus"]}})
    store = Store()
    return store, create_experiment(store, experiment), model


def cheap_embed(texts):
    return [[float(len(t)), 1.0] for t in texts]


def test_the_experiment_runners_debates_are_unstreamed_new_and_resumed(script, roles, spy):
    store, experiment_id, _ = _experiment(script, roles)
    first, second = storage.runs(store, experiment_id)
    # The second run's debate was stopped after its first turn (as a stopped sweep leaves it).
    plan = ExperimentConfig.from_dict(storage.get_experiment(store, experiment_id)["spec"]).runs()

    def stop_after_a_turn(event, engine) -> None:
        if isinstance(event, TurnFinished):
            engine.controller.stop()

    stopped = builders.run(plan[1].debate_config(), steer=stop_after_a_turn, store=store,
                           origin=Origin(debate_id="d" * 32))
    assert stopped.engine.status == "stopped" and len(store.turns("d" * 32)) >= 1
    storage.update_run(store, second["id"], status="stopped", debate_id="d" * 32, attempts=1)
    spy.clear()
    assert ExperimentRunner(experiment_id, embed=cheap_embed).run() == "finished"
    assert spy and set(spy) == {False}
    rows = storage.runs(store, experiment_id)
    assert [r["status"] for r in rows] == ["finished", "finished"] and rows[1]["debate_id"] == "d" * 32
    assert store.get_debate("d" * 32)["status"] == "finished"  # resumed, unstreamed


def test_run_no_stream_asks_for_whole_replies_and_prints_them(script, roles, spy, capsys):
    model, _ = script(roles())
    code = cli.main(["run", "--question", "What is the capital of France?", "--agents", "2", "--rounds", "1",
                     "--max-rounds", "1", "--model", model, "--no-stream"])
    assert code == 0 and spy and set(spy) == {False}
    out = capsys.readouterr().out
    assert "My reasoning as Agent 1." in out and "Final answer: Paris" in out
    spy.clear()
    assert cli.main(["run", "--question", "What is 2+2?", "--agents", "2", "--rounds", "1", "--max-rounds", "1",
                     "--model", model]) == 0
    assert set(spy) == {True}  # the command line streams unless told not to
