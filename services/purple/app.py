"""Purple's FastAPI app: the A2A routes, GET /tasks, GET /tasks/{id} and its trajectory,
/healthz and /readyz. What purple keeps of its tasks is files in ``PURPLE_TRAJECTORY_DIR``: the
trajectories and one record per task (:mod:`services.purple.task_index`).

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

from fastapi import FastAPI

from services.purple.a2a.executor import PurpleExecutor
from services.purple.api import tasks, trajectory
from services.purple.card import VERSION, purple_card
from services.purple.config import PurpleSettings
from services.purple.model_check import add_health_routes
from services.purple.policies import build_policy
from services.purple.protocols import Policy
from services.purple.task_index import TaskIndex
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
    index = TaskIndex(settings.trajectory_dir)
    make_policy = make_policy or partial(build_policy, settings)
    tracing = Tracing("arena-purple")  # off unless OTEL_EXPORTER_OTLP_ENDPOINT is set
    executor = PurpleExecutor(settings, index, make_policy, tracing)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        start_default_pool()  # its thread count is fixed from here
        index.open()
        if failed := index.recover("interrupted by restart"):
            log.info("purple.recovered", failed=len(failed))
        log.info(
            "purple.listening",
            url=settings.reachable_url(),
            policy=settings.effective_policy(),
            model=settings.model,
        )
        try:
            yield
        finally:
            await executor.shutdown()  # each task records how it ended
            index.close()
            await asyncio.to_thread(tracing.shutdown)  # the spans still buffered

    app = FastAPI(
        title="ARVO RCA arena: purple",
        version=VERSION,
        lifespan=lifespan,
        description="A ReAct root-cause analyst that works through green over A2A.",
    )

    app.state.index = index
    app.include_router(trajectory.router)
    app.include_router(tasks.router)

    add_health_routes(app, settings)

    card = purple_card(settings, make_policy().name)
    mount_a2a(app, executor, card)
    return app
