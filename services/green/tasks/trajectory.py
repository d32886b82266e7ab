"""Purple's trajectory of a task, read by green from purple's REST API within a size and a time.

One reader serves the REST route (``GET /tasks/{id}/trajectory``, for ``arena run``) and the
dashboard's trajectory page. A purple is not trusted: its answer is read with a total size limit
(GREEN_TRAJECTORY_MAX_BYTES) and a total time limit (GREEN_TRAJECTORY_TIMEOUT_S), not just a
timeout between chunks, and must be a JSON object; otherwise the reader says, in a sentence, why
there is none.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import httpx

from services.shared.http import BodyTooLarge, async_client, read_capped


@dataclass(frozen=True)
class Trajectory:
    """A trajectory as purple sent it: the bytes, and the object they hold."""

    raw: bytes
    data: dict[str, Any]


async def _read_bounded(url: str, max_bytes: int) -> tuple[int, bytes]:
    async with async_client(timeout=httpx.Timeout(10.0)) as client:
        code, _, raw = await read_capped(client, url, max_bytes)
        return code, raw


async def fetch_trajectory(
    purple_url: str, task_id: str, max_bytes: int = 8 * 1024**2, timeout_s: float = 15.0
) -> tuple[Trajectory | None, str]:
    """(the trajectory, its URL) or (None, why there is none)."""
    url = f"{purple_url.rstrip('/')}/tasks/{task_id}/trajectory"
    try:
        async with asyncio.timeout(timeout_s):
            code, raw = await _read_bounded(url, max_bytes)
    except BodyTooLarge:
        return None, (
            f"purple's trajectory at {url} is larger than {max_bytes:,} bytes "
            "(GREEN_TRAJECTORY_MAX_BYTES): green stopped reading it there and gives none of "
            "it; read it from purple directly"
        )
    except TimeoutError:
        return None, (
            f"purple's trajectory at {url} did not arrive within {timeout_s:g} s "
            "(GREEN_TRAJECTORY_TIMEOUT_S): green stopped reading it and gives none of it"
        )
    except httpx.HTTPError as exc:
        return None, f"purple is not reachable at {url} ({type(exc).__name__})"
    if code != 200:
        text = raw[:300].decode("utf-8", "replace")
        return None, f"purple answered {code} at {url}: {text}"
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None, f"purple's answer at {url} is not JSON"
    if not isinstance(data, dict):
        return None, f"purple's answer at {url} is not a trajectory (a JSON object)"
    return Trajectory(raw, data), url
