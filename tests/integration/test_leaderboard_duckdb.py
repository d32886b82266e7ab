"""The leaderboard queries of docs/leaderboard/queries.json, run with DuckDB over a file shaped
as the AgentBeats leaderboard runner writes it from a real A2A assessment (the offline analyst on
two fixtures, two trials each); and the intervals in the REST assessments API."""

from __future__ import annotations

import asyncio
import json
import time

import duckdb
import pytest
from a2a.helpers import get_data_parts

from fixtures.catalog import REPO_ROOT
from tests.integration.helpers import OPERATOR, stream_message
from tests.support import web
from tests.support.scripted_purple import Script, apply_patch_commands

pytestmark = [pytest.mark.docker, pytest.mark.slow]

AGENT_ID = "019b0000-0000-7000-8000-000000000001"
QUERIES = REPO_ROOT / "docs" / "leaderboard" / "queries.json"


def test_leaderboard_queries_over_a_real_result(tmp_path, start_green, analyst_url):
    green = start_green(max_concurrent_tasks=2)
    request = {
        "participants": {"agent": analyst_url},
        "config": {"task_ids": ["arvo:900001", "arvo:900006"], "trials": 2},
    }
    events = asyncio.run(stream_message(green.url, json.dumps(request)))
    artifact = next(ev.artifact_update.artifact for ev in events if ev.HasField("artifact_update"))
    data = get_data_parts(artifact.parts)[0]
    assert len(data["tasks"]) == 4 and sorted(t["trial"] for t in data["tasks"]) == [1, 1, 2, 2]
    assert data["n_tasks"] == 2 and data["n_attempts"] == 4 and data["trials"] == 2
    assert data["file_at_1_ci_low"] <= data["file_at_1"] <= data["file_at_1_ci_high"]
    assert data["ci_level"] == 0.95
    assert data["file_at_1_ci_method"] in {"clopper-pearson", "korn-graubard"}
    assert data["n_pass_k"] == 2 and data["n_mean_all"] == 2
    # the crash-frame baseline hits 900001 (fix in the crashing frame), misses 900006's file
    assert data["file_at_1_floor_crash_frame"] == 0.5 and data["file_at_1_floor_empty"] == 0.0
    assert {t["scores"]["bug_class"] for t in data["tasks"]} == {"heap-buffer-overflow"}

    # the file the leaderboard runner writes, read as agentbeats.dev reads it
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    runner_file = {"participants": {"agent": AGENT_ID}, "results": [data]}
    (results_dir / "run-1.json").write_text(json.dumps(runner_file))
    con = duckdb.connect()
    glob = str(results_dir / "*.json")
    con.execute(f"CREATE VIEW results AS SELECT * FROM read_json_auto('{glob}')")
    queries = json.loads(QUERIES.read_text())
    assert len(queries) >= 3
    for q in queries:
        cur = con.execute(q["query"])
        cols = [d[0] for d in cur.description]
        rows = cur.fetchall()
        assert cols[0] == "id", q["name"]
        assert rows and all(r[0] == AGENT_ID for r in rows), q["name"]
    first = con.execute(queries[0]["query"])
    row = dict(zip([d[0] for d in first.description], first.fetchone(), strict=True))
    assert row["Tasks"] == 2 and row["file@1"] == pytest.approx(round(data["file_at_1"], 3))
    assert row["file@1 SE"] == pytest.approx(round(data["file_at_1_se"], 3))
    trials = con.execute(queries[1]["query"]).fetchall()  # one row per k, with its n
    assert [(r[2], r[3]) for r in trials] == [(1, 2), (2, 2)]
    by_class = con.execute(queries[2]["query"]).fetchall()
    assert [(r[1], r[2]) for r in by_class] == [("heap-buffer-overflow", 2)]  # tasks, not attempts

    # the REST twin carries the same intervals
    body = {"task_ids": ["arvo:900001"], "purple_url": analyst_url}
    r = web.post(f"{green.url}/assessments", json=body, headers=OPERATOR, timeout=30)
    assert r.status_code == 202, r.text
    aid = r.json()["id"]
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        rec = web.get(f"{green.url}/assessments/{aid}", headers=OPERATOR, timeout=10).json()
        if rec["status"] != "running":
            break
        time.sleep(0.5)
    agg = rec["result"]["aggregate"]
    assert agg["uncertainty"]["mean_all"]["file@1"]["n"] == 1
    assert agg["floors"]["crash_frame"]["file@1"]["mean"] == 1.0


def test_reproduce_and_fix_leaderboards_over_agentbeats_assessments(
    tmp_path, start_green, scripted_purple, fixture_assets
):
    """Two AgentBeats assessments (a leaderboard is one kind's): reproduce 900001 with its PoC
    and 900002 with an empty input, then fix 900002 with its patch and 900001 with nothing; each
    Result's flat row carries its kind's metrics, which queries-reproduce.json and
    queries-fix.json read."""
    poc = (fixture_assets / "900001" / "poc").read_bytes()
    fix = (fixture_assets / "900002" / "patch.diff").read_bytes()
    apply = apply_patch_commands(fix, "/tmp/fix.diff")
    by_project = {  # in arrival order: the reproduce assessment ends before the fix one starts
        "xmlmini": [
            Script(commands=[], submissions=[poc]),
            Script(commands=[], submissions=[None]),
        ],
        "tgadec": [
            Script(commands=[], submissions=[b""]),
            Script(commands=apply, submissions=[None]),
        ],
    }
    purple, _ = scripted_purple(Script(by_key=by_project, key_command="ls /workspace/src-vul"))
    green = start_green(max_concurrent_tasks=2, fix_floor=False)
    for kind, queries, metric in (
        ("arvo-poc", "queries-reproduce.json", "reproduced"),
        ("arvo-fix", "queries-fix.json", "resolved"),
    ):
        config = {"task_ids": [f"{kind}:900001", f"{kind}:900002"]}
        request = {"participants": {"agent": purple}, "config": config}
        events = asyncio.run(stream_message(green.url, json.dumps(request)))
        artifact = next(
            ev.artifact_update.artifact for ev in events if ev.HasField("artifact_update")
        )
        data = get_data_parts(artifact.parts)[0]
        assert data[metric] == 0.5, data["tasks"]  # one of the two
        assert data[f"{metric}_ci_low"] <= 0.5 <= data[f"{metric}_ci_high"]
        folder = tmp_path / kind
        folder.mkdir()
        runner_file = {"participants": {"agent": AGENT_ID}, "results": [data]}
        (folder / "run-1.json").write_text(json.dumps(runner_file))
        con = duckdb.connect()
        con.execute(f"CREATE VIEW results AS SELECT * FROM read_json_auto('{folder}/*.json')")
        for q in json.loads((QUERIES.parent / queries).read_text()):
            cur = con.execute(q["query"])
            row = dict(zip([d[0] for d in cur.description], cur.fetchone(), strict=True))
            assert row["id"] == AGENT_ID and row["Tasks"] == 2 and row[metric] == 0.5, row
