"""Green's answer when it fails: always a sentence in JSON (an HTML page on the dashboard), never
the plain-text ``Internal Server Error`` nor the error's own text (which may name hosts and
libraries; it goes to green's log).

- the database away (refused or dropped connections, a locked or read-only SQLite file, a full
  connection pool): ``503`` with ``Retry-After``;
- any other failure of green: ``500``.

The A2A endpoint answers JSON-RPC errors instead (services/green/a2a/gate.py).
"""

from __future__ import annotations

import html

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from services.green.store.errors import OPERATOR_SENTENCE, RETRY_AFTER_S, UNREACHABLE
from services.shared.logging import get_logger

log = get_logger("services.green.api")

INTERNAL_SENTENCE = "green had an internal error; it is in green's log"


def _answer(request: Request, status: int, sentence: str, headers: dict[str, str]) -> Response:
    if request.url.path.startswith("/ui") and "text/html" in request.headers.get("accept", ""):
        page = f"<!doctype html><title>green: {status}</title><p>{html.escape(sentence)}</p>"
        return HTMLResponse(page, status_code=status, headers=headers)
    return JSONResponse({"detail": sentence}, status_code=status, headers=headers)


async def database_unreachable(request: Request, exc: Exception) -> Response:
    log.error("api.database_unreachable", path=request.url.path, error=str(exc))
    return _answer(request, 503, OPERATOR_SENTENCE, {"Retry-After": str(RETRY_AFTER_S)})


async def internal_error(request: Request, exc: Exception) -> Response:
    log.error("api.internal_error", path=request.url.path, error=f"{type(exc).__name__}: {exc}")
    return _answer(request, 500, INTERNAL_SENTENCE, {})


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""
    for error in UNREACHABLE:
        app.add_exception_handler(error, database_unreachable)
    app.add_exception_handler(Exception, internal_error)
