"""The dashboard's credential check: the operator's API token, or a session cookie it bought.

The operator pastes the token once on the login page; a signed session (its expiry and a random
id, signed with a key derived from the operator token, never the token itself) goes into an
HttpOnly, SameSite=Strict cookie. Being signed rather than kept in memory, it survives a restart
of green and is valid on every replica; a new operator token logs every browser out. Every page,
stream and JSON route of /ui accepts that cookie or the REST API's ``Authorization: Bearer``
header. With the operator plane opened (GREEN_OPEN_OPERATOR_PLANE), /ui is open too, but only a
logged-in operator sees the ground truth (:mod:`services.green.edge.disclosure`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from urllib.parse import quote

from fastapi import HTTPException, Request, status

from services.green.edge.auth import Caller, OperatorAuth
from services.green.edge.disclosure import Disclosure

COOKIE = "arena_ui_session"
SESSION_TTL_S = 12 * 3600.0


class LoginRequired(Exception):
    """An anonymous request for a page: answered with a redirect to the login page."""

    def __init__(self, next_url: str) -> None:
        self.next_url = next_url


def auth_on(request: Request) -> bool:
    """Whether /ui asks for the operator token (always, unless the operator plane is open)."""
    return not request.app.state.auth.open_plane


def token_matches(request: Request, given: str) -> bool:
    """Whether ``given`` is the operator token (constant-time)."""
    return request.app.state.auth.caller(f"Bearer {given}").operator


class Sessions:
    """Signed session cookies: ``<expiry>.<id>.<signature>`` (HMAC-SHA256 of the first two).
    Logging out revokes the id in this process (the browser drops the cookie too)."""

    def __init__(self, key: bytes, ttl_s: float = SESSION_TTL_S) -> None:
        self._key = key
        self.ttl_s = ttl_s
        self._revoked: dict[str, float] = {}

    def _sign(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()

    def csrf(self, sid: str) -> str:
        """The form token of a session: derived from its id with the session key, so it is new
        at every login, unknown to any other page, and still valid after a restart."""
        return hmac.new(self._key, b"csrf:" + sid.encode(), hashlib.sha256).hexdigest()[:40]

    def create(self) -> str:
        body = f"{int(time.time() + self.ttl_s)}.{secrets.token_urlsafe(24)}"
        return f"{body}.{self._sign(body)}"

    def valid(self, sid: str | None) -> bool:
        expiry, _, rest = (sid or "").partition(".")
        session_id, _, signature = rest.partition(".")
        if not (expiry.isdigit() and session_id and signature):
            return False
        if not hmac.compare_digest(self._sign(f"{expiry}.{session_id}"), signature):
            return False
        return int(expiry) > time.time() and session_id not in self._revoked

    def drop(self, sid: str | None) -> None:
        if not self.valid(sid):
            return
        now = time.time()
        self._revoked = {k: v for k, v in self._revoked.items() if v > now}
        expiry, session_id, _ = (sid or "").split(".", 2)
        self._revoked[session_id] = float(expiry)


def sessions(request: Request) -> Sessions:
    return request.app.state.ui_sessions


def caller(request: Request) -> Caller:
    """A live session cookie makes the operator (it was bought with the token); otherwise the
    bearer header decides, as on the REST API."""
    auth: OperatorAuth = request.app.state.auth
    if sessions(request).valid(request.cookies.get(COOKIE)):
        return Caller(f"operator:{auth.fingerprint}", operator=True, may_operate=True)
    return auth.caller(request.headers.get("authorization"))


def authenticated(request: Request) -> bool:
    """May use the dashboard: the operator, or anyone while the operator plane is open."""
    return caller(request).may_operate


def disclosure(request: Request) -> Disclosure:
    """What this visitor may see of tasks (the ground truth: the operator, once the bug is done)."""
    orch = request.app.state.orchestrator
    return Disclosure(orch.store, orch.db, caller(request))


async def require_page(request: Request) -> None:
    """For HTML pages: anonymous visitors are sent to the login page."""
    if not authenticated(request):
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequired(target)


async def require_api(request: Request) -> None:
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


CSRF_FIELD = "csrf"
STALE_FORM = "the form is stale or came from another page: reload the page and try again"


def csrf_token(request: Request) -> str:
    """The hidden form field of this browser's session ('' without a session)."""
    sid = request.cookies.get(COOKIE)
    return sessions(request).csrf(sid) if sid and sessions(request).valid(sid) else ""


def check_form(request: Request, form: dict[str, str]) -> None:
    """A state-changing form post: refused (403) from another origin, and, when the session
    cookie is what authenticates it, without the session's form token. A request with the
    bearer header needs no token (a browser never adds that header by itself)."""
    origin = request.headers.get("origin")
    if origin and origin.split("://", 1)[-1] != request.headers.get("host"):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "cross-site form post refused")
    if request.app.state.auth.caller(request.headers.get("authorization")).operator:
        return
    expected = csrf_token(request)
    if expected and not secrets.compare_digest(
        form.get(CSRF_FIELD, "").encode("utf-8", "replace"), expected.encode()
    ):
        raise HTTPException(status.HTTP_403_FORBIDDEN, STALE_FORM)
