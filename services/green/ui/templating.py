"""The Jinja2 environment of the dashboard and its filters."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from services.green.ui.auth import auth_on, csrf_token

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")


def _when(value: datetime | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%d %H:%M:%S")


def _score(value: Any) -> str:
    if value is None:
        return "-"
    value = float(value)
    return f"{value:.2f}" if value not in (0.0, 1.0) else f"{value:g}"


templates.env.filters["when"] = _when
templates.env.filters["score"] = _score


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("auth_on", auth_on(request))
    context.setdefault("csrf", csrf_token(request))
    return templates.TemplateResponse(request, name, context, status_code=status_code)
