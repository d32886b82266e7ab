"""The operator's web dashboard at /ui: runs, tasks, live commands (SSE), results, trajectories.

Server-rendered (Jinja2), a little plain JavaScript, plots drawn by matplotlib; every asset is
served from ``static/`` (no CDN, works offline).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from services.green.ui import compare, live, login, pages, purple_view, runs
from services.green.ui.auth import LoginRequired, Sessions, login_url
from services.green.ui.facts import TaskFacts
from services.green.ui.headers import SecurityHeaders
from services.green.ui.templating import HERE, render


async def _to_login(request: Request, exc: Exception) -> RedirectResponse:
    assert isinstance(exc, LoginRequired)
    return RedirectResponse(login_url(exc.next_url), status_code=303)


async def _http_error(request: Request, exc: Exception) -> Response:
    """A /ui page's 4xx as an HTML page (streams, and everything outside /ui, keep JSON)."""
    assert isinstance(exc, StarletteHTTPException)
    page = request.url.path.startswith("/ui") and not request.url.path.endswith("/stream")
    if not page or exc.status_code == 401:
        return await http_exception_handler(request, exc)
    title = {404: "Not found", 422: "Not understood", 403: "Refused"}.get(exc.status_code, "Error")
    return render(
        request, "error.html", exc.status_code, code=exc.status_code, title=title, detail=exc.detail
    )


async def _favicon() -> FileResponse:
    """The dashboard's icon where browsers ask for it first (no 404 in a browser's console)."""
    return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml")


def mount_ui(app: FastAPI) -> None:
    """Add /ui to green's app (after ``app.state.orchestrator`` and ``auth`` are set)."""
    app.state.ui_sessions = Sessions(app.state.auth.derive_key("ui-session"))
    app.add_middleware(SecurityHeaders)
    app.state.ui_facts = TaskFacts(app.state.orchestrator)
    app.add_exception_handler(LoginRequired, _to_login)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.mount("/ui/static", StaticFiles(directory=HERE / "static"), name="ui-static")
    app.add_api_route("/favicon.ico", _favicon, include_in_schema=False)
    for module in (login, live, runs, compare, pages, purple_view):
        app.include_router(module.router)
