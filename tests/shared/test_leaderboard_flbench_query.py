"""The leaderboard's FLBench query (docs/leaderboard/queries.json) with DuckDB over result files
written as green writes them: real task scores of one fixture's fix (ours and FLBench's metrics
from the judge), a run without FLBench's columns (written by an older green) and a run with no
scorable task."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from fixtures.catalog import REPO_ROOT
from services.green.kinds.arvo.scoring import ground_truth_from_patch, score
from services.green.kinds.arvo.scoring.metrics import METRICS, OWN_METRICS
from services.shared.loc import Location, LocJson
from services.shared.outcome import TaskOutcome
from services.shared.scores import aggregate, flat_scores

QUERIES = json.loads((REPO_ROOT / "docs" / "leaderboard" / "queries.json").read_text())
[FLB] = [q for q in QUERIES if "FLBench's metrics" in q["name"]]
FIX = (REPO_ROOT / "fixtures/arvo/900003/fix.patch").read_text()


def _scores(project: str, *spans: tuple[str, int, int]) -> dict:
    gt = ground_truth_from_patch(FIX)
    locs = [Location(file=f, line_start=s, line_end=e) for f, s, e in spans]
    return score(LocJson(locations=locs), gt, "tarlite").to_dict() | {"project": project}


def _file(tmp: Path, agent: str, outcomes: list[TaskOutcome], drop: tuple[str, ...] = ()) -> dict:
    row = flat_scores(aggregate(outcomes, [m for m in METRICS if m not in drop]).to_dict())
    body = {"participants": {"agent": agent}, "results": [row]}
    (tmp / f"{agent}.json").write_text(json.dumps(body))
    return row


def test_flbench_query_reads_each_metric_with_its_interval(tmp_path):
    answers = [
        _scores("p1", ("lib/archive.c", 44, 50), ("lib/entry.c", 40, 51)),
        _scores("p2", ("lib/header.c", 1, 3)),
        _scores("p3", ("lib/archive.c", 44, 47)),
        _scores("p4", ("include/tarlite.h", 72, 72), ("lib/entry.c", 41, 41)),
    ]
    outcomes = [
        TaskOutcome(ref_id=str(i), status="completed", scores=s) for i, s in enumerate(answers)
    ]
    rows = {"good": _file(tmp_path, "good", outcomes)}
    _file(tmp_path, "old", outcomes, drop=tuple(m for m in METRICS if m not in OWN_METRICS))
    empty = ground_truth_from_patch("")
    none = [TaskOutcome(ref_id="9", status="completed", scores=score(None, empty).to_dict())]
    _file(tmp_path, "none", none)
    con = duckdb.connect()
    con.execute(f"CREATE VIEW results AS SELECT * FROM read_json_auto('{tmp_path}/*.json')")
    cur = con.execute(FLB["query"])
    cols = [d[0] for d in cur.description]
    got = {r[0]: dict(zip(cols, r, strict=True)) for r in cur.fetchall()}
    good = rows["good"]
    assert got["good"]["Tasks"] == 4
    for name, label in (("line_recall", "line_recall"), ("flb_iou", "IoU (FLBench)")):
        assert got["good"][label] == pytest.approx(round(good[name], 3))
        assert 0 < good[name] < 1
        low, high = good[name + "_ci_low"], good[name + "_ci_high"]
        assert got["good"][f"{label} 95% CI"] == f"[{round(low, 2)}, {round(high, 2)}]"
    # a row without FLBench's columns and a row without scorable tasks: nulls, never 0
    assert got["old"]["IoU (FLBench)"] is None and got["none"]["IoU (FLBench)"] is None
