"""Whole numbers stay whole through A2A data parts.

A data part is a ``google.protobuf.Value``, which keeps every number as a double: ``{"steps": 4}``
goes out as ``{"steps": 4.0}`` on both protocol paths. :func:`data_part` remembers which keys
held integers when a part was made; :class:`WholeNumbers` (an ASGI middleware on the JSON-RPC
route) writes those keys' whole floats back as integers in every answer, plain JSON or an SSE
stream. A key is only ever restored where our own data had an integer under that name, so a score
such as ``1.0`` stays a float.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.helpers import new_data_part
from a2a.types import Part

INT_KEYS: set[str] = set()
"""Names that held an integer in some data part this process made (process-wide, grows)."""


def int_keys(data: Any) -> set[str]:
    """Every key of ``data`` (nested dicts and lists) whose value is an int (not a bool)."""
    found: set[str] = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                if isinstance(v, int) and not isinstance(v, bool):
                    found.add(k)
                elif isinstance(v, dict | list):
                    stack.append(v)
        elif isinstance(item, list):
            stack.extend(item)
    return found


def data_part(data: Any) -> Part:
    """``new_data_part``, noting which keys are integers so that the answer restores them."""
    INT_KEYS.update(int_keys(data))
    return new_data_part(data)


def restore_ints(obj: Any, keys: set[str] | None = None) -> Any:
    """``obj`` with the whole floats under ``keys`` (default :data:`INT_KEYS`) made ints."""
    keys = INT_KEYS if keys is None else keys
    if isinstance(obj, dict):
        return {
            k: int(v)
            if k in keys and isinstance(v, float) and v.is_integer()
            else restore_ints(v, keys)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [restore_ints(v, keys) for v in obj]
    return obj


def _rewrite_json(body: bytes) -> bytes:
    try:
        doc = json.loads(body)
    except ValueError:
        return body
    return json.dumps(restore_ints(doc), separators=(",", ":")).encode()


def _rewrite_sse(chunk: bytes) -> bytes:
    """Each ``data:`` line of an SSE chunk (one JSON-RPC response per event)."""
    lines = chunk.split(b"\n")
    for i, line in enumerate(lines):
        if line.startswith(b"data:"):
            payload = line[5:].strip()
            end = b"\r" if line.endswith(b"\r") else b""
            lines[i] = b"data: " + _rewrite_json(payload) + end
    return b"\n".join(lines)


class WholeNumbers:
    """ASGI middleware: integer keys restored in the JSON-RPC answers of ``path`` (POST)."""

    def __init__(self, app: Any, path: str = "/") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        start: dict = {}
        kind = ""
        body: list[bytes] = []

        async def relay(message: dict) -> None:
            nonlocal kind
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                ctype = headers.get(b"content-type", b"").decode("latin-1")
                kind = "sse" if "event-stream" in ctype else "json" if "json" in ctype else ""
                if kind == "json":
                    start.update(message)  # sent with the body: its length changes
                    return
                await send(message)
                return
            if message["type"] != "http.response.body" or not kind:
                await send(message)
                return
            if kind == "sse":
                await send({**message, "body": _rewrite_sse(message.get("body", b""))})
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            data = _rewrite_json(b"".join(body))
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(data)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": data})

        await self.app(scope, receive, relay)
