"""Honest retries and timeouts: Retry-After is obeyed (or the call gives up saying so), every
attempt is bounded by RetryPolicy.timeout (in-process backends included; a local/ model by its
own per-piece bounds, test_llama_server.py), a timed-out backend
lets go of its resources, a pause is not the model's time, and failures name their cause.

Waits are recorded through call_model's injectable ``sleep``; hangs are scripted faults that
wait on events (released by the test or cancelled by the timeout), never on real sleeps.
"""
from __future__ import annotations

import email.utils
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from mad_core import models
from mad_core.models import Cancellation, RetryPolicy, call_model, retry_after_seconds, stream_text
from mad_core.models.callables import register_callable, unregister_callable
from mad_core.models.errors import retry_after_in
from mad_core.models.scripted import Script

ASK = [{"role": "user", "content": "What is 2+2?"}]
RATE_LIMITED = "RateLimitError: scripted fault: rate_limit"


@pytest.fixture(scope="module", autouse=True)
def _warm_litellm():
    """litellm's first completion in a process imports more of litellm (~0.3 s): done here, not
    inside a test's 0.2 s attempt timeout, where it would count as the model's time."""
    assert call_model("scripted/echo", ASK).status == "ok"


class _Sleeps(list):
    """An injectable ``sleep`` that records ``(seconds, time.time() when asked)`` instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append((seconds, time.time()))

    @property
    def waits(self) -> list[float]:
        return [seconds for seconds, _ in self]


def _call(model: str, **options):
    """call_model with recorded sleeps and retries; returns (result, sleeps, retries)."""
    sleeps, retries = _Sleeps(), []
    result = call_model(model, ASK, sleep=sleeps, on_retry=lambda n, error: retries.append((n, error)), **options)
    return result, sleeps, retries


def _faults(script: Script) -> list[str | None]:
    return [entry["fault"] for entry in script.history]


def _outcomes(script: Script) -> list[str | None]:
    assert script.wait_idle(timeout=5), "a scripted call is still running"
    return [entry["outcome"] for entry in script.history]


# ----------------------------------------------------------------------------- Retry-After


def test_retry_after_in_seconds_is_waited_even_when_the_backoff_is_shorter(script):
    model, s = script(["fine"], faults={0: "rate_limit", 1: "rate_limit"}, retry_after=2)
    result, sleeps, retries = _call(model, retry=RetryPolicy(max_attempts=3, base_delay=0.25, max_delay=10))
    assert (result.status, result.text, result.attempts, result.error) == ("ok", "fine", 3, None)
    assert sleeps.waits == [2.0, 2.0]  # not the backoff's 0.25 and 0.5
    assert retries == [(1, f"{RATE_LIMITED} (server asked to retry after 2 s)"),
                       (2, f"{RATE_LIMITED} (server asked to retry after 2 s)")]
    assert _faults(s) == ["rate_limit", "rate_limit", None]


def test_the_backoff_is_kept_when_it_is_longer_than_retry_after(script):
    model, _ = script(["fine"], faults={0: "unavailable", 1: "unavailable"}, retry_after=1.5)
    result, sleeps, _ = _call(model, retry=RetryPolicy(max_attempts=3, base_delay=1.0, max_delay=10))
    assert (result.status, result.attempts) == ("ok", 3)
    assert sleeps.waits == [1.5, 2.0]  # max(backoff 1, header 1.5), max(backoff 2, header 1.5)


def test_retry_after_ms_wins_and_allows_fractions(script):
    model, s = script(["fine"], faults={0: "rate_limit", 1: "rate_limit"}, retry_after=3, retry_after_ms=20)
    result, sleeps, retries = _call(model, retry=RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=1))
    assert (result.status, result.attempts) == ("ok", 3)
    assert sleeps.waits == [0.02, 0.02]
    assert retries[0] == (1, f"{RATE_LIMITED} (server asked to retry after 0.02 s)")
    assert s.calls == 3


def test_retry_after_as_an_http_date(script):
    asked_at = time.time()
    until = email.utils.formatdate(asked_at + 30, usegmt=True)  # whole seconds: 29 < wait <= 30
    until_epoch = email.utils.parsedate_to_datetime(until).timestamp()
    model, _ = script(["fine"], faults={0: "rate_limit"}, retry_after=until)
    result, sleeps, retries = _call(model, retry=RetryPolicy(max_attempts=2, base_delay=0.5, max_delay=60))
    assert (result.status, result.attempts) == ("ok", 2)
    [(wait, slept_at)] = sleeps
    assert slept_at + wait >= until_epoch  # never before the date the server named
    assert wait <= until_epoch - asked_at <= 30
    assert retries[0][1].startswith(f"{RATE_LIMITED} (server asked to retry after ")


def test_retry_after_longer_than_max_delay_gives_up_at_once_and_says_why(script):
    model, s = script(["never"], faults={0: "rate_limit"}, retry_after=30)
    result, sleeps, retries = _call(model, retry=RetryPolicy(max_attempts=3, base_delay=0.5, max_delay=8))
    assert (result.status, result.attempts, result.text) == ("failed", 1, "")
    assert result.error == (f"{RATE_LIMITED} (server asked to retry after 30 s, "
                            "more than retry_max_wait_s = 8 s, so not retried; 1 attempt)")
    assert sleeps == [] and retries == []
    assert s.calls == 1  # no early retry that would only earn another 429


def test_retry_after_equal_to_max_delay_is_waited(script):
    model, _ = script(["fine"], faults={0: "unavailable"}, retry_after=8)
    result, sleeps, _ = _call(model, retry=RetryPolicy(max_attempts=2, base_delay=0.5, max_delay=8))
    assert (result.status, result.attempts) == ("ok", 2)
    assert sleeps.waits == [8.0]


def test_exhausted_retries_name_the_cause_and_the_server_wait(script):
    model, s = script(["never"], faults={i: "unavailable" for i in range(9)}, retry_after_ms=50)
    result, sleeps, retries = _call(model, retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=1))
    assert (result.status, result.attempts) == ("failed", 3)
    assert result.error == ("ServiceUnavailableError: scripted fault: unavailable "
                            "(server asked to retry after 0.05 s; 3 attempts)")
    assert sleeps.waits == [0.05, 0.05] and [n for n, _ in retries] == [1, 2]
    assert s.calls == 3


@pytest.mark.parametrize("max_attempts", [1, 2, 4])
@pytest.mark.parametrize("fault", ["rate_limit", "timeout", "server_error", "empty", "unavailable"])
def test_attempts_never_exceed_max_attempts(script, fault, max_attempts):
    model, s = script(["never"], faults={i: fault for i in range(10)}, retry_after_ms=1)
    result, sleeps, retries = _call(model, retry=RetryPolicy(max_attempts=max_attempts, base_delay=0.001))
    assert (result.status, result.attempts, s.calls) == ("failed", max_attempts, max_attempts)
    assert len(sleeps) == len(retries) == max_attempts - 1
    assert result.error.endswith(f"{max_attempts} attempt{'s' if max_attempts > 1 else ''})")


def test_backoff_without_a_header_is_exponential_and_capped(script):
    model, _ = script(["fine"], faults={0: "rate_limit", 1: "rate_limit", 2: "rate_limit"})
    result, sleeps, retries = _call(model, retry=RetryPolicy(max_attempts=4, base_delay=0.5, max_delay=1.5))
    assert (result.status, result.attempts) == ("ok", 4)
    assert sleeps.waits == [0.5, 1.0, 1.5]
    assert [error for _, error in retries] == [RATE_LIMITED] * 3  # no server wait to report


@pytest.mark.parametrize(
    "headers, expected",
    [
        ({"Retry-After": "30"}, 30.0),
        ({"retry-after": " 2.5 "}, 2.5),
        ({"RETRY-AFTER-MS": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),  # in the past: retry now
        ({"retry-after": "-3"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "whenever"}, None),
        ({"content-type": "application/json"}, None),
        ({}, None),
    ],
)
def test_retry_after_header_parsing(headers, expected):
    now = email.utils.parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT").timestamp()
    assert retry_after_seconds(headers, now=now) == expected
    assert retry_after_seconds(httpx.Headers(headers), now=now) == expected


def _openai_rate_limit(headers: dict | None = None) -> BaseException:
    import litellm

    response = httpx.Response(429, headers=headers, request=httpx.Request("POST", "http://x.invalid/"))
    return litellm.RateLimitError(message="slow down", model="m", llm_provider="openai", response=response)


def test_retry_after_is_found_wherever_litellm_put_it():
    import litellm

    on_response = _openai_rate_limit({"retry-after": "4"})  # exc.response.headers
    assert retry_after_in(on_response) == 4.0
    on_headers = litellm.Timeout(message="t", model="m", llm_provider="openai", headers={"Retry-After": "5"})
    assert retry_after_in(on_headers) == 5.0  # exc.headers
    mapped = _openai_rate_limit()
    mapped.litellm_response_headers = httpx.Headers({"retry-after-ms": "600"})  # set by exception_type
    assert retry_after_in(mapped) == 0.6
    wrapped = litellm.exceptions.MidStreamFallbackError(
        message="mid stream", model="m", llm_provider="openai", original_exception=on_response)
    assert retry_after_in(wrapped) == 4.0  # the wrapper's own response has no headers
    try:
        raise RuntimeError("while handling") from on_response
    except RuntimeError as chained:
        assert retry_after_in(chained) == 4.0
    assert retry_after_in(_openai_rate_limit()) is None


class _RateLimitingServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint on localhost that always answers 429 with a Retry-After."""

    hits: list[str] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        self.hits.append(self.headers.get("authorization", ""))
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({"error": {"message": "Rate limit reached", "type": "requests"}}).encode()
        self.send_response(429)
        self.send_header("retry-after", "7")
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_real_remote_429_is_read_through_litellms_openai_path(monkeypatch):
    """No stand-in: litellm's OpenAI client gets a real HTTP 429 from a server on localhost."""
    secret = "sk-test-0123456789abcdefghijklmnop"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RateLimitingServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _RateLimitingServer.hits = []
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("OPENAI_API_BASE", f"http://127.0.0.1:{server.server_port}/v1")
    try:
        result, sleeps, retries = _call("openai/gpt-4o-mini", retry=RetryPolicy(max_attempts=2, max_delay=10, timeout=10))
        capped, capped_sleeps, _ = _call("openai/gpt-4o-mini", retry=RetryPolicy(max_attempts=2, max_delay=5, timeout=10))
    finally:
        server.shutdown()
        server.server_close()
    assert (result.status, result.attempts) == ("failed", 2)
    assert result.error == ("RateLimitError: OpenAIException - Rate limit reached "
                            "(server asked to retry after 7 s; 2 attempts)")
    assert sleeps.waits == [7.0] and retries[0][0] == 1
    assert (capped.status, capped.attempts, capped_sleeps) == ("failed", 1, [])
    assert capped.error.endswith("(server asked to retry after 7 s, more than retry_max_wait_s = 5 s, "
                                 "so not retried; 1 attempt)")
    assert len(_RateLimitingServer.hits) == 3  # 2 + 1: no hidden retries inside litellm or openai
    assert secret not in result.error + capped.error + retries[0][1]


