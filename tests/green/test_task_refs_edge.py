"""The task reference is read once, at the edge (REST body, assessment request, A2A text), into
a TaskRef that green passes on as it is; it is ``kind:id`` again only in JSON."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.green.a2a.requests import StartTask, classify
from services.green.api.routes.tasks import TaskCreate
from services.green.assessments.runner import AssessmentRequest
from services.shared.a2a import Payload
from services.shared.task_ref import TaskRef


def test_a_rest_body_holds_a_checked_reference():
    assert TaskCreate(task="arvo:010055").task == TaskRef("arvo", "10055")
    assert TaskCreate(arvo_id=10055).task == TaskRef("arvo", "10055")  # the deprecated alias
    assert TaskCreate(task="swebench:a__b-1").task == TaskRef("swebench", "a__b-1")
    with pytest.raises(ValidationError, match="ARVO id"):
        TaskCreate(task="arvo:abc")
    with pytest.raises(ValidationError, match="unknown task kind"):
        TaskCreate(task="nope:1")
    with pytest.raises(ValidationError, match="give 'task'"):
        TaskCreate()
    schema = TaskCreate.model_json_schema()["properties"]["task"]
    assert "string" in [s["type"] for s in schema["anyOf"]]  # the API still takes a string


def test_an_assessment_request_holds_references_and_shows_strings():
    req = AssessmentRequest(task_ids=["10055", "arvo:900001"])
    assert req.task_ids == [TaskRef("arvo", "10055"), TaskRef("arvo", "900001")]
    assert req.model_dump(mode="json")["task_ids"] == ["arvo:10055", "arvo:900001"]
    with pytest.raises(ValidationError):
        AssessmentRequest(task_ids=["arvo:-1"])


def test_an_a2a_message_names_references():
    verdict = classify(Payload(text="Task ID: arvo:900007"))
    assert isinstance(verdict, StartTask) and verdict.task_ids == [TaskRef("arvo", "900007")]
    req = AssessmentRequest(task_ids=verdict.task_ids)
    assert req.task_ids == [TaskRef("arvo", "900007")]


def test_the_reproduce_and_fix_kinds_are_named_with_a_hyphen_everywhere():
    """REST, assessments and A2A text: the kind's own id check (a reproduce task's level)."""
    assert TaskCreate(task="arvo-poc:0900001-l1").task == TaskRef("arvo-poc", "900001")
    assert TaskCreate(task="arvo-poc:900001-l2").task == TaskRef("arvo-poc", "900001-l2")
    assert TaskCreate(task="arvo-fix:0900001").task == TaskRef("arvo-fix", "900001")
    with pytest.raises(ValidationError, match="no help level 3"):
        TaskCreate(task="arvo-poc:900001-l3")
    with pytest.raises(ValidationError, match="not a reproduce task id"):
        TaskCreate(task="arvo-poc:abc")
    req = AssessmentRequest(task_ids=["arvo-poc:900001-l0", "arvo-fix:900002"])
    assert req.model_dump(mode="json")["task_ids"] == ["arvo-poc:900001-l0", "arvo-fix:900002"]
    verdict = classify(Payload(text="Task ID: arvo-poc:900007-l2"))
    assert isinstance(verdict, StartTask)
    assert verdict.task_ids == [TaskRef("arvo-poc", "900007-l2")]
