"""The official MCP client (the ``mcp`` package) onto green's ``/mcp``, as a task's agent uses it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def task_client(green_url: str, token: str | None) -> AsyncIterator[Client]:
    """A connected client whose every request carries ``Authorization: Bearer <token>``."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(f"{green_url}/mcp", http_client=http)) as client,
    ):
        yield client


def text_of(result: Any) -> str:
    """A tool result's text (every tool of green answers with one text part)."""
    return "".join(getattr(part, "text", "") for part in result.content)