# ----------------------------------------------------------------------------- timeouts


def test_a_hang_before_the_first_token_times_out_on_every_attempt(script):
    model, s = script(["never"], faults={0: "hang", 1: "hang", 2: "hang"})
    started = time.perf_counter()
    result, sleeps, retries = _call(model, retry=RetryPolicy(max_attempts=3, base_delay=0.01, timeout=0.2))
    elapsed = time.perf_counter() - started
    assert (result.status, result.attempts, result.text) == ("failed", 3, "")
    assert result.error == "Timeout: no reply within 0.2 s (3 attempts)"
    assert retries == [(1, "Timeout: no reply within 0.2 s"), (2, "Timeout: no reply within 0.2 s")]
    assert sleeps.waits == [0.01, 0.02]
    assert elapsed < 1.5  # 3 x 0.2 s, not "until the model answers"
    assert _outcomes(s) == ["cancelled", "cancelled", "cancelled"]  # each hung call was told to stop


def test_a_timed_out_attempt_is_retried_and_the_retry_can_succeed(script):
    model, s = script(["four"], faults={0: "hang"})
    tokens: list[str] = []
    result, _, retries = _call(model, on_token=tokens.append, retry=RetryPolicy(max_attempts=2, base_delay=0, timeout=0.2))
    assert (result.status, result.text, result.attempts, result.error) == ("ok", "four", 2, None)
    assert retries == [(1, "Timeout: no reply within 0.2 s")]
    assert tokens == ["four"]
    assert _faults(s) == ["hang", None] and _outcomes(s) == ["cancelled", "finished"]


