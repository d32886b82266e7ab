"""The JSON-RPC wire helpers: integers restored in plain and streamed answers, -32602 rules,
and the Python stand-in's refusal of an official image name."""

from __future__ import annotations

import json
import subprocess

from google.protobuf.json_format import MessageToDict

from fixtures.catalog import REPO_ROOT
from services.shared.a2a_numbers import _rewrite_sse, data_part, restore_parts
from services.shared.a2a_params import params_error, well_formed


def _wire(part) -> dict:
    """A part as JSON on the wire: every number a double, as protobuf's Value keeps it."""
    return json.loads(json.dumps(MessageToDict(part)))


def test_integers_come_back_where_the_data_held_them_at_any_depth():
    """Decided per value by the data's types, not by key names: the same key holds an int in
    one place and a float in another, and counts in lists (``line_matched_by: [2]``) come back
    as ints. Before, ``[2]`` arrived as ``[2.0]`` and keys were restored by name everywhere."""
    data = {
        "steps": 4,
        "n": 2.0,
        "scores": {"n": 3, "file@1": 1.0, "regions": [{"line_matched_by": [2, 3], "iou": 0.5}]},
        "rows": [[1, 1.0], []],
        "flag": True,
    }
    wire = _wire(data_part(data))
    assert wire["data"]["scores"]["regions"][0]["line_matched_by"] == [2.0, 3.0]  # the loss
    back = restore_parts(wire)
    assert back == {"data": data} and "metadata" not in back  # the record is removed
    assert type(back["data"]["n"]) is float and type(back["data"]["scores"]["n"]) is int
    assert [type(v) for v in back["data"]["rows"][0]] == [int, float]
    assert back["data"]["flag"] is True
    assert all(type(v) is int for v in back["data"]["scores"]["regions"][0]["line_matched_by"])


def test_sse_data_lines_are_rewritten_and_other_lines_kept():
    part = _wire(data_part({"steps": 3}))
    event = {"result": {"artifact": {"parts": [part]}}}
    chunk = b"event: message\r\ndata: " + json.dumps(event).encode() + b"\r\n\r\n"
    out = _rewrite_sse(chunk).decode()
    assert out.startswith("event: message\r\n") and out.endswith("\r\n\r\n")
    payload = json.loads(out.split("data: ", 1)[1].split("\r\n", 1)[0])
    assert payload["result"]["artifact"]["parts"][0] == {"data": {"steps": 3}}
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
