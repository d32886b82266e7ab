"""An a2a-sdk 0.3.x client (separate environment) reads green's card and runs a task."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.helpers import OPERATOR_TOKEN
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker

CLIENT = Path(__file__).parents[1] / "support" / "a2a03_client.py"


def test_a2a03_client_runs_a_task_through_green(a2a03_python, start_green, scripted_purple):
    purple_url, _ = scripted_purple(
        Script(
            commands=["ls"],
            submissions=[{"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}],
        )
    )
    green = start_green()
    out = subprocess.run(
        [str(a2a03_python), str(CLIENT), "poll", green.url, "Task ID: arvo:900001", purple_url],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "GREEN_API_TOKEN": OPERATOR_TOKEN},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["card_url"] == f"{green.url}/" and report["protocol"] == "0.3"
    # the card read with no version header: the operator scheme is http bearer as 0.3 reads it
    # (the 1.0 form it got before read as mutual TLS), and the client authenticated by it
    assert report["schemes"]["operator"]["type"] == "http", report["schemes"]
    assert report["schemes"]["operator"]["scheme"].lower() == "bearer"
    assert report["state"] == "completed", report
    assert report["result"]["tasks"][0]["status"] == "completed"


def test_a2a03_client_streams_an_agentbeats_assessment(a2a03_python, start_green, scripted_purple):
    """The gateway's way: message/stream with {"participants", "config"}; status updates; Result."""
    purple_url, _ = scripted_purple(
        Script(
            commands=["ls"],
            submissions=[{"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}],
        )
    )
    green = start_green()
    request = json.dumps(
        {
            "participants": {"rca_agent": purple_url},
            "config": {"task_ids": [900002, "arvo:900003"], "max_steps": 10},
        }
    )
    out = subprocess.run(
        [str(a2a03_python), str(CLIENT), "stream", green.url, request],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "GREEN_API_TOKEN": OPERATOR_TOKEN},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["state"] == "completed" and report["updates"] >= 6
    assert sorted(t["arvo_id"] for t in report["result"]["tasks"]) == ["900002", "900003"]
    assert report["result"]["aggregate"]["n_tasks"] == 2
