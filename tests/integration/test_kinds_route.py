"""GET /kinds: what each kind green serves declares of its metrics, for the operator only (the
``arena`` client keeps it in results.json to report and compare as green does)."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.helpers import OPERATOR_TOKEN

pytestmark = pytest.mark.docker

FLB = ("file_recall", "hunk_recall", "line_recall", "line_precision", "line_f1", "flb_iou")
"""FLBench's metrics (docs/scoring.md), files by basename then by path."""


def test_kinds_declare_their_metrics_to_the_operator(start_green) -> None:
    green = start_green()
    with httpx.Client(base_url=green.url, timeout=30) as c:
        assert c.get("/kinds").status_code == 401
        resp = c.get("/kinds", headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})
    assert resp.status_code == 200, resp.text
    kinds = {k["name"]: k for k in resp.json()["kinds"]}
    assert kinds["arvo"]["metrics"] == [
        "file@1",
        "file@5",
        "func@1",
        "func@5",
        "line@1",
        "line@5",
        "iou",
        *(f"{m}{v}" for v in ("", "_path") for m in FLB),
    ]
    # FLBench's are fractions, as our iou is
    assert kinds["arvo"]["continuous"] == sorted({"iou", *kinds["arvo"]["metrics"][7:]})
    assert kinds["arvo"]["fields"] == ["bug_class", "floors", "project"]
    # the reproduce and fix kinds: every metric hit/miss
    assert kinds["arvo-poc"]["metrics"] == ["reproduced", "fix_distinguishes", "same_bug"]
    assert kinds["arvo-fix"]["metrics"] == [
        "applied",
        "builds",
        "crash_fixed",
        "behaviour_kept",
        "resolved",
    ]
    assert kinds["arvo-poc"]["continuous"] == kinds["arvo-fix"]["continuous"] == []
