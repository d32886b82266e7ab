"""Typed dependencies: handlers state what they need in their signature."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from services.green.assessment import AssessmentRunner
from services.green.orchestrator import Orchestrator
from services.green.store.crud import AssessmentStore


def _orchestrator(request: Request) -> Orchestrator:
    return request.app.state.orchestrator


def _assessments(request: Request) -> AssessmentRunner:
    return request.app.state.assessments


def _assessment_store(request: Request) -> AssessmentStore:
    return request.app.state.assessment_store


OrchestratorDep = Annotated[Orchestrator, Depends(_orchestrator)]
AssessmentsDep = Annotated[AssessmentRunner, Depends(_assessments)]
AssessmentStoreDep = Annotated[AssessmentStore, Depends(_assessment_store)]


def require_operator(request: Request) -> None:
    """The REST API is the operator's: with GREEN_API_TOKEN set, a bearer token is required."""
    token = request.app.state.api_token
    if not token:
        return
    given = request.headers.get("authorization", "")
    if not secrets.compare_digest(given.encode(), f"Bearer {token}".encode()):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing or wrong bearer token",
            headers={"WWW-Authenticate": "Bearer"},
        )
