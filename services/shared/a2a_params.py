"""JSON-RPC answers for invalid params that strict A2A clients expect (-32602), on both paths.

The SDK's 1.0 path parses params with protobuf's ``ignore_unknown_fields``, which also turns an
unknown enum value into the default: ``ListTasks`` with ``status: "INVALID_STATUS"`` lists every
task instead of failing. Its 0.3 compatibility layer answers a well-formed request whose params
do not validate with -32600 (Invalid Request), which the JSON-RPC spec keeps for a malformed
envelope. :class:`InvalidParams`, an ASGI middleware on the JSON-RPC route, answers the first with
-32602 itself and rewrites the second's code to -32602 when the envelope was well formed.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.types import TaskState

INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
LIST_METHOD = "ListTasks"
"""Protocol 1.0's only: 0.3 has no ``tasks/list``, which is -32601 (method not found) whatever
its params say, as the SDK answers it."""
STATES = {n for n in TaskState.keys() if n != "TASK_STATE_UNSPECIFIED"}  # noqa: SIM118


def well_formed(doc: Any) -> bool:
    """A JSON-RPC 2.0 request envelope (whatever its params say)."""
    return (
        isinstance(doc, dict)
        and doc.get("jsonrpc") == "2.0"
        and isinstance(doc.get("method"), str)
        and isinstance(doc.get("id"), str | int | type(None))
        and isinstance(doc.get("params", {}), dict | list)
    )


def params_error(doc: dict[str, Any]) -> str | None:
    """Why the params of a well-formed request are invalid, where the SDK would not say."""
    params = doc.get("params")
    if doc["method"] == LIST_METHOD and isinstance(params, dict) and "status" in params:
        status = params["status"]
        if not (isinstance(status, str) and status in STATES):
            return f"status must be one of {', '.join(sorted(STATES))}; got {status!r}"
    return None


async def read_body(receive: Any) -> bytes:
    """The whole request body (the outermost middleware has bounded its size)."""
    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


def replaying(body: bytes, receive: Any) -> Any:
    """A ``receive`` that gives the app ``body`` once, then what ``receive`` gives."""
    replayed = False

    async def replay() -> dict:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _error(request_id: Any, message: str) -> bytes:
    error = {"code": INVALID_PARAMS, "message": "Invalid params", "data": message}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


class InvalidParams:
    """ASGI middleware for the JSON-RPC route ``path`` (POST): see the module's docstring."""

    def __init__(self, app: Any, path: str = "/") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        envelope_ok = well_formed(doc)
        v10 = dict(scope.get("headers") or []).get(b"a2a-version", b"").strip().startswith(b"1.")
        why = params_error(doc) if envelope_ok and v10 else None  # 1.0's methods are 1.0's only
        if why is not None:
            data = _error(doc.get("id"), why)
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(data)),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": data})
            return
        legacy = envelope_ok and "/" in doc["method"]  # a 0.3 method name
        await self.app(scope, replaying(body, receive), _relay_03(send) if legacy else send)


def _relay_03(send: Any) -> Any:
    """A ``send`` that turns a -32600 JSON answer into -32602 (the envelope was well formed)."""
    start: dict = {}
    body: list[bytes] = []

    async def relay(message: dict) -> None:
        if message["type"] == "http.response.start":
            ctype = dict(message.get("headers") or []).get(b"content-type", b"")
            if b"json" not in ctype:
                await send(message)
                return
            start.update(message)
            return
        if message["type"] != "http.response.body" or not start:
            await send(message)
            return
        body.append(message.get("body", b""))
        if message.get("more_body"):
            return
        data = b"".join(body)
        try:
            doc = json.loads(data)
            error = doc.get("error") if isinstance(doc, dict) else None
            # Only the SDK's validation failure (its generic message, the details in data); a
            # refusal of the service's own (no credential, too busy) keeps its code and words.
            if (
                isinstance(error, dict)
                and error.get("code") == INVALID_REQUEST
                and error.get("message") == "Invalid Request"
                and error.get("data") is not None
            ):
                doc["error"]["code"] = INVALID_PARAMS
                doc["error"]["message"] = "Invalid params"
                data = json.dumps(doc).encode()
        except ValueError:
            pass
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(data)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return relay
