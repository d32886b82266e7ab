"""The JSON-RPC wire helpers: integers restored in plain and streamed answers, -32602 rules,
and the Python stand-in's refusal of an official image name."""

from __future__ import annotations

import json
import subprocess

from fixtures.catalog import REPO_ROOT
from services.shared.a2a_numbers import _rewrite_sse, data_part, int_keys, restore_ints
from services.shared.a2a_params import params_error, well_formed


def test_int_keys_and_restore_only_touch_keys_that_held_ints():
    data = {"steps": 4, "scores": {"file@1": 1.0, "locations": [{"rank": 1, "iou": 0.5}]}}
    keys = int_keys(data)
    assert keys == {"steps", "rank"}
    wire = {"steps": 4.0, "scores": {"file@1": 1.0, "locations": [{"rank": 1.0, "iou": 0.5}]}}
    back = restore_ints(wire, keys)
    assert back == data and type(back["steps"]) is int and type(back["scores"]["file@1"]) is float


def test_sse_data_lines_are_rewritten_and_other_lines_kept():
    data_part({"steps": 1})  # a part with an integer `steps` was made in this process
    event = {"result": {"artifact": {"parts": [{"data": {"steps": 3.0}}]}}}
    chunk = b"event: message\r\ndata: " + json.dumps(event).encode() + b"\r\n\r\n"
    out = _rewrite_sse(chunk).decode()
    assert out.startswith("event: message\r\n") and out.endswith("\r\n\r\n")
    payload = json.loads(out.split("data: ", 1)[1].split("\r\n", 1)[0])
    assert type(payload["result"]["artifact"]["parts"][0]["data"]["steps"]) is int


def test_invalid_params_rules():
    ok = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    assert well_formed(ok) and params_error(ok) is None
    bad = {**ok, "params": {"status": "INVALID_STATUS"}}
    assert "status must be one of" in (params_error(bad) or "")
    assert params_error({**ok, "params": {"status": "TASK_STATE_WORKING"}}) is None
    assert not well_formed({"jsonrpc": "1.0", "id": 1, "method": "x"})


def test_python_base_refuses_an_official_name():
    for name in ("python:3.11-slim-bookworm", "library/python:3.11", "docker.io/python:3"):
        proc = subprocess.run(
            ["bash", str(REPO_ROOT / "images" / "python-base.sh"), name],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert proc.returncode == 2 and "official image" in proc.stderr, (name, proc.stderr)
