"""Reading what arrives at green's A2A endpoint: which kind of request a message is."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from services.green.kinds.registry import KINDS
from services.shared.a2a import Payload
from services.shared.protocol import REQUEST_KINDS, Request, parse_data, parse_text_request
from services.shared.task_ref import TaskRef, find_refs

_TOKEN_LINE_RE = re.compile(r"\n?[ \t]*token:[ \t]*(\S+)[ \t]*\Z", re.IGNORECASE)


@dataclass
class ProtocolRequest:
    """execute/submit/run_poc from purple, with the token wherever it was carried."""

    request: Request
    token: str | None


@dataclass
class StartTask:
    task_ids: list[TaskRef]
    """``arvo:<n>`` / ``swebench:<instance>``: the references of registered kinds in the text."""
    purple_url: str | None = None
    """From the message's ``metadata.purple_url``."""


@dataclass
class Assessment:
    participants: dict[str, str]
    config: dict[str, Any]


@dataclass
class Unknown:
    why: str


Classified = ProtocolRequest | StartTask | Assessment | Unknown


def _text_field(metadata: dict[str, Any], key: str) -> str | None:
    value = metadata.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"metadata.{key} must be a string")
    return value


def classify(payload: Payload) -> Classified:
    """What a message asks for. ValueError, with a sentence, for a malformed request."""
    # 1. structured protocol data wins
    if payload.data is not None and payload.data.get("kind") in REQUEST_KINDS:
        try:
            req = parse_data(payload.data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"][1:]) or "data"  # [0]: the union's tag
            return Unknown(f"invalid {payload.data.get('kind')} data: {where}: {first['msg']}")
        token = req.token or _text_field(payload.metadata, "token")  # type: ignore[union-attr]
        return ProtocolRequest(req, token)  # type: ignore[arg-type]
    text = payload.text
    # 2. the plain-text form, with an optional trailing "token: <t>" line
    token = _text_field(payload.metadata, "token")
    if m := _TOKEN_LINE_RE.search(text):
        token, text = m.group(1), text[: m.start()]
    if (req := parse_text_request(text)) is not None:
        return ProtocolRequest(req, token)
    # 3. an AgentBeats assessment request: JSON with participants and config
    stripped = payload.text.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except (json.JSONDecodeError, RecursionError):
            obj = None
        if isinstance(obj, dict) and "participants" in obj:
            participants, config = obj["participants"], obj.get("config") or {}
            if not isinstance(participants, dict) or not participants:
                raise ValueError("assessment request: 'participants' must map roles to URLs")
            if not all(isinstance(v, str) for v in participants.values()):
                raise ValueError("assessment request: each participant must be a URL string")
            if not isinstance(config, dict):
                raise ValueError("assessment request: 'config' must be a JSON object")
            return Assessment(dict(participants), dict(config))
    # 4. "Task ID: arvo:<n>" / "swebench:<id>" (or any text naming task ids)
    if refs := find_refs(payload.text, KINDS):
        return StartTask(refs, _text_field(payload.metadata, "purple_url"))
    return Unknown(
        "send 'Task ID: arvo:<n>' (or swebench:<instance>) to start a task, an AgentBeats assessment request as JSON, "
        "or, inside a running task, 'execute: <command>' / 'submit' / 'run_poc'"
    )
