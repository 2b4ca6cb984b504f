"""A stand-in for llama.cpp's ``llama-server`` binary in tests (standard library only).

The supervisor starts it exactly as it starts the real binary (``fake_binary`` in
test_llama_server.py writes an executable wrapper that runs this file). It answers
``--list-devices`` (no devices) and ``--version``; otherwise it serves on ``--host`` /
``--port``:
  GET  /health                503 for FAKE_LLAMA_LOADING_S seconds, then 200,
  GET  /metrics               ``llamacpp:prompt_tokens_total``: the prompts' words so far,
  POST /v1/chat/completions   the last message echoed word by word as server-sent events,
                              then a chunk with ``usage`` (prompt_tokens 1234) and no choices.
Environment:
  FAKE_LLAMA_RECORD       a file that gets one JSON line per start ({"argv", "pid"}) and
                          per request ({"body"}),
  FAKE_LLAMA_EXIT         exit at once with this code (a server that never gets ready),
  FAKE_LLAMA_DIE_AFTER    N: the first process to serve a request dies after N pieces,
  FAKE_LLAMA_TOKEN_DELAY  seconds between pieces,
  FAKE_LLAMA_PREFILL_S    seconds before the first piece (a long prefill on a busy machine),
  FAKE_LLAMA_STALL_AFTER  N: after N pieces, send nothing more until the client goes away.
Not a test module (pytest collects only ``test_*.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import select
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROMPT_TOKENS = 1234
RECORD = os.environ.get("FAKE_LLAMA_RECORD")
_started = time.monotonic()
_prompt_words = 0


def record(entry: dict) -> None:
    if RECORD:
        with open(RECORD, "a") as out:
            out.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # replies streamed in chunks, as llama-server does: a crash truncates them
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        sys.stderr.write("fake llama-server: " + format % args + "\n")

    def _send(self, status: int, body: str, content_type: str = "application/json") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/health":
            loading = time.monotonic() - _started < float(os.environ.get("FAKE_LLAMA_LOADING_S", "0"))
            self._send(503 if loading else 200, '{"status": "%s"}' % ("loading" if loading else "ok"))
        elif self.path == "/metrics":
            self._send(200, f"# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total {_prompt_words}\n",
                       "text/plain")
        else:
            self._send(404, "{}")

    def do_POST(self):  # noqa: N802 - http.server's name
        global _prompt_words
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        record({"body": body, "pid": os.getpid()})
        _prompt_words += sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        words = str(body["messages"][-1]["content"]).split()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        die_after = int(os.environ.get("FAKE_LLAMA_DIE_AFTER", "-1"))
        stall_after = int(os.environ.get("FAKE_LLAMA_STALL_AFTER", "-1"))
        marker = f"{RECORD}.died"
        time.sleep(float(os.environ.get("FAKE_LLAMA_PREFILL_S", "0")))
        for index, word in enumerate(words):
            if index == die_after and not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(9)  # the server crashes mid-reply
            if index == stall_after:  # alive but silent: wait until the client hangs up
                select.select([self.connection], [], [], 600)
                self.close_connection = True
                return
            delta = {"content": word if index == 0 else " " + word}
            self._event({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]})
            time.sleep(float(os.environ.get("FAKE_LLAMA_TOKEN_DELAY", "0")))
        self._event({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": len(words),
                 "total_tokens": PROMPT_TOKENS + len(words)}
        self._event({"object": "chat.completion.chunk", "choices": [], "usage": usage})
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")  # the end of the chunked body

    def _event(self, chunk: dict) -> None:
        chunk = {"id": "fake", "created": 0, "model": "fake", **chunk}
        self._write_chunk(f"data: {json.dumps(chunk)}\n\n".encode())

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def main() -> None:
    if "--list-devices" in sys.argv:
        print("Available devices:")
        return
    if "--version" in sys.argv:
        print("version: 0 (fake)")
        return
    if os.environ.get("FAKE_LLAMA_EXIT"):
        print("fake llama-server: told to fail", file=sys.stderr)
        sys.exit(int(os.environ["FAKE_LLAMA_EXIT"]))
    parser = argparse.ArgumentParser()
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    args, _ = parser.parse_known_args()
    record({"argv": sys.argv[1:], "pid": os.getpid()})
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main()
