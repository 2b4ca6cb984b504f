"""Stand-ins on loopback for the Hugging Face Hub's file endpoints and for an Ollama server (standard
library only). Not a test module (pytest collects only ``test_*.py``).

``FakeHub``: ``HEAD``/``GET /{owner}/{repo}/resolve/{revision}/{filename}`` as ``hf_hub_download`` asks
for them: ``X-Repo-Commit``, ``ETag`` (the file's sha256, as for an LFS file), ``Content-Length``, and
``Range: bytes=N-`` answered with 206. ``cut_first(n)`` makes the next GETs send only n bytes of the
body and close the connection (a network that goes away mid-file); ``pause_after`` makes a GET send that
many bytes and wait for ``release`` (a download under way). Every request is recorded in
``requests`` as (method, path, Range header).

``FakeOllama``: ``GET /api/tags`` lists ``models`` (counted in ``tag_requests``); ``POST /api/generate`` and ``POST /api/chat``
stream ``reply`` word by word as Ollama's newline-delimited JSON (or answer it whole when
``"stream": false``); the request bodies are kept in ``bodies``.
"""
from __future__ import annotations

import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server:
    """A ThreadingHTTPServer on 127.0.0.1 (a free port) serving in a daemon thread."""

    handler: type[BaseHTTPRequestHandler]

    def __init__(self) -> None:
        owner = self

        class Handler(self.handler):  # type: ignore[name-defined,misc]
            server_owner = owner

            def setup(self) -> None:
                super().setup()
                owner.connections.append(self.connection)

        self.connections: list[socket.socket] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and drop the open (kept-alive) connections too: the server is gone."""
        self.httpd.shutdown()
        self.httpd.server_close()
        for connection in self.connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass


class _HubHandler(_Quiet):
    server_owner: FakeHub

    def _file(self) -> tuple[str, bytes] | None:
        hub = self.server_owner
        hub.requests.append((self.command, self.path, self.headers.get("Range")))
        repo, _, rest = self.path.lstrip("/").partition("/resolve/")
        revision, _, filename = rest.partition("/")
        body = hub.files.get((repo, revision, filename))
        if body is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return revision, body

    def _head(self, status: int, revision: str, body: bytes, length: int) -> None:
        self.send_response(status)
        self.send_header("X-Repo-Commit", revision)
        self.send_header("ETag", f'"{hashlib.sha256(body).hexdigest()}"')
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")

    def do_HEAD(self) -> None:  # noqa: N802
        found = self._file()
        if found:
            self._head(200, found[0], found[1], len(found[1]))
            self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        found = self._file()
        if not found:
            return
        revision, body = found
        start = 0
        wanted = self.headers.get("Range")
        if wanted and wanted.startswith("bytes=") and wanted.endswith("-"):
            start = int(wanted[len("bytes="):-1])
        self._head(206 if start else 200, revision, body, len(body) - start)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.end_headers()
        hub = self.server_owner
        with hub.lock:
            cut = hub.cuts.pop(0) if hub.cuts else None
        if cut is not None:
            self.wfile.write(body[start:start + cut])
            self.wfile.flush()
            self.close_connection = True  # the rest never comes: the client sees a short body
            return
        if hub.pause_after is not None:
            self.wfile.write(body[start:start + hub.pause_after])
            self.wfile.flush()
            hub.release.wait(30)
            start += hub.pause_after
        self.wfile.write(body[start:])


class FakeHub(_Server):
    """The Hub's resolve endpoint for the files put in ``files[(repo, revision, filename)] = bytes``."""

    handler = _HubHandler

    def __init__(self) -> None:
        self.files: dict[tuple[str, str, str], bytes] = {}
        self.requests: list[tuple[str, str, str | None]] = []
        self.cuts: list[int] = []
        self.pause_after: int | None = None  # send this many bytes, then wait for `release`
        self.release = threading.Event()
        self.lock = threading.Lock()
        super().__init__()

    def cut_first(self, size: int, times: int = 1) -> None:
        """The next ``times`` GETs send ``size`` bytes of the body, then close the connection."""
        with self.lock:
            self.cuts.extend([size] * times)

    def gets(self) -> list[tuple[str, str | None]]:
        return [(path, ranged) for method, path, ranged in self.requests if method == "GET"]


class _OllamaHandler(_Quiet):
    server_owner: FakeOllama

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        for header, value in (("Content-Type", kind), ("Content-Length", str(len(body)))):
            self.send_header(header, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if self.path != "/api/tags":
            self._send(404, b'{"error": "not found"}')
            return
        self.server_owner.tag_requests += 1
        self._send(200, json.dumps({"models": self.server_owner.models}).encode())

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        ollama = self.server_owner
        ollama.bodies.append((self.path, request))
        if self.path not in ("/api/generate", "/api/chat"):
            self._send(404, b'{"error": "not found"}')
            return
        chat = self.path == "/api/chat"

        def piece(text: str, done: bool) -> dict:
            out: dict = {"model": request.get("model"), "created_at": "2025-01-01T00:00:00Z", "done": done}
            if chat:
                out["message"] = {"role": "assistant", "content": text}
            else:
                out["response"] = text
            if done:
                out.update(done_reason="stop", prompt_eval_count=7, eval_count=len(ollama.reply.split()))
            return out

        if request.get("stream") is False:
            self._send(200, json.dumps(piece(ollama.reply, True)).encode())
            return
        words = ollama.reply.split(" ")
        lines = [piece(w if i == 0 else " " + w, False) for i, w in enumerate(words)] + [piece("", True)]
        self._send(200, b"".join(json.dumps(line).encode() + b"\n" for line in lines), "application/x-ndjson")


class FakeOllama(_Server):
    """An Ollama server with ``models`` pulled that answers every prompt with ``reply``."""

    handler = _OllamaHandler

    def __init__(self, models: list[dict], reply: str) -> None:
        self.models = models
        self.reply = reply
        self.bodies: list[tuple[str, dict]] = []
        self.tag_requests = 0
        super().__init__()


REVISION = "0123456789abcdef0123456789abcdef01234567"


def serve_curated(monkeypatch, folder, hub: FakeHub, blob: bytes, *, alias: str = "tiny-test",
                  name: str = "Tiny test model", served: bytes | None = None) -> dict:
    """Point MAD Lab at ``hub`` with a one-entry curated list pinning ``blob`` (its sha256 and size);
    the hub serves ``served`` (default: ``blob``) for it. Network settings as on a machine with a
    network; huggingface_hub's resume pause and download chunk made test-sized. Returns the entry."""
    import huggingface_hub.constants
    import huggingface_hub.file_download
    from types import SimpleNamespace

    from mad_core.models import downloads

    entry = {"alias": alias, "name": name, "repo": "madlab-tests/Tiny-GGUF", "filename": "tiny.Q4_K_M.gguf",
             "revision": REVISION, "sha256": hashlib.sha256(blob).hexdigest(), "size": len(blob),
             "licence": "Apache-2.0", "description": "A few random bytes standing for a GGUF.", "source": "test"}
    hub.files[(entry["repo"], REVISION, entry["filename"])] = blob if served is None else served
    path = folder / "curated.json"
    path.write_text(json.dumps({"models": [entry]}))
    monkeypatch.setenv(downloads.CATALOGUE_ENV, str(path))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", 64 * 1024)
    monkeypatch.setattr(huggingface_hub.file_download, "time", SimpleNamespace(sleep=lambda seconds: None))
    downloads.forget_probes()
    return entry
