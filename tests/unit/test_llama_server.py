"""The llama-server supervisor and the ``local`` route, against a fake server binary.

``fake_llama_server.py`` stands in for llama.cpp's ``llama-server``: the supervisor starts
it as a separate process exactly as it starts the real binary (the real one is exercised
by the ``real_model`` tests in test_real_model.py).
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from mad_core import DebateConfig, DebateEngine
from mad_core.events import DebateFinished
from mad_core.models import RetryPolicy, StreamLimits, call_model, is_serial, llama_server, local_gguf, validate_model_name
from mad_core.store import Store
from mad_core.models.llama_server import LlamaServer, LlamaServerError, SlotTable

FAKE = Path(__file__).with_name("fake_llama_server.py")
ASK = [{"role": "user", "content": "one two three four five"}]


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Point the supervisor at the fake binary; returns a helper to read what it recorded.

    Servers started during the test are stopped and forgotten afterwards (servers of the
    real model that other tests started are left alone).
    """
    wrapper = tmp_path / "llama-server"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    wrapper.chmod(0o755)
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("MADLAB_LLAMA_SERVER", str(wrapper))
    monkeypatch.setenv("FAKE_LLAMA_RECORD", str(record))
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    before = set(llama_server._servers)

    class Fake:
        path = str(gguf)
        model = local_gguf.register_local_alias(f"fake-{tmp_path.name}", gguf)

        @staticmethod
        def entries(kind: str) -> list[dict]:
            lines = record.read_text().splitlines() if record.exists() else []
            return [entry for entry in map(json.loads, lines) if kind in entry]

    yield Fake
    for path in set(llama_server._servers) - before:
        llama_server._servers.pop(path).stop()
    local_gguf._aliases.pop(Fake.model.split("/", 1)[1], None)


def _gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie nobody has reaped yet counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return False


# ----------------------------------------------------------------------------- command line, ports, slots


def test_command_line_binds_loopback_with_slots_batching_metrics_and_no_web_ui():
    server = LlamaServer("/models/m.gguf", executable="/bin/llama-server", slots=3, ctx_per_slot=1000, threads=2)
    cmd = server.command(4321)
    assert cmd[0] == "/bin/llama-server"
    flags = dict(zip(cmd[1::1], cmd[2::1]))
    assert flags["--model"] == "/models/m.gguf" and flags["--host"] == "127.0.0.1" and flags["--port"] == "4321"
    assert flags["--parallel"] == "3" and flags["--ctx-size"] == "3000" and flags["--threads"] == "2"
    # one KV pool for all slots, in which idle slots keep their prompts (each agent's prompt cache)
    assert {"--cont-batching", "--kv-unified", "--no-cache-idle-slots", "--metrics", "--no-webui"} <= set(cmd)
    assert "--n-gpu-layers" not in cmd  # a CPU build
    gpu = LlamaServer("/models/m.gguf", executable="x", gpu_layers=99).command(1)
    assert gpu[gpu.index("--n-gpu-layers") + 1] == "99"


def test_settings_come_from_the_environment(fake, monkeypatch):
    monkeypatch.setenv("MADLAB_LLAMA_SLOTS", "3")
    monkeypatch.setenv("MADLAB_N_CTX", "512")
    monkeypatch.setenv("MADLAB_LLAMA_THREADS", "1")
    monkeypatch.setenv("MADLAB_LLAMA_ARGS", "--flash-attn on --poll 0")
    server = llama_server.server_for(fake.path)
    assert (server.slots, server.ctx_per_slot, server.threads, server.gpu_layers) == (3, 512, 1, None)  # no GPU listed
    assert server.command(1)[-4:] == ["--flash-attn", "on", "--poll", "0"]  # the user's own flags come last
    assert server.executable.endswith("llama-server")
    assert llama_server.server_for(fake.path) is server  # one per file
    assert not server.alive()  # nothing starts before the first call


