"""`make demo` three times in a row (scripts/demo.sh, as a user runs it), stopping at the first
failure: each run must end with a scored task, and a second run must leave the running green
alone (same container). Its own compose project, ports, token folder, log folder and image tags,
so a user's demo stack (project ``arena``, ports 9009/9019) is never touched.

The 30-run measure on a loaded machine is ``bash bench/demo_loop.sh 30 --load`` (by hand).
"""

from __future__ import annotations

import os
from pathlib import Path

import docker
import pytest

from tests.e2e.compose import demo_down, demo_env, require_compose, run_demo

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]
# past pytest's 600 s: three demos, the first may build the images; a loaded machine (load 25 and more) builds for minutes
RUNS = int(os.environ.get("ARENA_DEMO_LOOP_RUNS", "3"))


def _green_id(client: docker.DockerClient, project: str) -> str:
    labels = [f"com.docker.compose.project={project}", "com.docker.compose.service=green"]
    found = client.containers.list(filters={"label": labels})
    return found[0].id if found else ""


def test_demo_runs_again_and_again(tmp_path: Path) -> None:
    client = require_compose()
    env = demo_env(tmp_path, "demo-loop")
    project = env["COMPOSE_PROJECT_NAME"]
    first_green = ""
    try:
        for i in range(1, RUNS + 1):
            proc = run_demo(env)
            out = proc.stdout + proc.stderr
            assert proc.returncode == 0, f"run {i} of {RUNS} failed:\n{out[-6000:]}"
            assert "completed  end: submitted" in out, out[-3000:]
            green = _green_id(client, project)
            if i == 1:
                first_green = green
            assert green == first_green, f"run {i} recreated green"
    finally:
        demo_down(env)
