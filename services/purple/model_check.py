"""Is the model there? Purple's readiness check of its OpenAI-compatible endpoint, and the card
extension that names the model and its request settings.

The check lists the endpoint's models (``GET <base>/models``, the key sent): down or refusing ->
not ok; the configured model missing from a non-empty list -> not ok (vLLM and OpenAI answer an
unknown model with 404; llama-cpp-python's server lists its alias). Results are kept for
``TTL_S`` so probes do not hammer the endpoint.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from a2a.types import AgentExtension
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from services.purple.config import PurpleSettings
from services.purple.policies import agent_config
from services.shared.a2a_numbers import with_record
from services.shared.http import async_client

TTL_S = 15.0
MODEL_EXTENSION = "urn:arvo-arena:purple:model:v1"
"""The card extension whose ``params`` are the model, its endpoint kind and request settings."""


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
        try:
            async with async_client(timeout=5.0, headers=headers) as http:
                resp = await http.get(f"{base}/models")
        except httpx.HTTPError as exc:
            out["error"] = f"model endpoint unreachable ({type(exc).__name__})"
            return out
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


def model_extension(settings: PurpleSettings) -> AgentExtension:
    """The card's record of the model and its request settings (never the key or the URL)."""
    config = agent_config(settings)
    ext = AgentExtension(
        uri=MODEL_EXTENSION,
        description="The LLM purple queries and its request settings.",
    )
    ext.params.update(
        with_record(
            {
                "model": settings.model,
                "mode": config.mode,
                "context_window": config.context_window,
                "llm_timeout_s": settings.llm_timeout_s,
                "llm_timeout_retries": settings.llm_timeout_retries,
                **config.llm.model_dump(),
                "limits": {
                    "step_limit": config.step_limit,
                    "cost_limit": config.cost_limit,
                    "wall_time_limit_s": config.wall_time_limit_s,
                    "context_budget_tokens": config.context_budget_tokens,
                },
            }
        )  # the record keeps its whole numbers whole on the card (services/shared/a2a_card)
    )
    return ext


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
