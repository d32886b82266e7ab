"""Every page leads with the result, at 1400 by 900 pixels, in a real browser; each list shows each kind's
own columns, trials numbered, runs by name.

The tasks are ended tasks of the three ARVO kinds, written to green's database as green records
them: the locate task scored by the real judge against the real ground truth of arvo:900007
(the submission of ``test_dashboard_browser``: rank 1 a miss, rank 2 the fix), the reproduce
and fix tasks with the judges' own score models and runs carrying the task's real sanitizer
report; a named run of three trials, and a second named run to compare it with. Screenshots of
each page land in build/artifacts/ui/result-first-*.png.
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from pathlib import Path

import pytest

from services.green.kinds.arvo.builds.runs import InputRun
from services.green.kinds.arvo.fix.judge import FixScore
from services.green.kinds.arvo.judge import Judge
from services.green.kinds.arvo.poc.judge import PocScore
from services.green.store.crud import AssessmentStore, TaskStore
from services.green.store.db import make_engine
from services.green.store.models import AssessmentRecord, Command, Task, TaskStatus, utcnow
from services.shared.loc import LocJson
from tests.ui.test_dashboard_browser import submission_for_900007

pytestmark = [pytest.mark.docker, pytest.mark.browser]

TOKEN = "result-first-token"
WIDTH, FOLD = 1400, 900
LONG_COMMAND = "python3 - <<'EOF'\n" + "\n".join(f"print({i})  # a long script" for i in range(40))


def _task(ref: str, kind: str, scores: dict, submission: dict, **fields) -> Task:
    return Task(
        id=str(uuid.uuid4()),
        kind=kind,
        ref_id=ref,
        bug=f"arvo:{ref.split('-')[0]}",
        purple_url="http://127.0.0.1:9",
        max_steps=30,
        task_timeout_s=600,
        command_timeout_s=60,
        status=TaskStatus.completed,
        end_reason="submitted",
        owner="another-replica",
        steps=fields.pop("steps", 3),
        started_at=utcnow(),
        finished_at=utcnow(),
        scores=scores,
        submission=submission,
        ground_truth=fields.pop("ground_truth", {"files": []}),
        **fields,
    )


def _locate(assets: Path, **fields) -> Task:
    locations = submission_for_900007(assets)
    prepared = Judge().prepare(
        assets / "900007" / "patch.diff", assets / "900007" / "repo-vul.tar.gz"
    )
    loc = LocJson.model_validate({"locations": locations})
    score = Judge().score(loc, prepared).to_dict()
    gt = prepared.ground_truth.model_dump(mode="json")
    return _task("900007", "arvo", score, {"locations": locations}, ground_truth=gt, **fields)


def _report(assets: Path) -> str:
    return (assets / "900007" / "error.txt").read_text()


def _reproduce(assets: Path) -> Task:
    data = b"\x78\x9c" + bytes(range(40))
    crash = InputRun(build="vulnerable", input="submission", exit_code=1, crashed=True,
                     sanitizer="AddressSanitizer: global-buffer-overflow",
                     frame="tinf_match_length (/src/tinflate/src/tables.c)", output=_report(assets))  # fmt: skip
    clean = InputRun(build="fixed", input="submission", exit_code=0)
    score = PocScore(reproduced=1.0, fix_distinguishes=1.0, same_bug=1.0, submitted=True,
                     input_bytes=len(data), runs=[crash, clean],
                     explanation=["vulnerable build: crashes (AddressSanitizer: global-buffer-overflow)",
                                  "fixed build: runs clean"])  # fmt: skip
    sub = {"data": base64.b64encode(data).decode(), "size": len(data),
           "sha256": hashlib.sha256(data).hexdigest()}  # fmt: skip
    return _task("900007", "arvo-poc", score.model_dump(mode="json"), sub)


def _fix() -> Task:
    patch = (
        "diff --git a/src/tables.c b/src/tables.c\n--- a/src/tables.c\n+++ b/src/tables.c\n"
        "@@ -20,3 +20,4 @@\n int tinf_match_length(int sym) {\n+    if (sym < 257) return 0;\n"
        "     return base[sym - 257];\n }\n"
    )
    runs = [InputRun(build="patched", input="poc", exit_code=0), InputRun(build="fixed", input="poc", exit_code=0)]  # fmt: skip
    score = FixScore(applied=1.0, builds=1.0, crash_fixed=1.0, behaviour_kept=0.0, resolved=0.0,
                     submitted=True, patch_files=["src/tables.c"], runs=runs,
                     explanation=["not resolved", "the PoC on the patched build: runs clean",
                                  "a fuzzing run found an input the patched build fails on"])  # fmt: skip
    return _task("900007", "arvo-fix", score.model_dump(mode="json"), {"patch": patch}, steps=0)


def _seed(database_url: str, assets: Path) -> dict[str, str]:
    engine = make_engine(database_url)
    store, runs = TaskStore(engine), AssessmentStore(engine)
    ids = {}
    for name in ("baseline", "candidate"):
        run_id = str(uuid.uuid4())
        runs.add(AssessmentRecord(id=run_id, purple_url="http://127.0.0.1:9", owner="another-replica",
                                  request={"name": name, "trials": 3, "source": "client run"}))  # fmt: skip
        ids[name] = run_id
        for trial in (1, 2, 3):
            task = _locate(assets, assessment_id=run_id, trial=trial)
            store.add(task)
            ids.setdefault(f"{name}-trial", task.id)
    locate = _locate(assets)
    store.add(locate)
    for seq, command in enumerate(["head -20 /workspace/error.txt", LONG_COMMAND], 1):
        store.add_command(Command(task_id=locate.id, seq=seq, command=command, exit_code=0,
                                  duration_s=0.1, output="\n".join(map(str, range(30)))))  # fmt: skip
    reproduce, fix = _reproduce(assets), _fix()
    store.add(reproduce)
    store.add(fix)
    return {**ids, "locate": locate.id, "reproduce": reproduce.id, "fix": fix.id}


def _above_the_fold(page, selector: str) -> None:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    assert box["y"] + min(box["height"], 60) <= FOLD, f"{selector} starts at {box['y']:.0f} px"


def _headers(page, table: str) -> list[str]:
    return [h.strip() for h in page.locator(f"{table} thead th").all_inner_texts()]


def _log_in(page, url: str) -> None:
    page.goto(f"{url}/ui/tasks")  # sent to the login page, and back once logged in
    page.fill("#token", TOKEN)
    page.click("form.stack button[type=submit]")
    page.wait_for_url(re.compile(r".*/ui/tasks$"))


def test_every_page_leads_with_the_result(
    start_green, green_settings, fixture_assets, browser, shoot
):
    green = start_green(api_token=TOKEN)
    ids = _seed(green_settings.database_url, fixture_assets)
    context = browser.new_context(viewport={"width": WIDTH, "height": FOLD})
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        _log_in(page, green.url)

        page.goto(f"{green.url}/ui/tasks/{ids['locate']}")
        shoot(page, "result-first-locate", full_page=False)
        verdict = page.locator("#verdict").inner_text()
        assert "completed" in verdict and "file@1" in verdict and "line@1" in verdict, verdict
        _above_the_fold(page, "#verdict")
        _above_the_fold(page, "#scores")
        _above_the_fold(page, "#submission")
        _above_the_fold(page, "#ground-truth")
        report = page.locator("#report")  # the box opens on the sanitizer, not libFuzzer's INFO
        assert report.inner_text().startswith("==") and "INFO:" not in report.inner_text()
        assert "#0 " in report.inner_text().split("\n", 5)[-1] or "#0 " in report.inner_text()[:400]
        assert not page.locator("#commands").is_visible()  # folded below the result
        page.click("#commands-box > summary")
        long_one = page.locator("#commands > li").nth(1).locator("summary .cmd")
        assert long_one.bounding_box()["height"] < 80, "a long command fills the list"

        page.goto(f"{green.url}/ui/tasks/{ids['reproduce']}")
        shoot(page, "result-first-reproduce", full_page=False)
        assert "reproduced" in page.locator("#verdict").inner_text()
        _above_the_fold(page, "#submitted-input")
        _above_the_fold(page, "#runs")

        page.goto(f"{green.url}/ui/tasks/{ids['fix']}")
        shoot(page, "result-first-fix", full_page=False)
        verdict = page.locator("#verdict").inner_text()
        assert "resolved" in verdict and "behaviour_kept" in verdict, verdict
        _above_the_fold(page, "#submitted-patch")
        _above_the_fold(page, "#judge-steps")
        assert "No command yet" not in page.locator("main").inner_text()

        page.goto(f"{green.url}/ui/tasks?kind=arvo-poc")
        assert _headers(page, "#tasks")[6:9] == ["reproduced", "fix_distinguishes", "same_bug"]
        page.goto(f"{green.url}/ui/tasks?kind=arvo-fix")
        fix_columns = ["applied", "builds", "crash_fixed", "behaviour_kept", "resolved"]
        assert _headers(page, "#tasks")[6:11] == fix_columns
        page.goto(f"{green.url}/ui/tasks")
        shoot(page, "result-first-tasks", full_page=False)
        headers = _headers(page, "#tasks")
        assert "file@1" not in headers and "scores" in headers  # three kinds: each row its own
        rows = page.locator("#task-rows tr")
        fix_row = rows.filter(has_text="arvo-fix:900007").first.inner_text()
        assert "resolved" in fix_row and "file@1" not in fix_row, fix_row
        assert "trial" in headers and "baseline" in page.locator("#task-rows").inner_text()

        page.goto(f"{green.url}/ui/runs/{ids['baseline']}")
        shoot(page, "result-first-run", full_page=False)
        _above_the_fold(page, "#means")
        run_headers = _headers(page, "#run-tasks")
        assert run_headers[2] == "trial" and run_headers[5:8] == ["file@1", "func@1", "line@1"]
        trials = [
            c.strip() for c in page.locator("#run-tasks tbody tr td:nth-child(3)").all_inner_texts()
        ]
        assert trials == ["1", "2", "3"], trials

        page.goto(f"{green.url}/ui")
        shoot(page, "result-first-runs", full_page=False)
        row = page.locator("table.runs tbody tr").filter(has_text="baseline").first
        assert row.bounding_box()["height"] < 120, "a run's row holds its whole score table"
        # one task's three trials: no interval can be computed, and the row says so
        assert "file@1" in row.inner_text() and "[n/a]" in row.inner_text()

        page.goto(f"{green.url}/ui/compare?runs={ids['baseline']}&runs={ids['candidate']}&force=1")
        shoot(page, "result-first-compare", full_page=False)
        text = page.locator("main").inner_text()
        assert "baseline" in text and "candidate" in text
        assert "-0.000" not in text
        _above_the_fold(page, "table.compare")
    finally:
        context.close()
