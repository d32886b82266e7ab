"""The Jinja2 environment of the dashboard and its filters."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from services.green.ui.auth import auth_on, csrf_token
from services.shared.stats import pass_k_metrics
from services.shared.text import escape_controls

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


def _signed(value: Any, digits: int = 3) -> str:
    """A difference with its sign, never ``-0.000`` (a value that rounds to 0 is ``+0.000``)."""
    if value is None:
        return "-"
    rounded = round(float(value), digits) + 0.0  # -0.0 + 0.0 is 0.0
    return f"{rounded:+.{digits}f}"


PAGE_KEEPS = "\t\n\r"
"""The control characters a page shows as they are (a ``<pre>`` of command output breaks lines
at them); every other one is written as an escape."""


def shown(value: Any) -> Any:
    """Every ``{{ ... }}`` of every template passes through here before autoescape (which
    covers HTML's ``<&>"'`` only): what an agent wrote (commands, output, its reason, the source
    it changed) shows an ESC, a NUL or a bidirectional control such as U+202E as an escape,
    never as an instruction to the browser's text layout."""
    if isinstance(value, Markup):
        return Markup(escape_controls(value, PAGE_KEEPS))
    return escape_controls(value, PAGE_KEEPS) if isinstance(value, str) else value


templates.env.finalize = shown
templates.env.filters["when"] = _when
templates.env.filters["score"] = _score
templates.env.filters["signed"] = _signed
templates.env.globals["pass_k_metrics"] = pass_k_metrics


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("auth_on", auth_on(request))
    context.setdefault("csrf", csrf_token(request))
    return templates.TemplateResponse(request, name, context, status_code=status_code)
