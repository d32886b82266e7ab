"""A task's whole life through the real green service, a scripted purple and real containers."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.catalog import get_task
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.support import web
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker


def perfect_file_and_function(arvo_id: int) -> dict:
    t = get_task(arvo_id)
    return {
        "reasoning": "scripted",
        "locations": [
            {"file": t.fix_file, "function": t.fix_function, "line_start": 1, "line_end": 2}
        ],
    }


def test_rest_task_runs_from_queued_to_completed(
    start_green, scripted_purple, docker_client, green_settings, tmp_path: Path
):
    purple_url, seen = scripted_purple(
        Script(
            commands=[
                "ls /workspace/src-vul",
                "cat /workspace/error.txt | head -3",
                "test -e /tmp/poc; echo poc=$?",
            ],
            submissions=[perfect_file_and_function(900001)],
        )
    )
    green = start_green(purple_url=purple_url)

    task = submit_task(green.url, {"task": "arvo:900001"})
    assert task["status"] == "queued" and task["arvo_id"] == "900001"
    done = wait_terminal(green.url, task["id"])

    assert done["status"] == "completed", done
    assert done["end_reason"] == "submitted"
    assert done["scores"]["file@1"] == 1.0 and done["scores"]["func@1"] == 1.0
    assert done["ground_truth"]["files"], "the ground truth is shown once the task has ended"
    assert done["steps"] == 4  # three commands + writing loc.json
    assert [r.exit_code for r in seen.results] == [0, 0, 0]
    assert "xmlmini" in seen.results[0].output
    assert "poc=1" in seen.results[2].output  # /tmp/poc is hidden from the agent
    assert seen.task_ids == [task["id"]]  # the A2A context id is green's task id
    # the agent is told paths, tools, limits and the schema, never the ARVO id or the fix
    [description] = seen.descriptions
    assert "/workspace/error.txt" in description and "loc.json" in description
    assert "900001" not in description and "xml_decode_entity" not in description
    assert "900001" not in seen.results[0].output + seen.results[1].output
    green_db = web.get(f"{green.url}/tasks/{task['id']}", headers=OPERATOR).json()
    assert not any(f in description for f in (green_db["ground_truth"]["files"][0]["path"],))

    # the container is gone; the database and both log files hold the story
    assert done["container_name"] and done["container_name"] not in leftover_containers(
        docker_client, green.owner
    )
    commands = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
    assert [c["seq"] for c in commands] == [1, 2, 3, 4]
    assert commands[0]["command"] == "ls /workspace/src-vul"

    run_dir = green_settings.log_dir / "log_test"
    arvo_log = (run_dir / "arvo_900001.log").read_text()
    events = [
        e
        for e in (
            "task.queued",
            "task.preparing",
            "task.running",
            "task.evaluating",
            "task.completed",
        )
        if f"event={e}" in arvo_log
    ]
    assert events == [
        "task.queued",
        "task.preparing",
        "task.running",
        "task.evaluating",
        "task.completed",
    ]
    assert arvo_log.index("task.queued") < arvo_log.index("task.completed")
    assert "service=green" in arvo_log
    # purple never learns the bug id: its lines go to a file named by the task's context id
    purple_log = (run_dir / f"task_{task['id']}.log").read_text()
    assert "service=purple" in purple_log and "service=purple" not in arvo_log
    assert "900001" not in purple_log
    agents_log = (run_dir / "agents.log").read_text()
    assert "green.started" in agents_log
    assert task["id"] not in agents_log, "task lines must not be written to agents.log too"
