"""Typed dependencies: handlers state what they need in their signature."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

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
