"""Security headers of green's responses (ASGI middleware).

Every response: ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY`` and a
``Referrer-Policy``. The dashboard's responses (/ui) also carry a Content-Security-Policy: its
own scripts, styles and images only (it has no inline script or style), and no framing by any
page (``frame-ancestors 'none'``): a page elsewhere, even on another port of the same host,
cannot show the dashboard under a decoy and catch an operator's click. The matplotlib plots
(SVG with an inline style sheet of their own) get a policy that allows nothing else.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
"""The dashboard's policy: nothing inline, nothing from elsewhere, never framed."""
SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
"""A plot's policy: its own inline style sheet, nothing else (no script)."""
ALWAYS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        dashboard = path == "/ui" or path.startswith("/ui/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _OURS]
                headers += ALWAYS
                if dashboard:
                    csp = SVG_CSP if _content_type(headers).startswith("image/svg") else PAGE_CSP
                    headers.append((b"content-security-policy", csp.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


_OURS = {name for name, _ in ALWAYS} | {b"content-security-policy"}


def _content_type(headers: list[tuple[bytes, bytes]]) -> str:
    for key, value in headers:
        if key.lower() == b"content-type":
            return value.decode("latin-1").lower()
    return ""
