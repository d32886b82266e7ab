"""Is the model there? Purple's readiness check of its OpenAI-compatible endpoint.

The check lists the endpoint's models (``GET <base>/models``, the key sent): down or refusing ->
not ok; the configured model missing from a non-empty list -> not ok (vLLM and OpenAI answer an
unknown model with 404; llama-cpp-python's server lists its alias). Results are kept for
``TTL_S`` so probes do not hammer the endpoint.

A probe takes at most ``PROBE_S``, so that ``/healthz`` answers within compose's health-check
timeout (4 s) whatever the model server does. A server that takes the connection but does not
answer in that time is *busy*, not dead: a one-slot server (llama.cpp with ``--parallel 1``)
answers nothing while it generates. Busy keeps the last definite verdict (ok until a probe said
otherwise); a refused or failed connection is *unreachable*, not ok.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from services.purple.config import PurpleSettings
from services.shared.http import async_client

TTL_S = 15.0
PROBE_S = 1.5
"""The longest a probe of the model endpoint takes (connect and answer): /healthz stays under 2 s."""


class ModelCheck:
    def __init__(self, settings: PurpleSettings) -> None:
        self.settings = settings
        self._cached: tuple[float, dict[str, Any]] | None = None

    async def result(self) -> dict[str, Any]:
        now = time.monotonic()
        if self._cached is None or now - self._cached[0] > TTL_S:
            self._cached = (now, await self._probe())
        return self._cached[1]

    async def _probe(self) -> dict[str, Any]:
        s = self.settings
        base = (s.openai_base_url or "https://api.openai.com/v1").rstrip("/")
        out: dict[str, Any] = {"name": s.model, "ok": False}
        headers = {"Authorization": f"Bearer {s.openai_api_key or 'not-needed'}"}
        timeout = httpx.Timeout(PROBE_S, connect=min(1.0, PROBE_S))
        try:
            async with (
                asyncio.timeout(PROBE_S),
                async_client(timeout=timeout, headers=headers) as http,
            ):
                resp = await http.get(f"{base}/models")
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            out["error"] = f"model endpoint unreachable ({type(exc).__name__})"
            return out
        except (TimeoutError, httpx.TimeoutException):
            return self._busy()
        except httpx.HTTPError as exc:
            out["error"] = f"model endpoint unreachable ({type(exc).__name__})"
            return out
        return self._listed(resp, out)

    def _busy(self) -> dict[str, Any]:
        """The endpoint took the connection but did not answer within PROBE_S: busy (a one-slot
        server generating); the last definite verdict stands (ok when there is none)."""
        last = self._cached[1] if self._cached is not None else {}
        return {
            **{k: v for k, v in last.items() if k not in ("busy", "note")},
            "name": self.settings.model,
            "ok": bool(last.get("ok", True)),
            "busy": True,
            "note": f"the model endpoint took the connection but did not list its models within "
            f"{PROBE_S:g} s: busy (a one-slot server answers nothing while it generates)",
        }

    def _listed(self, resp: httpx.Response, out: dict[str, Any]) -> dict[str, Any]:
        s = self.settings
        if resp.status_code != 200:
            out["error"] = f"model endpoint answered HTTP {resp.status_code} to GET /models"
            return out
        try:
            listed = [m.get("id") for m in resp.json().get("data") or [] if isinstance(m, dict)]
        except (ValueError, AttributeError):
            listed = []
        if listed and s.model not in listed:
            out["error"] = (
                f"the endpoint does not serve model {s.model!r} (it lists {', '.join(listed[:5])})"
            )
            return out
        out["ok"] = True
        return out


def add_health_routes(app: FastAPI, settings: PurpleSettings) -> None:
    """GET /healthz (always 200, ``status`` ok or degraded) and GET /readyz (503 when degraded)."""
    check = ModelCheck(settings) if settings.effective_policy() == "react" else None

    async def health() -> dict:
        out: dict = {"status": "ok", "policy": settings.effective_policy()}
        if check is not None:
            model = await check.result()
            out["model"] = model
            out["status"] = "ok" if model["ok"] else "degraded"
        return out

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict:
        """Purple is up; with the LLM agent, also whether its model endpoint answers and serves
        the configured model (``status: degraded`` when not)."""
        return await health()

    @app.get("/readyz", tags=["health"])
    async def readyz() -> JSONResponse:
        """200 when purple can work on a task now; 503 (with the reason) when its model
        endpoint is down or does not serve the configured model."""
        out = await health()
        return JSONResponse(out, status_code=200 if out["status"] == "ok" else 503)
