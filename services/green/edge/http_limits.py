"""Bounds on every HTTP request, applied before any route, authentication or JSON-RPC parsing.

One ASGI middleware, outermost in green's app:

- **body admission**: before a byte of a body is read, its declared size (a chunked body: its
  route's limit) is reserved against its caller's bytes in flight (GREEN_BODY_BYTES_PER_CALLER)
  and, for a caller without the operator token or a session, against all such callers' together
  (GREEN_BODY_BYTES_ANONYMOUS); over either, 429 unread. The reservation lasts until the request
  has been served (its body is held that long), so 400 anonymous 8 MiB bodies at once never
  make green hold more than those bounds. The caller here is the one the headers name (the
  bearer token, a session, else the address): a task token travels inside the body.
- **body size**: a request body is counted while it is read and refused with 413 (and a sentence)
  once it passes its route's limit, before authentication. A declared ``Content-Length`` over
  the limit is refused without reading a byte. Limits: GREEN_A2A_BODY_MAX_BYTES for JSON-RPC
  (``POST /`` and ``POST /mcp``, which carry the agent's commands), GREEN_UI_BODY_MAX_BYTES for
  the dashboard's forms, GREEN_API_BODY_MAX_BYTES for everything else.
- **JSON-RPC shape**: a body for ``POST /`` or ``POST /mcp`` is parsed once here and its nesting depth and number
  of values checked (GREEN_RPC_MAX_DEPTH, GREEN_RPC_MAX_VALUES) before the A2A SDK sees it; too
  deep or too big is a JSON-RPC error -32600 (the envelope) or -32602 (its params) with a
  sentence, never the SDK's -32603 or a server error.
- **connections per credential**: one credential may hold at most
  GREEN_MAX_CONNECTIONS_PER_CREDENTIAL open connections to green's server (and have as many
  requests being served); a request on one more is refused at once with 429 and that connection
  closed, so the rest of GREEN_MAX_CONNECTIONS stays free for everyone else.
  The credential is the operator's bearer token, a dashboard session, or the token of a
  running task carried in a JSON-RPC message (purple's ``execute``/``submit``) or as the bearer
  of an MCP request (one bound for both); a caller with
  none, or with one that is not real (made up to buy a fresh bound), is counted by its address. ``/healthz`` is not counted, so the operator always sees green's health.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.green.config import GreenSettings
from services.shared.logging import get_logger

log = get_logger("services.green.http")

_TOKEN_LINE_RE = re.compile(r"\n?[ \t]*token:[ \t]*(\S+)[ \t]*\Z", re.IGNORECASE)
UNCOUNTED = frozenset({"/healthz"})
"""Paths no credential's bound applies to (the operator's health check)."""


@dataclass(frozen=True)
class Bounds:
    a2a_body: int
    api_body: int
    ui_body: int
    rpc_depth: int
    rpc_values: int
    per_credential: int
    body_bytes_per_caller: int = 16 * 2**20
    body_bytes_anonymous: int = 32 * 2**20

    @classmethod
    def of(cls, s: GreenSettings) -> Bounds:
        return cls(
            a2a_body=s.a2a_body_max_bytes,
            api_body=s.api_body_max_bytes,
            ui_body=s.ui_body_max_bytes,
            rpc_depth=s.rpc_max_depth,
            rpc_values=s.rpc_max_values,
            per_credential=s.max_connections_per_credential,
            body_bytes_per_caller=s.body_bytes_per_caller,
            body_bytes_anonymous=s.body_bytes_anonymous,
        )

    def body_limit(self, method: str, path: str) -> tuple[int, str]:
        """The largest body of a route, and the setting that says so."""
        if is_rpc(method, path):
            return self.a2a_body, "GREEN_A2A_BODY_MAX_BYTES"
        if path == "/ui" or path.startswith("/ui/"):
            return self.ui_body, "GREEN_UI_BODY_MAX_BYTES"
        return self.api_body, "GREEN_API_BODY_MAX_BYTES"


RPC_PATHS = ("", "/", "/mcp")
"""The JSON-RPC routes: A2A's (purple's commands) and MCP's (the same agent plane)."""


