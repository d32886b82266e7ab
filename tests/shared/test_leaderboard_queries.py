"""The leaderboard queries (docs/leaderboard/queries.json) with DuckDB over crafted result files:
runs of 1, 2 and 3 trials side by side, and a run with no scorable task (its means null, never
0). The same queries over a real assessment: tests/integration/test_leaderboard_duckdb.py."""

from __future__ import annotations

import json

import duckdb
import pytest

from fixtures.catalog import REPO_ROOT
from services.shared.outcome import TaskOutcome
from services.shared.scores import aggregate, aggregate_kinds, flat_scores

QUERIES = json.loads((REPO_ROOT / "docs" / "leaderboard" / "queries.json").read_text())
FIX_QUERIES = json.loads((REPO_ROOT / "docs" / "leaderboard" / "queries-fix.json").read_text())
FIX = ("applied", "builds", "crash_fixed", "behaviour_kept", "resolved")
METRICS = ("file@1", "func@1", "line@1", "line@5", "iou")


def _outcomes(trials: int, hits: dict[str, list[int]], scorable: bool = True) -> list[TaskOutcome]:
    outs = []
    for i, (ref, per_trial) in enumerate(hits.items()):
        for t, h in enumerate(per_trial[:trials], 1):
            scores = {m: float(h) for m in METRICS} | {"iou": 0.4 * h, "submitted": True}
            scores |= {"scorable": scorable, "project": f"p{i % 2}", "bug_class": f"c{i % 2}"}
            outs.append(TaskOutcome(ref_id=ref, trial=t, status="completed", scores=scores))
    return outs


def _result(run: str, outs: list[TaskOutcome]) -> dict:
    agg = aggregate(outs)
    return {
        "assessment_id": run,
        **flat_scores(agg.to_dict()),
        "tasks": [o.model_dump(mode="json") for o in outs],
    }


def _mixed() -> dict:
    """A run of 2 locate tasks (both hit) and 3 fix tasks (1 resolved): each metric over its
    own kind's tasks."""
    outs = _outcomes(1, {"1": [1], "2": [1]})
    for i in range(3):
        scores = dict.fromkeys(FIX, float(i == 0)) | {"project": f"f{i}", "submitted": True}
        outs.append(TaskOutcome(kind="arvo-fix", ref_id=str(i), status="completed", scores=scores))
    return {
        "assessment_id": "r5",
        **flat_scores(aggregate_kinds(outs)),
        "tasks": [o.model_dump(mode="json") for o in outs],
    }


@pytest.fixture
def board(tmp_path) -> tuple[duckdb.DuckDBPyConnection, dict[str, dict]]:
    hits = {"1": [1, 1, 0], "2": [0, 1, 1], "3": [1, 1, 1], "4": [0, 0, 0]}
    runs = {
        "one": _result("r1", _outcomes(1, hits)),
        "two": _result("r2", _outcomes(2, hits)),
        "three": _result("r3", _outcomes(3, hits)),
        "none": _result("r4", _outcomes(1, hits, scorable=False)),
        "mixed": _mixed(),
    }
    for agent, data in runs.items():
        body = {"participants": {"agent": agent}, "results": [data]}
        (tmp_path / f"{agent}.json").write_text(json.dumps(body))
    con = duckdb.connect()
    con.execute(f"CREATE VIEW results AS SELECT * FROM read_json_auto('{tmp_path}/*.json')")
    return con, runs


def _rows(con, i: int, queries: list = QUERIES) -> list[dict]:
    cur = con.execute(queries[i]["query"])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def test_means_stand_beside_their_own_se_and_interval(board):
    con, runs = board
    rows = {r["id"]: r for r in _rows(con, 0)}
    two = runs["two"]
    assert rows["two"]["func@1"] == pytest.approx(round(two["func_at_1"], 3))
    assert rows["two"]["func@1 SE"] == pytest.approx(round(two["func_at_1_se"], 3))
    assert rows["two"]["Tasks"] == 4 and rows["two"]["Projects"] == 2
    # no scorable task: null means and the reason, never 0.000 [0.00, 0.00]
    assert rows["none"]["func@1"] is None and rows["none"]["func@1 95% CI"] == "n/a: no task"


def test_pass_at_k_and_pass_hat_k_for_every_k_with_their_n(board):
    con, runs = board
    rows = _rows(con, 1)
    ks = {(r["id"], r["k"]): r for r in rows}
    # every k of every run; none for the run without a scorable task
    want = [("mixed", 1), ("one", 1), ("three", 1), ("three", 2), ("three", 3), ("two", 1)]
    want.append(("two", 2))
    assert sorted(ks) == want
    three = runs["three"]
    for k in (1, 2, 3):
        assert ks[("three", k)]["n (tasks)"] == 4
        assert ks[("three", k)]["pass@k"] == pytest.approx(
            round(three[f"func_at_1_pass_at_{k}"], 3)
        )
        assert ks[("three", k)]["pass^k"] == pytest.approx(
            round(three[f"func_at_1_pass_hat_{k}"], 3)
        )
    at = [ks[("three", k)]["pass@k"] for k in (1, 2, 3)]
    hat = [ks[("three", k)]["pass^k"] for k in (1, 2, 3)]
    assert at == sorted(at) and hat == sorted(hat, reverse=True)


def test_per_bug_class_counts_tasks_not_attempts_and_leaves_unscorable_out(board):
    rows = {(r["id"], r["Bug class"]): r for r in _rows(board[0], 2)}
    assert rows[("three", "c0")]["Tasks"] == 2  # tasks 1 and 3, three attempts each
    # task 1: 2/3, task 3: 1 -> (2/3 + 1) / 2
    assert rows[("three", "c0")]["func@1"] == pytest.approx(round((2 / 3 + 1) / 2, 3))
    assert not [k for k in rows if k[0] == "none"]


def test_a_mixed_run_reads_each_metric_over_its_own_kinds_tasks(board):
    con, _ = board
    locate = {r["id"]: r for r in _rows(con, 0)}["mixed"]
    assert locate["Tasks"] == 2 and locate["func@1"] == 1.0  # not 2/5 over every task
    assert locate["Projects"] == 2
    fix = {r["id"]: r for r in _rows(con, 0, FIX_QUERIES)}["mixed"]
    assert fix["Tasks"] == 3 and fix["resolved"] == pytest.approx(0.333)
    classes = {(r["id"], r["Bug class"]): r for r in _rows(con, 2) if r["id"] == "mixed"}
    assert {k: r["Tasks"] for k, r in classes.items()} == {("mixed", "c0"): 1, ("mixed", "c1"): 1}
    assert all(r["func@1"] == 1.0 for r in classes.values())  # fix tasks are not locate misses
