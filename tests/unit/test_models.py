"""The model layer, through the real litellm path: scripted, callable, hf and local providers."""
from __future__ import annotations

import json
import os

import pytest

from mad_core import models
from mad_core.models import (
    DEFAULT_MODEL,
    RetryPolicy,
    call_model,
    ensure_registered,
    is_serial,
    known_models,
    provider_names,
    split_pieces,
    validate_model_name,
)
from mad_core.models import calling, provider_kit, scripted
from mad_core.models.callables import register_callable, unregister_callable
from mad_core.models.scripted import Script, get_script, register_script

ASK = [{"role": "user", "content": "What is 2+2?"}]


@pytest.fixture(autouse=True)
def _fresh_scripts():
    """Scripts registered by a test are removed after it."""
    before = dict(scripted._scripts)
    yield
    scripted._scripts.clear()
    scripted._scripts.update(before)


def _litellm():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


class _Sleeps(list):
    """An injectable ``sleep`` that records the delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


# ----------------------------------------------------------------------------- streaming


def test_scripted_stream_yields_exact_pieces_through_litellm():
    reply = "Hello <script>alert(1)</script>  world,\n  it is 4. "
    register_script("pieces", Script(replies=[reply, reply]))
    ensure_registered()

    stream = _litellm().completion(model="scripted/pieces", messages=ASK, stream=True)
    chunks = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert chunks == split_pieces(reply)
    assert "".join(chunks) == reply

    tokens: list[str] = []
    result = call_model("scripted/pieces", ASK, on_token=tokens.append)
    assert result.status == "ok" and result.error is None and result.attempts == 1
    assert tokens == split_pieces(reply) and len(tokens) > 3
    assert result.text == reply
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert result.first_token_s is not None and 0 <= result.first_token_s <= result.latency_s


def test_our_providers_stream_ends_at_the_finishing_chunk_without_litellms_rebuild(monkeypatch):
    """litellm rebuilds and prices the whole response when a stream runs out (~4 ms a call);
    our providers' finishing chunk is their last, so the call ends there: the text and token
    counts are the same, and the rebuild must not happen."""
    reply = "It is 4, because two and two make four."
    register_script("no_rebuild", Script(replies=[reply]))
    ensure_registered()
    rebuilds = []
    builder = _litellm().stream_chunk_builder
    monkeypatch.setattr(_litellm(), "stream_chunk_builder", lambda *a, **k: rebuilds.append(1) or builder(*a, **k))
    tokens: list[str] = []
    result = call_model("scripted/no_rebuild", ASK, on_token=tokens.append)
    assert result.status == "ok" and result.text == reply and "".join(tokens) == reply
    assert result.completion_tokens == calling.count_tokens("scripted/no_rebuild", text=reply) > 0
    assert result.prompt_tokens == calling.count_tokens("scripted/no_rebuild", messages=ASK) > 0
    assert rebuilds == []


def test_metadata_and_params_reach_the_handler_and_route_dict_replies():
    script = register_script("routed", Script(replies={"A": ["a1", "a2"], "B": ["b1"]}, default="none"))
    texts = [
        call_model("scripted/routed", ASK, metadata={"agent": agent}, seed=7, temperature=0.3, max_tokens=20).text
        for agent in ["A", "B", "A", "B", "A", "C"]
    ]
    assert texts == ["a1", "b1", "a2", "b1", "a2", "none"]  # a list that runs out repeats its last reply
    first = script.history[0]
    assert first["metadata"] == {"agent": "A"}
    assert (first["seed"], first["temperature"], first["max_tokens"]) == (7, 0.3, 20)
    assert first["messages"] == ASK


def test_function_script_gets_messages_and_info():
    seen = []

    def reply(messages, info):
        seen.append(info)
        return f"call {info['call_index']} for {info['metadata']['agent']}: {messages[-1]['content']}"

    register_script("fn", Script(replies=reply))
    result = call_model("scripted/fn", ASK, metadata={"agent": "A"}, seed=3)
    assert result.text == "call 0 for A: What is 2+2?"
    assert seen[0]["seed"] == 3


def test_echo_script_is_built_in():
    result = call_model("scripted/echo", [{"role": "user", "content": "first line\nsecond line"}])
    assert (result.status, result.text) == ("ok", "first line")


# ----------------------------------------------------------------------------- retries


def test_rate_limit_is_retried_with_backoff():
    register_script("flaky", Script(replies=["fine"], faults={0: "rate_limit"}))
    sleeps, retries = _Sleeps(), []
    result = call_model(
        "scripted/flaky", ASK, sleep=sleeps, on_retry=lambda n, err: retries.append((n, err)),
        retry=RetryPolicy(max_attempts=3, base_delay=0.25),
    )
    assert (result.status, result.text, result.attempts) == ("ok", "fine", 2)
    assert sleeps == [0.25]
    assert len(retries) == 1 and retries[0][0] == 1 and "RateLimitError" in retries[0][1]


@pytest.mark.parametrize("fault, error_name", [("timeout", "Timeout"), ("server_error", "InternalServerError")])
def test_other_transient_faults_are_retried(fault, error_name):
    register_script("transient", Script(replies=["ok now"], faults={0: fault}))
    retries = []
    result = call_model("scripted/transient", ASK, sleep=_Sleeps(), on_retry=lambda n, e: retries.append(e))
    assert (result.status, result.attempts) == ("ok", 2)
    assert retries[0].startswith(error_name)


def test_plain_exception_fails_at_once():
    register_script("broken", Script(replies=["never"], faults={i: "exception" for i in range(5)}))
    sleeps = _Sleeps()
    result = call_model("scripted/broken", ASK, sleep=sleeps)
    assert (result.status, result.attempts, result.text) == ("failed", 1, "")
    assert result.error == "RuntimeError: scripted fault: exception"
    assert sleeps == []


def test_persistent_empty_reply_fails_after_max_attempts():
    register_script("mute", Script(faults={i: "empty" for i in range(5)}))
    sleeps, retries = _Sleeps(), []
    result = call_model(
        "scripted/mute", ASK, sleep=sleeps, on_retry=lambda n, e: retries.append(n),
        retry=RetryPolicy(max_attempts=3, base_delay=0.5, max_delay=0.75),
    )
    assert (result.status, result.attempts) == ("failed", 3)
    assert "empty" in result.error
    assert sleeps == [0.5, 0.75]  # base_delay * 2**k, capped at max_delay
    assert retries == [1, 2]
    assert get_script("mute").calls == 3


def test_junk_reply_is_returned_as_is():
    register_script("junk", Script(faults={0: "junk"}))
    result = call_model("scripted/junk", ASK)
    assert result.status == "ok" and result.text.strip()


def test_unknown_model_fails_without_raising():
    result = call_model("nosuchprovider/x", ASK, sleep=_Sleeps())
    assert result.status == "failed" and result.attempts == 1 and result.error


def test_error_text_never_contains_an_api_key(monkeypatch):
    secret = "sk-test-0123456789abcdefghijklmnop"
    monkeypatch.setenv("OPENAI_API_KEY", secret)

    def leaky(messages):
        raise ValueError(f"bad key {secret}")

    result = call_model(register_callable(leaky, "leaky"), ASK)
    unregister_callable("leaky")
    assert result.status == "failed" and result.error.startswith("ValueError")
    assert secret not in result.error


# ----------------------------------------------------------------------------- interruption


def test_should_stop_interrupts_a_slow_stream():
    reply = "one two three four five six seven eight nine ten"
    register_script("slow", Script(replies=[reply], token_delay=0.02))
    tokens: list[str] = []
    result = call_model("scripted/slow", ASK, on_token=tokens.append, should_stop=lambda: len(tokens) >= 3)
    assert result.status == "interrupted" and result.error is None
    assert result.text == "one two three"
    assert reply.startswith(result.text) and len(tokens) == 3


# ----------------------------------------------------------------------------- registration


def test_ensure_registered_keeps_user_entries_and_registers_once(monkeypatch):
    litellm = _litellm()
    user_entry = {"provider": "my-own", "custom_handler": litellm.CustomLLM()}
    monkeypatch.setattr(litellm, "custom_provider_map", [user_entry])
    ensure_registered()
    ensure_registered()
    providers = [entry["provider"] for entry in litellm.custom_provider_map]
    assert litellm.custom_provider_map[0] is user_entry
    assert sorted(providers) == sorted(["my-own", "scripted", "hf", "callable"])  # local/ goes to llama-server
    assert call_model("scripted/echo", ASK).text == "What is 2+2?"


def test_our_providers_models_get_a_zero_price_in_litellms_map_once(caplog):
    """A model served in this process is priced at 0 in litellm's map when first called, so litellm
    reads its price instead of searching the map and its fallback rules at every reply (it found
    none: response_cost None). Only our providers' models: a remote model's price is left alone."""
    litellm = _litellm()
    register_script("priced-once", Script(replies=["four"]))
    name = "scripted/priced-once"
    assert name not in litellm.model_cost
    remote = dict(litellm.model_cost["gpt-4o-mini"])
    with caplog.at_level("WARNING"):
        assert call_model(name, ASK, stream=False).text == "four"
        ensure_registered("gpt-4o-mini")
        ensure_registered("openai/gpt-4o-mini")
    entry = litellm.model_cost[name]
    assert (entry["input_cost_per_token"], entry["output_cost_per_token"], entry["litellm_provider"]) == (0.0, 0.0,
                                                                                                          "scripted")
    assert litellm.model_cost["gpt-4o-mini"] == remote and "openai/gpt-4o-mini" not in litellm.model_cost
    assert not [r for r in caplog.records if "register_model" in r.getMessage()]  # no warning at registration
    reply = litellm.completion(model=name, messages=ASK, stream=False)
    assert reply._hidden_params["response_cost"] == 0.0


def test_scripts_file_is_loaded_from_env(tmp_path, monkeypatch):
    path = tmp_path / "scripts.json"
    path.write_text(json.dumps({"from-file": {"replies": ["from a file"], "faults": {"1": "empty"}}}))
    monkeypatch.setenv("MADLAB_SCRIPTS", str(path))
    assert validate_model_name("scripted/from-file") is None
    assert call_model("scripted/from-file", ASK).text == "from a file"
    assert get_script("from-file").faults == {1: "empty"}


def test_yaml_scripts_file(tmp_path):
    path = tmp_path / "scripts.yaml"
    path.write_text("yaml-one:\n  replies: [alpha, beta]\n  token_delay: 0\n")
    assert scripted.load_scripts_file(path) == ["yaml-one"]
    assert [call_model("scripted/yaml-one", ASK).text for _ in range(3)] == ["alpha", "beta", "beta"]


def test_bad_fault_name_is_rejected():
    with pytest.raises(ValueError, match="unknown fault"):
        Script(faults={0: "explode"})


# ----------------------------------------------------------------------------- names


@pytest.mark.parametrize("name", [DEFAULT_MODEL, "scripted/echo", "openai/gpt-4o-mini", "anthropic/claude-x"])
def test_valid_model_names(name):
    assert validate_model_name(name) is None


@pytest.mark.parametrize(
    "name, expected",
    [
        ("gpt-4o-mini", "provider/model"),
        ("", "provider/model"),
        ("nosuchprovider/x", "Unknown provider 'nosuchprovider': the Models page lists the providers."),
        ("scripted/nope", "Registered scripts: echo"),
        ("local/nope", "smollm2-135m"),
        ("local//no/such/file.gguf", ".gguf"),
        ("hf//no/such/dir", "config.json"),
        ("callable/nope", "Unknown callable"),
    ],
)
def test_invalid_model_names(name, expected):
    message = validate_model_name(name)
    assert message and expected in message


def test_unknown_provider_is_one_line_that_says_where_the_providers_are():
    message = validate_model_name("nosuchprovider/x")
    assert message == "Unknown provider 'nosuchprovider': the Models page lists the providers.", message
    assert "provider_names()" not in message  # no Python in the form's error
    assert "cohere" not in message and "bedrock" not in message  # the ~170 providers are not listed in it
    assert "did you mean 'openai'?" in validate_model_name("opnai/gpt-4o")


def test_provider_names_lists_litellms_and_ours():
    names = provider_names()
    assert {"openai", "anthropic", "ollama", "bedrock", "local", "scripted", "hf", "callable"} <= set(names)
    assert names == sorted(names)


def test_is_serial():
    assert is_serial("hf//some/dir")
    assert not is_serial(DEFAULT_MODEL)  # its llama-server has parallel slots
    assert not is_serial("scripted/echo") and not is_serial("openai/gpt-4o-mini")


def test_known_models_report_keys_without_revealing_them(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-known-models-secret-value")
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    listed = {m["name"]: m for m in known_models()}
    assert listed[DEFAULT_MODEL]["kind"] == "local"
    assert "scripted/echo" in listed
    assert listed["openai/gpt-4o-mini"]["key_env"] == "OPENAI_API_KEY"
    assert listed["openai/gpt-4o-mini"]["key_present"] is True
    assert listed["groq/llama-3.1-8b-instant"]["key_present"] is False
    assert {"ollama", "hosted_vllm", "gemini", "mistral", "anthropic"} <= {n.split("/")[0] for n in listed}
    assert "sk-known-models-secret-value" not in json.dumps(known_models())
    for entry in listed.values():
        assert set(entry) == {"name", "kind", "description", "key_env", "key_present"}


# ----------------------------------------------------------------------------- callable


def test_callable_provider_streams_a_function_reply():
    calls = []

    def answer(messages):
        calls.append(messages)
        return "The answer is 4."

    name = register_callable(answer, "adder")
    try:
        assert name == "callable/adder" and validate_model_name(name) is None
        tokens: list[str] = []
        result = call_model(name, ASK, on_token=tokens.append)
        assert (result.status, result.text) == ("ok", "The answer is 4.")
        assert tokens == ["The", " answer", " is", " 4."]
        assert calls == [ASK]
        anonymous = register_callable(lambda messages: "anon")
        assert anonymous.startswith("callable/") and call_model(anonymous, ASK).text == "anon"
    finally:
        unregister_callable("adder")


# ----------------------------------------------------------------------------- hf (tiny model)


def _tiny_hf_checkpoint(directory) -> str:
    """A 2-layer GPT-2 with a word-level tokenizer trained here: nothing is downloaded."""
    import torch
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel
    from tokenizers.trainers import WordLevelTrainer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    sentences = [
        "the cat sat on the mat",
        "a dog ran in the park",
        "two plus two is four",
        "user assistant question answer debate agent",
        "what is the capital of france paris",
    ]
    tokenizer = Tokenizer(WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(sentences, WordLevelTrainer(special_tokens=["[UNK]"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]")
    fast.save_pretrained(directory)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=tokenizer.get_vocab_size(), n_positions=128, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=None, eos_token_id=None)
    GPT2LMHeadModel(config).save_pretrained(directory)
    return str(directory)


def test_hf_provider_streams_a_tiny_local_model(tmp_path):
    from mad_core.models.hf_local import register_hf_alias

    path = _tiny_hf_checkpoint(tmp_path / "tiny-gpt2")
    model = f"hf/{path}"
    assert model.startswith("hf//") and validate_model_name(model) is None
    tokens: list[str] = []
    result = call_model(model, ASK, max_tokens=12, temperature=1.0, seed=0, on_token=tokens.append)
    assert result.status == "ok", result.error
    assert result.text.strip() and len(tokens) > 1 and "".join(tokens) == result.text
    assert result.completion_tokens > 0 and result.prompt_tokens > 0
    assert register_hf_alias("tiny", path) == "hf/tiny"
    assert call_model("hf/tiny", ASK, max_tokens=4, temperature=1.0, seed=0).status == "ok"


# ----------------------------------------------------------------------------- the real offline model


@pytest.mark.real_model
def test_real_offline_model_streams():
    tokens: list[str] = []
    result = call_model(DEFAULT_MODEL, ASK, max_tokens=8, temperature=0, seed=1, on_token=tokens.append)
    assert result.status == "ok", result.error
    assert result.text.strip()
    assert len(tokens) >= 3 and "".join(tokens) == result.text
    assert 0 < result.completion_tokens <= 8
    assert models.local_gguf.local_aliases()["smollm2-135m"].endswith(".gguf")


class _Clock:
    """A fake monotonic clock, and a Cancellation whose waits advance it and are recorded."""

    def __init__(self):
        self.now, self.waits = 100.0, []

    def monotonic(self):
        return self.now

    def wait(self, delay):
        self.waits.append(round(delay, 6))
        self.now += delay
        return False

    def is_set(self):
        return False


@pytest.mark.parametrize("steady, waits", [
    (False, [0.5, 1.0, 1.0]),  # each pause runs from the piece the caller took
    (True, [0.5, 0.6, 0.6]),  # piece k is due 0.5 + k s after the start: the caller's 0.4 s is not added
])
def test_stream_text_paces_by_the_clock_when_steady(monkeypatch, steady, waits):
    clock = _Clock()
    monkeypatch.setattr(provider_kit.time, "monotonic", clock.monotonic)
    pieces = []
    for piece in models.stream_text("one two three", first_token_delay=0.5, token_delay=1.0,
                                             cancel=clock, steady=steady):
        pieces.append(piece)
        clock.now += 0.4  # the caller's own time per piece
    assert "".join(pieces) == "one two three"
    assert clock.waits == waits
