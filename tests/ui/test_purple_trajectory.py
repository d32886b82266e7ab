"""Purple's GET /tasks/{id}/trajectory over HTTP, from a trajectory file the agent wrote."""

from __future__ import annotations

import json

from services.purple.api.trajectory import group_steps
from services.purple.app import create_app
from services.purple.config import PurpleSettings
from services.purple.task_index import TaskIndex, TaskRecord
from services.purple.trajectory import Trajectory
from tests.support import web
from tests.support.servers import free_port, serve


def write_trajectory(directory, task_id: str) -> Trajectory:
    traj = Trajectory(directory, task_id, "react")
    traj.event("start", config={}, prompts={"system": "You are an analyst.", "instance": "Go."})
    traj.event("message", step=0, role="system", content="You are an analyst.")
    traj.event("llm_call", step=0, tokens_in=900, tokens_out=30, cost=0.002, duration_s=1.5)
    traj.event(
        "message",
        step=1,
        role="assistant",
        content="Read the report.",
        tool_calls=[{"id": "c1", "function": {"name": "run_bash_cmd", "arguments": "{}"}}],
    )
    traj.event("command", seq=1, command="head error.txt", exit_code=0, output="ERROR: ...")
    traj.event("llm_call", step=1, tokens_in=1500, tokens_out=25, cost=0.003, duration_s=1.0)
    traj.event("llm_call", step=1, tokens_in=100, tokens_out=5, cost=0.001, duration_s=0.5)
    traj.close()
    return traj


def test_group_steps_attaches_commands_to_the_current_step(tmp_path):
    write_trajectory(tmp_path, "task-1")
    [path] = list(tmp_path.glob("*.events.jsonl"))
    events = [json.loads(line) for line in path.read_text().splitlines()]
    steps = group_steps(events)
    assert [s.step for s in steps] == [0, 1]
    assert steps[1].commands[0]["command"] == "head error.txt"
    assert (steps[1].tokens_in, steps[1].tokens_out) == (1600, 30)
    assert round(steps[1].cost, 6) == 0.004
    assert steps[1].tool_calls[0]["function"]["name"] == "run_bash_cmd"


def test_trajectory_endpoint(tmp_path):
    port = free_port()
    settings = PurpleSettings(
        port=port,
        policy="stacktrace",
        log_dir=tmp_path / "logs",
        trajectory_dir=tmp_path / "traj",
    )
    app = create_app(settings)
    index = TaskIndex(tmp_path / "traj")
    record = TaskRecord(id="task-1", green_url="http://green", policy="react")
    index.put(record)
    index.opened(record, write_trajectory(tmp_path / "traj", "task-1"))
    write_trajectory(tmp_path / "traj", "task-10")  # another task whose id starts the same
    with serve(app, port) as srv:
        body = web.get(f"{srv.url}/tasks/task-1/trajectory").json()
        assert body["files"] == ["task-1.react.events.jsonl"]
        assert body["prompts"] == {"system": "You are an analyst.", "instance": "Go."}
        assert (body["tokens_in"], body["tokens_out"]) == (2500, 60)
        assert [s["step"] for s in body["steps"]] == [0, 1]
        missing = web.get(f"{srv.url}/tasks/nope/trajectory")
        assert missing.status_code == 404 and "no task" in missing.json()["detail"]
