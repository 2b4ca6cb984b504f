"""The response cache (issue 21, item 4): a rerun makes no model call and gives the same turns; "read" never
writes, "off" neither reads nor writes; errors are never stored; the key moves with the seed, the temperature,
the messages, the occurrence and a local model's file bytes; many writers at once; `cache stats|clear`."""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mad_core.calls import Calls, DebateState
from mad_core.cli import main
from mad_core.config import ConfigError, DebateConfig
from mad_core.controller import Controller
from mad_core.events import TokenReceived
from mad_core.models.calling import CallResult
from mad_core.models.response_cache import ResponseCache, default_cache_path, model_identity, request_key
from mad_core.replay import Origin, Replay
from tests.builders import config, of, run, turns

REPO = Path(__file__).resolve().parents[2]
ANSWERS = {"Agent 1": "Paris", "Agent 2": "Lyon", "Agent 3": "Paris"}
MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


def ok(text: str = "Paris.", **changes) -> CallResult:
    return CallResult(**{"text": text, "status": "ok", "error": None, "prompt_tokens": 11, "completion_tokens": 3,
                         "latency_s": 0.2, "first_token_s": 0.1, "attempts": 1, **changes})


def entries() -> int:
    return ResponseCache("read").stats()["entries"]


def by_seq(events) -> list[tuple]:
    return [(t.seq, t.round, t.agent, t.kind, t.content, t.status) for t in sorted(turns(events), key=lambda t: t.seq)]


def debate(model: str, **changes) -> DebateConfig:
    return config(model, **{"rounds": 1, "max_rounds": 1, "seed": 7, "retry_base_delay": 0.0, **changes})


# ----- a debate run again -----------------------------------------------------------------------------
def test_a_rerun_makes_no_model_call_and_gives_the_same_turns(script, roles):
    model, served = script(roles(ANSWERS))
    cfg = debate(model, cache="readwrite")
    first = run(cfg)
    called = served.calls
    assert first.engine.status == "finished" and called > 0
    assert entries() == called  # every call ended "ok" and was stored

    second = run(cfg)
    assert served.calls == called  # no model call at all
    assert by_seq(second) == by_seq(first) and second.engine.status == "finished"
    again = turns(second)
    assert all(t.attempts == 0 and t.latency_s == 0.0 and t.first_token_s == 0.0 for t in again)
    originals = {t.seq: t for t in turns(first)}
    assert [(t.prompt_tokens, t.completion_tokens) for t in again] == [
        (originals[t.seq].prompt_tokens, originals[t.seq].completion_tokens) for t in again]
    # delivered as a streamed reply: one piece, the whole text, for each turn
    pieces = of(second, TokenReceived)
    assert sorted(p.text for p in pieces) == sorted(t.content for t in again)
    assert ResponseCache("read").stats()["entries"] == called  # nothing new was stored


def test_mode_read_takes_stored_replies_and_never_writes(script, roles, madlab_home):
    model, served = script(roles(ANSWERS))
    run(debate(model, cache="read"))
    assert served.calls > 0 and not default_cache_path().exists()  # nothing to read, nothing written

    run(debate(model, cache="readwrite"))
    stored, called = entries(), served.calls
    read = run(debate(model, cache="read"))
    assert served.calls == called and entries() == stored  # read from the cache, added nothing
    assert all(t.attempts == 0 for t in turns(read))
    run(debate(model, cache="read", seed=8))  # misses: called, still not stored
    assert served.calls > called and entries() == stored


def test_mode_off_neither_reads_nor_writes(script, roles):
    model, served = script(roles(ANSWERS))
    run(debate(model))  # "off" is the default of a single debate
    assert DebateConfig(question="q").cache == "off" and not default_cache_path().exists()
    called = served.calls
    run(debate(model, cache="readwrite"))
    stored, before = entries(), served.calls
    assert before == 2 * called
    off = run(debate(model, cache="off"))
    assert served.calls == before + called and entries() == stored  # called again, nothing stored
    assert all(t.attempts >= 1 for t in turns(off))