def is_rpc(method: str, path: str) -> bool:
    return method == "POST" and path in RPC_PATHS


class Refused(Exception):
    """A request refused by a bound: its HTTP status and sentence (and JSON-RPC code)."""

    def __init__(self, status: int, message: str, rpc_code: int = -32600) -> None:
        super().__init__(message)
        self.status, self.message, self.rpc_code = status, message, rpc_code
        self.rpc_id: Any = None


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:16]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _cookie_session(scope: Scope) -> str | None:
    cookies = _header(scope, b"cookie") or ""
    for item in cookies.split(";"):
        name, _, value = item.strip().partition("=")
        if name == "arena_ui_session" and value:
            return value
    return None


def task_token(body: Any) -> str | None:
    """The task token a JSON-RPC message carries (in a data part, its metadata or a text
    part's trailing 'token:' line), if any."""
    if not isinstance(body, dict) or not isinstance(params := body.get("params"), dict):
        return None
    message = params.get("message")
    if not isinstance(message, dict):
        return None
    metadata = message.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("token"), str):
        return metadata["token"]
    parts = message.get("parts")
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        data = part.get("data")
        if isinstance(data, dict) and isinstance(data.get("token"), str):
            return data["token"]
        text = part.get("text")
        if isinstance(text, str) and (m := _TOKEN_LINE_RE.search(text)):
            return m.group(1)
    return None


def _anyone(_: str) -> bool:
    return True


@dataclass(frozen=True)
class Verifier:
    """Which credentials are real: only a real one gets a bound of its own (a made-up bearer
    token or task token would otherwise buy a fresh bound with every request)."""

    operator: Callable[[str], bool] = _anyone
    """An Authorization header that carries the operator token."""
    session: Callable[[str], bool] = _anyone
    """A dashboard session id that a login handed out."""
    task: Callable[[str], bool] = _anyone
    """The token of a task this process is running."""


def credential(scope: Scope, body: Any = None, verify: Verifier = Verifier()) -> str:
    """Whose request this is, as a name that does not hold the secret itself. A credential
    that is not real counts as its caller's address."""
    if (auth := _header(scope, b"authorization")) and verify.operator(auth):
        return f"bearer:{_digest(auth)}"
    scheme, _, bearer = (auth or "").partition(" ")
    if scheme.lower() == "bearer" and (bearer := bearer.strip()) and verify.task(bearer):
        return f"task:{_digest(bearer)}"  # a task's token over MCP: A2A's bound, shared
    if (session := _cookie_session(scope)) and verify.session(session):
        return f"session:{_digest(session)}"
    if (token := task_token(body)) and verify.task(token):
        return f"task:{_digest(token)}"
    client = scope.get("client") or ("?", 0)
    return f"anonymous:{client[0]}"


def check_rpc_shape(body: Any, max_depth: int, max_values: int) -> None:
    """Refused (-32600 or -32602) when the parsed JSON-RPC request nests deeper than
    ``max_depth`` or holds more than ``max_values`` values. Iterative: no recursion to exhaust."""
    values = 0
    stack: list[tuple[Any, int, bool]] = [(body, 1, False)]
    while stack:
        node, depth, in_params = stack.pop()
        if isinstance(node, dict):
            children = list(node.items())
        elif isinstance(node, list):
            children = list(enumerate(node))
        else:
            continue
        code = -32602 if in_params else -32600
        if depth > max_depth:
            where = "the request's params are" if in_params else "the request is"
            raise Refused(200, f"{where} nested more than {max_depth} levels deep", code)
        values += len(children)
        if values > max_values:
            raise Refused(200, f"the request holds more than {max_values:,} JSON values", code)
        for key, child in children:
            if isinstance(child, dict | list):
                params = in_params or (depth == 1 and key == "params")
                stack.append((child, depth + 1, params))


