"""The dashboard's run page shows each mean with its 95% interval, the floors and pass@k; the task
page shows the trajectory audit's flags."""

from __future__ import annotations

import uuid

import httpx
import pytest

from services.green.store.crud import AssessmentStore, TaskStore
from services.green.store.db import make_engine
from services.green.store.models import AssessmentRecord, Command, Task, TaskStatus, utcnow

pytestmark = pytest.mark.docker

TOKEN = "s3cret-operator-token"


def _scores(hit: float, project: str) -> dict:
    return {
        **dict.fromkeys(("file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou"), hit),
        "submitted": True,
        "project": project,
        "floors": {
            "empty": dict.fromkeys(("file@1", "iou"), 0.0),
            "crash_frame": {"file@1": 1.0, "iou": 0.0},
        },
    }


def _seed(store: TaskStore, run: str, ref: str, trial: int, hit: float, commands: list[str]) -> str:
    task_id = str(uuid.uuid4())
    store.add(
        Task(
            id=task_id,
            ref_id=ref,
            trial=trial,
            purple_url="http://127.0.0.1:9",
            max_steps=10,
            task_timeout_s=60,
            command_timeout_s=10,
            status=TaskStatus.completed,
            owner="someone-else",
            assessment_id=run,
            scores=_scores(hit, f"p{ref}"),
            submission={"locations": [{"file": "src/x.c", "line_start": 1, "line_end": 1}]},
            finished_at=utcnow(),
        )
    )
    for seq, cmd in enumerate(commands, 1):
        store.add_command(
            Command(task_id=task_id, seq=seq, command=cmd, exit_code=0, duration_s=0.01, output="")
        )
    return task_id


def test_run_page_intervals_floors_trials_and_task_page_audit(start_green, green_settings):
    green = start_green(api_token=TOKEN)
    store = TaskStore(make_engine(green_settings.database_url))
    run = str(uuid.uuid4())
    engine = make_engine(green_settings.database_url)
    AssessmentStore(engine).add(
        AssessmentRecord(id=run, purple_url="http://127.0.0.1:9", request={}, owner="someone-else")
    )
    flagged = _seed(store, run, "900001", 1, 1.0, ["git log -p", "curl http://x", "cat src/x.c"])
    _seed(store, run, "900001", 2, 0.0, ["cat src/x.c"])
    _seed(store, run, "900002", 1, 1.0, ["cat src/x.c"])
    _seed(store, run, "900002", 2, 1.0, ["cat src/x.c"])
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=green.url, timeout=30, headers=auth) as c:
        page = c.get(f"/ui/runs/{run}").text
        assert 'id="means"' in page and "korn-graubard" in page and "clustered by project" in page
        means = page.split('id="means"', 1)[1].split("</thead>", 1)[0]  # the aggregate's metrics
        assert [m for m in ("file@1", "line@5", "iou") if f'<th scope="col">{m}</th>' in means] == [
            "file@1",
            "line@5",
            "iou",
        ]
        assert "[0." in page or "[1." in page  # an interval bracket under a mean
        assert "floor: crash-frame baseline" in page
        assert 'id="trials"' in page and "pass@2" in page and "pass^2" in page
        trials = page.split('id="trials"', 1)[1].split("</table>", 1)[0]
        assert '<th scope="col">n</th>' in trials and "the n tasks with 2 non-infra" in page
        task_page = c.get(f"/ui/tasks/{flagged}").text
        assert "Trajectory audit" in task_page
        assert "git history or blame used" in task_page and "network attempt" in task_page
        clean = c.get(f"/ui/tasks/{store_task(store, run, '900002')}").text
        assert "No flag raised." in clean


def store_task(store: TaskStore, run: str, ref: str) -> str:
    return next(t.id for t in store.run_tasks(run) if t.ref_id == ref)