def test_a_failed_call_is_never_stored(script, roles):
    model, served = script(roles(ANSWERS), faults={0: "exception"})
    events = run(debate(model, cache="readwrite", retry_attempts=1))
    kept = [t for t in turns(events) if t.status == "ok"]
    failed = [t for t in turns(events) if t.status == "failed"]
    assert len(failed) == 1 and entries() == len(kept)

    called = served.calls
    again = run(debate(model, cache="readwrite", retry_attempts=1))
    assert served.calls > called  # the failed request was asked again
    assert all(t.status == "ok" for t in turns(again))


def test_only_an_ok_reply_with_text_is_stored():
    cache = ResponseCache("readwrite")
    for result in (ok(status="failed", text="", error="Timeout"), ok(status="interrupted", text="Par"),
                   ok(text=""), ok(text="  \n")):
        assert cache.put("k", result) is False
    assert cache.stats()["entries"] == 0
    assert cache.put("k", ok()) is True and cache.put("k", ok("Lyon.")) is False  # the first reply stays
    assert cache.get("k").text == "Paris." and cache.stats()["entries"] == 1
    assert ResponseCache("read").put("k2", ok()) is False and ResponseCache("off").get("k") is None


# ----- the key ---------------------------------------------------------------------------------------
def test_the_key_moves_with_what_changes_the_reply():
    base = dict(temperature=0.7, max_tokens=256, seed=7, response_format=None, extra=None)
    key = request_key("scripted/x", MESSAGES, **base)
    assert key == request_key("scripted/x", [dict(m) for m in MESSAGES], **base)
    assert request_key("scripted/x", MESSAGES, **{**base, "temperature": 1}) == request_key(
        "scripted/x", MESSAGES, **{**base, "temperature": 1.0})
    changed = [request_key("scripted/x", MESSAGES, **{**base, "seed": 8}),
               request_key("scripted/x", MESSAGES, **{**base, "temperature": 0.2}),
               request_key("scripted/x", MESSAGES, **{**base, "max_tokens": 24}),
               request_key("scripted/x", MESSAGES, **{**base, "extra": {"repeat_penalty": 1.15}}),
               request_key("scripted/x", MESSAGES, **{**base, "response_format": {"type": "json_object"}}),
               request_key("scripted/x", [{"role": "user", "content": "What is the capital of Spain?"}], **base),
               request_key("scripted/y", MESSAGES, **base),
               request_key("scripted/x", MESSAGES, occurrence=1, **base)]
    assert len({key, *changed}) == len(changed) + 1
    with pytest.raises(TypeError, match="metadata"):
        request_key("scripted/x", MESSAGES, metadata={"agent": "Agent 1"})


def test_a_different_seed_misses_in_a_debate(script, roles):
    model, served = script(roles(ANSWERS))
    run(debate(model, cache="readwrite"))
    called = served.calls
    run(debate(model, cache="readwrite", seed=8))
    assert served.calls == 2 * called and entries() == 2 * called


def test_the_key_of_a_local_model_follows_the_gguf_files_bytes(tmp_path, monkeypatch):
    from mad_core.models import local_gguf

    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF one")
    model = f"local/{path}"
    monkeypatch.setitem(local_gguf._aliases, "tiny-cache-test", str(path))
    first, by_alias = request_key(model, MESSAGES, seed=1), request_key("local/tiny-cache-test", MESSAGES, seed=1)
    assert model_identity(model).startswith("gguf-sha256:") and model_identity(model) == model_identity(
        "local/tiny-cache-test")
    assert request_key(model, MESSAGES, seed=1) == first  # the digest is memoised and stable
    path.write_bytes(b"GGUF two, longer")
    os.utime(path, ns=(1, 1))
    assert request_key(model, MESSAGES, seed=1) != first
    assert request_key("local/tiny-cache-test", MESSAGES, seed=1) != by_alias
    assert model_identity("scripted/x") == "scripted/x"  # other providers: the name alone


