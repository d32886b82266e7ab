"""Green's REST API for the batch: requests with retries, task polling, the logs of a task.

Only green gets the operator token (:class:`GreenAuth`); purple is asked for the agent's view of
a task (its trajectory) without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import httpx

from services.shared.outcome import TaskStatus

COMMANDS_PAGE = 5000
"""Green's largest page of ``GET /tasks/{id}/commands``."""
RETRY_STATUS = {429, 502, 503, 504}
UNREACHABLE = "_unreachable"
"""Key set on a task whose cancel green never confirmed: its verdict is unknown."""


def _ended(task: dict[str, Any]) -> bool:
    """Whether green's view of a task says it ended (the one terminal set: ``TaskStatus``)."""
    status = task.get("status")
    return status in TaskStatus.__members__ and TaskStatus(status).terminal


class GreenUnreachable(Exception):
    """Green did not answer for longer than the grace period."""


class GreenAuth(httpx.Auth):
    """Adds the bearer token to requests for green's origin only (not to purple's)."""

    def __init__(self, green: str, token: str | None) -> None:
        url = httpx.URL(green)
        self.origin = (url.scheme, url.host, url.port)
        self.token = token

    def auth_flow(self, request: httpx.Request):
        if self.token and (request.url.scheme, request.url.host, request.url.port) == self.origin:
            request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


def detail(resp: httpx.Response) -> str:
    """What an error answer says (FastAPI's ``detail`` and ``errors``), for the results."""
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:300] or resp.reason_phrase
    if isinstance(data, dict):
        text = data.get("detail", data)
        if data.get("errors"):
            text = f"{text}: " + "; ".join(
                f"{e.get('where')}: {e.get('message')}"
                for e in data["errors"]
                if isinstance(e, dict)
            )
        return str(text)
    return str(data)


async def check_green(client: httpx.AsyncClient, green: str) -> str | None:
    """None when green answers (a warning string when it says it is degraded); raises
    :class:`GreenUnreachable` when nothing answers."""
    try:
        resp = await client.get(green.rstrip("/") + "/healthz", timeout=10)
    except httpx.HTTPError as exc:
        raise GreenUnreachable(
            f"green is not reachable at {green} ({type(exc).__name__}: {exc})"
        ) from exc
    if resp.status_code == 503:
        return f"green reports it is degraded: {resp.text[:300]}"
    return None


