"""The batch CLI (``services.arena``) against a real HTTP imitation of green's REST routes.

The fake green and the fake purple are small FastAPI apps served by uvicorn on 127.0.0.1; their
tasks move queued → preparing → running → evaluating → an end state one step per poll, and
completed tasks carry scores computed by the real scorer on a small ground truth.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import atif
import duckdb
import pytest
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from matplotlib import image as mpimg
from typer.testing import CliRunner

from services.arena import client as arena_client
from services.arena.app import app
from services.arena.refs import split_refs
from services.arena.results import REFUSED, RunOutcome, RunResults, aggregate_outcomes
from services.green.kinds.arvo.scoring.groundtruth import ground_truth_from_patch
from services.green.kinds.arvo.scoring.metrics import CONTINUOUS, METRICS, score
from services.green.store.models import CommandPublic, TaskPublic
from services.shared.loc import LocJson
from services.shared.task_ref import TaskRef
from tests.support.servers import REPO, free_port, serve

SOURCE = """#include <string.h>
int parse(const char *buf, int n)
{
  char tmp[8];
  memcpy(tmp, buf, n);
  return tmp[0];
}

int helper(int x)
{
  return x + 1;
}
"""

PATCH = """--- a/src/parse.c
+++ b/src/parse.c
@@ -3,5 +3,5 @@ int parse(const char *buf, int n)
 {
   char tmp[8];
-  memcpy(tmp, buf, n);
+  memcpy(tmp, buf, n < 8 ? n : 8);
   return tmp[0];
 }
"""

GT = ground_truth_from_patch(PATCH, sources={"src/parse.c": SOURCE})


def scores_of(locations: list[dict[str, Any]] | None) -> dict[str, Any]:
    loc = LocJson.model_validate({"locations": locations}) if locations is not None else None
    return score(loc, GT, "proj").to_dict()


HIT = scores_of([{"file": "src/parse.c", "function": "parse", "line_start": 5, "line_end": 5}])
FILE_ONLY = scores_of(
    [{"file": "/src/proj/src/parse.c", "function": "helper", "line_start": 9, "line_end": 12}]
)
NONE = scores_of(None)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


METRIC_NAMES = list(METRICS)
CONTINUOUS_NAMES = sorted(CONTINUOUS)


def test_scores_fixture_sanity() -> None:
    assert (HIT["file@1"], HIT["func@1"], HIT["line@1"], HIT["iou"]) == (1.0, 1.0, 1.0, 1.0)
    assert (FILE_ONLY["file@1"], FILE_ONLY["func@1"], FILE_ONLY["line@1"]) == (1.0, 0.0, 0.0)
    assert NONE["submitted"] is False and NONE["file@1"] == 0.0


# ---- the fake services ---------------------------------------------------------------------

End = dict[str, Any] | None
"""How a task ends: fields of the final task, or None to stay running until cancelled."""

COMPLETED_HIT: End = {
    "status": "completed",
    "end_reason": "submitted",
    "scores": HIT,
    "steps": 4,
    "cost": 0.0125,
    "tokens_in": 900,
    "tokens_out": 80,
}
COMPLETED_FILE_ONLY: End = {
    "status": "completed",
    "end_reason": "submitted",
    "scores": FILE_ONLY,
    "steps": 6,
    "cost": 0.02,
}
FAILED_AGENT: End = {
    "status": "failed",
    "failure_kind": "agent",
    "end_reason": "step_limit",
    "error": "no valid loc.json after 3 steps",
    "scores": NONE,
    "steps": 3,
}

# arvo id -> how attempt n (1-based) ends
SCRIPTS: dict[str, Callable[[int], End]] = {
    "1001": lambda n: COMPLETED_HIT,
    "1002": lambda n: COMPLETED_FILE_ONLY,
    "1003": lambda n: FAILED_AGENT,
    "1004": lambda n: FAILED_AGENT if n == 1 else COMPLETED_HIT,  # flaky: fails, then passes
    "5005": lambda n: None if n == 1 else COMPLETED_FILE_ONLY,  # hangs until cancelled, once
    "7007": lambda n: {"status": "lost"},  # green answers 503 for this task from now on
    "swebench:Demo__demo-1": lambda n: {
        "status": "completed",
        "end_reason": "submitted",
        "scores": {"resolved": 1.0, "explanation": ["resolved"], "test_log": "ok"},
        "steps": 2,
    },
}
PROGRESSION = ("queued", "preparing", "running", "running", "evaluating")
PURPLE_KNOWS = {"1001", "1004"}


def _key(ref: TaskRef) -> str:
    """The key of :data:`SCRIPTS`: an ARVO id, or another kind's whole reference."""
    return ref.id if ref.kind == "arvo" else str(ref)


