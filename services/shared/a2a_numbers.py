"""Whole numbers stay whole through A2A data parts, at any depth, as the data's own types say.

A data part is a ``google.protobuf.Value``, which keeps every number as a double: ``{"steps": 4}``
goes out as ``{"steps": 4.0}`` on both protocol paths, and so does every count in a list
(``line_matched_by: [2]`` as ``[2.0]``). :func:`data_part` records, in the part's metadata, where
the data it was made from held an ``int`` (a tree of its dicts and lists ending in ``true``;
what a pydantic model dumps is typed by its fields); :class:`WholeNumbers` (an ASGI middleware on
the JSON-RPC route) reads that record in every answer, plain JSON or an SSE stream, writes those
values back as integers and removes the record. Nothing is decided by a key's name: a ``1.0``
that was a float stays a float, wherever it sits.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.helpers import new_data_part
from a2a.types import Part

WHOLE = "arena.wholeNumbers"
"""The metadata key of a data part's record of where its integers are (removed on the wire)."""
Tree = dict[str, Any] | bool


def int_tree(data: Any) -> Tree | None:
    """Where ``data`` holds integers (not bools): ``True`` for an int itself, else a dict of its
    keys (a list's by index, as strings) that lead to one; None where none does."""
    if isinstance(data, bool):
        return None
    if isinstance(data, int):
        return True
    if isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list):
        items = ((str(i), v) for i, v in enumerate(data))
    else:
        return None
    tree = {str(k): t for k, v in items if (t := int_tree(v)) is not None}
    return tree or None


def data_part(data: Any) -> Part:
    """``new_data_part``, with the record of where ``data`` holds integers."""
    part = new_data_part(data)
    tree = int_tree(data)
    if tree is not None:
        part.metadata.update({WHOLE: json.dumps(tree, separators=(",", ":"))})
    return part


def with_record(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` (a ``Struct`` to be, e.g. a card extension's) with the record of where they
    hold integers; :func:`restore_record` reads it back."""
    tree = int_tree(params)
    return {**params, WHOLE: json.dumps(tree, separators=(",", ":"))} if tree else params


def restore_record(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` read back from a ``Struct``: integers where :func:`with_record` found them,
    the record removed."""
    record = params.get(WHOLE)
    if not isinstance(record, str):
        return params
    try:
        tree = json.loads(record)
    except ValueError:
        tree = None
    return restore_ints({k: v for k, v in params.items() if k != WHOLE}, tree)


def restore_ints(obj: Any, tree: Tree | None) -> Any:
    """``obj`` with the whole floats where ``tree`` (:func:`int_tree`) says made ints."""
    if tree is True:
        return int(obj) if isinstance(obj, float) and obj.is_integer() else obj
    if not isinstance(tree, dict):
        return obj
    if isinstance(obj, dict):
        return {k: restore_ints(v, tree.get(str(k))) for k, v in obj.items()}
    if isinstance(obj, list):
        return [restore_ints(v, tree.get(str(i))) for i, v in enumerate(obj)]
    return obj


def restore_parts(doc: Any) -> Any:
    """Every data part in ``doc`` (a JSON-RPC answer) with its integers restored and its record
    removed (a part without a record is left as it is)."""
    if isinstance(doc, list):
        return [restore_parts(v) for v in doc]
    if not isinstance(doc, dict):
        return doc
    out = {k: restore_parts(v) for k, v in doc.items()}
    meta = out.get("metadata")
    if "data" in out and isinstance(meta, dict) and isinstance(meta.get(WHOLE), str):
        try:
            tree = json.loads(meta[WHOLE])
        except ValueError:
            tree = None
        out["data"] = restore_ints(out["data"], tree)
        rest = {k: v for k, v in meta.items() if k != WHOLE}
        if rest:
            out["metadata"] = rest
        else:
            del out["metadata"]
    return out


def _rewrite_json(body: bytes) -> bytes:
    try:
        return json.dumps(restore_parts(json.loads(body)), separators=(",", ":")).encode()
    except (ValueError, RecursionError):  # not JSON, or nested too deep to walk: as it was
        return body


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