def test_a_stall_between_tokens_times_out_with_the_partial_text(script):
    model, s = script(["one two three"], faults={0: "stall"})
    tokens: list[str] = []
    result, _, _ = _call(model, on_token=tokens.append, retry=RetryPolicy(max_attempts=1, timeout=0.2))
    assert (result.status, result.attempts, result.text) == ("failed", 1, "one")
    assert result.error == "Timeout: the reply stalled after 1 piece and did not finish within 0.2 s (1 attempt)"
    assert tokens == ["one"]
    assert _outcomes(s) == ["cancelled"]


def test_a_released_hang_streams_its_reply_within_the_timeout(script):
    model, s = script(["released reply"], faults={0: "hang"})
    releaser = threading.Thread(target=lambda: s.hanging.wait(10) and s.release())
    releaser.start()
    result, sleeps, _ = _call(model, retry=RetryPolicy(max_attempts=1, timeout=30))
    releaser.join()
    assert (result.status, result.text, result.attempts) == ("ok", "released reply", 1)
    assert sleeps == [] and _outcomes(s) == ["finished"]


def test_after_a_timeout_the_same_model_works_again(script):
    """A serial script holds a lock while it generates, as a local model does."""
    model, s = script(["after"], faults={0: "hang"}, serial=True)
    first, _, _ = _call(model, retry=RetryPolicy(max_attempts=1, timeout=0.2))
    assert (first.status, first.error) == ("failed", "Timeout: no reply within 0.2 s (1 attempt)")
    assert _outcomes(s) == ["cancelled"]  # the hung call ended, so its lock is free
    second, _, _ = _call(model, retry=RetryPolicy(max_attempts=1, timeout=5))
    assert (second.status, second.text, second.attempts) == ("ok", "after", 1)
    assert _outcomes(s) == ["cancelled", "finished"]


