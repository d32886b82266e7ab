"""Whose failure ends a task: the exceptions that end a runner carry their outcome (green's own),
and those of the layers below are read by one rule (docs/scoring.md, "Whose failure is it")."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import OperationalError

from services.green.kinds.errors import AssetError
from services.green.store.models import FailureKind, TaskStatus
from services.green.tasks.end import GreenFault, TaskEnd, task_end
from services.green.tasks.purple_link import PurpleUnreachable
from services.sandbox.base import AgentFault, EngineUnreachable, SandboxError

RUNNING, PREPARING = TaskStatus.running, TaskStatus.preparing


@pytest.mark.parametrize(
    ("exc", "stage", "reason", "whose", "sweep"),
    [
        (AgentFault("memory_limit", "out of memory"), RUNNING, "memory_limit", "agent", False),
        (AgentFault("container_died", "it stopped"), PREPARING, "container_died", "infra", False),
        (PurpleUnreachable("no answer"), PREPARING, "purple_unreachable", "agent", False),
        (PurpleUnreachable("no", "purple_refused"), RUNNING, "purple_refused", "agent", False),
        (GreenFault("storage", "db gone while serving"), RUNNING, "storage", "infra", False),
        (AssetError("huggingface timed out"), PREPARING, "assets", "infra", False),
        (SandboxError("container gone"), RUNNING, "sandbox", "infra", True),
        (EngineUnreachable("dockerd down"), PREPARING, "sandbox", "infra", True),
        (OperationalError("x", {}, Exception("refused")), RUNNING, "storage", "infra", False),
        (KeyError("a bug"), RUNNING, "harness_error", "infra", False),
    ],
)
def test_each_ending_says_whose_failure_it_is(exc, stage, reason, whose, sweep):
    end = task_end(exc, stage)
    assert isinstance(end, TaskEnd)
    assert end.status is TaskStatus.failed
    assert (end.end_reason, end.failure_kind, end.sweep) == (reason, FailureKind(whose), sweep)


def test_a_storage_error_keeps_its_detail_out_of_the_ending():
    exc = OperationalError("SELECT 1", {}, Exception("could not connect to db.internal:5432"))
    assert "db.internal" not in str(task_end(exc, RUNNING))


def test_green_s_own_endings_are_returned_as_they_are():
    own = GreenFault("storage", "the database failed while serving the agent's execute")
    assert task_end(own, RUNNING) is own
