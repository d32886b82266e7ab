"""``arena report`` and ``arena compare`` of runs that mix kinds: one table per kind, each metric
over its own kind's tasks (the audit's run: 4 locate tasks that all hit, 4 reproduce, 4 fix);
and the notes beside the numbers: the run table's interval method and n, the console's
``[n/a: ...]``, every interval's clusters, pass@k over a small share, McNemar only where true."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from services.arena.app import app
from services.arena.report import render_markdown
from services.arena.results import RESULTS_FILE, RunOutcome, RunResults
from services.shared.task_ref import TaskRef

KINDS = {
    "arvo": ("file@1", "func@1"),
    "arvo-poc": ("reproduced", "same_bug"),
    "arvo-fix": ("applied", "crash_fixed", "resolved"),
}


def _mixed(name: str, hits: int = 4, trials: int = 1) -> RunResults:
    """Of each kind, 4 tasks (each its own project), the first ``hits`` of them hit."""
    r = RunResults(run=name, green="http://g", purple=f"http://{name}", trials=trials)
    r.kinds = {k: {"metrics": list(ms), "continuous": []} for k, ms in KINDS.items()}
    for kind, metrics in KINDS.items():
        for i in range(4):
            r.add(TaskRef(kind, str(900001 + i)))
            for t in range(1, trials + 1):
                scores = dict.fromkeys(metrics, float(i < hits))
                scores |= {"submitted": True, "scorable": True, "project": f"p{i}"}
                o = RunOutcome(ref=f"{kind}:{900001 + i}", trial=t, status="completed")
                o.scores = scores
                o.provenance = {"scoring_version": f"{kind}-1", "image_id": "sha256:a"}
                r.record(o)
    return r


def _save(tmp: Path, r: RunResults) -> Path:
    d = tmp / r.run
    d.mkdir()
    r.save(d / RESULTS_FILE)
    return d


def test_a_mixed_run_reports_each_metric_over_its_own_kinds_tasks() -> None:
    r = _mixed("mixed")
    agg = r.aggregate["by_kind"]
    assert list(agg) == list(KINDS)
    assert agg["arvo"]["mean_all"] == {"n": 4, "file@1": 1.0, "func@1": 1.0}
    assert agg["arvo-poc"]["mean_all"]["reproduced"] == 1.0  # not 0.333 over 12
    md = render_markdown(r, plot=None, labels={})
    for kind in KINDS:
        assert f"## Aggregate of the {kind} tasks (4)" in md
    assert "| all tasks | 4 | 1.000 [0.40, 1.00] | 1.000 [0.40, 1.00] |" in md
    assert "| mean over | n | reproduced | same_bug |" in md
    # the task table leaves a metric of another kind blank, never 0
    row = next(line for line in md.splitlines() if line.startswith("| arvo-poc:900001 |"))
    assert "|  |  | 1 | 1 |  |  |  |" in row


def test_the_bracket_note_gives_every_intervals_clusters() -> None:
    r = _mixed("one")
    r = r.of_kind("arvo")
    infra = RunOutcome(ref="arvo:900005", status="failed", failure_kind="infra")
    infra.scores = None
    r.record(infra)  # counts 0 in all tasks, left out of non-infra: 5 vs 4 tasks
    md = render_markdown(r, plot=None, labels={})
    note = next(line for line in md.splitlines() if line.startswith("Brackets:"))
    assert "all tasks: 5 clusters over 5 tasks; non-infra tasks: 4 clusters over 4 tasks" in note


def test_pass_at_k_over_a_small_share_of_the_tasks_says_so() -> None:
    r = _mixed("trials", trials=3).of_kind("arvo")
    ok = render_markdown(r, plot=None, labels={})
    assert "## Repeated trials" in ok and "rest on" not in ok
    for ref in ("arvo:900002", "arvo:900003"):  # two tasks of four lose a trial to infra
        o = RunOutcome(ref=ref, trial=3, status="failed", failure_kind="infra")
        r.record(o)
    md = render_markdown(r, plot=None, labels={})
    assert "**pass@k and pass^k rest on 2 of the 4 non-infra tasks (50%)**" in md


def test_compare_of_mixed_runs_is_one_section_per_kind(tmp_path) -> None:
    a = _save(tmp_path, _mixed("a"))
    b = _save(tmp_path, _mixed("b", hits=1))
    out = tmp_path / "c"
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(out)])
    assert res.exit_code == 0, res.output
    cmp = json.loads((out / "compare.json").read_text())
    assert list(cmp["by_kind"]) == list(KINDS)
    poc = cmp["by_kind"]["arvo-poc"]
    assert poc["metrics"] == ["reproduced", "same_bug"]
    pair = poc["pairs"][0]
    assert pair["n_common"] == 4 and pair["metrics"]["reproduced"]["a"] == 1.0
    assert pair["metrics"]["reproduced"]["b"] == 0.25
    md = (out / "compare.md").read_text()
    assert "## arvo-poc tasks" in md and "### `a` against `b`" in md
    assert (
        "| `a` | `http://a` | 4 | 1.000 [0.40, 1.00] | 1.000 [0.40, 1.00] | clopper-pearson |" in md
    )
    # one trial, hit/miss, every task its own project: McNemar holds
    assert "p is the exact McNemar (sign) test" in md
    # the console keeps the brackets Rich would read as markup
    none = _save(tmp_path, _mixed("none", hits=0))
    res = CliRunner().invoke(app, ["compare", str(a), str(none), "--out", str(tmp_path / "d")])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "(arvo tasks): file@1 +1.000 [n/a: every project's mean difference is +1.000" in said


def test_compare_names_mcnemar_only_where_it_holds_and_the_tasks_behind_the_means(tmp_path):
    def run(name: str, hits: list[bool], trials: int) -> RunResults:
        r = RunResults(run=name, green="http://g", purple=f"http://{name}", trials=trials)
        for i, h in enumerate(hits):
            r.add(TaskRef("arvo", str(i + 1)))
            for t in range(1, trials + 1):
                o = RunOutcome(ref=f"arvo:{i + 1}", trial=t, status="completed")
                o.scores = {"file@1": float(h), "submitted": True, "project": f"p{i % 3}"}
                o.scores["scorable"] = i != 0  # one task of the run: empty ground truth
                o.provenance = {"scoring_version": "arvo-1", "image_id": "sha256:a"}
                r.record(o)
        return r

    hits = [True] * 9 + [False] * 4
    a = _save(tmp_path, run("a", hits, 2))
    b = _save(tmp_path, run("b", hits[::-1], 2))
    out = tmp_path / "c"
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--out", str(out)])
    assert res.exit_code == 0, res.output
    md = (out / "compare.md").read_text()
    assert "McNemar" not in md  # two trials and projects: not McNemar's test
    assert "| `a` | `http://a` | 12 |" in md  # the n of the intervals, not the 13 tasks
    assert "`a`: 13 tasks, 12 in the means (1 unscorable (empty ground truth))" in md
    assert "sign-flip exact over all 2^3 sign assignments" in md