def _machine(monkeypatch, cores: int, busy_share: float) -> None:
    """This process sees ``cores`` cores; /proc/stat says ``busy_share`` of the machine was busy meanwhile."""
    samples = iter([(0.0, 0.0), (busy_share * 1000, 1000.0)])
    monkeypatch.setattr(llama_server, "_cores", lambda: cores)
    monkeypatch.setattr(llama_server.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(llama_server, "_cpu_times", lambda: next(samples))


@pytest.mark.parametrize(("busy_share", "threads"), [(0.0, 2), (0.2, 2), (0.3, 1), (0.5, 1), (1.0, 1)])
def test_a_server_takes_one_thread_per_core_free_when_it_starts(monkeypatch, busy_share, threads):
    # On 2 cores, another process using more than half a core takes that core: llama.cpp's threads meet at
    # a barrier after every operation, so a second thread sharing a busy core stalls the first.
    _machine(monkeypatch, 2, busy_share)
    assert llama_server.free_cores(sample_s=0) == threads


def test_the_start_uses_the_free_cores_unless_the_environment_says(fake, monkeypatch):
    _machine(monkeypatch, 2, 0.6)  # another process keeps 1.2 cores busy
    server = llama_server.server_for(fake.path)
    assert server.threads is None
    server.ensure_running()
    [start] = fake.entries("argv")
    assert start["argv"][start["argv"].index("--threads") + 1] == "1" and server.started_threads == 1
    assert "(1 of 2 cores free at start)" in server.log_path.read_text()
    server.stop()
    llama_server._servers.pop(os.path.realpath(fake.path))
    monkeypatch.setenv("MADLAB_LLAMA_THREADS", "2")
    _machine(monkeypatch, 2, 1.0)  # must not happen: the user's setting overridden by the load
    pinned = llama_server.server_for(fake.path)
    pinned.ensure_running()
    second = fake.entries("argv")[-1]
    assert second["argv"][second["argv"].index("--threads") + 1] == "2" and pinned.started_threads == 2


def test_bad_slot_setting_is_refused(fake, monkeypatch):
    monkeypatch.setenv("MADLAB_LLAMA_SLOTS", "0")
    with pytest.raises(LlamaServerError, match="MADLAB_LLAMA_SLOTS"):
        llama_server.server_for(fake.path)


def test_free_port_is_free_on_loopback():
    port = llama_server.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_each_key_keeps_its_slot_and_keys_share_once_slots_run_out():
    table = SlotTable(3)
    assert [table.slot_for(k) for k in "abc"] == [0, 1, 2]
    assert [table.slot_for(k) for k in "cab"] == [2, 0, 1]  # the same slot every time
    assert table.slot_for("d") == 2  # all slots taken: the one used least recently ("c")
    assert table.slot_for("e") == 0 and table.slot_for("f") == 1
    assert table.slot_for("g") == 2  # each slot has two keys now: again the least recently used
    small = SlotTable(2, max_keys=2)
    small.slot_for("x"), small.slot_for("y"), small.slot_for("z")  # "x" is forgotten
    assert small.slot_for("x") in (0, 1)


# ----------------------------------------------------------------------------- the process


def test_starts_on_first_use_waits_until_healthy_and_restarts_when_dead(fake, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_LOADING_S", "0.4")
    server = llama_server.server_for(fake.path)
    started = time.monotonic()
    url = server.ensure_running()
    assert time.monotonic() - started >= 0.4  # it waited for /health
    assert url == f"http://127.0.0.1:{server.port}" and server.alive()
    assert llama_server._get(f"{url}/health", timeout=2)[0] == 200
    assert server.ensure_running() == url and server.starts == 1  # running: not started again
    [start] = fake.entries("argv")
    assert start["argv"][start["argv"].index("--host") + 1] == "127.0.0.1"
    first = server.pid
    os.kill(first, signal.SIGKILL)
    # Reaped, not only a zombie: a killed process whose threads are still exiting shows its leader
    # as "Z" while waitpid (and so alive()) still says it runs (seen once in a full run).
    assert server._process.wait(timeout=30) == -signal.SIGKILL
    assert server.ensure_running().startswith("http://127.0.0.1:")
    assert server.alive() and server.pid != first and server.starts == 2
    assert "MAD Lab starts llama-server" in server.log_path.read_text()


def test_a_server_that_exits_at_start_fails_naming_its_log(fake, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_EXIT", "3")
    server = llama_server.server_for(fake.path)
    with pytest.raises(LlamaServerError) as failed:
        server.ensure_running()
    message = str(failed.value)
    assert "exited with code 3 before it was ready" in message
    assert str(server.log_path) in message and "told to fail" in message
    assert Path(server.log_path).parent == Path(os.environ["MADLAB_HOME"]) / "logs"


def test_a_server_that_never_gets_ready_is_stopped_after_the_bounded_wait(fake, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_LOADING_S", "60")
    monkeypatch.setenv("MADLAB_LLAMA_START_TIMEOUT", "0.5")
    server = llama_server.server_for(fake.path)
    started: list[subprocess.Popen] = []  # the process itself: on a busy machine it may be stopped before it records
    monkeypatch.setattr(server, "_start", lambda port, start=server._start: started.append(start(port)) or started[-1])
    with pytest.raises(LlamaServerError, match=r"was not ready within 0.5 s; see its log"):
        server.ensure_running()
    assert len(started) == 1 and _wait_gone(started[0].pid) and not server.alive()


def test_a_server_started_from_a_short_lived_thread_outlives_it(fake):
    # PR_SET_PDEATHSIG fires when the forking *thread* ends: the supervisor forks from its own thread.
    server = llama_server.server_for(fake.path)
    thread = threading.Thread(target=server.ensure_running)
    thread.start()
    thread.join()
    time.sleep(0.5)
    assert server.alive()


_CHILD = textwrap.dedent("""
    import sys, time
    from mad_core.models import llama_server
    server = llama_server.server_for(sys.argv[1])
    server.ensure_running()
    print(server.pid, flush=True)
    if sys.argv[2] == "wait":
        time.sleep(60)
""")


def _run_child(fake, how: str) -> tuple[subprocess.Popen, int]:
    child = subprocess.Popen([sys.executable, "-c", _CHILD, fake.path, how], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).parents[2])
    return child, int(child.stdout.readline())


def test_the_server_stops_when_the_program_exits(fake):
    child, server_pid = _run_child(fake, "exit")
    assert child.wait(timeout=30) == 0
    assert _wait_gone(server_pid), "atexit did not stop the server"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_the_server_dies_with_a_killed_program(fake):
    child, server_pid = _run_child(fake, "wait")
    assert not _gone(server_pid)
    child.kill()  # SIGKILL: no atexit
    child.wait(timeout=10)
    assert _wait_gone(server_pid), "the server outlived the program that started it"


# ----------------------------------------------------------------------------- the local route


def test_a_local_model_is_reached_like_a_remote_one_with_its_agent_slot(fake):
    pieces: list[str] = []
    result = call_model(fake.model, ASK, temperature=0.3, seed=7, max_tokens=9, on_token=pieces.append,
                        metadata={"agent": "Agent 1", "debate_id": "d1", "round": 1, "kind": "discussion"})
    assert result.status == "ok", result.error
    assert pieces == ["one", " two", " three", " four", " five"] and result.text == "one two three four five"
    assert (result.prompt_tokens, result.completion_tokens) == (1234, 5)  # the server's own usage
    [request] = fake.entries("body")
    body = request["body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.3, 7, 9)
    assert body["cache_prompt"] is True and body["id_slot"] == 0
    assert "api_key" not in json.dumps(body) and "metadata" not in body
    for agent, debate in [("Agent 2", "d1"), ("Agent 1", "d1"), ("Agent 1", "d2")]:
        call_model(fake.model, ASK, metadata={"agent": agent, "debate_id": debate})
    assert [e["body"]["id_slot"] for e in fake.entries("body")] == [0, 1, 0, 2]
    call_model(fake.model, ASK)  # no agent: the server picks a slot
    assert "id_slot" not in fake.entries("body")[-1]["body"]
    assert len(fake.entries("argv")) == 1  # one server served every call


def test_a_server_that_dies_mid_call_is_restarted_and_the_call_retried(fake, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_DIE_AFTER", "2")
    retries: list[str] = []
    result = call_model(fake.model, ASK, on_retry=lambda attempt, error: retries.append(error),
                        sleep=lambda seconds: None)
    assert result.status == "ok" and result.text == "one two three four five", result.error
    assert result.attempts == 2 and len(retries) == 1
    assert len(fake.entries("argv")) == 2  # restarted
    pids = [entry["pid"] for entry in fake.entries("body")]
    assert len(pids) == 2 and pids[0] != pids[1]


def test_stopping_a_call_closes_its_stream(fake, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_TOKEN_DELAY", "0.05")
    pieces: list[str] = []
    result = call_model(fake.model, [{"role": "user", "content": " ".join(["word"] * 200)}],
                        on_token=pieces.append, should_stop=lambda: len(pieces) >= 3)
    assert result.status == "interrupted" and len(pieces) == 3
    log = llama_server.server_for(fake.path).log_path
    deadline = time.monotonic() + 10
    while "Broken pipe" not in log.read_text() and "Connection reset" not in log.read_text():
        assert time.monotonic() < deadline, "the server kept writing to a stream nobody reads"
        time.sleep(0.1)


def test_local_names_are_checked_without_starting_anything(fake, monkeypatch, tmp_path):
    assert validate_model_name(fake.model) is None
    assert validate_model_name(f"local/{fake.path}") is None  # local//abs/path.gguf
    assert "Unknown local model 'nope'" in validate_model_name("local/nope")
    assert not fake.entries("argv")
    assert not is_serial(fake.model)
    nowhere = tmp_path / "empty"
    nowhere.mkdir()
    monkeypatch.setenv("MADLAB_LLAMA_SERVER", "")
    monkeypatch.setattr(sys, "prefix", str(nowhere))
    monkeypatch.setenv("PATH", str(nowhere))
    assert "llama-server" in validate_model_name(fake.model) and "scripts/setup.sh" in validate_model_name(fake.model)
    result = call_model(fake.model, ASK)
    assert result.status == "failed" and "LlamaServerError" in result.error and result.attempts == 1


def test_llama_cpp_is_never_imported_in_process():
    # torch and llama.cpp must never share a process: llama.cpp runs only in llama-server.
    package = Path(__file__).parents[2] / "mad_core"
    importing = [str(path) for path in package.rglob("*.py")
                 if re.search(r"^\s*(import|from)\s+llama_cpp\b", path.read_text(), re.MULTILINE)]
    assert not importing


# ----------------------------------------------------------------------------- a busy machine: bounds per piece

WORDS = [{"role": "user", "content": " ".join(f"w{i:02d}" for i in range(30))}]  # echoed as 30 pieces


def test_a_local_stream_that_keeps_coming_is_not_cut_by_a_whole_reply_bound(fake, monkeypatch, script):
    """30 pieces 0.1 s apart (3 s) with an idle bound of 1.5 s: longer than the 1 s whole-reply
    bound that still cuts a remote model's attempt, and not cut."""
    monkeypatch.setenv("FAKE_LLAMA_TOKEN_DELAY", "0.1")
    policy = RetryPolicy(max_attempts=1, timeout=1.0, local_idle=1.5, local_total=60)
    pieces: list[str] = []
    result = call_model(fake.model, WORDS, on_token=pieces.append, retry=policy)
    assert (result.status, result.error, result.attempts) == ("ok", None, 1)
    assert len(pieces) == 30 and result.text == WORDS[0]["content"]
    assert result.latency_s - result.first_token_s > 1.0  # the stream itself outlasted the old bound
    # Must not change: the same policy still bounds a non-local model's whole reply.
    remote, _ = script([WORDS[0]["content"]], token_delay=0.1)
    cut = call_model(remote, WORDS, retry=policy)
    assert cut.status == "failed" and cut.error.startswith("Timeout: the reply stalled after ")
    assert cut.error.endswith("and did not finish within 1 s (1 attempt)")


def test_a_local_stream_that_goes_silent_is_cut_after_the_idle_bound_and_retried(fake, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_STALL_AFTER", "3")  # alive, but nothing after the 3rd piece
    retries: list[tuple[int, str]] = []
    result = call_model(fake.model, WORDS, retry=RetryPolicy(max_attempts=2, base_delay=0, local_idle=0.5, local_total=60),
                        on_retry=lambda n, error: retries.append((n, error)))
    assert (result.status, result.attempts, result.text) == ("failed", 2, "w00 w01 w02")
    assert result.error == "Timeout: no new piece for 0.5 s (after 3 pieces) (2 attempts)"
    assert retries == [(1, "Timeout: no new piece for 0.5 s (after 3 pieces)")]
    assert len(fake.entries("body")) == 2  # asked again, then given up: not waiting for the 60 s cap
    assert result.latency_s < 30


def test_a_slow_first_piece_gets_its_own_allowance_and_the_whole_reply_a_cap(fake, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_PREFILL_S", "1")  # a long prefill on a busy machine
    monkeypatch.setenv("FAKE_LLAMA_TOKEN_DELAY", "0.1")
    assert call_model(fake.model, ASK).status == "ok"  # the server is up: its start is not measured below
    patient = call_model(fake.model, ASK, retry=RetryPolicy(max_attempts=1, local_first_piece=30, local_idle=0.5))
    assert (patient.status, patient.text) == ("ok", "one two three four five")  # 1 s to the first piece: not idle
    hasty = call_model(fake.model, ASK, retry=RetryPolicy(max_attempts=1, local_first_piece=0.3, local_idle=30))
    assert (hasty.status, hasty.error) == ("failed", "Timeout: no first piece within 0.3 s (1 attempt)")
    capped = call_model(fake.model, WORDS, retry=RetryPolicy(max_attempts=1, local_idle=5, local_total=2))
    assert capped.status == "failed" and 0 < len(capped.text.split()) < 30
    assert re.fullmatch(r"Timeout: the whole reply passed the 2 s cap \(after \d+ pieces?\) \(1 attempt\)", capped.error)


def test_the_local_bounds_come_from_the_environment_and_a_bad_one_fails_the_call_saying_so(fake, monkeypatch):
    monkeypatch.setenv("MADLAB_LOCAL_IDLE_S", "7")
    monkeypatch.setenv("MADLAB_LOCAL_TOTAL_S", "inf")
    limits = RetryPolicy().limits(fake.model)
    assert (limits.first_piece, limits.idle, limits.total, limits.repeats) == (300.0, 7.0, None, 100)
    assert RetryPolicy(timeout=5).limits("openai/gpt-4o-mini") == StreamLimits(total=5, repeats=100)
    monkeypatch.setenv("MADLAB_LOCAL_IDLE_S", "soon")
    result = call_model(fake.model, ASK)
    assert (result.status, result.attempts) == ("failed", 0)
    assert "MADLAB_LOCAL_IDLE_S='soon' is not a number of seconds" in result.error
    assert not fake.entries("argv")  # nothing was started


def test_a_debate_on_a_silent_local_model_records_the_bound_as_the_turns_cause(fake, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_LLAMA_STALL_AFTER", "2")
    monkeypatch.setenv("MADLAB_LOCAL_IDLE_S", "0.5")
    config = DebateConfig.from_dict({"question": "What is the capital of France?", "rounds": 1, "max_rounds": 1,
                                     "agents": [{"label": f"Agent {i}", "model": fake.model} for i in (1, 2)],
                                     "retry_attempts": 2, "retry_base_delay": 0, "timeout_s": 0.2})
    engine = DebateEngine(config, store=Store(tmp_path / "db.sqlite"))
    [end] = [e for e in engine.run() if isinstance(e, DebateFinished)]
    assert end.status == "failed"
    with Store(tmp_path / "db.sqlite") as store:
        turns = store.turns(engine.debate_id)
        assert turns and {t.status for t in turns} == {"failed"}
        for turn in turns:  # the idle bound, not the 0.2 s whole-reply timeout_s, ended each attempt
            assert turn.error == "Timeout: no new piece for 0.5 s (after 2 pieces) (2 attempts)"
            assert turn.attempts == 2
        assert "no new piece for 0.5 s" in store.get_debate(engine.debate_id)["reason"]
