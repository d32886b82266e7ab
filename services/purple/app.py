"""Purple's FastAPI app: the A2A routes, GET /tasks/{id}, /healthz and /readyz.

With the LLM agent, /healthz and /readyz also ask the model endpoint whether it is up and serves
the configured model (:mod:`services.purple.model_check`); /readyz answers 503 when it does not.
The card names the model and its request settings (an extension, ``MODEL_EXTENSION``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import asynccontextmanager
from functools import partial

from a2a.types import AgentSkill
from fastapi import FastAPI, HTTPException

from services.purple.a2a.executor import PurpleExecutor
from services.purple.api import trajectory
from services.purple.config import PurpleSettings
from services.purple.model_check import add_health_routes, model_extension
from services.purple.policies import build_policy
from services.purple.protocols import Policy
from services.purple.store.crud import PurpleStore, make_engine
from services.purple.store.models import PurpleTask, PurpleTaskView
from services.shared.a2a import build_agent_card, mount_a2a
from services.shared.logging import configure_logging, get_logger

VERSION = "0.1.0"
log = get_logger("services.purple")


def create_app(
    settings: PurpleSettings | None = None, make_policy: Callable[[str], Policy] | None = None
) -> FastAPI:
    """``make_policy`` replaces the policy chosen by the settings (tests script purple with it)."""
    settings = settings or PurpleSettings()
    configure_logging(settings.log_dir)
    store = PurpleStore(make_engine(settings.database_url))
    make_policy = make_policy or partial(build_policy, settings)
    executor = PurpleExecutor(settings, store, make_policy)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
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

    policy = make_policy().name
    card = build_agent_card(
        name="ARVO RCA agent (purple)",
        description=f"Root-cause analyst for fuzzer crashes (policy: {policy}). Send it an "
        "rca_task from green; it explores through green and submits loc.json. With an LLM it "
        "also works on swe_task, poc_task (an input that reproduces a crash) and fix_task (a "
        "patch); offline it answers those with a reason and no submission.",
        url=settings.reachable_url(),
        version=VERSION,
        skills=[
            AgentSkill(
                id="root_cause_analysis",
                name="Root-cause analysis",
                description="Localize the root cause of a sanitizer crash.",
                tags=["security", "rca", "react"],
            )
        ],
    )
    if settings.effective_policy() == "react":
        card.capabilities.extensions.append(model_extension(settings))
    mount_a2a(app, executor, card)
    return app
