"""``arena compare`` on run folders made here: paired differences with one sign-flip test,
win/loss/tie, every task not compared listed with its reasons, and the refusal of runs scored
against different images or ground truths, or without provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.arena.app import app
from services.arena.results import RESULTS_FILE, RunOutcome, RunResults
from services.shared.task_ref import TaskRef


def _scores(hit: bool, project: str) -> dict:
    v = 1.0 if hit else 0.0
    return {
        **dict.fromkeys(("file@1", "file@5", "func@1", "func@5", "line@1", "line@5"), v),
        "iou": v * 0.5,
        "submitted": True,
        "scorable": True,
        "project": project,
    }


def _run(
    tmp: Path,
    name: str,
    hits: dict[str, bool | str],
    image: str = "sha256:aaa",
    truth: str = "gt1",
    provenance: bool = True,
) -> Path:
    r = RunResults(run=name, green="http://g", purple=f"http://{name}")
    for ident, hit in hits.items():
        r.add(TaskRef("arvo", ident))
        prov = {"scoring_version": "arvo-1", "image_id": image, "ground_truth_sha256": truth}
        if hit == "infra":
            o = RunOutcome(
                ref=f"arvo:{ident}", status="failed", failure_kind="infra", end_reason="sandbox"
            )
        else:
            o = RunOutcome(
                ref=f"arvo:{ident}", status="completed", scores=_scores(bool(hit), f"p{ident}")
            )
        o.provenance, o.cost, o.tokens_in = prov if provenance else None, 0.5, 1000
        r.record(o)
    d = tmp / name
    d.mkdir()
    r.save(d / RESULTS_FILE)
    return d


def test_compare_gives_one_test_per_metric_and_lists_infra_losses_apart(tmp_path):
    strong = {str(i): True for i in range(12)} | {"12": False, "13": "infra"}
    weak = {str(i): i < 2 for i in range(12)} | {"12": True, "13": True}
    a, b = _run(tmp_path, "strong", strong), _run(tmp_path, "weak", weak)
    out = tmp_path / "cmp"
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(out)])
    assert res.exit_code == 0, res.output
    cmp = json.loads((out / "compare.json").read_text())
    pair = cmp["pairs"][0]
    assert pair["n_common"] == 13 and "arvo:13" not in pair["tasks"]
    assert pair["not_compared"] == {"arvo:13": {"a": "failed (infra: sandbox)", "b": "scored"}}
    f1 = pair["metrics"]["file@1"]
    d = f1["difference"]
    assert d["mean"] == pytest.approx((12 - 3) / 13, abs=1e-6)
    # 10 tasks only A hit, 1 only B: p = 2 * P(X <= 1 | Bin(11, 1/2)) = 2 * 12 / 2048, the exact
    # McNemar test; and the interval says the same
    assert d["p_value"] == pytest.approx(24 / 2048) and d["method"] == "sign-flip exact"
    assert 0 < d["ci_low"] < d["mean"] < d["ci_high"]
    assert (f1["win"], f1["loss"], f1["tie"]) == (10, 1, 2)
    assert "mcnemar" not in f1
    assert pair["binary"] == ["file@1", "file@5", "func@1", "func@5", "line@1", "line@5"]
    # cost per hit: 7.0 spent on 12 hits (A), 7.0 on 4 hits (B)
    assert cmp["runs"][0]["cost"]["file@1"]["cost_per_hit"] == pytest.approx(7 / 12, abs=1e-6)
    assert cmp["runs"][1]["cost"]["file@1"]["cost_per_hit"] == pytest.approx(7 / 4, abs=1e-6)
    md = (out / "compare.md").read_text()
    assert "| file@1 | 0.923 | 0.231 | +0.692 | [+" in md and "| 0.01172 |" in md
    assert "| arvo:13 | failed (infra: sandbox) | scored |" in md
    assert (out / "compare.png").read_bytes()[:4] == b"\x89PNG"
    assert "p 0.01172" in res.output


def test_compare_of_two_task_sets_lists_the_tasks_only_one_run_has(tmp_path):
    a = _run(tmp_path, "a", {"1": True, "2": True, "3": False})
    b = _run(tmp_path, "b", {"1": False, "2": True, "4": True})
    out = tmp_path / "c"
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(out)])
    assert res.exit_code == 0, res.output
    pair = json.loads((out / "compare.json").read_text())["pairs"][0]
    assert pair["tasks"] == ["arvo:1", "arvo:2"]
    assert pair["not_compared"] == {
        "arvo:3": {"a": "scored", "b": "not in the run"},
        "arvo:4": {"a": "not in the run", "b": "scored"},
    }
    md = (out / "compare.md").read_text()
    assert "| arvo:3 | scored | not in the run |" in md
    assert "| arvo:4 | not in the run | scored |" in md


def test_compare_refuses_a_changed_ground_truth_naming_the_task(tmp_path):
    a = _run(tmp_path, "a", {"1": True, "2": True})
    b = _run(tmp_path, "b", {"1": False, "2": True}, truth="gt2")
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(tmp_path / "c")])
    assert res.exit_code == 3 and not (tmp_path / "c").exists()
    assert "task arvo:1 was scored with a different ground truth" in res.output


def test_compare_refuses_a_run_without_provenance_unless_forced(tmp_path):
    a = _run(tmp_path, "a", {"1": True, "2": True})
    b = _run(tmp_path, "b", {"1": False, "2": True}, provenance=False)
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(tmp_path / "c")])
    assert res.exit_code == 3 and "run b records no provenance" in res.output
    forced = ["compare", str(a), str(b), "--out", str(tmp_path / "c"), "--force"]
    res = CliRunner().invoke(app, forced)
    assert res.exit_code == 0, res.output
    assert "Compared despite (--force)" in (tmp_path / "c" / "compare.md").read_text()


def test_compare_refuses_runs_scored_against_different_image_digests(tmp_path):
    a = _run(tmp_path, "a", {"1": True, "2": True})
    b = _run(tmp_path, "b", {"1": False, "2": True}, image="sha256:bbb")
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(tmp_path / "c")])
    assert res.exit_code == 3
    assert "task arvo:1 was scored with a different image" in res.output
    assert not (tmp_path / "c").exists()
    forced = ["compare", str(a), str(b), "--out", str(tmp_path / "c"), "--force"]
    res = CliRunner().invoke(app, forced)
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "c" / "compare.json").read_text())["forced_despite"]


def test_report_refuses_a_run_whose_trials_differ_in_scoring_rule(tmp_path):
    d = _run(tmp_path, "r", {"1": True})
    r = RunResults.load(d / RESULTS_FILE)
    r.trials = 2
    o = RunOutcome(ref="arvo:1", trial=2, status="completed", scores=_scores(True, "p1"))
    o.provenance = {"scoring_version": "arvo-2", "image_id": "sha256:aaa"}
    r.record(o)
    r.save(d / RESULTS_FILE)
    res = CliRunner().invoke(app, ["report", str(d)])
    assert res.exit_code == 3 and "task arvo:1" in res.output and "scoring rule" in res.output
    assert CliRunner().invoke(app, ["report", str(d), "--force"]).exit_code == 0
    assert (
        json.loads((d / "manifest.json").read_text())["tasks"]["arvo:1"]["2"]["scoring_version"]
        == "arvo-2"
    )


def test_resume_with_trials_reruns_only_unscored_attempts():
    r = RunResults(run="k", green="http://g", task_ids=["arvo:1", "arvo:2"], trials=3)
    r.record(RunOutcome(ref="arvo:1", trial=1, status="completed", scores=_scores(True, "p")))
    r.record(RunOutcome(ref="arvo:1", trial=2, status="cancelled"))
    r.record(RunOutcome(ref="arvo:1", trial=3, status="failed", failure_kind="agent"))
    r.record(RunOutcome(ref="arvo:2", trial=2, status="completed", scores=_scores(False, "q")))
    one, two = TaskRef("arvo", "1"), TaskRef("arvo", "2")
    assert r.pending(retry_failed=False) == [(one, 2), (two, 1), (two, 3)]
    assert r.pending(retry_failed=True) == [(one, 2), (one, 3), (two, 1), (two, 3)]
    assert [o.label for o in r.tasks] == ["arvo:1", "arvo:1#2", "arvo:1#3", "arvo:2#2"]
    assert r.aggregate["n_tasks"] == 2 and r.aggregate["n_attempts"] == 4


def test_what_green_declares_decides_the_hit_or_miss_metrics(tmp_path):
    """Every iou here is 0 or 1: from the records alone it looks hit/miss; green's declaration
    (``GET /kinds``, kept in results.json) says it is continuous."""
    strong = {str(i): True for i in range(6)}
    weak = {str(i): i < 2 for i in range(6)}
    a, b = _run(tmp_path, "a", strong), _run(tmp_path, "b", weak)
    for d in (a, b):  # the records alone: iou (0 or 0.5 here) ...
        r = RunResults.load(d / RESULTS_FILE)
        for o in r.tasks:
            o.scores = {**(o.scores or {}), "iou": o.scores["file@1"]}  # ... now 0 or 1
        r.save(d / RESULTS_FILE)
    out = tmp_path / "undeclared"
    assert CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(out)]).exit_code == 0
    assert "iou" in json.loads((out / "compare.json").read_text())["pairs"][0]["binary"]
    for d in (a, b):
        r = RunResults.load(d / RESULTS_FILE)
        r.kinds = {"arvo": {"metrics": ["file@1", "iou"], "continuous": ["iou"]}}
        r.save(d / RESULTS_FILE)
    out = tmp_path / "declared"
    assert CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(out)]).exit_code == 0
    pair = json.loads((out / "compare.json").read_text())["pairs"][0]
    assert "iou" not in pair["binary"] and "file@1" in pair["binary"]
    assert list(pair["metrics"])[:2] == ["file@1", "iou"]  # the declared order first


def test_the_plot_names_every_metric_of_a_kind_with_many_apart(tmp_path):
    """The ARVO kind declares 19 metrics (the six levels, iou, FLBench's six and their path
    variants): each name under the differences must stand clear of its neighbours."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from services.arena.compare_report import comparison_figure

    flb = ["file_recall", "hunk_recall", "line_recall", "line_precision", "line_f1", "flb_iou"]
    metrics = ["file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou"]
    metrics += flb + [f"{m}_path" for m in flb]
    a = _run(tmp_path, "a", {str(i): True for i in range(6)})
    b = _run(tmp_path, "b", {str(i): i < 2 for i in range(6)})
    for d in (a, b):
        r = RunResults.load(d / RESULTS_FILE)
        r.kinds = {"arvo": {"metrics": metrics, "continuous": metrics[6:]}}
        for o in r.tasks:
            o.scores = {**(o.scores or {}), **dict.fromkeys(metrics[7:], o.scores["iou"])}
        r.save(d / RESULTS_FILE)
    out = tmp_path / "cmp"
    assert CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(out)]).exit_code == 0
    fig = comparison_figure(json.loads((out / "compare.json").read_text()))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    labels = fig.axes[0].get_xticklabels()
    assert [t.get_text() for t in labels] == metrics
    boxes = [t.get_window_extent(canvas.get_renderer()) for t in labels]
    assert not [
        (x.get_text(), y.get_text())
        for x, y, bx, by in zip(labels, labels[1:], boxes, boxes[1:], strict=False)
        if bx.overlaps(by)
    ]