def parse_rpc(raw: bytes, bounds: Bounds) -> Any:
    """The JSON-RPC body, once its shape is checked; None when it is not JSON (the SDK answers
    that with its own parse error)."""
    try:
        body = json.loads(raw)
    except RecursionError:
        raise Refused(
            200, f"the request is nested more than {bounds.rpc_depth} levels deep"
        ) from None
    except ValueError:
        return None
    try:
        check_rpc_shape(body, bounds.rpc_depth, bounds.rpc_values)
    except Refused as refusal:
        rpc_id = body.get("id") if isinstance(body, dict) else None
        refusal.rpc_id = rpc_id if isinstance(rpc_id, str | int) else None
        raise
    return body


class BodyBudget:
    """Request body bytes in flight (being read, or held while their request is served): per
    caller, and for all anonymous callers together. A body is admitted, by its declared size,
    before it is read."""

    def __init__(self, per_caller: int, anonymous: int) -> None:
        self.per_caller = per_caller
        self.anonymous = anonymous
        self.held: Counter[str] = Counter()
        self.anonymous_held = 0

    def reserve(self, who: str, size: int) -> None:
        """Hold ``size`` bytes for ``who``'s body, or Refused (429) when they do not fit."""
        if size <= 0:
            return
        anonymous = who.startswith("anonymous:")
        over_caller = self.held[who] + size > self.per_caller
        if over_caller or (anonymous and self.anonymous_held + size > self.anonymous):
            whose = (
                "its caller's (GREEN_BODY_BYTES_PER_CALLER)"
                if over_caller
                else "all anonymous callers' (GREEN_BODY_BYTES_ANONYMOUS)"
            )
            raise Refused(
                429,
                f"too many request bytes in flight: a body of {size:,} bytes would pass {whose} "
                "bound; it was not read, send it again when your other requests are answered",
            )
        self.held[who] += size
        self.anonymous_held += size if anonymous else 0

    def release(self, who: str, size: int) -> None:
        if size <= 0:
            return
        self.held[who] -= size
        if self.held[who] <= 0:
            del self.held[who]
        if who.startswith("anonymous:"):
            self.anonymous_held -= size


ConnKey = tuple[Any, Any]
"""A TCP connection: (green's address, the client's address)."""


class ConnectionBook:
    """The open connections of green's own server (:mod:`services.green.edge.server` tells it when
    one opens and closes) and the credential each serves, so a credential's open connections
    can be bounded. A connection it was not told of (another server) is not counted."""

    def __init__(self) -> None:
        self._owner: dict[ConnKey, str | None] = {}
        self.count: Counter[str] = Counter()

    def opened(self, key: ConnKey) -> None:
        self._owner[key] = None

    def closed(self, key: ConnKey) -> None:
        owner = self._owner.pop(key, None)
        if owner is not None:
            self.count[owner] -= 1
            if self.count[owner] <= 0:
                del self.count[owner]

    def claim(self, key: ConnKey, who: str, limit: int) -> bool:
        """Let ``who`` send a request on this connection: False when that would give it more
        than ``limit`` open connections."""
        if key not in self._owner or self._owner[key] == who:
            return True
        if self.count[who] >= limit:
            return False
        self.closed(key)  # a connection used by another credential before: moves to this one
        self._owner[key] = who
        self.count[who] += 1
        return True


BOOK = ConnectionBook()
"""This process's connections (one book for every green app in the process; the key holds
green's own address, so two servers never share an entry)."""


def conn_key(scope: Scope) -> ConnKey:
    server, client = scope.get("server"), scope.get("client")
    return (tuple(server) if server else None, tuple(client) if client else None)


