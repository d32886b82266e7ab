"""Green's FastAPI app: REST routes, A2A routes, and the lifespan that owns the orchestrator."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import TypeVar

from a2a.types import AgentSkill, HTTPAuthSecurityScheme, SecurityRequirement, StringList
from fastapi import Depends, FastAPI
from fastapi.exceptions import RequestValidationError
from sqlalchemy.engine import Engine

from services.green.a2a.executor import GreenExecutor
from services.green.a2a.gate import (
    CallContextBuilder,
    GreenRequestHandler,
    OperatorFirst,
    RefusalStatus,
)
from services.green.api import outage
from services.green.api.deps import require_operator
from services.green.api.invalid import invalid_request
from services.green.api.routes import assessments, datasets, health, kinds, runs, tasks
from services.green.assessments.dataset_tools import make_dataset_tools
from services.green.assessments.runner import AssessmentRunner
from services.green.config import DeveloperChecks, GreenSettings
from services.green.edge.auth import OperatorAuth, load_operator_token
from services.green.edge.http_limits import Bounds, RequestLimits, Verifier
from services.green.edge.intake_limits import IntakeLimits, allowed_purple
from services.green.kinds.registry import build_kinds
from services.green.mcp.server import McpPlane
from services.green.store.crud import AssessmentStore, TaskStore
from services.green.store.db import forbid_on_event_loop, make_engine
from services.green.store.errors import UNREACHABLE
from services.green.tasks.orchestrator import Orchestrator
from services.green.tasks.replicas import InstanceClash, Replica
from services.green.ui import mount_ui
from services.sandbox.registry import create_provider
from services.shared.a2a import build_agent_card, mount_a2a
from services.shared.logging import configure_logging, get_logger
from services.shared.telemetry import Tracing
from services.shared.threads import start_default_pool

VERSION = "0.1.0"
log = get_logger("services.green")


OPERATOR_SCHEME = "operator"
"""The card's name for the operator's bearer token (the operator plane's credential)."""


def agent_card(settings: GreenSettings):
    operator_only = [SecurityRequirement(schemes={OPERATOR_SCHEME: StringList()})]
    card = build_agent_card(
        name="ARVO RCA arena (green)",
        description=(
            "Hosts ARVO vulnerability tasks in per-task Docker containers, serves the agent's "
            "shell commands and judges its root-cause localization (loc.json)."
        ),
        url=settings.advertised_url(),
        version=VERSION,
        skills=[
            AgentSkill(
                id="rca_assessment",
                name="Root-cause analysis assessment",
                description="Send 'Task ID: arvo:<n>' or an AgentBeats assessment request "
                "(JSON with participants and config.task_ids).",
                tags=["security", "rca", "arvo", "benchmark"],
                examples=["Task ID: arvo:10055"],
                security_requirements=[] if settings.open_operator_plane else operator_only,
            ),
            AgentSkill(
                id="sandbox",
                name="Task sandbox",
                description="Inside a running task: 'execute: <command>' and 'submit', with the "
                "task's own token (given in the task message).",
                tags=["sandbox", "shell"],
            ),
        ],
    )
    card.security_schemes[OPERATOR_SCHEME].http_auth_security_scheme.CopyFrom(
        HTTPAuthSecurityScheme(
            scheme="bearer",
            description="The operator token (GREEN_API_TOKEN, or the file GREEN_API_TOKEN_FILE): "
            "starting tasks and assessments, reading, listing and cancelling A2A tasks.",
        )
    )
    return card


def build_orchestrator(settings: GreenSettings, engine: Engine) -> Orchestrator:
    """The lifecycle over the store, the sandbox provider the settings name, and the kinds."""
    sandboxes = create_provider(
        settings.sandbox_provider,
        owner=settings.instance_name,
        hosts=settings.docker_hosts,
        slots=settings.docker_engine_slots,
        tls_dir=settings.docker_tls_dir,
        registry=settings.docker_registry,
        check_s=settings.docker_check_s,
        slot_wait_s=settings.docker_slot_wait_s,
        timeout_s=settings.docker_timeout_s,
    )
    kinds = build_kinds(settings, sandboxes)
    tracing = Tracing("arena-green")  # off unless OTEL_EXPORTER_OTLP_ENDPOINT is set
    return Orchestrator(settings, TaskStore(engine), sandboxes, kinds, tracing=tracing)


T = TypeVar("T")
START_PATIENCE_S = 120.0
"""How long start-up waits out a database that does not answer (each try is bounded by the
database's deadline): a slow or locked database delays the start, a dead one still stops it."""


async def _patiently(what: str, step: Callable[[], Awaitable[T]]) -> T:
    """``step()``, tried again (once a second) while the database is away (no answer, locked,
    refused: :data:`~.store.errors.UNREACHABLE`), for at most :data:`START_PATIENCE_S`; any
    other error, and the last of those, raise."""
    give_up = time.monotonic() + START_PATIENCE_S
    while True:
        try:
            return await step()
        except UNREACHABLE as exc:
            if time.monotonic() > give_up:
                raise
            log.warning("green.start_waits_for_database", step=what, error=str(exc))
            await asyncio.sleep(1.0)


def _lifespan(
    settings: GreenSettings,
    orch: Orchestrator,
    replica: Replica,
    assessment_store: AssessmentStore,
    mcp: McpPlane,
):
    """Start-up (register the replica's name, clean up after an earlier process, start the
    queue and lease loops) and the clean stop, in that order reversed."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        start_default_pool()  # like green's other pools: its thread count is fixed from here
        try:
            await _patiently("register", replica.register)
        except InstanceClash as exc:
            log.error("green.instance_clash", error=str(exc))
            raise
        await _patiently("clean up", orch.start)
        await _patiently(
            "fail unfinished assessments",
            partial(
                orch.db.run,
                assessment_store.fail_unfinished,
                "interrupted by restart",
                settings.instance_name,
            ),
        )
        replica.start()
        log.info(
            "green.listening",
            instance=settings.instance_name,
            card_url=settings.advertised_url(),
            purple_reaches_green_at=settings.reachable_url(),
        )
        try:
            async with mcp.run():  # the MCP sessions' task group, ended before the tasks
                yield
        finally:
            await replica.stop()
            await orch.shutdown()
            await replica.deregister()
            orch.db.close()

    return lifespan


def create_app(
    settings: GreenSettings | None = None,
    *,
    orchestrator: Orchestrator | None = None,
    checks: DeveloperChecks | None = None,
) -> FastAPI:
    settings = settings or GreenSettings()
    configure_logging(settings.log_dir)
    engine = make_engine(settings.database_url, settings.database_deadline_s)
    if (checks or DeveloperChecks()).database_check_off_loop:
        forbid_on_event_loop(engine)
    orch = orchestrator or build_orchestrator(settings, engine)
    assessment_store = AssessmentStore(engine)
    replica = Replica(orch)
    mcp = McpPlane(orch.live, settings, VERSION)

    lifespan = _lifespan(settings, orch, replica, assessment_store, mcp)

    app = FastAPI(
        title="ARVO RCA arena: green",
        version=VERSION,
        lifespan=lifespan,
        description="Environment and judge for root-cause analysis of ARVO vulnerabilities.",
    )
    app.state.orchestrator = orch
    app.state.replica = replica
    token = load_operator_token(settings.api_token, settings.api_token_file)
    app.state.auth = auth = OperatorAuth(token, open_plane=settings.open_operator_plane)
    if settings.open_operator_plane:
        log.warning("auth.operator_plane_open", detail="anonymous callers may create tasks")
    app.state.intake = intake = IntakeLimits(
        per_minute=settings.intake_per_minute,
        max_queued=settings.max_queued_tasks,
        max_batch=settings.max_assessment_tasks,
        unfinished=orch.unfinished,
        busy=lambda bugs: orch.db.run(orch.store.unfinished_bugs, bugs),
    )
    app.state.assessments = AssessmentRunner(
        orch, heartbeat_s=settings.assessment_heartbeat_s, store=assessment_store
    )
    app.state.assessment_store = assessment_store
    app.state.datasets = tools = make_dataset_tools(settings, orch.kinds, orch.sandboxes, engine)
    orch.task_end_hooks.extend(tools.task_end_hooks())  # each kind's image budget

    app.add_exception_handler(RequestValidationError, invalid_request)

    outage.install(app)  # the database away: 503 with a sentence; any other failure: 500, JSON

    # Our routes first: A2A's JSON-RPC lives at "/" (the AgentBeats gateway calls the base URL).
    app.include_router(health.router)
    operator_only = [Depends(require_operator)]
    app.include_router(tasks.router, dependencies=operator_only)
    app.include_router(assessments.router, dependencies=operator_only)
    app.include_router(runs.router, dependencies=operator_only)
    app.include_router(datasets.router, dependencies=operator_only)
    app.include_router(kinds.router, dependencies=operator_only)
    mount_ui(app)  # the dashboard at /ui, behind the same credential
    app.router.routes.append(mcp.route())  # the agent plane over MCP, by the task's token
    mount_a2a(
        app,
        GreenExecutor(orch, app.state.assessments),
        agent_card(settings),
        handler_class=GreenRequestHandler,
        handler_options={"intake": intake, "allowed_purple": partial(allowed_purple, settings)},
        context_builder=CallContextBuilder(auth),
    )
    app.add_middleware(RefusalStatus)
    app.add_middleware(OperatorFirst, auth=auth)  # 401 before any version or params check
    verify = Verifier(
        operator=lambda header: auth.caller(header).operator,
        session=lambda sid: app.state.ui_sessions.valid(sid),
        task=orch.live.has_token,
    )
    # outermost: before routing, authentication and the A2A SDK
    app.add_middleware(RequestLimits, bounds=Bounds.of(settings), verify=verify)
    return app