def now() -> datetime:
    return datetime.now(UTC)


class FakeGreen:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.posts: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.cancels: list[str] = []
        self.tasks: dict[str, dict[str, Any]] = {}
        self.max_active = 0
        self.authorizations: list[str | None] = []
        """The Authorization header of every request green received."""
        self.runs: dict[str, dict[str, Any]] = {}
        """POST /runs bodies by the run id green gave, with ``ended`` once POST .../end came."""
        self.huge_trajectory = 0
        """Bytes of the trajectory green serves for every task (0: the usual small one)."""
        self.trajectory_sent = 0

    def active(self) -> int:
        return sum(
            1
            for t in self.tasks.values()
            if t["view"]["status"] not in ("completed", "failed", "cancelled")
        )

    def arvo_of(self, task_id: str) -> str | None:
        t = self.tasks.get(task_id)
        return t["view"]["ref_id"] if t else None

    def app(self) -> FastAPI:
        api = FastAPI()

        @api.middleware("http")
        async def record_auth(request: Request, call_next):
            self.authorizations.append(request.headers.get("authorization"))
            return await call_next(request)

        @api.get("/healthz")
        def healthz() -> dict[str, Any]:
            return {"status": "ok", "docker": True, "database": True}

        @api.get("/kinds")
        def kinds() -> dict[str, Any]:
            return {
                "kinds": [
                    {"name": "arvo", "metrics": METRIC_NAMES, "continuous": CONTINUOUS_NAMES},
                    {"name": "swebench", "metrics": ["resolved"], "continuous": []},
                ]
            }

        @api.post("/runs", status_code=201)
        def open_run(body: dict[str, Any]) -> Any:
            unknown = [
                {"task": ref, "reason": f"not in the dataset; build it with: make {ref}"}
                for ref in body["task_ids"]
                if _key(TaskRef.parse(ref)) not in SCRIPTS
            ]
            if unknown:
                return JSONResponse({"detail": "unknown tasks", "unknown": unknown}, 404)
            run_id = body.get("resume") or str(uuid.uuid4())
            self.runs[run_id] = {**body, "ended": None}
            return {"id": run_id, "name": body["name"], "status": "running"}

        @api.post("/runs/{run_id}/end")
        def end_run(run_id: str, body: dict[str, Any]) -> Any:
            self.runs[run_id]["ended"] = body
            return {"id": run_id}

        @api.get("/tasks/{task_id}/trajectory")
        def trajectory(task_id: str) -> Any:
            if self.huge_trajectory:
                chunk = b" " * 1024**2

                def body() -> Iterator[bytes]:
                    yield b'{"steps": ['
                    for _ in range(self.huge_trajectory // len(chunk)):
                        self.trajectory_sent += len(chunk)
                        yield chunk
                    yield b"]}"

                return StreamingResponse(body(), media_type="application/json")
            if self.arvo_of(task_id) not in PURPLE_KNOWS:
                return JSONResponse({"detail": "purple answered 404: no task"}, 502)
            return {  # purple's view (services.shared.trajectory.TrajectoryView)
                "task_id": task_id,
                "policy": "react",
                "status": "submitted",
                "files": [],
                "model": "m1",
                "steps": [
                    {
                        "step": 1,
                        "messages": [{"role": "assistant", "content": "execute: ls", "t": 0.2}],
                        "llm_calls": [{"tokens_in": 700, "tokens_out": 9, "t": 0.1}],
                    }
                ],
                "tokens_in": 700,
                "tokens_out": 9,
                "cost": 0.0,
            }

        @api.post("/tasks", status_code=202)
        def create(body: dict[str, Any]) -> Any:
            ref = TaskRef.parse(str(body["task"]))
            key = _key(ref)
            with self.lock:
                self.bodies.append(body)
                self.posts[key] += 1
                if key not in SCRIPTS:
                    raise HTTPException(404, f"unknown task {ref}: not in the dataset")
                task_id = str(uuid.uuid4())
                view = TaskPublic(
                    id=task_id,
                    kind=ref.kind,
                    ref_id=ref.id.lower() if ref.kind == "swebench" else ref.id,
                    status="queued",
                    purple_url=body.get("purple_url") or "http://purple.invalid:9019",
                    max_steps=body.get("max_steps") or 50,
                    task_timeout_s=body.get("task_timeout_s") or 1800,
                    command_timeout_s=body.get("command_timeout_s") or 60,
                ).model_dump(mode="json")
                self.tasks[task_id] = {
                    "view": view,
                    "polls": 0,
                    "end": SCRIPTS[key](self.posts[key]),
                }
                self.max_active = max(self.max_active, self.active())
                return view

        @api.get("/tasks/{task_id}")
        def get(task_id: str) -> Any:
            with self.lock:
                t = self.tasks.get(task_id)
                if t is None:
                    raise HTTPException(404, f"no task {task_id}")
                view, end = t["view"], t["end"]
                if end == {"status": "lost"}:
                    return JSONResponse({"detail": "overloaded"}, status_code=503)
                if view["status"] in ("completed", "failed", "cancelled"):
                    return view
                t["polls"] += 1
                if end is None:  # runs until cancelled
                    view["status"] = "running"
                    view["started_at"] = view["started_at"] or now().isoformat()
                elif t["polls"] < len(PROGRESSION):
                    view["status"] = PROGRESSION[t["polls"]]
                    if view["status"] == "running":
                        view["started_at"] = view["started_at"] or now().isoformat()
                        view["steps"] += 1
                else:
                    view.update(end)
                    view["started_at"] = view["started_at"] or now().isoformat()
                    view["finished_at"] = now().isoformat()
                    view["ground_truth"] = GT.to_dict()
                view["updated_at"] = now().isoformat()
                return view

        @api.get("/tasks/{task_id}/commands")
        def commands(task_id: str, offset: int = Query(0), limit: int = Query(500)) -> Any:
            if task_id not in self.tasks:
                raise HTTPException(404, f"no task {task_id}")
            steps = self.tasks[task_id]["view"]["steps"]
            rows = [
                CommandPublic(
                    seq=i,
                    command=f"sed -n 1,20p src/parse.c # {i}",
                    exit_code=0,
                    duration_s=0.01,
                    timed_out=False,
                    truncated=False,
                    output="int parse(...)",
                    created_at=now(),
                ).model_dump(mode="json")
                for i in range(1, steps + 1)
            ]
            return rows[offset : offset + limit]

        @api.post("/tasks/{task_id}/cancel")
        def cancel(task_id: str) -> Any:
            with self.lock:
                t = self.tasks.get(task_id)
                if t is None:
                    raise HTTPException(404, f"no task {task_id}")
                view = t["view"]
                if view["status"] in ("completed", "failed", "cancelled"):
                    raise HTTPException(409, f"task {task_id} already {view['status']}")
                self.cancels.append(task_id)
                view.update(
                    status="cancelled",
                    end_reason="cancelled",
                    error="cancelled by client",
                    finished_at=now().isoformat(),
                    scores=NONE,
                )
                return view

        return api


def fake_purple(green: FakeGreen) -> FastAPI:
    api = FastAPI()
    green.purple_authorizations = []

    @api.middleware("http")
    async def record_auth(request: Request, call_next):
        green.purple_authorizations.append(request.headers.get("authorization"))
        return await call_next(request)

    @api.get("/tasks/{task_id}")
    def get(task_id: str) -> Any:
        if green.arvo_of(task_id) not in PURPLE_KNOWS:
            raise HTTPException(404, f"no task {task_id}")
        return {
            "id": task_id,
            "status": "submitted",
            "policy": "analyst",
            "step_count": 4,
            "messages": [
                {"role": "system", "content": "You are..."},
                {"role": "assistant", "content": "execute: ls"},
            ],
            "command_history": [{"command": "ls", "exit_code": 0}],
        }

    return api


@pytest.fixture(scope="module")
def services() -> Iterator[tuple[FakeGreen, str, str]]:
    green = FakeGreen()
    with serve(green.app()) as g, serve(fake_purple(green)) as p:
        yield green, g.url, p.url


@pytest.fixture
def fake(services: tuple[FakeGreen, str, str]) -> tuple[FakeGreen, str, str]:
    services[0].reset()
    return services


def cli(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result


def base_args(green_url: str, out: Path, run: str = "r1") -> list[str]:
    return ["--green", green_url, "--out", str(out), "--run", run, "--poll-interval", "0.02"]


def load(out: Path, run: str = "r1") -> dict[str, Any]:
    return json.loads((out / run / "results.json").read_text())


def by_id(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The outcomes of results.json by id within the kind (every task here is ARVO's)."""
    assert all(t["kind"] == "arvo" and t["ref"] == f"arvo:{t['ref_id']}" for t in data["tasks"])
    return {t["ref_id"]: t for t in data["tasks"]}


# ---- tests ---------------------------------------------------------------------------------


def test_run_writes_results_tasks_and_report(fake, tmp_path: Path) -> None:
    green, green_url, purple_url = fake
    res = cli(
        "run",
        "1001",
        "arvo:1002",
        "1003",
        *base_args(green_url, tmp_path),
        "--purple",
        purple_url,
        "--concurrency",
        "2",
        "--max-steps",
        "7",
        "--task-timeout",
        "600",
    )
    assert res.exit_code == 0, res.output
    data = load(tmp_path)

    # metadata
    assert data["run"] == "r1" and data["green"] == green_url and data["purple"] == purple_url
    assert data["started_at"] and data["finished_at"]
    assert data["args"]["concurrency"] == 2 and data["args"]["max_steps"] == 7
    assert data["task_ids"] == ["arvo:1001", "arvo:1002", "arvo:1003"]
    assert len(data["sessions"]) == 1 and data["sessions"][0]["interrupted"] is False

    # the run is a named run on green: opened with every task, each task sent with its id,
    # ended when the batch stopped; its dashboard page is printed
    [(run_id, run)] = green.runs.items()
    assert data["green_run"] == run_id
    assert run["name"] == "r1" and run["task_ids"] == ["arvo:1001", "arvo:1002", "arvo:1003"]
    assert run["ended"] == {"interrupted": False}
    assert all(b["run_id"] == run_id for b in green.bodies)
    assert f"{green_url}/ui/runs/{run_id}" in res.output

    # what green was asked, and that no more than --concurrency tasks were in flight
    assert green.posts == Counter({"1001": 1, "1002": 1, "1003": 1})
    assert all(
        b["purple_url"] == purple_url and b["max_steps"] == 7 and b["task_timeout_s"] == 600
        for b in green.bodies
    )
    # every id reaches green as one canonical reference (bare "1001" too); two requests are in
    # flight at once, so the order they arrive in is not the batch's to promise
    assert sorted(b["task"] for b in green.bodies) == ["arvo:1001", "arvo:1002", "arvo:1003"]
    assert green.max_active == 2

    tasks = by_id(data)
    t1, t2, t3 = tasks["1001"], tasks["1002"], tasks["1003"]
    assert (
        t1["status"] == "completed" and t1["scores"]["file@1"] == 1.0 and t1["scores"]["iou"] == 1.0
    )
    assert t1["steps"] == 4 and t1["cost"] == 0.0125 and t1["trajectory"] is True
    assert t2["status"] == "completed" and (t2["scores"]["file@1"], t2["scores"]["line@1"]) == (
        1.0,
        0.0,
    )
    assert t2["trajectory"] is False
    assert any("trajectory not saved: green answered HTTP 502" in n for n in t2["notes"])
    assert t3["status"] == "failed" and t3["failure_kind"] == "agent"
    assert t3["error"] == "no valid loc.json after 3 steps"

    # the aggregate is green's: mean over all counts the failure as 0
    agg = data["aggregate"]
    assert agg["n_tasks"] == 3
    assert agg["by_status"] == {"completed": 2, "failed": 1, "cancelled": 0}
    assert agg["by_failure"] == {"infra": 0, "agent": 1}
    assert agg["mean_all"]["n"] == 3 and agg["mean_all"]["file@1"] == pytest.approx(2 / 3)
    assert agg["mean_all"]["line@1"] == pytest.approx(1 / 3)
    assert agg["mean_non_infra"]["n"] == 3
    assert agg == aggregate_outcomes(RunResults.model_validate(data).tasks)

    # green declared ARVO's metrics: iou is continuous although every iou here is 0 or 1
    assert data["kinds"]["arvo"] == {
        "metrics": METRIC_NAMES,
        "continuous": CONTINUOUS_NAMES,
        "fields": None,
    }
    assert {t["scores"]["iou"] for t in data["tasks"] if t["scores"]} == {0.0, 1.0}
    assert RunResults.model_validate(data).binary() == set(METRIC_NAMES) - CONTINUOUS

    # per-task folders: green's view with the full score and explanation, commands, trajectory
    d1 = tmp_path / "r1" / t1["dir"]
    assert d1.name == f"arvo_1001-{t1['task_id'][:8]}"
    task_json = json.loads((d1 / "task.json").read_text())
    assert task_json["id"] == t1["task_id"] and task_json["status"] == "completed"
    assert task_json["scores"]["explanation"] and task_json["scores"]["locations"][0]["line_match"]
    commands = json.loads((d1 / "commands.json").read_text())
    assert [c["seq"] for c in commands] == list(range(1, task_json["steps"] + 1))
    trajectory = json.loads((d1 / "trajectory.json").read_text())  # through green, as served
    assert trajectory["steps"][0]["messages"][0]["content"] == "execute: ls"
    saved = atif.Trajectory.model_validate_json((d1 / "trajectory.atif.json").read_text())
    assert [(s.message, s.metrics.prompt_tokens) for s in saved.steps] == [("execute: ls", 700)]
    assert (
        saved.session_id == t1["task_id"]
        and oct((d1 / "trajectory.atif.json").stat().st_mode)[-3:] == "600"
    )
    d2 = tmp_path / "r1" / t2["dir"]
    assert (d2 / "task.json").exists() and not list(d2.glob("trajectory*"))

    # arena export: one ATIF file per task whose trajectory the run saved, the others named
    exported = cli("export", str(tmp_path / "r1"), "--format", "atif")
    assert exported.exit_code == 0, exported.output
    files = sorted((tmp_path / "r1" / "atif").iterdir())
    assert [f.name for f in files] == [f"{d1.name}.atif.json"]
    assert atif.Trajectory.model_validate_json(files[0].read_text()) == saved
    said = exported.output
    assert "not exported: arvo:1002: trajectory not saved: green answered HTTP 502" in said
    assert "not exported: arvo:1003" in said and "1 ATIF file(s)" in said
    bad = cli("export", str(tmp_path / "r1"), "--format", "otel")
    assert bad.exit_code == 2 and "is not one of 'atif'" in bad.output

    # report and plot
    report = (tmp_path / "r1" / "report.md").read_text()
    assert "| all tasks | 3 | 0.667 [" in report
    assert "| failed: agent | 1 |" in report
    assert "![per-task scores, cost and steps](scores.png)" in report
    assert f"[{t1['task_id'][:8]}]({t1['dir']}/task.json)" in report
    # ours (iou: 1.00), then FLBench's twelve (continuous: two decimals)
    assert (
        "| completed | 4 | 1 | 1 | 1 | 1 | 1 | 1 | 1.00 | " + "1.00 | " * 12 + "0.0125 |" in report
    )
    png = tmp_path / "r1" / "scores.png"
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert mpimg.imread(png).shape[0] > 100

    # the live table's last frame and the summary went to the terminal
    assert "arvo:1001" in res.output and "mean over" in res.output

    # the leaderboard queries run with DuckDB over the file the run wrote, as over AgentBeats'
    con = duckdb.connect()
    board = tmp_path / "*" / "leaderboard.json"
    con.execute(f"CREATE VIEW results AS SELECT * FROM read_json_auto('{board}')")
    for q in json.loads((REPO / "docs" / "leaderboard" / "queries.json").read_text()):
        rows = con.execute(q["query"]).fetchall()
        assert rows and {r[0] for r in rows} == {"r1"}, q["name"]
    row = json.loads((tmp_path / "r1" / "leaderboard.json").read_text())["results"][0]
    assert (row["n_tasks"], row["file_at_1"]) == (3, agg["mean_all"]["file@1"])


def test_unknown_tasks_stop_the_run_before_it_starts(fake, tmp_path: Path) -> None:
    """Green does not know two of the ids (say, fixtures not built yet): the run starts nothing,
    names both with green's word on how to build them, records nothing and exits 4. Before, each
    was a 404 recorded as an infra failure scoring 0 in mean_all, and the run exited 0."""
    green, green_url, _ = fake
    res = cli("run", "1001", "9999", "8888", *base_args(green_url, tmp_path))
    assert res.exit_code == 4, res.output
    out = " ".join(res.output.split())
    assert "green does not know 2 of the run's tasks" in out
    assert "arvo:9999: not in the dataset; build it with: make arvo:9999" in out
    assert "arvo:8888: not in the dataset; build it with: make arvo:8888" in out
    assert "uv run python -m fixtures.build" in out and "Nothing was started" in out
    assert not green.posts and not green.runs
    assert not (tmp_path / "r1").exists()


def test_a_run_whose_attempts_all_failed_exits_1(fake, tmp_path: Path) -> None:
    _, green_url, _ = fake
    res = cli("run", "1003", *base_args(green_url, tmp_path))
    assert res.exit_code == 1, res.output
    assert "none of the 1 attempt(s) run now completed" in " ".join(res.output.split())
    assert by_id(load(tmp_path))["1003"]["status"] == "failed"  # recorded all the same


def test_a_task_green_refused_is_listed_and_enters_no_mean() -> None:
    refused = RunOutcome(
        ref="arvo:2", status="failed", failure_kind="infra", end_reason=REFUSED, error="HTTP 404"
    )
    hit = RunOutcome(ref="arvo:1", status="completed", scores=HIT)
    agg = aggregate_outcomes([hit, refused])
    assert agg["n_tasks"] == 1 and agg["mean_all"]["n"] == 1 and agg["mean_all"]["file@1"] == 1
    assert agg == aggregate_outcomes([hit])


def test_a_huge_trajectory_is_not_read_past_the_cap(fake, tmp_path: Path, monkeypatch) -> None:
    """A hostile trajectory (here 64 MiB of spaces, at a cap of 4 MiB) is streamed to disk and
    given up at the cap: nothing of it is saved, and green was not read to its end. Before, the
    client read any trajectory whole into memory and saved it whole (1.5 GiB took it to 6 GiB)."""
    green, green_url, _ = fake
    monkeypatch.setattr(arena_client, "TRAJECTORY_MAX_BYTES", 4 * 1024**2)
    green.huge_trajectory = 64 * 1024**2
    res = cli("run", "1001", *base_args(green_url, tmp_path))
    assert res.exit_code == 0, res.output
    [t1] = load(tmp_path)["tasks"]
    assert t1["trajectory"] is False
    assert any("larger than 4,194,304 bytes" in n for n in t1["notes"]), t1["notes"]
    assert not list((tmp_path / "r1" / t1["dir"]).glob("trajectory.json*"))
    assert green.trajectory_sent < 32 * 1024**2  # the client hung up near the cap


def test_resume_skips_completed_and_retry_failed_reruns(fake, tmp_path: Path) -> None:
    green, green_url, _ = fake
    args = base_args(green_url, tmp_path)
    assert cli("run", "1001", "1004", *args).exit_code == 0
    first = by_id(load(tmp_path))
    assert first["1001"]["status"] == "completed" and first["1004"]["status"] == "failed"

    # resume (the default) without ids: completed and failed ids are kept, nothing is posted
    res = cli("run", *args)
    assert res.exit_code == 0, res.output
    assert green.posts == Counter({"1001": 1, "1004": 1})
    assert "failed id(s) kept" in res.output
    second = load(tmp_path)
    assert by_id(second)["1004"]["task_id"] == first["1004"]["task_id"]
    assert len(second["sessions"]) == 2 and second["sessions"][1]["submitted"] == []

    # a new id joins the run; only it is posted
    assert cli("run", "1002", *args).exit_code == 0
    assert green.posts == Counter({"1001": 1, "1004": 1, "1002": 1})
    assert load(tmp_path)["task_ids"] == ["arvo:1001", "arvo:1004", "arvo:1002"]

    # --retry-failed runs 1004 again (it passes the second time); 1001 stays untouched
    res = cli("run", *args, "--retry-failed")
    assert res.exit_code == 0, res.output
    assert green.posts == Counter({"1001": 1, "1004": 2, "1002": 1})
    third = load(tmp_path)
    t = by_id(third)
    assert t["1004"]["status"] == "completed" and t["1004"]["attempts"] == 2
    assert t["1004"]["task_id"] != first["1004"]["task_id"]
    assert t["1001"]["task_id"] == first["1001"]["task_id"] and t["1001"]["attempts"] == 1
    assert third["aggregate"]["by_status"]["completed"] == 3
    assert third["sessions"][-1]["submitted"] == ["arvo:1004"]

    # --no-resume starts over: everything is posted again
    assert cli("run", "1001", *args, "--no-resume").exit_code == 0
    assert green.posts["1001"] == 2
    assert load(tmp_path)["task_ids"] == ["arvo:1001"]


def test_report_command_rerenders(fake, tmp_path: Path) -> None:
    _, green_url, _ = fake
    assert cli("run", "1001", "1003", *base_args(green_url, tmp_path)).exit_code == 0
    run_dir = tmp_path / "r1"
    before = (run_dir / "report.md").read_text()
    (run_dir / "report.md").unlink()
    (run_dir / "scores.png").unlink()
    res = cli("report", str(run_dir))
    assert res.exit_code == 0, res.output
    assert (run_dir / "report.md").read_text() == before
    assert (run_dir / "scores.png").read_bytes()[:8] == PNG_MAGIC
    assert cli("report", str(run_dir / "results.json")).exit_code == 0
    assert cli("report", str(tmp_path)).exit_code == 2  # a folder without results.json


def test_green_unreachable_exits_2(tmp_path: Path) -> None:
    res = cli("run", "1001", *base_args(f"http://127.0.0.1:{free_port()}", tmp_path))
    assert res.exit_code == 2
    assert "not reachable" in res.output
    assert not (tmp_path / "r1" / "results.json").exists()


def test_green_lost_mid_run_exits_2_and_keeps_results(fake, tmp_path: Path) -> None:
    green, green_url, _ = fake
    res = cli(
        "run",
        "1001",
        "7007",
        "1002",
        *base_args(green_url, tmp_path),
        "--concurrency",
        "1",
        "--green-grace",
        "0.5",
    )
    assert res.exit_code == 2, res.output
    assert "did not answer" in res.output
    data = load(tmp_path)
    assert [t["ref"] for t in data["tasks"]] == ["arvo:1001"]  # 7007 and 1002 stay pending
    assert data["finished_at"] is None and "did not answer" in data["sessions"][0]["error"]
    assert "not run" in (tmp_path / "r1" / "report.md").read_text()
    assert green.posts["1002"] == 0


def test_no_ids_and_bad_ids(fake, tmp_path: Path) -> None:
    green, green_url, _ = fake
    assert cli("run", *base_args(green_url, tmp_path)).exit_code == 2
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("# a batch\narvo:1001  # first\n\nnot-an-id, 1001\n")
    assert split_refs([ids_file.read_text()]) == ["arvo:1001", "not-an-id", "1001"]
    res = cli("run", "--ids-file", str(ids_file), *base_args(green_url, tmp_path))
    # a well-formed reference is green's to judge: it refused this one, so nothing started
    assert res.exit_code == 4, res.output
    assert "arvo:not-an-id: not in the dataset" in res.output
    assert not green.posts and not (tmp_path / "r1").exists()
    # what is not a reference at all is refused before anything is sent
    posts = sum(green.posts.values())
    res = cli("run", "1001", "../etc", "x/y", *base_args(green_url, tmp_path, run="r2"))
    assert res.exit_code == 2 and "not a task reference: '../etc'" in res.output
    assert "'x/y'" in res.output and sum(green.posts.values()) == posts
    assert not (tmp_path / "r2").exists()


def test_a_run_of_another_kind_is_keyed_by_greens_reference(fake, tmp_path: Path) -> None:
    """Any kind green offers passes through: the reference is sent as written, green's answer
    (here lower-casing the instance id) names it in the run, the metrics are the kind's."""
    green, green_url, _ = fake
    res = cli("run", "swebench:Demo__demo-1", "1001", *base_args(green_url, tmp_path))
    assert res.exit_code == 0, res.output
    assert sorted(b["task"] for b in green.bodies) == ["arvo:1001", "swebench:Demo__demo-1"]
    data = load(tmp_path)
    assert data["task_ids"] == ["swebench:demo__demo-1", "arvo:1001"]
    swe = next(t for t in data["tasks"] if t["kind"] == "swebench")
    assert swe["ref"] == "swebench:demo__demo-1" and swe["scores"] == {"resolved": 1.0}
    assert swe["dir"].startswith("tasks/swebench_demo__demo-1-")
    by_kind = data["aggregate"]["by_kind"]  # each metric over its own kind's tasks
    assert list(by_kind) == ["swebench", "arvo"]
    assert by_kind["swebench"]["metrics"] == ["resolved"] and by_kind["arvo"]["metrics"] == (
        METRIC_NAMES
    )
    assert by_kind["swebench"]["mean_all"] == {"n": 1, "resolved": 1.0}
    assert by_kind["arvo"]["mean_all"]["n"] == 1
    report = (tmp_path / "r1" / "report.md").read_text()
    assert "## Aggregate of the swebench tasks (1)" in report
    assert "## Aggregate of the arvo tasks (1)" in report
    assert "| ref | task | status | steps | resolved | file@1 |" in report
    assert "| swebench:demo__demo-1 | [" in report
    # resuming finds both ended under green's names: nothing runs again
    res = cli("run", *base_args(green_url, tmp_path))
    assert res.exit_code == 0, res.output
    assert green.posts == Counter({"swebench:Demo__demo-1": 1, "1001": 1})


def test_results_written_before_task_kinds_still_load(tmp_path: Path) -> None:
    """Schema 1 (outcomes keyed by the deprecated ``arvo_id``, bare ids) loads, reports and
    resumes as ARVO references."""
    old = {
        "schema_version": 1,
        "run": "old",
        "green": "http://g",
        "task_ids": ["1001", "1002", "1003"],
        "sessions": [{"started_at": "2026-01-01T00:00:00+00:00", "submitted": ["1001"]}],
        "tasks": [
            {
                "arvo_id": "1001",
                "task_id": "t1",
                "status": "completed",
                "steps": 4,
                "scores": {k: HIT[k] for k in METRIC_NAMES} | {"submitted": True, "project": "p"},
                "dir": "tasks/1001-t1",
            },
            {
                "arvo_id": "1002",
                "trial": 1,
                "task_id": None,
                "status": "failed",
                "failure_kind": "infra",
                "end_reason": "rejected",
                "error": "HTTP 404",
            },
        ],
        "aggregate": {},
    }
    run_dir = tmp_path / "old"
    run_dir.mkdir()
    (run_dir / "results.json").write_text(json.dumps(old))
    results = RunResults.load(run_dir / "results.json")
    assert results.task_ids == ["arvo:1001", "arvo:1002", "arvo:1003"]
    assert [o.ref for o in results.tasks] == ["arvo:1001", "arvo:1002"]
    assert results.pending(retry_failed=False) == [(TaskRef("arvo", "1003"), 1)]
    res = cli("report", str(run_dir))
    assert res.exit_code == 0, res.output
    report = (run_dir / "report.md").read_text()
    assert "| arvo | task | status | steps | file@1 | file@5 |" in report
    assert "| arvo:1001 | [t1](tasks/1001-t1/task.json) | completed | 4 | 1 | 1 | 1 |" in report
    assert "| arvo:1003 | - | not run |" in report
    # 1002 was refused by green (it never ran): listed, but in no mean
    assert "| arvo:1002 | - | failed |" in report and "| all tasks | 1 | 1.000" in report


def test_ctrl_c_cancels_in_flight_tasks_and_saves(fake, tmp_path: Path) -> None:
    """Through the installed ``arena`` entry point (the one test of it: the others run the typer
    app in-process); a real process, so a real SIGINT."""
    green, green_url, _ = fake
    entry = Path(sys.executable).with_name("arena")
    assert entry.exists() or shutil.which("arena"), "the arena entry point is not installed"
    proc = subprocess.Popen(
        [
            str(entry if entry.exists() else shutil.which("arena")),
            "run",
            "1001",
            "5005",
            *base_args(green_url, tmp_path),
            "--concurrency",
            "2",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "COLUMNS": "120"},
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # 1001 ended and saved, 5005 running on green
            path = tmp_path / "r1" / "results.json"
            if path.exists() and "1001" in by_id(json.loads(path.read_text())):
                running = [t for t in green.tasks.values() if t["view"]["ref_id"] == "5005"]
                if running and running[0]["view"]["status"] == "running":
                    break
            time.sleep(0.05)
        else:
            pytest.fail("the run did not get going")
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=30)[0].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, output
    assert "resume with" in output
    task_5005 = next(tid for tid, t in green.tasks.items() if t["view"]["ref_id"] == "5005")
    assert green.cancels == [task_5005]
    data = load(tmp_path)
    t = by_id(data)
    assert t["1001"]["status"] == "completed"
    assert t["5005"]["status"] == "cancelled" and t["5005"]["task_id"] == task_5005
    assert (tmp_path / "r1" / t["5005"]["dir"] / "task.json").exists()
    assert data["sessions"][0]["interrupted"] is True and data["finished_at"] is None
    assert (tmp_path / "r1" / "report.md").exists()

    # resuming runs the cancelled id again and keeps the completed one
    res = cli("run", *base_args(green_url, tmp_path))
    assert res.exit_code == 0, res.output
    assert green.posts == Counter({"1001": 1, "5005": 2})
    t = by_id(load(tmp_path))
    assert t["5005"]["status"] == "completed" and t["5005"]["attempts"] == 2


def test_api_token_goes_to_green_only_and_is_never_saved(fake, tmp_path: Path) -> None:
    green, green_url, purple_url = fake
    green.purple_authorizations.clear()
    res = cli(
        "run",
        "1001",
        *base_args(green_url, tmp_path),
        "--purple",
        purple_url,
        "--api-token",
        "s3cret",
    )
    assert res.exit_code == 0, res.output
    assert green.authorizations and set(green.authorizations) == {"Bearer s3cret"}
    assert green.purple_authorizations == []  # the client never calls purple: green does
    saved = "".join(p.read_text() for p in tmp_path.rglob("*") if p.suffix in (".json", ".md"))
    assert "s3cret" not in saved


def test_resume_runs_tasks_that_never_started_because_purple_was_unreachable() -> None:
    """Only a task purple never reached and never used; one that ran a command before its
    hand-over failed (an older green called it purple_unreachable too) is not a free re-roll."""
    results = RunResults(run="r", green="g", task_ids=["1", "2", "3", "4", "5"])
    unreachable = {"status": "failed", "end_reason": "purple_unreachable", "failure_kind": "agent"}
    results.tasks = [
        RunOutcome(ref="arvo:1", status="completed"),
        RunOutcome(ref="arvo:2", **unreachable),
        RunOutcome(ref="arvo:3", status="failed", end_reason="purple_lost", failure_kind="agent"),
        RunOutcome(ref="arvo:5", steps=3, **unreachable),
    ]
    ref = {i: TaskRef("arvo", str(i)) for i in range(1, 6)}
    assert results.pending(retry_failed=False) == [(ref[2], 1), (ref[4], 1)]
    assert results.pending(retry_failed=True) == [
        (ref[2], 1),
        (ref[3], 1),
        (ref[4], 1),
        (ref[5], 1),
    ]