class RequestLimits:
    """ASGI middleware: the body, shape and per-credential bounds above."""

    def __init__(self, app: ASGIApp, bounds: Bounds, verify: Verifier | None = None) -> None:
        self.app = app
        self.bounds = bounds
        self.verify = verify or Verifier()
        self.in_flight: Counter[str] = Counter()
        self.bodies = BodyBudget(bounds.body_bytes_per_caller, bounds.body_bytes_anonymous)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        caller, size = credential(scope, None, self.verify), self._declared_size(scope)
        try:
            self.bodies.reserve(caller, size)
        except Refused as refusal:
            log.info("http.refused", path=scope["path"], status=429, reason=refusal.message)
            await _refuse(send, refusal, rpc=is_rpc(scope["method"], scope["path"]))
            return
        try:
            await self._serve(scope, receive, send)
        finally:
            self.bodies.release(caller, size)

    def _declared_size(self, scope: Scope) -> int:
        """What a body will take at most, known from the headers: its Content-Length, or its
        route's limit when it is chunked (0 when there is none). Never more than the route's
        limit: past it the body is refused (413) as it is read."""
        limit = self.bounds.body_limit(scope["method"], scope["path"])[0]
        declared = (_header(scope, b"content-length") or "").strip()
        if declared.isascii() and declared.isdigit():
            return min(int(declared), limit)
        return limit if "chunked" in (_header(scope, b"transfer-encoding") or "").lower() else 0

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        try:
            raw = await self._read_body(scope, receive)
            body = parse_rpc(raw, self.bounds) if is_rpc(method, path) and raw else None
            who = None if path in UNCOUNTED else credential(scope, body, self.verify)
            limit = self.bounds.per_credential
            if who is not None and (
                self.in_flight[who] >= limit or not BOOK.claim(conn_key(scope), who, limit)
            ):
                raise Refused(
                    429,
                    f"too many connections: at most {limit} open connections (and requests "
                    "being served) per credential (GREEN_MAX_CONNECTIONS_PER_CREDENTIAL); "
                    "this one is closed, reuse the others",
                )
        except Refused as refusal:
            if refusal.status != 200:
                log.info("http.refused", path=path, status=refusal.status, reason=refusal.message)
            await _refuse(send, refusal, rpc=is_rpc(method, path))
            return
        if who is not None:
            self.in_flight[who] += 1
        try:
            await self.app(scope, _replay(raw, receive), send)
        finally:
            if who is not None:
                self.in_flight[who] -= 1
                if self.in_flight[who] <= 0:
                    del self.in_flight[who]

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        """The whole body, counted while it arrives; Refused (413) past the route's limit."""
        limit, setting = self.bounds.body_limit(scope["method"], scope["path"])
        too_big = Refused(
            413, f"the request body is larger than {limit:,} bytes, this route's limit ({setting})"
        )
        declared = (_header(scope, b"content-length") or "").strip()
        if declared.isascii() and declared.isdigit() and int(declared) > limit:
            raise too_big
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise too_big
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _replay(raw: bytes, receive: Receive) -> Callable[[], Awaitable[Message]]:
    """A receive that gives the body already read, then the client's own messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return replay


async def send_json(
    send: Send, status: int, payload: Any, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """A whole JSON answer sent straight from an ASGI middleware: ``status``, ``payload``, its
    content type and length, and ``headers``."""
    data = json.dumps(payload).encode()
    head = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": data})


def rpc_error(ident: str | int | None, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error answer."""
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


async def _refuse(send: Send, refusal: Refused, *, rpc: bool) -> None:
    """The refusal as JSON (a JSON-RPC error on the JSON-RPC route); the connection is closed
    after it, so an unread body is never read and a refused caller holds no connection."""
    payload: Any = (
        rpc_error(refusal.rpc_id, refusal.rpc_code, refusal.message)
        if rpc
        else {"detail": refusal.message}
    )
    headers = [(b"connection", b"close")]
    if refusal.status == 429:
        headers.append((b"retry-after", b"1"))
    await send_json(send, refusal.status, payload, headers)