def test_the_occurrence_counter_gives_an_identical_request_its_own_entry(script):
    def ask_twice() -> list[str]:
        cfg = debate(model, n=1, cache="readwrite", max_concurrency=1)
        state = DebateState(personas={"Agent 1": ""}, order=["Agent 1"], round=1)
        calls = Calls(cfg, Controller(), state, Replay(Origin()), emit=lambda e: None, push=lambda e: None, read_turn=lambda t: None,
                      debate_id="d")
        try:
            asked = calls.ask_many([("Agent 1", "vote", MESSAGES, None)] * 2)
        finally:
            calls.close()
        return [t.content for t in asked]

    model, served = script(["first", "second"])
    assert ask_twice() == ["first", "second"] and served.calls == 2 and entries() == 2
    assert ask_twice() == ["first", "second"] and served.calls == 2  # a new debate: both from the cache


# ----- many writers ---------------------------------------------------------------------------------------
def test_writers_in_many_threads_do_not_fail():
    shared = ResponseCache("readwrite")

    def write(n: int) -> int:
        own = ResponseCache("readwrite")  # its own connection, racing the others for the file
        stored = 0
        for i in range(20):
            cache = own if i % 2 else shared
            stored += cache.put(f"{n}-{i}", ok(f"reply {n} {i}"))
            assert cache.get(f"{n}-{i}").text == f"reply {n} {i}"
        own.close()
        return stored

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(write, range(8))) == [20] * 8  # a writer that failed raises here
    assert shared.stats()["entries"] == 160


def test_writers_in_two_processes_do_not_fail(madlab_home):
    code = ("import sys\nfrom mad_core.models.calling import CallResult\n"
            "from mad_core.models.response_cache import ResponseCache\n"
            "cache = ResponseCache('readwrite')\n"
            "for i in range(40):\n"
            "    assert cache.put(f'{sys.argv[1]}-{i}', CallResult('x', 'ok', None, 1, 1, 0.0, 0.0, 1))\n")
    env = {**os.environ, "MADLAB_HOME": str(madlab_home), "PYTHONPATH": str(REPO)}
    workers = [subprocess.Popen([sys.executable, "-c", code, name], env=env, cwd=REPO) for name in ("a", "b")]
    assert [w.wait(timeout=120) for w in workers] == [0, 0]
    assert entries() == 80


# ----- the command line and the setting -----------------------------------------------------------------
def test_cache_stats_and_clear_on_the_command_line(capsys):
    assert main(["cache", "stats"]) == 0
    assert "entries: 0" in capsys.readouterr().out and not default_cache_path().exists()
    cache = ResponseCache("readwrite")
    for i in range(3):
        cache.put(str(i), ok())
    cache.close()
    assert main(["cache", "stats"]) == 0
    out = capsys.readouterr().out
    assert "entries: 3" in out and str(default_cache_path()) in out and "bytes" in out
    assert main(["cache", "clear"]) == 0
    assert "Removed 3 entries" in capsys.readouterr().out
    assert entries() == 0
    assert main(["cache", "clear"]) == 0 and "Removed 0 entries" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["on", "", None, True, 1, ["read"]])
def test_a_bad_cache_value_is_a_config_error_naming_cache(value):
    with pytest.raises(ConfigError) as caught:
        DebateConfig.from_dict({"question": "q", "cache": value})
    assert caught.value.field == "cache" and "readwrite" in caught.value.message
    assert [p.field for p in DebateConfig.problems({"question": "q", "cache": value})] == ["cache"]


def test_the_cache_setting_round_trips():
    for mode in ("off", "read", "readwrite"):
        cfg = DebateConfig.from_dict({"question": "q", "cache": mode})
        assert cfg.to_dict()["cache"] == mode and DebateConfig.from_dict(cfg.to_dict()) == cfg
