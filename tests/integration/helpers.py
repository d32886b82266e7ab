"""Small helpers for talking to green in tests."""

from __future__ import annotations

import time
from typing import Any

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import Role, SendMessageRequest

from services.shared.a2a import new_protocol_message

TERMINAL = {"completed", "failed", "cancelled"}


def wait_terminal(green_url: str, task_id: str, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = httpx.get(f"{green_url}/tasks/{task_id}", timeout=10).json()
        if task["status"] in TERMINAL:
            return task
        time.sleep(0.2)
    raise AssertionError(f"task {task_id} did not finish in {timeout}s: {task}")


def wait_status(green_url: str, task_id: str, status: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = httpx.get(f"{green_url}/tasks/{task_id}", timeout=10).json()
        if task["status"] == status:
            return task
        if task["status"] in TERMINAL:
            raise AssertionError(f"task ended {task['status']} before {status}: {task}")
        time.sleep(0.1)
    raise AssertionError(f"task {task_id} never reached {status}")


def submit_task(green_url: str, body: dict[str, Any]) -> dict[str, Any]:
    r = httpx.post(f"{green_url}/tasks", json=body, timeout=60)
    assert r.status_code == 202, r.text
    return r.json()


async def stream_message(green_url: str, text: str, metadata: dict[str, Any] | None = None) -> list:
    """Send one user message with a streaming A2A client; return every stream event."""
    async with httpx.AsyncClient(timeout=600) as http:
        client = await create_client(
            green_url, client_config=ClientConfig(streaming=True, httpx_client=http)
        )
        msg = new_protocol_message(text, None, role=Role.ROLE_USER, metadata=metadata)
        events = [ev async for ev in client.send_message(SendMessageRequest(message=msg))]
        await client.close()
        return events


def wait_for(green_url: str, task_id: str, statuses: set[str], timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = httpx.get(f"{green_url}/tasks/{task_id}", timeout=10).json()
        if task["status"] in statuses | TERMINAL:
            return task
        time.sleep(0.02)
    raise AssertionError(f"task {task_id} never reached {statuses}")