def test_a_pause_longer_than_the_timeout_is_not_a_timeout(script):
    """A paused debate blocks in should_stop: that is the person's time, not the model's."""
    model, s = script(["one two three"])
    asked: list[int] = []

    def should_stop() -> bool:
        asked.append(len(asked))
        if len(asked) == 2:  # the first piece is in hand: pause for twice the timeout
            time.sleep(0.5)
        return False

    tokens: list[str] = []
    result, _, retries = _call(model, should_stop=should_stop, on_token=tokens.append,
                               retry=RetryPolicy(max_attempts=1, timeout=0.25))
    assert (result.status, result.text, result.attempts, result.error) == ("ok", "one two three", 1, None)
    assert tokens == ["one", " two", " three"] and retries == []
    assert len(asked) == 4  # before the attempt, then before each of the 3 pieces
    assert result.latency_s >= 0.5
    assert _outcomes(s) == ["finished"]


def test_a_stop_while_streaming_still_interrupts_and_closes_the_backend(script):
    """should_stop is asked when a piece is in hand; the backend, held at that piece, is closed."""
    model, s = script(["one two three four"])
    tokens: list[str] = []
    result, _, _ = _call(model, on_token=tokens.append, should_stop=lambda: len(tokens) >= 1,
                         retry=RetryPolicy(max_attempts=1, timeout=60))
    assert (result.status, result.text, result.error) == ("interrupted", "one", None)
    assert _outcomes(s) == ["cancelled"]


def test_an_exception_in_a_callback_propagates_and_cancels_the_backend(script):
    model, s = script(["one two"], faults={0: "stall"})

    def on_token(piece):
        raise KeyError("the caller broke")

    with pytest.raises(KeyError, match="the caller broke"):
        call_model(model, ASK, on_token=on_token, retry=RetryPolicy(max_attempts=1, timeout=60))
    assert _outcomes(s) == ["cancelled"]


