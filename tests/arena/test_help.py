"""The ``arena`` commands' help says what each option does for that command."""

from __future__ import annotations

from typer.testing import CliRunner

from services.arena.app import app


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_report_and_compare_each_describe_their_own_force():
    assert "Report even when the trials of a task were scored" in _help("report")
    assert "Compare even when" not in _help("report")
    assert "Compare even when a task's scoring rule or image digest differs" in _help("compare")
