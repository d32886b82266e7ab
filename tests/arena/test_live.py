"""The live table of ``arena run`` (services/arena/live.py) at the widths of real terminals."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from services.arena.live import LiveView

LOCATE = {"file@1": 1.0, "file@5": 1.0, "func@1": 0.0, "line@1": 0.0, "iou": 0.177}
FIX = {"applied": 1.0, "builds": 1.0, "crash_fixed": 0.0, "behaviour_kept": 1.0, "resolved": 0.0}


def _view(*scores: dict) -> LiveView:
    view = LiveView(total=6, done=0)
    for s in scores:
        view.metrics(s)
    view.update("arvo:90000001#2", status="running", task_id="a3e12ce8-0000", steps=12)
    view.update("arvo:42487096", status="completed", task_id="b3e12ce8-0000", steps=131,
                cost=0.0123, scores=scores[0], ended=True)  # fmt: skip
    if len(scores) > 1:
        view.update("arvo-fix:42487096", status="cancelled", task_id="c3e12ce8-0000", steps=7,
                    cost=1.5, scores=scores[1], ended=True)  # fmt: skip
    return view


def _render(view: LiveView, width: int) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(view)
    return out.getvalue().splitlines()


@pytest.mark.parametrize("scores", [(LOCATE,), (LOCATE, FIX)], ids=["locate", "mixed"])
def test_at_80_columns_names_and_statuses_are_whole_and_no_line_fills_the_terminal(scores):
    lines = _render(_view(*scores), 80)
    assert max(map(len, lines)) <= 79, lines
    text = "\n".join(lines)
    for whole in ("arvo:90000001#2", "arvo:42487096", "completed", "running", "file@1", "iou"):
        assert whole in text, (whole, text)
    assert "…" not in text.replace("… and", "")  # nothing cut short
    if len(scores) > 1:
        assert "arvo-fix:42487096" in text and "cancelled" in text
        assert "not shown at this width:" in text and "behaviour_kept" in text


def test_a_wide_terminal_shows_every_column():
    lines = _render(_view(LOCATE, FIX), 200)
    header = lines[1]
    for col in ("task", "status", "steps", "file@1", "iou", "applied", "resolved", "cost", "id"):
        assert col in header
    assert "not shown" not in "\n".join(lines)
