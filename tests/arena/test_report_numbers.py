"""How report.md writes its numbers (services/arena/report.py, figures.py): crafted runs that
printed ``0.000 [0.00, 0.00]``, ``[x, x]`` or pass^k over shrinking task sets now read right."""

from __future__ import annotations

from services.arena.report import render_markdown
from services.arena.results import RunOutcome, RunResults

METRICS = ("file@1", "iou")


def _done(ref: str, hit: float, trial: int = 1, project: str | None = None) -> RunOutcome:
    scores = {"file@1": hit, "iou": 0.5 * hit, "submitted": True, "project": project or ref}
    return RunOutcome(ref=ref, trial=trial, status="completed", scores=scores)


def _report(outs: list[RunOutcome], trials: int = 1) -> str:
    refs = list(dict.fromkeys(o.ref for o in outs))
    r = RunResults(run="r", green="g", task_ids=refs, trials=trials)
    r.kinds = {"arvo": {"metrics": list(METRICS), "continuous": ["iou"]}}  # as GET /kinds says
    for o in outs:
        r.record(o)
    return render_markdown(r, None, {})


def _row(report: str, start: str) -> str:
    return next(line for line in report.splitlines() if line.startswith(start))


def test_a_mean_over_no_task_is_na_not_zero():
    infra = RunOutcome(ref="arvo:1", status="failed", failure_kind="infra", end_reason="sandbox")
    report = _report([infra])
    assert (
        _row(report, "| all tasks |")
        == "| all tasks | 1 | 0.000 [n/a: one task] | 0.000 [n/a: one task] |"
    )
    assert _row(report, "| non-infra tasks |") == "| non-infra tasks | 0 | n/a | n/a |"
    assert "0.000 [0.00, 0.00]" not in report


def test_one_task_all_hits_and_one_project_say_what_an_interval_can():
    assert "1.000 [n/a: one task]" in _report([_done("arvo:1", 1.0)])
    all_hits = _report([_done(f"arvo:{i}", 1.0) for i in range(12)])
    # Clopper-Pearson for 12 of 12: [0.025^(1/12), 1] = [0.735, 1]
    assert "| all tasks | 12 | 1.000 [0.74, 1.00] |" in all_hits
    assert "file@1: Clopper-Pearson exact binomial interval" in all_hits
    one_project = _report([_done(f"arvo:{i}", float(i % 2), project="p") for i in range(6)])
    assert "0.500 [n/a: one project]" in one_project


def test_unequal_trials_show_one_task_set_and_its_n():
    outs = [_done("arvo:a", 1.0, t) for t in (1, 2, 3)]
    outs += [_done("arvo:b", 1.0, 1), _done("arvo:b", 0.0, 2)]
    outs += [_done("arvo:c", 1.0, 1), _done("arvo:c", 1.0, 2)]
    report = _report(outs, trials=3)
    assert "| metric | n | pass@1 | pass@2 | pass@3 | pass^1 | pass^2 | pass^3 |" in report
    assert _row(report, "| file@1 | 1 |").startswith(
        "| file@1 | 1 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 |"
    )
    assert "Over the tasks with 3 non-infra attempts (n; 2 task(s) with fewer left out)" in report
