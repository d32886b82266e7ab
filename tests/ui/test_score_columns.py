"""Each list shows each kind's own score columns: the kind's headline metrics."""

from __future__ import annotations

from types import SimpleNamespace

from services.green.kinds.arvo.fix.kind import ArvoFixKind
from services.green.kinds.arvo.kind import ArvoKind
from services.green.kinds.arvo.poc.kind import ArvoPocKind
from services.green.ui.templating import templates
from services.green.ui.views import score_columns

KINDS = {"arvo": ArvoKind, "arvo-poc": ArvoPocKind, "arvo-fix": ArvoFixKind}
LOCATE = {"file@1": 1.0, "file@5": 1.0, "func@1": 0.0, "line@1": 0.0, "iou": 0.2}
FIX = {"applied": 1.0, "builds": 1.0, "crash_fixed": 0.0, "behaviour_kept": 0.0, "resolved": 0.0}


def test_one_kind_has_its_own_columns():
    assert score_columns(KINDS, [("arvo", LOCATE)]).shared == ["file@1", "func@1", "line@1"]
    assert score_columns(KINDS, [("arvo-poc", None)]).shared == [
        "reproduced",
        "fix_distinguishes",
        "same_bug",
    ]
    assert score_columns(KINDS, [("arvo-fix", FIX)]).shared == list(FIX)


def test_a_kind_green_does_not_serve_shows_what_its_records_hold():
    assert score_columns({}, [("needle", {"found": 1.0, "found@5": 1.0})]).shared == ["found"]


def test_a_page_of_several_kinds_names_each_rows_metrics():
    columns = score_columns(KINDS, [("arvo", LOCATE), ("arvo-fix", FIX)])
    assert columns.shared is None
    row = SimpleNamespace(id="0" * 36, kind="arvo-fix", ref_id="900007", status="completed",
                          failure_kind=None, owner="", steps=0, max_steps=30, cost=0.0,
                          created_at=None, assessment_id=None, trial=1)  # fmt: skip
    html = templates.env.get_template("task_rows.html").render(
        items=[{"row": row, "bug_class": "x", "scores": FIX}],
        columns=columns,
        total=1,
        trials=False,
        run_names={},
    )
    assert "resolved <b>0</b>" in html and "applied <b>1</b>" in html
    assert "file@1" not in html
