"""Green's REST API for the batch: requests with retries, task polling, the logs of a task.

The client talks to green only, with the operator token (:class:`GreenAuth`); purple's
trajectory of a task comes through green, which reads it from purple within its own bounds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from services.shared.outcome import TaskStatus

COMMANDS_PAGE = 5000
"""Green's largest page of ``GET /tasks/{id}/commands``."""
RETRY_STATUS = {429, 502, 503, 504}
TRAJECTORY_MAX_BYTES = 1024**3
"""The most the client saves of one trajectory: the largest GREEN_TRAJECTORY_MAX_BYTES green
may be set to serve."""
TRAJECTORY_TIMEOUT_S = 600.0
"""Total time for one trajectory (green itself waits at most 300 s for purple's)."""
UNREACHABLE = "_unreachable"
"""Key set on a task whose cancel green never confirmed: its verdict is unknown."""


def _ended(task: dict[str, Any]) -> bool:
    """Whether green's view of a task says it ended (the one terminal set: ``TaskStatus``)."""
    status = task.get("status")
    return status in TaskStatus.__members__ and TaskStatus(status).terminal


class GreenUnreachable(Exception):
    """Green did not answer for longer than the grace period."""


class RunRefused(Exception):
    """Green refused to open the run (tasks it does not know, a kind it does not serve): nothing
    was started. ``unknown``: each refused task with green's reason."""

    def __init__(self, message: str, unknown: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.unknown = unknown


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
        self.keeps_ids = False
        """Green answered a task posted under this client's id with that id: it makes one
        task of an id however often it is posted (an older green made one per post)."""

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
        idempotent: bool | None = None,
    ) -> httpx.Response:
        """A request to green. With ``retry``, transport errors and 429/502/503/504 are retried
        until the grace period runs out, which raises :class:`GreenUnreachable`; a request that
        is not ``idempotent`` (by default: a POST) is sent again only when it could not connect,
        so that a task is never created twice."""
        deadline = time.monotonic() + self.grace_s
        delay = 0.25
        if idempotent is None:
            idempotent = method != "POST"
        retriable: tuple[type[Exception], ...] = (
            (httpx.TransportError,) if idempotent else (httpx.ConnectError, httpx.ConnectTimeout)
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

    async def post_task(self, body: dict[str, Any]) -> httpx.Response:
        """``POST /tasks`` under an id of this client's choosing. Once green has shown that it
        :attr:`keeps_ids`, a post whose answer was lost (a connection cut, a timeout) is sent
        again as it was and finds the task it made; until then only a post that could not
        connect is sent again."""
        body = {**body, "id": str(uuid.uuid4())}
        resp = await self.request("POST", "/tasks", json=body, idempotent=self.keeps_ids)
        if resp.is_success:
            with contextlib.suppress(ValueError, AttributeError):
                self.keeps_ids = resp.json().get("id") == body["id"]
        return resp

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

    async def open_run(
        self, name: str, refs: list[str], purple: str | None, trials: int, resume: str | None
    ) -> str | None:
        """Open the run on green (``POST /runs``, which checks every task first): its id, or
        None from a green without runs (older than them). Raises :class:`RunRefused`.

        Without a credential (an open operator plane), the run's own ``key`` that green gives
        becomes this client's credential: the run is changed only with it. A run this client
        can no longer change (its key was another session's) is opened anew."""
        body = {"name": name, "task_ids": refs, "purple_url": purple, "trials": trials}
        if resume:
            body["resume"] = resume
        resp = await self.request("POST", "/runs", json={k: v for k, v in body.items() if v})
        if resp.status_code == 201:
            opened = resp.json()
            auth = self.client.auth
            if opened.get("key") and isinstance(auth, GreenAuth) and not auth.token:
                auth.token = str(opened["key"])
            return str(opened["id"])
        if resp.status_code == 403 and resume:
            return await self.open_run(name, refs, purple, trials, None)
        try:
            data = resp.json()
        except ValueError:
            data = None
        unknown = data.get("unknown") if isinstance(data, dict) else None
        if resp.status_code == 404 and unknown is None:
            if resume:  # green no longer has the earlier run (a new database): open a new one
                return await self.open_run(name, refs, purple, trials, None)
            return None  # a green without POST /runs
        raise RunRefused(
            f"green refused the run (HTTP {resp.status_code}): {detail(resp)}",
            [u for u in unknown or [] if isinstance(u, dict)],
        )

    async def end_run(self, run_id: str, interrupted: bool) -> str | None:
        """Tell green the run has stopped (its record gets the aggregate); a note when green
        did not take it."""
        try:
            resp = await self.request(
                "POST", f"/runs/{run_id}/end", json={"interrupted": interrupted}, retry=False
            )
        except httpx.HTTPError as exc:
            return f"the run's end was not recorded on green ({type(exc).__name__})"
        if resp.status_code != 200:
            code = resp.status_code
            return f"the run's end was not recorded on green (HTTP {code}): {detail(resp)}"
        return None

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

    async def save_trajectory(self, task_id: str, dest: Path) -> str | None:
        """Stream purple's trajectory of the task, as green serves it (``GET /tasks/{id}/
        trajectory``), into ``dest``: never more than :data:`TRAJECTORY_MAX_BYTES`, never whole
        in memory, written whole or not at all, readable by its owner only (as the task's other
        files). None when saved, else a note saying why not."""
        url = self._url(f"/tasks/{task_id}/trajectory")
        part = dest.with_name(dest.name + ".part")
        try:
            async with (
                asyncio.timeout(TRAJECTORY_TIMEOUT_S),
                self.client.stream("GET", url) as resp,
            ):
                if resp.status_code != 200:
                    why = (await _head(resp, 600)).decode("utf-8", "replace")
                    return f"trajectory not saved: green answered HTTP {resp.status_code}: {why}"
                dest.parent.mkdir(parents=True, exist_ok=True)
                part.unlink(missing_ok=True)
                with open(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
                    size = 0
                    async for chunk in resp.aiter_bytes():
                        size += len(chunk)
                        if size > TRAJECTORY_MAX_BYTES:
                            return (
                                f"trajectory not saved: larger than {TRAJECTORY_MAX_BYTES:,} "
                                "bytes (the client stopped reading it there)"
                            )
                        out.write(chunk)
            part.replace(dest)
            return None
        except TimeoutError:
            return f"trajectory not saved: not received within {TRAJECTORY_TIMEOUT_S:g} s"
        except httpx.HTTPError as exc:
            return f"trajectory not saved: {type(exc).__name__}: {exc}"
        finally:
            part.unlink(missing_ok=True)


async def _head(resp: httpx.Response, limit: int) -> bytes:
    """At most the first ``limit`` bytes of a streamed answer (an error's sentence)."""
    out = b""
    async for chunk in resp.aiter_bytes():
        out += chunk[: limit - len(out)]
        if len(out) >= limit:
            break
    return out
