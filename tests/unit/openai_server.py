"""A tiny OpenAI-compatible chat server for tests: ``POST /v1/chat/completions`` on loopback.

``OpenAIServer(name, reply=...)`` answers every chat completion with ``reply(messages)``
(default: a sentence naming the server), streamed as server-sent events (``data: {...}``
chunks of ``chat.completion.chunk`` objects, one word piece each; with
``stream_options.include_usage`` a last chunk with ``usage`` and no choices; then
``data: [DONE]``), or as one ``chat.completion`` object when ``stream`` is false.
``status`` / ``error_body`` make it answer every request with that HTTP error instead
(``{received_key}`` in the body is replaced by the bearer token it got, as a careless
server might echo it). ``malformed_at=k`` sends the k-th piece (0-based) of each streamed
reply as an event that is not JSON (cut off mid-object, as a proxy that mangles a stream
would), so that piece's text never arrives; ``malformed_calls`` (None: every call) limits
that to the first n streamed calls. ``requests`` records each request's JSON body and headers.

Used as a context manager it starts on a free port (``.port``, ``.api_base``) in a
daemon thread and stops at exit. Standard library only; no model, no network beyond
127.0.0.1. Not a test module (pytest collects only ``test_*.py``).
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [word if i == 0 else " " + word for i, word in enumerate(words)]


class OpenAIServer:
    """One fake OpenAI-compatible endpoint (see the module docstring)."""

    def __init__(self, name: str, reply: Callable[[list[dict]], str] | None = None, *, token_delay: float = 0.0,
                 status: int | None = None, error_body: str = "", host: str = "127.0.0.1",
                 malformed_at: int | None = None, malformed_calls: int | None = None):
        self.name = name
        self.reply = reply or (lambda messages: f"This is {name} speaking. Final answer: 4")
        self.token_delay = token_delay
        self.status = status
        self.error_body = error_body
        self.malformed_at = malformed_at
        self.malformed_calls = malformed_calls
        self._streamed = 0
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "OpenAIServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"openai-server-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "OpenAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)

    # -- serving -------------------------------------------------------------------------
    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    body = {"object": "list", "data": [{"id": server.name, "object": "model"}]}
                    self._send(200, json.dumps(body).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, b'{"error": {"message": "bad json"}}')
                    return
                with server._lock:
                    server.requests.append({"body": body, "headers": dict(self.headers)})
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                if server.status is not None:
                    token = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
                    message = server.error_body.replace("{received_key}", token) or f"{server.name} failed"
                    error = {"error": {"message": message, "type": "server_error", "code": server.status}}
                    self._send(server.status, json.dumps(error).encode())
                    return
                messages = body.get("messages") or []
                text = str(server.reply(messages))
                usage = {"prompt_tokens": sum(len(str(m.get("content") or "").split()) for m in messages),
                         "completion_tokens": len(_pieces(text))}
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                model = str(body.get("model") or server.name)
                if body.get("stream"):
                    self._stream(model, text, usage, bool((body.get("stream_options") or {}).get("include_usage")))
                else:
                    answer = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                              "created": int(time.time()), "model": model, "usage": usage,
                              "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": text}}]}
                    self._send(200, json.dumps(answer).encode())

            def _stream(self, model: str, text: str, usage: dict, include_usage: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
                with server._lock:
                    server._streamed += 1
                    damaged = server.malformed_calls is None or server._streamed <= server.malformed_calls
                broken_at = server.malformed_at if damaged else None

                def event(choices: list, **extra) -> None:
                    chunk = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
                             "choices": choices, **extra}
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    self.wfile.flush()

                try:
                    for i, piece in enumerate(_pieces(text)):
                        if i and server.token_delay:
                            time.sleep(server.token_delay)
                        delta = {"content": piece, **({"role": "assistant"} if i == 0 else {})}
                        if i == broken_at:  # the event is cut off mid-object: not JSON
                            whole = json.dumps({"id": ident, "choices": [{"index": 0, "delta": delta}]})
                            self.wfile.write(b"data: " + whole[: len(whole) // 2].encode() + b"\n\n")
                            continue
                        event([{"index": 0, "delta": delta, "finish_reason": None}])
                    event([{"index": 0, "delta": {}, "finish_reason": "stop"}])
                    if include_usage:
                        event([], usage=usage)
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (a stop, a timeout)
                self.close_connection = True

        return Handler
