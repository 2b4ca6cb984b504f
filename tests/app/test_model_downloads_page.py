"""The Models page's better local models: the curated list with sizes and licences, "no network" said at
once offline, a download from a fake Hub on loopback that ends usable as local/NAME with its speed, a
checksum that differs said in the row, and an Ollama server's models listed, tested, and gone."""
from __future__ import annotations

import os
import time

import pytest
from app_helpers import MODELS, app, keys, texts

from mad_core.models import downloads, installer, known_models, ollama
from madlab_ui.common import md_escape
from tests.unit.fake_hub import FakeHub, FakeOllama, serve_curated

BLOB = os.urandom(150_000)


@pytest.fixture
def hub():
    server = FakeHub()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def no_ollama(monkeypatch):
    monkeypatch.setenv("OLLAMA_API_BASE", "http://127.0.0.1:9")  # nothing listens on the discard port
    ollama.forget()
    yield
    ollama.forget()


def _fake_speed(model: str):
    return 42.5, None


def test_the_curated_list_shows_size_licence_and_says_no_network_at_once():
    at = app(MODELS)
    rows = [texts(at.get_by_key(f"curated_{i}")) for i in range(len(downloads.curated()))]
    assert [row.split("\n")[0] for row in rows] == [f"**{md_escape(e.name)}**" for e in downloads.curated()]
    assert rows[1].split("\n")[1:3] == ["491 MB", md_escape("Apache-2.0")] and rows[1].endswith("not downloaded")
    assert rows[2].split("\n")[1:3] == ["808 MB", md_escape("Llama 3.2 Community License")]
    assert texts(at.get_by_key("download_network")) == ("no network: HF_HUB_OFFLINE is set (start MAD Lab with "
                                                        "HF_HUB_OFFLINE=0 to download models).")
    assert all(at.button(key=f"download_{i}").disabled for i in range(len(rows)))  # nothing can start


def test_a_download_from_the_hub_ends_usable_as_a_local_model_with_its_speed(hub, monkeypatch, tmp_path):
    serve_curated(monkeypatch, tmp_path, hub, BLOB, alias="page-test", name="Page test model")
    monkeypatch.setattr(installer, "measure_speed", _fake_speed)
    at = app(MODELS)
    assert "download_network" not in keys(at)  # the fake hub answers
    assert "not downloaded" in texts(at.get_by_key("curated_0"))
    hub.pause_after = 100_000  # the download stays under way until released
    at.button(key="download_0").click().run()
    job = installer.job("page-test")
    deadline = time.monotonic() + 30  # the thread reports its first 64 KiB piece (no event to wait on)
    while job.done_bytes < 65536 and time.monotonic() < deadline:
        time.sleep(0.02)
    at.run()  # what the fragment draws every second while the download runs
    bar = at.get_by_key("download_progress_page-test").get("progress")[0]
    assert bar.value == int(65536 / len(BLOB) * 100)
    assert bar.proto.text == md_escape("Downloading Page test model: 0.1 MB of 0.1 MB")
    assert at.button(key="download_0").disabled  # one download of a model at a time
    hub.release.set()
    assert installer.job("page-test").wait(30)
    at.run()
    assert not at.exception, at.exception
    row = texts(at.get_by_key("curated_0"))
    assert "`local/page-test`" in row and md_escape("42.5 tokens/s on this machine") in row
    assert texts(at.get_by_key("download_result_0")) == md_escape(
        "Page test model is ready as local/page-test (42.5 tokens/s on this machine).")
    assert at.button(key="download_0").disabled  # downloaded: nothing more to click
    assert "`local/page-test`" in texts(at.get_by_key("model_table"))  # and offered like any local model
    installer.forget("page-test")


def test_a_checksum_mismatch_is_said_in_the_row_and_nothing_is_usable(hub, monkeypatch, tmp_path):
    serve_curated(monkeypatch, tmp_path, hub, BLOB, alias="page-bad", name="Page bad model", served=BLOB[::-1])
    monkeypatch.setattr(installer, "measure_speed", _fake_speed)
    at = app(MODELS)
    at.button(key="download_0").click().run()
    assert installer.job("page-bad").wait(30)
    at.run()
    error = texts(at.get_by_key("download_result_0"))
    assert error.startswith(md_escape("Checksum mismatch for Page bad model: the file has sha256 "))
    assert "not downloaded" in texts(at.get_by_key("curated_0"))
    assert "local/page-bad" not in texts(at.get_by_key("model_table"))  # must not happen: offered anyway
    installer.forget("page-bad")


def test_an_ollama_servers_models_are_listed_tested_and_said_gone(monkeypatch):
    server = FakeOllama([{"name": "tiny:1b", "size": 807_694_464, "details": {"parameter_size": "1.2B"}}],
                        "Hello from the fake Ollama server")
    monkeypatch.setenv("OLLAMA_API_BASE", server.url)
    ollama.forget()
    try:
        at = app(MODELS)
        frame = at.get_by_key("ollama_section").get("dataframe")[0].value
        assert list(frame["model"]) == ["ollama/tiny:1b"] and list(frame["parameters"]) == ["1.2B"]
        index = [m["name"] for m in known_models()].index("ollama/tiny:1b")  # the page's row order
        assert "`ollama/tiny:1b`" in texts(at.get_by_key(f"model_{index}"))
        at.button(key=f"test_{index}").click().run()
        result = texts(at.get_by_key(f"test_result_{index}"))
        assert "ok in" in result and "Hello from the fake Ollama server" in result
    finally:
        server.stop()
    monkeypatch.setattr(ollama, "TTL_S", 0.0)
    at.run()
    said = texts(at.get_by_key("ollama_section"))
    assert said.startswith(f"The Ollama server at {server.url} stopped answering (")
    assert "`ollama/tiny:1b`" not in texts(at.get_by_key("model_table"))


def test_no_ollama_server_is_said_in_its_section():
    at = app(MODELS)
    assert texts(at.get_by_key("ollama_section")).startswith("No Ollama server answers at http://127.0.0.1:9 (")
