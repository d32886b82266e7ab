"""The dashboard's credential check: the operator's API token, or a session cookie it bought.

The operator pastes the token once on the login page; a random session id (kept in this
process's memory, never the token) goes into an HttpOnly, SameSite=Strict cookie. Every page,
stream and JSON route of /ui accepts that cookie or the REST API's ``Authorization: Bearer``
header. With no token configured (auth off), /ui is open.
"""

from __future__ import annotations

import secrets
import time
from urllib.parse import quote

from fastapi import HTTPException, Request, status

COOKIE = "arena_ui_session"
SESSION_TTL_S = 12 * 3600.0


class LoginRequired(Exception):
    """An anonymous request for a page: answered with a redirect to the login page."""

    def __init__(self, next_url: str) -> None:
        self.next_url = next_url


def expected_token(request: Request) -> str | None:
    """The operator credential /ui checks against (None: authentication is off)."""
    return request.app.state.api_token


def token_matches(request: Request, given: str) -> bool:
    """Whether ``given`` is the operator credential (constant-time)."""
    token = expected_token(request)
    return token is None or secrets.compare_digest(given.encode(), token.encode())


class Sessions:
    """Session ids of logged-in browsers, with expiry. In memory: with several green replicas
    behind one address, use sticky sessions (or log in once per replica)."""

    def __init__(self, ttl_s: float = SESSION_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._expiry: dict[str, float] = {}

    def create(self) -> str:
        now = time.monotonic()
        self._expiry = {k: v for k, v in self._expiry.items() if v > now}
        sid = secrets.token_urlsafe(32)
        self._expiry[sid] = now + self.ttl_s
        return sid

    def valid(self, sid: str | None) -> bool:
        return bool(sid) and self._expiry.get(sid or "", 0.0) > time.monotonic()

    def drop(self, sid: str | None) -> None:
        self._expiry.pop(sid or "", None)


def sessions(request: Request) -> Sessions:
    return request.app.state.ui_sessions


def authenticated(request: Request) -> bool:
    """Auth off, a live session cookie, or the right bearer header."""
    if expected_token(request) is None:
        return True
    if sessions(request).valid(request.cookies.get(COOKIE)):
        return True
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(given) and token_matches(request, given)


def require_page(request: Request) -> None:
    """For HTML pages: anonymous visitors are sent to the login page."""
    if not authenticated(request):
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequired(target)


def require_api(request: Request) -> None:
    """For streams and JSON: anonymous requests get 401."""
    if not authenticated(request):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "log in at /ui/login or send 'Authorization: Bearer <token>'",
            headers={"WWW-Authenticate": "Bearer"},
        )


def login_url(next_url: str) -> str:
    return "/ui/login?next=" + quote(next_url, safe="/")


def safe_next(next_url: str | None) -> str:
    """Only local /ui paths are followed after login (no open redirect)."""
    if next_url and next_url.startswith("/ui") and not next_url.startswith("//"):
        return next_url
    return "/ui"
