"""GET/POST /ui/login and POST /ui/logout: the token is pasted once, a session cookie follows."""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from services.green.ui.auth import (
    COOKIE,
    SESSION_TTL_S,
    check_form,
    safe_next,
    sessions,
    token_matches,
)
from services.green.ui.templating import render

router = APIRouter(prefix="/ui", include_in_schema=False)


async def form_fields(request: Request, max_bytes: int = 64 * 1024) -> dict[str, str]:
    """An urlencoded form body as {name: first value}."""
    body = await request.body()
    if len(body) > max_bytes:
        return {}
    parsed = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {k: v[0] for k, v in parsed.items()}


@router.get("/login", response_class=HTMLResponse)
async def login_page(request: Request, next: str = "/ui") -> Response:
    return render(request, "login.html", next=safe_next(next), error=None)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    form = await form_fields(request)
    target = safe_next(form.get("next"))
    given = form.get("token", "").strip()
    if not given or not token_matches(request, given):
        return render(request, "login.html", 401, next=target, error="That token is not right.")
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        sessions(request).create(),
        max_age=int(SESSION_TTL_S),
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    check_form(request, await form_fields(request))
    sessions(request).drop(request.cookies.get(COOKIE))
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(COOKIE, path="/ui")
    return response
