"""The operator's web dashboard at /ui: runs, tasks, live commands (SSE), results, trajectories.

Server-rendered (Jinja2), a little plain JavaScript, plots drawn by matplotlib; every asset is
served from ``static/`` (no CDN, works offline).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from services.green.ui import live, login, pages, purple_view, runs
from services.green.ui.auth import LoginRequired, Sessions, login_url
from services.green.ui.facts import TaskFacts
from services.green.ui.templating import HERE


async def _to_login(request: Request, exc: Exception) -> RedirectResponse:
    assert isinstance(exc, LoginRequired)
    return RedirectResponse(login_url(exc.next_url), status_code=303)


def mount_ui(app: FastAPI) -> None:
    """Add /ui to green's app (after ``app.state.orchestrator`` and ``api_token`` are set)."""
    app.state.ui_sessions = Sessions()
    app.state.ui_facts = TaskFacts(app.state.orchestrator)
    app.add_exception_handler(LoginRequired, _to_login)
    app.mount("/ui/static", StaticFiles(directory=HERE / "static"), name="ui-static")
    for module in (login, live, runs, pages, purple_view):
        app.include_router(module.router)
