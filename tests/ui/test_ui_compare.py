"""The dashboard's comparison page: /ui/compare?runs=A,B gives per metric the paired difference
with the interval and p of one sign-flip test, win/loss/tie, lists every task not compared with
each side's reason, and refuses runs scored with another scoring rule or image, or without
provenance, unless force=1."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from services.green.store.crud import AssessmentStore, TaskStore
from services.green.store.db import make_engine
from services.green.store.models import AssessmentRecord, FailureKind, Task, TaskStatus, utcnow

pytestmark = pytest.mark.docker

TOKEN = "s3cret-operator-token"
METRICS = ("file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou")


def _prov(image: str = "sha256:aaa", rule: str = "arvo-loc-1") -> dict:
    return {"scoring": {"kind": "arvo", "version": rule}, "image": {"id": image}}


def _run(engine, store: TaskStore, tasks: list[tuple[str, float | None, dict]]) -> str:
    """An assessment with one task per (ref, hit or None for an infra failure, provenance)."""
    run = str(uuid.uuid4())
    AssessmentStore(engine).add(
        AssessmentRecord(id=run, purple_url="http://127.0.0.1:9", request={}, owner="someone-else")
    )
    for ref, hit, prov in tasks:
        failed = hit is None
        store.add(
            Task(
                id=str(uuid.uuid4()),
                ref_id=ref,
                purple_url="http://127.0.0.1:9",
                max_steps=10,
                task_timeout_s=60,
                command_timeout_s=10,
                status=TaskStatus.failed if failed else TaskStatus.completed,
                failure_kind=FailureKind.infra if failed else None,
                end_reason="container_error" if failed else "submitted",
                owner="someone-else",
                assessment_id=run,
                scores=None
                if failed
                else {**dict.fromkeys(METRICS, hit), "submitted": True, "project": f"p{ref}"},
                provenance=prov,
                finished_at=utcnow(),
            )
        )
    return run


def test_compare_page_paired_difference_lost_tasks_and_refusal(start_green, green_settings):
    green = start_green(api_token=TOKEN)
    engine = make_engine(green_settings.database_url)
    store = TaskStore(engine)
    refs = ["910001", "910002", "910003", "910004", "910005"]
    a = _run(engine, store, [(r, 1.0, _prov()) for r in refs])
    b_tasks = [("910001", 1.0, _prov())] + [(r, 0.0, _prov()) for r in refs[1:4]]
    b = _run(engine, store, [*b_tasks, ("910005", None, _prov())])
    moved = _run(
        engine,
        store,
        [(r, 1.0, _prov("sha256:bbb" if r == "910002" else "sha256:aaa")) for r in refs],
    )
    bare = _run(engine, store, [(r, 0.0, None) for r in refs])
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=green.url, timeout=30, headers=auth) as c:
        runs_page = c.get("/ui").text
        assert 'action="/ui/compare"' in runs_page and f'name="runs" value="{a}"' in runs_page

        resp = c.get("/ui/compare", params={"runs": f"{a},{b}"})
        assert resp.status_code == 200, resp.text
        page = resp.text
        # 4 tasks both scored: A hits all, B hits one -> +0.75; 3 wins 0 losses: the exact sign
        # (McNemar) test's p = 2/8; with 4 projects no shift can be rejected: [-1, +1]
        assert "4 task(s) scored by both" in page
        row = re.search(r"<th scope=\"row\">file@1</th>(.*?)</tr>", page, re.S).group(1)
        assert "+0.750 [-1.000, +1.000]" in row and "<td>0.25</td>" in row and "3 / 0 / 1" in row
        lost = page.split("Not compared", 1)[1]
        assert "arvo:910005" in lost and "failed (infra: container_error)" in lost
        assert "sign-flip test" in page
        assert "<script>" not in page and "style=" not in page and "<style" not in page
        # the checkboxes' form sends runs=A&runs=B
        assert c.get("/ui/compare", params=[("runs", a), ("runs", b)]).status_code == 200

        refused = c.get("/ui/compare", params={"runs": f"{a},{moved}"})
        assert refused.status_code == 409
        assert (
            "Refused" in refused.text
            and "task arvo:910002 was scored with a different image" in refused.text
        )
        assert '<table class="compare">' not in refused.text
        forced = c.get("/ui/compare", params={"runs": f"{a},{moved}", "force": "1"})
        assert forced.status_code == 200 and "Compared anyway" in forced.text
        assert "5 task(s) scored by both" in forced.text

        no_prov = c.get("/ui/compare", params={"runs": f"{a},{bare}"})
        assert no_prov.status_code == 409
        assert f"run {bare} records no provenance" in no_prov.text

        one = c.get("/ui/compare", params={"runs": a})
        assert one.status_code == 422 and "at least two assessment ids" in one.text
        unknown = c.get("/ui/compare", params={"runs": f"{a},{uuid.uuid4()}"})
        assert unknown.status_code == 404 and "no run" in unknown.text
        assert c.get("/ui/compare", params={"runs": f"{a},{a}"}).status_code == 422


def test_a_comparison_of_runs_of_several_kinds_is_one_pair_per_kind(start_green, green_settings):
    """Each metric over its own kind's tasks: 2 locate and 2 reproduce tasks per run; the
    locate pair never counts a reproduce task as a locate miss."""
    green = start_green(api_token=TOKEN)
    engine = make_engine(green_settings.database_url)
    store = TaskStore(engine)

    def run(locate: float, reproduce: float) -> str:
        rid = _run(engine, store, [(r, locate, _prov()) for r in ("910001", "910002")])
        for ref in ("910003", "910004"):
            scores = dict.fromkeys(("reproduced", "fix_distinguishes", "same_bug"), reproduce)
            store.add(
                Task(
                    id=str(uuid.uuid4()),
                    kind="arvo-poc",
                    ref_id=f"{ref}-l2",
                    purple_url="http://127.0.0.1:9",
                    max_steps=10,
                    task_timeout_s=60,
                    command_timeout_s=10,
                    status=TaskStatus.completed,
                    end_reason="submitted",
                    owner="someone-else",
                    assessment_id=rid,
                    scores={**scores, "submitted": True, "project": f"p{ref}"},
                    provenance=_prov(rule="arvo-poc-1"),
                    finished_at=utcnow(),
                )
            )
        return rid

    a, b = run(1.0, 1.0), run(0.0, 1.0)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=green.url, timeout=30, headers=auth) as c:
        resp = c.get("/ui/compare", params={"runs": f"{a},{b}"})
    assert resp.status_code == 200, resp.text
    page = resp.text
    assert ": arvo tasks</h2>" in page and ": arvo-poc tasks</h2>" in page
    locate = page.split(": arvo tasks</h2>", 1)[1].split("</section>", 1)[0]
    assert "2 task(s) scored by both" in locate and "reproduced" not in locate
    row = re.search(r"<th scope=\"row\">file@1</th>(.*?)</tr>", locate, re.S).group(1)
    assert "<td>1</td><td>0</td>" in row.replace("\n", "") and "2 / 0 / 0" in row
    poc = page.split(": arvo-poc tasks</h2>", 1)[1].split("</section>", 1)[0]
    assert "file@1" not in poc and "2 / 0 / 0" not in poc
    assert "McNemar" in locate  # one trial, hit/miss values, every task its own project
