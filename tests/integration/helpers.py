"""Small helpers for talking to green in tests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import Role, SendMessageRequest

from services.shared.a2a import new_protocol_message
from tests.support import web

TERMINAL = {"completed", "failed", "cancelled"}

OPERATOR_TOKEN = "test-operator-token"
"""The operator credential every test green is started with (conftest.green_settings)."""
OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}


def wait_terminal(green_url: str, task_id: str, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = web.get(f"{green_url}/tasks/{task_id}", headers=OPERATOR, timeout=10).json()
        if task["status"] in TERMINAL:
            return task
        time.sleep(0.2)
    raise AssertionError(f"task {task_id} did not finish in {timeout}s: {task}")


def wait_status(green_url: str, task_id: str, status: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = web.get(f"{green_url}/tasks/{task_id}", headers=OPERATOR, timeout=10).json()
        if task["status"] == status:
            return task
        if task["status"] in TERMINAL:
            raise AssertionError(f"task ended {task['status']} before {status}: {task}")
        time.sleep(0.1)
    raise AssertionError(f"task {task_id} never reached {status}")


def wait_until(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    """Poll ``condition`` until it returns something true (returned), at most ``timeout``
    seconds; ``what`` says what never happened."""
    deadline = time.monotonic() + timeout
    while not (got := condition()):
        assert time.monotonic() < deadline, f"{what} (within {timeout:g} s)"
        time.sleep(0.1)
    return got


def submit_task(green_url: str, body: dict[str, Any]) -> dict[str, Any]:
    r = web.post(f"{green_url}/tasks", headers=OPERATOR, json=body, timeout=60)
    assert r.status_code == 202, r.text
    return r.json()


async def stream_message(
    green_url: str,
    text: str,
    metadata: dict[str, Any] | None = None,
    headers: dict[str, str] | None = OPERATOR,
) -> list:
    """Send one user message with a streaming A2A client (as the operator unless ``headers``
    says otherwise); return every stream event."""
    async with httpx.AsyncClient(timeout=600, headers=headers) as http:
        client = await create_client(
            green_url, client_config=ClientConfig(streaming=True, httpx_client=http)
        )
        msg = new_protocol_message(text, None, role=Role.ROLE_USER, metadata=metadata)
        events = [ev async for ev in client.send_message(SendMessageRequest(message=msg))]
        await client.close()
        return events


def rpc(
    green_url: str,
    method: str,
    params: dict[str, Any],
    *,
    headers: dict[str, str] | None = None,
    version: str | None = None,
) -> httpx.Response:
    """One raw JSON-RPC call (0.3 method names by default; ``version="1.0"`` for 1.0 names)."""
    hdrs = dict(headers or {})
    if version:
        hdrs["A2A-Version"] = version
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return web.post(f"{green_url}/", json=body, headers=hdrs, timeout=60)


def start_a2a_task(
    green_url: str, text: str, headers: dict[str, str] | None = OPERATOR
) -> dict[str, Any]:
    """Send ``text`` (e.g. ``Task ID: arvo:900001``) without blocking; the A2A task created."""
    params = {"message": text_message(text), "configuration": {"blocking": False}}
    body = rpc(green_url, "message/send", params, headers=headers).json()
    assert "result" in body, body
    return body["result"]


def text_message(text: str, **extra: Any) -> dict[str, Any]:
    """A 0.3-style user message with one text part (``extra``: metadata, taskId, contextId)."""
    msg = {
        "role": "user",
        "messageId": str(uuid.uuid4()),
        "parts": [{"kind": "text", "text": text}],
    }
    return {**msg, **extra}


def wait_for(green_url: str, task_id: str, statuses: set[str], timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = web.get(f"{green_url}/tasks/{task_id}", headers=OPERATOR, timeout=10).json()
        if task["status"] in statuses | TERMINAL:
            return task
        time.sleep(0.02)
    raise AssertionError(f"task {task_id} never reached {statuses}")
