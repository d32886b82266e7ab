"""A hostile purple on a real task, against green with default settings: every attack fails and
it scores 0 on a task it does not solve.

The purple is the real purple service; only its policy is hostile (tests/support/hostile_purple.py).
Everything it receives over HTTP is recorded and searched for the bug's id.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from fixtures.catalog import load_tasks
from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import OPERATOR, rpc, start_a2a_task
from tests.support import web
from tests.support.hostile_purple import AttackReport, HostilePolicy
from tests.support.servers import free_port, serve

pytestmark = pytest.mark.docker

TARGET = "900007"


class RecordingApp:
    """Wraps purple's ASGI app and keeps the body of every HTTP request it receives."""

    def __init__(self, app) -> None:
        self.app, self.bodies = app, []
        self.state = app.state

    async def __call__(self, scope, receive, send) -> None:
        async def recording_receive():
            message = await receive()
            if message["type"] == "http.request":
                self.bodies.append(message.get("body", b""))
            return message

        await self.app(scope, recording_receive, send)


@pytest.fixture
def hostile(tmp_path, green_settings) -> Iterator[tuple[str, AttackReport, RecordingApp]]:
    report = AttackReport()
    ids = [t.id for t in load_tasks()]
    port = free_port()
    settings = PurpleSettings(
        port=port,
        database_url=f"sqlite:///{tmp_path}/hostile.db",
        log_dir=tmp_path / "logs",
        trajectory_dir=tmp_path / "traj",
    )
    green_url = f"http://127.0.0.1:{green_settings.port}"
    app = RecordingApp(
        create_purple(
            settings, make_policy=lambda kind="rca_task": HostilePolicy(green_url, ids, report)
        )
    )
    with serve(app, port) as srv:
        yield srv.url, report, app


def test_a_hostile_purple_learns_nothing_touches_nothing_and_scores_zero(
    start_green, hostile, docker_client
):
    purple_url, report, recorder = hostile
    green = start_green(purple_url=purple_url)  # default settings: the operator plane is closed
    sent = start_a2a_task(green.url, f"Task ID: arvo:{TARGET}")
    report.operator_a2a_task.update(id=sent["id"], cid=sent["contextId"])

    deadline = time.monotonic() + 180
    while True:
        a2a = rpc(green.url, "tasks/get", {"id": sent["id"]}, headers=OPERATOR).json()["result"]
        if a2a["status"]["state"] in ("completed", "failed", "canceled"):
            break
        assert time.monotonic() < deadline, a2a["status"]
        time.sleep(0.5)

    # every attack on green was refused
    assert len(report.attempts) >= 20
    for attempt in report.attempts:
        assert attempt.status in (401, 403, 404, 422, 429), (attempt.name, attempt.body[:300])
        if attempt.name.startswith("A2A"):
            assert "error" in json.loads(attempt.body), (attempt.name, attempt.body[:300])
    assert report.learned == []

    # the operator's assessment was neither cancelled nor written into
    assert a2a["status"]["state"] == "completed", a2a["status"]
    results = [a for a in a2a["artifacts"] if a["name"] == "Result"]
    assert len(results) == 1
    [outcome] = next(p["data"] for p in results[0]["parts"] if "data" in p)["tasks"]
    assert outcome["status"] == "completed"
    for metric in ("file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou"):
        assert outcome["scores"][metric] == 0, (metric, outcome["scores"])

    # nothing it received names the bug: not the task message, not any reply or command output
    received = b"\n".join(recorder.bodies).decode("utf-8", "replace")
    everything = received + "\n".join(report.outputs) + "\n".join(a.body for a in report.attempts)
    assert f"Task ID: arvo:{TARGET}" not in received  # sanity: we search the right bytes
    assert "rca_task" in received, "the task message was recorded"
    assert TARGET not in everything
    assert "arvo:" not in received and "arvo_" not in everything

    # no decoy task was created, and nothing was left running
    listed = web.get(f"{green.url}/tasks", headers=OPERATOR).json()
    assert listed["total"] == 1
    assert leftover_containers(docker_client, green.owner) == []
