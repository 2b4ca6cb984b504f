"""The scripted test double asked for a whole reply (litellm's ``stream=False``), and what it costs.

A debate nobody watches asks for each reply whole. A server then answers once; so does the double:
one wait as long as its pieces would have taken (the same pacing), then the reply in one piece,
while a streamed call still gets it word by word with a wait per piece. A call with a fault still
goes piece by piece, so "hang" and "stall" act as they do in a stream. ``keep_history=False``
(a benchmark's model) records no call and serves the same replies. The in-process providers state
their own price (0) on an unstreamed reply, so litellm does not price it again.

The waits are seen through a recording ``Cancellation`` bound to the calling thread: nothing sleeps.
"""
from __future__ import annotations

import pytest

from mad_core.models import call_model
from mad_core.models.catalogue import provider_names, validate_model_name
from mad_core.models.loader import load_litellm
from mad_core.models.provider_kit import Cancellation, Request, bind_cancellation, split_pieces, whole_text
from mad_core.models.scripted import Script, generate, register_script

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REPLY = "Two plus two makes four.\nFinal answer: 4"
ASK = [{"role": "user", "content": "What is 2+2?"}]


class _Waits(Cancellation):
    """A cancellation that records each wait asked of it and returns at once (never set)."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return False


def _pull(name: str, *, stream: bool) -> tuple[list[str], list[float]]:
    waits = _Waits()
    bind_cancellation(waits)
    try:
        pieces = list(generate(Request(model=name, messages=ASK, stream=stream)))
    finally:
        bind_cancellation(None)
    return pieces, waits.waits


@pytest.mark.parametrize("steady", [True, False])
def test_a_whole_reply_comes_in_one_piece_after_one_wait_as_long_as_the_stream(steady):
    register_script("whole-paced", Script(replies=[REPLY, REPLY], first_token_delay=0.5, token_delay=0.01,
                                          steady=steady))
    streamed, stream_waits = _pull("whole-paced", stream=True)
    whole, whole_waits = _pull("whole-paced", stream=False)
    pieces = split_pieces(REPLY)
    assert streamed == pieces and len(pieces) == 8
    assert whole == [REPLY]  # one piece, the whole text
    assert whole_waits == [pytest.approx(0.5 + 7 * 0.01)]  # one wait: the first piece's and seven gaps
    assert len(stream_waits) == 8  # the stream waited before every piece
    if not steady:  # each pause as asked (a steady stream asks what is left of its clock)
        assert stream_waits == [0.5] + [0.01] * 7


def test_a_whole_reply_with_a_fault_still_goes_piece_by_piece():
    script = register_script("whole-stall", Script(replies=[REPLY], faults={0: "stall"}, hang_s=0.0))
    whole, waits = _pull("whole-stall", stream=False)
    assert whole == split_pieces(REPLY)  # a stall needs pieces: it acts as in a stream
    assert script.history[0]["fault"] == "stall" and script.history[0]["outcome"] == "finished"


def test_a_cancelled_whole_reply_yields_nothing():
    cancel = Cancellation()
    cancel.set()
    assert list(whole_text(REPLY, first_token_delay=1.0, cancel=cancel)) == []
    assert list(whole_text(REPLY, cancel=cancel)) == []  # no delay: still nothing once set
    assert list(whole_text("", first_token_delay=0.0)) == []


def test_without_history_the_double_serves_the_same_replies_and_records_nothing():
    kept = register_script("history-kept", Script(replies=["one", "two"]))
    unkept = register_script("history-unkept", Script(replies=["one", "two"], keep_history=False))
    for name in ("history-kept", "history-unkept"):
        assert [call_model(f"scripted/{name}", ASK, stream=stream).text for stream in (True, False)] == ["one", "two"]
    assert unkept.history == [] and unkept.calls == 2 and unkept.wait_idle(5)
    assert [(c["call_index"], c["outcome"]) for c in kept.history] == [(0, "finished"), (1, "finished")]


def test_each_call_ends_its_own_history_entry():
    """Outcomes land on the entry of the call that ended (looked up by its index, not by a scan)."""
    script = register_script("history-outcomes", Script(replies=[REPLY, REPLY], faults={0: "server_error"}))
    result = call_model("scripted/history-outcomes", ASK, stream=False, sleep=lambda seconds: None)
    assert (result.status, result.attempts) == ("ok", 2)  # retried: call 1
    assert script.wait_idle(5)
    assert [(c["call_index"], c["fault"], c["outcome"]) for c in script.history] == [
        (0, "server_error", "raised"), (1, None, "finished")]


def test_an_unstreamed_reply_carries_its_price_and_litellm_does_not_price_it_again(monkeypatch):
    litellm = load_litellm()
    priced: list[str] = []
    real = litellm.response_cost_calculator

    def counting(*args, **kwargs):
        priced.append(str(kwargs.get("model")))
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "response_cost_calculator", counting)
    register_script("price-stated", Script(replies=["four"]))
    reply = litellm.completion(model="scripted/price-stated", messages=ASK, stream=False)
    assert (reply._hidden_params["response_cost"], reply.choices[0].message.content) == (0.0, "four")
    assert priced == []  # the stated price was taken as it is
    # the spy does see litellm price a reply that states none (its own offline mock of a remote model)
    mocked = litellm.completion(model="gpt-4o-mini", messages=ASK, mock_response="four")
    assert priced and mocked._hidden_params["response_cost"] > 0


def test_the_provider_list_follows_a_provider_registered_later():
    litellm = load_litellm()
    assert "late-provider" not in provider_names()
    assert validate_model_name("late-provider/x").startswith("Unknown provider 'late-provider'")
    entry = {"provider": "late-provider", "custom_handler": litellm.custom_provider_map[0]["custom_handler"]}
    litellm.custom_provider_map.append(entry)
    try:
        assert "late-provider" in provider_names()
        assert validate_model_name("late-provider/x") is None
    finally:
        litellm.custom_provider_map.remove(entry)
    assert "late-provider" not in provider_names()