class GreenClient:
    """Green's task routes over one :class:`httpx.AsyncClient`; ``grace_s``: how long green may
    be unreachable before a request gives up with :class:`GreenUnreachable`."""

    def __init__(self, client: httpx.AsyncClient, green: str, grace_s: float) -> None:
        self.client = client
        self.green = green
        self.grace_s = grace_s

    def _url(self, path: str) -> str:
        return self.green.rstrip("/") + path

    async def request(
        self,
        method: str,
        path: str,
        *,
        retry: bool = True,
        json: Any = None,
        params: dict[str, Any] | None = None,
    ) -> httpx.Response:
        """A request to green. With ``retry``, transport errors (for a POST: only failures to
        connect, so that a task is never created twice) and 429/502/503/504 are retried until
        the grace period runs out, which raises :class:`GreenUnreachable`."""
        deadline = time.monotonic() + self.grace_s
        delay = 0.25
        retriable: tuple[type[Exception], ...] = (
            (httpx.ConnectError, httpx.ConnectTimeout)
            if method == "POST"
            else (httpx.TransportError,)
        )
        while True:
            try:
                resp = await self.client.request(method, self._url(path), json=json, params=params)
                if not retry or resp.status_code not in RETRY_STATUS:
                    return resp
                problem = f"HTTP {resp.status_code}"
            except retriable as exc:
                if not retry:
                    raise
                problem = f"{type(exc).__name__}: {exc}"
            if time.monotonic() + delay > deadline:
                raise GreenUnreachable(
                    f"green at {self.green} did not answer {method} {path} for "
                    f"{self.grace_s:g}s ({problem})"
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    async def kinds(self) -> dict[str, dict[str, Any]]:
        """What green declares of each kind (``GET /kinds``: its metrics' names in report order,
        which are continuous, the score fields its records carry); empty from a green without
        the route."""
        try:
            resp = await self.request("GET", "/kinds", retry=False)
            rows = resp.json()["kinds"] if resp.status_code == 200 else []
            keep = ("metrics", "continuous", "fields")
            return {str(k["name"]): {key: k.get(key) for key in keep} for k in rows}
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return {}

    async def get_task(self, task_id: str) -> dict[str, Any]:
        resp = await self.request("GET", f"/tasks/{task_id}")
        resp.raise_for_status()
        return resp.json()

    async def follow(
        self,
        task: dict[str, Any],
        interval_s: float,
        stop: asyncio.Event,
        on_update: Callable[[dict[str, Any]], None],
    ) -> dict[str, Any]:
        """Poll until the task ends; on ``stop`` cancel it on green and return its state after
        the cancel. ``on_update`` sees every state polled."""
        while True:
            on_update(task)
            if _ended(task):
                return task
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval_s):
                    await stop.wait()
            if stop.is_set():
                return await self.cancel(task)
            task = await self.get_task(task["id"])

    async def cancel(self, task: dict[str, Any]) -> dict[str, Any]:
        """Cancel a task and wait briefly for its end; when green does not confirm, the task
        comes back marked :data:`UNREACHABLE`."""
        task_id = task["id"]
        try:
            await self.request("POST", f"/tasks/{task_id}/cancel", retry=False)
            for _ in range(20):
                task = (await self.request("GET", f"/tasks/{task_id}", retry=False)).json()
                if _ended(task):
                    break
                await asyncio.sleep(0.25)
        except (httpx.HTTPError, ValueError) as exc:
            task = {
                **task,
                "error": task.get("error") or f"could not cancel on green: {exc}",
                UNREACHABLE: True,
            }
        return task

    async def commands(self, task_id: str) -> tuple[list[dict[str, Any]], str | None]:
        """The task's whole command log, page by page; a note when it is incomplete."""
        out: list[dict[str, Any]] = []
        try:
            while True:
                resp = await self.request(
                    "GET",
                    f"/tasks/{task_id}/commands",
                    params={"offset": len(out), "limit": COMMANDS_PAGE},
                )
                resp.raise_for_status()
                page = resp.json()
                out += page
                if len(page) < COMMANDS_PAGE:
                    return out, None
        except (httpx.HTTPError, ValueError) as exc:
            return out, f"command log incomplete: {type(exc).__name__}: {exc}"

    async def trajectory(
        self, task: dict[str, Any], purple: str | None
    ) -> tuple[dict[str, Any] | None, str | None]:
        """Purple's full trajectory of the task (``/tasks/{id}/trajectory``: per step the
        messages, commands, and each model call's tokens, seconds and finish reason) with its
        view of the task under ``task``; from a purple without that route, its ``/tasks/{id}``.
        From ``purple``, else the task's purple URL; or a note saying why it was not saved."""
        base = purple or task.get("purple_url")
        if not base:
            return None, "no purple URL known: trajectory not saved"
        url = f"{base.rstrip('/')}/tasks/{task['id']}"
        full, _ = await self._purple_json(f"{url}/trajectory")
        view, note = await self._purple_json(url)
        if full is not None:
            return ({**full, "task": view} if view is not None else full), None
        return view, note

    async def _purple_json(self, url: str) -> tuple[dict[str, Any] | None, str | None]:
        try:
            resp = await self.client.get(url, timeout=10)
        except httpx.HTTPError as exc:
            return (
                None,
                f"purple not reachable at {url} ({type(exc).__name__}): trajectory not saved",
            )
        if resp.status_code != 200:
            return None, f"purple answered HTTP {resp.status_code} for {url}: trajectory not saved"
        try:
            data = resp.json()
        except ValueError:
            return None, f"purple's answer for {url} is not JSON: trajectory not saved"
        return (
            (data, None) if isinstance(data, dict) else (None, "purple's answer is not an object")
        )
