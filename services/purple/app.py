"""Purple's FastAPI app: the A2A routes, GET /tasks/{id}, /healthz and /readyz.

With the LLM agent, /healthz and /readyz also ask the model endpoint whether it is up and serves
the configured model (:mod:`services.purple.model_check`); /readyz answers 503 when it does not.
The card says what answers: the policy, its config and purple's build, and the model with its
request settings (:mod:`services.purple.card`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import asynccontextmanager
from functools import partial

from fastapi import FastAPI, HTTPException

from services.purple.a2a.executor import PurpleExecutor
from services.purple.api import trajectory
from services.purple.card import VERSION, purple_card
from services.purple.config import PurpleSettings
from services.purple.model_check import add_health_routes
from services.purple.policies import build_policy
from services.purple.protocols import Policy
from services.purple.store.crud import PurpleStore, make_engine
from services.purple.store.models import PurpleTask, PurpleTaskView
from services.shared.a2a import mount_a2a
from services.shared.logging import configure_logging, get_logger
from services.shared.telemetry import Tracing
from services.shared.threads import start_default_pool

log = get_logger("services.purple")


def create_app(
    settings: PurpleSettings | None = None, make_policy: Callable[[str], Policy] | None = None
) -> FastAPI:
    """``make_policy`` replaces the policy chosen by the settings (tests script purple with it)."""
    settings = settings or PurpleSettings()
    configure_logging(settings.log_dir)
    store = PurpleStore(make_engine(settings.database_url))
    make_policy = make_policy or partial(build_policy, settings)
    tracing = Tracing("arena-purple")  # off unless OTEL_EXPORTER_OTLP_ENDPOINT is set
    executor = PurpleExecutor(settings, store, make_policy, tracing)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        start_default_pool()  # like the store's writer: its thread count is fixed from here
        store.fail_unfinished("interrupted by restart")
        log.info(
            "purple.listening",
            url=settings.reachable_url(),
            policy=settings.effective_policy(),
            model=settings.model,
        )
        try:
            yield
        finally:
            await executor.shutdown()
            await asyncio.to_thread(tracing.shutdown)  # the spans still buffered

    app = FastAPI(
        title="ARVO RCA arena: purple",
        version=VERSION,
        lifespan=lifespan,
        description="A ReAct root-cause analyst that works through green over A2A.",
    )

    app.state.store, app.state.trajectory_dir = store, settings.trajectory_dir
    app.include_router(trajectory.router)

    add_health_routes(app, settings)

    @app.get("/tasks", tags=["tasks"], response_model=list[PurpleTask])
    async def list_tasks(limit: int = 100) -> list[PurpleTask]:
        return store.list(min(max(limit, 1), 1000))

    @app.get("/tasks/{task_id}", tags=["tasks"], response_model=PurpleTaskView)
    async def get_task(task_id: str) -> PurpleTaskView:
        row = store.get(task_id)
        if row is None:
            raise HTTPException(404, f"no task {task_id}")
        return PurpleTaskView.model_validate(
            {**row.model_dump(), "command_history": store.commands(task_id)}
        )

    card = purple_card(settings, make_policy().name)
    mount_a2a(app, executor, card)
    return app