def test_cancellation_ends_token_delays_and_runs_its_callbacks_once():
    cancel, calls = Cancellation(), []
    cancel.on_set(lambda: calls.append("first"))
    pieces = stream_text("a b c", token_delay=30, cancel=cancel)
    assert next(pieces) == "a"
    cancel.set()
    cancel.set()
    assert list(pieces) == []  # the 30 s delay before " b" ended at once
    cancel.on_set(lambda: calls.append("late"))  # already set: runs now
    assert calls == ["first", "late"]
    assert models.current_cancellation().is_set() is False  # outside call_model: never set


def test_a_hung_callable_is_bounded_too():
    gate, entered = threading.Event(), threading.Event()

    def slow(messages):
        entered.set()
        gate.wait(10)
        return "late"

    name = register_callable(slow, "slow")
    try:
        result, _, _ = _call(name, retry=RetryPolicy(max_attempts=1, timeout=0.2))
        assert entered.is_set()
        assert (result.status, result.error, result.text) == ("failed", "Timeout: no reply within 0.2 s (1 attempt)", "")
    finally:
        gate.set()
        unregister_callable("slow")


def test_no_timeout_means_no_bound_of_our_own(script):
    model, s = script(["patient"], faults={0: "hang"})
    releaser = threading.Thread(target=lambda: s.hanging.wait(10) and s.release())
    releaser.start()
    result, _, _ = _call(model, retry=RetryPolicy(max_attempts=1, timeout=None))
    releaser.join()
    assert (result.status, result.text) == ("ok", "patient")


def test_a_scripts_file_can_ask_for_headers_and_a_bounded_hang(tmp_path):
    from mad_core.models import scripted

    path = tmp_path / "scripts.json"
    path.write_text(json.dumps({"slow-server": {"replies": ["ok"], "faults": {"0": "rate_limit", "1": "hang"},
                                                "retry_after": 2, "hang_s": 0.01, "serial": True}}))
    assert scripted.load_scripts_file(path) == ["slow-server"]
    try:
        result, sleeps, retries = _call("scripted/slow-server", retry=RetryPolicy(max_attempts=2, timeout=30))
        assert (result.status, result.text, result.attempts) == ("ok", "ok", 2)
        assert sleeps.waits == [2.0]
        # the hang expired after hang_s and the call streamed its reply
        assert _outcomes(scripted.get_script("slow-server")) == ["raised", "finished"]
    finally:
        scripted.unregister_script("slow-server")


# ----------------------------------------------------------------------------- the real local model


def _requests_processing(server) -> float:
    return server.metrics()["llamacpp:requests_processing"]


@pytest.mark.real_model
def test_a_timed_out_or_stopped_local_call_frees_its_server_slot():
    from mad_core.models import llama_server, local_gguf

    model = models.DEFAULT_MODEL
    warm = call_model(model, ASK, max_tokens=2, temperature=0, seed=1)  # starts the server outside the timeout
    assert warm.status == "ok", warm.error
    server = llama_server.server_for(local_gguf.resolve("smollm2-135m"))
    story = [{"role": "user", "content": "Write a very long story about a dragon."}]
    tokens: list[str] = []
    result = call_model(model, story, max_tokens=2000, temperature=0, seed=1, on_token=tokens.append,
                        retry=RetryPolicy(max_attempts=1, local_total=0.3))  # a local model's cap on the whole reply
    assert result.status == "failed" and result.attempts == 1
    assert result.error.startswith("Timeout: the whole reply passed the 0.3 s cap") and result.error.endswith(" (1 attempt)")
    assert result.text == "".join(tokens)
    before_stop = len(tokens)
    stopped = call_model(model, story, max_tokens=2000, temperature=0, seed=1, on_token=tokens.append,
                         should_stop=lambda: len(tokens) >= before_stop + 3)
    assert stopped.status == "interrupted"
    deadline = time.monotonic() + 10  # closing the HTTP stream made the server drop both generations
    while _requests_processing(server) > 0:
        assert time.monotonic() < deadline, "an abandoned generation kept its server slot"
        time.sleep(0.1)
    after = call_model(model, ASK, max_tokens=4, temperature=0, seed=1, retry=RetryPolicy(max_attempts=1, timeout=60))
    assert after.status == "ok" and after.text.strip()
