"""A run that mixes kinds through green: locate (``arvo``), reproduce (``arvo-poc``) and fix
(``arvo-fix``) tasks of the bundled fixtures, answered by the offline purple (the analyst
locates; a reproduce task gets the empty input; a fix task gets no answer, the agent's failure).
Each metric is a mean over its own kind's tasks in the A2A ``Result`` (its aggregate, flat row
and summary), on the dashboard's run page, in ``arena report`` and in ``arena compare``: the
locate means are never diluted by the 3 tasks of the other kinds."""

from __future__ import annotations

import asyncio
import json
import shutil

import httpx
import pytest
from a2a.helpers import get_data_parts, get_text_parts
from typer.testing import CliRunner

from services.arena.app import app
from tests.integration.helpers import OPERATOR_TOKEN, stream_message

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LOCATE = ["arvo:900001", "arvo:900002"]
REPRODUCE = ["arvo-poc:900001-l2", "arvo-poc:900003-l2"]
FIX = ["arvo-fix:900002"]
TASKS = [*LOCATE, *REPRODUCE, *FIX]


def _own_mean(tasks: list[dict], kind: str, metric: str) -> float:
    values = [t["scores"][metric] for t in tasks if t["kind"] == kind]
    return sum(values) / len(values)


def test_a_mixed_run_reports_each_metric_over_its_own_kinds_tasks(
    tmp_path, start_green, analyst_url
):
    green = start_green(max_concurrent_tasks=3, fix_floor=False)
    request = {"participants": {"agent": analyst_url}, "config": {"task_ids": TASKS}}
    events = asyncio.run(stream_message(green.url, json.dumps(request)))
    artifact = next(ev.artifact_update.artifact for ev in events if ev.HasField("artifact_update"))
    data = get_data_parts(artifact.parts)[0]
    by_kind = data["aggregate"]["by_kind"]
    assert sorted(by_kind) == ["arvo", "arvo-fix", "arvo-poc"]  # (a Struct on the wire: sorted)
    locate, poc, fix = by_kind["arvo"], by_kind["arvo-poc"], by_kind["arvo-fix"]
    assert locate["mean_all"]["n"] == 2 and poc["mean_all"]["n"] == 2 and fix["mean_all"]["n"] == 1
    file1 = _own_mean(data["tasks"], "arvo", "file@1")
    assert file1 > 0 and locate["mean_all"]["file@1"] == pytest.approx(file1)
    assert locate["uncertainty"]["mean_all"]["file@1"]["n"] == 2
    assert poc["metrics"] == ["reproduced", "fix_distinguishes", "same_bug"]
    assert poc["mean_all"]["reproduced"] == 0.0 and poc["n_scored"] == 2  # the empty input
    assert fix["by_failure"]["agent"] == 1 and "file@1" not in fix["mean_all"]
    # the flat row: every kind's metrics, each with its own n
    assert sorted(data["kinds"].split(",")) == sorted(by_kind) and data["n_tasks"] == 5
    assert data["file_at_1"] == pytest.approx(file1, abs=1e-6) and data["file_at_1_n"] == 2
    assert data["reproduced_n"] == 2 and data["resolved_n"] == 1
    summary = get_text_parts(artifact.parts)[0]
    assert "mean over 2 arvo task(s)" in summary and "mean over 1 arvo-fix task(s)" in summary

    with httpx.Client(base_url=green.url, timeout=30) as ui:  # one score table per kind
        assert ui.post("/ui/login", data={"token": OPERATOR_TOKEN}).status_code == 303
        page = ui.get(f"/ui/runs/{data['assessment_id']}").text
    for kind in by_kind:
        assert f'id="means-{kind}"' in page
    table = page.split('id="means-arvo"', 1)[1].split("</table>", 1)[0]
    assert "<td>2</td>" in table and "reproduced" not in table

    # arena run of the same tasks, its report, and a comparison with a copy of it
    out = tmp_path / "results"
    args = ["run", *TASKS, "--green", green.url, "--purple", analyst_url, "--run", "mixed"]
    args += ["--out", str(out), "--concurrency", "3", "--poll-interval", "0.2"]
    res = CliRunner().invoke(app, [*args, "--api-token", OPERATOR_TOKEN])
    assert res.exit_code == 0, res.output
    report = (out / "mixed" / "report.md").read_text()
    for kind, n in (("arvo", 2), ("arvo-poc", 2), ("arvo-fix", 1)):
        assert f"## Aggregate of the {kind} tasks ({n})" in report
    results = json.loads((out / "mixed" / "results.json").read_text())
    mine = results["aggregate"]["by_kind"]["arvo"]
    assert mine["mean_all"]["n"] == 2
    assert mine["mean_all"]["file@1"] == pytest.approx(
        _own_mean(results["tasks"], "arvo", "file@1")
    )
    again = out / "again"
    shutil.copytree(out / "mixed", again)
    copied = json.loads((again / "results.json").read_text()) | {"run": "again"}
    (again / "results.json").write_text(json.dumps(copied))
    res = CliRunner().invoke(
        app, ["compare", str(out / "mixed"), str(again), "--out", str(tmp_path / "c")]
    )
    assert res.exit_code == 0, res.output
    cmp = json.loads((tmp_path / "c" / "compare.json").read_text())
    assert list(cmp["by_kind"]) == ["arvo", "arvo-poc", "arvo-fix"]
    assert cmp["by_kind"]["arvo"]["pairs"][0]["n_common"] == 2
    assert cmp["by_kind"]["arvo-poc"]["metrics"] == ["reproduced", "fix_distinguishes", "same_bug"]
    assert "(arvo tasks): file@1 +0.000" in " ".join(res.output.split())
